//! Gemma 4 (`gemma4`, `gemma4_text`; the 12B's `gemma4_unified`): the per-layer facts its
//! config.json states beside the Gemma 3 pattern.
//!
//! Read from vLLM `model_executor/models/gemma4.py` (v0.20, `Gemma4DecoderLayer` /
//! `Gemma4Attention`) and llama.cpp `src/models/gemma4.cpp` (`load_arch_hparams`,
//! `load_arch_tensors`, 2026):
//! - full-attention layers use `global_head_dim` (512) for K and V instead of `head_dim`;
//! - with `attention_k_eq_v` they have `num_global_key_value_heads` KV heads and no V
//!   projection (V is the K projection's output; both engines still cache V);
//! - the last `num_kv_shared_layers` layers reuse the cache of the last earlier layer of their
//!   type and allocate none (vLLM `kv_sharing_target_layer_name`, llama.cpp
//!   `n_layer_kv_from_start`);
//! - `use_double_wide_mlp` doubles `intermediate_size` in those KV-shared layers;
//! - `enable_moe_block` (26B-A4B) runs a dense MLP of `intermediate_size` beside `num_experts`
//!   routed experts of `moe_intermediate_size` (`top_k_experts` per token) in every layer;
//! - `hidden_size_per_layer_input` (E2B/E4B) adds per-layer token embeddings.

use super::fields::{as_u64, Cfg};
use crate::spec::{AttentionKind, FfnKind, LayerSpec};
use serde_json::Value;

/// The Gemma 4 model types (multimodal wrapper, text model, the 12B's unified wrapper).
pub fn is_gemma4(mt: &str) -> bool {
    matches!(
        mt,
        "gemma4" | "gemma4_text" | "gemma4_unified" | "gemma4_unified_text"
    )
}

/// MoE block present: `enable_moe_block` (vLLM also accepts `use_second_mlp_block`).
pub fn has_moe(cfg: &Cfg) -> bool {
    cfg.bool("enable_moe_block")
        .or_else(|| cfg.bool("use_second_mlp_block"))
        .unwrap_or(false)
}

/// Apply the per-layer widths, KV sharing and double-wide MLPs to `layers`.
pub fn apply(cfg: &Cfg, layers: &mut [LayerSpec]) {
    let global_head_dim = cfg.u64("global_head_dim");
    let k_eq_v = cfg.bool("attention_k_eq_v").unwrap_or(false);
    let global_kv = if k_eq_v {
        cfg.u64("num_global_key_value_heads")
    } else {
        None
    };
    let n = layers.len() as u64;
    let shared = cfg.u64("num_kv_shared_layers").unwrap_or(0).min(n);
    let first_shared = n - shared;
    let double_wide = cfg.bool("use_double_wide_mlp").unwrap_or(false);
    for (i, l) in layers.iter_mut().enumerate() {
        if l.attention == AttentionKind::Full {
            if let Some(d) = global_head_dim {
                l.head_dim_k = d;
                l.head_dim_v = d;
            }
            if let Some(k) = global_kv {
                l.n_head_kv = k;
            }
        }
        // gemma4.py: `is_kv_shared_layer = layer_idx >= first_kv_shared_layer_idx > 0`
        if shared > 0 && first_shared > 0 && i as u64 >= first_shared {
            l.kv_shared = true;
            if double_wide {
                if let FfnKind::Dense { n_ff } = l.ffn {
                    l.ffn = FfnKind::Dense {
                        n_ff: n_ff.saturating_mul(2),
                    };
                }
            }
        }
    }
}

/// Gemma 4 full-attention layers compute V with the K projection.
pub fn v_from_k(cfg: &Cfg) -> bool {
    cfg.bool("attention_k_eq_v").unwrap_or(false)
}

/// Per-layer token embedding width (0 = none).
pub fn per_layer_embd(cfg: &Cfg) -> u64 {
    cfg.u64("hidden_size_per_layer_input").unwrap_or(0)
}

/// Parameters of the vision and audio towers of a Gemma 4 checkpoint.
///
/// Vision (`gemma4_vision`): a ViT whose blocks hold Q/K/V/O (4·d²) and a gated MLP (3·d·ffn),
/// plus a 16×16 patch embedding, a `position_embedding_size`×d table and the projection into
/// the text width. Audio (`gemma4_audio`): Gemma 3n's conformer, 24·d² per block (two macaron
/// feed-forwards of d→4d→d = 16·d², Q/K/V/O and the relative-position projection = 5·d², the
/// light conv module's d→2d and d→d pointwise = 3·d²) plus its d → text-width projection.
/// Checked against the towers the model card states (~150M vision and ~300M audio for E2B/E4B,
/// ~550M vision for 26B-A4B/31B) through the safetensors sizes in the catalog tests.
pub fn tower_params(outer: &Value, text_width: u64) -> u64 {
    let get = |v: &Value, k: &str| v.get(k).and_then(as_u64);
    let mut total = 0u64;
    if let Some(v) = outer.get("vision_config").filter(|v| v.is_object()) {
        if let (Some(d), Some(layers)) = (get(v, "hidden_size"), get(v, "num_hidden_layers")) {
            let ffn = get(v, "intermediate_size").unwrap_or(d.saturating_mul(4));
            let patch = get(v, "patch_size").unwrap_or(16);
            let pos = get(v, "position_embedding_size").unwrap_or(0);
            let block = d
                .saturating_mul(d)
                .saturating_mul(4)
                .saturating_add(d.saturating_mul(ffn).saturating_mul(3));
            total = total
                .saturating_add(layers.saturating_mul(block))
                .saturating_add(patch.saturating_mul(patch).saturating_mul(3 * d))
                .saturating_add(pos.saturating_mul(d))
                .saturating_add(d.saturating_mul(text_width));
        }
    }
    if let Some(a) = outer.get("audio_config").filter(|v| v.is_object()) {
        if let (Some(d), Some(layers)) = (get(a, "hidden_size"), get(a, "num_hidden_layers")) {
            let out = get(a, "output_proj_dims").unwrap_or(text_width);
            total = total
                .saturating_add(layers.saturating_mul(d.saturating_mul(d).saturating_mul(24)))
                .saturating_add(d.saturating_mul(out))
                .saturating_add(out.saturating_mul(text_width));
        }
    }
    total
}
