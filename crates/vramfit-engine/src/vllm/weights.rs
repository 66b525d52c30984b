//! Weight bytes each vLLM worker holds: the model's parameters by role, quantized as the
//! checkpoint says, sharded over tensor-parallel ranks and split into pipeline stages.
//!
//! Sharding follows vLLM's parallel layers (vllm/model_executor/layers/linear.py,
//! vocab_parallel_embedding.py): column-parallel Q/gate/up split their outputs, row-parallel
//! O/down split their inputs, K/V split by KV heads until every rank holds one (then replicate),
//! embeddings and lm_head split the vocabulary padded to 64 per rank, norms and routers are
//! replicated. Pipeline stages take the layers of `get_pp_indices` (vllm/distributed/utils.py);
//! the embedding lives on the first stage, the final norm and lm_head on the last.

use super::args::VllmConfig;
pub use super::mla::mla_decode_copies;
use super::quant::{LinearStorage, WeightScheme};
use crate::error::EngineError;
use std::collections::HashMap;
use std::ops::Range;
use vramfit_model::{layout, AttentionKind, FfnKind, GgmlType, LayerSpec, ModelSpec, WeightSet};

/// vocab_parallel_embedding.py `DEFAULT_VOCAB_PADDING_SIZE`
const VOCAB_PADDING: u64 = 64;

/// The layers of each pipeline stage: vLLM `get_pp_indices`. Without `VLLM_PP_LAYER_PARTITION`
/// every stage gets `n / pp` layers and the remainder goes one each to the stages before the
/// last, counting backwards from the second to last.
pub fn pp_layer_ranges(
    n_layer: u64,
    pp: u64,
    partition: Option<&[u64]>,
) -> Result<Vec<Range<u64>>, EngineError> {
    let parts: Vec<u64> = match partition {
        Some(p) => {
            if p.len() as u64 != pp || p.iter().sum::<u64>() != n_layer {
                return Err(EngineError::BadEnv {
                    name: "VLLM_PP_LAYER_PARTITION".into(),
                    value: p.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","),
                    expected: format!(
                        "{pp} layer counts (one per pipeline stage) that add up to the model's {n_layer} layers"
                    ),
                });
            }
            p.to_vec()
        }
        None => {
            let mut parts = vec![n_layer / pp; pp as usize];
            let rem = (n_layer % pp) as usize;
            let len = parts.len();
            for i in 2..rem + 2 {
                parts[len - i] += 1;
            }
            parts
        }
    };
    let mut start = 0;
    Ok(parts
        .iter()
        .map(|n| {
            let r = start..start + n;
            start += n;
            r
        })
        .collect())
}

/// Largest repacked linears the allocator keeps cached after loading (see `predicted_stage_bytes`).
const REPACK_SLACK_TENSORS: u64 = 1;

/// Rows of the vocabulary one tensor-parallel rank holds (vocab padded to 64, then split).
pub fn vocab_rows_per_rank(n_vocab: u64, tp: u64) -> u64 {
    n_vocab.div_ceil(VOCAB_PADDING * tp) * VOCAB_PADDING
}

/// Context for counting one rank's bytes.
struct Counter<'a> {
    scheme: &'a WeightScheme,
    tp: u64,
    bytes: u64,
    /// the largest repacked (int4 / nvfp4) non-expert linear on this rank
    largest_repacked: u64,
    /// elements of each recurrent mixer (Mamba, GDN) by layer, from the synthesized tensor list
    mixer_elems: &'a HashMap<u64, u64>,
}

