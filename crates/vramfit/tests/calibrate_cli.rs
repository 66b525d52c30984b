//! `vramfit calibrate LOG` and `check --from-log LOG` on real startup logs (fixtures/logs/,
//! sources in fixtures/logs/SOURCES.md): what is read, what is refused, and what a calibration
//! predicts for another setting of the same deployment.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const GIB: f64 = (1u64 << 30) as f64;

fn logs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs")
}

/// A fresh offline HF cache holding the configs of the dev cases named, and a calibration file.
fn env(tmp: &Path, hf_ids: &[&str]) -> Vec<(String, PathBuf)> {
    let hub = tmp.join("hf_home").join("hub");
    let mut configs = std::collections::HashMap::new();
    for text in [
        include_str!("fixtures/dev_cases.jsonl"),
        include_str!("fixtures/dev_cases_h2.jsonl"),
    ] {
        for l in text.lines().filter(|l| !l.trim().is_empty()) {
            let c: Value = serde_json::from_str(l).unwrap();
            configs.insert(
                c["hf_id"].as_str().unwrap().to_string(),
                c["config"].clone(),
            );
        }
    }
    for id in hf_ids {
        let repo = hub.join(format!("models--{}", id.replace('/', "--")));
        let rev = "0".repeat(40);
        std::fs::create_dir_all(repo.join("snapshots").join(&rev)).unwrap();
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs").join("main"), &rev).unwrap();
        std::fs::write(
            repo.join("snapshots").join(&rev).join("config.json"),
            configs[*id].to_string(),
        )
        .unwrap();
    }
    vec![
        ("HF_HUB_OFFLINE".into(), PathBuf::from("1")),
        ("HF_HUB_CACHE".into(), hub.clone()),
        ("HF_HOME".into(), tmp.join("hf_home")),
        ("VRAMFIT_CALIBRATION".into(), tmp.join("calibrations.json")),
    ]
}

fn vramfit(tmp: &Path, vars: &[(String, PathBuf)], args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .current_dir(tmp)
        .envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_os_str())))
        .env_remove("HF_TOKEN")
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vramfit-cal-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn log(name: &str) -> String {
    logs().join(name).display().to_string()
}

