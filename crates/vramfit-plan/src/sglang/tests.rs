//! The SGLang planner on catalog specs: layouts, what each GPU supports, and one plan's
//! boundaries against the engine model.

use super::*;
use crate::request::{Engine, Goal};
use vramfit_engine::Gpu;
use vramfit_model::catalog::find_model;
use vramfit_model::hf_config::spec_from_config;

fn spec(id: &str) -> ModelSpec {
    let m = find_model(id).unwrap_or_else(|| panic!("{id} not in the catalog"));
    spec_from_config(&m.id, &m.config).unwrap()
}

fn gpus(name: &str, total: u64, cc: Option<f64>, n: usize) -> Hardware {
    Hardware {
        gpus: vec![
            Gpu {
                name: name.into(),
                total_bytes: total,
                free_bytes: total,
                bandwidth_gbps: Some(1000.0),
                compute_capability: cc,
                unified: false,
            };
            n
        ],
        host_ram_bytes: None,
    }
}

fn rtx4090() -> Hardware {
    gpus("NVIDIA GeForce RTX 4090", 24564 * MIB, Some(8.9), 1)
}

fn req(context: Option<u64>, concurrency: Option<u64>) -> Request {
    Request {
        engines: vec![Engine::Sglang],
        context,
        concurrency,
        goal: Goal::Quality,
        quants: None,
        headroom: None,
    }
}

#[test]
fn layouts_follow_heads_and_gpu_count() {
    let q8 = spec("Qwen/Qwen3-8B"); // 32 heads, 8 KV heads
    assert_eq!(parallel_layout(&q8, 1), (1, 1));
    assert_eq!(parallel_layout(&q8, 4), (4, 1));
    assert_eq!(parallel_layout(&q8, 3), (1, 3));
    assert_eq!(parallel_layout(&q8, 6), (2, 3));
    // 4 heads, 1 KV head: TP 4 replicates the KV head, the other 2 GPUs are a second stage
    let g1 = spec("google/gemma-3-1b-it");
    assert_eq!(parallel_layout(&g1, 8), (4, 2));
    // 9 heads, 3 KV heads: no power of two divides them
    let smol = spec("HuggingFaceTB/SmolLM2-135M-Instruct");
    assert_eq!(parallel_layout(&smol, 2), (1, 2));
    // MLA: the latent is on every rank, only the 16 heads count
    let lite = spec("deepseek-ai/DeepSeek-V2-Lite");
    assert_eq!(parallel_layout(&lite, 8), (8, 1));
}

#[test]
fn fp8_block_checkpoints_keep_whole_blocks_per_rank() {
    let m = find_model("Qwen/Qwen3-30B-A3B").unwrap();
    let mut cfg = m.config.clone();
    cfg["quantization_config"] = serde_json::json!({"quant_method": "fp8", "fmt": "e4m3",
        "activation_scheme": "dynamic", "weight_block_size": [128, 128]});
    let fp8 = spec_from_config("Qwen/Qwen3-30B-A3B-FP8", &cfg).unwrap();
    // experts of 768: 768 / 4 = 192 is not whole 128-blocks, 768 / 2 = 384 is
    assert_eq!(parallel_layout(&fp8, 4), (2, 2));
    assert_eq!(parallel_layout(&spec("Qwen/Qwen3-30B-A3B"), 4), (4, 1));
    // the vllm-log-024 model on 8 GPUs: experts of 1536 / 8 = 192 do not load, TP4 × PP2 does
    let big = find_model("Qwen/Qwen3-235B-A22B").unwrap();
    let mut cfg = big.config.clone();
    cfg["quantization_config"] = serde_json::json!({"quant_method": "fp8", "fmt": "e4m3",
        "activation_scheme": "dynamic", "weight_block_size": [128, 128]});
    let big_fp8 = spec_from_config("Qwen/Qwen3-235B-A22B-FP8", &cfg).unwrap();
    assert_eq!(parallel_layout(&big_fp8, 8), (4, 2));
    // a dense MLP of 12288 splits into whole blocks 8 ways
    let m = find_model("Qwen/Qwen3-8B").unwrap();
    let mut cfg = m.config.clone();
    cfg["quantization_config"] = serde_json::json!({"quant_method": "fp8", "fmt": "e4m3",
        "activation_scheme": "dynamic", "weight_block_size": [128, 128]});
    let q8_fp8 = spec_from_config("Qwen/Qwen3-8B-FP8", &cfg).unwrap();
    assert_eq!(parallel_layout(&q8_fp8, 8), (8, 1));
}

#[test]
fn precisions_by_compute_capability() {
    let q8 = spec("Qwen/Qwen3-8B");
    let lite = spec("deepseek-ai/DeepSeek-V2-Lite");
    let t4 = gpus("Tesla T4", 15360 * MIB, Some(7.5), 1);
    let a100 = gpus("NVIDIA A100-SXM4-80GB", 81152 * MIB, Some(8.0), 1);
    let h100 = gpus("NVIDIA H100 80GB HBM3", 81089 * MIB, Some(9.0), 1);
    let sized = gpus("GPU", 24 * 1024 * MIB, None, 1);
    assert!(!weights_supported(&q8, &t4, Weights::Fp8));
    assert!(!kv_supported(&q8, &t4, KV_FP8));
    assert!(weights_supported(&q8, &a100, Weights::Fp8));
    assert!(kv_supported(&q8, &a100, KV_FP8));
    // MLA: no FP8 KV in the default backends up to Hopper; TRT-LLM MLA on B200 reads it
    let b200 = gpus("NVIDIA B200", 183359 * MIB, Some(10.0), 1);
    let rtx5090 = gpus("NVIDIA GeForce RTX 5090", 32607 * MIB, Some(12.0), 1);
    assert!(!kv_supported(&lite, &a100, KV_FP8));
    assert!(!kv_supported(&lite, &h100, KV_FP8));
    assert!(kv_supported(&lite, &b200, KV_FP8));
    assert!(!kv_supported(&lite, &rtx5090, KV_FP8));
    assert!(kv_supported(&q8, &rtx5090, KV_FP8));
    // a GPU known only by its size: FP8 weights allowed, FP8 KV not
    assert!(weights_supported(&q8, &sized, Weights::Fp8));
    assert!(!kv_supported(&q8, &sized, KV_FP8));
    assert!(kv_supported(&q8, &t4, "auto"));
    // an FP8 checkpoint is not quantized again
    let m = find_model("deepseek-ai/DeepSeek-V3").unwrap();
    let v3 = spec_from_config(&m.id, &m.config).unwrap();
    assert!(!weights_supported(&v3, &h100, Weights::Fp8));
}

