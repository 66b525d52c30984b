//! Loading a model for an engine: the spec (and exact tensors when a header was read) through
//! `vramfit_model::resolve`, and the GGUF tensors llama.cpp will load for a quant name.
//! Shared by `vramfit check` and the solver so that both see the same bytes.

use crate::error::PlanError;
use vramfit_model::resolve::{resolve, ResolveOptions, Resolved};
use vramfit_model::{layout, quant, GgmlType, WeightSet};

/// Resolve a model (local path, HF cache, catalog, Hub) with the environment's options.
pub fn load(model: &str) -> Result<Resolved, PlanError> {
    resolve(model, &ResolveOptions::from_env()).map_err(|e| PlanError::Input(e.to_string()))
}

/// The GGUF tensors llama.cpp will load: read from the file, or predicted for the quant name
/// (`Resolved::gguf_quant`, Q4_K_M when none was named, as llama.cpp's `-hf` does).
pub fn gguf_weights(r: &Resolved) -> Result<WeightSet, PlanError> {
    if let Some(w) = &r.weights {
        if w.tensors
            .iter()
            .any(|t| matches!(t.dtype, vramfit_model::TensorDtype::Ggml(_)))
        {
            return Ok(w.clone());
        }
    }
    let qname = r.gguf_quant.clone().unwrap_or_else(|| "Q4_K_M".into());
    predicted_gguf(r, &qname)
}

/// The tensors of a GGUF of quant `qname` made from the model's full-precision layout.
pub fn predicted_gguf(r: &Resolved, qname: &str) -> Result<WeightSet, PlanError> {
    let parsed = quant::FileType::parse(qname).ok_or_else(|| {
        PlanError::Input(format!(
            "quant '{qname}' is not a llama.cpp quant name: use Q4_K_M, Q8_0, IQ4_XS, F16, ..."
        ))
    })?;
    let base_type = if parsed.ftype.default_type() == GgmlType::BF16 {
        GgmlType::BF16
    } else {
        GgmlType::F16
    };
    let full = layout::synthesize(&r.spec, base_type);
    // community quants of i-quant types are made with an importance matrix (llama-quantize
    // refuses most IQ types without one)
    let imatrix = qname.to_ascii_uppercase().contains("IQ");
    let mut w = quant::predict(&full, &r.spec, parsed.ftype, imatrix);
    w.source = format!("predicted {} from {}", parsed.ftype.name(), r.source);
    Ok(w)
}
