//! Decode speed of one request. The roofline: one token reads every active weight once. Time
//! per token = Σ over devices (bytes read there / that device's bandwidth) + bytes read from
//! host RAM / host bandwidth. Layer split and pipeline stages run one after another (times
//! add); tensor-parallel ranks run side by side (the slowest rank counts).
//!
//! llama.cpp and Ollama (ggml) get the measured form, [`ggml_decode`]: the GPU reads at a
//! fraction of its bandwidth and every layer adds a fixed cost per token (kernel launches and
//! synchronisation), fitted on published decode figures and judged on others (docs/speed.md).
//! vLLM, SGLang and transformers keep the roofline, an upper bound: no figures were gathered.

use vramfit_engine::{DevicePlan, Hardware};
use vramfit_model::ModelSpec;

/// Host RAM bandwidth assumed for weights the CPU reads: 60 GB/s, a dual-channel DDR5-4800
/// desktop's 76.8 GB/s peak at the ~80 % that streaming reads reach. Servers with 8–12
/// channels read 3–5× faster; the estimate is then pessimistic.
pub const HOST_BANDWIDTH_GBPS: f64 = 60.0;

/// PCIe 4.0 ×16 as weights streamed to the GPU each step see it (vLLM `--cpu-offload-gb` reads
/// offloaded weights over the bus every forward pass): 32 GB/s peak, ~25 GB/s in practice.
pub const PCIE_BANDWIDTH_GBPS: f64 = 25.0;

/// Bandwidth assumed for a GPU given only by its size (no catalog entry): 500 GB/s, the middle
/// of the consumer range (RTX 4060 Ti 288 GB/s … RTX 4090 1008 GB/s).
pub const UNKNOWN_GPU_BANDWIDTH_GBPS: f64 = 500.0;

/// Fraction of an expert tensor one token reads: experts used / experts.
pub fn expert_fraction(spec: &ModelSpec) -> f64 {
    spec.moe
        .as_ref()
        .map(|m| m.n_expert_used as f64 / m.n_expert.max(1) as f64)
        .unwrap_or(1.0)
}

/// Bytes one token reads of a tensor (experts: the used share; the input embedding: one row).
pub fn active_bytes(name: &str, bytes: u64, dims: &[u64], spec: &ModelSpec) -> f64 {
    if name.starts_with("token_embd") || name.contains("embed_tokens") {
        let rows = dims.get(1).copied().unwrap_or(1).max(1);
        return bytes as f64 / rows as f64;
    }
    if name.contains("_exps") || name.contains(".experts.") {
        return bytes as f64 * expert_fraction(spec);
    }
    bytes as f64
}

/// What ggml's decode reaches on one kind of device: a fraction of the memory bandwidth, and a
/// fixed time per layer per token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GgmlDecode {
    pub bandwidth_fraction: f64,
    pub per_layer_s: f64,
}

/// CUDA, ROCm and Vulkan GPUs: least squares on 8 decode figures (RTX 4090, 3060, 2080 Ti:
/// Llama-3.2-3B and DeepSeek-R1-Distill-Qwen-14B Q4_K_M, gpt-oss-20b; geerlingguy/ai-benchmarks
/// README, Ollama 2025-12). On 12 held-out figures of 7 other GPUs the median error is 14 %
/// (roofline: 59 %); docs/speed.md.
pub const GGML_GPU: GgmlDecode = GgmlDecode {
    bandwidth_fraction: 0.745,
    per_layer_s: 26.4e-6,
};

/// Metal (Apple Silicon): fitted on the M3 Ultra's three figures of the same table. Held out:
/// M4 +9 %, M1 Ultra +34 %, M1 Max +48…+77 % (the M1 generation's GPU reads well below its
/// bandwidth), docs/speed.md.
pub const GGML_METAL: GgmlDecode = GgmlDecode {
    bandwidth_fraction: 0.787,
    per_layer_s: 148.7e-6,
};

/// ggml's decode tokens/s: `dev_bytes` (bytes, bandwidth GB/s) read by the GPUs one after
/// another, `host_bytes` by the CPU at `host_bw_gbps` (already an achievable rate), `n_layer`
/// repeating blocks. With no GPU bytes the roofline is kept (no CPU figures were fitted).
pub fn ggml_decode(
    dev_bytes: &[(f64, f64)],
    host_bytes: f64,
    host_bw_gbps: f64,
    n_layer: u64,
    cost: GgmlDecode,
) -> f64 {
    let dev: f64 = dev_bytes.iter().map(|(b, bw)| b / (bw * 1e9)).sum();
    if dev <= 0.0 {
        return sequential(&[], host_bytes, host_bw_gbps);
    }
    let t = dev / cost.bandwidth_fraction
        + host_bytes / (host_bw_gbps * 1e9)
        + n_layer as f64 * cost.per_layer_s;
    1.0 / t
}

/// Tokens per second from per-device active bytes (sequential devices) and host bytes.
pub fn sequential(dev_bytes: &[(f64, f64)], host_bytes: f64, host_bw_gbps: f64) -> f64 {
    let mut t: f64 = dev_bytes.iter().map(|(b, bw)| b / (bw * 1e9)).sum();
    t += host_bytes / (host_bw_gbps * 1e9);
    if t <= 0.0 {
        0.0
    } else {
        1.0 / t
    }
}

/// Decode tokens/s of one request on a tensor × pipeline parallel launch (vLLM, SGLang):
/// `devices` in rank order, `tp` ranks per stage reading their shards side by side, stages one
/// after another, `host_bytes` of offloaded weights streamed over PCIe every step. The MoE
/// active share applies to a whole stage (experts dominate those weights).
pub fn tensor_pipeline(
    spec: &ModelSpec,
    hw: &Hardware,
    devices: &[DevicePlan],
    tp: u64,
    host_bytes: u64,
) -> f64 {
    let (total, active) = vramfit_model::layout::param_counts(spec);
    let frac = active as f64 / total.max(1) as f64;
    let per_stage: Vec<(f64, f64)> = devices
        .chunks(tp.max(1) as usize)
        .map(|stage| {
            let d = &stage[0];
            let bw = hw
                .gpus
                .iter()
                .find(|g| g.name == d.name)
                .and_then(|g| g.bandwidth_gbps);
            (
                d.weights_bytes as f64 * frac,
                bw.unwrap_or(UNKNOWN_GPU_BANDWIDTH_GBPS),
            )
        })
        .collect();
    sequential(&per_stage, host_bytes as f64 * frac, PCIE_BANDWIDTH_GBPS)
}
