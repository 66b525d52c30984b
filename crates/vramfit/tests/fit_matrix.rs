//! The solver against the engine models it plans with, over 30 catalog models × 6 GPU setups ×
//! {llama.cpp, vLLM}: every command a plan prints, fed back through the same steps as
//! `vramfit check` (parse → resolve → engine plan), fits the free memory it was planned for;
//! and the reported boundaries are exact — the largest context fits and one step more (256
//! tokens for llama.cpp, 1 for vLLM) does not; the most llama.cpp slots fit and one more does
//! not; vLLM's full-length concurrency is what check reports; every `-hf` repo and tag is in
//! the GGUF catalog.
//!
//! Offline: models come from the embedded catalog (HF_HUB_OFFLINE=1, an empty HF cache).

mod common;
use common::{check, gpu, offline, planned_hw, with_env, with_flag};
use vramfit_engine::{Hardware, Verdict};
use vramfit_model::catalog::models;
use vramfit_plan::solve::{self, Model};
use vramfit_plan::{Engine, Goal, Plan, Request};

fn verify(p: &Plan, hw: &Hardware, n_ctx_train: u64, what: &str) {
    let h = planned_hw(p, hw);
    let fed = check(&with_env(p, &p.argv), &h);
    assert_eq!(
        fed.verdict,
        Verdict::Fits,
        "{what}: emitted command does not fit: {}",
        p.command
    );
    assert_eq!(fed.devices.len(), p.devices.len(), "{what}: devices");
    let fits = |a: Vec<String>| check(&with_env(p, &a), &h).verdict == Verdict::Fits;
    match p.engine.as_str() {
        "llama.cpp" => {
            // the download it names is one the GGUF catalog has evidence for
            let i = p.argv.iter().position(|a| a == "-hf").expect("-hf");
            assert!(
                vramfit_model::catalog::gguf_repos::is_known_hf_arg(&p.argv[i + 1]),
                "{what}: unknown repo {}",
                p.argv[i + 1]
            );
            let np = p.concurrency;
            let c = p.max_context;
            assert!(
                c.is_multiple_of(256) && c >= p.max_model_len,
                "{what}: max_context {c}"
            );
            assert!(
                fits(with_flag(&p.argv, "-c", c * np)),
                "{what}: -c {} at the boundary",
                c * np
            );
            if c < n_ctx_train {
                assert!(
                    !fits(with_flag(&p.argv, "-c", (c + 256) * np)),
                    "{what}: {} per slot also fits, the boundary {c} is not exact: {}",
                    c + 256,
                    p.command
                );
            }
            let n = p.max_concurrency;
            let slots =
                |n: u64| with_flag(&with_flag(&p.argv, "-np", n), "-c", p.max_model_len * n);
            assert!(n >= np && fits(slots(n)), "{what}: -np {n}");
            if n < 256 {
                assert!(
                    !fits(slots(n + 1)),
                    "{what}: -np {} also fits: {}",
                    n + 1,
                    p.command
                );
            }
        }
        "vllm" => {
            let c = p.max_context;
            assert!(
                fits(with_flag(&p.argv, "--max-model-len", c)),
                "{what}: --max-model-len {c}"
            );
            if c < n_ctx_train {
                assert!(
                    !fits(with_flag(&p.argv, "--max-model-len", c + 1)),
                    "{what}: {} also starts: {}",
                    c + 1,
                    p.command
                );
            }
            assert_eq!(
                p.max_concurrency,
                fed.kv_cache.max_concurrency.floor() as u64,
                "{what}: concurrency"
            );
        }
        e => panic!("engine {e}"),
    }
}

#[test]
fn emitted_commands_pass_check_and_boundaries_are_exact() {
    offline("vramfit-fit-tests-empty-hub");
    let setups: Vec<(&str, Hardware)> = vec![
        ("RTX 4060", vec![gpu("rtx-4060")]),
        ("RTX 3060", vec![gpu("rtx-3060-12gb")]),
        ("RTX 4090", vec![gpu("rtx-4090")]),
        ("L40S", vec![gpu("l40s")]),
        ("H100", vec![gpu("h100-sxm")]),
        ("2x RTX 3090", vec![gpu("rtx-3090"), gpu("rtx-3090")]),
    ]
    .into_iter()
    .map(|(n, g)| {
        (
            n,
            Hardware {
                gpus: g,
                host_ram_bytes: None,
            },
        )
    })
    .collect();
    let chosen: Vec<&str> = models()
        .iter()
        .step_by(3)
        .take(30)
        .map(|m| m.id.as_str())
        .collect();
    assert_eq!(chosen.len(), 30);
    let (mut plans, mut none) = (0, 0);
    for id in &chosen {
        let m = Model::load(id).unwrap_or_else(|e| panic!("{id}: {e}"));
        let n_ctx_train = m.spec().n_ctx_train;
        for (gname, hw) in &setups {
            for engine in [Engine::LlamaCpp, Engine::Vllm] {
                let req = Request {
                    engines: vec![engine],
                    context: None,
                    concurrency: None,
                    goal: Goal::Quality,
                    quants: Some(vec!["Q8_0".into(), "Q4_K_M".into()]),
                    headroom: None,
                };
                let what = format!("{id} on {gname} with {}", engine.name());
                match solve::fit(&m, hw, &req) {
                    Ok(res) => {
                        for p in &res.plans {
                            verify(p, hw, n_ctx_train, &what);
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
    eprintln!("verified {plans} plans; {none} model/GPU/engine cells where nothing fits");
    assert!(plans > 500, "only {plans} plans verified");
}
