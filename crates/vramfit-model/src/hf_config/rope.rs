//! The rotary-embedding tables a model builds: `rows × rotary_dim` cos/sin values per distinct
//! RoPE setting, which serving engines keep on the GPU beside the weights.
//!
//! Rows by `rope_scaling` type, as vLLM builds them (vllm/model_executor/layers/rotary_embedding/:
//! base.py `_compute_cos_sin_cache` over `max_position_embeddings`; linear_scaling_rope.py and
//! dynamic_ntk_scaling_rope.py over `max_position × factor`; yarn_scaling_rope.py and
//! deepseek_scaling_rope.py over `original_max_position × factor`; phi3_long_rope_scaled_rope.py
//! a short table over the original length and a long one over `max_position`; llama3_rope.py and
//! mrope.py over `max_position`). `get_rope` caches one instance per setting, so layers that share
//! a setting share a table.

use super::fields::Cfg;
use crate::spec::{AttentionKind, LayerSpec, RopeTable};
use serde_json::Value;

/// Model types whose attention layers take no rotary embedding (positions come from the
/// recurrent layers): vllm models/jamba.py and nemotron_h.py build `Attention` without `get_rope`.
const NO_ROPE: &[&str] = &["jamba", "nemotron_h"];

/// The tables of a model (empty when no layer rotates).
pub fn tables(
    cfg: &Cfg,
    model_type: &str,
    head_dim: u64,
    max_position: u64,
    layers: &[LayerSpec],
) -> Vec<RopeTable> {
    if NO_ROPE.contains(&model_type)
        || cfg.bool("alibi") == Some(true)
        || cfg.str("position_embedding_type") == Some("absolute")
    {
        return Vec::new();
    }
    let rotates = |a: &AttentionKind| {
        matches!(
            a,
            AttentionKind::Full
                | AttentionKind::SlidingWindow { .. }
                | AttentionKind::Chunked { .. }
                | AttentionKind::Mla { .. }
        )
    };
    let Some(first) = layers.iter().find(|l| rotates(&l.attention)) else {
        return Vec::new();
    };
    // Gemma 4: one table per layer type at that type's head width; the full layers'
    // "proportional" RoPE zeroes the frequencies of the unrotated dims instead of shortening
    // the table (vllm rotary_embedding Gemma4RotaryEmbedding over the whole head)
    if super::gemma4::is_gemma4(model_type) {
        let mut out: Vec<RopeTable> = Vec::new();
        for l in layers.iter().filter(|l| rotates(&l.attention)) {
            let t = RopeTable {
                positions: max_position,
                rotary_dim: l.head_dim_k,
            };
            if !out.contains(&t) {
                out.push(t);
            }
        }
        return out;
    }
    let rotary_dim = match first.attention {
        AttentionKind::Mla { rope_dim, .. } => rope_dim,
        _ => {
            let f = cfg
                .raw("partial_rotary_factor")
                .or_else(|| cfg.raw("rotary_pct"))
                .and_then(Value::as_f64)
                .filter(|f| f.is_finite() && *f > 0.0 && *f <= 1.0)
                .unwrap_or(1.0);
            (head_dim as f64 * f) as u64
        }
    };
    let scaling = cfg
        .raw("rope_scaling")
        .or_else(|| cfg.raw("rope_parameters"))
        .filter(|v| v.is_object());
    // transformers v5 nests the parameters by layer type
    let global = scaling.and_then(|s| s.get("full_attention")).or(scaling);
    let mut out = vec![RopeTable {
        positions: rows(global, max_position, cfg),
        rotary_dim,
    }];
    // Gemma 3: sliding layers rotate with their own base (`rope_local_base_freq`) and no
    // scaling, a second table (vllm models/gemma3.py builds two `get_rope`s)
    let sliding = layers
        .iter()
        .any(|l| matches!(l.attention, AttentionKind::SlidingWindow { .. }));
    if matches!(model_type, "gemma3" | "gemma3_text") && sliding {
        out.push(RopeTable {
            positions: max_position,
            rotary_dim,
        });
    }
    out
}

/// Rows of one table for a `rope_scaling` object.
fn rows(scaling: Option<&Value>, max_position: u64, cfg: &Cfg) -> u64 {
    let Some(s) = scaling else {
        return max_position;
    };
    let kind = s
        .get("rope_type")
        .or_else(|| s.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("default");
    // a factor below 1 or absurdly large is not a real setting: read it as no scaling
    let factor = s
        .get("factor")
        .and_then(Value::as_f64)
        .filter(|f| f.is_finite() && (1.0..=1024.0).contains(f))
        .unwrap_or(1.0);
    let original = s
        .get("original_max_position_embeddings")
        .and_then(super::fields::as_u64)
        .or_else(|| cfg.u64("original_max_position_embeddings"))
        .filter(|o| *o > 0 && *o <= max_position.max(1) * 1024)
        .unwrap_or(max_position);
    let scaled = |n: u64| (n as f64 * factor).ceil() as u64;
    match kind {
        "linear" | "dynamic" => scaled(max_position),
        "yarn" | "deepseek_yarn" => scaled(original),
        "longrope" | "su" => original.min(max_position) + max_position,
        _ => max_position,
    }
}
