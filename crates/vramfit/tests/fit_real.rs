//! The solver against what the engines' own fitting chose on real machines.
//!
//! - llama.cpp `--fit` (tools/fit-params README, b6895; dev case
//!   code_fitparams_readme_qwen3_30b_a3b_f16_rtx4090): Qwen3-30B-A3B F16 on an RTX 4090 with
//!   24077 MiB free; llama-fit-params chose `-c 4096`, all 48 layers on the GPU and the routed
//!   experts of 34 layers (14–47) on the CPU, keeping its default 1024 MiB margin.
//! - vLLM `--max-model-len auto` (KAITO kaito#2156's table of vLLM auto-fit results, see
//!   ../shared/research/anchors.md §5.4): Qwen3-8B on an NVIDIA A10 → 20,272 tokens.

mod common;
use common::offline;
use vramfit_engine::{Gpu, Hardware};
use vramfit_model::catalog::find_gpu;
use vramfit_plan::solve::Model;
use vramfit_plan::{vllm, Engine, Goal, Request};

const DEV_CASES: &str = "../../../shared/data/dev/cases_check.dev.jsonl";

fn gpu(name: &str, free: Option<u64>) -> Gpu {
    let g = find_gpu(name).unwrap();
    Gpu {
        free_bytes: free.unwrap_or(g.memory_bytes),
        ..Gpu::from_catalog(g)
    }
}

fn within(ours: f64, real: f64, pct: f64) -> bool {
    ((ours - real) / real).abs() * 100.0 <= pct
}

#[test]
fn llama_fit_readme_qwen3_30b_a3b_f16_rtx4090() {
    offline("vramfit-fit-tests-empty-hub");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(DEV_CASES);
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!(
            "SKIP: {} not found (the shared dev data is not checked out)",
            path.display()
        );
        return;
    };
    let case: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|c| c["id"] == "code_fitparams_readme_qwen3_30b_a3b_f16_rtx4090")
        .expect("the fit README case is in the dev cases");
    let argv: Vec<String> = serde_json::from_value(case["argv"].clone()).unwrap();
    // what llama-fit-params chose: the layers whose experts its -ot list sends to the CPU
    let ot = &argv[argv.iter().position(|a| a == "-ot").unwrap() + 1];
    let real_cpu_layers = ot.split(',').count() as f64;
    assert_eq!(real_cpu_layers, 34.0);
    let free = vramfit_model::units::parse_size(case["gpu_free"].as_str().unwrap()).unwrap();
    let hw = Hardware {
        gpus: vec![gpu("RTX 4090", Some(free))],
        host_ram_bytes: None,
    };
    let m = Model::load("Qwen/Qwen3-30B-A3B").unwrap();
    let req = Request {
        engines: vec![Engine::LlamaCpp],
        // llama-fit-params stops at its --fit-ctx floor
        context: Some(4096),
        concurrency: None,
        goal: Goal::Quality,
        quants: Some(vec!["F16".into()]),
        // llama.cpp --fit's margin (common/fit.cpp --fit-target default 1024 MiB)
        headroom: Some(1 << 30),
    };
    // the README ran a local F16 conversion (no Hub repo publishes F16 of it, so solve::fit
    // would not name one): the llama.cpp planner on that GGUF's predicted tensors
    let (q, w) = m.ggufs_any(Some(&["F16".to_string()])).unwrap().remove(0);
    let s = vramfit_plan::llamacpp::Setup::new(
        m.spec(),
        &w,
        m.llama_args(&q),
        q.clone(),
        &hw,
        vramfit_plan::headroom::fixed(&hw, 1 << 30),
    );
    let plans = vramfit_plan::llamacpp::llama_plans(&s, &req);
    let p = plans
        .iter()
        .find(|p| p.argv.windows(2).any(|w| w[0] == "-ctk" && w[1] == "f16"))
        .expect("an f16-KV plan");
    let get = |f: &str| {
        p.argv
            .iter()
            .position(|a| a == f)
            .map(|i| p.argv[i + 1].parse::<u64>().unwrap())
    };
    assert_eq!(get("-c"), Some(4096), "{}", p.command);
    // every block on the GPU (48 blocks, plus the output layer that -ngl counts since b7467)
    assert_eq!(get("-ngl"), Some(49), "{}", p.command);
    let ours = get("--n-cpu-moe").expect("experts overflow to the CPU") as f64;
    assert!(
        within(ours, real_cpu_layers, 8.0),
        "experts of {ours} layers on the CPU vs llama-fit-params' {real_cpu_layers}"
    );
}

#[test]
fn vllm_auto_fit_qwen3_8b_a10() {
    offline("vramfit-fit-tests-empty-hub");
    let hw = Hardware {
        gpus: vec![gpu("A10", None)],
        host_ram_bytes: None,
    };
    let m = Model::load("Qwen/Qwen3-8B").unwrap();
    let s = vllm::Setup {
        spec: m.spec(),
        model: m.repo(),
        hw: &hw,
        headroom: vramfit_plan::headroom::fixed(&hw, 0),
    };
    // The run's utilization is not recorded. 0.9 (vLLM's default before 0.92) is the value
    // that fits the physics: 0.9 × 22.06 GiB − 15.26 GiB of BF16 weights − the 2.78 GiB pool
    // for 20,272 tokens leaves 1.8 GiB for activations, graphs and the CUDA context, where
    // KAITO's own 0.82 would leave under 0.1 GiB.
    let k = vllm::Knobs {
        weights: vllm::Weights::Checkpoint,
        kv: "auto",
        tp: 1,
        pp: 1,
        gmu: 0.9,
        max_model_len: None,
        max_num_seqs: 256,
        max_num_batched_tokens: 2048,
        cpu_offload_gib: 0,
    };
    let ours = s.max_len(&k) as f64;
    assert!(
        within(ours, 20272.0, 8.0),
        "auto-fit length {ours} vs vLLM's 20272"
    );
}
