//! New process: a pid that was not on the GPU when watching began takes memory there. Raised once
//! per pid; it clears when the process leaves the GPU.

use super::{AlertKind, Cause, Condition, DetectConfig, Detector};
use crate::series::GpuSeries;
use std::collections::BTreeSet;
use vramfit_model::units::fmt_bytes;

#[derive(Debug, Default)]
pub struct NewProcessDetector {
    /// Pids present at the first sample: the processes the operator started with.
    baseline: Option<BTreeSet<u32>>,
}

impl Detector for NewProcessDetector {
    fn check(&mut self, series: &GpuSeries, _cfg: &DetectConfig) -> Vec<Condition> {
        let g = series.latest();
        let baseline = self
            .baseline
            .get_or_insert_with(|| g.processes.iter().map(|p| p.pid).collect());
        g.processes
            .iter()
            .filter(|p| !baseline.contains(&p.pid))
            .map(|p| Condition {
                kind: AlertKind::NewProcess,
                pid: Some(p.pid),
                cause: Cause::OtherProcesses,
                message: format!(
                    "New process pid {} ({}) appeared on GPU {} and holds {}; {} is left free. Memory another process takes is memory the server cannot grow into. Fix: run it on another GPU (CUDA_VISIBLE_DEVICES) or stop it.",
                    p.pid,
                    p.name,
                    g.gpu,
                    fmt_bytes(p.used_bytes),
                    fmt_bytes(g.free()),
                ),
            })
            .collect()
    }
}
