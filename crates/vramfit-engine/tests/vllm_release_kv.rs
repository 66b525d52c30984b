//! Release-dependent KV reporting of vLLM, checked on real logs:
//! - V0 sizes and prints its pool before it refuses a `max_model_len` longer than the pool
//!   (vllm#10517: "# GPU blocks: 1478", "Maximum concurrency for 29000 tokens per request: 0.82x",
//!   then "larger than the maximum number of tokens that can be stored in KV cache (23648)");
//!   V1 refuses before any pool line, so it reports no tokens.
//! - The MLA cache by release: per-head K/V padded to 256 before v0.7.1 (vllm PR #10927's
//!   DeepSeek-V2-Lite log: 35.42 GiB for 5,373 blocks of 16), the latent padded to 256 bytes in
//!   V0 v0.7.3, the plain 576-wide latent from v0.8.

use serde_json::{json, Value};
use vramfit_engine::cmdline::Command;
use vramfit_engine::hardware::{Gpu, Hardware};
use vramfit_engine::plan::Verdict;
use vramfit_engine::vllm;
use vramfit_engine::vllm::kv::{KvLayout, LayoutInputs, MlaCache};
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::units::GIB;

fn llama31_8b() -> Value {
    json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16"})
}

fn deepseek_v2_lite() -> Value {
    json!({"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
        "hidden_size": 2048, "intermediate_size": 10944, "moe_intermediate_size": 1408,
        "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
        "kv_lora_rank": 512, "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "v_head_dim": 128, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
        "first_k_dense_replace": 1, "moe_layer_freq": 1, "vocab_size": 102400,
        "max_position_embeddings": 163840, "tie_word_embeddings": false, "torch_dtype": "bfloat16"})
}

/// vllm#10517's RTX 3090 prints a total of 23.58 GiB; the command is vLLM's defaults.
fn plan_3090(version: &str, len: &str) -> vramfit_engine::plan::MemoryPlan {
    let argv = [
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--max-model-len",
        len,
    ];
    let cfg = vllm::parse(&Command::parse(&argv).unwrap(), Some(version)).unwrap();
    let spec = spec_from_config(&cfg.model, &llama31_8b()).unwrap();
    let total = (23.58 * GIB as f64) as u64;
    plan_on_one(&spec, &cfg, "NVIDIA GeForce RTX 3090", total, 8.6)
}

/// The plan of `cfg` on one idle GPU of `total` bytes and compute capability `cc`.
fn plan_on_one(
    spec: &vramfit_model::ModelSpec,
    cfg: &vllm::VllmConfig,
    name: &str,
    total: u64,
    cc: f64,
) -> vramfit_engine::plan::MemoryPlan {
    let gpu = Gpu {
        name: name.into(),
        total_bytes: total,
        free_bytes: total,
        bandwidth_gbps: None,
        compute_capability: Some(cc),
        unified: false,
    };
    vllm::plan(
        spec,
        None,
        cfg,
        &Hardware {
            gpus: vec![gpu],
            host_ram_bytes: None,
        },
    )
}

#[test]
fn v0_reports_the_pool_it_printed_before_refusing_the_length() {
    let p = plan_3090("0.6.4", "29000");
    assert_eq!(p.verdict, Verdict::DoesNotFit, "{:?}", p.problems);
    // the engine printed 1478 blocks = 23648 tokens and 0.82x
    let tokens = p.kv_cache.tokens as f64;
    assert!(
        (tokens - 23648.0).abs() / 23648.0 < 0.08,
        "V0 tokens {tokens} vs the printed 23648"
    );
    assert_eq!(p.kv_cache.tokens % 16, 0, "whole blocks of 16");
    let c = p.kv_cache.max_concurrency;
    assert!((c - 0.82).abs() < 0.07, "V0 concurrency {c} vs 0.82");
}

#[test]
fn v1_refuses_before_it_prints_a_pool() {
    // V1 profiles 2048 batched tokens, so the pool is larger: 60000 tokens (7.3 GiB) still fail
    let p = plan_3090("0.9.2", "60000");
    assert_eq!(p.verdict, Verdict::DoesNotFit, "{:?}", p.problems);
    assert_eq!(p.kv_cache.tokens, 0);
    assert_eq!(p.kv_cache.max_concurrency, 0.0);
}

fn layout(cache: MlaCache) -> KvLayout {
    let spec = spec_from_config("deepseek-ai/DeepSeek-V2-Lite-Chat", &deepseek_v2_lite()).unwrap();
    KvLayout::new(
        &spec,
        0..27,
        LayoutInputs {
            tp: 1,
            kv_cache_dtype: "auto",
            model_dtype_bytes: 2,
            block_size: Some(16),
            max_num_batched_tokens: 8192,
            disable_hybrid: false,
            compute_capability: Some(9.0),
            mla_cache: cache,
            ssm_dtype_bytes: 2,
        },
    )
}

#[test]
fn mla_cache_by_release() {
    assert_eq!(
        MlaCache::of(vllm::Version::new(0, 6, 4)),
        MlaCache::PerHead256
    );
    assert_eq!(
        MlaCache::of(vllm::Version::new(0, 7, 3)),
        MlaCache::LatentAligned256
    );
    assert_eq!(MlaCache::of(vllm::Version::new(0, 8, 5)), MlaCache::Latent);
    // 27 layers × 16 heads × (256 + 256) × 2 bytes; the 640-wide aligned latent; the 576 latent
    assert_eq!(layout(MlaCache::PerHead256).bytes_per_token(), 442_368);
    assert_eq!(
        layout(MlaCache::LatentAligned256).bytes_per_token(),
        27 * 640 * 2
    );
    assert_eq!(layout(MlaCache::Latent).bytes_per_token(), 27 * 576 * 2);
}