impl Counter<'_> {
    /// A linear `n_in` → `n_out` split over tensor-parallel ranks along `split_out` or the input.
    fn linear(&mut self, name: &str, n_in: u64, n_out: u64, split_out: bool, expert: bool) {
        let storage = self.scheme.linear_for(name, expert);
        let (i, o) = if split_out {
            (n_in, n_out.div_ceil(self.tp))
        } else {
            (n_in.div_ceil(self.tp), n_out)
        };
        let b = storage.bytes(i, o);
        self.bytes += b;
        if !expert
            && matches!(
                storage,
                LinearStorage::IntGroup { .. } | LinearStorage::Nvfp4
            )
        {
            self.largest_repacked = self.largest_repacked.max(b);
        }
    }

    /// `n` routed experts' copies of one linear (all named alike, so stored alike): `n` times
    /// [`Counter::linear`] with `expert` set, the name looked up once.
    fn experts(&mut self, name: &str, n: u64, n_in: u64, n_out: u64, split_out: bool) {
        let bytes = self.bytes;
        self.bytes = 0;
        self.linear(name, n_in, n_out, split_out, true);
        self.bytes = bytes + n * self.bytes;
    }

    /// A replicated linear that stays unquantized (routers, MLA down-projections are quantized
    /// through `linear`; this is for gates vLLM builds with `quant_config=None`).
    fn dense(&mut self, elems: u64) {
        self.bytes += elems * self.scheme.dense_bytes;
    }
}

/// Bytes of one decoder layer on one tensor-parallel rank.
fn layer_bytes(spec: &ModelSpec, i: u64, l: &LayerSpec, c: &mut Counter) {
    let e = spec.n_embd;
    let p = format!("model.layers.{i}");
    let flags = &spec.arch;
    match &l.attention {
        AttentionKind::Mla {
            kv_lora_rank,
            rope_dim,
            nope_dim,
            v_head_dim,
        } => {
            let qk = nope_dim + rope_dim;
            // DeepSeek-V2/V3 and Kimi use q_lora_rank 1536; V2-Lite (hidden 2048) projects Q
            // directly (the spec does not carry q_lora_rank)
            if e >= 4096 {
                let q_lora = 1536;
                c.linear(&format!("{p}.self_attn.q_a_proj"), e, q_lora, false, false);
                c.linear(
                    &format!("{p}.self_attn.q_b_proj"),
                    q_lora,
                    l.n_head * qk,
                    true,
                    false,
                );
                c.dense(q_lora);
            } else {
                c.linear(
                    &format!("{p}.self_attn.q_proj"),
                    e,
                    l.n_head * qk,
                    true,
                    false,
                );
            }
            // kv_a_proj_with_mqa is replicated (ReplicatedLinear): count it whole
            let tp = c.tp;
            c.tp = 1;
            c.linear(
                &format!("{p}.self_attn.kv_a_proj_with_mqa"),
                e,
                kv_lora_rank + rope_dim,
                true,
                false,
            );
            c.tp = tp;
            c.dense(*kv_lora_rank);
            c.linear(
                &format!("{p}.self_attn.kv_b_proj"),
                *kv_lora_rank,
                l.n_head * (nope_dim + v_head_dim),
                true,
                false,
            );
            c.linear(
                &format!("{p}.self_attn.o_proj"),
                l.n_head * v_head_dim,
                e,
                false,
                false,
            );
        }
        AttentionKind::Recurrent(_) => {
            // the mixer's projections, conv and norms as vramfit-model's layout builds them
            // (in_proj/out_proj split over TP like column/row-parallel linears)
            match c.mixer_elems.get(&i) {
                Some(&elems) => c.bytes += (elems * c.scheme.dense_bytes).div_ceil(c.tp),
                None => {
                    c.linear(&format!("{p}.linear_attn.in_proj"), e, 5 * e, true, false);
                    c.linear(&format!("{p}.linear_attn.out_proj"), 2 * e, e, false, false);
                }
            }
        }
        AttentionKind::None => {}
        _ => {
            let kv_per_rank = (l.n_head_kv / c.tp).max(1);
            c.linear(
                &format!("{p}.self_attn.q_proj"),
                e,
                l.n_head * l.head_dim_k,
                true,
                false,
            );
            // QKVParallelLinear: KV heads split until each rank holds one, then replicated
            let tp = c.tp;
            c.tp = 1;
            let kv_out = kv_per_rank * (l.head_dim_k + l.head_dim_v);
            c.linear(&format!("{p}.self_attn.k_proj"), e, kv_out, true, false);
            c.tp = tp;
            c.linear(
                &format!("{p}.self_attn.o_proj"),
                l.n_head * l.head_dim_v,
                e,
                false,
                false,
            );
            if flags.qkv_bias {
                c.dense((l.n_head * l.head_dim_k).div_ceil(c.tp) + kv_out);
            }
            if flags.qk_norm {
                c.dense(l.head_dim_k * 2);
            }
            if flags.attn_sinks {
                c.dense(l.n_head.div_ceil(c.tp));
            }
        }
    }
    if l.parallel_ssm.is_some() {
        match c.mixer_elems.get(&i) {
            Some(&elems) => c.bytes += (elems * c.scheme.dense_bytes).div_ceil(c.tp),
            None => {
                c.linear(&format!("{p}.mamba.in_proj"), e, 5 * e, true, false);
                c.linear(&format!("{p}.mamba.out_proj"), 2 * e, e, false, false);
            }
        }
    }
    let gates = if flags.gated_mlp { 2 } else { 1 };
    match &l.ffn {
        FfnKind::Dense { n_ff } => {
            c.linear(
                &format!("{p}.mlp.gate_up_proj"),
                e,
                gates * n_ff,
                true,
                false,
            );
            c.linear(&format!("{p}.mlp.down_proj"), *n_ff, e, false, false);
        }
        FfnKind::Moe => {
            if let Some(moe) = &spec.moe {
                // FusedMoE: every expert's intermediate dim split over TP (or whole experts over
                // EP: the same bytes per rank). MXFP4 experts are counted as the checkpoint
                // holds them (with the bf16 biases mxfp4.py always registers); what the
                // chosen kernel pads or copies is added by vllm::mxfp4
                if c.scheme.quant_name.as_deref() == Some("mxfp4") {
                    let ff_rank = moe.n_ff_exp.div_ceil(c.tp);
                    c.bytes +=
                        super::mxfp4::checkpoint_layer_bytes(moe.n_expert, e, ff_rank, gates);
                } else {
                    c.experts(
                        &format!("{p}.mlp.experts.w13"),
                        moe.n_expert,
                        e,
                        gates * moe.n_ff_exp,
                        true,
                    );
                    c.experts(
                        &format!("{p}.mlp.experts.w2"),
                        moe.n_expert,
                        moe.n_ff_exp,
                        e,
                        false,
                    );
                }
                // router: ReplicatedLinear without quantization
                c.dense(e * moe.n_expert);
                if flags.expert_bias {
                    c.dense(moe.n_expert);
                }
                if moe.n_ff_shexp > 0 {
                    let sh = moe.n_ff_shexp;
                    c.linear(
                        &format!("{p}.mlp.shared_experts.gate_up_proj"),
                        e,
                        gates * sh,
                        true,
                        false,
                    );
                    c.linear(
                        &format!("{p}.mlp.shared_experts.down_proj"),
                        sh,
                        e,
                        false,
                        false,
                    );
                }
            }
        }
        FfnKind::None => {}
    }
    // Gemma 4 per-layer input gate and projection (ReplicatedLinear) and their norm
    if flags.per_layer_embd > 0 {
        c.dense(2 * e * flags.per_layer_embd + e);
    }
    // input and post-attention norms (+ Gemma's post norms), replicated
    let norms = 2 + if flags.post_norms { 2 } else { 0 };
    c.dense(norms * e * if flags.norm_bias { 2 } else { 1 });
}

