//! Gemma 4's tensors, from llama.cpp `src/models/gemma4.cpp` `load_arch_tensors` (2026):
//! per-layer Q/K/V widths (full layers at `global_head_dim`), no `attn_v` where V comes from the
//! K projection, a `layer_output_scale` per block, one `rope_freqs` for the full layers
//! (later full layers duplicate it), the dense MLP (`ffn_gate/up/down`, doubled in KV-shared
//! layers of E2B) in every layer, and beside it in 26B-A4B the router (`ffn_gate_inp` with its
//! `.scale`), the merged `ffn_gate_up_exps`, `ffn_down_exps` with per-expert scales and three
//! extra norms; E2B/E4B add the per-layer embeddings (`per_layer_token_embd`,
//! `per_layer_model_proj`, `per_layer_proj_norm`, and `inp_gate`/`proj`/`post_norm` per block).

use super::attention;
use super::families::Style;
use super::Builder;
use crate::spec::{AttentionKind, FfnKind, LayerSpec, ModelSpec};

pub(crate) fn build(spec: &ModelSpec, st: &Style, b: &mut Builder) {
    let n_embd = spec.n_embd;
    let n_vocab = spec.n_vocab;
    let n_layer = spec.n_layer();
    let ple = spec.arch.per_layer_embd;

    b.add("token_embd.weight", &[n_embd, n_vocab]);
    if ple > 0 {
        let width = ple.saturating_mul(n_layer);
        b.add("per_layer_token_embd.weight", &[width, n_vocab]);
        b.add("per_layer_model_proj.weight", &[n_embd, width]);
        b.add("per_layer_proj_norm.weight", &[ple]);
    }
    b.add("output_norm.weight", &[n_embd]);
    if !spec.tie_word_embeddings {
        b.add("output.weight", &[n_embd, n_vocab]);
    }

    let mut rope_freqs = false;
    for (il, l) in spec.layers.iter().enumerate() {
        let il = il as u64;
        b.blk(il, "attn_norm", &[n_embd]);
        let full = l.attention == AttentionKind::Full;
        if full && spec.arch.v_from_k {
            // no v_proj in the checkpoint: the block is the standard one less attn_v
            let no_v = LayerSpec {
                head_dim_v: 0,
                ..l.clone()
            };
            attention::standard(b, st, il, n_embd, &no_v);
            // a zero width skips attn_v and attn_output alike: add the output projection
            b.blk(
                il,
                "attn_output",
                &[l.n_head.saturating_mul(l.head_dim_k), n_embd],
            );
        } else {
            attention::standard(b, st, il, n_embd, l);
        }
        b.blk(il, "post_attention_norm", &[n_embd]);
        b.blk(il, "layer_output_scale", &[1]);
        if full && !rope_freqs {
            b.blk(il, "rope_freqs", &[l.head_dim_k / 2]);
            rope_freqs = true;
        }

        let n_ff = match (&l.ffn, &spec.moe) {
            (FfnKind::Dense { n_ff }, _) => *n_ff,
            (FfnKind::Moe, Some(m)) => m.n_ff_shexp,
            _ => 0,
        };
        b.blk(il, "ffn_norm", &[n_embd]);
        b.blk(il, "ffn_gate", &[n_embd, n_ff]);
        b.blk(il, "ffn_up", &[n_embd, n_ff]);
        b.blk(il, "ffn_down", &[n_ff, n_embd]);
        b.blk(il, "post_ffw_norm", &[n_embd]);
        if let (FfnKind::Moe, Some(m)) = (&l.ffn, &spec.moe) {
            b.blk(il, "ffn_gate_inp", &[n_embd, m.n_expert]);
            b.add(format!("blk.{il}.ffn_gate_inp.scale"), &[n_embd]);
            b.blk(il, "pre_ffw_norm_2", &[n_embd]);
            b.blk(il, "post_ffw_norm_1", &[n_embd]);
            b.blk(il, "post_ffw_norm_2", &[n_embd]);
            b.blk(
                il,
                "ffn_gate_up_exps",
                &[n_embd, m.n_ff_exp.saturating_mul(2), m.n_expert],
            );
            b.blk(il, "ffn_down_exps", &[m.n_ff_exp, n_embd, m.n_expert]);
            b.add(format!("blk.{il}.ffn_down_exps.scale"), &[m.n_expert]);
        }
        if ple > 0 {
            b.blk(il, "inp_gate", &[n_embd, ple]);
            b.blk(il, "proj", &[ple, n_embd]);
            b.blk(il, "post_norm", &[n_embd]);
        }
    }
}