#[test]
fn reads_a_v0_10_tensor_parallel_log() {
    let t = tmpdir("read");
    let vars = env(&t, &[]);
    let (code, v, err) = vramfit(
        &t,
        &vars,
        &[
            "calibrate",
            &log("vllm-0.10.1-qwen2-7b-tp2-a100.log"),
            "--gpu",
            "A100 80GB",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = &v["calibration"];
    assert_eq!(c["engine"], "vllm");
    assert_eq!(c["model"], "Qwen2-7B-Instruct");
    assert_eq!(c["engine_version"], "0.10.1.1");
    assert_eq!(c["settings"]["tensor_parallel_size"], 2);
    assert_eq!(c["settings"]["gpu_memory_utilization"], 0.5);
    assert_eq!(c["settings"]["max_num_batched_tokens"], 2048);
    assert_eq!(c["settings"]["max_model_len"], 16384);
    let m = &c["measured"];
    assert!((m["weights_bytes"].as_f64().unwrap() / GIB - 7.1217).abs() < 1e-3);
    assert!((m["available_kv_bytes"].as_f64().unwrap() / GIB - 31.83).abs() < 1e-3);
    assert_eq!(m["kv_tokens"], 1192160);
    assert_eq!(m["num_gpu_blocks"], 74510);
    assert_eq!(m["max_concurrency"], 72.76);
    assert!((m["cuda_graph_bytes"].as_f64().unwrap() / GIB - 0.65).abs() < 1e-3);
    // stored in the file VRAMFIT_CALIBRATION names
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(t.join("calibrations.json")).unwrap())
            .unwrap();
    assert_eq!(stored["calibrations"].as_array().unwrap().len(), 1);
}

#[test]
fn reads_a_v0_31_log_with_the_consumed_memory_summary() {
    let t = tmpdir("read31");
    let vars = env(&t, &[]);
    let (code, v, err) = vramfit(
        &t,
        &vars,
        &[
            "calibrate",
            &log("vllm-0.31.0-llama31-8b-a100.log"),
            "--model",
            "meta-llama/Llama-3.1-8B-Instruct",
            "--engine-version",
            "0.31.0",
            "--dry-run",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let m = &v["calibration"]["measured"];
    // the summary line names the GPU's total and the budget
    assert!((v["calibration"]["gpu_total_bytes"].as_f64().unwrap() / GIB - 79.25).abs() < 1e-3);
    assert!((m["requested_bytes"].as_f64().unwrap() / GIB - 72.91).abs() < 1e-3);
    assert!((m["consumed_bytes"].as_f64().unwrap() / GIB - 15.26).abs() < 1e-3);
    assert!((m["activation_bytes"].as_f64().unwrap() / GIB - 1.44).abs() < 1e-3);
    assert!((m["available_kv_bytes"].as_f64().unwrap() / GIB - 56.21).abs() < 1e-3);
    assert_eq!(m["kv_tokens"], 460496);
    assert!(
        !t.join("calibrations.json").exists(),
        "--dry-run stores nothing"
    );
}

#[test]
fn from_log_reproduces_the_log_and_answers_what_ifs() {
    let t = tmpdir("fromlog");
    let vars = env(&t, &["Qwen/Qwen2-7B-Instruct"]);
    let cmd = [
        "vllm",
        "serve",
        "Qwen/Qwen2-7B-Instruct",
        "--max-model-len",
        "16384",
        "--tensor-parallel-size",
        "2",
    ];
    let run = |util: &str, len: &str| {
        let mut a = vec!["check", "--json", "--gpu", "2x A100 80GB", "--from-log"];
        let l = log("vllm-0.10.1-qwen2-7b-tp2-a100.log");
        a.push(Box::leak(l.into_boxed_str()));
        a.push("--");
        a.extend_from_slice(&cmd[..4]);
        a.push(Box::leak(len.to_string().into_boxed_str()));
        a.extend_from_slice(&cmd[5..]);
        a.extend([
            "--gpu-memory-utilization",
            Box::leak(util.to_string().into_boxed_str()),
        ]);
        vramfit(&t, &vars, &a)
    };
    let (code, same, err) = run("0.5", "16384");
    assert_eq!(code, 0, "{err}");
    let kv = same["devices"][0]["kv_cache_bytes"].as_f64().unwrap() / GIB;
    assert!((kv - 31.83).abs() < 0.01, "the log's own pool: {kv}");
    assert_eq!(same["calibration"]["sources"]["kv_cache_bytes"], "measured");
    assert!((same["devices"][0]["weights_bytes"].as_f64().unwrap() / GIB - 7.1217).abs() < 1e-3);
    // utilization 0.25: the pool shrinks by exactly 0.25 x the GPU (V1 budgets on total memory)
    let (_, quarter, _) = run("0.25", "16384");
    let kv4 = quarter["devices"][0]["kv_cache_bytes"].as_f64().unwrap() / GIB;
    let total = quarter["devices"][0]["total_bytes"].as_f64().unwrap() / GIB;
    assert!((kv - kv4 - 0.25 * total).abs() < 0.01, "{kv} -> {kv4}");
    assert!(quarter["calibration"]["sources"]["kv_cache_bytes"]
        .as_str()
        .unwrap()
        .contains("moved"));
    // another max_model_len: V1 profiles no KV, so the pool stays
    let (_, longer, _) = run("0.5", "32768");
    let kvl = longer["devices"][0]["kv_cache_bytes"].as_f64().unwrap() / GIB;
    assert!((kvl - kv).abs() < 0.01);
}

#[test]
fn calibrating_on_one_batch_size_predicts_the_other() {
    // vLLM 0.20.0, Qwen3-235B-A22B-Instruct-2507-FP8 TP4 EP on 4x H100: the log at
    // max_num_batched_tokens 32768 / utilization 0.96 (graph estimate charged, per its author),
    // and the same deployment's published figure at 8192 / 0.92 with the estimate off: 13.95 GiB
    let t = tmpdir("pair");
    let id = "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8";
    let vars = env(&t, &[id]);
    let (code, _, err) = vramfit(
        &t,
        &vars,
        &[
            "calibrate",
            &log("vllm-0.20.0-qwen3-235b-fp8-tp4-mnbt32768.log"),
            "--gpu",
            "H100 80GB",
            "--engine-version",
            "0.20.0",
            "--",
            "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1",
            "vllm",
            "serve",
            id,
            "-tp",
            "4",
            "--max-num-batched-tokens",
            "32768",
            "--gpu-memory-utilization",
            "0.96",
            "--max-num-seqs",
            "128",
            "--max-model-len",
            "240000",
            "--enable-expert-parallel",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (code, v, err) = vramfit(
        &t,
        &vars,
        &[
            "check",
            "--json",
            "--gpu",
            "4x H100 80GB",
            "--engine-version",
            "0.20.0",
            "--",
            "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0",
            "vllm",
            "serve",
            id,
            "-tp",
            "4",
            "--gpu-memory-utilization",
            "0.92",
            "--max-num-seqs",
            "128",
            "--max-model-len",
            "240000",
            "--max-num-batched-tokens",
            "8192",
            "--enable-expert-parallel",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        v["calibration"].is_object(),
        "the stored calibration applies: {v}"
    );
    let kv = v["devices"][0]["kv_cache_bytes"].as_f64().unwrap() / GIB;
    let err = (kv - 13.95) / 13.95;
    println!(
        "calibrated at 32768, predicted at 8192: {kv:.2} GiB vs 13.95 measured ({:+.1}%)",
        err * 100.0
    );
    // the target for calibration pairs: within 2 % (+1.5 % since the log's own
    // activation peak is scaled, session 7; −2.1 % when the predicted difference was added)
    assert!(err.abs() < 0.02, "{kv}");
}

#[test]
fn bad_logs_are_refused() {
    let t = tmpdir("bad");
    let vars = env(&t, &[]);
    let read = |n: &str| std::fs::read_to_string(logs().join(n)).unwrap();
    let a = read("vllm-0.10.1-qwen2-7b-tp2-a100.log");
    let b = read("vllm-0.31.0-llama31-8b-a100.log");
    let cases: Vec<(&str, String, &str)> = vec![
        ("mixed.log", format!("{a}{b}"), "mixes runs"),
        (
            "truncated.log",
            a.lines().take(4).collect::<Vec<_>>().join("\n"),
            "ends before",
        ),
        (
            "two.log",
            format!("{a}{}", a.replace("pid=3761", "pid=4000")),
            "server starts",
        ),
        (
            "other.log",
            "hello\nworld\n".into(),
            "no vLLM, SGLang or llama.cpp",
        ),
        (
            "engines.log",
            format!("{a}KV Cache is allocated. #tokens: 1000, K size: 1 GB, V size: 1 GB\n"),
            "mixes",
        ),
    ];
    for (name, text, want) in cases {
        let p = t.join(name);
        std::fs::write(&p, text).unwrap();
        let (code, _, err) = vramfit(
            &t,
            &vars,
            &["calibrate", p.to_str().unwrap(), "--gpu", "A100 80GB"],
        );
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains(want), "{name}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{name}: one line: {err}");
    }
    assert!(
        !t.join("calibrations.json").exists(),
        "nothing stored from a bad log"
    );
    // a log of another deployment is not applied to a command silently (this log does not name
    // its model: its 15 GiB of weights are not a 0.6B model's)
    let vars = env(&t, &["Qwen/Qwen3-0.6B"]);
    let (code, _, err) = vramfit(
        &t,
        &vars,
        &[
            "check",
            "--gpu",
            "A100 80GB",
            "--from-log",
            &log("vllm-0.31.0-llama31-8b-a100.log"),
            "--",
            "vllm",
            "serve",
            "Qwen/Qwen3-0.6B",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not of this deployment"), "{err}");
}

#[test]
fn reads_sglang_and_llama_cpp_logs() {
    let t = tmpdir("others");
    let vars = env(&t, &[]);
    let (code, v, err) = vramfit(
        &t,
        &vars,
        &[
            "calibrate",
            &log("sglang-qwen3-235b-fp8-tp4.log"),
            "--gpu",
            "H100 80GB",
            "--dry-run",
            "--json",
            "--",
            "python3",
            "-m",
            "sglang.launch_server",
            "--model",
            "Qwen/Qwen3-235B-A22B-FP8",
            "--tp",
            "4",
            "--mem-fraction-static",
            "0.93",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["calibration"]["engine"], "sglang");
    assert_eq!(v["calibration"]["measured"]["max_total_num_tokens"], 367404);
    assert_eq!(v["calibration"]["settings"]["tensor_parallel_size"], 4);
    let (code, v, err) = vramfit(
        &t,
        &vars,
        &[
            "calibrate",
            &log("llamacpp-b5274-glm-z1-32b-iq4xs-3090ti.log"),
            "--model",
            "THUDM/GLM-Z1-32B-0414",
            "--dry-run",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let c = &v["calibration"];
    assert_eq!(c["engine"], "llama.cpp");
    assert_eq!(c["engine_version"], "b5274");
    assert_eq!(c["gpu_name"], "NVIDIA GeForce RTX 3090 Ti");
    assert_eq!(c["settings"]["n_ctx"], 32768);
    assert_eq!(c["settings"]["n_ubatch"], 512);
    let mib = (1u64 << 20) as f64;
    assert!(
        (c["measured"]["device_model_bytes"][0].as_f64().unwrap() / mib - 16303.48).abs() < 0.01
    );
    assert!((c["measured"]["device_kv_bytes"][0].as_f64().unwrap() / mib - 1952.0).abs() < 0.01);
    assert!(
        (c["measured"]["device_compute_bytes"][0].as_f64().unwrap() / mib - 353.0).abs() < 0.01
    );
}
