//! The numbers a person wants from a snapshot: what is reserved, allocated, wasted and free, where
//! it sits (device, stream, pool), who allocated it, and the OOM the trace recorded.
//!
//! Definitions (the same in scripts/snapshot_reference.py):
//! - reserved = Σ segment `total_size`
//! - allocated = Σ size of `active_allocated` blocks; requested = Σ their requested size
//! - active = Σ size of blocks that are not `inactive` (allocated + pending free + unknown)
//! - inactive = Σ size of `inactive` blocks: cached free memory (external fragmentation)
//! - rounding waste = Σ (size − requested) over allocated blocks (internal fragmentation)
//! - largest free block = the largest `inactive` block; blocks are bound to their stream, so it is
//!   also given per (device, stream).
//!
//! These follow torch/cuda/_memory_viz.py `segsum` (free_external + free_internal + allocated =
//! reserved) and the segment fields of Module.cpp (`allocated_size`, `active_size`).

use super::format::{Action, BlockState, Segment, Snapshot, SnapshotFormat};
use super::timeline;
use serde::Serialize;
use std::collections::BTreeMap;

/// How many allocation sites the report keeps.
pub const TOP_SITES: usize = 15;

/// Byte totals over a set of segments.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub reserved_bytes: u64,
    pub allocated_bytes: u64,
    pub active_bytes: u64,
    pub requested_bytes: u64,
    pub inactive_bytes: u64,
    pub pending_free_bytes: u64,
    pub rounding_waste_bytes: u64,
    pub segments: u64,
    pub blocks: u64,
    pub largest_free_block_bytes: u64,
}

