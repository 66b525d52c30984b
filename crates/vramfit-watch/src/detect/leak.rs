//! Leak: used memory climbs in a straight line for a while (a leak, or allocator fragmentation
//! that keeps reserving new segments). Judged on the adaptive-window fit of [`crate::forecast`]:
//! it must last `leak_min_span_s`, fit a line well (R² >= 0.9), and grow by at least 1% of the
//! GPU (or 128 MiB) over its span. It clears when the line no longer holds (R² < 0.7 or the slope
//! is lost in the noise).

use super::{engine_load_between, AlertKind, Cause, Condition, DetectConfig, Detector};
use crate::forecast::{self, fmt_duration, LinearFit, TREND_R2};
use crate::series::GpuSeries;
use vramfit_model::units::{fmt_bytes, MIB};

#[derive(Debug, Default)]
pub struct LeakDetector {
    active: bool,
}

fn is_climb(f: &LinearFit, total: u64, cfg: &DetectConfig) -> bool {
    let growth = f.slope * f.span_s;
    f.span_s + 0.5 >= cfg.leak_min_span_s
        && f.r2 >= TREND_R2
        && f.slope > 2.0 * f.slope_se
        && growth >= (total as f64 * 0.01).max(128.0 * MIB as f64)
}

fn still_climbing(f: &LinearFit) -> bool {
    f.r2 >= 0.7 && f.slope > f.slope_se && f.slope > 0.0
}

impl Detector for LeakDetector {
    fn check(&mut self, series: &GpuSeries, cfg: &DetectConfig) -> Vec<Condition> {
        let total = series.total();
        let fit = forecast::trend(series);
        self.active = match &fit {
            Some(f) if self.active => still_climbing(f),
            Some(f) => is_climb(f, total, cfg),
            None => false,
        };
        let (true, Some(f)) = (self.active, fit) else {
            return vec![];
        };
        let g = series.latest();
        let fc = forecast::forecast(g.gpu, Some(&f), total);
        let when = match (fc.time_to_oom_s, fc.low_s, fc.high_s) {
            (Some(t), Some(lo), Some(hi)) => {
                format!(
                    "at this rate it runs out in {} ({}-{})",
                    fmt_duration(t),
                    fmt_duration(lo),
                    fmt_duration(hi)
                )
            }
            (Some(t), _, None) => {
                format!("at this rate it runs out in {} (or later)", fmt_duration(t))
            }
            _ => "it has not slowed down".to_string(),
        };
        // Does the engine's load explain the climb? Compare the first and last thirds of the fit.
        let now = series.now();
        let third = f.span_s / 3.0;
        let (kv0, run0) = engine_load_between(series, now - f.span_s, now - 2.0 * third);
        let (kv1, run1) = engine_load_between(series, now - third, now + 1.0);
        let kv_rise = kv0.zip(kv1).map(|(a, b)| b - a).unwrap_or(0.0);
        let run_rise = run0
            .zip(run1)
            .map(|(a, b)| (b - a) / a.max(1.0))
            .unwrap_or(0.0);
        let (cause, why, fix) = if kv_rise >= 0.15 || run_rise >= 0.5 {
            (
                Cause::KvCache,
                "it follows the engine's KV usage, so the KV cache grows with the load (a dynamic cache, as in transformers, or a growing batch)",
                "cap the KV cache: a fixed --max-model-len / max_new_tokens, fewer concurrent requests, or a static cache",
            )
        } else {
            (
                Cause::Fragmentation,
                "the engine's load does not explain it, so it is a leak or allocator fragmentation",
                "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation; if it still climbs, plan a restart before the forecast and look for tensors kept alive between requests",
            )
        };
        let message = format!(
            "GPU {} memory has climbed steadily for {} at {}/s (fit R² {:.2}), now {} of {}; {when}. {}{}. Fix: {fix}.",
            g.gpu,
            fmt_duration(f.span_s),
            fmt_bytes(f.slope.max(0.0) as u64),
            f.r2,
            fmt_bytes(g.used_bytes),
            fmt_bytes(total),
            why[..1].to_uppercase(),
            &why[1..],
        );
        vec![Condition {
            kind: AlertKind::Leak,
            pid: None,
            cause,
            message,
        }]
    }
}
