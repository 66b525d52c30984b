//! Recurrent mixers: Mamba (Jamba), Mamba2 (Nemotron-H, Falcon-H1) and Gated DeltaNet
//! (Qwen3-Next). Shapes from llama.cpp @007dbbf (`LLM_ARCH_JAMBA`, `LLM_ARCH_MAMBA2`,
//! `LLM_ARCH_NEMOTRON_H`, `LLM_ARCH_FALCON_H1`, `LLM_ARCH_QWEN3NEXT` create_tensor calls).
//!
//! `RecurrentState` carries only the per-sequence state sizes, so the mixer geometry is
//! recovered from them: the conv state is `(d_conv - 1) * conv_channels` with `d_conv = 4`
//! (every supported hybrid), Mamba2 head dim 64, Gated DeltaNet head dims 128 (Qwen3-Next
//! configs); the Mamba2 `d_state` is the first of 128, 256, 64, 16 that gives a whole number of
//! groups. The layer's head fields describe its attention, not the mixer, and are not used.

use super::families::Family;
use super::Builder;
use crate::spec::{ModelSpec, RecurrentKind, RecurrentState};

/// The conv kernel width every supported hybrid uses (`mamba_d_conv` / `linear_conv_kernel_dim`).
const D_CONV_DEFAULT: u64 = 4;

pub(crate) fn mixer(
    b: &mut Builder,
    spec: &ModelSpec,
    family: Family,
    il: u64,
    s: &RecurrentState,
) {
    match s.kind {
        RecurrentKind::GatedDeltaNet => gated_delta_net(b, spec, il, s),
        RecurrentKind::Mamba => mamba1(b, spec, family, il, s),
        RecurrentKind::Mamba2 | RecurrentKind::Other | RecurrentKind::Rwkv => {
            mamba2(b, spec, il, s)
        }
    }
}

fn div(a: u64, b: u64) -> u64 {
    a.checked_div(b).unwrap_or(0)
}

/// `a` is a whole multiple of a non-zero `b`.
fn divides(b: u64, a: u64) -> bool {
    a.checked_rem(b) == Some(0)
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

/// Mamba-2 geometry `(d_inner, d_state, n_group, n_head)` from the state sizes:
/// ssm = d_inner * d_state, conv channels = d_inner + 2 * n_group * d_state.
fn mamba2_geometry(s: &RecurrentState) -> (u64, u64, u64, u64) {
    let conv_dim = div(s.conv_elems, D_CONV_DEFAULT - 1);
    for d_state in [128u64, 256, 64, 16] {
        let d_inner = div(s.ssm_elems, d_state);
        if d_inner == 0 || !divides(d_state, s.ssm_elems) || conv_dim <= d_inner {
            continue;
        }
        let extra = conv_dim - d_inner;
        if divides(2 * d_state, extra) && divides(MAMBA2_HEAD_DIM, d_inner) {
            return (
                d_inner,
                d_state,
                extra / (2 * d_state),
                d_inner / MAMBA2_HEAD_DIM,
            );
        }
    }
    let d_inner = div(s.ssm_elems, 128);
    (d_inner, 128, 1, div(d_inner, MAMBA2_HEAD_DIM).max(1))
}

/// Mamba2 head width in Nemotron-H (`mamba_head_dim`) and Falcon-H1 (`mamba_d_head`) configs.
const MAMBA2_HEAD_DIM: u64 = 64;

/// Mamba-2: `ssm_in` projects to z, x, B, C and dt (`2*d_inner + 2*n_group*d_state + n_head`).
fn mamba2(b: &mut Builder, spec: &ModelSpec, il: u64, s: &RecurrentState) {
    let n_embd = spec.n_embd;
    let (d_inner, d_state, n_group, n_head) = mamba2_geometry(s);
    let conv_dim = d_inner + 2 * n_group * d_state;
    b.blk(il, "ssm_in", &[n_embd, d_inner + conv_dim + n_head]);
    b.blk(il, "ssm_conv1d", &[D_CONV_DEFAULT, conv_dim]);
    b.blk_bias(il, "ssm_conv1d", &[conv_dim]);
    b.blk_bias(il, "ssm_dt", &[n_head]);
    b.add(format!("blk.{il}.ssm_a"), &[1, n_head]);
    b.add(format!("blk.{il}.ssm_d"), &[1, n_head]);
    b.blk(il, "ssm_norm", &[div(d_inner, n_group), n_group]);
    b.blk(il, "ssm_out", &[d_inner, n_embd]);
}

/// Qwen3-Next linear-attention key/value head width (`linear_key_head_dim`,
/// `linear_value_head_dim`).
const GDN_HEAD_DIM: u64 = 128;

/// Gated DeltaNet (Qwen3-Next linear attention): value heads from ssm = n_v * dk * dv, key
/// heads from conv channels = 2 * n_k * dk + n_v * dv.
fn gated_delta_net(b: &mut Builder, spec: &ModelSpec, il: u64, s: &RecurrentState) {
    let n_embd = spec.n_embd;
    let (dk, dv) = (GDN_HEAD_DIM, GDN_HEAD_DIM);
    let n_v = div(s.ssm_elems, dk * dv);
    let conv_dim = div(s.conv_elems, D_CONV_DEFAULT - 1);
    let n_k = div(conv_dim.saturating_sub(n_v * dv), 2 * dk);
    let key_dim = n_k * dk;
    let value_dim = n_v * dv;
    // q, k, v and the output gate z in one projection; beta and alpha per value head
    b.blk(il, "ssm_in", &[n_embd, 2 * key_dim + 2 * value_dim]);
    b.blk(il, "ssm_beta_alpha", &[n_embd, 2 * n_v]);
    b.blk(il, "ssm_conv1d", &[D_CONV_DEFAULT, 2 * key_dim + value_dim]);
    b.blk_bias(il, "ssm_dt", &[n_v]);
    b.add(format!("blk.{il}.ssm_a"), &[n_v]);
    b.blk(il, "ssm_norm", &[dv]);
    b.blk(il, "ssm_out", &[value_dim, n_embd]);
}
