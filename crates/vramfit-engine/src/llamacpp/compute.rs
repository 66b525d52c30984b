//! Compute buffers: what ggml-alloc reserves per device for the worst-case graphs
//! (llama-context.cpp sched_reserve: a prompt-processing graph of n_ubatch tokens against a full
//! KV cache). llama.cpp has no closed formula; this is a phase model of the allocator's peak,
//! each term a real tensor of the graph, checked against the measured buffers in the dev logs
//! (tests/llamacpp_dev.rs):
//!
//! - output phase (device with the output layer): f32 logits for the reserved outputs
//!   (`n_vocab × n_outputs`), the final hidden state twice (norm in and out), and with flash
//!   attention the f16 KQ mask the first GPU still holds when the logits are placed;
//! - layer phase (every device with layers): the KQ mask (f16 with flash attention; without it the
//!   f32 mask plus the f32 KQ scores `n_head × n_kv × n_ubatch`), the attention or FFN
//!   intermediates (whichever is larger), and the residual stream;
//! - op-offload phase (first GPU, n_ubatch ≥ 32, weights left on the CPU): the largest CPU
//!   weight copied up (ggml-backend.cpp op offload, GGML_OP_OFFLOAD_MIN_BATCH 32 in ggml-cuda.cu)
//!   with the result of its op.
//!
//! The buffer is the largest phase. The host (CUDA_Host) buffer holds the graph inputs: the
//! token embeddings and the f32 KQ mask(s).

use super::args::{LlamaCppConfig, SplitMode, Tool};
use super::kv::{Context, KvAlloc};
use super::placement::{CpuWeightRole, Placement};
use super::version::change;
use vramfit_model::{AttentionKind, FfnKind, ModelSpec};

const F32: u64 = 4;

pub struct ComputeBuffers {
    pub gpu: Vec<u64>,
    pub host: u64,
}

/// Rows of logits the context reserves (#23861: llama-server reserves n_parallel outputs).
/// With no build given the logits of a whole ubatch are reserved: every build before b9460 does
/// so, and over-reserving errs on the safe side when the build is unknown.
pub fn n_outputs(cfg: &LlamaCppConfig, ctx: &Context) -> u64 {
    if cfg.tool == Tool::Server && cfg.build_given && cfg.build.has(change::SERVER_FEW_OUTPUTS) {
        ctx.n_seq_max.min(ctx.n_ubatch)
    } else {
        ctx.n_ubatch
    }
}

pub fn buffers(
    cfg: &LlamaCppConfig,
    spec: &ModelSpec,
    pl: &Placement,
    kv: &KvAlloc,
    ctx: &Context,
    fa: bool,
) -> ComputeBuffers {
    let n_dev = pl.gpu_weights.len();
    let ub = ctx.n_ubatch;
    let n_blocks = pl.layer_dev.len() - 1;
    let embd_ub = spec.n_embd * ub * F32;
    let n_kv = kv.base_cells;
    let mask_f16 = n_kv * ub * 2;
    let mask_f32 = n_kv * ub * F32;
    let logits = spec.n_vocab * n_outputs(cfg, ctx) * F32;
    let first_gpu = pl.layer_dev.iter().flatten().min().copied();

    let mut gpu = vec![0u64; n_dev];
    for (d, slot) in gpu.iter_mut().enumerate() {
        // row split: every GPU multiplies its rows of every layer, so each holds the activations
        // of all layers (ggml-cuda split buffers; a row-split log shows equal compute on 4 GPUs)
        let row = cfg.split_mode == SplitMode::Row;
        let layers: Vec<usize> = (0..n_blocks.min(spec.layers.len()))
            .filter(|il| pl.layer_dev[*il] == Some(d) || (row && pl.layer_dev[*il].is_some()))
            .collect();
        let mut phase = 0u64;
        if !layers.is_empty() {
            let attn = layers
                .iter()
                .map(|il| attention_phase(spec, *il, ub, fa, mask_f16, mask_f32, n_kv, kv))
                .max()
                .unwrap_or(0);
            let ffn = layers
                .iter()
                .map(|il| ffn_phase(spec, *il, ub))
                .max()
                .unwrap_or(0);
            phase = attn.max(ffn) + 2 * embd_ub;
        }
        if pl.layer_dev[n_blocks] == Some(d) {
            let mask = if fa && first_gpu == Some(d) {
                mask_f16
            } else {
                0
            };
            phase = phase.max(logits + 2 * embd_ub + mask);
        }
        let op_offload =
            !cfg.no_op_offload && ub >= 32 && first_gpu.map(|f| f == d).unwrap_or(d == 0);
        if op_offload {
            if let Some((bytes, role)) = pl.largest_cpu_weight {
                let result = match role {
                    CpuWeightRole::Output => logits,
                    CpuWeightRole::Experts => moe_intermediates(spec, ub),
                    CpuWeightRole::Other => embd_ub,
                };
                phase = phase.max(bytes + result + 2 * embd_ub);
            }
        }
        *slot = phase;
    }
    // graph inputs live in the host buffer of the first GPU's type (CUDA_Host)
    let swa_mask = kv.swa_cells.map(|c| c * ub * F32).unwrap_or(0);
    let host = embd_ub + mask_f32 + swa_mask;
    ComputeBuffers { gpu, host }
}

