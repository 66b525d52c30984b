//! A real Prometheus (Debian's `prometheus` package) scrapes `vramfit watch --prometheus` every
//! second during a replay; what it stored must be the trace's own values. Skips, saying so, when
//! the `prometheus` binary is not installed (`apt-get install -y prometheus`).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use vramfit_watch::http::HttpUrl;
use vramfit_watch::sample::{EngineSample, GpuSample, ProcessSample};

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// 24 one-second ticks on two GPUs; every used value distinct, so a scraped value names its tick.
fn make_trace() -> Vec<GpuSample> {
    let mut v = Vec::new();
    for i in 0..24u64 {
        for g in 0..2u32 {
            let used = (10u64 << 30) + (g as u64) * (3 << 30) + i * (64 << 20) + 4096 * i;
            v.push(GpuSample {
                t: 1000.0 + i as f64,
                gpu: g,
                total_bytes: 25_757_220_864,
                used_bytes: used,
                free_bytes: None,
                reserved_bytes: None,
                name: Some("NVIDIA GeForce RTX 4090".into()),
                mig: None,
                processes: vec![ProcessSample {
                    pid: 4100 + g,
                    name: "python3".into(),
                    used_bytes: used - (300 << 20),
                }],
                engine: Some(EngineSample {
                    kv_cache_usage: Some(i as f64 / 32.0),
                    requests_running: Some(i),
                    requests_waiting: Some(0),
                    preemptions_total: None,
                }),
            });
        }
    }
    v
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Raw samples stored for `selector` over the last 5 minutes, per series (label set -> values).
fn raw(prom: &HttpUrl, selector: &str) -> Vec<(serde_json::Value, Vec<f64>)> {
    let body = prom
        .get(
            &format!("/api/v1/query?query={}", encode(&format!("{selector}[5m]"))),
            Duration::from_secs(5),
        )
        .expect("query Prometheus");
    let v: serde_json::Value = serde_json::from_str(&body).expect("Prometheus answers JSON");
    assert_eq!(v["status"], "success", "{body}");
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let vals = s["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p[1].as_str().unwrap().parse().unwrap())
                .collect();
            (s["metric"].clone(), vals)
        })
        .collect()
}

#[test]
fn prometheus_scrapes_what_the_trace_holds() {
    let Some(prometheus) = which("prometheus") else {
        eprintln!("skipping: no `prometheus` binary on PATH (apt-get install -y prometheus)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let trace = make_trace();
    let trace_path = dir.path().join("trace.jsonl");
    std::fs::write(&trace_path, vramfit_watch::trace::to_jsonl(&trace)).unwrap();

    let mut watch = Kill(
        Command::new(env!("CARGO_BIN_EXE_vramfit"))
            .args([
                "watch",
                "--replay",
                trace_path.to_str().unwrap(),
                "--speed",
                "1",
            ])
            .args(["--prometheus", "127.0.0.1:0", "--linger", "6"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    // Kept open to the end: a closed pipe would turn the exporter's next stderr line into EPIPE.
    let mut stderr = BufReader::new(watch.0.stderr.take().unwrap());
    stderr.read_line(&mut line).unwrap();
    let target = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.strip_suffix("/metrics\n"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();

    let prom_port = free_port();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: vramfit\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let _prom = Kill(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let prom = HttpUrl::parse(&format!("http://127.0.0.1:{prom_port}")).unwrap();
    let start = Instant::now();
    while prom.get("/-/ready", Duration::from_secs(1)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "Prometheus did not become ready"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The replay takes 24 s and the exporter lingers 6 s more; wait for it to finish.
    let status = loop {
        if let Some(s) = watch.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "the replay did not finish"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(status.success());

    for g in 0..2u32 {
        let mine: Vec<&GpuSample> = trace.iter().filter(|s| s.gpu == g).collect();
        let used = raw(
            &prom,
            &format!("vramfit_gpu_memory_used_bytes{{gpu=\"{g}\"}}"),
        );
        assert_eq!(used.len(), 1, "{used:?}");
        let (labels, values) = &used[0];
        assert_eq!(labels["job"], "vramfit");
        // Each scraped value is one of the trace's, in the trace's order.
        let idx: Vec<usize> = values
            .iter()
            .map(|v| {
                mine.iter()
                    .position(|s| s.used_bytes as f64 == *v)
                    .unwrap_or_else(|| panic!("{v} not in trace"))
            })
            .collect();
        assert!(idx.windows(2).all(|w| w[0] <= w[1]), "{idx:?}");
        let distinct = idx.iter().collect::<std::collections::BTreeSet<_>>().len();
        assert!(
            distinct >= 10,
            "only {distinct} distinct ticks scraped: {idx:?}"
        );
        assert_eq!(
            *idx.last().unwrap(),
            mine.len() - 1,
            "the final state is scraped while lingering"
        );

        let total = raw(
            &prom,
            &format!("vramfit_gpu_memory_total_bytes{{gpu=\"{g}\"}}"),
        );
        assert!(total[0].1.iter().all(|v| *v == 25_757_220_864.0));
        let procs = raw(
            &prom,
            &format!("vramfit_process_memory_used_bytes{{gpu=\"{g}\"}}"),
        );
        assert_eq!(procs.len(), 1);
        assert_eq!(procs[0].0["pid"], (4100 + g).to_string());
        assert_eq!(procs[0].0["name"], "python3");
        assert_eq!(
            *procs[0].1.last().unwrap(),
            mine.last().unwrap().processes[0].used_bytes as f64
        );
        let kv = raw(
            &prom,
            &format!("vramfit_engine_kv_cache_usage_ratio{{gpu=\"{g}\"}}"),
        );
        assert_eq!(*kv[0].1.last().unwrap(), 23.0 / 32.0);
        let alerts = raw(&prom, &format!("vramfit_alert_active{{gpu=\"{g}\"}}"));
        assert_eq!(alerts.len(), 4, "one series per alert kind");
    }
}
