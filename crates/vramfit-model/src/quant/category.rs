//! Tensor roles and the tensors llama-quantize leaves alone or must give a smaller block,
//! from llama.cpp `src/llama-quant.cpp` @007dbbf (`tensor_get_category`,
//! `tensor_allows_quantization`, `tensor_type_fallback`).

use super::QuantRules;
use crate::ggml::GgmlType;
use crate::weights::Tensor;

/// Broad tensor roles the rules key on (`enum class tensor_category`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Category {
    TokenEmbd,
    AttnQ,
    AttnV,
    AttnK,
    AttnQkv,
    AttnKvB,
    AttnOutput,
    FfnUp,
    FfnGate,
    FfnDown,
    Output,
    Other,
}

impl Category {
    /// `tensor_get_category`: substring tests in this order.
    pub(crate) fn of(name: &str) -> Category {
        if name == "output.weight" {
            Category::Output
        } else if name == "token_embd.weight" || name == "per_layer_token_embd.weight" {
            Category::TokenEmbd
        } else if name.contains("attn_qkv.weight") {
            Category::AttnQkv
        } else if name.contains("attn_kv_b.weight") {
            Category::AttnKvB
        } else if name.contains("attn_v.weight") {
            Category::AttnV
        } else if name.contains("attn_k.weight") {
            Category::AttnK
        } else if name.contains("attn_q.weight") {
            Category::AttnQ
        } else if name.contains("attn_output.weight") {
            Category::AttnOutput
        } else if name.contains("ffn_up") {
            Category::FfnUp
        } else if name.contains("ffn_gate") {
            Category::FfnGate
        } else if name.contains("ffn_down") {
            Category::FfnDown
        } else {
            Category::Other
        }
    }

    /// `category_is_attn_v`: the V-like projections that get more bits.
    pub(crate) fn is_attn_v_like(self) -> bool {
        matches!(
            self,
            Category::AttnV | Category::AttnQkv | Category::AttnKvB
        )
    }
}
/// Name fragments of tensors llama-quantize never quantizes (`tensor_allows_quantization`).
const NEVER_QUANTIZED: &[&str] = &[
    "_norm.weight",
    "ffn_gate_inp.weight",
    "ffn_gate_tid2eid.weight",
    "altup",
    "laurel",
    "per_layer_model_proj",
    "ssm_conv1d",
    "shortconv.conv.weight",
    "indexer.k_proj.weight",
    "indexer.q_proj.weight",
    "time_mix_first.weight",
    "time_mix_w0.weight",
    "time_mix_w1.weight",
    "time_mix_w2.weight",
    "time_mix_v0.weight",
    "time_mix_v1.weight",
    "time_mix_v2.weight",
    "time_mix_a0.weight",
    "time_mix_a1.weight",
    "time_mix_a2.weight",
    "time_mix_g1.weight",
    "time_mix_g2.weight",
    "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight",
    "attn_rel_b.weight",
    ".position_embd",
    ".patch_embd",
    ".patch_merger",
    ".rel_pos",
];

/// Only 2-D and 3-D `*weight` tensors are quantized, minus norms, routers, position
/// embeddings, SSM conv kernels and a list of small special tensors.
pub(crate) fn allows_quantization(t: &Tensor) -> bool {
    // ggml_n_dims: trailing dimensions of 1 do not count
    let n_dims = t
        .dims
        .iter()
        .rposition(|&d| d != 1)
        .map(|i| i + 1)
        .unwrap_or(1);
    if n_dims < 2 || !t.name.ends_with("weight") {
        return false;
    }
    if t.name == "position_embd.weight" || t.name == "token_types.weight" {
        return false;
    }
    !NEVER_QUANTIZED.iter().any(|frag| t.name.contains(frag))
}
/// `tensor_type_fallback`: a row that is not a whole number of blocks takes a type with a
/// smaller block, and F16 when even that does not fit.
pub(crate) fn fallback(t: &Tensor, target: GgmlType, rules: QuantRules) -> GgmlType {
    use GgmlType as G;
    let ncols = t.dims.first().copied().unwrap_or(0);
    if ncols % target.block_elems() == 0 {
        return target;
    }
    let ret = match target {
        G::IQ1_S
        | G::IQ1_M
        | G::IQ2_XXS
        | G::IQ2_XS
        | G::IQ2_S
        | G::IQ3_XXS
        | G::IQ3_S
        | G::IQ4_XS => G::IQ4_NL,
        G::Q2_K | G::Q3_K if rules == QuantRules::Legacy => G::IQ4_NL,
        G::Q2_0 | G::Q2_K | G::Q3_K | G::TQ1_0 | G::TQ2_0 => G::Q4_0,
        G::Q4_K => G::Q5_0,
        G::Q5_K => G::Q5_1,
        G::Q6_K => G::Q8_0,
        // upstream aborts the quantization here ("no tensor type fallback"); F16 is what a
        // file that exists would have to use
        _ => G::F16,
    };
    if ncols % ret.block_elems() != 0 {
        G::F16
    } else {
        ret
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories() {
        assert_eq!(Category::of("blk.3.attn_v.weight"), Category::AttnV);
        assert_eq!(Category::of("blk.3.attn_qkv.weight"), Category::AttnQkv);
        assert_eq!(Category::of("blk.3.attn_k_b.weight"), Category::Other);
        assert_eq!(
            Category::of("blk.3.ffn_down_exps.weight"),
            Category::FfnDown
        );
        assert_eq!(
            Category::of("blk.3.ffn_gate_shexp.weight"),
            Category::FfnGate
        );
        assert_eq!(Category::of("output.weight"), Category::Output);
    }

    #[test]
    fn fallback_types() {
        let t = |ne0: u64| Tensor {
            name: "x.weight".into(),
            dims: vec![ne0, 8],
            dtype: crate::weights::TensorDtype::Ggml(GgmlType::F16),
            bytes: 0,
        };
        assert_eq!(
            fallback(&t(128), GgmlType::Q4_K, QuantRules::Current),
            GgmlType::Q5_0
        );
        assert_eq!(
            fallback(&t(128), GgmlType::Q6_K, QuantRules::Current),
            GgmlType::Q8_0
        );
        assert_eq!(
            fallback(&t(128), GgmlType::IQ4_XS, QuantRules::Current),
            GgmlType::IQ4_NL
        );
        assert_eq!(
            fallback(&t(80), GgmlType::Q4_K, QuantRules::Current),
            GgmlType::F16
        );
        assert_eq!(
            fallback(&t(256), GgmlType::Q4_K, QuantRules::Current),
            GgmlType::Q4_K
        );
        assert_eq!(
            fallback(&t(0), GgmlType::Q4_K, QuantRules::Current),
            GgmlType::Q4_K
        );
        assert_eq!(
            fallback(&t(128), GgmlType::Q3_K, QuantRules::Current),
            GgmlType::Q4_0
        );
        assert_eq!(
            fallback(&t(128), GgmlType::Q3_K, QuantRules::Legacy),
            GgmlType::IQ4_NL
        );
    }
}
