//! Pre-quantized checkpoints (catalog/quantized.json) in `check` and `fit`: a variant repo
//! resolves offline to its AWQ/GPTQ/FP8 bytes; `fit` of its base model plans serving the
//! variant repo with vLLM and SGLang where the GPU's compute capability allows; and every such
//! plan's command, fed back through the same steps as `vramfit check` (parse → resolve the
//! variant repo → engine plan), fits the free memory it was planned for with exact boundaries.
//!
//! Offline: models come from the embedded catalog (HF_HUB_OFFLINE=1, an empty HF cache).

mod common;
use common::{check, gpu, hw, offline, planned_hw, with_env, with_flag};
use std::process::{Command as Process, Output};
use vramfit_engine::{Hardware, Verdict};
use vramfit_model::catalog::find_variant;
use vramfit_model::units::GIB;
use vramfit_plan::solve::{self, Model};
use vramfit_plan::{model, Engine, Goal, Plan, Request};

fn vramfit(args: &[&str]) -> Output {
    let dir = std::env::temp_dir().join("vramfit-fit-quantized-cli-hub");
    let _ = std::fs::create_dir_all(&dir);
    Process::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HUB_CACHE", &dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn request(engines: Vec<Engine>, context: Option<u64>) -> Request {
    Request {
        engines,
        context,
        concurrency: None,
        goal: Goal::Quality,
        quants: None,
        headroom: None,
    }
}

/// The repo a plan serves (`vllm serve REPO`, `--model-path REPO`).
fn served(p: &Plan) -> &str {
    match p.engine.as_str() {
        "vllm" => &p.argv[2],
        "sglang" => {
            let i = p.argv.iter().position(|a| a == "--model-path").unwrap();
            &p.argv[i + 1]
        }
        _ => "",
    }
}

fn variant_plans(plans: &[Plan]) -> Vec<&Plan> {
    plans
        .iter()
        .filter(|p| find_variant(served(p)).is_some())
        .collect()
}

