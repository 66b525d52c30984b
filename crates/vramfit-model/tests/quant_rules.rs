//! llama-quantize's rules on model shapes where they bite: MoE with 8 experts, 70B GQA, MLA
//! tensors with 128-wide rows, tied embeddings with rows that are not a multiple of 256,
//! MXFP4_MOE, imatrix-dependent choices, and the CUDA row padding.

use serde_json::json;
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::layout::synthesize;
use vramfit_model::quant::{cuda_padded_bytes, predict, FileType};
use vramfit_model::{GgmlType, ModelSpec, WeightSet};

fn spec(id: &str, config: serde_json::Value) -> ModelSpec {
    spec_from_config(id, &config).unwrap_or_else(|e| panic!("{id}: {e}"))
}

fn quantize(s: &ModelSpec, q: &str, imatrix: bool) -> WeightSet {
    predict(
        &synthesize(s, GgmlType::BF16),
        s,
        FileType::parse(q).unwrap().ftype,
        imatrix,
    )
}

fn ty(set: &WeightSet, name: &str) -> String {
    set.get(name)
        .unwrap_or_else(|| panic!("no {name}"))
        .dtype
        .name()
}

fn mixtral() -> ModelSpec {
    spec(
        "mistralai/Mixtral-8x7B-v0.1",
        json!({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
               "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
               "vocab_size": 32000, "tie_word_embeddings": false, "num_local_experts": 8,
               "num_experts_per_tok": 2}),
    )
}

#[test]
fn eight_expert_models_bump_attention() {
    let set = quantize(&mixtral(), "Q4_K_M", false);
    // n_expert == 8: attn_v and attn_k to q8_0, attn_output to q5_K
    assert_eq!(ty(&set, "blk.5.attn_v.weight"), "q8_0");
    assert_eq!(ty(&set, "blk.5.attn_k.weight"), "q8_0");
    assert_eq!(ty(&set, "blk.5.attn_output.weight"), "q5_K");
    assert_eq!(ty(&set, "blk.5.attn_q.weight"), "q4_K");
    // ffn_down of MoE layers: use_more_bits on the layer parsed from the name
    assert_eq!(ty(&set, "blk.0.ffn_down_exps.weight"), "q6_K");
    assert_eq!(ty(&set, "blk.4.ffn_down_exps.weight"), "q4_K");
    assert_eq!(ty(&set, "blk.6.ffn_down_exps.weight"), "q6_K");
    assert_eq!(ty(&set, "blk.6.ffn_gate_inp.weight"), "f32");
    assert_eq!(ty(&set, "output.weight"), "q6_K");
}

#[test]
fn llama_70b_gets_q5_k_attn_v() {
    let s = spec(
        "meta-llama/Llama-3.1-70B",
        json!({"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
               "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
               "vocab_size": 128256, "tie_word_embeddings": false}),
    );
    let set = quantize(&s, "Q4_K_M", false);
    // layer 11: not a use_more_bits layer (80/8 = 10; (11-10) % 3 != 2) -> q4_K -> 70B bump
    assert_eq!(ty(&set, "blk.11.attn_v.weight"), "q5_K");
    assert_eq!(ty(&set, "blk.12.attn_v.weight"), "q6_K");
    assert_eq!(ty(&set, "blk.11.ffn_down.weight"), "q4_K");
    let q3 = quantize(&s, "Q3_K_S", false);
    assert_eq!(ty(&q3, "blk.40.attn_v.weight"), "q5_K");
}

