//! Leak: used memory climbs in a straight line for a while (a leak, or allocator fragmentation
//! that keeps reserving new segments). Judged on the adaptive-window fit of [`crate::forecast`]:
//! it must last `leak_min_span_s`, fit a line well (R² >= 0.9), and grow by at least 1% of the
//! GPU (or 128 MiB) over its span. It clears when the line no longer holds (R² < 0.7 or the slope
//! is lost in the noise). The message says who grew (per-process memory) and whether the engine's
//! KV usage moves with it (correlation >= 0.8): other process, KV cache, or leak/fragmentation.

use super::{kv_correlation, top_grower, AlertKind, Cause, Condition, DetectConfig, Detector};
use crate::forecast::{self, fmt_duration, LinearFit, TREND_R2};
use crate::series::GpuSeries;
use vramfit_model::units::{fmt_bytes, MIB};

#[derive(Debug, Default)]
pub struct LeakDetector {
    active: bool,
}

/// A climb is called a leak once its slope exceeds this many standard errors.
const LEAK_SLOPE_SE: f64 = 8.0;

fn is_climb(f: &LinearFit, total: u64, cfg: &DetectConfig) -> bool {
    let growth = f.slope * f.span_s;
    f.span_s + 0.5 >= cfg.leak_min_span_s
        && f.r2 >= TREND_R2
        // the slope known to within an eighth: the forecast the alert carries is then within
        // about 20 % (two standard errors of the rate), not a guess from the first wiggle
        && f.slope > LEAK_SLOPE_SE * f.slope_se
        && growth >= (total as f64 * 0.01).max(128.0 * MIB as f64)
}

fn still_climbing(f: &LinearFit) -> bool {
    f.r2 >= 0.7 && f.slope > f.slope_se && f.slope > 0.0
}

impl Detector for LeakDetector {
    fn check(&mut self, series: &GpuSeries, cfg: &DetectConfig) -> Vec<Condition> {
        let total = series.total();
        let fit = series.trend();
        self.active = match &fit {
            Some(f) if self.active => still_climbing(f),
            Some(f) => is_climb(f, total, cfg),
            None => false,
        };
        let (true, Some(f)) = (self.active, fit) else {
            return vec![];
        };
        let g = series.latest();
        let now = series.now();
        let growth = f.slope * f.span_s;
        let grower =
            top_grower(series, now - f.span_s).filter(|gr| gr.bytes as f64 >= 0.5 * growth);
        // A process that arrived within the window and did most of the climbing is loading, not
        // leaking: the new-process alert speaks for it.
        if grower.as_ref().is_some_and(|gr| gr.appeared) {
            self.active = false;
            return vec![];
        }
        let fc = forecast::forecast_after(g.gpu, Some(&f), total, cfg.leak_min_span_s - 0.5);
        let when = match (fc.time_to_oom_s, fc.low_s, fc.high_s) {
            (Some(t), Some(lo), Some(hi)) => format!(
                "at this rate it runs out in {} ({}-{})",
                fmt_duration(t),
                fmt_duration(lo),
                fmt_duration(hi)
            ),
            (Some(t), _, None) => {
                format!("at this rate it runs out in {} (or later)", fmt_duration(t))
            }
            _ => "it has not slowed down".to_string(),
        };
        let who = grower
            .as_ref()
            .map(|gr| {
                format!(
                    " pid {} ({}) grew by {}.",
                    gr.pid,
                    gr.name,
                    fmt_bytes(gr.bytes)
                )
            })
            .unwrap_or_default();
        let corr = kv_correlation(series, now - f.span_s);
        let (cause, why, fix) = if grower.as_ref().is_some_and(|gr| gr.other) {
            (
                Cause::OtherProcesses,
                "The growth is in another process than the server",
                "find out what that process does; move it to another GPU (CUDA_VISIBLE_DEVICES) or stop it",
            )
        } else if corr.is_some_and(|c| c >= 0.8) {
            (
                Cause::KvCache,
                "It rises with the engine's KV usage, so the KV cache grows with the load (a dynamic cache, as in transformers)",
                "cap the KV cache: a fixed --max-model-len / max_new_tokens, fewer concurrent requests, or a static cache",
            )
        } else {
            (
                Cause::Fragmentation,
                "The engine's load does not explain it, so it is a leak or allocator fragmentation",
                "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation; if it still climbs, plan a restart before the forecast and look for tensors kept alive between requests",
            )
        };
        let message = format!(
            "GPU {} memory has climbed steadily for {} at {}/s (fit R² {:.2}), now {} of {}; {when}.{who} {why}. Fix: {fix}.",
            g.gpu,
            fmt_duration(f.span_s),
            fmt_bytes(f.slope.max(0.0) as u64),
            f.r2,
            fmt_bytes(g.used_bytes),
            fmt_bytes(total),
        );
        vec![Condition {
            kind: AlertKind::Leak,
            pid: None,
            cause,
            message,
        }]
    }
}
