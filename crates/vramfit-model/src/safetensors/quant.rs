//! What each tensor of a (possibly quantized) checkpoint is, and how many parameters it holds
//! once unpacked. The bytes are exact from the header anyway; this adds the *logical* view that
//! `inspect` shows: packed integer words expanded to their 4-bit weights, scales and zero points
//! set apart, embeddings and norms named.
//!
//! Packing rules, by producer:
//! - AWQ (AutoAWQ `awq/modules/linear/gemm.py` `WQLinear_GEMM`): `qweight` I32 `[in, out/(32/bits)]`,
//!   `qzeros` I32 `[in/group, out/(32/bits)]`, `scales` F16 `[in/group, out]`; no `g_idx`.
//! - GPTQ (AutoGPTQ `nn_modules/qlinear/qlinear_cuda_old.py`, GPTQModel): `qweight` I32
//!   `[in/(32/bits), out]`, `qzeros` I32, `scales` F16 `[in/group, out]`, `g_idx` I32 `[in]`.
//! - FP8 (transformers `quantizers/quantizer_finegrained_fp8.py`, DeepSeek-V3, vLLM `fp8.py`):
//!   `weight` F8_E4M3 plus `weight_scale` (per tensor/channel) or `weight_scale_inv` (128×128
//!   blocks), optionally `input_scale`.
//! - compressed-tensors (`compressors/quantized_compressors/pack_quantized.py`): `weight_packed`
//!   I32 holding 32/bits values per word along the input dim, `weight_scale`, `weight_zero_point`,
//!   `weight_shape` (I64 `[2]`, the unpacked shape); NVFP4 (`nvfp4_quantized.py`): `weight_packed`
//!   U8 with two e2m1 values per byte, `weight_scale` F8_E4M3 per 16-value group,
//!   `weight_global_scale` and `input_global_scale` F32.
//! - ModelOpt NVFP4 (NVIDIA Model-Optimizer `export/quant_utils.py`): `weight` U8 (two e2m1 per byte),
//!   `weight_scale` F8_E4M3, `weight_scale_2` and `input_scale` F32.
//! - bitsandbytes 4-bit (`bitsandbytes/functional.py` `QuantState.as_dict`): `weight` U8 `[n/2, 1]`
//!   (two nf4/fp4 codes per byte) with `weight.absmax`, `weight.quant_map`,
//!   `weight.nested_absmax`, `weight.nested_quant_map`, `weight.quant_state.bitsandbytes__nf4`;
//!   8-bit (`bitsandbytes/nn/modules.py` `Linear8bitLt`): `weight` I8 with `SCB` and `weight_format`.
//! - MXFP4 (gpt-oss; transformers `integrations/mxfp4.py`, openai/gpt-oss `torch/weights.py`):
//!   `*_blocks` U8 `[..., out, in/32, 16]` (16 bytes = 32 e2m1 values) with `*_scales` U8 (E8M0)
//!   `[..., out, in/32]`; the original checkpoint names them `*.blocks` / `*.scales`.

use crate::spec::QuantConfig;
use crate::weights::{Tensor, WeightSet};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// What a tensor is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TensorRole {
    /// matmul weights (dense or packed), experts included
    Weight,
    /// quantization metadata: scales, zero points, g_idx, absmax, quant maps, unpacked shapes
    QuantAux,
    /// token embeddings and the output head (`lm_head`)
    Embedding,
    /// normalization weights and biases
    Norm,
    /// biases, convolution kernels, SSM parameters, buffers
    Other,
}

/// Who packed a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum QuantScheme {
    Awq,
    Gptq,
    Fp8,
    /// compressed-tensors integer packing (`pack-quantized`)
    CompressedTensors,
    /// e2m1 values with F8_E4M3 group-16 scales (compressed-tensors or ModelOpt)
    Nvfp4,
    #[serde(rename = "bitsandbytes-4bit")]
    BitsAndBytes4bit,
    #[serde(rename = "bitsandbytes-8bit")]
    BitsAndBytes8bit,
    Mxfp4,
}

/// One tensor's classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TensorClass {
    pub role: TensorRole,
    pub scheme: Option<QuantScheme>,
    /// parameters once unpacked (0 for quantization metadata)
    pub logical_params: u64,
}

/// Per-role totals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoleSummary {
    pub role: TensorRole,
    pub tensors: u64,
    pub bytes: u64,
    pub logical_params: u64,
}