#[test]
fn deepseek_v2_lite_before_mla_matches_pr_10927() {
    // "kv_cache_size=35.42GiB" → "# GPU blocks: 5373" (printed to two decimals)
    let pool = (35.42 * GIB as f64) as i64;
    let blocks = layout(MlaCache::PerHead256).num_blocks(pool) as f64;
    assert!(
        (blocks - 5373.0).abs() / 5373.0 < 0.002,
        "{blocks} blocks vs the log's 5373"
    );
}

/// A GPU below compute capability 8.0 runs V0 on 0.8–0.10 ("Falling back to V0"), whose profile
/// takes max_model_len tokens: Qwen3-4B fp16 on a 12 GB RTX 2060, one sequence, 10000 tokens
/// (code-index id 40791855483: "PyTorch activation peak memory takes 0.74GiB", "KV Cache is
/// 3.06GiB", "# cuda blocks: 1394"). On an Ampere card the same command profiles 2048 tokens.
#[test]
fn turing_falls_back_to_v0_on_0_8() {
    let config = json!({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
        "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": true,
        "torch_dtype": "bfloat16"});
    let argv = [
        "vllm",
        "serve",
        "Qwen/Qwen3-4B",
        "--dtype",
        "float16",
        "--max-num-seqs",
        "1",
        "--max-model-len",
        "10000",
        "--gpu-memory-utilization",
        "0.95",
    ];
    let run = |cc: f64| {
        let cfg = vllm::parse(&Command::parse(&argv).unwrap(), Some("0.8.5")).unwrap();
        let spec = spec_from_config(&cfg.model, &config).unwrap();
        plan_on_one(&spec, &cfg, "NVIDIA GeForce RTX 2060", 12 * GIB, cc)
    };
    let turing = run(7.5);
    let act = turing.devices[0].compute_bytes as f64 / GIB as f64;
    assert!((act - 0.74).abs() < 0.1, "V0 activation {act} GiB vs 0.74");
    let pool = turing.devices[0].kv_cache_bytes as f64 / GIB as f64;
    assert!((pool - 3.06).abs() / 3.06 < 0.08, "pool {pool} GiB vs 3.06");
    assert_eq!(turing.kv_cache.tokens % 16, 0);
    let ampere = run(8.6);
    assert!(ampere.devices[0].compute_bytes < turing.devices[0].compute_bytes / 2);
}

/// Decode context parallel (vLLM PR #23734): each of the `dcp` ranks caches every dcp-th token
/// of a request, so one request of L tokens needs `cdiv(L, dcp)` tokens of blocks per rank and
/// the printed "GPU KV cache size" is multiplied by dcp (vllm-project/recipes PR #115, Kimi K2
/// Thinking on 8x H200 at v0.11.1: the same 46.80 GiB pool reports 715,072 tokens at TP8 and
/// 5,721,088 at TP8 + DCP8).
#[test]
fn decode_context_parallel_multiplies_the_tokens_a_pool_holds() {
    let mut l = layout(MlaCache::Latent);
    let plain = l.blocks_per_request(262_144);
    l.context_parallel = 8;
    assert_eq!(l.blocks_per_request(262_144) * 8, plain);
    let spec = spec_from_config("deepseek-ai/DeepSeek-V2-Lite-Chat", &deepseek_v2_lite()).unwrap();
    let on = |extra: &[&str]| {
        let mut argv = vec![
            "vllm",
            "serve",
            "deepseek-ai/DeepSeek-V2-Lite-Chat",
            "-tp",
            "8",
        ];
        argv.extend_from_slice(extra);
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let cfg = vllm::parse(&Command::parse(&argv).unwrap(), Some("0.11.1")).unwrap();
        let gpu = Gpu {
            name: "NVIDIA H200".into(),
            total_bytes: 140 * GIB,
            free_bytes: 140 * GIB,
            bandwidth_gbps: None,
            compute_capability: Some(9.0),
            unified: false,
        };
        let hw = Hardware {
            gpus: vec![gpu; 8],
            host_ram_bytes: None,
        };
        vllm::plan(&spec, None, &cfg, &hw)
    };
    let tp8 = on(&[]);
    let dcp8 = on(&["--decode-context-parallel-size", "8"]);
    assert_eq!(tp8.verdict, Verdict::Fits, "{:?}", tp8.problems);
    assert_eq!(
        dcp8.devices[0].kv_cache_bytes,
        tp8.devices[0].kv_cache_bytes
    );
    assert_eq!(dcp8.kv_cache.tokens, 8 * tp8.kv_cache.tokens);
    let ratio = dcp8.kv_cache.max_concurrency / tp8.kv_cache.max_concurrency;
    assert!((ratio - 8.0).abs() < 0.05, "concurrency ×{ratio}");
    // the DCP group is carved out of the TP group: a size that does not divide TP is refused
    let argv: Vec<String> = ["vllm", "serve", "m", "-tp", "8", "-dcp", "3"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let e = vllm::parse(&Command::parse(&argv).unwrap(), Some("0.11.1")).unwrap_err();
    assert!(
        e.to_string().contains("--decode-context-parallel-size"),
        "{e}"
    );
}
