//! `vramfit watch` from the outside: JSON lines on the trace's clock, record/replay round trip,
//! and one-line errors for bad input and for a machine without NVML.

use std::path::PathBuf;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_vramfit"))
}

fn trace(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../vramfit-watch/tests/traces")
        .join(format!("{name}.jsonl"))
}

fn watch(args: &[&str]) -> Output {
    bin().arg("watch").args(args).output().expect("run vramfit")
}

fn one_line_error(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("vramfit: "), "{err}");
    err
}

#[test]
fn json_lines_follow_the_trace_clock_and_raise_alerts_once() {
    let path = trace("leak");
    let out = watch(&[
        "--json",
        "--speed",
        "max",
        "--replay",
        path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let samples = std::fs::read_to_string(&path).unwrap().lines().count();
    assert_eq!(
        lines.len(),
        samples,
        "one object per interval (one GPU in this trace)"
    );
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["t"].as_f64(), Some(i as f64));
        assert!(l["gpus"].is_array() && l["alerts"].is_array() && l["forecast"].is_array());
        assert!(l["forecast"][0].get("time_to_oom_s").is_some());
    }
    let leaks: Vec<_> = lines
        .iter()
        .flat_map(|l| l["alerts"].as_array().unwrap().iter())
        .filter(|a| a["kind"] == "leak")
        .collect();
    assert_eq!(leaks.len(), 1);
    assert_eq!(leaks[0]["gpu"], 0);
    assert!(leaks[0]["pid"].is_null());
    assert!(leaks[0]["message"].as_str().unwrap().contains("Fix:"));
}

#[test]
fn record_of_a_replay_is_the_same_trace() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.jsonl");
    let src = trace("new_process");
    let out = watch(&[
        "--json",
        "--speed",
        "max",
        "--replay",
        src.to_str().unwrap(),
        "--record",
        rec.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parse = |p: &PathBuf| -> Vec<serde_json::Value> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (a, b) = (parse(&src), parse(&rec));
    assert_eq!(a.len(), b.len());
    assert_eq!(a, b);
    for l in &b {
        for key in ["t", "gpu", "total_bytes", "used_bytes", "processes"] {
            assert!(l.get(key).is_some(), "{key} missing in {l}");
        }
    }
}

#[test]
fn duration_stops_early() {
    let path = trace("stable");
    let out = watch(&[
        "--json",
        "--speed",
        "max",
        "--duration",
        "9",
        "--replay",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 10);
}

#[test]
fn bad_input_is_a_one_line_error_naming_the_value() {
    let leak = trace("leak");
    let leak = leak.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(
        &broken,
        "{\"t\":0,\"gpu\":0,\"total_bytes\":10,\"used_bytes\":1,\"processes\":[]}\nnot json\n",
    )
    .unwrap();
    let backwards = dir.path().join("backwards.jsonl");
    std::fs::write(
        &backwards,
        "{\"t\":5,\"gpu\":0,\"total_bytes\":10,\"used_bytes\":1}\n{\"t\":4,\"gpu\":0,\"total_bytes\":10,\"used_bytes\":1}\n",
    )
    .unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--json", "--replay", leak, "--speed", "0"], "'0'"),
        (
            vec!["--json", "--replay", leak, "--speed", "fast"],
            "'fast'",
        ),
        (
            vec!["--json", "--replay", "/nonexistent/trace.jsonl"],
            "/nonexistent/trace.jsonl",
        ),
        (
            vec![
                "--json",
                "--replay",
                broken.to_str().unwrap(),
                "--speed",
                "max",
            ],
            "line 2",
        ),
        (
            vec![
                "--json",
                "--replay",
                backwards.to_str().unwrap(),
                "--speed",
                "max",
            ],
            "goes backwards",
        ),
        (
            vec!["--json", "--replay", leak, "--headroom", "lots"],
            "'lots'",
        ),
        (
            vec!["--json", "--replay", leak, "--headroom", "80%"],
            "'80%'",
        ),
        (
            vec!["--json", "--replay", leak, "--engine", "ftp://x:1"],
            "ftp://x:1",
        ),
        (vec!["--json", "--interval", "0.01"], "'0.01'"),
        (
            vec!["--json", "--replay", leak, "--prometheus", "256.1.1.1:99"],
            "256.1.1.1:99",
        ),
        (vec!["--replay", leak], "not a terminal"),
        (
            vec!["--json", "--replay", leak, "--record", leak],
            "would overwrite",
        ),
    ];
    for (args, needle) in cases {
        let err = one_line_error(&watch(&args));
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn without_nvml_the_error_says_so_and_points_to_replay() {
    let out = watch(&["--json", "--duration", "0"]);
    if out.status.success() {
        // A machine with a GPU: the sample must be a report.
        let line = String::from_utf8_lossy(&out.stdout);
        let v: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
        assert!(v["gpus"][0]["total_bytes"].as_u64().unwrap() > 0);
        return;
    }
    let err = one_line_error(&out);
    assert!(err.contains("NVML") && err.contains("--replay"), "{err}");
}

/// Serves a vLLM v1 `/metrics` page on loopback until the test ends.
fn fake_vllm() -> u16 {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        // vLLM v1 names (vllm/v1/metrics/loggers.py).
        let body = "# TYPE vllm:kv_cache_usage_perc gauge\n\
            vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.375\n\
            vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 6.0\n\
            vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 2.0\n";
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn engine_figures_join_the_samples_of_the_gpus_they_cover() {
    let port = fake_vllm();
    let path = trace("leak");
    let engine = format!("0=http://127.0.0.1:{port}");
    let out = watch(&[
        "--json",
        "--speed",
        "max",
        "--duration",
        "3",
        "--engine",
        &engine,
        "--replay",
        path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    let e = &first["gpus"][0]["engine"];
    assert_eq!(e["kv_cache_usage"], 0.375, "{first}");
    assert_eq!(
        (
            e["requests_running"].as_u64(),
            e["requests_waiting"].as_u64()
        ),
        (Some(6), Some(2))
    );
}
