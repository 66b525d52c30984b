//! SGLang's hybrid sliding-window pool: for the model classes SGLang lists as hybrid-SWA, the
//! full-attention layers and the sliding-window layers get pools of their own, the second one
//! `--swa-full-tokens-ratio` (default 0.8) as many tokens as the first.
//!
//! Read from SGLang's source (python/sglang/srt):
//! - `configs/model_config.py` `is_hybrid_swa_model`: the classes are Llama 4, gpt-oss
//!   (`GptOssForCausalLM`), Gemma 4 (`Gemma4ForCausalLM`, `Gemma4ForConditionalGeneration`,
//!   `Gemma4UnifiedForConditionalGeneration`), MiMo-V2, Step-3.5, DeepSeek-V4 and Laguna, unless
//!   `--disable-hybrid-swa-memory`. Gemma 2 and Gemma 3 are not among them, and server_args.py
//!   sets `disable_hybrid_swa_memory` for them besides: their sliding-window layers keep every
//!   token, as vramfit counts them.
//! - `model_executor/model_runner_kv_cache_mixin.py`: `profile_max_num_token` sizes the pool with
//!   a cell of every layer (`full_per_token · n_full + swa_per_token · n_swa`, each with its own
//!   heads and widths since PR #18039, 2026-01), then `set_num_tokens_hybrid_swa` splits the same
//!   bytes: `full = tokens · cell / (F + r · S)`, `swa = full · r`, each to a whole page.
//! - gpt-oss: server_args.py turned the pool off for gpt-oss unconditionally in the 0.5 releases
//!   before v0.5.9 (sglang#17630, 2026-01, still had to switch it on by hand; kvcached#263 finds
//!   gpt-oss on the hybrid path in 0.5.9), and since then only with the `trtllm_mha` attention
//!   backend, which is gpt-oss's default on SM100 (B200/B300/GB200).
//!
//! - Llama 4 (`Llama4ForConditionalGeneration`): `get_hybrid_layer_ids` makes every layer but
//!   each fourth (`(i + 1) % 4 != 0`), the chunked-attention layers of `attention_chunk_size`,
//!   the sliding-window kind, and no server_args.py handler turns the pool off for it. That is
//!   the hybrid pool of PR #7367 (2025-07); vramfit takes it from v0.4.9, the first release
//!   after it (inferred from the date, not read from a tag). Before, `is_hybrid_model` split
//!   the pool only when `--hybrid-kvcache-ratio` was given: every layer held every token.

use super::SglangConfig;
use crate::hardware::Gpu;
use crate::vllm::kv::kv_heads_per_rank;
use crate::vllm::Version;
use std::ops::Range;
use vramfit_model::{AttentionKind, ModelSpec};

/// server_args.py `swa_full_tokens_ratio: float = 0.8`.
pub const DEFAULT_RATIO: f64 = 0.8;

