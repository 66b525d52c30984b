//! Attention tensors: the standard (grouped-query) block and DeepSeek's multi-head latent
//! attention. Shapes in ggml order, from llama.cpp @007dbbf `create_tensor_qkv` and the
//! per-architecture `create_tensor` calls.

use super::families::{QkNorm, Style};
use super::Builder;
use crate::spec::{AttentionKind, LayerSpec, ModelSpec};

/// Q/K/V (split or fused), their optional biases, the output projection, Q/K norms and sinks.
pub(crate) fn standard(b: &mut Builder, st: &Style, il: u64, n_embd: u64, l: &LayerSpec) {
    let q_dim = l.n_head.saturating_mul(l.head_dim_k);
    let k_dim = l.n_head_kv.saturating_mul(l.head_dim_k);
    let v_dim = l.n_head_kv.saturating_mul(l.head_dim_v);
    // Qwen3-Next's gated attention: attn_q holds the query and its output gate side by side
    // (llama-model.cpp LLM_ARCH_QWEN3NEXT: `{n_embd, n_embd_head_k * n_head * 2}`)
    let q_rows = if st.gated_q {
        q_dim.saturating_mul(2)
    } else {
        q_dim
    };

    if st.fused_qkv {
        let rows = q_rows + k_dim + v_dim;
        b.blk(il, "attn_qkv", &[n_embd, rows]);
        if st.qkv_bias {
            b.blk_bias(il, "attn_qkv", &[rows]);
        }
    } else {
        b.blk(il, "attn_q", &[n_embd, q_rows]);
        b.blk(il, "attn_k", &[n_embd, k_dim]);
        b.blk(il, "attn_v", &[n_embd, v_dim]);
        if st.qkv_bias {
            b.blk_bias(il, "attn_q", &[q_rows]);
            b.blk_bias(il, "attn_k", &[k_dim]);
            b.blk_bias(il, "attn_v", &[v_dim]);
        }
    }

    match st.qk_norm {
        QkNorm::None => {}
        QkNorm::PerHead => {
            b.blk(il, "attn_q_norm", &[l.head_dim_k]);
            b.blk(il, "attn_k_norm", &[l.head_dim_k]);
        }
        QkNorm::PerHeadRows => {
            b.blk(il, "attn_q_norm", &[l.head_dim_k, l.n_head]);
            b.blk(il, "attn_k_norm", &[l.head_dim_k, l.n_head_kv]);
        }
        QkNorm::Full => {
            b.blk(il, "attn_q_norm", &[q_dim]);
            b.blk(il, "attn_k_norm", &[k_dim]);
        }
    }

    let o_in = l.n_head.saturating_mul(l.head_dim_v);
    b.blk(il, "attn_output", &[o_in, n_embd]);
    if st.o_bias {
        b.blk_bias(il, "attn_output", &[n_embd]);
    }
    if st.attn_sinks {
        b.blk(il, "attn_sinks", &[l.n_head]);
    }
}

/// The query low-rank size of an MLA model. `ModelSpec` does not carry `q_lora_rank`, so the
/// known configs are used: DeepSeek-V2/V2.5/V3/R1 and Kimi-K2 use 1536; DeepSeek-V2-Lite
/// (n_embd 2048) has none and projects Q directly (config.json `q_lora_rank: null`).
pub(crate) fn mla_q_lora_rank(spec: &ModelSpec) -> u64 {
    if spec.n_embd >= 4096 {
        1536
    } else {
        0
    }
}

/// DeepSeek multi-head latent attention. The converter splits `kv_b_proj` into per-head
/// `attn_k_b` `[nope, kv_lora, n_head]` and `attn_v_b` `[kv_lora, v_head, n_head]` since
/// llama.cpp #12801 (2025-04); older files carry one `attn_kv_b` with the same element count.
pub(crate) fn mla(b: &mut Builder, spec: &ModelSpec, il: u64, l: &LayerSpec) {
    let AttentionKind::Mla {
        kv_lora_rank,
        rope_dim,
        nope_dim,
        v_head_dim,
    } = l.attention
    else {
        return;
    };
    let n_embd = spec.n_embd;
    let n_head = l.n_head;
    let head_k = nope_dim + rope_dim;
    let q_lora = mla_q_lora_rank(spec);
    if q_lora > 0 {
        b.blk(il, "attn_q_a", &[n_embd, q_lora]);
        b.blk(il, "attn_q_a_norm", &[q_lora]);
        b.blk(il, "attn_q_b", &[q_lora, n_head.saturating_mul(head_k)]);
    } else {
        b.blk(il, "attn_q", &[n_embd, n_head.saturating_mul(head_k)]);
    }
    b.blk(il, "attn_kv_a_mqa", &[n_embd, kv_lora_rank + rope_dim]);
    b.blk(il, "attn_kv_a_norm", &[kv_lora_rank]);
    b.blk(il, "attn_k_b", &[nope_dim, kv_lora_rank, n_head]);
    b.blk(il, "attn_v_b", &[kv_lora_rank, v_head_dim, n_head]);
    b.blk(
        il,
        "attn_output",
        &[n_head.saturating_mul(v_head_dim), n_embd],
    );
}
