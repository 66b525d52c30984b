//! Each layer's attention kind: full, sliding window, chunked, MLA, recurrent or none.
//!
//! The interleaving rules are the ones transformers' modeling code applies when a config.json
//! carries no explicit `layer_types` (sources named per family below, transformers v4.56).

use super::fields::Cfg;
use crate::spec::{AttentionKind, LayerSpec, RecurrentKind, RecurrentState};

pub fn layer_attention(
    cfg: &Cfg,
    mt: &str,
    n_layer: u64,
    n_embd: u64,
    warnings: &mut Vec<String>,
) -> Vec<AttentionKind> {
    let n = n_layer as usize;
    if matches!(
        mt,
        "deepseek_v2"
            | "deepseek_v3"
            | "deepseek_v32"
            | "kimi_k2"
            | "glm4_moe_lite"
            | "glm_moe_dsa"
    ) || cfg.u64("kv_lora_rank").is_some()
    {
        let mla = AttentionKind::Mla {
            kv_lora_rank: cfg.u64("kv_lora_rank").unwrap_or(512),
            rope_dim: cfg.u64("qk_rope_head_dim").unwrap_or(64),
            nope_dim: cfg.u64("qk_nope_head_dim").unwrap_or(128),
            v_head_dim: cfg.u64("v_head_dim").unwrap_or(128),
        };
        return vec![mla; n];
    }
    if let Some(kinds) = hybrid_stack(cfg, mt, n, n_embd) {
        return kinds;
    }
    let window = cfg.u64("sliding_window");
    // explicit per-layer types win (gpt-oss, Gemma 3 since transformers 4.53, Qwen3-Next, ...)
    if let Some(types) = cfg.str_list("layer_types").filter(|t| t.len() == n) {
        return types
            .iter()
            .map(|t| match t.as_str() {
                "sliding_attention" | "sliding" | "local" => match window {
                    Some(w) => AttentionKind::SlidingWindow { window: w },
                    None => AttentionKind::Full,
                },
                "chunked_attention" => AttentionKind::Chunked {
                    chunk: cfg.u64("attention_chunk_size").unwrap_or(8192),
                },
                "linear_attention" => gated_delta_net(cfg),
                _ => AttentionKind::Full,
            })
            .collect();
    }
    let swa = |w: u64| AttentionKind::SlidingWindow { window: w };
    match mt {
        // modeling_gemma2.py: even layers slide (4096), odd layers are global
        "gemma2" => (0..n)
            .map(|i| {
                if i % 2 == 0 {
                    swa(window.unwrap_or(4096))
                } else {
                    AttentionKind::Full
                }
            })
            .collect(),
        // modeling_gemma3.py: layer i is global iff (i + 1) % sliding_window_pattern == 0
        "gemma3" | "gemma3_text" | "cohere2" | "gemma4" | "gemma4_text" => {
            let period = cfg
                .u64_any(&["sliding_window_pattern", "_sliding_window_pattern"])
                .unwrap_or(if mt == "cohere2" { 4 } else { 6 })
                .max(1) as usize;
            let w = window.unwrap_or(if mt == "cohere2" { 4096 } else { 4096 });
            (0..n)
                .map(|i| {
                    if (i + 1) % period == 0 {
                        AttentionKind::Full
                    } else {
                        swa(w)
                    }
                })
                .collect()
        }
        // modeling_gpt_oss.py: alternating sliding (even) / full (odd), window 128
        "gpt_oss" => (0..n)
            .map(|i| {
                if i % 2 == 0 {
                    swa(window.unwrap_or(128))
                } else {
                    AttentionKind::Full
                }
            })
            .collect(),
        // modeling_llama4.py: no_rope_layers[i] == 0 marks a global (NoPE) layer; the others
        // attend within attention_chunk_size; default interleave: every 4th layer global
        "llama4" | "llama4_text" => {
            let chunk = cfg.u64("attention_chunk_size").unwrap_or(8192);
            let no_rope = cfg.u64_list("no_rope_layers").filter(|v| v.len() == n);
            (0..n)
                .map(|i| {
                    let global = match &no_rope {
                        Some(v) => v[i] == 0,
                        None => (i + 1) % 4 == 0,
                    };
                    if global {
                        AttentionKind::Full
                    } else {
                        AttentionKind::Chunked { chunk }
                    }
                })
                .collect()
        }
        // Qwen2/Qwen3 only slide when use_sliding_window is set, and then only the layers from
        // max_window_layers on (modeling_qwen2.py)
        "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe" => {
            if cfg.bool("use_sliding_window").unwrap_or(false) {
                let from = cfg.u64("max_window_layers").unwrap_or(0) as usize;
                (0..n)
                    .map(|i| {
                        if i >= from {
                            swa(window.unwrap_or(4096))
                        } else {
                            AttentionKind::Full
                        }
                    })
                    .collect()
            } else {
                vec![AttentionKind::Full; n]
            }
        }
        // Mistral v0.1 / Mixtral / Starcoder2 slide on every layer when sliding_window is set
        "mistral" | "mixtral" | "starcoder2" => match window {
            Some(w) => vec![swa(w); n],
            None => vec![AttentionKind::Full; n],
        },
        _ => {
            if window.is_some() && !matches!(mt, "phi3" | "llama" | "granite" | "glm4" | "chatglm")
            {
                warnings.push(format!("sliding_window={} in the config is read as full attention for model_type '{mt}'", window.unwrap_or(0)));
            }
            vec![AttentionKind::Full; n]
        }
    }
}

