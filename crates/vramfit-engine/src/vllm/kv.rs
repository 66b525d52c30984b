//! vLLM's paged KV cache on one worker: the page of each layer, how layers are grouped into
//! shared tensors, how many blocks a pool holds, what one request needs, and the longest
//! request that fits.
//!
//! Sources: vllm/v1/kv_cache_interface.py (`FullAttentionSpec`, `SlidingWindowSpec`,
//! `ChunkedLocalAttentionSpec`, `MLAAttentionSpec`, `MambaSpec`: `page_size_bytes`,
//! `max_memory_usage_bytes`), vllm/v1/core/kv_cache_utils.py (`get_kv_cache_groups`,
//! `get_num_blocks`, `get_max_concurrency_for_kv_cache_config`, `estimate_max_model_len`),
//! vllm/config/model.py `get_num_kv_heads`.

use std::ops::Range;
use vramfit_model::{AttentionKind, ModelSpec};

/// What a layer caches, as vLLM's KV cache specs tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvKind {
    Full,
    Sliding {
        window: u64,
    },
    Chunked {
        chunk: u64,
    },
    Mla,
    /// recurrent state (Mamba, GDN): one page per request
    State,
}

/// One layer's cache on one worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvLayer {
    pub kind: KvKind,
    /// bytes per token (attention) or per request (state)
    pub unit_bytes: u64,
}

/// The KV cache layout of one worker.
#[derive(Debug, Clone, PartialEq)]
pub struct KvLayout {
    pub block_size: u64,
    pub layers: Vec<KvLayer>,
    /// bytes of one block of one shared tensor (the unified page)
    pub page_bytes: u64,
    /// tensors the pool is split into (layers per group; the uniform case: all layers)
    pub group_size: u64,
    /// groups by kind: (kind, number of groups)
    pub groups: Vec<(KvKind, u64)>,
    pub max_num_batched_tokens: u64,
    /// `--decode-context-parallel-size`: each rank of a DCP group caches every n-th token of a
    /// request, so a full-attention or MLA layer needs `cdiv(max_len, n)` tokens per request
    /// (kv_cache_interface.py `max_memory_usage_bytes`, vLLM PR #23734); 1 without DCP
    pub context_parallel: u64,
}

/// Bytes of one cache element for `--kv-cache-dtype` (`auto`: the model dtype).
pub fn kv_elem_bytes(kv_cache_dtype: &str, model_dtype_bytes: u64) -> u64 {
    let d = kv_cache_dtype.to_ascii_lowercase();
    if d.starts_with("fp8") || d.starts_with("int8") {
        1
    } else if d == "auto" {
        model_dtype_bytes
    } else if d == "float32" || d == "fp32" {
        4
    } else {
        2
    }
}

/// KV heads one rank stores: `max(1, total // tp)` (model.py `get_num_kv_heads`); MLA keeps
/// its one latent on every rank.
pub fn kv_heads_per_rank(n_head_kv: u64, tp: u64) -> u64 {
    (n_head_kv / tp.max(1)).max(1)
}

/// How a release caches an MLA layer (DeepSeek-V2/V3/R1, Kimi).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MlaCache {
    /// one latent (`kv_lora_rank + rope`) per token on every rank (v0.8+; `MLAAttentionSpec`)
    #[default]
    Latent,
    /// V0 v0.7.3: the latent entry padded to a multiple of 256 bytes
    /// (`VLLM_MLA_CUDA_MEM_ALIGN_KV_CACHE`, on by default; worker/cache_engine.py, added by PR
    /// #12676 and removed by PR #14798 "reclaiming the memory lost to padding")
    LatentAligned256,
    /// before v0.7.1 (no MLA kernels yet): models/deepseek_v2.py builds
    /// `Attention(num_local_heads, 256, ...)` with q, k and v padded to 256, so each rank caches
    /// K and V of 256 for its `num_heads / tp` heads (vllm PR #10927's log of DeepSeek-V2-Lite:
    /// 35.42 GiB for 5,373 blocks = 27 layers × 16 heads × 512 × 2 bytes per token)
    PerHead256,
}

