//! What changes make a llama.cpp launch fit when the engine's own `--fit` ([`super::autofit`])
//! does not: the smallest single-knob changes.

use super::args::LlamaCppConfig;
use super::{default_ctx, layout_prepared, max_context, prepare, visible};
use crate::hardware::Hardware;
use crate::search::{boundary, largest_fitting};
use vramfit_model::{GgmlType, ModelSpec, WeightSet};

/// The smallest changes that make the launch fit, as flags with a reason.
pub fn suggestions(
    spec: &ModelSpec,
    w: &WeightSet,
    cfg: &LlamaCppConfig,
    hw: &Hardware,
    max_ctx: u64,
) -> Vec<String> {
    let mut out = Vec::new();
    let want = default_ctx(cfg, spec);
    let gpus = visible(cfg, hw);
    let pw = prepare(spec, w);
    let fits_cfg =
        |c: &LlamaCppConfig, n_ctx: u64| layout_prepared(spec, &pw, c, hw, n_ctx).fits(gpus);
    if max_ctx >= 256 && max_ctx < want {
        out.push(format!(
            "-c {max_ctx}: the largest context that fits with the other settings"
        ));
    }
    if cfg.type_k == GgmlType::F16 && cfg.type_v == GgmlType::F16 {
        let mut q = cfg.clone();
        q.type_k = GgmlType::Q8_0;
        q.type_v = GgmlType::Q8_0;
        q.flash_attn = Some(super::args::FlashAttn::On);
        if fits_cfg(&q, want) {
            out.push(format!(
                "-ctk q8_0 -ctv q8_0 -fa on: halves the KV cache and keeps -c {want}"
            ));
        } else {
            let m = max_context(spec, w, &q, hw, spec.n_ctx_train.max(want));
            if m > max_ctx {
                out.push(format!(
                    "-ctk q8_0 -ctv q8_0 -fa on -c {m}: a q8_0 KV cache fits {m} tokens"
                ));
            }
        }
    }
    if spec.is_moe() && !gpus.is_empty() {
        let nb = pw.n_blocks;
        let ok = |n: u64| {
            let mut c = cfg.clone();
            c.n_cpu_moe = Some(n);
            fits_cfg(&c, want)
        };
        if ok(nb) {
            // 0 is not probed: the launch as given did not fit
            let n = boundary(nb, 0, 1, ok);
            out.push(format!("--n-cpu-moe {n}: keep the routed experts of the first {n} layers in host RAM (slower decode)"));
        }
    }
    if !gpus.is_empty() {
        let nb = pw.n_blocks;
        let ok = |n: u64| {
            let mut c = cfg.clone();
            c.n_gpu_layers = Some(n as i64);
            fits_cfg(&c, want)
        };
        if let Some(n) = largest_fitting(0, nb + 1, 1, ok).filter(|n| *n < nb + 1) {
            out.push(format!("-ngl {n}: the most layers that fit on the GPU at -c {want} (the rest run on the CPU)"));
        }
    }
    out
}
