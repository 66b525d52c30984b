//! Predicting the tensor types of a GGUF quant that is not downloaded.
//!
//! A GGUF "quant" such as Q4_K_M is a *mix*: llama-quantize picks a ggml type per tensor from
//! the file type, the tensor's role, its layer and the model's shape. [`predict`] ports that
//! decision (`llama_tensor_get_type` and helpers in llama.cpp's `src/llama-quant.cpp`, read at
//! @007dbbf, 2026) so that predicted bytes match real files. Where the rules changed over time
//! the code says so.
//!
//! ```
//! use vramfit_model::{layout, quant::{self, FileType}, GgmlType};
//! # let spec = layout::example_llama_spec();
//! let f16 = layout::synthesize(&spec, GgmlType::F16);
//! let q4 = quant::predict(&f16, &spec, FileType::parse("Q4_K_M").unwrap().ftype, false);
//! assert_eq!(q4.get("output.weight").unwrap().dtype.name(), "q6_K");
//! ```

mod category;
mod ftype;
mod rules;

pub use ftype::{FileType, ParsedFileType};
pub use rules::QuantRules;

use crate::ggml::GgmlType;
use crate::layout::make_tensor;
use crate::spec::ModelSpec;
use crate::weights::{Tensor, TensorDtype, WeightSet};
use rules::QuantState;

/// The tensor set as llama-quantize would write it for `ftype`. `set` is the unquantized file
/// (as from [`crate::layout::synthesize`] or a real F16/BF16 GGUF header); `imatrix` says
/// whether an importance matrix was used (it changes a few rules, e.g. IQ4_XS `ffn_down`).
///
/// The returned tensors keep `set`'s order; their dtypes and bytes are the predicted ones.
pub fn predict(set: &WeightSet, spec: &ModelSpec, ftype: FileType, imatrix: bool) -> WeightSet {
    predict_with(set, spec, ftype, imatrix, QuantRules::Current)
}

/// [`predict`] with a chosen generation of the rules (for files made by older llama.cpp).
pub fn predict_with(
    set: &WeightSet,
    spec: &ModelSpec,
    ftype: FileType,
    imatrix: bool,
    rules: QuantRules,
) -> WeightSet {
    // llama-quantize walks `ml.weights_map`, ordered by layer number and then by name
    // (llama-model-loader.h `weight_name_comparer`); the attn_v counter depends on that order.
    let mut order: Vec<usize> = (0..set.tensors.len()).collect();
    order.sort_by(|&a, &b| {
        let (ta, tb) = (&set.tensors[a], &set.tensors[b]);
        let la = gguf_layer(&ta.name);
        let lb = gguf_layer(&tb.name);
        la.cmp(&lb).then_with(|| ta.name.cmp(&tb.name))
    });

    let mut qs = QuantState::new(set, spec, ftype, imatrix, rules);
    let default_type = ftype.default_type();
    let mut out: Vec<Option<Tensor>> = vec![None; set.tensors.len()];
    for &i in &order {
        let t = &set.tensors[i];
        let new_type = match current_type(t) {
            Some(_) if category::allows_quantization(t) => qs.tensor_type(t, default_type),
            Some(cur) => cur,
            None => {
                out[i] = Some(t.clone());
                continue;
            }
        };
        out[i] = Some(make_tensor(t.name.clone(), t.dims.clone(), new_type));
    }
    WeightSet {
        tensors: out.into_iter().flatten().collect(),
        source: format!(
            "predicted {}{}",
            ftype.name(),
            if imatrix { " (imatrix)" } else { "" }
        ),
    }
}

/// `blk.N.` layer as llama.cpp's sscanf reads it, -1 for tensors outside the blocks.
fn gguf_layer(name: &str) -> i64 {
    name.strip_prefix("blk.")
        .and_then(|r| r.split('.').next())
        .and_then(|n| n.parse::<i64>().ok())
        .unwrap_or(-1)
}

fn current_type(t: &Tensor) -> Option<GgmlType> {
    match &t.dtype {
        TensorDtype::Ggml(g) => Some(*g),
        TensorDtype::Named(n) => match n.to_ascii_uppercase().as_str() {
            "F32" => Some(GgmlType::F32),
            "F16" => Some(GgmlType::F16),
            "BF16" => Some(GgmlType::BF16),
            _ => None,
        },
    }
}

/// Bytes CUDA allocates for `t` in a model buffer: quantized tensors whose row length is not a
/// multiple of 512 get one extra partial row of padding (ggml-cuda.cu
/// `ggml_backend_cuda_buffer_type_get_alloc_size`, `MATRIX_ROW_PADDING` 512 in common.cuh).
/// The buffer then aligns each tensor to 128 bytes, which the engine adds per buffer.
pub fn cuda_padded_bytes(t: &Tensor) -> u64 {
    let TensorDtype::Ggml(ty) = &t.dtype else {
        return t.bytes;
    };
    let ne0 = t.dims.first().copied().unwrap_or(0);
    const MATRIX_ROW_PADDING: u64 = 512;
    if !ty.is_quantized() || ne0 % MATRIX_ROW_PADDING == 0 {
        return t.bytes;
    }
    let pad_elems = MATRIX_ROW_PADDING - ne0 % MATRIX_ROW_PADDING;
    let pad = ty.row_bytes(pad_elems).unwrap_or_else(|| {
        // a partial block rounds up, as ggml_row_size does for whole blocks
        pad_elems.div_ceil(ty.block_elems()) * ty.block_bytes()
    });
    t.bytes.saturating_add(pad)
}
