//! The SGLang planner against the SGLang engine model, over catalog models (dense, MoE, MLA,
//! sliding window) × GPU setups (one consumer card, an A100, two 3090s, four H100s, an L4, a
//! B200, a card too small): every command a plan prints, fed back through the same steps as
//! `vramfit check` (parse → resolve → engine plan) on the free memory it was planned for, fits;
//! and the boundaries are exact.
//!
//! SGLang starts with any token pool above zero and refuses a request longer than the pool
//! (`max_req_len = min(context_len, pool) − 1`, managers/tp_worker.py), so "a context fits"
//! means: the launch fits and its pool holds one request of that length (check's
//! `max_model_len` equals the context); "n requests fit": the pool holds n of them.
//!
//! Offline: models come from the embedded catalog (HF_HUB_OFFLINE=1, an empty HF cache).

mod common;
use common::{gpu, hw, offline, planned_hw, with_env, with_flag};
use std::process::{Command as Process, Output};
use vramfit_engine::cmdline::{Command, EngineKind};
use vramfit_engine::{Hardware, Verdict};
use vramfit_plan::solve::{self, Model};
use vramfit_plan::{Engine, Goal, Plan, Request};

/// `vramfit check`'s steps on the command, which must be an SGLang one.
fn check(argv: &[String], hw: &Hardware) -> vramfit_engine::MemoryPlan {
    let cmd = Command::parse(argv).expect("plan command parses");
    assert_eq!(cmd.engine, Some(EngineKind::Sglang), "{argv:?}");
    common::check(argv, hw)
}

fn request(context: Option<u64>, concurrency: Option<u64>) -> Request {
    Request {
        engines: vec![Engine::Sglang],
        context,
        concurrency,
        goal: Goal::Quality,
        quants: None,
        headroom: None,
    }
}

/// The plan's command fits where it was planned, and one token or one request more does not.
fn verify(p: &Plan, given: &Hardware, n_ctx_train: u64, what: &str) {
    assert_eq!(p.engine, "sglang", "{what}");
    for f in [
        "--model-path",
        "--context-length",
        "--mem-fraction-static",
        "--chunked-prefill-size",
        "--cuda-graph-max-bs",
        "--kv-cache-dtype",
        "--tp-size",
        "--pp-size",
    ] {
        assert!(
            p.argv.iter().any(|a| a == f),
            "{what}: {} lacks {f}",
            p.command
        );
    }
    assert!(
        p.command.starts_with(
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python -m sglang.launch_server "
        ),
        "{what}: {}",
        p.command
    );
    let h = planned_hw(p, given);
    let fed = check(&with_env(p, &p.argv), &h);
    assert_eq!(
        fed.verdict,
        Verdict::Fits,
        "{what}: {} {:?}",
        p.command,
        fed.problems
    );
    assert_eq!(fed.devices.len(), p.devices.len(), "{what}: devices");
    assert_eq!(fed.kv_cache.tokens, p.kv_cache.tokens, "{what}: pool");
    assert_eq!(fed.max_model_len, p.max_model_len, "{what}: context");
    assert!(
        p.concurrency >= 1 && p.concurrency <= p.max_concurrency,
        "{what}"
    );
    assert!(p.max_model_len <= p.max_context, "{what}");
    // every device's memory within its planned free memory
    for (d, f) in fed.devices.iter().zip(&p.planned_free_bytes) {
        assert!(d.used_bytes <= *f, "{what}: {} over {f}", d.used_bytes);
    }
    let fits_ctx = |c: u64| {
        let m = check(&with_env(p, &with_flag(&p.argv, "--context-length", c)), &h);
        m.verdict == Verdict::Fits && m.max_model_len == c
    };
    let c = p.max_context;
    assert!(fits_ctx(c), "{what}: --context-length {c}");
    if c < n_ctx_train {
        assert!(
            !fits_ctx(c + 1),
            "{what}: {} also fits, the boundary {c} is not exact: {}",
            c + 1,
            p.command
        );
    }
    let len = p.max_model_len;
    let fits_n = |n: u64| {
        let m = check(
            &with_env(p, &with_flag(&p.argv, "--max-running-requests", n)),
            &h,
        );
        m.verdict == Verdict::Fits && m.kv_cache.tokens >= n * len
    };
    let n = p.max_concurrency;
    assert!(fits_n(n), "{what}: {n} requests of {len}");
    assert!(
        !fits_n(n + 1),
        "{what}: {} requests of {len} also fit: {}",
        n + 1,
        p.command
    );
    // on the free memory as given (no headroom) the same command fits with a pool at least
    // as large: the headroom only ever adds room
    let real = check(&with_env(p, &p.argv), given);
    assert_eq!(
        real.verdict,
        Verdict::Fits,
        "{what}: at the given free memory"
    );
    assert!(real.kv_cache.tokens >= p.kv_cache.tokens, "{what}");
}

