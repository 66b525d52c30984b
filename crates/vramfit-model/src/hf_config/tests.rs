//! Real config.json contents (memory-relevant keys as the Hub serves them) and what they must
//! read as. KV figures are the must-show numbers.

use super::spec_from_config;
use crate::spec::AttentionKind;
use serde_json::json;

fn llama31_8b() -> serde_json::Value {
    json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "tie_word_embeddings": false, "torch_dtype": "bfloat16", "rope_theta": 500000.0})
}

#[test]
fn llama_3_1_kv_per_token() {
    let s = spec_from_config("meta-llama/Llama-3.1-8B-Instruct", &llama31_8b()).unwrap();
    assert_eq!(s.n_layer(), 32);
    assert_eq!(s.kv_bytes_per_token(2.0), 131_072);
    assert_eq!(s.kv_bytes_windowed(2.0), 0);
    assert_eq!(s.attention_words(), "32 full");
    let c70 = json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
        "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "tie_word_embeddings": false, "torch_dtype": "bfloat16"});
    let s = spec_from_config("meta-llama/Llama-3.1-70B-Instruct", &c70).unwrap();
    assert_eq!(s.kv_bytes_per_token(2.0), 327_680);
}

#[test]
fn deepseek_v3_mla_latent() {
    let c = json!({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
        "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
        "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
        "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
        "first_k_dense_replace": 3, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": 1536,
        "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "vocab_size": 129280,
        "max_position_embeddings": 163840, "num_nextn_predict_layers": 1, "topk_method": "noaux_tc",
        "tie_word_embeddings": false, "torch_dtype": "bfloat16",
        "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
            "weight_block_size": [128, 128]}});
    let s = spec_from_config("deepseek-ai/DeepSeek-V3", &c).unwrap();
    // 61 layers x 576 latent x 2 bytes
    assert_eq!(s.kv_bytes_per_token(2.0), 70_272);
    // MLA rotates the 64-wide rope part; no rope_scaling here, so max_position_embeddings rows
    assert_eq!(
        (s.rope_tables[0].positions, s.rope_tables[0].rotary_dim),
        (163_840, 64)
    );
    assert_eq!(s.attention_words(), "61 MLA");
    let moe = s.moe.as_ref().unwrap();
    assert_eq!(
        (
            moe.n_expert,
            moe.n_expert_used,
            moe.n_expert_shared,
            moe.n_ff_exp
        ),
        (256, 8, 1, 2048)
    );
    assert_eq!(
        s.layers
            .iter()
            .filter(|l| matches!(l.ffn, crate::spec::FfnKind::Moe))
            .count(),
        58
    );
    assert_eq!(s.n_nextn_layers, 1);
    let q = s.quant.as_ref().unwrap();
    assert_eq!((q.method.as_str(), q.bits), ("fp8", Some(8)));
    assert!(s.arch.expert_bias);
}

#[test]
fn gemma3_27b_five_of_six_windowed() {
    // the multimodal wrapper nests the text model; vocab_size and max_position_embeddings are
    // left to Gemma3TextConfig's defaults
    let c = json!({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
        "text_config": {"model_type": "gemma3_text", "hidden_size": 5376, "intermediate_size": 21504,
            "num_hidden_layers": 62, "num_attention_heads": 32, "num_key_value_heads": 16,
            "head_dim": 128, "sliding_window": 1024, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}},
        "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
            "patch_size": 14, "model_type": "siglip_vision_model"},
        "torch_dtype": "bfloat16"});
    let s = spec_from_config("google/gemma-3-27b-it", &c).unwrap();
    assert_eq!(s.attention_words(), "52 sliding window (1024) + 10 full");
    assert_eq!(s.n_vocab, 262_208);
    assert!(s.tie_word_embeddings);
    // full layers: 10 x 16 x 128 x 2 (K,V) x 2 bytes
    assert_eq!(s.kv_bytes_per_token(2.0), 10 * 16 * 128 * 2 * 2);
    // windowed layers: 52 x 1024 tokens x 16 x 128 x 2 x 2 bytes
    assert_eq!(s.kv_bytes_windowed(2.0), 52 * 1024 * 16 * 128 * 2 * 2);
    assert!(matches!(s.layers[5].attention, AttentionKind::Full));
    assert!(matches!(
        s.layers[0].attention,
        AttentionKind::SlidingWindow { window: 1024 }
    ));
    assert!(
        s.vision_params > 400_000_000 && s.vision_params < 450_000_000,
        "{}",
        s.vision_params
    );
    // rotary tables: the global layers' linear x8 over 131072 positions, the sliding layers'
    // own base over 131072 (vllm linear_scaling_rope.py, models/gemma3.py)
    let rows: Vec<(u64, u64)> = s
        .rope_tables
        .iter()
        .map(|t| (t.positions, t.rotary_dim))
        .collect();
    assert_eq!(rows, vec![(131_072 * 8, 128), (131_072, 128)]);
}