impl Totals {
    fn add_segment(&mut self, s: &Segment) {
        self.segments += 1;
        self.reserved_bytes = self.reserved_bytes.saturating_add(s.total_size);
        for b in &s.blocks {
            self.blocks += 1;
            match b.state {
                BlockState::Inactive => {
                    self.inactive_bytes = self.inactive_bytes.saturating_add(b.size);
                    self.largest_free_block_bytes = self.largest_free_block_bytes.max(b.size);
                }
                BlockState::Allocated => {
                    self.allocated_bytes = self.allocated_bytes.saturating_add(b.size);
                    self.active_bytes = self.active_bytes.saturating_add(b.size);
                    self.requested_bytes = self.requested_bytes.saturating_add(b.requested_size);
                    self.rounding_waste_bytes = self
                        .rounding_waste_bytes
                        .saturating_add(b.size.saturating_sub(b.requested_size));
                }
                BlockState::PendingFree => {
                    self.pending_free_bytes = self.pending_free_bytes.saturating_add(b.size);
                    self.active_bytes = self.active_bytes.saturating_add(b.size);
                }
                BlockState::Unknown => self.active_bytes = self.active_bytes.saturating_add(b.size),
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StreamReport {
    /// `cudaStream_t` as an integer; 0 is the default stream.
    pub stream: u64,
    #[serde(flatten)]
    pub totals: Totals,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceReport {
    pub device: i64,
    #[serde(flatten)]
    pub totals: Totals,
    pub streams: Vec<StreamReport>,
    pub trace_entries: u64,
    /// Highest allocated / reserved bytes over the recorded trace (None without a trace).
    pub trace_peak_allocated_bytes: Option<u64>,
    pub trace_peak_reserved_bytes: Option<u64>,
}

/// Segments grouped by memory pool and size class (`large` / `small` pool).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PoolReport {
    /// `[0, 0]` is the default pool; others are private pools (CUDA graphs, MemPool).
    pub pool: [i64; 2],
    pub segment_type: String,
    pub segments: u64,
    pub expandable_segments: u64,
    pub reserved_bytes: u64,
    pub allocated_bytes: u64,
    pub inactive_bytes: u64,
    pub largest_free_block_bytes: u64,
}

/// Live bytes by allocation site (the stack frame that best names the caller).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SiteReport {
    /// `file:line (function)`, or `(no stack recorded)`.
    pub site: String,
    pub bytes: u64,
    pub blocks: u64,
}

/// What the allocator's `oom` trace entry says, next to the free memory the snapshot shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OomEvent {
    pub device: i64,
    /// Index of the entry in `device_traces[device]`.
    pub trace_index: u64,
    /// The rounded request that failed (the entry's `size`).
    pub requested_bytes: u64,
    /// Free memory according to cudaMemGetInfo at the OOM (the entry's `device_free`).
    pub device_free_bytes: u64,
    pub stream: u64,
    pub time_us: Option<i64>,
    pub site: Option<String>,
    /// Cached free memory on that device and stream in the snapshot.
    pub inactive_on_stream_bytes: u64,
    pub largest_free_block_on_stream_bytes: u64,
    /// `fragmentation`: the request is at most the free bytes (cached + device free) but larger
    /// than any free block; `capacity`: it exceeds all free memory; `freed_before_snapshot`: a
    /// free block now fits it, so memory was released between the OOM and the dump.
    pub diagnosis: &'static str,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceSummary {
    pub entries: u64,
    pub actions: BTreeMap<String, u64>,
    pub first_time_us: Option<i64>,
    pub last_time_us: Option<i64>,
}

/// Everything `vramfit snapshot` reports. Top-level byte keys are totals over all devices.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SnapshotReport {
    pub format: SnapshotFormat,
    #[serde(flatten)]
    pub totals: Totals,
    /// The OOM the trace recorded (the latest when there are several), or null.
    pub oom: Option<OomEvent>,
    pub oom_events: u64,
    pub devices: Vec<DeviceReport>,
    pub pools: Vec<PoolReport>,
    pub top_sites: Vec<SiteReport>,
    pub trace: TraceSummary,
}

/// Analyses a snapshot. Pure: the same snapshot gives the same report.
pub fn analyze(snap: &Snapshot) -> SnapshotReport {
    let mut totals = Totals::default();
    let mut by_device: BTreeMap<i64, (Totals, BTreeMap<u64, Totals>)> = BTreeMap::new();
    let mut pools: BTreeMap<((i64, i64), String), PoolReport> = BTreeMap::new();
    let mut sites: BTreeMap<Option<u32>, (u64, u64)> = BTreeMap::new();
    for s in &snap.segments {
        totals.add_segment(s);
        let (dev, streams) = by_device.entry(s.device).or_default();
        dev.add_segment(s);
        streams.entry(s.stream).or_default().add_segment(s);
        let mut one = Totals::default();
        one.add_segment(s);
        let pool = pools
            .entry((s.pool, s.segment_type.clone()))
            .or_insert_with(|| PoolReport {
                pool: [s.pool.0, s.pool.1],
                segment_type: s.segment_type.clone(),
                segments: 0,
                expandable_segments: 0,
                reserved_bytes: 0,
                allocated_bytes: 0,
                inactive_bytes: 0,
                largest_free_block_bytes: 0,
            });
        pool.segments += 1;
        pool.expandable_segments += s.is_expandable as u64;
        pool.reserved_bytes = pool.reserved_bytes.saturating_add(one.reserved_bytes);
        pool.allocated_bytes = pool.allocated_bytes.saturating_add(one.allocated_bytes);
        pool.inactive_bytes = pool.inactive_bytes.saturating_add(one.inactive_bytes);
        pool.largest_free_block_bytes = pool
            .largest_free_block_bytes
            .max(one.largest_free_block_bytes);
        for b in s.blocks.iter().filter(|b| b.state == BlockState::Allocated) {
            let e = sites.entry(b.site).or_default();
            e.0 = e.0.saturating_add(b.size);
            e.1 += 1;
        }
    }
    for d in 0..snap.device_traces.len() {
        if !snap.device_traces[d].is_empty() {
            by_device.entry(d as i64).or_default();
        }
    }

    let peaks = timeline::peaks(snap);
    let devices: Vec<DeviceReport> = by_device
        .into_iter()
        .map(|(device, (t, streams))| {
            let tl = peaks.iter().find(|tl| tl.device == device);
            DeviceReport {
                device,
                totals: t,
                streams: streams
                    .into_iter()
                    .map(|(stream, totals)| StreamReport { stream, totals })
                    .collect(),
                trace_entries: trace_of(snap, device).map_or(0, |t| t.len() as u64),
                trace_peak_allocated_bytes: tl.map(|t| t.peak_allocated),
                trace_peak_reserved_bytes: tl.map(|t| t.peak_reserved),
            }
        })
        .collect();

    let mut top_sites: Vec<SiteReport> = sites
        .into_iter()
        .map(|(site, (bytes, blocks))| SiteReport {
            site: site_name(snap, site),
            bytes,
            blocks,
        })
        .collect();
    top_sites.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.site.cmp(&b.site)));
    top_sites.truncate(TOP_SITES);

    let ooms = oom_events(snap, &devices);
    let oom = latest(&ooms);
    SnapshotReport {
        format: snap.format,
        totals,
        oom_events: ooms.len() as u64,
        oom,
        devices,
        pools: pools.into_values().collect(),
        top_sites,
        trace: trace_summary(snap),
    }
}