/// Elements of each recurrent mixer by layer: the tensors vramfit-model's layout synthesizes for
/// the layer's mixer (pure recurrent layers: all but the FFN and the block norms; layers with an
/// SSM beside attention: the `ssm_*` tensors).
fn mixer_elems(spec: &ModelSpec) -> HashMap<u64, u64> {
    let mut out = HashMap::new();
    let has_mixer = |l: &LayerSpec| {
        matches!(l.attention, AttentionKind::Recurrent(_)) || l.parallel_ssm.is_some()
    };
    if !spec.layers.iter().any(has_mixer) {
        return out;
    }
    for t in layout::synthesize(spec, GgmlType::BF16).tensors {
        let Some(il) = t.layer() else { continue };
        let Some(l) = spec.layers.get(il as usize) else {
            continue;
        };
        let short = t.name.splitn(3, '.').nth(2).unwrap_or("");
        let counts = match l.attention {
            AttentionKind::Recurrent(_) => {
                !short.starts_with("ffn_")
                    && !matches!(short, "attn_norm.weight" | "ffn_norm.weight")
                    && !short.starts_with("post_")
            }
            _ => l.parallel_ssm.is_some() && short.starts_with("ssm_"),
        };
        if counts {
            *out.entry(il).or_insert(0) += t.elems();
        }
    }
    out
}

