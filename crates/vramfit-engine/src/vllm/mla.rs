//! The extra decode-path tensors vLLM builds beside an MLA model's checkpoint weights, by
//! release (split out of weights.rs; the stage sums there add them).

use super::args::VllmConfig;
use super::quant::{LinearStorage, WeightScheme};
use std::ops::Range;
use vramfit_model::{AttentionKind, LayerSpec, ModelSpec};

/// Bytes per stage of the decode-path matrices vLLM's MLA backend builds from the loaded
/// weights in `process_weights_after_loading` (one rank):
/// - 0.7.1 (PR #12528, MLA decode) up to 0.8.0: "absorbed weights for decode and another copy
///   of raw weights for prefill" (vllm/attention/backends/mla/utils.py): W_Q_UK (q_lora or
///   hidden × heads·kv_lora) and W_UV_O (heads·kv_lora × hidden), requantized to FP8 with the
///   checkpoint's group shape when it is FP8, else in the model dtype; W_QR (q_lora × heads·rope)
///   in the model dtype; and the dequantized kv_b_proj (W_UK, W_UV) when it is quantized.
///   DeepSeek-R1 TP8 on v0.7.3 loads 83.88 GiB per GPU where v0.11.2 loads 79.74
///   (pub-20903468563, rhaiis-deepseek-r1-0528): these copies are 4.2 GiB of it.
/// - 0.8.0 on (PR #14770 "MLA get rid of materialization"): only W_UV and W_UK_T, views of the
///   dequantized kv_b_proj, a copy when kv_b_proj is quantized.
/// - before 0.7.1 MLA models ran as MHA on the checkpoint's own tensors: nothing.
pub fn mla_decode_copies(spec: &ModelSpec, cfg: &VllmConfig, ranges: &[Range<u64>]) -> Vec<u64> {
    use super::version::Version;
    let scheme = WeightScheme::of(spec, cfg);
    let tp = cfg.tensor_parallel_size;
    let act = scheme.dense_bytes;
    let absorbed = cfg.version >= Version::new(0, 7, 1) && cfg.version < Version::new(0, 8, 0);
    let any = cfg.version >= Version::new(0, 7, 1);
    let per_layer = |i: u64, l: &LayerSpec| -> u64 {
        let AttentionKind::Mla {
            kv_lora_rank,
            rope_dim,
            nope_dim,
            v_head_dim,
        } = &l.attention
        else {
            return 0;
        };
        if !any {
            return 0;
        }
        let p = format!("model.layers.{i}.self_attn");
        let heads = l.n_head.div_ceil(tp);
        let fp8 = |s: LinearStorage| {
            matches!(s, LinearStorage::Fp8Block { .. } | LinearStorage::Fp8Tensor)
        };
        let kv_b = scheme.linear_for(&format!("{p}.kv_b_proj"), false);
        let dequant_kv_b = if matches!(kv_b, LinearStorage::Dense { .. }) {
            0
        } else {
            kv_lora_rank * heads * (nope_dim + v_head_dim) * act
        };
        if !absorbed {
            return dequant_kv_b;
        }
        // the same q_lora_rank rule as `layer_bytes`
        let (q_in, q_name) = if spec.n_embd >= 4096 {
            (1536, "q_b_proj")
        } else {
            (spec.n_embd, "q_proj")
        };
        let stored = |s: LinearStorage, n_in: u64, n_out: u64| {
            if fp8(s) {
                s.bytes(n_in, n_out)
            } else {
                n_in * n_out * act
            }
        };
        let q_uk = stored(
            scheme.linear_for(&format!("{p}.{q_name}"), false),
            q_in,
            heads * kv_lora_rank,
        );
        let uv_o = stored(
            scheme.linear_for(&format!("{p}.o_proj"), false),
            heads * kv_lora_rank,
            spec.n_embd,
        );
        q_uk + uv_o + q_in * heads * rope_dim * act + dequant_kv_b
    };
    ranges
        .iter()
        .map(|r| {
            r.clone()
                .filter_map(|i| spec.layers.get(i as usize).map(|l| per_layer(i, l)))
                .sum()
        })
        .collect()
}