impl MlaCache {
    /// The MLA cache of a vLLM release (V1 from v0.8.0 has the unpadded latent).
    pub fn of(version: super::Version) -> MlaCache {
        use super::Version as V;
        if version < V::new(0, 7, 1) {
            MlaCache::PerHead256
        } else if version >= V::new(0, 7, 3) && version < V::new(0, 8, 0) {
            MlaCache::LatentAligned256
        } else {
            MlaCache::Latent
        }
    }
}

/// Inputs of a layout beyond the model.
#[derive(Debug, Clone, Copy)]
pub struct LayoutInputs<'a> {
    pub tp: u64,
    pub kv_cache_dtype: &'a str,
    pub model_dtype_bytes: u64,
    /// `--block-size`, or None for 16 / the backend's choice
    pub block_size: Option<u64>,
    pub max_num_batched_tokens: u64,
    /// `--disable-hybrid-kv-cache-manager`: sliding-window layers are cached as full attention
    pub disable_hybrid: bool,
    /// compute capability of the GPU (MLA backends force their block size by architecture)
    pub compute_capability: Option<f64>,
    /// how the release caches MLA layers ([`MlaCache::of`])
    pub mla_cache: MlaCache,
    /// bytes per element of the recurrent SSM state ([`ssm_state_bytes`])
    pub ssm_dtype_bytes: u64,
}

/// Bytes per element of the recurrent (SSM / DeltaNet temporal) state. `auto` keeps the model
/// dtype (mamba_utils.py `MambaStateDtypeCalculator`), except where vLLM takes the dtype from
/// the checkpoint's config: Qwen3.5 (`mamba_ssm_dtype: float32` in every public config.json;
/// the `Qwen3_5ForConditionalGenerationConfig` hook of PR #34489, in every release that runs
/// Qwen3.5, v0.17.0 on) and Nemotron-H (`mamba_ssm_cache_dtype: float32` in its configs, read
/// by PR #29978 from v0.13.0; PR #39032 makes float32 its default). Qwen3-Next keeps the model
/// dtype unless the flag says otherwise. The conv state always stays in the model dtype.
pub fn ssm_state_bytes(
    spec: &ModelSpec,
    flag: Option<&str>,
    version: super::version::Version,
    model_dtype_bytes: u64,
) -> u64 {
    use super::version::Version;
    match flag.map(str::to_ascii_lowercase).as_deref() {
        Some("float32") => return 4,
        Some("float16" | "bfloat16") => return 2,
        _ => {}
    }
    let mt = spec.model_type.as_str();
    if mt.starts_with("qwen3_5") || (mt == "nemotron_h" && version >= Version::new(0, 13, 0)) {
        4
    } else {
        model_dtype_bytes
    }
}

