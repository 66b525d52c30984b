//! Synthesized GGUF layouts against official parameter counts, with the models' real
//! config.json values (copied from the Hugging Face repos named in each case).

use serde_json::json;
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::layout::{param_counts, synthesize};
use vramfit_model::{GgmlType, ModelSpec};

fn spec(id: &str, config: serde_json::Value) -> ModelSpec {
    spec_from_config(id, &config).unwrap_or_else(|e| panic!("{id}: {e}"))
}

fn llama31_8b() -> ModelSpec {
    spec(
        "meta-llama/Llama-3.1-8B",
        json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
               "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
               "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256,
               "max_position_embeddings": 131072, "tie_word_embeddings": false,
               "torch_dtype": "bfloat16"}),
    )
}

fn deepseek_v3() -> ModelSpec {
    spec(
        "deepseek-ai/DeepSeek-V3",
        json!({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
               "hidden_size": 7168, "intermediate_size": 18432, "num_hidden_layers": 61,
               "num_attention_heads": 128, "num_key_value_heads": 128, "vocab_size": 129280,
               "max_position_embeddings": 163840, "tie_word_embeddings": false,
               "torch_dtype": "bfloat16", "num_nextn_predict_layers": 1, "n_routed_experts": 256,
               "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "n_shared_experts": 1,
               "first_k_dense_replace": 3, "moe_layer_freq": 1, "kv_lora_rank": 512,
               "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
               "v_head_dim": 128}),
    )
}

/// (case, spec, exact total parameters from the model card / safetensors index)
#[test]
fn dense_totals_are_exact() {
    let cases: Vec<(&str, ModelSpec, u64)> = vec![
        ("Llama-3.1-8B", llama31_8b(), 8_030_261_248),
        (
            "Llama-3.1-70B",
            spec(
                "meta-llama/Llama-3.1-70B",
                json!({"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
                       "num_hidden_layers": 80, "num_attention_heads": 64,
                       "num_key_value_heads": 8, "vocab_size": 128256,
                       "tie_word_embeddings": false}),
            ),
            70_553_706_496,
        ),
        (
            "Qwen2.5-72B",
            spec(
                "Qwen/Qwen2.5-72B",
                json!({"model_type": "qwen2", "hidden_size": 8192, "intermediate_size": 29568,
                       "num_hidden_layers": 80, "num_attention_heads": 64,
                       "num_key_value_heads": 8, "vocab_size": 152064,
                       "tie_word_embeddings": false}),
            ),
            72_706_203_648,
        ),
    ];
    for (name, s, expected) in cases {
        let (total, active) = param_counts(&s);
        println!("{name}: {total} (expected {expected})");
        assert_eq!(total, expected, "{name}");
        assert_eq!(active, total, "{name}: a dense model is all active");
    }
}

#[test]
fn deepseek_v3_total_and_active() {
    let s = deepseek_v3();
    let (total, active) = param_counts(&s);
    println!("DeepSeek-V3: total {total}, active {active}");
    // model card: 671B total, 37B activated, the 14B MTP module not included
    assert!((total as f64 / 671e9 - 1.0).abs() < 0.005, "total {total}");
    assert!((active as f64 / 37e9 - 1.0).abs() < 0.02, "active {active}");
    let set = synthesize(&s, GgmlType::BF16);
    // current converter: split attn_k_b / attn_v_b, no MTP block (DeepseekV2Model.skip_mtp)
    let kb = set.get("blk.0.attn_k_b.weight").expect("attn_k_b");
    assert_eq!(kb.dims, vec![128, 512, 128]);
    assert_eq!(
        set.get("blk.0.attn_v_b.weight").unwrap().dims,
        vec![512, 128, 128]
    );
    assert!(set.get("blk.61.attn_norm.weight").is_none());
    assert!(
        set.get("blk.2.ffn_gate_exps.weight").is_none(),
        "layers 0-2 are dense"
    );
    let exps = set.get("blk.3.ffn_gate_exps.weight").unwrap();
    assert_eq!(exps.dims, vec![7168, 2048, 256]);
    assert_eq!(set.get("blk.3.exp_probs_b.bias").unwrap().dims, vec![256]);
}

#[test]
fn qwen3_moe_counts_and_router_dtype() {
    let s = spec(
        "Qwen/Qwen3-30B-A3B",
        json!({"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
               "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
               "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": false,
               "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
               "decoder_sparse_step": 1, "mlp_only_layers": [], "torch_dtype": "bfloat16"}),
    );
    let (total, active) = param_counts(&s);
    println!("Qwen3-30B-A3B: total {total}, active {active}");
    // model card: 30.5B total, 3.3B activated
    assert!((total as f64 / 30.5e9 - 1.0).abs() < 0.005, "total {total}");
    assert!(
        (active as f64 / 3.3e9 - 1.0).abs() < 0.03,
        "active {active}"
    );
    let set = synthesize(&s, GgmlType::BF16);
    let router = set.get("blk.0.ffn_gate_inp.weight").unwrap();
    assert_eq!(
        router.dtype.name(),
        "f32",
        "the converter keeps routers in F32"
    );
    assert_eq!(set.get("blk.0.attn_q_norm.weight").unwrap().dims, vec![128]);
    assert_eq!(
        set.get("blk.47.ffn_down_exps.weight").unwrap().dims,
        vec![768, 2048, 128]
    );
}

