//! What changes make a llama.cpp launch fit: the context `--fit` would pick (common/fit.cpp,
//! #16653: an unset context is lowered until every device keeps `--fit-target`, 1024 MiB by
//! default, free; never below `--fit-ctx`, 4096), and the smallest single-knob changes.

use super::args::LlamaCppConfig;
use super::{default_ctx, layout, max_context, visible};
use crate::hardware::Hardware;
use vramfit_model::units::MIB;
use vramfit_model::{GgmlType, ModelSpec, WeightSet};

fn margin(cfg: &LlamaCppConfig, d: usize) -> u64 {
    cfg.fit_target_mib
        .get(d)
        .or(cfg.fit_target_mib.last())
        .copied()
        .unwrap_or(1024)
        * MIB
}

fn fits_with_margin(
    spec: &ModelSpec,
    w: &WeightSet,
    cfg: &LlamaCppConfig,
    hw: &Hardware,
    n_ctx: u64,
) -> bool {
    let l = layout(spec, w, cfg, hw, n_ctx);
    visible(cfg, hw)
        .iter()
        .enumerate()
        .all(|(d, g)| l.used(d) + margin(cfg, d) <= g.free_bytes)
}

/// The context `--fit` settles on (a multiple of 256, at least `--fit-ctx`), or None when even
/// that does not fit (llama.cpp then moves layers off the GPU).
pub fn fit_context(
    spec: &ModelSpec,
    w: &WeightSet,
    cfg: &LlamaCppConfig,
    hw: &Hardware,
) -> Option<u64> {
    let min = cfg.fit_ctx.max(256);
    let start = default_ctx(cfg, spec);
    if !fits_with_margin(spec, w, cfg, hw, min) {
        return None;
    }
    let (mut lo, mut hi) = (min / 256, start.max(min) / 256 + 1);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fits_with_margin(spec, w, cfg, hw, mid * 256) {
            lo = mid
        } else {
            hi = mid
        }
    }
    Some(lo * 256)
}

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
    let fits_cfg = |c: &LlamaCppConfig, n_ctx: u64| layout(spec, w, c, hw, n_ctx).fits(gpus);
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
        let nb = super::n_blocks(spec, w);
        let ok = |n: u64| {
            let mut c = cfg.clone();
            c.n_cpu_moe = Some(n);
            fits_cfg(&c, want)
        };
        if ok(nb) {
            let (mut lo, mut hi) = (0u64, nb);
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                if ok(mid) {
                    hi = mid
                } else {
                    lo = mid
                }
            }
            out.push(format!("--n-cpu-moe {hi}: keep the routed experts of the first {hi} layers in host RAM (slower decode)"));
        }
    }
    if !gpus.is_empty() {
        let nb = super::n_blocks(spec, w);
        let ok = |n: u64| {
            let mut c = cfg.clone();
            c.n_gpu_layers = Some(n as i64);
            fits_cfg(&c, want)
        };
        if ok(0) {
            let (mut lo, mut hi) = (0u64, nb + 1);
            if !ok(hi) {
                while hi - lo > 1 {
                    let mid = (lo + hi) / 2;
                    if ok(mid) {
                        lo = mid
                    } else {
                        hi = mid
                    }
                }
                out.push(format!("-ngl {lo}: the most layers that fit on the GPU at -c {want} (the rest run on the CPU)"));
            }
        }
    }
    out
}