impl KvLayout {
    /// The layout of the layers in `layers` (one pipeline stage).
    pub fn new(spec: &ModelSpec, layers: Range<u64>, inp: LayoutInputs) -> KvLayout {
        let elem = kv_elem_bytes(inp.kv_cache_dtype, inp.model_dtype_bytes);
        let fp8_ds_mla = inp.kv_cache_dtype.eq_ignore_ascii_case("fp8_ds_mla");
        let ssm_bytes = inp.ssm_dtype_bytes;
        let mut kv = Vec::new();
        for l in spec
            .layers
            .iter()
            .skip(layers.start as usize)
            .take((layers.end - layers.start) as usize)
        {
            if l.kv_shared {
                continue;
            }
            let heads = kv_heads_per_rank(l.n_head_kv, inp.tp);
            let attn_unit = heads * (l.head_dim_k + l.head_dim_v) * elem;
            let layer = match &l.attention {
                AttentionKind::Full => KvLayer {
                    kind: KvKind::Full,
                    unit_bytes: attn_unit,
                },
                AttentionKind::SlidingWindow { window } if !inp.disable_hybrid => KvLayer {
                    kind: KvKind::Sliding { window: *window },
                    unit_bytes: attn_unit,
                },
                AttentionKind::Chunked { chunk } if !inp.disable_hybrid => KvLayer {
                    kind: KvKind::Chunked { chunk: *chunk },
                    unit_bytes: attn_unit,
                },
                AttentionKind::SlidingWindow { .. } | AttentionKind::Chunked { .. } => KvLayer {
                    kind: KvKind::Full,
                    unit_bytes: attn_unit,
                },
                AttentionKind::Mla { .. } if inp.mla_cache == MlaCache::PerHead256 => KvLayer {
                    kind: KvKind::Full,
                    unit_bytes: l.n_head.div_ceil(inp.tp) * 2 * 256 * elem,
                },
                AttentionKind::Mla {
                    kv_lora_rank,
                    rope_dim,
                    ..
                } if inp.mla_cache == MlaCache::LatentAligned256 && !fp8_ds_mla => KvLayer {
                    kind: KvKind::Mla,
                    unit_bytes: ((kv_lora_rank + rope_dim) * elem).div_ceil(256) * 256,
                },
                AttentionKind::Mla {
                    kv_lora_rank,
                    rope_dim,
                    ..
                } => KvLayer {
                    kind: KvKind::Mla,
                    // MLAAttentionSpec: one latent (kv_lora_rank + rope) per token, never split by
                    // TP; fp8_ds_mla packs 656 bytes per token
                    unit_bytes: if fp8_ds_mla {
                        656
                    } else {
                        (kv_lora_rank + rope_dim) * elem
                    },
                },
                AttentionKind::Recurrent(s) => KvLayer {
                    kind: KvKind::State,
                    // MambaSpec page: conv state in the model dtype, the SSM state in its own
                    // ([`ssm_state_bytes`]), heads split over TP
                    unit_bytes: s.conv_elems.div_ceil(inp.tp) * inp.model_dtype_bytes
                        + s.ssm_elems.div_ceil(inp.tp) * ssm_bytes,
                },
                AttentionKind::None => continue,
            };
            kv.push(layer);
            if let Some(s) = &l.parallel_ssm {
                kv.push(KvLayer {
                    kind: KvKind::State,
                    unit_bytes: s.conv_elems.div_ceil(inp.tp) * inp.model_dtype_bytes
                        + s.ssm_elems.div_ceil(inp.tp) * ssm_bytes,
                });
            }
        }
        let has_mla = kv.iter().any(|l| l.kind == KvKind::Mla);
        let mut block_size = inp.block_size.unwrap_or_else(|| {
            // vllm/platforms/cuda.py `check_and_update_config`: the default MLA backend forces its
            // block size: FlashMLA on Hopper 64, CUTLASS_MLA on SM100 Blackwell 128 (v0.10.1+,
            // PR #22738); Triton MLA elsewhere keeps 16
            match inp.compute_capability {
                Some(c) if has_mla && (10.0..11.0).contains(&c) => 128,
                Some(c) if has_mla && (9.0..10.0).contains(&c) => 64,
                _ => 16,
            }
        });
        let attn_unit_max = kv
            .iter()
            .filter(|l| l.kind != KvKind::State)
            .map(|l| l.unit_bytes)
            .max()
            .unwrap_or(0);
        let state_max = kv
            .iter()
            .filter(|l| l.kind == KvKind::State)
            .map(|l| l.unit_bytes)
            .max()
            .unwrap_or(0);
        if state_max > 0 && attn_unit_max > 0 && inp.block_size.is_none() {
            // hybrid attention + Mamba: the attention block grows until its page covers the
            // state page, in multiples of the kernel block alignment of 16 tokens
            // (vllm/model_executor/models/config.py HybridAttentionMambaModelConfig)
            let align = 16;
            block_size = align * state_max.div_ceil(align * attn_unit_max);
        }
        let page_of = |l: &KvLayer| match l.kind {
            KvKind::State => l.unit_bytes,
            _ => l.unit_bytes * block_size,
        };
        // types: same kind and window (per-type counts, in order of appearance)
        let mut types: Vec<(KvKind, u64)> = Vec::new();
        for l in &kv {
            match types.iter_mut().find(|(k, _)| *k == l.kind) {
                Some(t) => t.1 += 1,
                None => types.push((l.kind, 1)),
            }
        }
        let max_page = kv.iter().map(page_of).max().unwrap_or(0);
        let (page_bytes, group_size, groups) = if types.len() <= 1 {
            let n = kv.len() as u64;
            let all_same = kv.iter().all(|l| page_of(l) == max_page);
            if all_same {
                // one group, one tensor per layer
                (max_page, n, types.iter().map(|(k, _)| (*k, 1)).collect())
            } else {
                // UniformTypeKVCacheSpecs: one block spans every layer's page
                (
                    kv.iter().map(page_of).sum(),
                    1,
                    types.iter().map(|(k, _)| (*k, 1)).collect(),
                )
            }
        } else {
            // hybrid: pages unified to the largest, layers of each type split into groups of
            // `group_size` (the smallest type's count, or the largest when it is < 1.25× that),
            // with padding layers filling the last group of a type
            let min_n = types.iter().map(|t| t.1).min().unwrap_or(1);
            let max_n = types.iter().map(|t| t.1).max().unwrap_or(1);
            let gs = if (max_n as f64) < 1.25 * min_n as f64 {
                max_n
            } else {
                min_n
            };
            let groups = types.iter().map(|(k, n)| (*k, n.div_ceil(gs))).collect();
            (max_page, gs, groups)
        };
        KvLayout {
            block_size,
            layers: kv,
            page_bytes,
            group_size,
            groups,
            max_num_batched_tokens: inp.max_num_batched_tokens,
            context_parallel: 1,
        }
    }

