//! Detectors: each looks at one GPU's history and says which conditions hold now, in plain words
//! and with the fix. One file per detector; the [`crate::monitor::Monitor`] turns conditions into
//! alerts (raised once, raised again only after clearing).

pub mod headroom;
pub mod leak;
pub mod new_process;
pub mod spike;

use crate::series::GpuSeries;
use serde::Serialize;

/// What kind of trouble an alert reports (the `kind` key of `--json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    Leak,
    Spike,
    Headroom,
    NewProcess,
}

impl AlertKind {
    pub const ALL: [AlertKind; 4] = [
        AlertKind::Leak,
        AlertKind::Spike,
        AlertKind::Headroom,
        AlertKind::NewProcess,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::Leak => "leak",
            AlertKind::Spike => "spike",
            AlertKind::Headroom => "headroom",
            AlertKind::NewProcess => "new_process",
        }
    }
}

/// The cause an alert points to, in the doctor's vocabulary (`vramfit doctor` `cause`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    KvCache,
    Concurrency,
    Fragmentation,
    ActivationPeak,
    OtherProcesses,
    Unknown,
}

/// A condition that holds on a GPU now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Condition {
    pub kind: AlertKind,
    pub pid: Option<u32>,
    pub cause: Cause,
    pub message: String,
}

/// Thresholds the detectors share; every one can be set from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectConfig {
    /// Headroom alert when free memory falls under this many bytes...
    pub headroom_bytes: Option<u64>,
    /// ...or under this share of total (used when `headroom_bytes` is None).
    pub headroom_fraction: f64,
    /// A steady climb must last this long before it is called a leak.
    pub leak_min_span_s: f64,
    /// A spike is a rise above the recent baseline of at least this share of total.
    pub spike_fraction: f64,
}

impl Default for DetectConfig {
    fn default() -> Self {
        DetectConfig {
            headroom_bytes: None,
            headroom_fraction: 0.03,
            leak_min_span_s: 30.0,
            spike_fraction: 0.04,
        }
    }
}

impl DetectConfig {
    pub fn headroom_for(&self, total: u64) -> u64 {
        self.headroom_bytes
            .unwrap_or((total as f64 * self.headroom_fraction) as u64)
    }
}

/// One detector over one GPU; it keeps whatever state it needs (hysteresis, baselines).
pub trait Detector {
    fn check(&mut self, series: &GpuSeries, cfg: &DetectConfig) -> Vec<Condition>;
}

/// The biggest process on the GPU, for messages.
pub(crate) fn largest_process(series: &GpuSeries) -> Option<&crate::sample::ProcessSample> {
    series
        .latest()
        .processes
        .iter()
        .max_by_key(|p| p.used_bytes)
}

/// Mean of the engine's KV usage and running requests over points with `t` in `[from, to)`.
pub(crate) fn engine_load_between(
    series: &GpuSeries,
    from: f64,
    to: f64,
) -> (Option<f64>, Option<f64>) {
    let (mut kv, mut nkv, mut run, mut nrun) = (0.0, 0usize, 0.0, 0usize);
    for p in series.since(from).take_while(|p| p.t < to) {
        if let Some(k) = p.kv_cache_usage {
            kv += k;
            nkv += 1;
        }
        if let Some(r) = p.requests_running {
            run += r as f64;
            nrun += 1;
        }
    }
    (
        (nkv > 0).then(|| kv / nkv as f64),
        (nrun > 0).then(|| run / nrun as f64),
    )
}

/// The process whose memory grew most since `since`.
pub(crate) struct Growth<'a> {
    pub pid: u32,
    pub name: &'a str,
    pub bytes: u64,
    /// Not on the GPU at `since`: a process starting up, not one growing.
    pub appeared: bool,
    /// Not the process holding the most memory now (the server, as a rule).
    pub other: bool,
}

pub(crate) fn top_grower(series: &GpuSeries, since: f64) -> Option<Growth<'_>> {
    let before = series.processes_at(since);
    let biggest = largest_process(series).map(|p| p.pid);
    series
        .latest()
        .processes
        .iter()
        .map(|p| {
            let old = before
                .iter()
                .find(|(pid, _)| *pid == p.pid)
                .map(|(_, b)| *b);
            Growth {
                pid: p.pid,
                name: &p.name,
                bytes: p.used_bytes.saturating_sub(old.unwrap_or(0)),
                appeared: old.is_none(),
                other: Some(p.pid) != biggest,
            }
        })
        .filter(|g| g.bytes > 0)
        .max_by_key(|g| g.bytes)
}

/// Pearson correlation of used memory with the engine's KV usage over points since `since`;
/// `None` without engine figures or without movement.
pub(crate) fn kv_correlation(series: &GpuSeries, since: f64) -> Option<f64> {
    let pts: Vec<(f64, f64)> = series
        .since(since)
        .filter_map(|p| p.kv_cache_usage.map(|k| (p.used as f64, k)))
        .collect();
    if pts.len() < 5 {
        return None;
    }
    let n = pts.len() as f64;
    let (mx, my) = pts
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in &pts {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}