fn attention_phase(
    spec: &ModelSpec,
    il: usize,
    ub: u64,
    fa: bool,
    mask_f16: u64,
    mask_f32: u64,
    n_kv: u64,
    kv: &KvAlloc,
) -> u64 {
    let l = &spec.layers[il];
    let n_kv_layer = match l.attention.window() {
        Some(_) => kv.swa_cells.unwrap_or(n_kv),
        None => n_kv,
    };
    match &l.attention {
        AttentionKind::Recurrent(s) => {
            // the scan reads and writes the state of each sequence plus the projected input
            (s.conv_elems + s.ssm_elems) * F32 + 4 * spec.n_embd * ub * F32
        }
        AttentionKind::None => 0,
        AttentionKind::Mla {
            kv_lora_rank,
            rope_dim,
            ..
        } => {
            // absorbed MLA: per head the query in latent space (kv_lora + rope), the no-rope
            // part projected into it, and the attention output in latent space
            let per_head = (kv_lora_rank + rope_dim) + 2 * kv_lora_rank;
            let inter = ub * l.n_head * per_head * F32;
            if fa {
                mask_f16 + inter
            } else {
                mask_f32 + l.n_head * n_kv_layer * ub * F32 + inter
            }
        }
        _ => {
            let q_ub = l.n_head * l.head_dim_k * ub * F32;
            if fa {
                let o_ub = l.n_head * l.head_dim_v * ub * F32;
                mask_f16 + q_ub + o_ub
            } else {
                // f32 KQ scores for all heads against the full cache, softmax in place
                mask_f32 + l.n_head * n_kv_layer * ub * F32 + 2 * q_ub
            }
        }
    }
}

fn moe_intermediates(spec: &ModelSpec, ub: u64) -> u64 {
    match &spec.moe {
        Some(m) => 3 * m.n_ff_exp * m.n_expert_used * ub * F32 + 2 * m.n_expert * ub * F32,
        None => 0,
    }
}

fn ffn_phase(spec: &ModelSpec, il: usize, ub: u64) -> u64 {
    match &spec.layers[il].ffn {
        // gate, up and the activated product alive at once
        FfnKind::Dense { n_ff } => 3 * n_ff * ub * F32,
        FfnKind::Moe => {
            let shared = spec
                .moe
                .as_ref()
                .map(|m| 3 * m.n_ff_shexp * ub * F32)
                .unwrap_or(0);
            moe_intermediates(spec, ub) + shared
        }
        FfnKind::None => 0,
    }
}