/// Whether SGLang gives this launch the hybrid pool: `Ok(ratio)`, or `Err(why not)` for a model
/// with sliding-window layers that keeps them at full length (None: no such layers).
pub fn hybrid_ratio(
    spec: &ModelSpec,
    cfg: &SglangConfig,
    gpu: Option<&Gpu>,
) -> Option<Result<f64, String>> {
    let sliding = spec.layers.iter().any(|l| {
        matches!(
            l.attention,
            AttentionKind::SlidingWindow { .. } | AttentionKind::Chunked { .. }
        )
    });
    if !sliding {
        return None;
    }
    let arch = spec.architecture.to_ascii_lowercase();
    let ratio = cfg.swa_full_tokens_ratio.unwrap_or(DEFAULT_RATIO);
    let not = |why: &str| Some(Err(why.to_string()));
    if cfg.disable_hybrid_swa_memory {
        return not("--disable-hybrid-swa-memory keeps every sliding-window layer at full length");
    }
    if arch == "llama4forconditionalgeneration" {
        if cfg.version.is_some_and(|v| v < Version::new(0, 4, 9)) {
            return not("SGLang before v0.4.9 gives Llama 4's chunked-attention layers every token unless --hybrid-kvcache-ratio is set (model_config.py is_hybrid_model)");
        }
        return Some(Ok(ratio));
    }
    if arch.contains("gemma4") {
        return Some(Ok(ratio));
    }
    if arch.contains("gptoss") {
        if cfg.version.is_some_and(|v| v < Version::new(0, 5, 9)) {
            return not("SGLang before v0.5.9 turns its hybrid sliding-window pool off for gpt-oss (server_args.py), so those layers keep every token");
        }
        let sm100 = gpu.is_some_and(|g| {
            let n = g.name.to_ascii_lowercase();
            ["b200", "b300", "gb200", "gb300"]
                .iter()
                .any(|k| n.contains(k))
        });
        let backend = cfg.attention_backend.as_deref();
        if backend == Some("trtllm_mha") || (backend.is_none() && sm100) {
            return not("with the trtllm_mha attention backend (gpt-oss's default on B200/B300) SGLang turns its hybrid sliding-window pool off, so those layers keep every token");
        }
        return Some(Ok(ratio));
    }
    not("SGLang's hybrid sliding-window pool is only for the classes it lists (gpt-oss, Gemma 4, Llama 4 multimodal, MiMo-V2, Step-3.5); this model's sliding-window or chunked layers keep every token, as counted")
}

/// KV bytes one token takes on a rank holding `layers`, as (full-attention layers,
/// sliding-window layers); their sum is [`super::cell_size`] for a model without MLA.
pub fn split_cell(spec: &ModelSpec, layers: Range<u64>, tp: u64, elem: u64) -> (u64, u64) {
    let mut full = 0;
    let mut swa = 0;
    for (i, l) in spec.layers.iter().enumerate() {
        if !layers.contains(&(i as u64)) || l.kv_shared || !l.attention.has_kv() {
            continue;
        }
        let b = kv_heads_per_rank(l.n_head_kv, tp) * (l.head_dim_k + l.head_dim_v) * elem;
        match l.attention {
            // Llama 4's chunked layers are SGLang's sliding-window kind (get_hybrid_layer_ids)
            AttentionKind::SlidingWindow { .. } | AttentionKind::Chunked { .. } => swa += b,
            _ => full += b,
        }
    }
    (full, swa)
}

/// `set_num_tokens_hybrid_swa`: the profiled `tokens` (of a cell of every layer) split into the
/// full-layer and the sliding-window pools, each a whole number of pages.
pub fn split_tokens(tokens: u64, full: u64, swa: u64, ratio: f64, page: u64) -> (u64, u64) {
    let page = page.max(1);
    let denom = full as f64 + ratio * swa as f64;
    if denom <= 0.0 {
        return (tokens, 0);
    }
    let f = (tokens as f64 * (full + swa) as f64 / denom) as u64;
    let s = (f as f64 * ratio) as u64;
    (f / page * page, s / page * page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_keeps_the_profiled_bytes() {
        // Gemma-4-31B by hand: 10 full layers of 4 KV heads × (512 + 512) × 2 B = 80 KiB, 50
        // sliding layers of 16 × (256 + 256) × 2 B = 800 KiB; 8190 profiled tokens of 880 KiB
        let (full, swa) = (80 * 1024, 800 * 1024);
        let (f, s) = split_tokens(8190, full, swa, 0.8, 1);
        // 8190 · 880 / (80 + 0.8 · 800) = 8190 · 880 / 720 = 10010
        assert_eq!((f, s), (10010, 8008));
        assert!(f * full + s * swa <= 8190 * (full + swa));
        // page 64: both pools from the unaligned 10010 (swa 8008), each to whole pages
        assert_eq!(split_tokens(8190, full, swa, 0.8, 64), (9984, 8000));
    }
}
