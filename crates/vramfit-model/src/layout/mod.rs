//! The tensors of the GGUF that llama.cpp's converter would write for a model, synthesized from a
//! [`ModelSpec`] without downloading anything.
//!
//! [`synthesize`] mirrors two upstream programs at once:
//! - `convert_hf_to_gguf.py` decides *which* tensors exist in the file and which stay F32
//!   (1-D tensors, `*_norm.weight`, biases, the MoE router `ffn_gate_inp`, `ssm_conv1d`, ...);
//! - `src/llama-model.cpp` (`create_tensor` calls per architecture) gives their GGUF names and
//!   shapes in ggml order (`ne[0]` first, the reverse of PyTorch).
//!
//! Read at llama.cpp @007dbbf (2026) with the per-architecture files of `src/models/`; where the
//! layout changed over time the file that builds that part says so.
//!
//! ```
//! use vramfit_model::layout;
//! use vramfit_model::GgmlType;
//! # let spec = vramfit_model::layout::example_llama_spec();
//! let set = layout::synthesize(&spec, GgmlType::BF16);
//! assert!(set.get("blk.0.attn_q.weight").is_some());
//! ```

mod attention;
mod families;
mod ffn;
mod gemma4;
mod recurrent;

use crate::ggml::GgmlType;
use crate::spec::ModelSpec;
use crate::weights::{Tensor, TensorDtype, WeightSet};

pub use families::Family;

/// The tensors the converter writes for `spec`, with the matrices stored as `dtype` (F16, BF16
/// or F32; any other type is treated as F16) and the tensors the converter always keeps in F32
/// (norms, 1-D tensors, biases, routers, conv1d kernels) as F32.
///
/// The order is llama.cpp's load order: `token_embd`, `output_norm`, `output`, then each block.
/// Tied embeddings write no `output.weight` (llama.cpp then duplicates `token_embd` for the
/// output layer, which the engine accounts for). Multi-token-prediction blocks are included
/// where the converter ships them (GLM-4.5 NextN), after the main blocks.
pub fn synthesize(spec: &ModelSpec, dtype: GgmlType) -> WeightSet {
    let dtype = match dtype {
        GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => dtype,
        _ => GgmlType::F16,
    };
    let mut b = Builder::new(dtype);
    families::build(spec, &mut b);
    WeightSet {
        tensors: b.tensors,
        source: format!(
            "synthesized {} layout of {} ({})",
            Family::of(spec).name(),
            spec.id,
            dtype.name()
        ),
    }
}

/// Parameter counts `(total, active)` of the main model (multi-token-prediction blocks left
/// out, as model cards count them). `active` is one token's path: routed experts scaled by
/// `n_expert_used / n_expert`, everything else (attention, shared experts, routers, norms,
/// embeddings and the output head) in full. Tied embeddings count once.
pub fn param_counts(spec: &ModelSpec) -> (u64, u64) {
    let set = synthesize(spec, GgmlType::F16);
    let n_main = spec.n_layer();
    let (used, total_experts) = spec
        .moe
        .as_ref()
        .map(|m| (m.n_expert_used, m.n_expert.max(1)))
        .unwrap_or((1, 1));
    let mut total = 0u64;
    let mut active = 0u64;
    for t in &set.tensors {
        if t.layer().is_some_and(|l| l >= n_main) {
            continue;
        }
        let elems = t.elems();
        total = total.saturating_add(elems);
        if is_routed_expert(&t.name) {
            let share = (elems as u128 * used.min(total_experts) as u128) / total_experts as u128;
            active = active.saturating_add(share as u64);
        } else {
            active = active.saturating_add(elems);
        }
    }
    (total, active)
}

/// The block indices of multi-token-prediction (NextN) layers that [`synthesize`] writes after
/// the main stack (empty when the converter does not ship them). llama.cpp creates these
/// tensors with `TENSOR_SKIP` (llama-model.cpp LLM_ARCH_GLM4_MOE, 2025-08 on): they stay in
/// the file but are not allocated on any device unless MTP decoding loads them.
pub fn nextn_blocks(spec: &ModelSpec) -> std::ops::Range<u64> {
    let start = spec.n_layer();
    if Family::of(spec) == Family::Glm4Moe {
        start..start.saturating_add(spec.n_nextn_layers)
    } else {
        start..start
    }
}