/// What `inspect` shows about a checkpoint's quantization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QuantSummary {
    /// schemes found, in a stable order
    pub schemes: Vec<QuantScheme>,
    pub roles: Vec<RoleSummary>,
    pub logical_params: u64,
    pub bytes: u64,
}

/// Leaf names that are always quantization metadata, whoever wrote them.
const AUX_LEAVES: &[&str] = &[
    "weight_scale",
    "weight_scale_inv",
    "weight_scale_2",
    "input_scale",
    "output_scale",
    "weight_zero_point",
    "weight_global_scale",
    "input_global_scale",
    "weight_shape",
    "weight_g_idx",
    "k_scale",
    "v_scale",
    "q_scale",
    "absmax",
    "quant_map",
    "nested_absmax",
    "nested_quant_map",
    "bitsandbytes__nf4",
    "bitsandbytes__fp4",
    "SCB",
    "weight_format",
];

/// Without a config or a shape to tell, packed integer words are taken to hold 4-bit values:
/// the default `bits` of AutoAWQ, AutoGPTQ and compressed-tensors' W4A16 presets.
const DEFAULT_BITS: u64 = 4;

/// Unpacked parameter count of a checkpoint (inference from shapes; 4-bit where unknown).
pub fn logical_params(set: &WeightSet) -> u64 {
    logical_params_with(set, None)
}

/// Unpacked parameter count, taking the packed width from `quant.bits` where shapes cannot tell.
pub fn logical_params_with(set: &WeightSet, quant: Option<&QuantConfig>) -> u64 {
    classify(set, quant)
        .iter()
        .fold(0u64, |acc, c| acc.saturating_add(c.logical_params))
}

/// Classify every tensor of `set` (same order as `set.tensors`).
pub fn classify(set: &WeightSet, quant: Option<&QuantConfig>) -> Vec<TensorClass> {
    let by_name: HashMap<&str, &Tensor> =
        set.tensors.iter().map(|t| (t.name.as_str(), t)).collect();
    let bits_hint = quant
        .and_then(|q| q.bits)
        .map(u64::from)
        .filter(|b| (1..=32).contains(b));
    set.tensors
        .iter()
        .map(|t| classify_one(t, &by_name, bits_hint))
        .collect()
}

/// Totals by role, the schemes found, logical parameters and bytes.
pub fn quant_summary(set: &WeightSet, quant: Option<&QuantConfig>) -> QuantSummary {
    let classes = classify(set, quant);
    let mut roles: BTreeMap<TensorRole, RoleSummary> = BTreeMap::new();
    let mut schemes: Vec<QuantScheme> = Vec::new();
    for (t, c) in set.tensors.iter().zip(&classes) {
        let r = roles.entry(c.role).or_insert(RoleSummary {
            role: c.role,
            tensors: 0,
            bytes: 0,
            logical_params: 0,
        });
        r.tensors += 1;
        r.bytes = r.bytes.saturating_add(t.bytes);
        r.logical_params = r.logical_params.saturating_add(c.logical_params);
        if let Some(s) = c.scheme.filter(|s| !schemes.contains(s)) {
            schemes.push(s);
        }
    }
    schemes.sort();
    QuantSummary {
        schemes,
        roles: roles.into_values().collect(),
        logical_params: classes
            .iter()
            .fold(0u64, |acc, c| acc.saturating_add(c.logical_params)),
        bytes: set
            .tensors
            .iter()
            .fold(0u64, |acc, t| acc.saturating_add(t.bytes)),
    }
}

/// PyTorch-order shape (WeightSet dims are reversed).
fn shape(t: &Tensor) -> Vec<u64> {
    t.dims.iter().rev().copied().collect()
}

fn split_leaf(name: &str) -> (&str, &str) {
    name.rsplit_once('.').unwrap_or(("", name))
}

fn sibling<'a>(by_name: &HashMap<&str, &'a Tensor>, base: &str, leaf: &str) -> Option<&'a Tensor> {
    let key = if base.is_empty() {
        leaf.to_string()
    } else {
        format!("{base}.{leaf}")
    };
    by_name.get(key.as_str()).copied()
}

fn dtype(t: &Tensor) -> String {
    t.dtype.name()
}

