//! Reports converted into what the dashboard draws.

use crate::forecast::fmt_duration;
use crate::monitor::{Alert, Monitor, Report};
use std::collections::VecDeque;
use vramfit_model::units::{fmt_bytes, GIB};

/// Seconds of history on the chart, and of forecast drawn ahead of now.
pub const CHART_PAST_S: f64 = 240.0;
pub const CHART_AHEAD_S: f64 = 60.0;
/// Alerts kept for the alert pane.
const ALERT_LOG: usize = 50;

#[derive(Debug, Clone, PartialEq)]
pub struct GpuRow {
    pub gpu: u32,
    pub label: String,
    pub ratio: f64,
    pub usage: String,
    pub kv: Option<String>,
    pub oom: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProcessRow {
    pub pid: u32,
    pub name: String,
    pub used: String,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct EngineView {
    pub kv_ratio: Option<f64>,
    pub running: Option<u64>,
    pub waiting: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChartView {
    /// (t, GiB) history of the selected GPU.
    pub used: Vec<(f64, f64)>,
    /// The forecast line from now, clipped at total.
    pub forecast: Vec<(f64, f64)>,
    pub total_gib: f64,
    pub x_bounds: [f64; 2],
}

/// Everything one frame shows.
#[derive(Debug, Clone, PartialEq)]
pub struct DashboardView {
    pub title: String,
    pub gpus: Vec<GpuRow>,
    pub selected: usize,
    pub chart: ChartView,
    pub processes: Vec<ProcessRow>,
    pub engine: EngineView,
    /// Newest first: "t=123s GPU 0 leak: ...".
    pub alerts: Vec<String>,
    pub status: String,
}

/// Keeps the state that outlives one report: the alert log and the selected GPU.
#[derive(Debug, Default)]
pub struct ViewState {
    pub selected: usize,
    /// Set once the user picks a GPU; until then the view follows the latest alert.
    pub pinned: bool,
    log: VecDeque<String>,
}

fn alert_line(t: f64, a: &Alert) -> String {
    let pid = a.pid.map(|p| format!(" pid {p}")).unwrap_or_default();
    format!(
        "t={:.0}s GPU {} {}{pid}: {}",
        t,
        a.gpu,
        a.kind.as_str(),
        a.message
    )
}

impl ViewState {
    /// Builds the frame for `report`, remembering its alerts.
    /// Takes in every report, drawn or not: logs its alerts and, until the user picks a GPU,
    /// follows the GPU of the latest alert.
    pub fn record(&mut self, report: &Report) {
        for a in &report.alerts {
            self.log.push_front(alert_line(report.t, a));
        }
        self.log.truncate(ALERT_LOG);
        if let (false, Some(a)) = (self.pinned, report.alerts.last()) {
            self.selected = report
                .gpus
                .iter()
                .position(|g| g.gpu == a.gpu)
                .unwrap_or(self.selected);
        }
    }

    /// Builds the frame for `report` (already passed to [`ViewState::record`]).
    pub fn view(
        &mut self,
        source: &str,
        monitor: &Monitor,
        report: &Report,
        status: &str,
    ) -> DashboardView {
        if report.gpus.is_empty() {
            self.selected = 0;
        } else {
            self.selected = self.selected.min(report.gpus.len() - 1);
        }
        let gpus = report
            .gpus
            .iter()
            .map(|g| {
                let fc = report.forecast.iter().find(|f| f.gpu == g.gpu);
                let oom = match fc.and_then(|f| f.time_to_oom_s) {
                    Some(s) => format!("OOM in {}", fmt_duration(s)),
                    None => "no OOM trend".to_string(),
                };
                GpuRow {
                    gpu: g.gpu,
                    label: format!("GPU {} {}", g.gpu, g.name.as_deref().unwrap_or("")),
                    ratio: (g.used_bytes as f64 / g.total_bytes.max(1) as f64).clamp(0.0, 1.0),
                    usage: format!("{} / {}", fmt_bytes(g.used_bytes), fmt_bytes(g.total_bytes)),
                    kv: g
                        .engine
                        .as_ref()
                        .and_then(|e| e.kv_cache_usage)
                        .map(|k| format!("KV {:.0}%", k * 100.0)),
                    oom,
                }
            })
            .collect();
        let sel = report.gpus.get(self.selected);
        let now = report.t;
        let gib = GIB as f64;
        let (used, forecast, total_gib) = match sel {
            Some(g) => {
                let used = monitor
                    .series(g.gpu)
                    .map(|s| {
                        s.since(now - CHART_PAST_S)
                            .map(|p| (p.t, p.used as f64 / gib))
                            .collect()
                    })
                    .unwrap_or_default();
                let total = g.total_bytes as f64 / gib;
                let fc = report.forecast.iter().find(|f| f.gpu == g.gpu);
                let forecast = match fc.and_then(|f| f.time_to_oom_s.zip(f.slope_bytes_per_s)) {
                    Some((tto, slope)) => {
                        let start = (total - tto * slope / gib).max(0.0);
                        let end_t = now + tto.min(CHART_AHEAD_S);
                        let end = (start + (end_t - now) * slope / gib).min(total);
                        vec![(now, start), (end_t, end)]
                    }
                    None => vec![],
                };
                (used, forecast, total)
            }
            None => (vec![], vec![], 1.0),
        };
        let processes = sel
            .map(|g| {
                let mut p: Vec<_> = g.processes.iter().collect();
                p.sort_by(|a, b| b.used_bytes.cmp(&a.used_bytes).then(a.pid.cmp(&b.pid)));
                p.iter()
                    .map(|p| ProcessRow {
                        pid: p.pid,
                        name: p.name.clone(),
                        used: fmt_bytes(p.used_bytes),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let engine = sel
            .and_then(|g| g.engine.as_ref())
            .map(|e| EngineView {
                kv_ratio: e.kv_cache_usage,
                running: e.requests_running,
                waiting: e.requests_waiting,
            })
            .unwrap_or_default();
        DashboardView {
            title: format!(" vramfit watch  {source}  t={now:.0}s "),
            gpus,
            selected: self.selected,
            chart: ChartView {
                used,
                forecast,
                total_gib,
                x_bounds: [now - CHART_PAST_S, now + CHART_AHEAD_S],
            },
            processes,
            engine,
            alerts: self.log.iter().cloned().collect(),
            status: status.to_string(),
        }
    }
}
