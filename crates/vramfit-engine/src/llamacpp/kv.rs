//! The KV cache and recurrent state llama.cpp allocates, per device.
//! Sources: src/llama-context.cpp (n_ctx padding, n_ctx_seq), src/llama-kv-cache.cpp (tensor
//! shapes, offload by layer), src/llama-kv-cache-iswa.cpp (SWA cache size),
//! src/llama-memory-recurrent.cpp (RS buffers), at the builds named in `version`.

use super::args::LlamaCppConfig;
use super::placement::Dev;
use super::version::change;
use vramfit_model::{AttentionKind, GgmlType, ModelSpec};

/// The context as llama.cpp resolves and pads it.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// total KV cells of a full-attention layer (`n_ctx` after padding)
    pub n_ctx: u64,
    /// cells per sequence stream
    pub n_ctx_seq: u64,
    pub n_seq_max: u64,
    pub unified: bool,
    /// separate streams (one per sequence) in the KV tensors
    pub n_stream: u64,
    pub n_batch: u64,
    pub n_ubatch: u64,
}

fn pad(x: u64, to: u64) -> u64 {
    if to <= 1 {
        x
    } else {
        x.div_ceil(to) * to
    }
}

/// KV size padding of the build (llama-context.cpp / llama_kv_cache_get_padding history).
pub fn kv_pad(cfg: &LlamaCppConfig, fa: bool) -> u64 {
    let b = cfg.build;
    if b.has(change::KV_PAD_256) {
        256
    } else if b.has(change::NO_KV_PAD) {
        1
    } else if b.has(change::KV_PAD_32_WITHOUT_FA) {
        if fa {
            256
        } else {
            32
        }
    } else {
        256
    }
}

/// Resolve n_ctx, batches and streams for a requested context.
pub fn context(cfg: &LlamaCppConfig, n_ctx_req: u64, fa: bool) -> Context {
    let (n_seq_max, unified) = cfg.parallel();
    let n_seq_max = n_seq_max.max(1);
    let p = kv_pad(cfg, fa);
    let mut n_ctx = pad(n_ctx_req.max(1), p);
    let streams = cfg.build.has(change::KV_STREAMS);
    let (n_ctx_seq, n_stream) = if !streams || unified {
        (n_ctx, 1)
    } else {
        // llama-context.cpp: n_ctx_seq = n_ctx / n_seq_max, padded; n_ctx rounded to match
        let seq = if cfg.build.has(change::KV_PAD_256) {
            pad(n_ctx / n_seq_max, 256)
        } else {
            n_ctx / n_seq_max
        };
        n_ctx = seq * n_seq_max;
        (seq, n_seq_max)
    };
    // causal models: n_batch <= n_ctx; n_ubatch <= n_batch (llama-context.cpp)
    let n_batch = cfg.n_batch.min(n_ctx);
    let n_ubatch = cfg.n_ubatch.min(n_batch);
    Context {
        n_ctx,
        n_ctx_seq,
        n_seq_max,
        unified,
        n_stream,
        n_batch,
        n_ubatch,
    }
}

/// Architectures llama.cpp gives an interleaved SWA (or chunked) cache (llama-model.cpp
/// load_hparams: the archs that set `swa_type`); others cache every layer in full.
pub fn llama_cpp_honours_swa(model_type: &str) -> bool {
    matches!(
        model_type,
        "gemma2"
            | "gemma3"
            | "gemma3_text"
            | "gemma3n"
            | "gemma3n_text"
            | "cohere2"
            | "gpt_oss"
            | "llama4"
            | "llama4_text"
            | "exaone4"
            | "gemma4"
            | "gemma4_text"
            // Gemma 4 12B's config names its wrapper gemma4_unified; its GGUF arch is gemma4
            | "gemma4_unified"
            | "gemma4_unified_text"
    )
}

/// Cells of one layer's cache.
pub fn layer_cells(
    cfg: &LlamaCppConfig,
    spec: &ModelSpec,
    kind: &AttentionKind,
    ctx: &Context,
    fa: bool,
) -> u64 {
    let window = match kind.window() {
        Some(w)
            if cfg.build.has(change::ISWA_CACHE)
                && !cfg.swa_full
                && llama_cpp_honours_swa(&spec.model_type) =>
        {
            w
        }
        _ => return ctx.n_ctx,
    };
    let size_base = ctx.n_ctx_seq;
    let seqs = if !cfg.build.has(change::KV_STREAMS) || ctx.unified {
        ctx.n_seq_max
    } else {
        1
    };
    let per_stream = if cfg.build.has(change::KV_PAD_256) {
        // llama-kv-cache-iswa.cpp (#17046): always padded to 256
        pad(size_base.min(window * seqs + ctx.n_ubatch), 256)
    } else {
        let add = if cfg.build.has(change::SWA_PLUS_UBATCH) {
            ctx.n_ubatch
        } else {
            ctx.n_batch
        };
        size_base.min(pad(window * seqs + add, kv_pad(cfg, fa)))
    };
    per_stream * ctx.n_stream
}

