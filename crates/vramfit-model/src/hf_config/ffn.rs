//! Each layer's feed-forward block (dense MLP, MoE, or none) and the MoE layout.
//! Rules per family from transformers' modeling_<name>.py (v4.56) as cited.

use super::fields::Cfg;
use crate::spec::{FfnKind, MoeSpec};

/// Routed experts per MoE layer, under the key each family uses.
fn n_experts(cfg: &Cfg) -> Option<u64> {
    cfg.u64_any(&[
        "num_local_experts",
        "num_experts",
        "n_routed_experts",
        "moe_num_experts",
    ])
    .filter(|n| *n > 1)
}

pub fn moe_spec(cfg: &Cfg, mt: &str) -> Option<MoeSpec> {
    if super::gemma4::is_gemma4(mt) && !super::gemma4::has_moe(cfg) {
        return None;
    }
    let n_expert = n_experts(cfg)?;
    let n_expert_used = cfg
        .u64_any(&[
            "num_experts_per_tok",
            "experts_per_token",
            "num_experts_per_token",
            "moe_topk",
            "top_k",
            // Gemma 4 (configuration_gemma4.py)
            "top_k_experts",
        ])
        .unwrap_or(2);
    let dense_ff = cfg
        .u64_any(&["intermediate_size", "ffn_hidden_size", "n_inner"])
        .unwrap_or(0);
    // Mixtral, gpt-oss, GraniteMoE, PhiMoE, Llama 4, Jamba: intermediate_size is the expert size
    let n_ff_exp = cfg
        .u64_any(&["moe_intermediate_size", "expert_intermediate_size"])
        .unwrap_or(dense_ff);
    let n_shared = cfg
        .u64_any(&["n_shared_experts", "num_shared_experts"])
        .unwrap_or(match mt {
            // Qwen2-MoE and Qwen3-Next have one shared expert of shared_expert_intermediate_size;
            // Llama 4 one of intermediate_size (modeling_llama4.py Llama4TextMoe)
            // Qwen3.5-MoE likewise (modeling_qwen3_5_moe.py Qwen3_5MoeSparseMoeBlock.shared_expert)
            "qwen2_moe" | "qwen3_next" | "qwen3_5_moe" | "qwen3_5_moe_text" | "llama4"
            | "llama4_text" => 1,
            // Gemma 4 26B-A4B: the dense MLP of intermediate_size runs beside the experts in
            // every layer (vLLM gemma4.py Gemma4DecoderLayer: mlp + moe; llama.cpp gemma4.cpp
            // "we use normal FFN as shared expert")
            m if super::gemma4::is_gemma4(m) => 1,
            _ => 0,
        });
    let n_ff_shexp = match cfg.u64_any(&[
        "shared_expert_intermediate_size",
        "moe_shared_expert_intermediate_size",
    ]) {
        Some(v) => v,
        None if super::gemma4::is_gemma4(mt) => dense_ff,
        // DeepSeek/GLM-4.5: n_shared_experts experts of moe_intermediate_size each
        None => n_shared.saturating_mul(n_ff_exp),
    };
    Some(MoeSpec {
        n_expert,
        n_expert_used,
        n_expert_shared: n_shared,
        n_ff_exp,
        n_ff_shexp,
        n_leading_dense: cfg.u64("first_k_dense_replace").unwrap_or(0),
    })
}

pub fn layer_ffns(cfg: &Cfg, mt: &str, n_layer: u64, n_embd: u64) -> Vec<FfnKind> {
    let n = n_layer as usize;
    let dense_ff = cfg
        .u64_any(&["intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim"])
        .unwrap_or(n_embd.saturating_mul(4));
    let dense = FfnKind::Dense { n_ff: dense_ff };
    if mt == "nemotron_h" {
        // one char per layer: '-' = MLP, 'E' = MoE, mixers have no FFN (configuration_nemotron_h.py)
        if let Some(pat) = cfg.str("hybrid_override_pattern") {
            let v: Vec<FfnKind> = pat
                .chars()
                .map(|c| match c {
                    '-' => dense.clone(),
                    'E' => FfnKind::Moe,
                    _ => FfnKind::None,
                })
                .collect();
            if v.len() == n {
                return v;
            }
        }
    }
    if n_experts(cfg).is_none() || (super::gemma4::is_gemma4(mt) && !super::gemma4::has_moe(cfg)) {
        return vec![dense; n];
    }
    // Llama 4 keeps dense layers of intermediate_size_mlp between MoE layers
    if matches!(mt, "llama4" | "llama4_text") {
        let step = cfg.u64("interleave_moe_layer_step").unwrap_or(1).max(1) as usize;
        let mlp = FfnKind::Dense {
            n_ff: cfg.u64("intermediate_size_mlp").unwrap_or(dense_ff),
        };
        let moe_layers = cfg.u64_list("moe_layers");
        return (0..n)
            .map(|i| {
                let is_moe = match &moe_layers {
                    Some(v) => v.contains(&(i as u64)),
                    None => (i + 1) % step == 0,
                };
                if is_moe {
                    FfnKind::Moe
                } else {
                    mlp.clone()
                }
            })
            .collect();
    }
    // Jamba: MoE where i % expert_layer_period == expert_layer_offset
    if mt == "jamba" {
        let period = cfg.u64("expert_layer_period").unwrap_or(2).max(1) as usize;
        let offset = cfg.u64("expert_layer_offset").unwrap_or(1) as usize;
        return (0..n)
            .map(|i| {
                if i % period == offset {
                    FfnKind::Moe
                } else {
                    dense.clone()
                }
            })
            .collect();
    }
    let first_dense = cfg.u64("first_k_dense_replace").unwrap_or(0) as usize;
    let moe_freq = cfg.u64("moe_layer_freq").unwrap_or(1).max(1) as usize;
    let sparse_step = cfg.u64("decoder_sparse_step").unwrap_or(1).max(1) as usize;
    let mlp_only = cfg.u64_list("mlp_only_layers").unwrap_or_default();
    (0..n)
        .map(|i| {
            // DeepSeek: dense before first_k_dense_replace, then every moe_layer_freq-th layer
            // (modeling_deepseek_v3.py); Qwen2/3-MoE: (i + 1) % decoder_sparse_step == 0 and
            // not in mlp_only_layers (modeling_qwen3_moe.py)
            let moe = i >= first_dense
                && (i - first_dense) % moe_freq == 0
                && (i + 1) % sparse_step == 0
                && !mlp_only.contains(&(i as u64));
            if moe {
                FfnKind::Moe
            } else {
                dense.clone()
            }
        })
        .collect()
}