#[test]
fn emitted_commands_pass_check_and_boundaries_are_exact() {
    offline("vramfit-fit-sglang-empty-hub");
    let setups: Vec<(&str, Hardware)> = vec![
        ("RTX 4090", hw(vec![gpu("rtx-4090")])),
        ("A100 80GB", hw(vec![gpu("a100-sxm-80gb")])),
        ("2x RTX 3090", hw(vec![gpu("rtx-3090"), gpu("rtx-3090")])),
        ("4x H100", hw(vec![gpu("h100-sxm"); 4])),
        ("L4", hw(vec![gpu("l4")])),
        ("B200", hw(vec![gpu("b200")])),
        ("GTX 1080 (too small, too old)", hw(vec![gpu("gtx-1080")])),
    ];
    let models = [
        "Qwen/Qwen3-8B", // dense, GQA
        "meta-llama/Llama-3.1-8B-Instruct",
        "Qwen/Qwen2.5-0.5B-Instruct", // 14 heads, 2 KV heads: TP 2 at most
        "Qwen/Qwen3-30B-A3B",         // MoE
        "mistralai/Mixtral-8x7B-Instruct-v0.1",
        "deepseek-ai/DeepSeek-V2-Lite", // MLA + MoE
        "google/gemma-3-1b-it",         // sliding window
        "google/gemma-3-12b-it",
    ];
    let requests = [
        request(None, None),
        request(Some(8192), None),
        request(None, Some(4)),
    ];
    let (mut plans, mut none) = (0, 0);
    let mut seen_tp4 = false;
    let mut seen_fp8_kv = false;
    for id in models {
        let m = Model::load(id).unwrap_or_else(|e| panic!("{id}: {e}"));
        let n_ctx_train = m.spec().n_ctx_train;
        for (gname, given) in &setups {
            for req in &requests {
                let what = format!(
                    "{id} on {gname} (context {:?}, concurrency {:?})",
                    req.context, req.concurrency
                );
                match solve::fit(&m, given, req) {
                    Ok(res) => {
                        assert!(!res.plans.is_empty(), "{what}");
                        for p in &res.plans {
                            verify(p, given, n_ctx_train, &what);
                            if let Some(c) = req.context {
                                assert_eq!(p.max_model_len, c, "{what}");
                            }
                            // SGLang keeps its own request limit unless a concurrency is asked
                            let pinned = p.argv.iter().any(|a| a == "--max-running-requests");
                            assert_eq!(pinned, req.concurrency.is_some(), "{what}: {}", p.command);
                            if let Some(n) = req.concurrency {
                                assert_eq!(p.concurrency, n, "{what}");
                                assert!(with_flag(&p.argv, "--max-running-requests", n) == p.argv);
                            }
                            seen_tp4 |= p.split == "tensor parallel 4";
                            seen_fp8_kv |= p.command.contains("--kv-cache-dtype fp8_e4m3");
                            plans += 1;
                        }
                    }
                    Err(e) => {
                        assert!(e.to_string().starts_with("nothing fits"), "{what}: {e}");
                        none += 1;
                    }
                }
            }
        }
    }
    eprintln!("verified {plans} SGLang plans; {none} model/GPU/request cells where nothing fits");
    assert!(seen_tp4 && seen_fp8_kv);
    assert!(plans > 150, "only {plans} plans verified");
}

