//! `probe`, `stress` and `run` against a real CPU-only llama-server (scripts/build_llama_server.sh)
//! and the GGUF models of scripts/make_llama_models.py; skipped with a message when either is
//! absent. Each test launches its own copy of the binary so "nothing left running" is checked on
//! exactly the processes that test started.

mod live;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

struct Setup {
    _dir: tempfile::TempDir,
    server: PathBuf,
    models: PathBuf,
    build: Option<String>,
}

fn setup(name: &str) -> Option<Setup> {
    let Some(real) = live::llama_server() else {
        eprintln!("SKIP {name}: no llama-server build; run scripts/build_llama_server.sh");
        return None;
    };
    let Some(models) = live::models() else {
        eprintln!("SKIP {name}: cannot write the GGUF models (pip install gguf numpy)");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("llama-server");
    std::fs::copy(&real, &server).unwrap();
    let build = live::build_number(&real);
    Some(Setup {
        _dir: dir,
        server,
        models,
        build,
    })
}

fn vramfit(args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let v = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// What the real server allocates at `-c ctx` (model + KV + compute + output, bytes).
fn measured_at(server: &Path, args: &[&str], ctx: u64, dir: &Path) -> u64 {
    let mut a: Vec<&str> = args.to_vec();
    let c = ctx.to_string();
    a.extend_from_slice(&["-c", &c, "-lv", "4"]);
    let mut s = live::Server::start(server, &a, dir.join(format!("m{ctx}.log")));
    assert!(s.wait_for("compute buffer size", 120));
    let log = s.log();
    drop(s);
    let mut total = 0.0;
    for l in log.lines() {
        for key in [
            "model buffer size",
            "KV buffer size",
            "compute buffer size",
            "output buffer size",
        ] {
            if let Some(i) = l.find(key) {
                let rest = l[i + key.len()..]
                    .trim_start()
                    .trim_start_matches('=')
                    .trim_start();
                let num: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                total += num.parse::<f64>().unwrap_or(0.0);
            }
        }
    }
    (total * MIB as f64).round() as u64
}

#[test]
fn probe_finds_the_largest_context_under_a_ram_limit_in_two_launches() {
    let Some(s) = setup("probe") else { return };
    let model = s.models.join("qwen3-152k.gguf");
    let base = [
        "-m",
        model.to_str().unwrap(),
        "-np",
        "1",
        "-fa",
        "on",
        "--no-warmup",
        "-t",
        "1",
    ];
    let limit = 160 * MIB;
    let mut args = vec![
        "probe".to_string(),
        "--json".into(),
        "--ram".into(),
        format!("{}MiB", limit / MIB),
        "--timeout".into(),
        "120".into(),
    ];
    if let Some(b) = &s.build {
        args.extend(["--engine-version".into(), b.clone()]);
    }
    args.push("--".into());
    args.push(s.server.to_string_lossy().into());
    args.extend(base.iter().map(|x| x.to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let t0 = Instant::now();
    let (code, rep, err) = vramfit(&argv);
    eprintln!(
        "probe took {:.1}s: {}",
        t0.elapsed().as_secs_f64(),
        serde_json::to_string(&rep).unwrap_or_default()
    );
    assert_eq!(code, 0, "{err}");
    let launches = rep["launches"].as_u64().unwrap();
    assert!(launches <= 2, "{launches} launches");
    let c = rep["verified_context"].as_u64().unwrap();
    assert!(rep["verified_command"]
        .as_str()
        .unwrap()
        .contains(&format!("-c {c}")));
    assert!(
        live::none_running(&s.server),
        "probe left a llama-server running"
    );
    // the oracle: at c it fits the limit, 256 more does not (llama.cpp pads n_ctx to 256)
    let dir = tempfile::tempdir().unwrap();
    let at = measured_at(&s.server, &base, c, dir.path());
    let above = measured_at(&s.server, &base, c + 256, dir.path());
    eprintln!(
        "limit {} MiB: at {c} {:.2} MiB, at {} {:.2} MiB",
        limit / MIB,
        at as f64 / MIB as f64,
        c + 256,
        above as f64 / MIB as f64
    );
    assert!(
        at <= limit && above > limit,
        "not the boundary: {at} at {c}, {above} at {}",
        c + 256
    );
    assert!(live::none_running(&s.server));
}

#[test]
fn stress_drives_real_llama_server_at_concurrency_8() {
    let Some(s) = setup("stress") else { return };
    let model = s.models.join("llama-32k.gguf");
    let dir = tempfile::tempdir().unwrap();
    let mut srv = live::Server::start(
        &s.server,
        &[
            "-m",
            model.to_str().unwrap(),
            "-c",
            "8192",
            "-np",
            "8",
            "--metrics",
            "-t",
            "2",
        ],
        dir.path().join("server.log"),
    );
    assert!(srv.wait_for("listening on http", 120), "{}", srv.log());
    let pid = srv.child.id().to_string();
    let url = srv.url();
    let t0 = Instant::now();
    let (code, rep, err) = vramfit(&[
        "stress",
        &url,
        "--concurrency",
        "8",
        "--requests",
        "24",
        "--prompt-tokens",
        "128",
        "--max-tokens",
        "16",
        "--pid",
        &pid,
        "--budget",
        "2GiB",
        "--json",
        "--timeout",
        "300",
    ]);
    eprintln!(
        "stress took {:.1}s: {}",
        t0.elapsed().as_secs_f64(),
        serde_json::to_string_pretty(&rep).unwrap_or_default()
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(rep["requests_completed"], 24);
    assert_eq!(rep["requests_failed"], 0);
    assert!(rep["latency"]["p50_s"].as_f64().unwrap() > 0.0);
    assert!(rep["output_tokens_per_s"].as_f64().unwrap() > 0.0);
    assert!(rep["peak_rss_bytes"].as_u64().unwrap() > 0);
    assert!(rep["metrics_samples"].as_u64().unwrap() > 0);
    assert!(err.contains("stress: 24 completed, 0 failed"), "{err}");
    // the server saw up to 8 requests at once
    assert!(rep["max_running"].as_u64().unwrap_or(0) >= 2, "{rep}");
    drop(srv);
    assert!(live::none_running(&s.server));
}

#[test]
fn stress_bad_urls_are_one_line_errors() {
    // nothing listens on this port
    let port = live::free_port();
    let (code, _, err) = vramfit(&[
        "stress",
        &format!("http://127.0.0.1:{port}"),
        "--requests",
        "1",
    ]);
    assert_eq!(code, 2);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("cannot reach"), "{err}");
    // not loopback
    let (code, _, err) = vramfit(&["stress", "http://10.1.2.3:8000", "--requests", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("127.0.0.1"), "{err}");
    // a server that is not OpenAI-compatible: a plain HTTP listener answering 404
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut c in l.incoming().take(1).flatten() {
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let _ = c.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found");
        }
    });
    let (code, _, err) = vramfit(&[
        "stress",
        &format!("http://127.0.0.1:{port}"),
        "--requests",
        "1",
    ]);
    let _ = h.join();
    assert_eq!(code, 2);
    assert!(err.contains("not an OpenAI-compatible server"), "{err}");
}

#[test]
fn probe_and_run_refuse_what_is_not_an_engine() {
    let (code, _, err) = vramfit(&["probe", "--", "sleep", "100"]);
    assert_eq!(code, 2);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, _, err) = vramfit(&["run", "--", "sleep", "100"]);
    assert_eq!(code, 2);
    assert!(err.contains("not a serving command"), "{err}");
}

#[test]
fn run_recovers_from_an_injected_oom_with_doctors_fix() {
    let Some(s) = setup("run") else { return };
    let model = s.models.join("llama-32k.gguf");
    let dir = tempfile::tempdir().unwrap();
    // a `llama-server` that fails like a CUDA build out of memory for a context above 24576
    // (the log is a llama.cpp KV-allocation failure) and runs the real server otherwise
    let oom = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llama_server_kv_oom.log");
    let wrapper = dir.path().join("llama-server");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nprev=; ctx=4096\nfor a in \"$@\"; do [ \"$prev\" = -c ] && ctx=$a; prev=$a; done\n\
             if [ \"$ctx\" -gt 24576 ]; then cat '{}' >&2; exit 1; fi\nexec '{}' \"$@\"\n",
            oom.display(),
            s.server.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let port = live::free_port().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(["run", "--max-restarts", "2", "--gpu", "none", "--"])
        .arg(&wrapper)
        .args([
            "-m",
            model.to_str().unwrap(),
            "-c",
            "32768",
            "-np",
            "1",
            "--no-warmup",
            "-t",
            "1",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("run.err")).unwrap())
        .spawn()
        .unwrap();
    // wait for the relaunched server to answer, then stop `vramfit run` as a user would
    let health = format!("/health");
    let url = vramfit_url(&port);
    let t0 = Instant::now();
    let mut up = false;
    while t0.elapsed() < Duration::from_secs(120) {
        if url.get(&health, Duration::from_secs(2)).is_ok() {
            up = true;
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let err_now = std::fs::read_to_string(dir.path().join("run.err")).unwrap_or_default();
    assert!(up, "the relaunched server never answered:\n{err_now}");
    // SIGTERM to vramfit run: it forwards it to the engine's group and exits with its code
    // SAFETY: signals the vramfit process this test started
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    let err = std::fs::read_to_string(dir.path().join("run.err")).unwrap();
    eprintln!(
        "{}",
        err.lines()
            .filter(|l| l.starts_with("vramfit run:"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(err.contains("relaunch 1/2: -c 21504"), "{err}");
    assert!(err.matches("vramfit run: launching:").count() == 2, "{err}");
    assert!(
        status.code().is_some(),
        "vramfit run was killed instead of exiting: {status:?}"
    );
    assert!(
        live::none_running(&s.server),
        "run left a llama-server running"
    );
}

fn vramfit_url(port: &str) -> vramfit_watch_http::HttpUrl {
    vramfit_watch_http::HttpUrl::parse(&format!("http://127.0.0.1:{port}")).unwrap()
}

/// The watch crate's minimal HTTP GET (the binary's dependency, reused by the test).
mod vramfit_watch_http {
    pub use vramfit_watch::http::HttpUrl;
}

#[test]
fn probe_vllm_stub_replaying_a_real_refusal_finds_the_length_in_two_launches() {
    // a stub `vllm` replays the startup lines of a real vLLM 0.29 refusal (dev log vllm-log-032,
    // MiniMax-M2.7-AWQ at TP 2: max seq len 196608 needs 23.25 GiB, 22.5 GiB available,
    // estimated maximum model length 190272) above that length, and comes up below it
    let dir = tempfile::tempdir().unwrap();
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vllm_kv_refusal.log");
    let stub = dir.path().join("vllm");
    // a sleep this test alone runs, to find it afterwards
    let nap = format!("299.{:03}", std::process::id() % 1000);
    std::fs::write(
        &stub,
        format!(
            "#!/bin/sh\nprev=; len=0\nfor a in \"$@\"; do [ \"$prev\" = --max-model-len ] && len=$a; prev=$a; done\n\
             if [ \"$len\" -gt 190272 ]; then cat '{}' >&2; exit 1; fi\n\
             echo 'INFO:     Application startup complete.'\nexec sleep {nap}\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, rep, err) = vramfit(&[
        "probe",
        "--json",
        "--timeout",
        "30",
        "--",
        stub.to_str().unwrap(),
        "serve",
        "cyankiwi/MiniMax-M2.7-AWQ",
        "--tensor-parallel-size",
        "2",
        "--max-model-len",
        "196608",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(rep["launches"], 2, "{rep}");
    assert_eq!(rep["verified_context"], 190272, "{rep}");
    assert!(rep["verified_command"]
        .as_str()
        .unwrap()
        .contains("--max-model-len 190272"));
    // the stub's `sleep` went with its process group
    let sleeping = std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read_to_string(e.path().join("cmdline"))
            .is_ok_and(|c| c == format!("sleep\u{0}{nap}\u{0}"))
    });
    assert!(!sleeping);
}
