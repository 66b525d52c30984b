//! `vramfit calibrate` and `check --from-log` on a real SGLang start-up log
//! (fixtures/logs/sglang-0.4.3-qwq-32b-tp4-l4.log: QwQ-32B, TP4 on 4x L4, SGLang 0.4.3.post4,
//! default fraction 0.85): the measured free memory and weights replace the predicted ones, the
//! log's pool is reproduced, and what-ifs (`--mem-fraction-static`, `--context-length`) are
//! answered from SGLang's own arithmetic on the measured numbers (model_runner.py
//! `profile_max_num_token`: rest = free_after_load − free_before_load × (1 − fraction)).

use serde_json::Value;
use std::path::Path;

const GIB: f64 = (1u64 << 30) as f64;
/// What the log prints per rank: 'Load weight begin. avail mem=21.63 GB', 'mem usage=15.54 GB',
/// '#tokens: 46611' (SGLang's GB are GiB).
const FREE: f64 = 21.63;
const WEIGHTS: f64 = 15.54;
const TOKENS: u64 = 46611;
/// QwQ-32B per rank at TP4: 64 layers × 2 KV heads × (128 + 128) × 2 bytes
const CELL: f64 = 65536.0;

fn vramfit(args: &[&str]) -> (i32, Value, String) {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", tmp.path().join("hf"))
        .env("HF_HUB_CACHE", tmp.path().join("hf/hub"))
        .env("VRAMFIT_CALIBRATION", tmp.path().join("calibrations.json"))
        .env_remove("HF_TOKEN")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn log() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/logs/sglang-0.4.3-qwq-32b-tp4-l4.log")
        .display()
        .to_string()
}

/// `check --from-log` the log with the launch command plus `extra`.
fn from_log(extra: &[&str]) -> Value {
    let log = log();
    let mut args = vec![
        "check",
        "--gpu",
        "4x L4",
        "--json",
        "--from-log",
        &log,
        "--",
        "python3",
        "-m",
        "sglang.launch_server",
        "--model",
        "Qwen/QwQ-32B",
        "--tp",
        "4",
    ];
    args.extend_from_slice(extra);
    let (code, v, err) = vramfit(&args);
    assert_eq!(code, 0, "{err}");
    v
}

#[test]
fn calibrate_reads_the_load_lines() {
    let (code, v, err) = vramfit(&["calibrate", &log(), "--gpu", "L4", "--dry-run", "--json"]);
    assert_eq!(code, 0, "{err}");
    let c = &v["calibration"];
    assert_eq!(c["engine"], "sglang");
    assert_eq!(c["settings"]["tensor_parallel_size"], 4);
    assert_eq!(c["settings"]["mem_fraction_static"], 0.85);
    let m = &c["measured"];
    let gib = |k: &str| m[k].as_f64().unwrap() / GIB;
    assert!((gib("weights_bytes") - WEIGHTS).abs() < 0.005);
    assert!((gib("free_at_start_bytes") - FREE).abs() < 0.005);
    assert!((gib("avail_after_load_bytes") - 6.09).abs() < 0.005);
    assert_eq!(m["max_total_num_tokens"], TOKENS);
}

#[test]
fn from_log_reproduces_the_pool_and_answers_what_ifs() {
    // the log's own settings: its pool within 0.1 %, weights measured
    let v = from_log(&[]);
    let tokens = v["kv_cache"]["tokens"].as_u64().unwrap();
    assert!(
        (tokens as f64 - TOKENS as f64).abs() <= 0.001 * TOKENS as f64,
        "{tokens}"
    );
    assert!((v["devices"][0]["weights_bytes"].as_f64().unwrap() / GIB - WEIGHTS).abs() < 0.005);
    assert!(v["calibration"]["sources"]["weights_bytes"]
        .as_str()
        .unwrap()
        .contains("measured"));
    // a lower fraction: SGLang's arithmetic on the measured free memory and weights
    let v = from_log(&["--mem-fraction-static", "0.80"]);
    let want = ((FREE * 0.80 - WEIGHTS) * GIB / CELL).floor();
    let got = v["kv_cache"]["tokens"].as_f64().unwrap();
    assert!((got - want).abs() <= 0.002 * want, "{got} vs {want}");
    // the uncalibrated prediction differs (its weights and free memory are modelled)
    let (_, p, _) = vramfit(&[
        "check",
        "--gpu",
        "4x L4",
        "--json",
        "--",
        "python3",
        "-m",
        "sglang.launch_server",
        "--model",
        "Qwen/QwQ-32B",
        "--tp",
        "4",
        "--mem-fraction-static",
        "0.80",
    ]);
    assert_ne!(p["kv_cache"]["tokens"].as_f64().unwrap(), got);
    // another context length: the pool does not depend on it; concurrency does
    let v = from_log(&["--context-length", "32768"]);
    let t = v["kv_cache"]["tokens"].as_f64().unwrap();
    assert!((t - TOKENS as f64).abs() <= 0.001 * TOKENS as f64, "{t}");
    let conc = v["kv_cache"]["max_concurrency"].as_f64().unwrap();
    assert!((conc - t / 32768.0).abs() < 1e-6, "{conc}");
}
