//! The GPUs an engine runs on, as the engine model needs them.

use serde::{Deserialize, Serialize};

/// One GPU: total memory as CUDA reports it (`cudaMemGetInfo`), and free memory at launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    pub name: String,
    pub total_bytes: u64,
    /// free at launch (other processes already subtracted); defaults to what a clean card has
    pub free_bytes: u64,
    /// memory bandwidth, GB/s, when known (decode-speed estimates)
    pub bandwidth_gbps: Option<f64>,
    /// compute capability (8.9), when known
    pub compute_capability: Option<f64>,
    /// unified memory (DGX Spark, Jetson, Apple): free memory is host RAM
    pub unified: bool,
}

/// The machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hardware {
    pub gpus: Vec<Gpu>,
    /// host RAM available for weights kept on the CPU, when known
    pub host_ram_bytes: Option<u64>,
}