/// Weight bytes per pipeline stage (each tensor-parallel rank of a stage holds the same),
/// predicted from the spec.
pub fn predicted_stage_bytes(
    spec: &ModelSpec,
    cfg: &VllmConfig,
    ranges: &[Range<u64>],
) -> Vec<u64> {
    let scheme = WeightScheme::of(spec, cfg);
    let tp = cfg.tensor_parallel_size;
    let rows = vocab_rows_per_rank(spec.n_vocab, tp);
    let mixers = mixer_elems(spec);
    let last = ranges.len() - 1;
    let mtp = cfg
        .speculative
        .as_ref()
        .is_some_and(|s| s.method.contains("mtp"));
    ranges
        .iter()
        .enumerate()
        .map(|(stage, r)| {
            let mut c = Counter {
                scheme: &scheme,
                tp,
                bytes: 0,
                largest_repacked: 0,
                mixer_elems: &mixers,
            };
            for i in r.clone() {
                if let Some(l) = spec.layers.get(i as usize) {
                    layer_bytes(spec, i, l, &mut c);
                }
            }
            let embed = rows * spec.n_embd * scheme.dense_bytes;
            if stage == 0 {
                c.bytes += embed;
                // vision tower: kept in the model dtype, split over TP like the text layers
                c.bytes += (spec.vision_params * scheme.dense_bytes).div_ceil(tp);
                // Gemma 4 per-layer embeddings (gemma4.py): embed_tokens_per_layer is a
                // VocabParallelEmbedding of n_layer × width, per_layer_model_projection a
                // ColumnParallelLinear from the hidden size
                let ple = spec.arch.per_layer_embd * spec.n_layer();
                c.bytes += (rows * ple + (spec.n_embd * ple).div_ceil(tp)) * scheme.dense_bytes;
            }
            if stage == last {
                c.bytes += spec.n_embd * scheme.dense_bytes; // final norm
                                                             // ParallelLMHead: shares the embedding when tied and on the same stage
                if !spec.tie_word_embeddings || ranges.len() > 1 {
                    let lm_quantized = !scheme.ignore.is_empty()
                        && !scheme.is_ignored("lm_head")
                        && scheme.quant_name.as_deref() == Some("compressed-tensors");
                    c.bytes += if lm_quantized {
                        scheme.linear.bytes(spec.n_embd, rows)
                    } else {
                        embed
                    };
                }
                if mtp {
                    if let Some(l) = spec.layers.last() {
                        for k in 0..spec.n_nextn_layers {
                            layer_bytes(spec, spec.n_layer() + k, l, &mut c);
                            // eh_proj (2·hidden → hidden) and its norms
                            c.dense(2 * spec.n_embd * spec.n_embd / tp + 3 * spec.n_embd);
                        }
                    }
                }
            }
            // "Model loading took" is a drop in free memory: int4 and NVFP4 weights are repacked
            // for the Marlin/CUTLASS kernels after loading, and the caching allocator keeps the
            // temporaries' blocks. The two quantized dev logs load 0.15 GiB more than their tensor
            // bytes (vllm-log-009 NVFP4, -015 AWQ; two of the largest repacked linears), but -009's
            // KV pool fits better without it: one largest linear splits the difference.
            c.bytes + REPACK_SLACK_TENSORS * c.largest_repacked
        })
        .collect()
}