fn classify_one(
    t: &Tensor,
    by_name: &HashMap<&str, &Tensor>,
    bits_hint: Option<u64>,
) -> TensorClass {
    let (base, leaf) = split_leaf(&t.name);
    let elems = t.elems();
    let aux = |scheme| TensorClass {
        role: TensorRole::QuantAux,
        scheme,
        logical_params: 0,
    };
    let packed = |scheme, per_elem: u64| TensorClass {
        role: TensorRole::Weight,
        scheme: Some(scheme),
        logical_params: elems.saturating_mul(per_elem),
    };
    let has = |l: &str| sibling(by_name, base, l).is_some();

    // bitsandbytes hangs its state under the weight's own name: `x.weight.absmax`,
    // `x.weight.quant_state.bitsandbytes__nf4`
    if AUX_LEAVES.contains(&leaf) {
        let scheme = aux_scheme(leaf, base, by_name);
        return aux(scheme);
    }
    // AWQ / GPTQ
    if matches!(leaf, "qzeros" | "scales" | "g_idx") && has("qweight") {
        return aux(Some(if has("g_idx") {
            QuantScheme::Gptq
        } else {
            QuantScheme::Awq
        }));
    }
    if leaf == "qweight" {
        return classify_qweight(t, base, by_name, bits_hint);
    }
    // MXFP4: `gate_up_proj_blocks` + `gate_up_proj_scales`, or `mlp1_weight.blocks` + `.scales`
    if let Some(stem) = leaf.strip_suffix("_scales") {
        if has(&format!("{stem}_blocks")) {
            return aux(Some(QuantScheme::Mxfp4));
        }
    }
    if leaf == "scales" && has("blocks") {
        return aux(Some(QuantScheme::Mxfp4));
    }
    let is_blocks = leaf
        .strip_suffix("_blocks")
        .is_some_and(|stem| has(&format!("{stem}_scales")))
        || (leaf == "blocks" && has("scales"));
    if is_blocks && dtype(t) == "U8" {
        return packed(QuantScheme::Mxfp4, 2);
    }
    // compressed-tensors
    if leaf == "weight_packed" {
        return match dtype(t).as_str() {
            "U8" => packed(QuantScheme::Nvfp4, 2),
            "I32" | "U32" => TensorClass {
                role: TensorRole::Weight,
                scheme: Some(QuantScheme::CompressedTensors),
                logical_params: unpacked_by_bits(elems, bits_hint),
            },
            _ => packed(QuantScheme::CompressedTensors, 1),
        };
    }
    let role = role_of(&t.name, base, leaf);
    let own = |l: &str| by_name.contains_key(format!("{}.{l}", t.name).as_str());
    let scheme = match dtype(t).as_str() {
        // bitsandbytes 4-bit: U8 codes, two per byte, state under `<name>.absmax` etc.
        "U8" if own("absmax")
            || own("quant_state.bitsandbytes__nf4")
            || own("quant_state.bitsandbytes__fp4") =>
        {
            return packed(QuantScheme::BitsAndBytes4bit, 2)
        }
        // ModelOpt NVFP4: U8 `weight` beside an F8_E4M3 `weight_scale`
        "U8" if leaf == "weight"
            && sibling(by_name, base, "weight_scale").is_some_and(|s| dtype(s) == "F8_E4M3") =>
        {
            return packed(QuantScheme::Nvfp4, 2)
        }
        "I8" if leaf == "weight" && has("SCB") => Some(QuantScheme::BitsAndBytes8bit),
        "F8_E4M3" | "F8_E5M2" if leaf == "weight" => Some(QuantScheme::Fp8),
        "I8" if leaf == "weight" && has("weight_scale") => Some(QuantScheme::CompressedTensors),
        _ => None,
    };
    TensorClass {
        role,
        scheme,
        logical_params: elems,
    }
}

