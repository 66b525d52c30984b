//! Allocated and reserved memory over the recorded trace, per device.
//!
//! The trace is a ring buffer (`max_entries`), so it rarely starts at zero. Replaying it gives
//! exact changes; the level is fixed by the end point, which is the snapshot's own state: the
//! trace and the segments are captured together (CUDACachingAllocator.cpp `snapshot()`).
//!
//! allocated: `alloc` adds, `free_requested` subtracts (the block leaves `active_allocated` then;
//! `free_completed` only ends a pending free). reserved: `segment_alloc` / `segment_map` add,
//! `segment_free` / `segment_unmap` subtract (expandable segments map and unmap pages).

use super::format::{Action, BlockState, Snapshot};

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

/// One timeline per device that has trace entries.
pub fn timelines(snap: &Snapshot) -> Vec<DeviceTimeline> {
    let mut out = Vec::new();
    for (d, trace) in snap.device_traces.iter().enumerate() {
        if trace.is_empty() {
            continue;
        }
        let device = d as i64;
        let (mut end_alloc, mut end_reserved) = (0i128, 0i128);
        for s in snap.segments.iter().filter(|s| s.device == device) {
            end_reserved += s.total_size as i128;
            for b in s.blocks.iter().filter(|b| b.state == BlockState::Allocated) {
                end_alloc += b.size as i128;
            }
        }
        let mut running = Vec::with_capacity(trace.len());
        let (mut a, mut r) = (0i128, 0i128);
        let mut ooms = Vec::new();
        for (i, e) in trace.iter().enumerate() {
            let size = e.size as i128;
            match e.action {
                Action::Alloc => a += size,
                Action::FreeRequested => a -= size,
                Action::SegmentAlloc | Action::SegmentMap => r += size,
                Action::SegmentFree | Action::SegmentUnmap => r -= size,
                Action::Oom => ooms.push(i),
                _ => {}
            }
            running.push((a, r));
        }
        let (off_a, off_r) = (end_alloc - a, end_reserved - r);
        let clamp = |v: i128| v.clamp(0, u64::MAX as i128) as u64;
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