#[test]
fn rope_tables_by_scaling_type() {
    let rows = |c: &serde_json::Value| -> Vec<(u64, u64)> {
        spec_from_config("m", c)
            .unwrap()
            .rope_tables
            .iter()
            .map(|t| (t.positions, t.rotary_dim))
            .collect()
    };
    // llama3 scaling keeps max_position_embeddings (llama3_rope.py)
    let mut c = llama31_8b();
    c["rope_scaling"] = json!({"rope_type": "llama3", "factor": 8.0,
        "original_max_position_embeddings": 8192});
    assert_eq!(rows(&c), vec![(131_072, 128)]);
    // Llama-4-Scout's 10M positions: 2.5 GiB in bf16 on every rank
    c["max_position_embeddings"] = json!(10_485_760);
    assert_eq!(rows(&c), vec![(10_485_760, 128)]);
    // YaRN: original x factor; partial rotary
    let mut c = llama31_8b();
    c["rope_scaling"] = json!({"rope_type": "yarn", "factor": 4.0,
        "original_max_position_embeddings": 32768});
    c["partial_rotary_factor"] = json!(0.5);
    assert_eq!(rows(&c), vec![(131_072, 64)]);
    // no table for a broken factor read as no scaling, and none for ALiBi
    c["rope_scaling"] = json!({"rope_type": "linear", "factor": -3.0});
    assert_eq!(rows(&c), vec![(131_072, 64)]);
    c["alibi"] = json!(true);
    assert!(rows(&c).is_empty());
}

