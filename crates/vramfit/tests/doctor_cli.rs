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

/// `vramfit doctor --json - ARGS` with `log` on stdin: the JSON report, after a zero exit.
fn doctor_json(args: &[&str], log: &str) -> Value {
    let mut all = vec!["doctor", "--json", "-"];
    all.extend_from_slice(args);
    let (code, out, err) = vramfit(&all, Some(log));
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).expect("JSON")
}

const KV_LOG: &str = "INFO 06-01 10:00:00 [api_server.py:1287] non-default args: {'model': 'Qwen/Qwen3-8B', 'max_model_len': 131072}\n\
ValueError: To serve at least one request with the model's max seq len (131072), (18.00 GiB KV cache is needed, which is larger than the available KV cache memory (4.20 GiB). Based on the available memory, the estimated maximum model length is 30576. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n";

#[test]
fn fixes_are_rechecked_against_the_pasted_command() {
    let v = doctor_json(
        &[
            "--gpu",
            "L4",
            "--",
            "vllm",
            "serve",
            "Qwen/Qwen3-8B",
            "--max-model-len",
            "131072",
        ],
        KV_LOG,
    );
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

/// With the command but no GPU known (no --gpu, no size in the log, no NVML), the diagnosis
/// still stands and says why its fixes were not re-checked (it exited 2 before session 10).
#[test]
fn a_command_without_a_known_gpu_still_diagnoses() {
    let log = "RuntimeError: Decode out of memory. Try to lower your batch size.\nTry to allocate 148 tokens.\nAvaliable tokens: 2048\n";
    let v = doctor_json(
        &[
            "--",
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "Qwen/Qwen3-8B",
            "--page-size",
            "64",
        ],
        log,
    );
    assert_eq!(v["cause"], "kv_cache");
    let notes = v["recheck"].to_string();
    // on a machine whose NVML answers, the fixes are re-checked on its GPU instead
    assert!(
        notes.contains("not re-checked") || notes.contains("fits"),
        "{notes}"
    );
}

/// A host-RAM cause has no fix check's GPU model can confirm: none is marked as re-checked.
#[test]
fn host_memory_fixes_are_not_rechecked_on_the_gpu_model() {
    let log = "ValueError: Too large swap space. 4.00 GiB out of the 4.30 GiB total CPU memory is allocated for the swap space.\n";
    let v = doctor_json(
        &["--gpu", "L4", "--", "vllm", "serve", "Qwen/Qwen3-8B"],
        log,
    );
    assert_eq!(v["cause"], "host_memory");
    assert!(
        v["recheck"][0].as_str().unwrap().contains("host RAM"),
        "{v}"
    );
    for f in v["fixes"].as_array().unwrap() {
        if f["flag"].as_str().is_some_and(|s| !s.is_empty()) {
            assert!(
                f["checked"].as_str().unwrap().starts_with("not re-checked"),
                "{f}"
            );
        }
    }
}

/// vLLM's KV-cache check cut from the paste gives no largest context; with the command and the
/// card, check's model gives one, re-checked (holdout8's vllm-27508, gpt-oss-120b on an H100).
#[test]
fn a_kv_cause_without_a_printed_context_gets_checks_own() {
    let log = "$ vllm serve openai/gpt-oss-120b --gpu-memory-utilization 0.95 --max-num-batched-tokens 1024\n\
(EngineCore_DP0 pid=6880) INFO 10-31 15:07:49 [gpu_worker.py:298] Available KV cache memory: 1.71 GiB\n\
(EngineCore_DP0 pid=6880) ERROR 10-31 15:07:50 [core.py:708]     check_enough_kv_cache_memory(vllm_config, kv_cache_spec_one_worker,\n\
(EngineCore_DP0 pid=6880) ERROR 10-31 15:07:50 [core.py:708] ValueError: ...\n";
    let cmd = [
        "vllm",
        "serve",
        "openai/gpt-oss-120b",
        "--gpu-memory-utilization",
        "0.95",
        "--max-num-batched-tokens",
        "1024",
    ];
    let mut args = vec!["--gpu", "H100", "--"];
    args.extend(cmd);
    let v = doctor_json(&args, log);
    assert_eq!(v["cause"], "kv_cache");
    let first = &v["fixes"][0];
    assert_eq!(first["flag"], "--max-model-len", "{v}");
    assert_eq!(first["checked"], "re-checked: fits");
    let n: u64 = first["value"].as_str().unwrap().parse().unwrap();
    assert!((4096..131072).contains(&n), "{n}");
    // where check's model says the command as given fits (an H200), it has no context to offer
    let v = doctor_json(
        &[
            "--gpu",
            "H200",
            "--",
            "vllm",
            "serve",
            "openai/gpt-oss-120b",
        ],
        log,
    );
    assert!(
        v["recheck"][0].as_str().unwrap().contains("as given fits"),
        "{v}"
    );
    assert!(
        v["fixes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["flag"] != "--max-model-len"),
        "{v}"
    );
}