fn aux_scheme(leaf: &str, base: &str, by_name: &HashMap<&str, &Tensor>) -> Option<QuantScheme> {
    let has = |l: &str| sibling(by_name, base, l).is_some();
    match leaf {
        "absmax" | "quant_map" | "nested_absmax" | "nested_quant_map" | "bitsandbytes__nf4"
        | "bitsandbytes__fp4" => Some(QuantScheme::BitsAndBytes4bit),
        "SCB" | "weight_format" => Some(QuantScheme::BitsAndBytes8bit),
        "weight_global_scale" | "input_global_scale" | "weight_scale_2" => Some(QuantScheme::Nvfp4),
        _ if has("weight_packed") => {
            let packed = sibling(by_name, base, "weight_packed").map(dtype);
            Some(if packed.as_deref() == Some("U8") {
                QuantScheme::Nvfp4
            } else {
                QuantScheme::CompressedTensors
            })
        }
        _ => match sibling(by_name, base, "weight").map(dtype).as_deref() {
            Some("F8_E4M3" | "F8_E5M2") => Some(QuantScheme::Fp8),
            Some("U8") => Some(QuantScheme::Nvfp4),
            Some("I8") => Some(QuantScheme::CompressedTensors),
            _ => None,
        },
    }
}

/// AWQ packs along the output dim, GPTQ along the input dim. Where the shapes tell, the
/// unpacked size is read off them (AWQ: `qweight` rows × `scales` cols; GPTQ: `g_idx` length ×
/// `qweight` cols); otherwise each I32 word holds 32/bits values, bits from the config, else 4.
fn classify_qweight(
    t: &Tensor,
    base: &str,
    by_name: &HashMap<&str, &Tensor>,
    bits_hint: Option<u64>,
) -> TensorClass {
    let q = shape(t);
    let scales = sibling(by_name, base, "scales").map(shape);
    let g_idx = sibling(by_name, base, "g_idx").map(shape);
    let elems = t.elems();
    // 1 to 32 values per word, or the shapes do not describe this qweight
    let plausible = |n: u64| (n >= elems && n <= elems.saturating_mul(32)).then_some(n);
    let (scheme, exact) = match (q.as_slice(), scales.as_deref(), g_idx.as_deref()) {
        ([_, cols], _, Some([in_features])) => (
            QuantScheme::Gptq,
            plausible(in_features.saturating_mul(*cols)),
        ),
        ([rows, cols], Some([_, out]), None) if out != cols => {
            (QuantScheme::Awq, plausible(rows.saturating_mul(*out)))
        }
        ([_, _], Some([_, _]), None) => (QuantScheme::Gptq, None),
        _ => (QuantScheme::Awq, None),
    };
    TensorClass {
        role: TensorRole::Weight,
        scheme: Some(scheme),
        logical_params: exact.unwrap_or_else(|| unpacked_by_bits(elems, bits_hint)),
    }
}

/// Values in `words` 32-bit words of `bits`-bit values (4 where nothing says).
fn unpacked_by_bits(words: u64, bits_hint: Option<u64>) -> u64 {
    words.saturating_mul(32) / bits_hint.unwrap_or(DEFAULT_BITS)
}