#[test]
fn mla_rows_of_128_fall_back() {
    let s = spec(
        "deepseek-ai/DeepSeek-V3",
        json!({"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
               "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
               "vocab_size": 129280, "tie_word_embeddings": false, "n_routed_experts": 256,
               "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "n_shared_experts": 1,
               "first_k_dense_replace": 3, "kv_lora_rank": 512, "q_lora_rank": 1536,
               "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}),
    );
    let set = quantize(&s, "Q4_K_M", false);
    // attn_k_b rows are qk_nope (128) wide: q4_K does not fit, q5_0 does
    assert_eq!(ty(&set, "blk.10.attn_k_b.weight"), "q5_0");
    assert_eq!(ty(&set, "blk.10.attn_v_b.weight"), "q4_K");
    let q6 = quantize(&s, "Q6_K", false);
    assert_eq!(ty(&q6, "blk.10.attn_k_b.weight"), "q8_0");
    assert_eq!(ty(&q6, "blk.10.exp_probs_b.bias"), "f32");
    let q2 = quantize(&s, "Q2_K", false);
    // current fallback for q2_K is q4_0 (iq4_nl before the 2026 refactor)
    assert_eq!(ty(&q2, "blk.10.attn_k_b.weight"), "q4_0");
}

#[test]
fn tied_embeddings_follow_the_output_rule() {
    let s = spec(
        "google/gemma-3-1b-it",
        json!({"model_type": "gemma3_text", "hidden_size": 1152, "intermediate_size": 6912,
               "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 1,
               "head_dim": 256, "vocab_size": 262144, "tie_word_embeddings": true}),
    );
    let set = quantize(&s, "Q4_K_M", false);
    // token_embd serves as output; 1152 % 256 != 0 -> q8_0
    assert_eq!(ty(&set, "token_embd.weight"), "q8_0");
    // rows of 1152 cannot hold q4_K blocks: q5_0 fallback; ffn_down rows are 6912 = 27 * 256
    assert_eq!(ty(&set, "blk.3.attn_q.weight"), "q5_0");
    assert_eq!(ty(&set, "blk.3.ffn_down.weight"), "q4_K");
    assert_eq!(ty(&set, "blk.3.attn_q_norm.weight"), "f32");
}

#[test]
fn mxfp4_moe_puts_experts_in_mxfp4_and_the_rest_in_q8_0() {
    let s = spec(
        "openai/gpt-oss-20b",
        json!({"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880,
               "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8,
               "head_dim": 64, "vocab_size": 201088, "tie_word_embeddings": false,
               "num_local_experts": 32, "num_experts_per_tok": 4, "sliding_window": 128,
               "layer_types": (0..24)
                   .map(|i| if i % 2 == 0 { "sliding_attention" } else { "full_attention" })
                   .collect::<Vec<_>>()}),
    );
    let set = quantize(&s, "MXFP4_MOE", false);
    assert_eq!(ty(&set, "blk.0.ffn_up_exps.weight"), "mxfp4");
    assert_eq!(ty(&set, "blk.0.attn_q.weight"), "q8_0");
    assert_eq!(ty(&set, "token_embd.weight"), "q8_0");
    assert_eq!(ty(&set, "output.weight"), "q8_0");
    assert_eq!(ty(&set, "blk.0.attn_sinks.weight"), "f32");
    assert_eq!(ty(&set, "blk.0.ffn_up_exps.bias"), "f32");
}

#[test]
fn imatrix_changes_iq4_xs_and_q4_0_ffn_down() {
    let s = vramfit_model::layout::example_llama_spec();
    let plain = quantize(&s, "IQ4_XS", false);
    let imat = quantize(&s, "IQ4_XS", true);
    assert_eq!(ty(&plain, "blk.0.ffn_down.weight"), "q5_K");
    assert_eq!(ty(&imat, "blk.0.ffn_down.weight"), "iq4_xs");
    assert_eq!(ty(&plain, "blk.4.ffn_down.weight"), "iq4_xs");
    let q40 = quantize(&s, "Q4_0", true);
    assert_eq!(ty(&q40, "blk.0.ffn_down.weight"), "q4_1");
    assert_eq!(ty(&q40, "blk.4.ffn_down.weight"), "q4_0");
}

#[test]
fn float_file_types_keep_norms_f32() {
    let s = vramfit_model::layout::example_llama_spec();
    for (q, want) in [("F16", "f16"), ("BF16", "bf16"), ("F32", "f32")] {
        let set = quantize(&s, q, false);
        assert_eq!(ty(&set, "token_embd.weight"), want);
        assert_eq!(ty(&set, "blk.0.ffn_down.weight"), want);
        assert_eq!(ty(&set, "blk.0.attn_norm.weight"), "f32");
    }
}

#[test]
fn prediction_does_not_depend_on_input_order() {
    let s = mixtral();
    let base = synthesize(&s, GgmlType::BF16);
    let mut shuffled = base.clone();
    shuffled.tensors.reverse();
    let a = predict(&base, &s, FileType::Q4_K_M, false);
    let b = predict(&shuffled, &s, FileType::Q4_K_M, false);
    for t in &a.tensors {
        assert_eq!(
            Some(&t.dtype),
            b.get(&t.name).map(|u| &u.dtype),
            "{}",
            t.name
        );
    }
    assert_eq!(a.total_bytes(), b.total_bytes());
}

#[test]
fn cuda_pads_quantized_rows_to_512() {
    let s = vramfit_model::layout::example_llama_spec();
    let set = quantize(&s, "Q4_K_M", false);
    let t = set.get("blk.0.attn_q.weight").unwrap();
    assert_eq!(cuda_padded_bytes(t), t.bytes, "4096 % 512 == 0");
    let gemma = spec(
        "google/gemma-3-1b-it",
        json!({"model_type": "gemma3_text", "hidden_size": 1152, "intermediate_size": 6912,
               "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 1,
               "head_dim": 256, "vocab_size": 262144, "tie_word_embeddings": true}),
    );
    let g = quantize(&gemma, "Q8_0", false);
    let q = g.get("blk.0.attn_q.weight").unwrap();
    // 1152 % 512 = 128: one partial row of 384 q8_0 elements = 12 blocks * 34 bytes
    assert_eq!(cuda_padded_bytes(q), q.bytes + 12 * 34);
    let norm = g.get("blk.0.attn_norm.weight").unwrap();
    assert_eq!(cuda_padded_bytes(norm), norm.bytes, "f32 is not padded");
}

#[test]
fn every_file_type_predicts_every_family_without_panicking() {
    let base = mixtral();
    for mt in [
        "llama",
        "gemma3_text",
        "gpt_neox",
        "phi3",
        "deepseek_v3",
        "qwen3_next",
        "nemotron_h",
        "jamba",
    ] {
        let mut s = base.clone();
        s.model_type = mt.to_string();
        let f16 = synthesize(&s, GgmlType::F16);
        for ft in FileType::all() {
            let set = predict(&f16, &s, ft, false);
            assert_eq!(set.tensors.len(), f16.tensors.len(), "{mt} {ft}");
            assert!(set.total_bytes() > 0);
        }
    }
    let empty = WeightSet::default();
    assert!(predict(&empty, &base, FileType::Q4_K_M, false)
        .tensors
        .is_empty());
}

#[test]
fn fused_qkv_rules_changed_with_the_category_refactor() {
    use vramfit_model::quant::{predict_with, QuantRules};
    let s = spec(
        "EleutherAI/pythia-2.8b",
        json!({"model_type": "gpt_neox", "hidden_size": 2560, "intermediate_size": 10240,
               "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 50304,
               "tie_word_embeddings": false, "use_parallel_residual": true}),
    );
    let f16 = synthesize(&s, GgmlType::F16);
    let now = predict_with(&f16, &s, FileType::Q4_K_M, false, QuantRules::Current);
    let old = predict_with(&f16, &s, FileType::Q4_K_M, false, QuantRules::Legacy);
    // today attn_qkv follows attn_v: q6_K on use_more_bits layers, q4_K elsewhere
    assert_eq!(ty(&now, "blk.0.attn_qkv.weight"), "q6_K");
    assert_eq!(ty(&now, "blk.4.attn_qkv.weight"), "q4_K");
    // before: q5_K everywhere
    assert_eq!(ty(&old, "blk.0.attn_qkv.weight"), "q5_K");
    assert_eq!(ty(&old, "blk.4.attn_qkv.weight"), "q5_K");
    assert_eq!(ty(&old, "blk.0.ffn_down.weight"), "q6_K");
    assert_eq!(ty(&old, "blk.0.attn_qkv.bias"), "f32");
}

#[test]
fn hybrid_models_read_n_gqa_like_their_gguf() {
    // Qwen3-Next: scalar head_count_kv, so layer 0 (DeltaNet) reports 16/2 = 8 >= 4
    let next = spec(
        "Qwen/Qwen3-Next-80B-A3B",
        json!({"model_type": "qwen3_next", "hidden_size": 2048, "intermediate_size": 5120,
               "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
               "head_dim": 256, "vocab_size": 151936, "tie_word_embeddings": false,
               "num_experts": 512, "num_experts_per_tok": 10, "moe_intermediate_size": 512,
               "shared_expert_intermediate_size": 512, "full_attention_interval": 4}),
    );
    let set = quantize(&next, "IQ4_XS", true);
    assert_eq!(ty(&set, "blk.3.attn_v.weight"), "q5_K");
    assert_eq!(ty(&set, "blk.0.ssm_conv1d.weight"), "f32");
    assert_eq!(ty(&set, "blk.0.ssm_in.weight"), "iq4_xs");
    // Nemotron-H: per-layer head_count_kv with 0 on the leading Mamba layer -> n_gqa 0
    let nem = spec(
        "nvidia/Nemotron-H-8B-Base-8K",
        json!({"model_type": "nemotron_h", "hidden_size": 4096, "intermediate_size": 21504,
               "num_hidden_layers": 52, "num_attention_heads": 32, "num_key_value_heads": 8,
               "head_dim": 128, "vocab_size": 131072, "tie_word_embeddings": false,
               "mamba_num_heads": 128, "mamba_head_dim": 64, "ssm_state_size": 128,
               "n_groups": 8, "conv_kernel": 4,
               "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"}),
    );
    let set = quantize(&nem, "IQ4_XS", true);
    assert_eq!(ty(&set, "blk.7.attn_v.weight"), "iq4_xs");
    assert_eq!(ty(&set, "blk.0.ssm_a"), "f32");
}

#[test]
fn deepseek_v3_quant_sizes_match_published_files() {
    let s = spec(
        "deepseek-ai/DeepSeek-V3",
        json!({"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
               "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
               "vocab_size": 129280, "tie_word_embeddings": false, "n_routed_experts": 256,
               "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "n_shared_experts": 1,
               "first_k_dense_replace": 3, "kv_lora_rank": 512, "q_lora_rank": 1536,
               "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
               "num_nextn_predict_layers": 1}),
    );
    let f16 = synthesize(&s, GgmlType::BF16);
    // total sizes (GB = 1e9 bytes) of the standard llama-quantize files of
    // unsloth/DeepSeek-V3-GGUF as the Hub lists them
    for (q, gb) in [("Q8_0", 713.0), ("Q4_K_M", 404.0), ("Q2_K", 244.0)] {
        let set = predict(&f16, &s, FileType::parse(q).unwrap().ftype, false);
        let got = set.total_bytes() as f64 / 1e9;
        println!("DeepSeek-V3 {q}: {got:.1} GB (published {gb} GB)");
        assert!((got / gb - 1.0).abs() < 0.01, "{q}: {got} GB");
    }
}

#[test]
fn bigger_quants_give_bigger_files_across_families() {
    // holds where rows are whole 256-blocks; with odd widths (Gemma 3 1B's 1152) the fallback
    // types reorder the ladder (Q3_K_M ends up bigger than IQ4_XS there), as in real files
    let ladder = [
        "F16", "Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S", "Q4_K_M", "Q4_K_S", "IQ4_XS", "Q3_K_M",
        "Q3_K_S", "IQ3_XXS", "Q2_K", "IQ2_XS", "IQ2_XXS", "IQ1_M", "IQ1_S",
    ];
    let specs = vec![mixtral(), vramfit_model::layout::example_llama_spec()];
    for s in &specs {
        let f16 = synthesize(s, GgmlType::F16);
        let sizes: Vec<u64> = ladder
            .iter()
            .map(|q| predict(&f16, s, FileType::parse(q).unwrap().ftype, true).total_bytes())
            .collect();
        for (w, q) in sizes.windows(2).zip(ladder.windows(2)) {
            assert!(
                w[0] >= w[1],
                "{}: {} ({}) < {} ({})",
                s.id,
                q[0],
                w[0],
                q[1],
                w[1]
            );
        }
    }
}