#[test]
fn plan_sits_on_the_pool_boundary() {
    let q8 = spec("Qwen/Qwen3-8B");
    let hw = rtx4090();
    let ps = plans_for(
        &q8,
        None,
        "Qwen/Qwen3-8B",
        &hw,
        &req(None, None),
        &[Weights::Checkpoint],
        &["auto"],
    );
    assert_eq!(ps.len(), 1);
    let p = &ps[0];
    assert_eq!(p.engine, "sglang");
    assert!(p.command.starts_with(
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python -m sglang.launch_server --model-path Qwen/Qwen3-8B --context-length "
    ));
    // 16 GB of BF16 weights on 24 GB: the pool is shorter than the model's 40960
    assert!(p.max_model_len < 40960 && p.max_model_len == p.kv_cache.tokens);
    assert_eq!(p.max_context, p.max_model_len);
    assert_eq!((p.concurrency, p.max_concurrency), (1, 1));
    // the headroom is 1 % of the pool ÷ fraction, and the check line plans on free less it
    let pool = p.devices[0].kv_cache_bytes as f64;
    let h = hw.gpus[0].free_bytes - p.planned_free_bytes[0];
    assert!(
        h as f64 > pool * 0.01 && (h as f64) < pool * 0.014 + MIB as f64,
        "{h}"
    );
    assert!(
        p.check.contains("--gpu 24564MiB --gpu-free "),
        "{}",
        p.check
    );
    for knob in [
        "--context-length",
        "--mem-fraction-static",
        "--chunked-prefill-size",
        "--cuda-graph-max-bs",
        "--kv-cache-dtype",
        "--tp-size",
        "--pp-size",
    ] {
        assert!(p.command.contains(knob), "{} lacks {knob}", p.command);
    }
    // SGLang's 4090 defaults (tier < 35 GiB: chunk 2048, graphs 24, fraction 0.847)
    assert!(p
        .command
        .contains("--chunked-prefill-size 2048 --cuda-graph-max-bs 24"));
    assert!(p.command.contains("--mem-fraction-static 0.847"));
}

#[test]
fn asked_concurrency_shortens_the_context() {
    let q8 = spec("Qwen/Qwen3-8B");
    let hw = rtx4090();
    let one = &plans_for(
        &q8,
        None,
        "Qwen/Qwen3-8B",
        &hw,
        &req(None, None),
        &[Weights::Fp8],
        &[KV_FP8],
    )[0];
    let four = &plans_for(
        &q8,
        None,
        "Qwen/Qwen3-8B",
        &hw,
        &req(None, Some(4)),
        &[Weights::Fp8],
        &[KV_FP8],
    )[0];
    assert_eq!(four.concurrency, 4);
    // pinned only when asked: SGLang keeps its own request limit otherwise
    assert!(
        four.command.contains("--max-running-requests 4 "),
        "{}",
        four.command
    );
    assert!(
        !one.command.contains("--max-running-requests"),
        "{}",
        one.command
    );
    let own = one
        .settings
        .iter()
        .find(|s| s.knob == "--max-running-requests")
        .unwrap();
    assert!(own.why.contains("request slots"), "{}", own.why);
    assert!(four.max_model_len * 4 <= four.kv_cache.tokens);
    assert!(four.max_model_len <= one.max_model_len);
    // too many requests of a fixed context: no plan
    let none = plans_for(
        &q8,
        None,
        "Qwen/Qwen3-8B",
        &hw,
        &req(Some(32768), Some(1000)),
        &[Weights::Checkpoint],
        &["auto"],
    );
    assert!(none.is_empty());
}

#[test]
fn other_tenants_lower_the_fraction() {
    let q8 = spec("Qwen/Qwen3-8B");
    let mut hw = gpus("NVIDIA A100-SXM4-80GB", 81152 * MIB, Some(8.0), 1);
    // 30 GiB taken by another process: the default fraction's share outside the pool is
    // computed on the total, the free memory is what the pool and reserve come from
    hw.gpus[0].free_bytes = 50 * 1024 * MIB;
    let ps = plans_for(
        &q8,
        None,
        "Qwen/Qwen3-8B",
        &hw,
        &req(None, None),
        &[Weights::Checkpoint],
        &["auto"],
    );
    let p = &ps[0];
    let used = p.devices[0].used_bytes;
    assert!(used <= p.planned_free_bytes[0], "{used}");
}

#[test]
fn no_plan_when_the_weights_do_not_fit() {
    let big = spec("Qwen/Qwen3-32B");
    let ps = plans_for(
        &big,
        None,
        "Qwen/Qwen3-32B",
        &rtx4090(),
        &req(None, None),
        &[Weights::Checkpoint, Weights::Fp8],
        &["auto", KV_FP8],
    );
    assert!(ps.is_empty(), "{:?}", ps.first().map(|p| &p.command));
}