/// The role of a parameter tensor, from its module name (HF naming across architectures).
fn role_of(name: &str, base: &str, leaf: &str) -> TensorRole {
    let module = base.rsplit('.').next().unwrap_or(base);
    let embedding = [
        "embed_tokens",
        "wte",
        "word_embeddings",
        "tok_embeddings",
        "embed_in",
        "lm_head",
        "embed_out",
    ];
    if embedding
        .iter()
        .any(|e| module == *e || name.starts_with(&format!("{e}.")))
    {
        return TensorRole::Embedding;
    }
    let m = module.to_ascii_lowercase();
    if m.contains("norm") || m.starts_with("ln") || m.ends_with("_ln") || m == "ln_f" {
        return TensorRole::Norm;
    }
    match leaf {
        "weight" | "weight_packed" | "qweight" => TensorRole::Weight,
        // fused MoE expert tensors (`experts.gate_up_proj`, `experts.down_proj`)
        l if l.ends_with("_proj") => TensorRole::Weight,
        _ => TensorRole::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weights::TensorDtype;

    /// A tensor from its PyTorch shape.
    fn t(name: &str, dtype: &str, shape: &[u64], bits: u64) -> Tensor {
        let elems: u64 = shape.iter().product();
        Tensor {
            name: name.into(),
            dims: shape.iter().rev().copied().collect(),
            dtype: TensorDtype::Named(dtype.into()),
            bytes: (elems * bits).div_ceil(8),
        }
    }

    fn set(tensors: Vec<Tensor>) -> WeightSet {
        WeightSet {
            tensors,
            source: "test".into(),
        }
    }

    fn config(bits: u32) -> QuantConfig {
        QuantConfig {
            method: "compressed-tensors".into(),
            bits: Some(bits),
            group_size: None,
            format: None,
            ignore: vec![],
        }
    }

    #[test]
    fn compressed_tensors_pack_width_comes_from_the_config() {
        // W8A16 pack-quantized: 4 int8 values per I32 word along the input dim of a 64×64 weight
        let s = set(vec![
            t("l.weight_packed", "I32", &[64, 16], 32),
            t("l.weight_scale", "BF16", &[64, 1], 16),
            t("l.weight_shape", "I64", &[2], 64),
        ]);
        assert_eq!(logical_params_with(&s, Some(&config(8))), 64 * 64);
        // without a config, the 4-bit default: 8 per word
        assert_eq!(logical_params(&s), 64 * 16 * 8);
        let c = classify(&s, None);
        assert_eq!(c[0].scheme, Some(QuantScheme::CompressedTensors));
        assert_eq!(c[2].role, TensorRole::QuantAux);
    }

    #[test]
    fn modelopt_nvfp4_and_bnb_int8_and_native_f4() {
        let s = set(vec![
            t("a.weight", "U8", &[64, 32], 8),
            t("a.weight_scale", "F8_E4M3", &[64, 4], 8),
            t("a.weight_scale_2", "F32", &[], 32),
            t("a.input_scale", "F32", &[], 32),
            t("b.weight", "I8", &[64, 64], 8),
            t("b.SCB", "F32", &[64], 32),
            t("c.weight", "F4", &[64, 64], 4),
        ]);
        let c = classify(&s, None);
        assert_eq!(
            (c[0].scheme, c[0].logical_params),
            (Some(QuantScheme::Nvfp4), 4096)
        );
        assert_eq!(c[1].scheme, Some(QuantScheme::Nvfp4));
        assert_eq!(
            (c[4].scheme, c[4].logical_params),
            (Some(QuantScheme::BitsAndBytes8bit), 4096)
        );
        assert_eq!(c[5].role, TensorRole::QuantAux);
        assert_eq!((c[6].logical_params, s.tensors[6].bytes), (4096, 2048));
        assert_eq!(logical_params(&s), 3 * 4096);
    }

    #[test]
    fn gptq_without_g_idx_uses_the_bits_hint() {
        // GPTQ packs along the input dim: qweight [in/pack, out]; scales share the out dim
        let s = set(vec![
            t("l.qweight", "I32", &[16, 64], 32),
            t("l.qzeros", "I32", &[1, 16], 32),
            t("l.scales", "F16", &[1, 64], 16),
        ]);
        let c = classify(&s, None);
        assert_eq!(
            (c[0].scheme, c[0].logical_params),
            (Some(QuantScheme::Gptq), 16 * 64 * 8)
        );
        let mut q = config(8);
        q.method = "gptq".into();
        assert_eq!(logical_params_with(&s, Some(&q)), 16 * 64 * 4);
    }

    #[test]
    fn three_bit_gptq_reads_the_unpacked_size_off_g_idx() {
        // 3-bit: 32 input rows fit in 3 words; in = 96, out = 8
        let s = set(vec![
            t("l.qweight", "I32", &[9, 8], 32),
            t("l.scales", "F16", &[1, 8], 16),
            t("l.g_idx", "I32", &[96], 32),
        ]);
        assert_eq!(logical_params(&s), 96 * 8);
    }

    #[test]
    fn roles_from_module_names() {
        let s = set(vec![
            t("transformer.wte.weight", "BF16", &[100, 8], 16),
            t("transformer.h.0.ln_1.weight", "BF16", &[8], 16),
            t("model.layers.0.mixer.A_log", "F32", &[8], 32),
            t(
                "model.layers.0.mlp.experts.gate_up_proj",
                "BF16",
                &[2, 8, 16],
                16,
            ),
            t("model.layers.0.self_attn.q_proj.bias", "BF16", &[8], 16),
            t("model.layers.0.self_attn.q_norm.weight", "BF16", &[8], 16),
        ]);
        let roles: Vec<TensorRole> = classify(&s, None).iter().map(|c| c.role).collect();
        use TensorRole::*;
        assert_eq!(roles, [Embedding, Norm, Other, Weight, Other, Norm]);
        let sum = quant_summary(&s, None);
        assert_eq!(sum.logical_params, s.total_elems());
        assert!(sum.schemes.is_empty());
    }
}