/// True for the stacked routed-expert tensors (`ffn_{gate,up,down}_exps` and their biases).
pub fn is_routed_expert(name: &str) -> bool {
    name.contains("_exps.")
}

/// Collects tensors, deciding each one's stored type the way `convert_hf_to_gguf.py`
/// (`ModelBase.prepare_tensors`) does: F32 for 1-D tensors, anything named `*_norm.weight`,
/// anything not ending in `.weight` (biases, `ssm_a`, `ssm_d`), the MoE routers and the SSM
/// conv kernels; the checkpoint float type for the rest.
pub(crate) struct Builder {
    dtype: GgmlType,
    tensors: Vec<Tensor>,
}

impl Builder {
    fn new(dtype: GgmlType) -> Builder {
        Builder {
            dtype,
            tensors: Vec::new(),
        }
    }

    /// Add a tensor with ggml-order dims; zero-sized tensors (from odd specs) are skipped.
    pub(crate) fn add(&mut self, name: impl Into<String>, dims: &[u64]) {
        let name = name.into();
        if dims.is_empty() || dims.contains(&0) {
            return;
        }
        let ty = if keeps_f32(&name, dims) {
            GgmlType::F32
        } else {
            self.dtype
        };
        self.tensors.push(make_tensor(name, dims.to_vec(), ty));
    }

    /// `blk.{il}.{base}.weight`
    pub(crate) fn blk(&mut self, il: u64, base: &str, dims: &[u64]) {
        self.add(format!("blk.{il}.{base}.weight"), dims);
    }

    /// `blk.{il}.{base}.bias`
    pub(crate) fn blk_bias(&mut self, il: u64, base: &str, dims: &[u64]) {
        self.add(format!("blk.{il}.{base}.bias"), dims);
    }
}

/// The converter's F32 rule (convert_hf_to_gguf.py `prepare_tensors`, the `extra_f32` list).
fn keeps_f32(name: &str, dims: &[u64]) -> bool {
    let n_dims = dims
        .iter()
        .rposition(|&d| d != 1)
        .map(|i| i + 1)
        .unwrap_or(1);
    n_dims <= 1
        || name.ends_with("_norm.weight")
        || !name.ends_with(".weight")
        || name.contains("ffn_gate_inp")
        || name.contains("ssm_conv1d")
        || name.contains("position_embd")
}

/// A tensor of type `ty` with its exact `ggml_nbytes`; shapes that do not fit the type's block
/// (never produced for float types) or overflow fall back to a saturating estimate.
pub(crate) fn make_tensor(name: String, dims: Vec<u64>, ty: GgmlType) -> Tensor {
    let bytes = ty.tensor_bytes(&dims).unwrap_or_else(|| {
        let elems = dims.iter().fold(1u64, |a, &d| a.saturating_mul(d));
        (elems as f64 * ty.bytes_per_elem())
            .ceil()
            .min(u64::MAX as f64) as u64
    });
    Tensor {
        name,
        dims,
        dtype: TensorDtype::Ggml(ty),
        bytes,
    }
}

/// A Llama-3.1-8B spec written by hand (used by the doc example and tests).
#[doc(hidden)]
pub fn example_llama_spec() -> ModelSpec {
    use crate::spec::{ArchFlags, AttentionKind, Dtype, FfnKind, LayerSpec, Provenance};
    let layer = LayerSpec {
        attention: AttentionKind::Full,
        n_head: 32,
        n_head_kv: 8,
        head_dim_k: 128,
        head_dim_v: 128,
        ffn: FfnKind::Dense { n_ff: 14336 },
        kv_shared: false,
        parallel_ssm: None,
    };
    ModelSpec {
        id: "meta-llama/Llama-3.1-8B".into(),
        architecture: "LlamaForCausalLM".into(),
        model_type: "llama".into(),
        n_embd: 4096,
        n_vocab: 128256,
        n_ctx_train: 131072,
        tie_word_embeddings: false,
        dtype: Dtype::Bf16,
        layers: vec![layer; 32],
        moe: None,
        quant: None,
        n_nextn_layers: 0,
        vision_params: 0,
        vision_shape: None,
        rope_tables: vec![crate::spec::RopeTable {
            positions: 131072,
            rotary_dim: 128,
        }],
        arch: ArchFlags {
            gated_mlp: true,
            ..ArchFlags::default()
        },
        provenance: Provenance {
            source: "hand-written".into(),
            defaulted: vec![],
            warnings: vec![],
        },
    }
}
