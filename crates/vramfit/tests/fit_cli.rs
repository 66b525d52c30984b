//! `vramfit fit` and `vramfit table` as a person runs them: JSON keys, exit codes and one-line
//! errors that name the bad value and what to do. Offline (catalog models only).

use std::process::{Command, Output};

fn vramfit(args: &[&str]) -> Output {
    let dir = std::env::temp_dir().join("vramfit-fit-cli-empty-hub");
    let _ = std::fs::create_dir_all(&dir);
    Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HUB_CACHE", &dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn stderr_line(o: &Output) -> String {
    let s = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(s.trim_end().lines().count(), 1, "one line: {s}");
    s
}

#[test]
fn fit_json_has_the_documented_keys() {
    let o = vramfit(&["fit", "Qwen/Qwen3-8B", "--gpu", "RTX 4090", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let plans = v["plans"].as_array().unwrap();
    assert!(!plans.is_empty());
    for p in plans {
        for k in [
            "engine",
            "command",
            "env",
            "settings",
            "verdict",
            "devices",
            "kv_cache",
            "max_model_len",
            "est_tokens_per_s",
        ] {
            assert!(p.get(k).is_some(), "plan lacks {k}");
        }
        assert_eq!(p["verdict"], "fits");
        let cmd = p["command"].as_str().unwrap();
        match p["engine"].as_str().unwrap() {
            "llama.cpp" => {
                for f in ["-c ", "-ngl ", "-np ", "-ub ", "--fit off"] {
                    assert!(cmd.contains(f), "{cmd} does not pin {f}");
                }
            }
            "vllm" => {
                assert_eq!(
                    p["env"]["PYTORCH_CUDA_ALLOC_CONF"],
                    "expandable_segments:True"
                );
                for f in [
                    "--max-model-len ",
                    "--gpu-memory-utilization ",
                    "--max-num-seqs ",
                ] {
                    assert!(cmd.contains(f), "{cmd} does not pin {f}");
                }
            }
            "sglang" => {
                for f in ["--context-length ", "--mem-fraction-static "] {
                    assert!(cmd.contains(f), "{cmd} does not pin {f}");
                }
            }
            "ollama" => {
                assert!(cmd.contains("OLLAMA_NUM_PARALLEL="), "{cmd}");
                // num_ctx, num_gpu and num_batch have no environment variable: a Modelfile
                let modelfile = p["settings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|s| s["knob"] == "Modelfile")
                    .expect("a Modelfile setting");
                for f in ["num_ctx ", "num_gpu ", "num_batch "] {
                    assert!(
                        modelfile["value"].as_str().unwrap().contains(f),
                        "{modelfile} does not pin {f}"
                    );
                }
            }
            "transformers" => {
                for f in ["--batch-size ", "--prompt-tokens ", "--max-new-tokens "] {
                    assert!(cmd.contains(f), "{cmd} does not pin {f}");
                }
            }
            e => panic!("engine {e}"),
        }
    }
}

#[test]
fn multi_gpu_split_is_named() {
    let o = vramfit(&["fit", "Qwen/Qwen3-32B", "--gpu", "2x RTX 3090", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let plans = v["plans"].as_array().unwrap();
    let vllm = plans.iter().find(|p| p["engine"] == "vllm").unwrap();
    assert!(vllm["command"]
        .as_str()
        .unwrap()
        .contains("--tensor-parallel-size 2"));
    let llama = plans.iter().find(|p| p["engine"] == "llama.cpp").unwrap();
    assert!(llama["command"]
        .as_str()
        .unwrap()
        .contains("-sm layer -ts "));
    assert_eq!(llama["devices"].as_array().unwrap().len(), 2);
}

#[test]
fn unknown_gpu_lists_the_closest_names() {
    let o = vramfit(&["fit", "Qwen/Qwen3-8B", "--gpu", "RTX 4091"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr_line(&o);
    assert!(
        e.contains("'RTX 4091'") && e.contains("closest") && e.contains("4090"),
        "{e}"
    );
}

#[test]
fn unknown_model_names_the_places_tried() {
    let o = vramfit(&["fit", "nobody/NoSuchModel-7B", "--gpu", "RTX 4090"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr_line(&o);
    assert!(
        e.contains("nobody/NoSuchModel-7B") && e.contains("tried"),
        "{e}"
    );
}

#[test]
fn impossible_request_names_the_nearest_fit() {
    // 671B parameters on a 6 GB card: no vLLM plan, not even with CPU offload of every weight
    // (on an 8 GB card the offload plan's 6.7 GiB of activation and non-torch memory fits at
    // 0.89 since the sampler constant's refit to 36 bytes: too close to test the error path)
    let o = vramfit(&[
        "fit",
        "deepseek-ai/DeepSeek-V3",
        "--gpu",
        "GTX 1660 SUPER",
        "--engine",
        "vllm",
        // a server with the host RAM for llama.cpp's offload (the nearest plan needs ~380 GiB)
        "--ram",
        "1024GiB",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr_line(&o);
    assert!(
        e.starts_with("vramfit: nothing fits deepseek-ai/DeepSeek-V3"),
        "{e}"
    );
    assert!(e.contains("; nearest: ") && e.contains("tok/s"), "{e}");
    // a desktop's RAM cannot hold it: no offload plan is offered as the nearest
    let o = vramfit(&[
        "fit",
        "deepseek-ai/DeepSeek-V3",
        "--gpu",
        "GTX 1660 SUPER",
        "--engine",
        "vllm",
        "--ram",
        "64GiB",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr_line(&o);
    assert!(!e.contains("; nearest: llama.cpp"), "{e}");
}

#[test]
fn bad_values_are_one_line_errors() {
    for (args, needle) in [
        (
            vec![
                "fit",
                "Qwen/Qwen3-8B",
                "--gpu",
                "4090",
                "--engine",
                "ollama",
                "--quants",
                "Q9_Z",
            ],
            "--quants 'Q9_Z'",
        ),
        (
            vec![
                "fit",
                "Qwen/Qwen3-8B",
                "--gpu",
                "4090",
                "--engine",
                "transformers",
                "--quants",
                "Q4_K_M",
            ],
            "use BF16, INT8 or NF4",
        ),
        (
            vec![
                "fit",
                "Qwen/Qwen3-8B",
                "--gpu",
                "4090",
                "--engine",
                "vllm",
                "--quants",
                "Q4_K_M",
            ],
            "drop --quants",
        ),
        (
            vec![
                "fit",
                "Qwen/Qwen3-8B",
                "--gpu",
                "RTX 4090",
                "--context",
                "lots",
            ],
            "--context 'lots'",
        ),
        (
            vec![
                "fit",
                "Qwen/Qwen3-8B",
                "--gpu",
                "RTX 4090",
                "--goal",
                "fast",
            ],
            "--goal 'fast'",
        ),
        (
            vec![
                "fit",
                "Qwen/Qwen3-8B",
                "--gpu",
                "RTX 4090",
                "--engine",
                "tgi",
            ],
            "--engine 'tgi'",
        ),
        (
            vec![
                "fit",
                "Qwen/Qwen3-8B",
                "--gpu",
                "RTX 4090",
                "--quants",
                "Q9_Z",
            ],
            "'Q9_Z'",
        ),
        (
            vec!["table", "Qwen/Qwen3-8B", "--gpus", "RTX 4091"],
            "RTX 4091",
        ),
        (
            vec![
                "table",
                "Qwen/Qwen3-8B",
                "--engine",
                "vllm",
                "--quants",
                "Q4_K_M",
            ],
            "'Q4_K_M'",
        ),
    ] {
        let o = vramfit(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = stderr_line(&o);
        assert!(e.contains(needle), "{args:?}: {e}");
    }
}

#[test]
fn table_json_cells_and_boundaries() {
    let o = vramfit(&[
        "table",
        "Qwen/Qwen3-8B",
        "--gpus",
        "RTX 4060,RTX 4090",
        "--quants",
        "BF16,Q4_K_M",
        "--json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["model"], "Qwen/Qwen3-8B");
    assert_eq!(v["engine"], "llama.cpp");
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    let cell = |g: &str, q: &str| {
        cells
            .iter()
            .find(|c| c["gpu"].as_str().unwrap().contains(g) && c["quant"] == q)
            .unwrap()
            .clone()
    };
    // 16 GB of BF16 weights cannot go on an 8 GB card; Q4_K_M can, with some context
    assert!(cell("4060", "BF16")["max_context"].is_null());
    let small = cell("4060", "Q4_K_M")["max_context"].as_u64().unwrap();
    let big = cell("4090", "Q4_K_M")["max_context"].as_u64().unwrap();
    assert!(
        small % 256 == 0 && small > 0 && small <= big,
        "{small} {big}"
    );
    // with --context, cells give the requests of that length at once
    let o = vramfit(&[
        "table",
        "Qwen/Qwen3-8B",
        "--gpus",
        "RTX 4090",
        "--quants",
        "Q4_K_M",
        "--context",
        "8k",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["cells"][0]["max_concurrency"].as_u64().unwrap() >= 2);
}

#[test]
fn table_as_a_person_sees_it() {
    let o = vramfit(&[
        "table",
        "Qwen/Qwen3-30B-A3B",
        "--gpus",
        "RTX 4060,RTX 4090,H100",
        "--quants",
        "BF16,Q8_0,Q4_K_M,Q2_K",
    ]);
    assert_eq!(o.status.code(), Some(0));
    insta::assert_snapshot!(String::from_utf8_lossy(&o.stdout));
}
