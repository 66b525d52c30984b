//! Bad input to the commands that touch a running engine: a server that never becomes ready,
//! one that accepts and never answers, one that is not OpenAI-compatible, an engine that hangs
//! or dies before it is ready, a program that is not there. Each gets one line (or, for
//! `probe`, a report that says why), a non-zero exit, and nothing is left running. No
//! llama-server needed: loopback listeners and shell stubs stand in.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn vramfit(args: &[&str]) -> (i32, String, String, f64) {
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
        t0.elapsed().as_secs_f64(),
    )
}

/// A loopback server answering every connection with `reply` (None: read and never answer).
fn server(reply: Option<&'static [u8]>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut c in l.incoming().take(64).flatten() {
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            match reply {
                Some(r) => {
                    let _ = c.write_all(r);
                }
                None => held.push(c),
            }
        }
    });
    port
}

fn one_line_error(code: i32, err: &str) {
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn stress_on_a_server_that_never_becomes_ready() {
    // what llama-server answers while it loads the model
    let body = r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#;
    let reply = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let port = server(Some(Box::leak(reply.into_bytes().into_boxed_slice())));
    let url = format!("http://127.0.0.1:{port}");
    let (code, _, err, secs) =
        vramfit(&["stress", &url, "--requests", "1", "--ready-timeout", "1"]);
    one_line_error(code, &err);
    assert!(err.contains("never became ready"), "{err}");
    assert!(secs < 20.0, "{secs}s");
}

#[test]
fn stress_on_a_server_that_never_answers_is_bounded() {
    let port = server(None);
    let url = format!("http://127.0.0.1:{port}");
    let (code, _, err, secs) = vramfit(&["stress", &url, "--requests", "1"]);
    one_line_error(code, &err);
    assert!(err.contains(&url), "{err}");
    assert!(secs < 30.0, "took {secs}s");
}

#[test]
fn stress_on_a_web_page_is_not_openai_compatible() {
    let port = server(Some(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\nConnection: close\r\n\r\n<html></html>",
    ));
    let url = format!("http://127.0.0.1:{port}");
    let (code, _, err, _) = vramfit(&["stress", &url, "--requests", "1"]);
    one_line_error(code, &err);
    assert!(err.contains("not an OpenAI-compatible server"), "{err}");
}

/// A `vllm` stub running `body`; its `sleep` carries a value only this test uses.
fn stub(dir: &Path, body: &str) -> std::path::PathBuf {
    let p = dir.join("vllm");
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn running(nap: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read_to_string(e.path().join("cmdline"))
            .is_ok_and(|c| c == format!("sleep\u{0}{nap}\u{0}"))
    })
}

#[test]
fn probe_stops_an_engine_that_never_becomes_ready() {
    let dir = tempfile::tempdir().unwrap();
    let nap = format!("295.{}", std::process::id() % 1000);
    // prints a line, then hangs (a worker stuck loading), never "startup complete"
    let s = stub(
        dir.path(),
        &format!("echo 'INFO loading weights'\nsleep {nap} &\nwait"),
    );
    let (code, out, err, secs) = vramfit(&[
        "probe",
        "--json",
        "--timeout",
        "2",
        "--",
        s.to_str().unwrap(),
        "serve",
        "m",
        "--max-model-len",
        "4096",
    ]);
    assert_eq!(code, 1, "{err}");
    let rep: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rep["launches"], 1, "{rep}");
    assert_eq!(rep["verified_context"], serde_json::Value::Null);
    let says = rep["attempts"][0]["log_says"].as_str().unwrap();
    assert!(says.contains("not ready within 2s"), "{says}");
    assert!(says.contains("loading weights"), "{says}");
    assert!(secs < 20.0, "{secs}s");
    // the background sleep was in the stub's process group: stopped with it
    assert!(!running(&nap), "the engine's child was left running");
}

#[test]
fn probe_reports_an_engine_that_dies_before_it_is_ready() {
    let dir = tempfile::tempdir().unwrap();
    let s = stub(
        dir.path(),
        "echo 'RuntimeError: CUDA driver not found' >&2\nexit 3",
    );
    let (code, out, err, _) = vramfit(&[
        "probe",
        "--timeout",
        "10",
        "--",
        s.to_str().unwrap(),
        "serve",
        "m",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains("exited with code 3 before it was ready: RuntimeError: CUDA driver not found"),
        "{out}"
    );
}

#[test]
fn a_program_that_is_not_there_is_one_line() {
    for cmd in ["probe", "run"] {
        let (code, _, err, _) = vramfit(&[
            cmd,
            "--",
            "/nonexistent/vllm",
            "serve",
            "Qwen/Qwen3-8B",
            "--max-model-len",
            "4096",
        ]);
        assert_ne!(code, 0, "{cmd}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{cmd}: {err}");
        assert!(err.contains("/nonexistent/vllm"), "{cmd}: {err}");
    }
}
