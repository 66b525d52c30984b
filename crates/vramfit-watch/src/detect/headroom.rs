//! Headroom: free memory under the threshold. Clears once free is back above 1.25x the
//! threshold, so a GPU hovering at the line does not flap. The fix depends on why: memory still
//! climbing (a budget will not help), other processes, or the server's own budget.

use super::{largest_process, top_grower, AlertKind, Cause, Condition, DetectConfig, Detector};
use crate::forecast::{self, fmt_duration};
use crate::series::GpuSeries;
use vramfit_model::units::fmt_bytes;

#[derive(Debug, Default)]
pub struct HeadroomDetector {
    active: bool,
}

impl Detector for HeadroomDetector {
    fn check(&mut self, series: &GpuSeries, cfg: &DetectConfig) -> Vec<Condition> {
        let g = series.latest();
        let free = g.free();
        let threshold = cfg.headroom_for(g.total_bytes);
        self.active = if self.active {
            (free as f64) < threshold as f64 * 1.25
        } else {
            free < threshold
        };
        if !self.active {
            return vec![];
        }
        let biggest = largest_process(series);
        let others = g
            .processes
            .iter()
            .filter(|p| Some(p.pid) != biggest.map(|b| b.pid))
            .map(|p| p.used_bytes)
            .fold(0u64, u64::saturating_add);
        let trend = series.trend();
        let climbing = forecast::forecast_after(
            g.gpu,
            trend.as_ref(),
            g.total_bytes,
            cfg.leak_min_span_s - 0.5,
        )
        .time_to_oom_s;
        // Who did the climbing: when it is another process, that process is the cause.
        let other_grew = trend
            .and_then(|f| top_grower(series, series.now() - f.span_s))
            .is_some_and(|gr| gr.other);
        let (cause, fix) = if let (Some(tto), false) = (climbing, other_grew) {
            (
                Cause::Fragmentation,
                format!(
                    "memory is still climbing and runs out in about {} at this rate; a smaller budget will not stop it: restart the server before then and find the growth (see the leak alert)",
                    fmt_duration(tto)
                ),
            )
        } else if other_grew || others > g.total_bytes / 10 {
            (
                Cause::OtherProcesses,
                format!(
                    "other processes hold {}: move them to another GPU (CUDA_VISIBLE_DEVICES) or stop them",
                    fmt_bytes(others)
                ),
            )
        } else {
            (
                Cause::KvCache,
                "give the server a smaller budget: lower --gpu-memory-utilization (vLLM), --mem-fraction-static (SGLang), or the context/KV size (-c, --max-model-len)".to_string(),
            )
        };
        let holder = biggest
            .map(|p| {
                format!(
                    " Largest holder: pid {} ({}) with {}.",
                    p.pid,
                    p.name,
                    fmt_bytes(p.used_bytes)
                )
            })
            .unwrap_or_default();
        let message = format!(
            "GPU {} has {} free ({:.1}% of {}), under the {} headroom; the next allocation peak can run out of memory.{holder} Fix: {fix}.",
            g.gpu,
            fmt_bytes(free),
            100.0 * free as f64 / g.total_bytes.max(1) as f64,
            fmt_bytes(g.total_bytes),
            fmt_bytes(threshold),
        );
        vec![Condition {
            kind: AlertKind::Headroom,
            pid: None,
            cause,
            message,
        }]
    }
}
