//! `vramfit doctor`: the command line, the JSON contract, and fixes re-checked with `check`'s
//! engine model when the crashed command is pasted after `--`.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

fn vramfit(args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    let cache = std::env::temp_dir().join("vramfit-doctor-cli-cache");
    let _ = std::fs::create_dir_all(&cache);
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HUB_CACHE", &cache)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vramfit runs");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const KV_LOG: &str = "INFO 06-01 10:00:00 [api_server.py:1287] non-default args: {'model': 'Qwen/Qwen3-8B', 'max_model_len': 131072}\n\
ValueError: To serve at least one request with the model's max seq len (131072), (18.00 GiB KV cache is needed, which is larger than the available KV cache memory (4.20 GiB). Based on the available memory, the estimated maximum model length is 30576. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n";

#[test]
fn fixes_are_rechecked_against_the_pasted_command() {
    let (code, out, err) = vramfit(
        &[
            "doctor",
            "--json",
            "-",
            "--gpu",
            "L4",
            "--",
            "vllm",
            "serve",
            "Qwen/Qwen3-8B",
            "--max-model-len",
            "131072",
        ],
        Some(KV_LOG),
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["cause"], "kv_cache");
    let first = &v["fixes"][0];
    assert_eq!(first["flag"], "--max-model-len");
    assert_eq!(first["checked"], "re-checked: fits", "{first}");
    let n: u64 = first["value"].as_str().unwrap().parse().unwrap();
    assert!((16384..=30576).contains(&n), "{n}");
    assert!(v["recheck"][0].as_str().unwrap().contains("does not fit"));
    // every flag fix was re-checked (or said why not)
    for f in v["fixes"].as_array().unwrap() {
        if f["flag"].as_str().is_some_and(|s| s.starts_with('-')) {
            assert!(f["checked"].as_str().is_some(), "{f}");
        }
    }
}

#[test]
fn without_a_command_the_report_says_fixes_were_not_rechecked() {
    let (code, out, _) = vramfit(&["doctor", "-", "--gpu", "L4"], Some(KV_LOG));
    assert_eq!(code, 0);
    assert!(out.contains("fixes not re-checked"), "{out}");
}

#[test]
fn a_bad_gpu_is_a_one_line_error() {
    let (code, _, err) = vramfit(
        &[
            "doctor",
            "-",
            "--gpu",
            "NotAGpu9000",
            "--",
            "vllm",
            "serve",
            "Qwen/Qwen3-8B",
        ],
        Some(KV_LOG),
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn stable_json_keys() {
    let (code, out, _) = vramfit(&["doctor", "--json", "-"], Some(KV_LOG));
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    for k in ["cause", "confidence", "engine", "evidence", "fixes"] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    for f in v["fixes"].as_array().unwrap() {
        for k in ["flag", "value", "why"] {
            assert!(f.get(k).is_some(), "fix missing {k}");
        }
    }
}
