//! A bounded history per GPU: what the detectors, the forecast and the chart read.

use crate::forecast::{self, LinearFit};
use crate::sample::GpuSample;
use std::cell::OnceCell;
use std::collections::VecDeque;

/// One instant of one GPU, reduced to what is plotted and fitted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub t: f64,
    pub used: u64,
    pub kv_cache_usage: Option<f64>,
    pub requests_running: Option<u64>,
}

/// The recent history of one GPU, kept for `span_s` seconds and at most `max_points` points,
/// so memory stays bounded whatever the rate or the length of the run.
#[derive(Debug, Clone)]
pub struct GpuSeries {
    points: VecDeque<Point>,
    /// Memory per process, at most one snapshot a second (for telling who grew).
    processes: VecDeque<(f64, Vec<(u32, u64)>)>,
    span_s: f64,
    max_points: usize,
    latest: GpuSample,
    /// The trend fit of the current history, computed once per tick for all who ask.
    trend: OnceCell<Option<LinearFit>>,
}

impl GpuSeries {
    pub fn new(first: &GpuSample, span_s: f64, max_points: usize) -> GpuSeries {
        let mut s = GpuSeries {
            points: VecDeque::with_capacity(max_points.min(1024)),
            processes: VecDeque::new(),
            span_s,
            max_points: max_points.max(2),
            latest: first.clone(),
            trend: OnceCell::new(),
        };
        s.push(first);
        s
    }

    pub fn push(&mut self, g: &GpuSample) {
        self.trend = OnceCell::new();
        let engine = g.engine.as_ref();
        self.points.push_back(Point {
            t: g.t,
            used: g.used_bytes,
            kv_cache_usage: engine.and_then(|e| e.kv_cache_usage),
            requests_running: engine.and_then(|e| e.requests_running),
        });
        while self.points.len() > self.max_points
            || self.points.front().is_some_and(|p| g.t - p.t > self.span_s)
        {
            self.points.pop_front();
        }
        if self.processes.back().is_none_or(|(t, _)| g.t - t >= 1.0) {
            let procs = g.processes.iter().map(|p| (p.pid, p.used_bytes)).collect();
            self.processes.push_back((g.t, procs));
            while self.processes.len() > self.max_points
                || self
                    .processes
                    .front()
                    .is_some_and(|(t, _)| g.t - t > self.span_s)
            {
                self.processes.pop_front();
            }
        }
        self.latest = g.clone();
    }

    /// Memory per process (pid, bytes) as of time `t`: the last snapshot at or before `t`, or
    /// the oldest kept.
    pub fn processes_at(&self, t: f64) -> &[(u32, u64)] {
        let i = self.processes.partition_point(|(pt, _)| *pt <= t);
        self.processes
            .get(i.saturating_sub(1))
            .map(|(_, p)| p.as_slice())
            .unwrap_or(&[])
    }

    /// The adaptive-window trend of [`forecast::trend`], cached until the next push.
    pub fn trend(&self) -> Option<LinearFit> {
        *self.trend.get_or_init(|| forecast::trend(self))
    }

    /// The most recent sample as it came, processes and engine included.
    pub fn latest(&self) -> &GpuSample {
        &self.latest
    }

    pub fn points(&self) -> impl DoubleEndedIterator<Item = &Point> + ExactSizeIterator {
        self.points.iter()
    }

    /// Points with `t >= since`.
    pub fn since(&self, since: f64) -> impl Iterator<Item = &Point> {
        let start = self.points.partition_point(|p| p.t < since);
        self.points.range(start..)
    }

    pub fn now(&self) -> f64 {
        self.latest.t
    }

    pub fn total(&self) -> u64 {
        self.latest.total_bytes
    }
}