#[test]
fn tied_embeddings_write_no_output_and_count_once() {
    let s = spec(
        "google/gemma-3-1b-it",
        json!({"model_type": "gemma3_text", "hidden_size": 1152, "intermediate_size": 6912,
               "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 1,
               "head_dim": 256, "vocab_size": 262144, "tie_word_embeddings": true,
               "sliding_window": 512, "sliding_window_pattern": 6}),
    );
    let set = synthesize(&s, GgmlType::BF16);
    assert!(set.get("output.weight").is_none());
    for name in [
        "post_attention_norm",
        "post_ffw_norm",
        "attn_q_norm",
        "attn_k_norm",
    ] {
        assert!(
            set.get(&format!("blk.25.{name}.weight")).is_some(),
            "{name}"
        );
    }
    let (total, _) = param_counts(&s);
    // gemma-3-1b-it safetensors: 999,885,952 parameters
    assert_eq!(total, 999_885_952);
}

#[test]
fn every_family_builds_without_panicking_on_odd_specs() {
    let base = llama31_8b();
    for mt in [
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "qwen3_next",
        "gemma",
        "gemma2",
        "gemma3",
        "gpt_oss",
        "deepseek_v2",
        "deepseek_v3",
        "phi3",
        "cohere",
        "cohere2",
        "falcon",
        "falcon_h1",
        "jamba",
        "nemotron_h",
        "glm4",
        "glm4_moe",
        "chatglm",
        "granite",
        "granitemoe",
        "gpt_neox",
        "llama4_text",
        "starcoder2",
        "olmo2",
        "something_new",
    ] {
        let mut s = base.clone();
        s.model_type = mt.to_string();
        let set = synthesize(&s, GgmlType::F16);
        assert!(set.total_bytes() > 0, "{mt}");
        // zero layers, zero dims
        s.layers.clear();
        let set = synthesize(&s, GgmlType::F16);
        assert!(set.get("token_embd.weight").is_some());
        s.n_embd = 0;
        s.n_vocab = 0;
        let set = synthesize(&s, GgmlType::F16);
        assert_eq!(set.total_bytes(), 0, "{mt}");
        let _ = param_counts(&s);
    }
}

