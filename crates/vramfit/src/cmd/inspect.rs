//! `vramfit inspect MODEL [--json]`: architecture, attention layout in words, parameters total and
//! active, weight bytes by dtype, KV bytes per token for f16 / fp8 / q8_0 / q4_0 caches, recurrent
//! state per sequence, and where each fact came from.

use crate::cmd::check::{gguf_weights, load};
use crate::error::{CliError, CmdResult};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;
use vramfit_engine::cmdline::Command;
use vramfit_engine::vllm;
use vramfit_model::units::{fmt_bytes, fmt_context};
use vramfit_model::{layout, safetensors, GgmlType, ModelSpec, TensorDtype};

#[derive(clap::Args)]
pub struct Args {
    /// A HF repo id, a GGUF repo id (`ORG/NAME-GGUF:Q4_K_M`), a local GGUF, snapshot dir or config.json, or a URL.
    pub model: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Attention {
    kind: &'static str,
    count: u64,
    window: Option<u64>,
}

#[derive(Serialize)]
struct CacheBytes {
    f16: u64,
    fp8: u64,
    q8_0: u64,
    q4_0: u64,
}

#[derive(Serialize)]
struct Report {
    id: String,
    architecture: String,
    model_type: String,
    params: u64,
    active_params: u64,
    layers: u64,
    attention: Vec<Attention>,
    kv_bytes_per_token: CacheBytes,
    kv_bytes_windowed: CacheBytes,
    recurrent_state_bytes_per_seq: u64,
    weights_bytes: u64,
    weights_by_dtype: BTreeMap<String, u64>,
    /// exact (read from headers) or predicted
    weights_source: String,
    source: String,
    n_ctx_train: u64,
    moe: Option<vramfit_model::MoeSpec>,
    quantization: Option<vramfit_model::QuantConfig>,
    defaulted: Vec<String>,
    warnings: Vec<String>,
}

fn cache_bytes(f: impl Fn(f64) -> u64) -> CacheBytes {
    CacheBytes {
        f16: f(2.0),
        fp8: f(1.0),
        q8_0: f(GgmlType::Q8_0.bytes_per_elem()),
        q4_0: f(GgmlType::Q4_0.bytes_per_elem()),
    }
}

/// Weight bytes of the checkpoint as vLLM would load it (dtype and quantization of the config).
fn predicted_checkpoint(spec: &ModelSpec) -> Result<(u64, BTreeMap<String, u64>), CliError> {
    let cmd = Command::parse(&["vllm", "serve", spec.id.as_str()])
        .map_err(|e| CliError::input(e.to_string()))?;
    let cfg = vllm::parse(&cmd, None).map_err(|e| CliError::input(e.to_string()))?;
    let ranges = vec![0..spec.n_layer()];
    let total: u64 = vllm::weights::predicted_stage_bytes(spec, &cfg, &ranges)
        .iter()
        .sum();
    let label = match &spec.quant {
        Some(q) => format!(
            "{}{}",
            q.method,
            q.format
                .as_ref()
                .map(|f| format!(" ({f})"))
                .unwrap_or_default()
        ),
        None => spec.dtype.name().to_string(),
    };
    Ok((total, BTreeMap::from([(label, total)])))
}

pub fn run(args: Args) -> CmdResult {
    let r = load(&args.model)?;
    let spec = &r.spec;
    let (total_params, active_params) = layout::param_counts(spec);
    let (weights_bytes, by_dtype, weights_source, params) = match (&r.weights, &r.gguf_quant) {
        (Some(w), _)
            if w.tensors
                .iter()
                .any(|t| matches!(t.dtype, TensorDtype::Ggml(_))) =>
        {
            (
                w.total_bytes(),
                w.bytes_by_dtype(),
                format!("exact: {}", r.source),
                w.total_elems(),
            )
        }
        (Some(w), _) => (
            w.total_bytes(),
            w.bytes_by_dtype(),
            "exact: safetensors headers".to_string(),
            safetensors::quant::logical_params_with(w, spec.quant.as_ref()),
        ),
        (None, Some(_)) => {
            let w = gguf_weights(&r)?;
            (
                w.total_bytes(),
                w.bytes_by_dtype(),
                w.source.clone(),
                total_params,
            )
        }
        (None, None) => {
            let (t, m) = predicted_checkpoint(spec)?;
            (t, m, "predicted from the config".to_string(), total_params)
        }
    };
    let (conv, ssm) = spec.recurrent_state_elems();
    let report = Report {
        id: spec.id.clone(),
        architecture: spec.architecture.clone(),
        model_type: spec.model_type.clone(),
        params,
        active_params: if spec.is_moe() { active_params } else { params },
        layers: spec.n_layer(),
        attention: spec
            .attention_summary()
            .into_iter()
            .map(|(kind, count, window)| Attention {
                kind,
                count,
                window,
            })
            .collect(),
        kv_bytes_per_token: cache_bytes(|b| spec.kv_bytes_per_token(b)),
        kv_bytes_windowed: cache_bytes(|b| spec.kv_bytes_windowed(b)),
        // llama.cpp keeps recurrent state in f32 (llama-memory-recurrent.cpp)
        recurrent_state_bytes_per_seq: (conv + ssm) * 4,
        weights_bytes,
        weights_by_dtype: by_dtype,
        weights_source,
        source: r.source.clone(),
        n_ctx_train: spec.n_ctx_train,
        moe: spec.moe.clone(),
        quantization: spec.quant.clone(),
        defaulted: spec.provenance.defaulted.clone(),
        warnings: spec.provenance.warnings.clone(),
    };
    if args.json {
        let json =
            serde_json::to_string_pretty(&report).map_err(|e| CliError::input(e.to_string()))?;
        crate::render::emit(&(json + "\n"));
        return Ok(0);
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} ({}, model_type {})",
        report.id, report.architecture, report.model_type
    );
    let _ = writeln!(o, "layers: {} — {}", report.layers, spec.attention_words());
    let b = |x: u64| format!("{:.2}B", x as f64 / 1e9);
    if spec.is_moe() {
        let m = spec.moe.as_ref().expect("moe");
        let _ = writeln!(
            o,
            "parameters: {} total, {} active ({} experts, {} used per token, {} shared)",
            b(report.params),
            b(report.active_params),
            m.n_expert,
            m.n_expert_used,
            m.n_expert_shared
        );
    } else {
        let _ = writeln!(o, "parameters: {}", b(report.params));
    }
    let _ = writeln!(
        o,
        "training context: {} ({})",
        report.n_ctx_train,
        fmt_context(report.n_ctx_train)
    );
    let _ = writeln!(
        o,
        "weights: {} ({})",
        fmt_bytes(report.weights_bytes),
        report.weights_source
    );
    for (dt, by) in &report.weights_by_dtype {
        let _ = writeln!(o, "  {dt:<24} {}", fmt_bytes(*by));
    }
    let kv = &report.kv_bytes_per_token;
    let _ = writeln!(
        o,
        "KV per token of context (full-attention and MLA layers):"
    );
    let _ = writeln!(
        o,
        "  f16 {}  fp8 {}  q8_0 {}  q4_0 {}",
        fmt_bytes(kv.f16),
        fmt_bytes(kv.fp8),
        fmt_bytes(kv.q8_0),
        fmt_bytes(kv.q4_0)
    );
    if report.kv_bytes_windowed.f16 > 0 {
        let w = &report.kv_bytes_windowed;
        let _ = writeln!(
            o,
            "KV of the windowed layers once the context passes their window, per sequence:"
        );
        let _ = writeln!(
            o,
            "  f16 {}  fp8 {}  q8_0 {}  q4_0 {}",
            fmt_bytes(w.f16),
            fmt_bytes(w.fp8),
            fmt_bytes(w.q8_0),
            fmt_bytes(w.q4_0)
        );
    }
    if report.recurrent_state_bytes_per_seq > 0 {
        let _ = writeln!(
            o,
            "recurrent state per sequence (f32): {}",
            fmt_bytes(report.recurrent_state_bytes_per_seq)
        );
    }
    let _ = writeln!(o, "source: {}", report.source);
    if !report.defaulted.is_empty() {
        let _ = writeln!(o, "defaults taken: {}", report.defaulted.join(", "));
    }
    for w in &report.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    crate::render::emit(&o);
    Ok(0)
}
