//! `MemoryPlan`: what an engine will put where, per device and on the host. Its JSON form is the
//! `vramfit check --json` contract of DESIGN.md (keys kept stable).

use serde::{Deserialize, Serialize};

/// One GPU the engine uses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DevicePlan {
    pub name: String,
    pub total_bytes: u64,
    pub free_bytes: u64,
    /// weights the engine puts on this device
    pub weights_bytes: u64,
    /// KV cache (and recurrent state) allocated here; vLLM: this worker's whole KV pool
    pub kv_cache_bytes: i64,
    /// activation / compute buffers (vLLM: the profiled activation peak)
    pub compute_bytes: u64,
    pub cuda_graph_bytes: u64,
    /// CUDA context, library workspaces and other non-tensor memory
    pub overhead_bytes: u64,
    /// sum of the above
    pub used_bytes: u64,
}

impl DevicePlan {
    /// Recompute `used_bytes` from the parts.
    pub fn finish(&mut self) {
        self.used_bytes = self.weights_bytes
            + self.kv_cache_bytes.max(0) as u64
            + self.compute_bytes
            + self.cuda_graph_bytes
            + self.overhead_bytes;
    }
}

/// What stays in host RAM.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostPlan {
    pub weights_bytes: u64,
    pub kv_cache_bytes: u64,
    pub compute_bytes: u64,
}

/// KV cache totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KvSummary {
    /// KV summed over all devices and the host
    pub bytes: i64,
    /// vLLM: tokens the pool holds; llama.cpp: KV cells allocated
    pub tokens: u64,
    /// bytes per token of context (full-attention and MLA layers)
    pub bytes_per_token: u64,
    /// requests of the configured max length that fit at once
    pub max_concurrency: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Fits,
    DoesNotFit,
}

/// Identity of the model in a report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRef {
    pub id: String,
    pub architecture: String,
    pub params: u64,
}

/// The full answer of `check`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryPlan {
    pub engine: String,
    pub model: ModelRef,
    pub verdict: Verdict,
    pub devices: Vec<DevicePlan>,
    pub host: HostPlan,
    pub kv_cache: KvSummary,
    /// largest context that fits with the other settings unchanged
    pub max_model_len: u64,
    pub problems: Vec<String>,
    pub suggestions: Vec<String>,
    /// the settings the engine model resolved (context, batch sizes, defaults taken), for people
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<(String, String)>,
    /// notes on what was ignored or assumed
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}