    /// Total groups (`len(kv_cache_groups)`).
    pub fn n_groups(&self) -> u64 {
        self.groups.iter().map(|g| g.1).sum()
    }

    /// Bytes of one block across all shared tensors.
    pub fn block_bytes(&self) -> u64 {
        self.page_bytes * self.group_size
    }

    /// `get_num_blocks`: `available // page_size // group_size`.
    pub fn num_blocks(&self, available: i64) -> u64 {
        if available <= 0 || self.block_bytes() == 0 {
            return 0;
        }
        available as u64 / self.block_bytes()
    }

    /// Blocks of one group's tensor that one request of `max_len` tokens needs
    /// (`cdiv(max_memory_usage_bytes, page_size_bytes)` of the group's spec).
    fn blocks_for(&self, kind: KvKind, max_len: u64) -> u64 {
        let b = self.block_size;
        match kind {
            KvKind::Full | KvKind::Mla => {
                max_len.div_ceil(self.context_parallel.max(1)).div_ceil(b)
            }
            // SlidingWindowSpec: window − 1 + max_num_batched_tokens tokens, plus one block
            KvKind::Sliding { window } => {
                let tokens = (window.saturating_sub(1) + self.max_num_batched_tokens).min(max_len);
                tokens.div_ceil(b) + 1
            }
            // ChunkedLocalAttentionSpec: chunk + max_num_batched_tokens tokens
            KvKind::Chunked { chunk } => (chunk + self.max_num_batched_tokens)
                .min(max_len)
                .div_ceil(b),
            // MambaSpec without prefix caching: one page per request
            KvKind::State => 1,
        }
    }

    /// Blocks one request of `max_len` tokens needs, over all groups.
    pub fn blocks_per_request(&self, max_len: u64) -> u64 {
        if self.groups.len() == 1 && self.group_size == 1 && self.layers.len() > 1 {
            // UniformTypeKVCacheSpecs: the largest need of any layer, in shared blocks
            return self
                .layers
                .iter()
                .map(|l| self.blocks_for(l.kind, max_len))
                .max()
                .unwrap_or(0);
        }
        self.groups
            .iter()
            .map(|(k, n)| n * self.blocks_for(*k, max_len))
            .sum()
    }

    /// KV bytes one request of `max_len` tokens needs (vLLM's `max_memory_usage_bytes` summed
    /// over groups, in whole pages).
    pub fn bytes_per_request(&self, max_len: u64) -> u64 {
        self.blocks_per_request(max_len) * self.block_bytes()
    }

    /// Bytes per token of context over the full-attention and MLA layers (for reports).
    pub fn bytes_per_token(&self) -> u64 {
        self.layers
            .iter()
            .filter(|l| matches!(l.kind, KvKind::Full | KvKind::Mla))
            .map(|l| l.unit_bytes)
            .sum()
    }

    /// `estimate_max_model_len`: the largest length in `1..=upper` whose request fits in
    /// `available`, by vLLM's binary search; 0 when not even one token fits.
    pub fn estimate_max_model_len(&self, available: i64, upper: u64) -> u64 {
        if available <= 0 {
            return 0;
        }
        let avail = available as u64;
        let fits = |len: u64| self.bytes_per_request(len) <= avail;
        if !fits(1) {
            return 0;
        }
        let (mut lo, mut hi) = (1u64, upper.max(1));
        if fits(hi) {
            return hi;
        }
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// True when there is no layer with a KV cache (the pool holds nothing).
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
}
