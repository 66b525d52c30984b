//! A CPU-only build (no GPU backend compiled or visible): the host is the only device, and the
//! CPU backend's compute buffer holds the whole graph, not just its inputs.
//!
//! With a GPU build and `-ngl 0`, ggml's scheduler still sends the big matmuls of a large batch
//! to the GPU (op offload) and the CPU buffer keeps only the graph inputs (`compute.rs`). With
//! the CPU backend alone, ggml-alloc (ggml/src/ggml-alloc.c, gallocr) packs every intermediate
//! tensor of the reserve graph (llama-context.cpp graph_reserve: n_ubatch tokens against the full
//! cache) into one CPU buffer, reusing memory as tensors die. Its peak is the live set at the
//! widest point of the graph:
//!
//! - the graph inputs, alive from the start: token embeddings (`n_embd × n_ubatch` f32 after
//!   get_rows), positions, and the KQ mask(s) (f32 `n_kv × n_ubatch`, padded to GGML_KQ_MASK_PAD
//!   rows; f16 with flash attention), one per cache (full and SWA);
//! - the widest layer: attention (without flash attention the f32 KQ scores of every head against
//!   every cell, softmax in place) or the FFN (gate, up, their product), plus the residual stream;
//! - the output: f32 logits for the reserved outputs and the final norm.
//!
//! The output buffer (logits copied out per step, llama-context.cpp output_reserve) is separate:
//! `n_vocab × max(n_seq_max, 1)` f32.
//!
//! Checked against a real CPU-only llama-server b11312 (crates/vramfit/tests/llamacpp_oracle.rs:
//! llama, qwen3 with a 151936-token vocabulary, sliding-window gemma3, qwen3moe × -c/-np/-fa/-ub/
//! -ctk/-ctv/--swa-full, 44 combinations): within 4 % wherever the buffer passes 40 MiB, and
//! within a few MiB on the small ones, several streams (-np 2, -np 4) included.

use super::args::LlamaCppConfig;
use super::compute::n_outputs;
use super::kv::{llama_cpp_honours_swa, Context, KvAlloc};
use super::version::change;
use vramfit_model::{AttentionKind, FfnKind, ModelSpec};

const F32: u64 = 4;
const F16: u64 = 2;

/// One layer's attention intermediates at the widest point (the allocator reuses freed blocks;
/// the peak is modelled without fragmentation).
fn attn_layer(spec: &ModelSpec, il: usize, ub: u64, fa: bool, n_kv: u64) -> u64 {
    let l = &spec.layers[il];
    let q = l.n_head * l.head_dim_k * ub * F32;
    let o = l.n_head * l.head_dim_v * ub * F32;
    match &l.attention {
        AttentionKind::None => 0,
        AttentionKind::Recurrent(s) => {
            (s.conv_elems + s.ssm_elems) * F32 + 4 * spec.n_embd * ub * F32
        }
        _ if fa => q + o,
        // KQ scores f32 [n_kv, n_ubatch, n_head], softmax in place, then KQV
        _ => l.n_head * n_kv * ub * F32 + q + o,
    }
}

fn ffn_layer(spec: &ModelSpec, il: usize, ub: u64) -> u64 {
    match &spec.layers[il].ffn {
        FfnKind::Dense { n_ff } => 3 * n_ff * ub * F32,
        FfnKind::Moe => match &spec.moe {
            Some(m) => {
                3 * m.n_ff_exp * m.n_expert_used * ub * F32
                    + 2 * m.n_expert * ub * F32
                    + 3 * m.n_ff_shexp * ub * F32
            }
            None => 0,
        },
        FfnKind::None => 0,
    }
}

/// The CPU backend's compute buffer for the reserve graph.
pub fn compute_buffer(
    cfg: &LlamaCppConfig,
    spec: &ModelSpec,
    kv: &KvAlloc,
    ctx: &Context,
    fa: bool,
) -> u64 {
    let ub = ctx.n_ubatch;
    let embd_ub = spec.n_embd * ub * F32;
    let mask_el = if fa { F16 } else { F32 };
    // With one stream per sequence (`-np N` without a unified cache) the reserve graph splits
    // the micro-batch over the streams and each attends to its own cells only: the mask is
    // [n_kv / n_stream, n_ubatch / n_stream, 1, n_stream] and the KQ scores likewise
    // (llama-graph.cpp build_attn_inp_kv, n_stream = kv_unified ? 1 : n_seqs).
    let streams = ctx.n_stream.max(1);
    let n_kv = kv.base_cells / streams;
    // `--swa-full` keeps the two caches (full and SWA, llama-kv-cache-iswa.cpp), the SWA one as
    // large as the other: still two masks
    let swa_full = cfg.swa_full
        && cfg.build.has(change::ISWA_CACHE)
        && llama_cpp_honours_swa(&spec.model_type)
        && spec.layers.iter().any(|l| l.attention.window().is_some());
    let swa = kv
        .swa_cells
        .or(swa_full.then_some(kv.base_cells))
        .map(|c| c / streams);
    let mask = n_kv * ub * mask_el + swa.map(|c| c * ub * mask_el).unwrap_or(0);
    let inputs = embd_ub + mask + ub * F32;
    let layers = spec.layers.len();
    let widest = (0..layers)
        .map(|il| {
            let cells = match spec.layers[il].attention.window() {
                Some(_) => swa.unwrap_or(n_kv),
                None => n_kv,
            };
            attn_layer(spec, il, ub, fa, cells).max(ffn_layer(spec, il, ub))
        })
        .max()
        .unwrap_or(0)
        + 2 * embd_ub;
    let logits = spec.n_vocab * n_outputs(cfg, ctx) * F32 + 2 * embd_ub;
    inputs + widest.max(logits)
}

/// The host output buffer: logits for n_seq_max outputs (llama-context.cpp output_reserve).
pub fn output_buffer(spec: &ModelSpec, ctx: &Context) -> u64 {
    spec.n_vocab * ctx.n_seq_max.max(1) * F32
}

/// Everything a CPU-only run allocates through llama.cpp's buffers: weights, KV, compute and
/// output (the host RAM it needs besides the program itself).
pub fn host_total(spec: &ModelSpec, l: &super::Layout) -> u64 {
    l.host_weights + l.host_kv + l.host_compute + output_buffer(spec, &l.ctx)
}

/// On a CPU-only plan with a known RAM budget: does this layout fit it? (Always true with a GPU
/// or without a budget; the GPU checks speak then.)
pub fn host_fits(spec: &ModelSpec, l: &super::Layout, hw: &crate::hardware::Hardware) -> bool {
    match (hw.gpus.is_empty(), hw.host_ram_bytes) {
        (true, Some(ram)) => host_total(spec, l) <= ram,
        _ => true,
    }
}

/// The `check` problem line for a CPU-only plan over its RAM budget.
pub fn host_problem(
    spec: &ModelSpec,
    l: &super::Layout,
    hw: &crate::hardware::Hardware,
) -> Option<String> {
    use vramfit_model::units::fmt_bytes;
    let ram = hw.host_ram_bytes?;
    let need = host_total(spec, l);
    (hw.gpus.is_empty() && need > ram).then(|| {
        format!(
            "host RAM (CPU-only) needs {} but has {}: short by {}",
            fmt_bytes(need),
            fmt_bytes(ram),
            fmt_bytes(need - ram)
        )
    })
}