fn site_name(snap: &Snapshot, site: Option<u32>) -> String {
    match site {
        Some(i) => snap.sites[i as usize].clone(),
        None => "(no stack recorded)".to_string(),
    }
}

fn trace_of(snap: &Snapshot, device: i64) -> Option<&Vec<super::format::TraceEntry>> {
    usize::try_from(device)
        .ok()
        .and_then(|d| snap.device_traces.get(d))
}

fn oom_events(snap: &Snapshot, devices: &[DeviceReport]) -> Vec<OomEvent> {
    let mut out = Vec::new();
    for (d, trace) in snap.device_traces.iter().enumerate() {
        for (i, e) in trace
            .iter()
            .enumerate()
            .filter(|(_, e)| e.action == Action::Oom)
        {
            let stream = devices
                .iter()
                .find(|r| r.device == d as i64)
                .and_then(|r| r.streams.iter().find(|s| s.stream == e.stream));
            let (inactive, largest) = stream.map_or((0, 0), |s| {
                (s.totals.inactive_bytes, s.totals.largest_free_block_bytes)
            });
            let diagnosis = if e.size <= largest {
                "freed_before_snapshot"
            } else if e.size <= inactive.saturating_add(e.addr) {
                "fragmentation"
            } else {
                "capacity"
            };
            out.push(OomEvent {
                device: d as i64,
                trace_index: i as u64,
                requested_bytes: e.size,
                device_free_bytes: e.addr,
                stream: e.stream,
                time_us: e.time_us,
                site: e.site.map(|s| snap.sites[s as usize].clone()),
                inactive_on_stream_bytes: inactive,
                largest_free_block_on_stream_bytes: largest,
                diagnosis,
            });
        }
    }
    out
}

/// The latest OOM: by time when every event has one, else the last in device order.
fn latest(ooms: &[OomEvent]) -> Option<OomEvent> {
    if ooms.iter().all(|o| o.time_us.is_some()) {
        // max_by_key keeps the last of equal keys, so ties fall to device order
        ooms.iter().max_by_key(|o| o.time_us).cloned()
    } else {
        ooms.last().cloned()
    }
}

fn trace_summary(snap: &Snapshot) -> TraceSummary {
    let mut counts = vec![0u64; snap.action_names.len()];
    let mut entries = 0;
    let (mut first, mut last): (Option<i64>, Option<i64>) = (None, None);
    for e in snap.device_traces.iter().flatten() {
        entries += 1;
        if let Some(n) = counts.get_mut(e.action_name as usize) {
            *n += 1;
        }
        if let Some(t) = e.time_us {
            first = Some(first.map_or(t, |f| f.min(t)));
            last = Some(last.map_or(t, |l| l.max(t)));
        }
    }
    let mut actions = BTreeMap::new();
    for (name, n) in snap.action_names.iter().zip(counts) {
        if n > 0 {
            *actions.entry(name.clone()).or_insert(0) += n;
        }
    }
    TraceSummary {
        entries,
        actions,
        first_time_us: first,
        last_time_us: last,
    }
}