/// The plan's command fits where it was planned, with its own variant's bytes, and one token
/// (SGLang: also one request) more does not.
fn verify(p: &Plan, given: &Hardware, what: &str) {
    let repo = served(p).to_string();
    let v = find_variant(&repo).unwrap_or_else(|| panic!("{what}: {repo} is not a variant"));
    let n_ctx_train = model::load(&repo).unwrap().spec.n_ctx_train;
    assert!(
        !p.argv.iter().any(|a| a == "--quantization"),
        "{what}: a variant needs no --quantization: {}",
        p.command
    );
    let why = &p.settings[0].why;
    assert!(
        why.contains(&v.repo) && why.contains(&v.format_name()),
        "{what}: {why}"
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
    assert_eq!(fed.model.id, repo, "{what}: check resolves the variant");
    assert_eq!(fed.devices.len(), p.devices.len(), "{what}");
    for (a, b) in fed.devices.iter().zip(&p.devices) {
        assert_eq!(
            a.weights_bytes, b.weights_bytes,
            "{what}: weights as planned"
        );
    }
    let fits = |a: Vec<String>| check(&with_env(p, &a), &h);
    match p.engine.as_str() {
        "vllm" => {
            let c = p.max_context;
            let at = fits(with_flag(&p.argv, "--max-model-len", c));
            assert_eq!(at.verdict, Verdict::Fits, "{what}: --max-model-len {c}");
            if c < n_ctx_train {
                let over = fits(with_flag(&p.argv, "--max-model-len", c + 1));
                assert_ne!(
                    over.verdict,
                    Verdict::Fits,
                    "{what}: {} also starts: {}",
                    c + 1,
                    p.command
                );
            }
            assert_eq!(
                p.max_concurrency,
                fed.kv_cache.max_concurrency.floor() as u64,
                "{what}"
            );
        }
        "sglang" => {
            let ctx_fits = |c: u64| {
                let m = fits(with_flag(&p.argv, "--context-length", c));
                m.verdict == Verdict::Fits && m.max_model_len == c
            };
            let c = p.max_context;
            assert!(ctx_fits(c), "{what}: --context-length {c}");
            if c < n_ctx_train {
                assert!(
                    !ctx_fits(c + 1),
                    "{what}: {} also fits: {}",
                    c + 1,
                    p.command
                );
            }
            let len = p.max_model_len;
            let n_fits = |n: u64| {
                let m = fits(with_flag(&p.argv, "--max-running-requests", n));
                m.verdict == Verdict::Fits && m.kv_cache.tokens >= n * len
            };
            let n = p.max_concurrency;
            assert!(n_fits(n), "{what}: {n} requests of {len}");
            assert!(!n_fits(n + 1), "{what}: {} requests also fit", n + 1);
        }
        e => panic!("{what}: engine {e}"),
    }
}

#[test]
fn check_resolves_a_variant_offline_with_its_quantized_bytes() {
    let o = vramfit(&[
        "check",
        "--json",
        "--gpu",
        "RTX 4090",
        "--",
        "vllm",
        "serve",
        "Qwen/Qwen3-8B-AWQ",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let awq: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(awq["model"]["id"], "Qwen/Qwen3-8B-AWQ");
    let o = vramfit(&[
        "check",
        "--json",
        "--gpu",
        "H100",
        "--",
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
    ]);
    let bf16: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let w = |v: &serde_json::Value| v["devices"][0]["weights_bytes"].as_u64().unwrap();
    // AWQ 4-bit g128 with 16-bit embeddings: 5-7 GiB where the BF16 checkpoint takes ~15 GiB
    assert!(w(&awq) > 5 * GIB && w(&awq) < 7 * GIB, "{}", w(&awq));
    assert!(w(&bf16) > 2 * w(&awq), "{} vs {}", w(&bf16), w(&awq));
    // SGLang reads the same checkpoint
    let o = vramfit(&[
        "check",
        "--json",
        "--gpu",
        "RTX 4090",
        "--",
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "qwen/qwen3-8b-fp8",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let fp8: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(fp8["model"]["id"], "Qwen/Qwen3-8B-FP8");
    assert!(w(&fp8) > w(&awq) && w(&fp8) < w(&bf16), "{}", w(&fp8));
}

#[test]
fn a_model_too_big_for_a_12_or_16_gb_card_gets_its_awq_repo() {
    offline("vramfit-fit-quantized-empty-hub");
    for (model, card, repo) in [
        ("Qwen/Qwen3-8B", "rtx-3060-12gb", "Qwen/Qwen3-8B-AWQ"),
        ("Qwen/Qwen3-14B", "rtx-4060-ti-16gb", "Qwen/Qwen3-14B-AWQ"),
        (
            "Qwen/Qwen2.5-14B-Instruct",
            "rtx-4060-ti-16gb",
            "Qwen/Qwen2.5-14B-Instruct-AWQ",
        ),
        (
            "meta-llama/Llama-3.1-8B-Instruct",
            "rtx-3060-12gb",
            "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
        ),
    ] {
        let m = Model::load(model).unwrap();
        let h = hw(vec![gpu(card)]);
        let res = solve::fit(
            &m,
            &h,
            &request(vec![Engine::Vllm, Engine::Sglang], Some(8192)),
        )
        .unwrap();
        // the 16-bit checkpoint does not fit without host RAM
        assert!(
            res.plans
                .iter()
                .filter(|p| served(p) == model && p.weight_bits > 15.0)
                .all(|p| p.host.weights_bytes > 0),
            "{model} on {card}"
        );
        for engine in ["vllm", "sglang"] {
            let p = res
                .plans
                .iter()
                .find(|p| p.engine == engine && served(p) == repo)
                .unwrap_or_else(|| panic!("{model} on {card}: no {engine} plan serving {repo}"));
            assert_eq!(p.host.weights_bytes, 0, "{model}: all on the GPU");
            assert!(p.max_model_len >= 8192);
            assert!(p.weight_bits < 7.0, "{}", p.weight_bits);
        }
        // ranked by measured quality among plans that keep every weight on the GPU: a 4-bit
        // variant below any GPU-resident 8-bit plan of the same engine, above any that offloads
        let pos = |f: &dyn Fn(&Plan) -> bool| res.plans.iter().position(f);
        let awq = pos(&|p| served(p) == repo && p.engine == "vllm");
        let eight = |resident: bool| {
            pos(&|p: &Plan| {
                p.engine == "vllm" && p.weight_bits >= 7.75 && p.gpu_resident == resident
            })
        };
        if let (Some(awq), Some(e)) = (awq, eight(true)) {
            assert!(e < awq, "{model}: GPU-resident 8-bit ranks first");
        }
        if let (Some(awq), Some(e)) = (awq, eight(false)) {
            assert!(
                awq < e,
                "{model}: offloaded 8-bit ranks after the GPU-resident AWQ"
            );
        }
    }
}

#[test]
fn kernel_support_decides_which_variants_are_planned() {
    offline("vramfit-fit-quantized-empty-hub");
    let m = Model::load("Qwen/Qwen3-8B").unwrap();
    let req = request(vec![Engine::Vllm, Engine::Sglang], None);
    // T4 (7.5): AWQ runs on the plain AWQ kernels, FP8 weights not at all
    let res = solve::fit(&m, &hw(vec![gpu("t4")]), &req).unwrap();
    assert!(res.plans.iter().any(|p| served(p) == "Qwen/Qwen3-8B-AWQ"));
    assert!(res.plans.iter().all(|p| served(p) != "Qwen/Qwen3-8B-FP8"));
    assert!(
        res.notes
            .iter()
            .any(|n| n.contains("Qwen/Qwen3-8B-FP8") && n.contains("7.5")),
        "{:?}",
        res.notes
    );
    let awq = res
        .plans
        .iter()
        .find(|p| served(p) == "Qwen/Qwen3-8B-AWQ")
        .unwrap();
    assert!(
        awq.settings[0].why.contains("plain AWQ"),
        "{}",
        awq.settings[0].why
    );
    // V100 (7.0): neither
    let res = solve::fit(&m, &hw(vec![gpu("v100")]), &req).unwrap();
    assert!(variant_plans(&res.plans).is_empty());
    // Ampere (8.6): FP8 through Marlin; Ada (8.9): native
    let res = solve::fit(&m, &hw(vec![gpu("rtx-3090")]), &req).unwrap();
    let fp8 = res
        .plans
        .iter()
        .find(|p| served(p) == "Qwen/Qwen3-8B-FP8")
        .unwrap();
    assert!(
        fp8.settings[0].why.contains("Marlin W8A16"),
        "{}",
        fp8.settings[0].why
    );
    let res = solve::fit(&m, &hw(vec![gpu("rtx-4090")]), &req).unwrap();
    let fp8 = res
        .plans
        .iter()
        .find(|p| served(p) == "Qwen/Qwen3-8B-FP8")
        .unwrap();
    assert!(
        fp8.settings[0].why.contains("native FP8"),
        "{}",
        fp8.settings[0].why
    );
}

#[test]
fn only_the_checkpoints_own_variants_are_offered() {
    offline("vramfit-fit-quantized-empty-hub");
    let req = request(vec![Engine::Vllm], None);
    let h = hw(vec![gpu("rtx-4090")]);
    // the 2507 release shares Qwen3-4B's architecture, not its weights
    let m = Model::load("Qwen/Qwen3-4B-Instruct-2507").unwrap();
    let served_variants: Vec<String> = variant_plans(&solve::fit(&m, &h, &req).unwrap().plans)
        .iter()
        .map(|p| served(p).to_string())
        .collect();
    assert!(!served_variants.is_empty());
    assert!(
        served_variants
            .iter()
            .all(|r| r == "Qwen/Qwen3-4B-Instruct-2507-FP8"),
        "{served_variants:?}"
    );
    // a variant planned on its own offers no further variants
    let m = Model::load("Qwen/Qwen3-8B-AWQ").unwrap();
    let res = solve::fit(&m, &h, &req).unwrap();
    assert!(res.plans.iter().all(|p| served(p) == "Qwen/Qwen3-8B-AWQ"));
    assert!(res
        .plans
        .iter()
        .all(|p| !p.argv.iter().any(|a| a == "--quantization")));
    // llama.cpp alone plans no variant
    let m = Model::load("Qwen/Qwen3-8B").unwrap();
    let res = solve::fit(&m, &h, &request(vec![Engine::LlamaCpp], None)).unwrap();
    assert!(variant_plans(&res.plans).is_empty());
}

#[test]
fn tensor_parallel_keeps_whole_blocks_and_groups() {
    offline("vramfit-fit-quantized-empty-hub");
    // Qwen3-235B-A22B-FP8 on 8 H100: experts of 1536 / 8 = 192 are not whole 128-blocks
    let m = Model::load("Qwen/Qwen3-235B-A22B").unwrap();
    let h = hw(vec![gpu("h100-sxm"); 8]);
    let res = solve::fit(&m, &h, &request(vec![Engine::Vllm, Engine::Sglang], None)).unwrap();
    let fp8: Vec<&Plan> = res
        .plans
        .iter()
        .filter(|p| served(p) == "Qwen/Qwen3-235B-A22B-FP8")
        .collect();
    assert!(!fp8.is_empty());
    for p in fp8 {
        let tp = if p.engine == "vllm" {
            "--tensor-parallel-size"
        } else {
            "--tp-size"
        };
        let i = p.argv.iter().position(|a| a == tp).unwrap();
        assert_eq!(p.argv[i + 1], "4", "{}", p.command);
        verify(p, &h, "Qwen3-235B-A22B-FP8 on 8x H100");
    }
}

#[test]
fn variant_commands_pass_check_and_boundaries_are_exact() {
    offline("vramfit-fit-quantized-empty-hub");
    let setups: Vec<(&str, Hardware)> = vec![
        ("RTX 3060 12GB", hw(vec![gpu("rtx-3060-12gb")])),
        ("RTX 4060 Ti 16GB", hw(vec![gpu("rtx-4060-ti-16gb")])),
        ("T4", hw(vec![gpu("t4")])),
        ("RTX 4090", hw(vec![gpu("rtx-4090")])),
        ("2x RTX 3090", hw(vec![gpu("rtx-3090"), gpu("rtx-3090")])),
        ("A100 80GB", hw(vec![gpu("a100-sxm-80gb")])),
    ];
    let models = [
        "Qwen/Qwen3-8B",
        "Qwen/Qwen3-14B",
        "Qwen/Qwen3-30B-A3B", // MoE: FP8 blocks and GPTQ-Int4 experts
        "Qwen/Qwen2.5-7B-Instruct",
        "Qwen/Qwen2.5-32B-Instruct",
        "meta-llama/Llama-3.1-8B-Instruct",
        "mistralai/Mixtral-8x7B-Instruct-v0.1",
    ];
    let mut checked = 0;
    for id in models {
        let m = Model::load(id).unwrap();
        for (gname, h) in &setups {
            for engines in [vec![Engine::Vllm], vec![Engine::Sglang]] {
                let what = format!("{id} on {gname} with {:?}", engines[0]);
                let Ok(res) = solve::fit(&m, h, &request(engines, None)) else {
                    continue;
                };
                for p in variant_plans(&res.plans) {
                    verify(p, h, &what);
                    checked += 1;
                }
            }
        }
    }
    eprintln!("{checked} variant plans checked");
    assert!(checked >= 60, "only {checked} variant plans checked");
}

#[test]
fn a_given_context_is_honoured_by_variant_plans() {
    offline("vramfit-fit-quantized-empty-hub");
    let m = Model::load("Qwen/Qwen2.5-72B-Instruct").unwrap();
    let h = hw(vec![gpu("rtx-4090"); 4]);
    let res = solve::fit(&m, &h, &request(vec![Engine::Vllm], Some(32768))).unwrap();
    let awq = res
        .plans
        .iter()
        .find(|p| served(p) == "Qwen/Qwen2.5-72B-Instruct-AWQ" && p.host.weights_bytes == 0)
        .expect("72B AWQ on four 24 GB cards without host RAM");
    assert_eq!(awq.max_model_len, 32768);
    // 29696 / 4 = 7424, whole 128-groups: tensor parallel 4
    assert!(awq.split.contains("tensor parallel 4"), "{}", awq.split);
    verify(awq, &h, "72B AWQ on 4x 4090");
}

#[test]
fn when_nothing_fits_the_error_names_a_variant_on_more_gpus() {
    // 72B with a 32k context on one 12 GB card: the KV cache alone is over the card
    let o = vramfit(&[
        "fit",
        "Qwen/Qwen2.5-72B-Instruct",
        "--gpu",
        "RTX 3060",
        "--engine",
        "vllm",
        "--context",
        "32k",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(
        e.contains("pre-quantized: ") && e.contains("Qwen/Qwen2.5-72B-Instruct-"),
        "{e}"
    );
    assert!(e.contains("--engine vllm"), "{e}");
}
