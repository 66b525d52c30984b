//! The typed memory snapshot every analysis reads: segments with their blocks, and the per-device
//! allocator trace, as torch/csrc/cuda/Module.cpp `THCPModule_memorySnapshot` lays them out
//! (torch 2.0-2.9). `format` decodes them from the pickle.

/// Which producer wrote the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SnapshotFormat {
    /// `torch.cuda.memory._snapshot()` dict, torch >= 2.1.
    Current,
    /// torch 2.0 dict: blocks carry `history`.
    Legacy,
    /// `torch.cuda.memory_snapshot()`: the segment list alone, no trace.
    SegmentList,
}

/// A block's state (Module.cpp: `active_allocated`, `active_pending_free`, `inactive`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    /// Holds a live tensor.
    Allocated,
    /// Freed, but waiting for another stream's work (`record_stream`); the memory.py docstring
    /// calls it `active_awaiting_free`, the C++ writes `active_pending_free`.
    PendingFree,
    /// Free and cached: reusable by the allocator, not by other processes.
    Inactive,
    /// A state this reader does not know; counted as active, neither allocated nor free.
    Unknown,
}

/// One block of a segment.
#[derive(Clone, Debug)]
pub struct Block {
    pub address: u64,
    pub size: u64,
    /// What the caller asked for before rounding: `requested_size`, else (torch 2.0)
    /// `history[0].real_size`, else `size`.
    pub requested_size: u64,
    pub state: BlockState,
    /// Allocation site of the current occupant, an index into [`Snapshot::sites`].
    pub site: Option<u32>,
}

/// One segment: a cudaMalloc (or an expandable-segment mapping) and its blocks.
#[derive(Clone, Debug)]
pub struct Segment {
    pub device: i64,
    pub address: u64,
    pub total_size: u64,
    /// `cudaStream_t` as an integer (0 = default stream).
    pub stream: u64,
    /// `large` or `small` pool (requests above / up to 1 MiB).
    pub segment_type: String,
    /// `(0, 0)` is the default pool; anything else a private pool (CUDA graphs, MemPool).
    pub pool: (i64, i64),
    pub is_expandable: bool,
    pub blocks: Vec<Block>,
}

/// What a trace entry records (CUDACachingAllocator.h `TraceEntry::Action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Snapshot,
    Oom,
    Other,
}

impl Action {
    pub(super) fn parse(s: &str) -> Action {
        match s {
            "alloc" => Action::Alloc,
            "free_requested" => Action::FreeRequested,
            "free_completed" => Action::FreeCompleted,
            "segment_alloc" => Action::SegmentAlloc,
            "segment_free" => Action::SegmentFree,
            "segment_map" => Action::SegmentMap,
            "segment_unmap" => Action::SegmentUnmap,
            "snapshot" => Action::Snapshot,
            "oom" => Action::Oom,
            _ => Action::Other,
        }
    }
}

/// One `device_traces[d][i]` entry.
#[derive(Clone, Debug)]
pub struct TraceEntry {
    pub action: Action,
    /// The action's name as written (also for [`Action::Other`]): an index into
    /// [`Snapshot::action_names`].
    pub action_name: u32,
    /// Block or segment address; for `oom` the `device_free` bytes instead (Module.cpp writes
    /// `device_free` in place of `addr` for OOM entries).
    pub addr: u64,
    pub size: u64,
    pub stream: u64,
    /// Microseconds since the epoch (torch >= ~2.2).
    pub time_us: Option<i64>,
    /// Stack site; recorded for `oom` entries only.
    pub site: Option<u32>,
}

/// A whole snapshot file.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub format: SnapshotFormat,
    pub segments: Vec<Segment>,
    /// One list per device index, oldest first (a ring buffer of `max_entries`).
    pub device_traces: Vec<Vec<TraceEntry>>,
    /// Allocation sites, `file:line (function)`, referred to by index.
    pub sites: Vec<String>,
    /// Trace action names as written, referred to by index.
    pub action_names: Vec<String>,
}
