//! Spike: used memory jumps above its recent baseline (median of the last 30 s, the newest 3 s
//! left out) by at least `spike_fraction` of the GPU. When the engine's running requests or KV
//! usage rose at the same time, the spike follows load (batch activations, KV); the alert says so
//! and points at the concurrency knobs. It clears when memory falls back under half the jump
//! threshold above baseline, or when the baseline catches up with a new level. When another
//! process than the server took most of the jump, the alert names it (pid) instead.

use super::{engine_load_between, top_grower, AlertKind, Cause, Condition, DetectConfig, Detector};
use crate::forecast::fit_line;
use crate::series::GpuSeries;
use vramfit_model::units::{fmt_bytes, MIB};

/// Baseline window: from 30 s back to 3 s back.
const BASELINE_FROM_S: f64 = 30.0;
const BASELINE_TO_S: f64 = 3.0;

#[derive(Debug, Default)]
pub struct SpikeDetector {
    active: bool,
}

fn median(v: &mut [u64]) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    Some(v[v.len() / 2])
}

impl Detector for SpikeDetector {
    fn check(&mut self, series: &GpuSeries, cfg: &DetectConfig) -> Vec<Condition> {
        let g = series.latest();
        let now = series.now();
        let window = || {
            series
                .since(now - BASELINE_FROM_S)
                .take_while(|p| p.t < now - BASELINE_TO_S)
        };
        let mut base: Vec<u64> = window().map(|p| p.used).collect();
        if base.len() < 5 {
            self.active = false;
            return vec![];
        }
        // The level memory would be at now without a spike: the median, or, when the baseline is
        // itself a clean climb (a leak), that climb carried forward, so a leak is not a spike.
        let mut baseline = median(&mut base).expect("not empty");
        if let Some(f) = fit_line(window().map(|p| (p.t, p.used as f64))) {
            if f.r2 >= 0.8 && f.slope > 0.0 {
                baseline = (f.fitted_now + f.slope * BASELINE_TO_S).max(0.0) as u64;
            }
        }
        let jump = g.used_bytes.saturating_sub(baseline);
        let threshold = ((g.total_bytes as f64 * cfg.spike_fraction) as u64).max(256 * MIB);
        self.active = if self.active {
            jump >= threshold / 2
        } else {
            jump >= threshold
        };
        if !self.active {
            return vec![];
        }
        let (kv0, run0) = engine_load_between(series, now - BASELINE_FROM_S, now - BASELINE_TO_S);
        let e = g.engine.as_ref();
        let (kv1, run1) = (
            e.and_then(|e| e.kv_cache_usage),
            e.and_then(|e| e.requests_running),
        );
        let kv_up = kv0.zip(kv1).filter(|(a, b)| b - a >= 0.1);
        let run_up = run0
            .zip(run1.map(|r| r as f64))
            .filter(|(a, b)| b - a >= 2.0_f64.max(0.25 * a));
        let mut load = Vec::new();
        if let Some((a, b)) = run_up {
            load.push(format!("running requests {a:.0} -> {b:.0}"));
        }
        if let Some((a, b)) = kv_up {
            load.push(format!("KV usage {:.0}% -> {:.0}%", a * 100.0, b * 100.0));
        }
        // Who took the memory, measured against the middle of the baseline window.
        let grower = top_grower(series, now - BASELINE_FROM_S / 2.0)
            .filter(|gr| gr.other && gr.bytes as f64 >= 0.5 * jump as f64);
        let (cause, why, fix) = if let Some(gr) = &grower {
            (
                Cause::OtherProcesses,
                format!(
                    "It is pid {} ({}), {}, that took {}",
                    gr.pid,
                    gr.name,
                    if gr.appeared {
                        "a process that just arrived"
                    } else {
                        "not the server"
                    },
                    fmt_bytes(gr.bytes)
                ),
                "run that process on another GPU (CUDA_VISIBLE_DEVICES) or stop it",
            )
        } else if !load.is_empty() {
            (
                Cause::Concurrency,
                format!("It follows engine load ({}): bigger batches need more activation and KV memory", load.join(", ")),
                "cap concurrency: --max-num-seqs / --max-num-batched-tokens (vLLM), --max-running-requests / --chunked-prefill-size (SGLang), -np / -ub (llama.cpp)",
            )
        } else {
            (
                Cause::ActivationPeak,
                "The engine's load did not change with it (or is not watched: pass --engine URL), so it is a transient allocation peak".to_string(),
                "leave more headroom for peaks: a lower memory fraction, or smaller prefill chunks / micro-batches",
            )
        };
        let message = format!(
            "GPU {} memory jumped {} above its recent level of {} to {} ({} free). {why}. Fix: {fix}.",
            g.gpu,
            fmt_bytes(jump),
            fmt_bytes(baseline),
            fmt_bytes(g.used_bytes),
            fmt_bytes(g.free()),
        );
        vec![Condition {
            kind: AlertKind::Spike,
            pid: grower.map(|g| g.pid),
            cause,
            message,
        }]
    }
}
