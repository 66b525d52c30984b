//! Recurrent mixers: Mamba (Jamba), Mamba2 (Nemotron-H, Falcon-H1) and Gated DeltaNet
//! (Qwen3-Next). Shapes from llama.cpp @007dbbf (`LLM_ARCH_JAMBA`, `LLM_ARCH_MAMBA2`,
//! `LLM_ARCH_NEMOTRON_H`, `LLM_ARCH_FALCON_H1`, `LLM_ARCH_QWEN3NEXT` create_tensor calls).
//!
//! Geometry convention for a recurrent layer's [`LayerSpec`] (the heads fields are otherwise
//! meaningless there): `n_head` = SSM heads (Mamba2 `n_head`, GDN value heads), `n_head_kv` =
//! Mamba2 groups / GDN key heads, `head_dim_k` = Mamba2 `d_state` / GDN key head dim,
//! `head_dim_v` = Mamba2 head dim / GDN value head dim. When they are zero the sizes are
//! recovered from the state elements with the universal `d_conv = 4`.

use super::families::Family;
use super::Builder;
use crate::spec::{LayerSpec, ModelSpec, RecurrentKind, RecurrentState};

/// The conv kernel width every supported hybrid uses (`mamba_d_conv` / `linear_conv_kernel_dim`).
const D_CONV_DEFAULT: u64 = 4;

pub(crate) fn mixer(
    b: &mut Builder,
    spec: &ModelSpec,
    family: Family,
    il: u64,
    l: &LayerSpec,
    s: &RecurrentState,
) {
    match s.kind {
        RecurrentKind::GatedDeltaNet => gated_delta_net(b, spec, il, l, s),
        RecurrentKind::Mamba => mamba1(b, spec, family, il, s),
        RecurrentKind::Mamba2 | RecurrentKind::Other | RecurrentKind::Rwkv => {
            mamba2(b, spec, il, l, s)
        }
    }
}

fn div(a: u64, b: u64) -> u64 {
    if b == 0 {
        0
    } else {
        a / b
    }
}

/// Mamba-1 (Jamba): `d_inner` from the conv state `(d_conv-1) * d_inner`, `d_state` from the
/// ssm state `d_state * d_inner`, `dt_rank = ceil(n_embd / 16)` (Jamba config default).
fn mamba1(b: &mut Builder, spec: &ModelSpec, family: Family, il: u64, s: &RecurrentState) {
    let n_embd = spec.n_embd;
    let d_inner = div(s.conv_elems, D_CONV_DEFAULT - 1);
    let d_state = div(s.ssm_elems, d_inner);
    let dt_rank = n_embd.div_ceil(16);
    b.blk(il, "ssm_in", &[n_embd, 2 * d_inner]);
    b.blk(il, "ssm_conv1d", &[D_CONV_DEFAULT, d_inner]);
    b.blk_bias(il, "ssm_conv1d", &[d_inner]);
    b.blk(il, "ssm_x", &[d_inner, dt_rank + 2 * d_state]);
    b.blk(il, "ssm_dt", &[dt_rank, d_inner]);
    b.blk_bias(il, "ssm_dt", &[d_inner]);
    if family == Family::Jamba {
        b.blk(il, "ssm_dt_norm", &[dt_rank]);
        b.blk(il, "ssm_b_norm", &[d_state]);
        b.blk(il, "ssm_c_norm", &[d_state]);
    }
    b.add(format!("blk.{il}.ssm_a"), &[d_state, d_inner]);
    b.add(format!("blk.{il}.ssm_d"), &[d_inner]);
    b.blk(il, "ssm_out", &[d_inner, n_embd]);
}

/// Mamba-2: `ssm_in` projects to z, x, B, C and dt (`2*d_inner + 2*n_group*d_state + n_head`).
fn mamba2(b: &mut Builder, spec: &ModelSpec, il: u64, l: &LayerSpec, s: &RecurrentState) {
    let n_embd = spec.n_embd;
    let conv_dim = div(s.conv_elems, D_CONV_DEFAULT - 1);
    let (d_inner, d_state, n_group, n_head) =
        if l.n_head > 0 && l.head_dim_v > 0 && l.head_dim_k > 0 {
            let d_inner = l.n_head * l.head_dim_v;
            (d_inner, l.head_dim_k, l.n_head_kv.max(1), l.n_head)
        } else {
            // without the heads: take d_state from ssm = d_state * d_inner and conv = d_inner +
            // 2*n_group*d_state with one group and 64-wide heads (Mamba2 defaults)
            let d_state_guess = 128u64;
            let d_inner = div(s.ssm_elems, d_state_guess);
            let n_group = div(conv_dim.saturating_sub(d_inner), 2 * d_state_guess).max(1);
            (d_inner, d_state_guess, n_group, div(d_inner, 64).max(1))
        };
    let conv_dim = if conv_dim > 0 {
        conv_dim
    } else {
        d_inner + 2 * n_group * d_state
    };
    b.blk(
        il,
        "ssm_in",
        &[n_embd, 2 * d_inner + 2 * n_group * d_state + n_head],
    );
    b.blk(il, "ssm_conv1d", &[D_CONV_DEFAULT, conv_dim]);
    b.blk_bias(il, "ssm_conv1d", &[conv_dim]);
    b.blk_bias(il, "ssm_dt", &[n_head]);
    b.add(format!("blk.{il}.ssm_a"), &[1, n_head]);
    b.add(format!("blk.{il}.ssm_d"), &[1, n_head]);
    b.blk(il, "ssm_norm", &[div(d_inner, n_group), n_group]);
    b.blk(il, "ssm_out", &[d_inner, n_embd]);
}

/// Gated DeltaNet (Qwen3-Next linear attention).
fn gated_delta_net(b: &mut Builder, spec: &ModelSpec, il: u64, l: &LayerSpec, s: &RecurrentState) {
    let n_embd = spec.n_embd;
    let (n_v, n_k, dk, dv) = (l.n_head, l.n_head_kv, l.head_dim_k, l.head_dim_v);
    let key_dim = n_k * dk;
    let value_dim = n_v * dv;
    let conv_dim = 2 * key_dim + value_dim;
    let d_conv = if conv_dim > 0 && s.conv_elems > 0 {
        div(s.conv_elems, conv_dim) + 1
    } else {
        D_CONV_DEFAULT
    };
    // q, k, v and the output gate z in one projection; beta and alpha per value head
    b.blk(il, "ssm_in", &[n_embd, 2 * key_dim + 2 * value_dim]);
    b.blk(il, "ssm_beta_alpha", &[n_embd, 2 * n_v]);
    b.blk(il, "ssm_conv1d", &[d_conv, conv_dim]);
    b.blk_bias(il, "ssm_dt", &[n_v]);
    b.add(format!("blk.{il}.ssm_a"), &[n_v]);
    b.blk(il, "ssm_norm", &[dv]);
    b.blk(il, "ssm_out", &[value_dim, n_embd]);
}
