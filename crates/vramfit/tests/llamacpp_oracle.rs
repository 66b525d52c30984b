//! The real-llama.cpp oracle: a CPU-only llama-server built from the llama.cpp that
//! llama-cpp-python vendors (scripts/build_llama_server.sh) loads small GGUFs of real
//! architectures (llama and qwen3 dense, sliding-window gemma3, qwen3moe; random weights, one
//! with Qwen's 151936-token vocabulary) across flags, and the buffers it prints (model, KV,
//! compute, output) are compared with `vramfit check --gpu none` for the same command at that
//! build: KV exact (to the printed 0.01 MiB), model within 1 %, compute within
//! max(15 %, 64 MiB). Skips with a message when the build or the Python `gguf` package is absent.

mod live;

use serde_json::Value;
use std::process::Command;

const MIB: f64 = 1048576.0;

/// Sum of `<dev> <what> buffer size = X MiB` lines, in bytes.
fn buffer(log: &str, what: &str) -> Option<f64> {
    let key = format!("{what} buffer size");
    let vals: Vec<f64> = log
        .lines()
        .filter_map(|l| {
            let i = l.find(&key)?;
            let rest = l[i + key.len()..]
                .trim_start()
                .strip_prefix('=')?
                .trim_start();
            let num: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            num.parse::<f64>().ok()
        })
        .collect();
    (!vals.is_empty()).then(|| vals.iter().sum::<f64>() * MIB)
}

fn setting(plan: &Value, key: &str) -> String {
    plan["settings"]
        .as_array()
        .and_then(|a| a.iter().find(|p| p[0] == key))
        .map(|p| p[1].as_str().unwrap_or("").to_string())
        .unwrap_or_default()
}

#[test]
fn check_gpu_none_matches_real_llama_server() {
    let Some(server) = live::llama_server() else {
        eprintln!("SKIP llamacpp_oracle: no llama-server build; run scripts/build_llama_server.sh");
        return;
    };
    let Some(models) = live::models() else {
        eprintln!("SKIP llamacpp_oracle: cannot write the GGUF models (pip install gguf numpy)");
        return;
    };
    let (build, how) = live::identify(&server);
    eprintln!(
        "llama-server {} ({how}; {})",
        build.as_deref().unwrap_or("build ?"),
        live::build_info(&server).replace('\n', " ")
    );
    // the build must be named: by its number, or by its commit when it prints none
    assert!(build.is_some(), "llama-server build not identified: {how}");
    let flag_sets: &[&[&str]] = &[
        &["-c", "4096", "-np", "1", "-fa", "off"],
        &["-c", "4096", "-np", "1", "-fa", "on"],
        &["-c", "8192", "-np", "4", "-fa", "on"],
        &["-c", "4096", "-np", "1", "-fa", "off", "-ub", "1024"],
        &["-c", "16384", "-np", "1", "-fa", "off", "-ub", "1024"],
        &[
            "-c", "6144", "-np", "2", "-fa", "on", "-ctk", "q8_0", "-ctv", "q8_0",
        ],
        &["-c", "4096", "-fa", "auto", "-ub", "256", "-b", "1024"],
        &["-c", "4096", "-np", "1", "-fa", "on", "--swa-full"],
        // 4-bit KV (a V cache in q4_0 needs flash attention), and K alone quantized
        &[
            "-c", "8192", "-np", "4", "-fa", "on", "-ctk", "q4_0", "-ctv", "q4_0",
        ],
        &["-c", "4096", "-np", "1", "-fa", "on", "-ctk", "q4_0"],
        // the full-size SWA cache across several slots, with a larger micro-batch
        &[
            "-c",
            "8192",
            "-np",
            "2",
            "-fa",
            "on",
            "--swa-full",
            "-ub",
            "1024",
        ],
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut rows = 0;
    for model in ["llama-32k", "qwen3-152k", "gemma3-swa", "qwen3moe"] {
        let path = models.join(format!("{model}.gguf"));
        for flags in flag_sets {
            let mut args: Vec<&str> = vec![
                "-m",
                path.to_str().unwrap(),
                "--no-warmup",
                "-t",
                "1",
                "-lv",
                "4",
            ];
            args.extend_from_slice(flags);
            let log_path = dir.path().join(format!("{model}-{rows}.log"));
            let mut srv = live::Server::start(&server, &args, log_path);
            let up = srv.wait_for("compute buffer size", 120);
            let log = srv.log();
            drop(srv);
            assert!(
                up,
                "{model} {flags:?}: llama-server did not reserve its buffers:\n{}",
                log.lines().rev().take(15).collect::<Vec<_>>().join("\n")
            );
            let mut cmd: Vec<String> = vec![
                server.to_string_lossy().into(),
                "-m".into(),
                path.to_string_lossy().into(),
            ];
            cmd.extend(flags.iter().map(|s| s.to_string()));
            let mut check = Command::new(env!("CARGO_BIN_EXE_vramfit"));
            check.args(["check", "--gpu", "none", "--json"]);
            if let Some(b) = &build {
                check.args(["--engine-version", b]);
            }
            let out = check.arg("--").args(&cmd).output().unwrap();
            let plan: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
                panic!("check failed: {}", String::from_utf8_lossy(&out.stderr))
            });
            let real_model = buffer(&log, "model").unwrap();
            let real_kv = buffer(&log, "KV").unwrap_or(0.0);
            let real_compute = buffer(&log, "compute").unwrap();
            let real_output = buffer(&log, "output").unwrap_or(0.0);
            let host = &plan["host"];
            let (m, kv, c) = (
                host["weights_bytes"].as_f64().unwrap(),
                host["kv_cache_bytes"].as_f64().unwrap(),
                host["compute_bytes"].as_f64().unwrap(),
            );
            let kv_lines = log.matches("KV buffer size").count().max(1) as f64;
            let ok_kv = (kv - real_kv).abs() <= 0.006 * MIB * kv_lines;
            let ok_model = (m - real_model).abs() <= 0.01 * real_model;
            let ok_compute = (c - real_compute).abs() <= (0.15 * real_compute).max(64.0 * MIB);
            let line = format!(
                "{model:11} {:44} n_ctx {:>5} fa {:5} | model {:8.2}/{:8.2} | KV {:7.2}/{:7.2} | compute {:8.2}/{:8.2} MiB ({:+.1}%) | output {:.2} MiB",
                flags.join(" "),
                setting(&plan, "n_ctx"),
                setting(&plan, "flash_attn"),
                m / MIB, real_model / MIB, kv / MIB, real_kv / MIB, c / MIB, real_compute / MIB,
                100.0 * (c - real_compute) / real_compute, real_output / MIB,
            );
            eprintln!(
                "{}{line}",
                if ok_kv && ok_model && ok_compute {
                    "ok   "
                } else {
                    "FAIL "
                }
            );
            if !(ok_kv && ok_model && ok_compute) {
                failures.push(line);
            }
            rows += 1;
        }
    }
    assert!(
        live::none_running(&server),
        "a llama-server was left running"
    );
    assert!(
        failures.is_empty(),
        "{} of {rows} combinations off:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
