//! LoRA slot buffers as vLLM and SGLang preallocate them (shapes in the module docs above).

use vramfit_model::{AttentionKind, FfnKind, ModelSpec};

/// Bytes of LoRA slot buffers on one tensor-parallel rank: `slots` adapters of rank `rank` on
/// every attention projection (qkv, o) and dense MLP (gate_up, down) of every layer. The
/// second value is true when the model has MoE layers, whose experts' LoRA (newer vLLM and
/// SGLang) is not counted.
///
/// Per layer and slot, with H the hidden size, Q/K/V/O the projection widths and F the MLP
/// width: qkv A `3·R·H`, B `R·(Q+K+V)/tp`; o A `R·O/tp`, B `R·H`; gate_up A `2·R·H`,
/// B `R·2F/tp`; down A `R·F/tp`, B `R·H`. `fully_sharded` (vLLM `--fully-sharded-loras`)
/// also splits the column layers' A over the rank and the row layers' B over the output.
pub fn lora_slot_bytes(
    spec: &ModelSpec,
    rank: u64,
    slots: u64,
    tp: u64,
    fully_sharded: bool,
    elem_bytes: u64,
) -> (u64, bool) {
    let tp = tp.max(1);
    let h = spec.n_embd;
    let r_col = if fully_sharded {
        rank.div_ceil(tp)
    } else {
        rank
    };
    let row_b = |out: u64| if fully_sharded { out.div_ceil(tp) } else { out };
    let mut elems: u64 = 0;
    let mut moe = false;
    for l in &spec.layers {
        let attends = matches!(
            l.attention,
            AttentionKind::Full
                | AttentionKind::Mla { .. }
                | AttentionKind::SlidingWindow { .. }
                | AttentionKind::Chunked { .. }
        );
        if attends {
            let q = l.n_head * l.head_dim_k;
            let kv = l.n_head_kv * (l.head_dim_k + l.head_dim_v);
            let o = l.n_head * l.head_dim_v;
            elems += 3 * r_col * h + rank * (q + kv).div_ceil(tp);
            elems += rank * o.div_ceil(tp) + rank * row_b(h);
        }
        match l.ffn {
            FfnKind::Dense { n_ff } => {
                elems += 2 * r_col * h + rank * (2 * n_ff).div_ceil(tp);
                elems += rank * n_ff.div_ceil(tp) + rank * row_b(h);
            }
            FfnKind::Moe => moe = true,
            FfnKind::None => {}
        }
    }
    (elems.saturating_mul(slots).saturating_mul(elem_bytes), moe)
}