/// Stacks that mix attention with recurrent layers, one kind per layer.
fn hybrid_stack(cfg: &Cfg, mt: &str, n: usize, n_embd: u64) -> Option<Vec<AttentionKind>> {
    match mt {
        // configuration_nemotron_h.py: one char per layer: M = Mamba2, * = attention,
        // - = MLP, E = MoE (the MLP/MoE layers have no mixer)
        "nemotron_h" => {
            let pat = cfg.str("hybrid_override_pattern")?;
            let kinds: Vec<AttentionKind> = pat
                .chars()
                .map(|c| match c {
                    'M' => mamba2(cfg, n_embd),
                    '*' => AttentionKind::Full,
                    _ => AttentionKind::None,
                })
                .collect();
            (kinds.len() == n).then_some(kinds)
        }
        // configuration_jamba.py: attention where i % attn_layer_period == attn_layer_offset
        "jamba" => {
            let period = cfg.u64("attn_layer_period").unwrap_or(8).max(1) as usize;
            let offset = cfg.u64("attn_layer_offset").unwrap_or(4) as usize;
            Some(
                (0..n)
                    .map(|i| {
                        if i % period == offset {
                            AttentionKind::Full
                        } else {
                            mamba1(cfg, n_embd)
                        }
                    })
                    .collect(),
            )
        }
        // configuration_qwen3_next.py (and configuration_qwen3_5*.py, whose default layer_types
        // is the same rule): full attention every full_attention_interval-th layer
        "qwen3_next" | "qwen3_5" | "qwen3_5_text" | "qwen3_5_moe" | "qwen3_5_moe_text"
            if cfg.str_list("layer_types").is_none() =>
        {
            let every = cfg.u64("full_attention_interval").unwrap_or(4).max(1) as usize;
            Some(
                (0..n)
                    .map(|i| {
                        if (i + 1) % every == 0 {
                            AttentionKind::Full
                        } else {
                            gated_delta_net(cfg)
                        }
                    })
                    .collect(),
            )
        }
        _ => None,
    }
}

/// Gated DeltaNet state (Qwen3-Next, modeling_qwen3_next.py): a causal conv over q, k and v
/// channels (kernel − 1 past steps kept) and a dk × dv matrix per value head.
fn gated_delta_net(cfg: &Cfg) -> AttentionKind {
    let nk = cfg.u64("linear_num_key_heads").unwrap_or(16);
    let nv = cfg.u64("linear_num_value_heads").unwrap_or(32);
    let dk = cfg.u64("linear_key_head_dim").unwrap_or(128);
    let dv = cfg.u64("linear_value_head_dim").unwrap_or(128);
    let kernel = cfg.u64("linear_conv_kernel_dim").unwrap_or(4);
    let conv_dim = nk
        .saturating_mul(dk)
        .saturating_mul(2)
        .saturating_add(nv.saturating_mul(dv));
    AttentionKind::Recurrent(RecurrentState {
        kind: RecurrentKind::GatedDeltaNet,
        conv_elems: kernel.saturating_sub(1).saturating_mul(conv_dim),
        ssm_elems: nv.saturating_mul(dk).saturating_mul(dv),
    })
}