#[test]
fn what_fits_where() {
    offline("vramfit-fit-sglang-empty-hub");
    let q8 = Model::load("Qwen/Qwen3-8B").unwrap();
    let fit = |h: &Hardware| solve::fit(&q8, h, &request(None, None));
    // 8 GB and compute capability 6.1: no FP8, and 16 GB of BF16 does not load
    assert!(fit(&hw(vec![gpu("gtx-1080")])).is_err());
    // one 4090: BF16 with its pool shorter than the model's 40960; FP8 weights reach 40960
    let r = fit(&hw(vec![gpu("rtx-4090")])).unwrap();
    let bf16 = r
        .plans
        .iter()
        .find(|p| p.weight_bits > 15.0 && p.kv_bits == 16.0)
        .unwrap();
    assert!(
        bf16.max_context < 40960 && bf16.max_context > 28000,
        "{}",
        bf16.max_context
    );
    assert!(r
        .plans
        .iter()
        .any(|p| p.max_context == 40960 && p.weight_bits == 8.0));
    // four H100s: TP 4, SGLang's TP ≥ 4 graph default (512) and a 1 % headroom per GPU
    let r = fit(&hw(vec![gpu("h100-sxm"); 4])).unwrap();
    let p = &r.plans[0];
    assert_eq!(p.split, "tensor parallel 4");
    assert!(
        p.command.contains("--tp-size 4 --pp-size 1"),
        "{}",
        p.command
    );
    assert!(
        p.command.contains("--cuda-graph-max-bs 512"),
        "{}",
        p.command
    );
    assert!(
        p.command.contains("--chunked-prefill-size 8192"),
        "{}",
        p.command
    );
    assert_eq!(p.devices.len(), 4);
    // two 3090s: 32 heads split two ways
    let r = fit(&hw(vec![gpu("rtx-3090"), gpu("rtx-3090")])).unwrap();
    assert!(r.plans.iter().all(|p| p.split == "tensor parallel 2"));
    // an MLA model: no FP8 KV plan up to Hopper (SGLang's default MLA backends there do not
    // read it), one on a B200 (TRT-LLM MLA)
    let lite = Model::load("deepseek-ai/DeepSeek-V2-Lite").unwrap();
    for g in ["a100-sxm-80gb", "h100-sxm"] {
        let r = solve::fit(&lite, &hw(vec![gpu(g)]), &request(None, None)).unwrap();
        assert!(r.plans.iter().all(|p| p.kv_bits == 16.0), "{g}");
    }
    let r = solve::fit(&lite, &hw(vec![gpu("b200")]), &request(None, None)).unwrap();
    assert!(r.plans.iter().any(|p| p.kv_bits == 8.0));
    // B200: pages of 64 tokens (TRT-LLM backends), a pool of whole pages
    for p in &r.plans {
        assert!(p.command.contains("--page-size 64"), "{}", p.command);
        assert_eq!(p.kv_cache.tokens % 64, 0);
    }
}

#[test]
fn other_tenants_and_fixed_headroom() {
    offline("vramfit-fit-sglang-empty-hub");
    let q8 = Model::load("Qwen/Qwen3-8B").unwrap();
    // an A100 with 40 GiB taken by another process
    let mut a100 = gpu("a100-sxm-80gb");
    a100.free_bytes = 40 * 1024 * 1024 * 1024;
    let given = hw(vec![a100]);
    let r = solve::fit(&q8, &given, &request(None, None)).unwrap();
    for p in &r.plans {
        verify(p, &given, 40960, "A100 with 40 GiB free");
        assert!(p.check.contains("--gpu-free "), "{}", p.check);
    }
    // --headroom 2GiB: planned on free less exactly that
    let mut req = request(None, None);
    req.headroom = Some(2 * 1024 * 1024 * 1024);
    let given = hw(vec![gpu("rtx-4090")]);
    let r = solve::fit(&q8, &given, &req).unwrap();
    for p in &r.plans {
        assert_eq!(
            p.planned_free_bytes[0],
            given.gpus[0].free_bytes - 2 * 1024 * 1024 * 1024
        );
        verify(p, &given, 40960, "4090 with --headroom 2GiB");
    }
}

