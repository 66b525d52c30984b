//! The smallest single changes to a SGLang launch, in SGLang's own flags, that make it start:
//! each candidate is planned again with [`super::plan`] and kept only when SGLang would then
//! start. `check` adds them to a failing plan; `fit` searches its own knobs and does not call this.

use super::SglangConfig;
use crate::hardware::Hardware;
use crate::plan::{MemoryPlan, Verdict};
use vramfit_model::{ModelSpec, WeightSet};

/// The highest `--mem-fraction-static` offered: SGLang's own docs advise staying below ~0.9 so
/// that activations and CUDA graphs keep room; 0.95 is the most any fix here suggests.
const MAX_FRACTION: f64 = 0.95;

fn setting(p: &MemoryPlan, key: &str) -> Option<f64> {
    p.settings
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Flags (each a single change) that make the failing launch `p` start, best first, at most four.
pub fn suggest(
    spec: &ModelSpec,
    weights: Option<&WeightSet>,
    cfg: &SglangConfig,
    hw: &Hardware,
    p: &MemoryPlan,
) -> Vec<String> {
    if p.verdict == Verdict::Fits {
        return Vec::new();
    }
    let starts = |c: &SglangConfig| {
        let q = super::plan(spec, weights, c, hw);
        (q.verdict == Verdict::Fits).then_some(q)
    };
    let mut out = Vec::new();
    let context = setting(p, "context_length").unwrap_or(0.0) as u64;
    if let Some(f0) = setting(p, "mem_fraction_static") {
        let step = |i: u32, up: bool| {
            let d = f64::from(i) / 100.0;
            ((if up { f0 + d } else { f0 - d }) * 100.0).round() / 100.0
        };
        if p.kv_cache.tokens == 0 {
            // "Not enough memory. Please try to increase --mem-fraction-static": the smallest
            // fraction whose pool holds one request of the context length; failing that, the
            // fraction with the largest pool that starts, with the context it holds (a pool of a
            // few hundred tokens is no fix)
            let mut best: Option<(f64, u64)> = None;
            for f in (1..=50)
                .map(|i| step(i, true))
                .take_while(|&f| f <= MAX_FRACTION + 1e-9)
            {
                let c = SglangConfig {
                    mem_fraction_static: Some(f),
                    ..cfg.clone()
                };
                if let Some(q) = starts(&c) {
                    let t = q.kv_cache.tokens;
                    if t >= context {
                        best = None;
                        out.push(format!("--mem-fraction-static {f:.2}"));
                        break;
                    }
                    if best.is_none_or(|(_, b)| t > b) {
                        best = Some((f, t));
                    }
                }
            }
            if let Some((f, t)) = best {
                let len = t / 1024 * 1024;
                if len >= 4096 {
                    out.push(format!(
                        "--mem-fraction-static {f:.2} --context-length {len}"
                    ));
                }
            }
        } else {
            // the pool came up but activations and graphs outside it do not fit: a smaller
            // static fraction leaves them room
            for f in (1..=40).map(|i| step(i, false)).take_while(|&f| f >= 0.4) {
                let c = SglangConfig {
                    mem_fraction_static: Some(f),
                    ..cfg.clone()
                };
                if starts(&c).is_some() {
                    out.push(format!("--mem-fraction-static {f:.2}"));
                    break;
                }
            }
        }
    }
    let gpus = cfg
        .visible_devices
        .as_ref()
        .map(|v| v.len())
        .unwrap_or(hw.gpus.len()) as u64;
    let mut tp = cfg.tp_size * 2;
    while tp * cfg.pp_size.max(1) <= gpus {
        let c = SglangConfig {
            tp_size: tp,
            ..cfg.clone()
        };
        if starts(&c).is_some() {
            out.push(format!("--tp-size {tp}"));
            break;
        }
        tp *= 2;
    }
    if !cfg.kv_cache_dtype.starts_with("fp8") && p.kv_cache.tokens > 0 {
        let c = SglangConfig {
            kv_cache_dtype: "fp8_e4m3".into(),
            ..cfg.clone()
        };
        if starts(&c).is_some() {
            out.push("--kv-cache-dtype fp8_e4m3".into());
        }
    }
    out.truncate(4);
    out
}
