//! Allocated and reserved memory over the recorded trace, per device.
//!
//! The trace is a ring buffer (`max_entries`), so it rarely starts at zero. Replaying it gives
//! exact changes; the level is fixed by the end point, which is the snapshot's own state: the
//! trace and the segments are captured together (CUDACachingAllocator.cpp `snapshot()`).
//!
//! allocated: `alloc` adds, `free_requested` subtracts (the block leaves `active_allocated` then;
//! `free_completed` only ends a pending free). reserved: `segment_alloc` / `segment_map` add,
//! `segment_free` / `segment_unmap` subtract (expandable segments map and unmap pages).

use super::format::{Action, BlockState, Snapshot, TraceEntry};

/// Memory after one trace entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimelinePoint {
    /// Index of the entry in `device_traces[device]`.
    pub index: usize,
    pub time_us: Option<i64>,
    pub allocated: u64,
    pub reserved: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DeviceTimeline {
    pub device: i64,
    pub points: Vec<TimelinePoint>,
    pub peak_allocated: u64,
    pub peak_reserved: u64,
    /// Indices into `points` of `oom` entries.
    pub ooms: Vec<usize>,
}

/// Allocated and reserved bytes at the end of the trace: the snapshot's own state on `device`.
fn end_state(snap: &Snapshot, device: i64) -> (i128, i128) {
    let (mut end_alloc, mut end_reserved) = (0i128, 0i128);
    for s in snap.segments.iter().filter(|s| s.device == device) {
        end_reserved += s.total_size as i128;
        for b in s.blocks.iter().filter(|b| b.state == BlockState::Allocated) {
            end_alloc += b.size as i128;
        }
    }
    (end_alloc, end_reserved)
}

/// Replays a trace: allocated and reserved after each entry, relative to the start.
fn replay(
    trace: &[TraceEntry],
    mut each: impl FnMut(usize, &TraceEntry, i128, i128),
) -> (i128, i128) {
    let (mut a, mut r) = (0i128, 0i128);
    for (i, e) in trace.iter().enumerate() {
        let size = e.size as i128;
        match e.action {
            Action::Alloc => a += size,
            Action::FreeRequested => a -= size,
            Action::SegmentAlloc | Action::SegmentMap => r += size,
            Action::SegmentFree | Action::SegmentUnmap => r -= size,
            _ => {}
        }
        each(i, e, a, r);
    }
    (a, r)
}

fn clamp(v: i128) -> u64 {
    v.clamp(0, u64::MAX as i128) as u64
}

/// The peaks of [`timelines`] without building the points: per device with trace entries,
/// `(device, peak allocated, peak reserved)`.
pub fn peaks(snap: &Snapshot) -> Vec<DevicePeaks> {
    let mut out = Vec::new();
    for (d, trace) in snap.device_traces.iter().enumerate() {
        if trace.is_empty() {
            continue;
        }
        let device = d as i64;
        let (end_alloc, end_reserved) = end_state(snap, device);
        let (mut max_a, mut max_r) = (i128::MIN, i128::MIN);
        let (a, r) = replay(trace, |_, _, a, r| {
            max_a = max_a.max(a);
            max_r = max_r.max(r);
        });
        // the offset and the clamp are monotonic: the peak of the clamped series is this
        out.push(DevicePeaks {
            device,
            peak_allocated: clamp(max_a + (end_alloc - a)),
            peak_reserved: clamp(max_r + (end_reserved - r)),
        });
    }
    out
}

/// A device's peaks over its trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DevicePeaks {
    pub device: i64,
    pub peak_allocated: u64,
    pub peak_reserved: u64,
}

/// One timeline per device that has trace entries.
pub fn timelines(snap: &Snapshot) -> Vec<DeviceTimeline> {
    let mut out = Vec::new();
    for (d, trace) in snap.device_traces.iter().enumerate() {
        if trace.is_empty() {
            continue;
        }
        let device = d as i64;
        let (end_alloc, end_reserved) = end_state(snap, device);
        let mut running = Vec::with_capacity(trace.len());
        let mut ooms = Vec::new();
        let (a, r) = replay(trace, |i, e, a, r| {
            if e.action == Action::Oom {
                ooms.push(i);
            }
            running.push((a, r));
        });
        let (off_a, off_r) = (end_alloc - a, end_reserved - r);
        let points: Vec<TimelinePoint> = trace
            .iter()
            .zip(running)
            .enumerate()
            .map(|(index, (e, (a, r)))| TimelinePoint {
                index,
                time_us: e.time_us,
                allocated: clamp(a + off_a),
                reserved: clamp(r + off_r),
            })
            .collect();
        let peak_allocated = points.iter().map(|p| p.allocated).max().unwrap_or(0);
        let peak_reserved = points.iter().map(|p| p.reserved).max().unwrap_or(0);
        out.push(DeviceTimeline {
            device,
            points,
            peak_allocated,
            peak_reserved,
            ooms,
        });
    }
    out
}