/// Mamba2 state (modeling_nemotron_h.py / mamba2): conv over x, B and C channels, and a
/// head_dim × d_state matrix per head.
fn mamba2(cfg: &Cfg, n_embd: u64) -> AttentionKind {
    let heads = cfg
        .u64_any(&["mamba_num_heads", "mamba_n_heads"])
        .unwrap_or(64);
    let head_dim = cfg
        .u64_any(&["mamba_head_dim", "mamba_d_head"])
        .unwrap_or(64);
    let d_inner = cfg
        .u64("mamba_d_ssm")
        .unwrap_or(heads.saturating_mul(head_dim));
    let d_state = cfg
        .u64_any(&["ssm_state_size", "mamba_d_state"])
        .unwrap_or(128);
    let groups = cfg.u64_any(&["n_groups", "mamba_n_groups"]).unwrap_or(1);
    let kernel = cfg.u64_any(&["conv_kernel", "mamba_d_conv"]).unwrap_or(4);
    let _ = n_embd;
    AttentionKind::Recurrent(RecurrentState {
        kind: RecurrentKind::Mamba2,
        conv_elems: kernel.saturating_sub(1).saturating_mul(
            d_inner.saturating_add(groups.saturating_mul(d_state).saturating_mul(2)),
        ),
        ssm_elems: heads.saturating_mul(head_dim).saturating_mul(d_state),
    })
}

/// Mamba (v1) state (modeling_jamba.py): d_inner = expand × hidden, conv kernel − 1 steps and a
/// d_inner × d_state matrix.
fn mamba1(cfg: &Cfg, n_embd: u64) -> AttentionKind {
    let d_inner = cfg.u64("mamba_expand").unwrap_or(2).saturating_mul(n_embd);
    let d_state = cfg.u64("mamba_d_state").unwrap_or(16);
    let kernel = cfg.u64("mamba_d_conv").unwrap_or(4);
    AttentionKind::Recurrent(RecurrentState {
        kind: RecurrentKind::Mamba,
        conv_elems: kernel.saturating_sub(1).saturating_mul(d_inner),
        ssm_elems: d_inner.saturating_mul(d_state),
    })
}

/// Falcon-H1 runs attention and a Mamba2 mixer side by side in every layer
/// (modeling_falcon_h1.py).
pub fn parallel_hybrid(cfg: &Cfg, mt: &str, n_embd: u64, layers: &mut [LayerSpec]) {
    if mt != "falcon_h1" {
        return;
    }
    let d_inner = cfg
        .u64("mamba_d_ssm")
        .unwrap_or_else(|| cfg.u64("mamba_expand").unwrap_or(2).saturating_mul(n_embd));
    let heads = cfg
        .u64("mamba_n_heads")
        .unwrap_or(d_inner / cfg.u64("mamba_d_head").unwrap_or(64).max(1));
    let d_state = cfg.u64("mamba_d_state").unwrap_or(256);
    let groups = cfg.u64("mamba_n_groups").unwrap_or(1);
    let kernel = cfg.u64("mamba_d_conv").unwrap_or(4);
    let head_dim = if heads > 0 { d_inner / heads } else { 0 };
    let state = RecurrentState {
        kind: RecurrentKind::Mamba2,
        conv_elems: kernel.saturating_sub(1).saturating_mul(
            d_inner.saturating_add(groups.saturating_mul(d_state).saturating_mul(2)),
        ),
        ssm_elems: heads.saturating_mul(head_dim).saturating_mul(d_state),
    };
    for l in layers {
        l.parallel_ssm = Some(state.clone());
    }
}
