//! The exporter's page follows Prometheus naming and carries the report's numbers; the server
//! answers over loopback.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use vramfit_watch::detect::DetectConfig;
use vramfit_watch::export::prometheus::{render, serve};
use vramfit_watch::monitor::Monitor;
use vramfit_watch::promtext::parse;
use vramfit_watch::sampler::{ReplaySampler, Sampler};

fn last_report_of(name: &str) -> vramfit_watch::monitor::Report {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/traces")
        .join(format!("{name}.jsonl"));
    let mut s = ReplaySampler::open(&path, None).unwrap();
    let mut m = Monitor::new(DetectConfig::default());
    let mut last = None;
    while let Some(t) = s.next_tick().unwrap() {
        last = Some(m.observe(&t));
    }
    last.unwrap()
}

#[test]
fn page_carries_every_family_with_the_reports_values() {
    let r = last_report_of("new_process");
    let page = render(&r);
    let s = parse(&page);
    let get = |name: &str, labels: &[(&str, &str)]| {
        s.iter()
            .find(|x| x.name == name && labels.iter().all(|(k, v)| x.label(k) == Some(*v)))
            .map(|x| x.value)
    };
    for g in &r.gpus {
        let gpu = g.gpu.to_string();
        assert_eq!(
            get("vramfit_gpu_memory_used_bytes", &[("gpu", &gpu)]),
            Some(g.used_bytes as f64)
        );
        assert_eq!(
            get("vramfit_gpu_memory_total_bytes", &[("gpu", &gpu)]),
            Some(g.total_bytes as f64)
        );
        for p in &g.processes {
            let pid = p.pid.to_string();
            let v = get(
                "vramfit_process_memory_used_bytes",
                &[("gpu", &gpu), ("pid", &pid), ("name", &p.name)],
            );
            assert_eq!(v, Some(p.used_bytes as f64));
        }
        assert_eq!(
            get("vramfit_engine_kv_cache_usage_ratio", &[("gpu", &gpu)]),
            g.engine.as_ref().unwrap().kv_cache_usage
        );
        for kind in ["leak", "spike", "headroom", "new_process"] {
            assert!(get("vramfit_alert_active", &[("gpu", &gpu), ("kind", kind)]).is_some());
        }
    }
    // GPU 1 still holds the intruder and is under its headroom at the end of the trace.
    assert_eq!(
        get(
            "vramfit_alert_active",
            &[("gpu", "1"), ("kind", "new_process")]
        ),
        Some(1.0)
    );
    assert_eq!(
        get(
            "vramfit_alert_active",
            &[("gpu", "1"), ("kind", "headroom")]
        ),
        Some(1.0)
    );
    assert_eq!(
        get(
            "vramfit_alert_active",
            &[("gpu", "0"), ("kind", "headroom")]
        ),
        Some(0.0)
    );
    // Every family has HELP and TYPE, and every sample belongs to a declared family.
    for x in &s {
        assert!(
            page.contains(&format!("# TYPE {} gauge", x.name)),
            "{}",
            x.name
        );
    }
}

#[test]
fn server_answers_metrics_and_404() {
    let exp = serve("127.0.0.1:0").unwrap();
    exp.page
        .set("vramfit_gpu_memory_used_bytes{gpu=\"0\"} 42\n".into());
    let get = |path: &str| {
        let mut c = TcpStream::connect(exp.addr).unwrap();
        write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    };
    let ok = get("/metrics");
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert!(ok.contains("text/plain; version=0.0.4"));
    assert!(ok.ends_with("vramfit_gpu_memory_used_bytes{gpu=\"0\"} 42\n"));
    assert!(get("/nope").starts_with("HTTP/1.1 404"));
    // A client that connects and says nothing does not block the next one for long.
    let _idle = TcpStream::connect(exp.addr).unwrap();
    assert!(get("/metrics").starts_with("HTTP/1.1 200"));
}

#[test]
fn a_busy_port_is_a_one_line_error() {
    let exp = serve("127.0.0.1:0").unwrap();
    let e = serve(&exp.addr.to_string()).err().unwrap().to_string();
    assert!(
        e.contains(&exp.addr.to_string()) && !e.contains('\n'),
        "{e}"
    );
}