#[test]
fn gpt_oss_alternating_windows() {
    let mut types = Vec::new();
    for i in 0..24 {
        types.push(if i % 2 == 0 {
            "sliding_attention"
        } else {
            "full_attention"
        });
    }
    let c = json!({"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880,
        "intermediate_size": 2880, "num_hidden_layers": 24, "num_attention_heads": 64,
        "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 32, "num_experts_per_tok": 4,
        "experts_per_token": 4, "sliding_window": 128, "layer_types": types, "vocab_size": 201088,
        "max_position_embeddings": 131072, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
        "quantization_config": {"quant_method": "mxfp4",
            "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}});
    let s = spec_from_config("openai/gpt-oss-20b", &c).unwrap();
    assert_eq!(s.attention_words(), "12 sliding window (128) + 12 full");
    assert_eq!(s.kv_bytes_per_token(2.0), 12 * 8 * 64 * 2 * 2);
    assert_eq!(s.kv_bytes_windowed(2.0), 12 * 128 * 8 * 64 * 2 * 2);
    assert_eq!(s.moe.as_ref().unwrap().n_ff_exp, 2880);
    assert!(s.arch.attn_sinks && s.arch.qkv_bias);
    assert_eq!(s.quant.as_ref().unwrap().ignore.len(), 4);
}

#[test]
fn qwen3_next_hybrid_state() {
    let c = json!({"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": 2048,
        "intermediate_size": 5120, "num_hidden_layers": 48, "num_attention_heads": 16,
        "num_key_value_heads": 2, "head_dim": 256, "num_experts": 512, "num_experts_per_tok": 10,
        "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "decoder_sparse_step": 1,
        "full_attention_interval": 4, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
        "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
        "vocab_size": 151936, "max_position_embeddings": 262144, "tie_word_embeddings": false,
        "torch_dtype": "bfloat16"});
    let s = spec_from_config("Qwen/Qwen3-Next-80B-A3B-Instruct", &c).unwrap();
    assert_eq!(s.attention_words(), "36 recurrent + 12 full");
    assert_eq!(s.kv_bytes_per_token(2.0), 24_576);
    // per GDN layer: conv 3 x (2*16*128 + 32*128) and state 32 x 128 x 128
    assert_eq!(s.recurrent_state_elems(), (36 * 3 * 8192, 36 * 524_288));
}

#[test]
fn nemotron_h_pattern_is_one_layer_per_char() {
    let pat = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
    let c = json!({"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 2688,
        "intermediate_size": 1856, "num_hidden_layers": 52, "num_attention_heads": 32,
        "num_key_value_heads": 2, "head_dim": 128, "hybrid_override_pattern": pat,
        "n_routed_experts": 128, "num_experts_per_tok": 6, "moe_intermediate_size": 1856,
        "moe_shared_expert_intermediate_size": 3712, "n_shared_experts": 1, "mamba_num_heads": 64,
        "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4,
        "vocab_size": 131072, "max_position_embeddings": 262144, "tie_word_embeddings": false,
        "torch_dtype": "bfloat16"});
    let s = spec_from_config("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", &c).unwrap();
    assert_eq!(s.kv_bytes_per_token(2.0), 6144);
    let counts = s.attention_summary();
    assert!(counts.contains(&("recurrent", 23, None)) && counts.contains(&("full", 6, None)));
    assert_eq!(s.moe.as_ref().unwrap().n_ff_shexp, 3712);
}

#[test]
fn bad_configs_name_the_key() {
    let e = spec_from_config("x/y", &json!({"model_type": "llama"})).unwrap_err();
    assert!(e.to_string().contains("hidden_size"), "{e}");
    let e = spec_from_config("x/y", &json!([1, 2])).unwrap_err();
    assert!(e.to_string().contains("not a JSON object"));
    let mut c = llama31_8b();
    c["num_hidden_layers"] = json!(1_000_000_000u64);
    let e = spec_from_config("x/y", &c).unwrap_err();
    assert!(
        e.to_string().contains("num_hidden_layers = 1000000000"),
        "{e}"
    );
}

#[test]
fn unknown_model_type_warns_with_fields() {
    let mut c = llama31_8b();
    c["model_type"] = json!("brand_new_arch");
    let s = spec_from_config("x/new", &c).unwrap();
    assert!(s.provenance.warnings[0].contains("brand_new_arch"));
    assert!(s.provenance.warnings[0].contains("num_key_value_heads=8"));
    assert_eq!(s.kv_bytes_per_token(2.0), 131_072);
}

#[test]
fn falcon_7b_multi_query() {
    let c = json!({"architectures": ["FalconForCausalLM"], "model_type": "falcon", "hidden_size": 4544,
        "num_hidden_layers": 32, "num_attention_heads": 71, "multi_query": true, "parallel_attn": true,
        "vocab_size": 65024, "bias": false, "torch_dtype": "bfloat16"});
    let s = spec_from_config("tiiuae/falcon-7b", &c).unwrap();
    assert_eq!(s.layers[0].n_head_kv, 1);
    assert_eq!(s.layers[0].head_dim_k, 64);
    assert!(s.tie_word_embeddings);
}

#[test]
fn absurd_sizes_are_refused_not_overflowed() {
    // found by the hf_config fuzz target: an intermediate size of 1.2e16 overflowed the tensor
    // element count of the synthesized layout
    let c = json!({"architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1", "hidden_size": 3072,
        "intermediate_size": 12289999999999998u64, "num_hidden_layers": 86, "num_attention_heads": 12});
    let e = spec_from_config("fuzz/crash", &c).unwrap_err();
    assert!(e.to_string().contains("intermediate_size"), "{e}");
    let mut c = llama31_8b();
    c["vision_config"] = json!({"hidden_size": u64::MAX / 2, "num_hidden_layers": 1000});
    let s = spec_from_config("x/y", &c).unwrap();
    assert_eq!(s.vision_params, u64::MAX);
}
