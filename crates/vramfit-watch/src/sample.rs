//! What one look at the GPUs yields: the record a sampler returns and a trace stores.
//!
//! One [`GpuSample`] is one line of a `--record` trace (JSON lines), so the live path and the
//! replay path carry exactly the same values through the detectors.

use serde::{Deserialize, Serialize};

/// One GPU (or one MIG instance) at one instant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    /// Seconds on the sampler's clock (since the watch started, or the trace's own clock).
    pub t: f64,
    /// Position of this device in the watch's device list (NVML index for whole GPUs).
    pub gpu: u32,
    pub total_bytes: u64,
    pub used_bytes: u64,
    /// NVML's free memory; absent in traces that did not record it (then total - used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_bytes: Option<u64>,
    /// Memory the driver sets aside (NVML memory_info v2 `reserved`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_bytes: Option<u64>,
    /// Device name as NVML reports it, e.g. "NVIDIA H100 80GB HBM3".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Set when this entry is a MIG instance of a physical GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig: Option<MigInstance>,
    #[serde(default)]
    pub processes: Vec<ProcessSample>,
    /// What the serving engine on this GPU reported at the same time, when it was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineSample>,
}

impl GpuSample {
    /// Free bytes: NVML's own figure when recorded, else total minus used.
    pub fn free(&self) -> u64 {
        self.free_bytes
            .unwrap_or_else(|| self.total_bytes.saturating_sub(self.used_bytes))
    }
}

/// A MIG instance: which physical GPU it lives on and its position there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigInstance {
    pub parent: u32,
    pub instance: u32,
}

/// One process holding memory on a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessSample {
    pub pid: u32,
    pub name: String,
    pub used_bytes: u64,
}

/// The serving engine's own view of its load, normalized across engines.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineSample {
    /// Fraction of the KV cache in use, 0..1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_usage: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_running: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_waiting: Option<u64>,
    /// Cumulative preemptions (vLLM), when the engine reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions_total: Option<u64>,
}

/// Everything one sampling pass returned: one entry per device, all with the same `t`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    pub t: f64,
    pub gpus: Vec<GpuSample>,
}