/// What each vLLM worker holds for its weights: the checkpoint's tensors (exact when known,
/// else predicted) plus the copies vLLM derives from them after loading ([`mla_decode_copies`],
/// the MXFP4 kernel's padding and copies: [`super::mxfp4::backend_extra_bytes`], ROCm's padded
/// MoE weights: [`super::rocm::moe_padding_bytes`]).
pub fn stage_bytes(
    spec: &ModelSpec,
    weights: Option<&WeightSet>,
    cfg: &VllmConfig,
    ranges: &[Range<u64>],
) -> Vec<u64> {
    let base = match weights {
        Some(w) if !w.tensors.is_empty() => exact_stage_bytes(w, spec, cfg, ranges),
        _ => predicted_stage_bytes(spec, cfg, ranges),
    };
    let rope = rope_table_bytes(spec, cfg);
    base.iter()
        .zip(mla_decode_copies(spec, cfg, ranges))
        .zip(ranges)
        .map(|((b, m), r)| {
            // ROCm re-allocates unquantized MoE weights padded (vllm::rocm)
            let rocm = if cfg.rocm {
                super::rocm::moe_padding_bytes(spec, cfg, r.clone())
            } else {
                0
            };
            b + m + rope + rocm + super::mxfp4::backend_extra_bytes(spec, cfg, r.clone())
        })
        .collect()
}

/// The rotary cos/sin tables every rank builds while the model is constructed, counted in
/// "Model loading took": `register_buffer("cos_sin_cache", cache.to(dtype))` in the model dtype
/// (rotary_embedding/base.py), one per distinct setting and replicated on every TP rank and PP
/// stage. Llama-4 (10,485,760 positions × 128) holds 2.5 GiB; Gemma 3's linear ×8 global table
/// 0.5 GiB (llm-d-planner PR #205's v0.19.0 logs print 53.12 and 8.58 GiB against 50.6 and 8.0
/// GiB of tensors).
pub fn rope_table_bytes(spec: &ModelSpec, cfg: &VllmConfig) -> u64 {
    let elems: u64 = spec.rope_tables.iter().map(|t| t.elems()).sum();
    elems.saturating_mul(super::quant::model_dtype(spec, cfg).bytes())
}

/// Weight bytes per pipeline stage from the checkpoint's own tensors (safetensors or GGUF
/// names): embeddings to the first stage, lm_head and the final norm to the last, a layer's
/// tensors to its stage; norms and routers replicated, everything else split over TP.
pub fn exact_stage_bytes(
    weights: &WeightSet,
    spec: &ModelSpec,
    cfg: &VllmConfig,
    ranges: &[Range<u64>],
) -> Vec<u64> {
    let tp = cfg.tensor_parallel_size;
    let last = ranges.len() - 1;
    let mtp = cfg
        .speculative
        .as_ref()
        .is_some_and(|s| s.method.contains("mtp"));
    let mut out = vec![0u64; ranges.len()];
    for t in &weights.tensors {
        let n = t.name.as_str();
        let replicated =
            n.contains("norm") || n.ends_with(".gate.weight") || n.contains("ffn_gate_inp");
        let bytes = if replicated {
            t.bytes
        } else {
            t.bytes.div_ceil(tp)
        };
        let stage = match t.layer() {
            Some(layer) if layer >= spec.n_layer() => {
                // MTP / NextN layers are loaded only with MTP speculative decoding
                if !mtp {
                    continue;
                }
                last
            }
            Some(layer) => ranges
                .iter()
                .position(|r| r.contains(&layer))
                .unwrap_or(last),
            None if n.contains("lm_head") || n == "output.weight" => last,
            None if n.contains("norm") && !n.contains("visual") && !n.contains("vision") => last,
            None => 0,
        };
        out[stage] += bytes;
    }
    if spec.tie_word_embeddings && ranges.len() > 1 {
        // the last stage loads its own copy of the tied embedding as lm_head
        if let Some(emb) = weights
            .tensors
            .iter()
            .find(|t| t.name.contains("embed_tokens") || t.name == "token_embd.weight")
        {
            out[last] += emb.bytes.div_ceil(tp);
        }
    }
    out
}

/// Whether the quantized linear storage of this run is not the plain model dtype.
pub fn describe_scheme(spec: &ModelSpec, cfg: &VllmConfig) -> String {
    let s = WeightScheme::of(spec, cfg);
    match s.linear {
        LinearStorage::Dense { bytes } => format!("{bytes}-byte weights"),
        l => format!(
            "{} linear layers ({}), other tensors {} bytes each",
            l.name(),
            s.quant_name.unwrap_or_default(),
            s.dense_bytes
        ),
    }
}