/// More families against published totals: (name, config.json values, total, tolerance as a
/// fraction; 0 = exact). Exact totals are the safetensors parameter counts on the Hub; the
/// rest are model-card figures with their printed precision.
#[test]
fn family_totals_match_published_counts() {
    let cases: Vec<(&str, serde_json::Value, u64, f64)> = vec![
        (
            "mistralai/Mixtral-8x7B-v0.1",
            json!({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
                   "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                   "vocab_size": 32000, "tie_word_embeddings": false, "num_local_experts": 8,
                   "num_experts_per_tok": 2}),
            46_702_792_704,
            0.0,
        ),
        (
            "microsoft/Phi-3-mini-4k-instruct",
            json!({"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
                   "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
                   "vocab_size": 32064, "tie_word_embeddings": false}),
            3_821_079_552,
            0.0,
        ),
        (
            "google/gemma-2-9b",
            json!({"model_type": "gemma2", "hidden_size": 3584, "intermediate_size": 14336,
                   "num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8,
                   "head_dim": 256, "vocab_size": 256000, "sliding_window": 4096}),
            9_241_705_984,
            0.0,
        ),
        (
            "tiiuae/falcon-7b",
            json!({"model_type": "falcon", "hidden_size": 4544, "num_hidden_layers": 32,
                   "num_attention_heads": 71, "multi_query": true, "vocab_size": 65024,
                   "parallel_attn": true, "new_decoder_architecture": false, "bias": false}),
            6_921_720_704,
            0.0,
        ),
        (
            "openai/gpt-oss-20b (card: 20.91B)",
            json!({"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880,
                   "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8,
                   "head_dim": 64, "vocab_size": 201088, "tie_word_embeddings": false,
                   "num_local_experts": 32, "num_experts_per_tok": 4}),
            20_910_000_000,
            0.0005,
        ),
        (
            "openai/gpt-oss-120b (card: 116.83B)",
            json!({"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880,
                   "num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8,
                   "head_dim": 64, "vocab_size": 201088, "tie_word_embeddings": false,
                   "num_local_experts": 128, "num_experts_per_tok": 4}),
            116_830_000_000,
            0.0001,
        ),
        (
            "ai21labs/Jamba-v0.1 (card: 52B)",
            json!({"model_type": "jamba", "hidden_size": 4096, "intermediate_size": 14336,
                   "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                   "vocab_size": 65536, "num_experts": 16, "num_experts_per_tok": 2,
                   "expert_layer_period": 2, "expert_layer_offset": 1, "attn_layer_period": 8,
                   "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4,
                   "mamba_expand": 2, "tie_word_embeddings": false}),
            52_000_000_000,
            0.01,
        ),
        (
            "Qwen/Qwen3-Next-80B-A3B (card: 80B)",
            json!({"model_type": "qwen3_next", "hidden_size": 2048, "intermediate_size": 5120,
                   "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
                   "head_dim": 256, "vocab_size": 151936, "tie_word_embeddings": false,
                   "num_experts": 512, "num_experts_per_tok": 10, "moe_intermediate_size": 512,
                   "shared_expert_intermediate_size": 512, "full_attention_interval": 4,
                   "linear_num_key_heads": 16, "linear_num_value_heads": 32,
                   "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                   "linear_conv_kernel_dim": 4}),
            80_000_000_000,
            0.01,
        ),
        (
            "nvidia/Nemotron-H-8B-Base-8K (card: 8B)",
            json!({"model_type": "nemotron_h", "hidden_size": 4096, "intermediate_size": 21504,
                   "num_hidden_layers": 52, "num_attention_heads": 32, "num_key_value_heads": 8,
                   "head_dim": 128, "vocab_size": 131072, "tie_word_embeddings": false,
                   "mamba_num_heads": 128, "mamba_head_dim": 64, "ssm_state_size": 128,
                   "n_groups": 8, "conv_kernel": 4,
                   "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"}),
            8_000_000_000,
            0.02,
        ),
    ];
    for (name, config, expected, tol) in cases {
        let s = spec(name, config);
        let (total, active) = param_counts(&s);
        let err = total as f64 / expected as f64 - 1.0;
        println!(
            "{name}: total {total} active {active} (error {:+.4}%)",
            100.0 * err
        );
        if tol == 0.0 {
            assert_eq!(total, expected, "{name}");
        } else {
            assert!(err.abs() <= tol, "{name}: {total} vs {expected}");
        }
    }
}

#[test]
fn glm45_ships_its_nextn_block() {
    let s = spec(
        "zai-org/GLM-4.5-Air",
        json!({"model_type": "glm4_moe", "hidden_size": 4096, "intermediate_size": 10944,
               "moe_intermediate_size": 1408, "num_hidden_layers": 46,
               "num_nextn_predict_layers": 1, "num_attention_heads": 96,
               "num_key_value_heads": 8, "head_dim": 128, "n_routed_experts": 128,
               "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 1,
               "vocab_size": 151552, "tie_word_embeddings": false, "attention_bias": true,
               "use_qk_norm": false}),
    );
    let set = synthesize(&s, GgmlType::BF16);
    assert!(set.get("blk.46.nextn.eh_proj.weight").is_some());
    assert!(set.get("blk.46.ffn_gate_exps.weight").is_some());
    assert!(
        set.get("blk.0.ffn_gate.weight").is_some(),
        "first layer dense"
    );
    assert!(set.get("blk.1.attn_q.bias").is_some());
    // the GLM-4.5-Air GGUF load log prints `model params = 110.47 B` (llamacpp_logs.dev
    // arch_pr689); the main model without the NextN block is 106.85 B
    let all = set.total_elems() as f64 / 1e9;
    assert!((all - 110.47).abs() < 0.005, "{all}");
    let (main, _) = param_counts(&s);
    assert!((main as f64 / 1e9 - 106.85).abs() < 0.005, "{main}");
}

#[test]
fn nextn_blocks_are_named_for_the_engine() {
    use vramfit_model::layout::nextn_blocks;
    let glm = spec(
        "zai-org/GLM-4.5-Air",
        json!({"model_type": "glm4_moe", "hidden_size": 4096, "intermediate_size": 10944,
               "moe_intermediate_size": 1408, "num_hidden_layers": 46,
               "num_nextn_predict_layers": 1, "num_attention_heads": 96,
               "num_key_value_heads": 8, "head_dim": 128, "n_routed_experts": 128,
               "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 1,
               "vocab_size": 151552, "tie_word_embeddings": false}),
    );
    assert_eq!(nextn_blocks(&glm), 46..47);
    // DeepSeek V3 declares an MTP layer but its GGUFs do not carry it
    let ds = deepseek_v3();
    assert_eq!(ds.n_nextn_layers, 1);
    assert!(nextn_blocks(&ds).is_empty());
}