/// K and V elements per cell of one layer as this build caches it.
pub fn layer_kv_elems(cfg: &LlamaCppConfig, l: &vramfit_model::LayerSpec) -> (u64, u64) {
    match &l.attention {
        AttentionKind::Mla {
            kv_lora_rank,
            rope_dim,
            nope_dim,
            v_head_dim,
        } => {
            if cfg.build.has(change::MLA_NO_V) {
                (kv_lora_rank + rope_dim, 0)
            } else if cfg.build.has(change::MLA_LATENT_CACHE) {
                (kv_lora_rank + rope_dim, *kv_lora_rank)
            } else {
                // before #12801 the decompressed per-head K and V were cached
                (l.n_head * (nope_dim + rope_dim), l.n_head * v_head_dim)
            }
        }
        k if k.has_kv() && !l.kv_shared => (l.n_embd_k_gqa(), l.n_embd_v_gqa()),
        _ => (0, 0),
    }
}

/// KV bytes per device (GPU index, or None for host) and per-layer cells.
pub struct KvAlloc {
    pub gpu: Vec<u64>,
    pub host: u64,
    /// largest cell count of a full-attention cache (the base cache)
    pub base_cells: u64,
    /// cell count of the SWA cache if there is one
    pub swa_cells: Option<u64>,
    pub bytes_per_token: u64,
}

pub fn allocate(
    cfg: &LlamaCppConfig,
    spec: &ModelSpec,
    layer_dev: &[Dev],
    n_dev: usize,
    ctx: &Context,
    fa: bool,
) -> KvAlloc {
    let (tk, tv) = (cfg.type_k, cfg.type_v);
    // without flash attention V is stored transposed and every layer uses the widest V row
    // (llama-kv-cache.cpp n_embd_v_gqa_max)
    let v_max = spec
        .layers
        .iter()
        .map(|l| layer_kv_elems(cfg, l).1)
        .max()
        .unwrap_or(0);
    let mut gpu = vec![0u64; n_dev];
    let mut host = 0u64;
    let mut swa_cells = None;
    let mut per_token = 0u64;
    for (il, l) in spec.layers.iter().enumerate() {
        let (k, mut v) = layer_kv_elems(cfg, l);
        if k == 0 && v == 0 {
            continue;
        }
        if !fa && v > 0 {
            v = v_max;
        }
        let cells = layer_cells(cfg, spec, &l.attention, ctx, fa);
        if cells != ctx.n_ctx {
            swa_cells = Some(cells);
        } else {
            per_token += row(tk, k) + row(tv, v);
        }
        let bytes = cells * (row(tk, k) + row(tv, v));
        let dev = if cfg.no_kv_offload {
            None
        } else {
            layer_dev.get(il).copied().flatten()
        };
        match dev {
            Some(d) => gpu[d] += bytes,
            None => host += bytes,
        }
    }
    // recurrent state: n_seq_max rows of f32 conv and ssm state (llama-memory-recurrent.cpp)
    let seqs = ctx.n_seq_max.max(1);
    for (il, l) in spec.layers.iter().enumerate() {
        let states = match &l.attention {
            AttentionKind::Recurrent(s) => Some(s),
            _ => None,
        }
        .into_iter()
        .chain(l.parallel_ssm.as_ref());
        for s in states {
            let bytes = seqs * (s.conv_elems + s.ssm_elems) * 4;
            match if cfg.no_kv_offload {
                None
            } else {
                layer_dev.get(il).copied().flatten()
            } {
                Some(d) => gpu[d] += bytes,
                None => host += bytes,
            }
        }
    }
    KvAlloc {
        gpu,
        host,
        base_cells: ctx.n_ctx,
        swa_cells,
        bytes_per_token: per_token,
    }
}

/// Bytes of one cell row of `n` elements in cache type `t` (ggml_row_size).
fn row(t: GgmlType, n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    t.row_bytes(n)
        .unwrap_or_else(|| (n as f64 * t.bytes_per_elem()).ceil() as u64)
}
