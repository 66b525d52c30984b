//! The smallest single changes to a vLLM command, as flags, that make it start: each candidate
//! is planned again and kept only when vLLM would then start.

use super::args::{MaxModelLen, VllmConfig};
use super::plan::{evaluate, Outcome};
use crate::hardware::Hardware;
use vramfit_model::units::GIB;
use vramfit_model::{ModelSpec, WeightSet};

/// The smallest single changes, as flags, that make the command start.
pub(super) fn suggest(
    spec: &ModelSpec,
    weights: Option<&WeightSet>,
    cfg: &VllmConfig,
    hw: &Hardware,
    out: &Outcome,
) -> Vec<String> {
    let mut tries: Vec<(String, VllmConfig)> = Vec::new();
    let mut with = |label: String, f: &dyn Fn(&mut VllmConfig)| {
        let mut c = cfg.clone();
        f(&mut c);
        tries.push((label, c));
    };
    if out.fit_len > 0 && !matches!(cfg.max_model_len, MaxModelLen::Auto) {
        let len = out.fit_len;
        with(format!("--max-model-len {len}"), &|c| {
            c.max_model_len = MaxModelLen::Tokens(len)
        });
    }
    // the utilization that leaves room for one request, within what is free
    let total = out
        .workers
        .iter()
        .map(|w| w.gpu.total_bytes)
        .min()
        .unwrap_or(0);
    let free = out
        .workers
        .iter()
        .map(|w| w.gpu.free_bytes)
        .min()
        .unwrap_or(0);
    // what the worst GPU lacks for one request of max_model_len (negative: room to spare)
    let short = out
        .workers
        .iter()
        .map(|w| out.layouts[w.stage].bytes_per_request(out.max_model_len) as i64 - w.available)
        .max()
        .unwrap_or(0);
    if total > 0 {
        // vLLM V1 refuses to start when the memory free after its CUDA context is created is
        // below utilization x total (v1/worker/gpu_worker.py init_device, "Free memory on device
        // ... is less than desired GPU memory utilization"): never suggest a share that leaves
        // no room for the context (about 0.5 GiB; 0.98 at most, as the second candidate)
        let usable = free.min(total.saturating_sub(512 * vramfit_model::units::MIB));
        let max_util = (((usable as f64 / total as f64) * 100.0).floor() / 100.0).min(0.98);
        let want = cfg.gpu_memory_utilization + short.max(0) as f64 / total as f64 + 0.005;
        let want = (want * 100.0).ceil() / 100.0;
        for u in [want.min(max_util), max_util] {
            if u > 0.0 && (u - cfg.gpu_memory_utilization).abs() > 1e-9 {
                with(format!("--gpu-memory-utilization {u:.2}"), &|c| {
                    c.gpu_memory_utilization = u
                });
            }
        }
    }
    if !cfg.kv_cache_dtype.starts_with("fp8") {
        with("--kv-cache-dtype fp8".into(), &|c| {
            c.kv_cache_dtype = "fp8".into()
        });
    }
    let seqs = out
        .settings
        .iter()
        .find(|(k, _)| k == "max_num_seqs")
        .and_then(|(_, v)| v.parse::<u64>().ok())
        .unwrap_or(256);
    for s in [seqs / 4, 16] {
        if s >= 1 && s < seqs {
            with(format!("--max-num-seqs {s}"), &|c| c.max_num_seqs = Some(s));
        }
    }
    if cfg.uses_cuda_graphs() && cfg.deducts_cuda_graphs() {
        with("--enforce-eager".into(), &|c| c.enforce_eager = true);
    }
    let gpus_available = cfg
        .visible_devices
        .as_ref()
        .map(|v| v.len())
        .unwrap_or(hw.gpus.len()) as u64;
    let mut tp = cfg.tensor_parallel_size * 2;
    while tp * cfg.pipeline_parallel_size <= gpus_available {
        let t = tp;
        with(format!("--tensor-parallel-size {t}"), &|c| {
            c.tensor_parallel_size = t
        });
        tp *= 2;
    }
    // an unquantized checkpoint quantized to FP8 while loading: vLLM's Fp8Config needs compute
    // capability 8.0 (model_executor/layers/quantization/fp8.py get_min_capability; below 8.9 it
    // runs weight-only through Marlin), so Turing and older are not offered it
    let cc = cfg
        .compute_capability
        .or_else(|| hw.gpus.first().and_then(|g| g.compute_capability));
    if spec.quant.is_none() && cfg.quantization.is_none() && cc.is_some_and(|c| c >= 8.0) {
        with("--quantization fp8".into(), &|c| {
            c.quantization = Some("fp8".into())
        });
    }
    if out.workers.iter().any(|w| w.available <= 0) {
        // the weights vLLM must keep in host memory so that the worst GPU holds one request of
        // max_model_len (cpu_offload_gb moves whole parameters, so 1 GiB of slack)
        let heaviest = out.workers.iter().map(|w| w.weights).max().unwrap_or(0);
        let gb = (short.max(0) as f64 / GIB as f64 + 1.0).ceil();
        if gb * (GIB as f64) < heaviest as f64 * 0.75 {
            with(format!("--cpu-offload-gb {gb:.0}"), &|c| {
                c.cpu_offload_bytes += (gb * GIB as f64) as u64
            });
        }
    }
    let mut fitting = Vec::new();
    for (label, c) in tries {
        let o = evaluate(spec, weights, &c, hw);
        if !o.fails && !fitting.contains(&label) {
            fitting.push(label);
        } else if o.fails && c.quantization != cfg.quantization && o.fit_len > 0 {
            // FP8 weights leave a pool, only not one of this length: both changes together
            let len = o.fit_len;
            let mut c2 = c.clone();
            c2.max_model_len = MaxModelLen::Tokens(len);
            let label = format!("{label} --max-model-len {len}");
            if !evaluate(spec, weights, &c2, hw).fails && !fitting.contains(&label) {
                fitting.push(label);
            }
        }
    }
    fitting.truncate(4);
    fitting
}