#[test]
fn table_rows_bf16_and_fp8() {
    offline("vramfit-fit-sglang-empty-hub");
    let q8 = Model::load("Qwen/Qwen3-8B").unwrap();
    let gpus = [gpu("rtx-4060"), gpu("rtx-4090"), gpu("t4")];
    let (rows, cells) = vramfit_plan::sglang::table_cells(&q8, &gpus, None, None).unwrap();
    assert_eq!(rows, vec!["BF16", "FP8"]);
    assert_eq!(cells.len(), 6);
    let cell = |g: &str, q: &str| {
        cells
            .iter()
            .find(|c| c.gpu.contains(g) && c.quant == q)
            .unwrap()
            .clone()
    };
    assert!(cell("4060", "BF16").max_context.is_none());
    assert!(cell("4060", "FP8").max_context.is_none());
    let bf16 = cell("4090", "BF16").max_context.unwrap();
    let fp8 = cell("4090", "FP8").max_context.unwrap();
    // the 4090's CUDA-visible 23.55 GiB (not nvidia-smi's 23.99) leaves BF16 about 29.6K
    assert!(bf16 > 28000 && fp8 == 40960, "{bf16} {fp8}");
    // T4: compute capability 7.5, no FP8
    assert!(cell("T4", "FP8").max_context.is_none());
    // at a context: the requests of it at once
    let (_, cells) = vramfit_plan::sglang::table_cells(&q8, &gpus[1..2], None, Some(8192)).unwrap();
    assert!(cells[1].max_concurrency.unwrap() >= cells[0].max_concurrency.unwrap());
    // BF16 on the 4090's 23.55 GiB: three requests of 8192 at once (four with nvidia-smi's 23.99)
    assert!(cells[0].max_concurrency.unwrap() >= 3);
    // a quant SGLang does not load in flight: one line naming it and what to use
    let e = vramfit_plan::sglang::table_cells(&q8, &gpus, Some(&["Q4_K_M".to_string()]), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("'Q4_K_M'") && e.contains("BF16") && e.contains("FP8") && !e.contains('\n'),
        "{e}"
    );
}

fn vramfit(args: &[&str]) -> Output {
    let dir = std::env::temp_dir().join("vramfit-fit-sglang-cli-empty-hub");
    let _ = std::fs::create_dir_all(&dir);
    Process::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HUB_CACHE", &dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn cli_fit_sglang_json() {
    let o = vramfit(&[
        "fit",
        "Qwen/Qwen3-8B",
        "--gpu",
        "RTX 4090",
        "--engine",
        "sglang",
        "--json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let plans = v["plans"].as_array().unwrap();
    assert!(plans.len() >= 2);
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
        assert_eq!(p["engine"], "sglang");
        assert_eq!(p["verdict"], "fits");
        assert_eq!(
            p["env"]["PYTORCH_CUDA_ALLOC_CONF"],
            "expandable_segments:True"
        );
        assert!(p["est_tokens_per_s"].as_f64().unwrap() > 10.0);
        // one reason per knob
        let knobs: Vec<&str> = p["settings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["knob"].as_str().unwrap())
            .collect();
        for k in [
            "--context-length",
            "--mem-fraction-static",
            "--max-running-requests",
            "--kv-cache-dtype",
            "--chunked-prefill-size",
            "--cuda-graph-max-bs",
        ] {
            assert!(knobs.contains(&k), "settings lack {k}: {knobs:?}");
        }
        // the check line, run as printed, reproduces the plan
        let line = p["check"].as_str().unwrap();
        let mut words: Vec<String> = line
            .split_whitespace()
            .skip(1)
            .map(str::to_string)
            .collect();
        words.insert(1, "--json".into());
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let c = vramfit(&args);
        let cv: serde_json::Value = serde_json::from_slice(&c.stdout)
            .unwrap_or_else(|_| panic!("{line}: {}", String::from_utf8_lossy(&c.stderr)));
        assert_eq!(cv["verdict"], "fits", "{line}");
        assert_eq!(cv["max_model_len"], p["max_model_len"], "{line}");
        assert_eq!(cv["kv_cache"]["tokens"], p["kv_cache"]["tokens"], "{line}");
    }
}

#[test]
fn cli_bad_and_impossible_requests_are_one_line() {
    for (args, needle) in [
        (
            vec![
                "fit",
                "Qwen/Qwen3-8B",
                "--gpu",
                "RTX 4090",
                "--engine",
                "sglang",
                "--context",
                "1M",
            ],
            "nothing fits Qwen/Qwen3-8B",
        ),
        (
            vec![
                "fit",
                "Qwen/Qwen3-32B",
                "--gpu",
                "RTX 4060",
                "--engine",
                "sglang",
            ],
            "nothing fits Qwen/Qwen3-32B",
        ),
        (
            vec![
                "fit",
                "Qwen/Qwen3-8B",
                "--gpu",
                "RTX 4090",
                "--engine",
                "sglang",
                "--concurrency",
                "0",
            ],
            "--concurrency 0",
        ),
        (
            vec![
                "fit",
                "Qwen/Qwen3-8B",
                "--gpu",
                "RTX 4090",
                "--engine",
                "sglangx",
            ],
            "--engine 'sglangx'",
        ),
    ] {
        let o = vramfit(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(e.trim_end().lines().count(), 1, "one line: {e}");
        assert!(e.contains(needle), "{args:?}: {e}");
    }
}
