//! The pipeline's middle: ticks in, a [`Report`] per interval out. It keeps each GPU's history,
//! runs the detectors and the forecast, and turns conditions into alerts: an alert is raised in
//! the interval its condition first holds, and raised again only after the condition has cleared.

use crate::detect::headroom::HeadroomDetector;
use crate::detect::leak::LeakDetector;
use crate::detect::new_process::NewProcessDetector;
use crate::detect::spike::SpikeDetector;
use crate::detect::{AlertKind, Cause, Condition, DetectConfig, Detector};
use crate::forecast::{self, Forecast};
use crate::sample::{EngineSample, GpuSample, ProcessSample, Tick};
use crate::series::GpuSeries;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// History kept per GPU (the forecast looks back up to 15 minutes; the chart shows 5).
pub const HISTORY_S: f64 = 900.0;
/// At 10 Hz, 15 minutes is 9000 points; the cap bounds memory whatever the trace's rate.
pub const HISTORY_MAX_POINTS: usize = 9_100;

/// An alert as `--json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alert {
    pub kind: AlertKind,
    pub gpu: u32,
    pub pid: Option<u32>,
    pub cause: Cause,
    pub message: String,
}

/// One GPU in a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuStatus {
    pub gpu: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub total_bytes: u64,
    pub used_bytes: u64,
    pub free_bytes: u64,
    pub processes: Vec<ProcessSample>,
    pub engine: Option<EngineSample>,
}

/// What one sample interval yields (`--json` prints one per line).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub t: f64,
    pub gpus: Vec<GpuStatus>,
    /// Alerts raised in this interval.
    pub alerts: Vec<Alert>,
    pub forecast: Vec<Forecast>,
    /// Every alert whose condition holds now (raised now or earlier); not printed in `--json`.
    #[serde(skip)]
    pub active: Vec<Alert>,
}

struct GpuWatch {
    series: GpuSeries,
    detectors: Vec<Box<dyn Detector + Send>>,
    forecast: Forecast,
}

/// Ticks in, reports out.
pub struct Monitor {
    cfg: DetectConfig,
    gpus: BTreeMap<u32, GpuWatch>,
    active: BTreeSet<(AlertKind, u32, Option<u32>)>,
}

impl Monitor {
    pub fn new(cfg: DetectConfig) -> Monitor {
        Monitor {
            cfg,
            gpus: BTreeMap::new(),
            active: BTreeSet::new(),
        }
    }

    pub fn config(&self) -> &DetectConfig {
        &self.cfg
    }

    /// A GPU's history, for the chart.
    pub fn series(&self, gpu: u32) -> Option<&GpuSeries> {
        self.gpus.get(&gpu).map(|w| &w.series)
    }

    pub fn observe(&mut self, tick: &Tick) -> Report {
        let mut conditions: Vec<(u32, Condition)> = Vec::new();
        let mut gpus = Vec::new();
        let mut forecasts = Vec::new();
        for g in &tick.gpus {
            let w = self.gpus.entry(g.gpu).or_insert_with(|| GpuWatch {
                series: GpuSeries::new(g, HISTORY_S, HISTORY_MAX_POINTS),
                detectors: vec![
                    Box::new(LeakDetector::default()),
                    Box::new(SpikeDetector::default()),
                    Box::new(HeadroomDetector::default()),
                    Box::new(NewProcessDetector::default()),
                ],
                forecast: Forecast::none(g.gpu),
            });
            if w.series.now() < g.t {
                w.series.push(g);
            }
            for d in w.detectors.iter_mut() {
                conditions.extend(
                    d.check(&w.series, &self.cfg)
                        .into_iter()
                        .map(|c| (g.gpu, c)),
                );
            }
            w.forecast = forecast::forecast_after(
                g.gpu,
                w.series.trend().as_ref(),
                g.total_bytes,
                self.cfg.leak_min_span_s - 0.5,
            );
            forecasts.push(w.forecast.clone());
            gpus.push(status(g));
        }
        let mut alerts = Vec::new();
        let mut active = Vec::new();
        let mut now_active = BTreeSet::new();
        for (gpu, c) in conditions {
            let key = (c.kind, gpu, c.pid);
            let alert = Alert {
                kind: c.kind,
                gpu,
                pid: c.pid,
                cause: c.cause,
                message: c.message,
            };
            if !self.active.contains(&key) {
                alerts.push(alert.clone());
            }
            now_active.insert(key);
            active.push(alert);
        }
        // A GPU missing from this tick keeps its alerts until it reports again.
        let seen: BTreeSet<u32> = tick.gpus.iter().map(|g| g.gpu).collect();
        now_active.extend(self.active.iter().filter(|k| !seen.contains(&k.1)).copied());
        self.active = now_active;
        Report {
            t: tick.t,
            gpus,
            alerts,
            forecast: forecasts,
            active,
        }
    }
}

fn status(g: &GpuSample) -> GpuStatus {
    GpuStatus {
        gpu: g.gpu,
        name: g.name.clone(),
        total_bytes: g.total_bytes,
        used_bytes: g.used_bytes,
        free_bytes: g.free(),
        processes: g.processes.clone(),
        engine: g.engine.clone(),
    }
}
