//! Which device each tensor lands on: llama.cpp's layer split (`-ngl`, `--tensor-split` or free
//! memory), the output layer rule by build, the input layer on the CPU, and `-ot` /
//! `--cpu-moe` / `--n-cpu-moe` overrides. Source: src/llama-model.cpp `load_tensors`
//! (get_layer_buft_list, dev_input, dev_output) and common/arg.cpp (@82bb48500).

use super::args::{LlamaCppConfig, Override, SplitMode, Target};
use super::version::change;
use vramfit_model::weights::{layer_of, Tensor};
use vramfit_model::{TensorDtype, WeightSet};

/// Where one repeating layer (or the output layer) runs: a GPU index or the CPU.
pub type Dev = Option<usize>;

/// The resolved placement of a model.
#[derive(Debug, Clone)]
pub struct Placement {
    /// device of blocks 0..n_blocks, then the output layer at index n_blocks
    pub layer_dev: Vec<Dev>,
    /// model buffer bytes per GPU
    pub gpu_weights: Vec<u64>,
    /// weights left in host memory (CPU_Mapped / CUDA_Host)
    pub host_weights: u64,
    /// the largest weight tensor left on the CPU that a GPU op would use (op offload copies it
    /// into the first GPU's compute buffer), and its role
    pub largest_cpu_weight: Option<(u64, CpuWeightRole)>,
    /// GPU layers counted as llama.cpp prints "offloaded N/M layers"
    pub offloaded: (u64, u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuWeightRole {
    Output,
    Experts,
    Other,
}

/// `-ngl` as this build resolves it, as a count of layers including the output layer.
pub fn gpu_layers(cfg: &LlamaCppConfig, n_blocks: u64) -> u64 {
    match cfg.n_gpu_layers {
        Some(n) if n >= 0 => n as u64,
        // -1 = auto (--fit decides; modelled as all, then reduced by the fit step), <= -2 = all
        Some(_) => n_blocks + 1,
        // library default: 0 before #15434, all layers after (llama-model.cpp n_gpu_layers())
        None if cfg.build.has(change::FA_AUTO_DEFAULT) => n_blocks + 1,
        None => 0,
    }
}

/// Cumulative split fractions per device (llama-model.cpp: `splits` from --tensor-split, else
/// from each device's free memory at load time).
fn splits(cfg: &LlamaCppConfig, free: &[u64]) -> Vec<f64> {
    let n = free.len();
    let mut w: Vec<f64> = match &cfg.tensor_split {
        Some(ts) if ts.iter().take(n).sum::<f64>() > 0.0 => {
            (0..n).map(|i| ts.get(i).copied().unwrap_or(0.0)).collect()
        }
        _ => free.iter().map(|f| *f as f64).collect(),
    };
    if cfg.split_mode == SplitMode::None {
        w = (0..n)
            .map(|i| {
                if i == cfg.main_gpu.min(n.saturating_sub(1)) {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
    }
    let total: f64 = w.iter().sum();
    let mut acc = 0.0;
    w.iter()
        .map(|x| {
            acc += x;
            if total > 0.0 {
                acc / total
            } else {
                1.0
            }
        })
        .collect()
}

/// Device of every layer index 0..=n_blocks (n_blocks = the output layer).
pub fn layer_devices(cfg: &LlamaCppConfig, n_blocks: u64, free: &[u64]) -> Vec<Dev> {
    let ngl = gpu_layers(cfg, n_blocks);
    let n_dev = free.len();
    let (i_gpu_start, act) = if cfg.build.has(change::OUTPUT_LAYER_FIRST) {
        ((n_blocks + 1).saturating_sub(ngl), ngl.min(n_blocks + 1))
    } else {
        (n_blocks.saturating_sub(ngl), ngl.min(n_blocks + 1))
    };
    let sp = splits(cfg, free);
    (0..=n_blocks)
        .map(|il| {
            if n_dev == 0 || il < i_gpu_start || il - i_gpu_start >= act {
                return None;
            }
            let x = (il - i_gpu_start) as f64 / act as f64;
            // upper_bound: the first device whose cumulative share exceeds x
            let d = sp.iter().position(|s| *s > x).unwrap_or(n_dev - 1);
            Some(d.min(n_dev - 1))
        })
        .collect()
}

/// `--cpu-moe` / `--n-cpu-moe N`: the routed-expert tensors of every layer (or of layers below N)
/// stay on the CPU (common/common.h llm_ffn_exps_cpu_override). Checked after the user's `-ot`
/// rules, with one pattern compiled once: per-layer regexes cost more than the whole layout.
fn cpu_moe(cfg: &LlamaCppConfig, name: &str) -> bool {
    static EXPS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\.ffn_(up|down|gate|gate_up)_(ch|)exps").expect("static pattern")
    });
    match cfg.n_cpu_moe {
        None => false,
        Some(n) => {
            EXPS.is_match(name) && (n == u64::MAX || layer_of(name).is_some_and(|il| il < n))
        }
    }
}

/// Bytes a tensor takes in a GPU buffer: CUDA pads quantized rows that are not a multiple of
/// 512 by one partial row (ggml-cuda.cu MATRIX_ROW_PADDING) and aligns each tensor to 128 bytes
/// (ggml_backend_cuda_buffer_type_get_alignment).
pub fn gpu_bytes(t: &Tensor) -> u64 {
    let mut b = t.bytes;
    if let TensorDtype::Ggml(ty) = &t.dtype {
        let ne0 = t.dims.first().copied().unwrap_or(0);
        if ty.is_quantized() && ne0 % 512 != 0 {
            b += ty.row_bytes(512 - ne0 % 512).unwrap_or(0);
        }
    }
    b.div_ceil(128) * 128
}

fn role(name: &str) -> CpuWeightRole {
    if name.starts_with("output.") {
        CpuWeightRole::Output
    } else if name.contains("_exps") {
        CpuWeightRole::Experts
    } else {
        CpuWeightRole::Other
    }
}

/// Place every tensor of `weights` (GGUF names).
pub fn place(
    cfg: &LlamaCppConfig,
    weights: &WeightSet,
    n_blocks: u64,
    n_main_layers: u64,
    tied: bool,
    free: &[u64],
) -> Placement {
    let layer_dev = layer_devices(cfg, n_blocks, free);
    let out_dev = layer_dev[n_blocks as usize];
    let rules: &[Override] = &cfg.overrides;
    let n_dev = free.len();
    let mut gpu = vec![0u64; n_dev];
    let mut host = 0u64;
    let mut largest: Option<(u64, CpuWeightRole)> = None;

    let mut put = |t: &Tensor, natural: Dev, copyable: bool, gpu: &mut Vec<u64>| {
        let dev = match rules.iter().find(|r| r.pattern.is_match(&t.name)) {
            Some(r) => match r.target {
                Target::Cpu => None,
                Target::Gpu(i) if i < n_dev => Some(i),
                Target::Gpu(_) => natural,
            },
            None if cpu_moe(cfg, &t.name) => None,
            None => natural,
        };
        match dev {
            Some(d) if cfg.split_mode == SplitMode::Row && t.dims.len() >= 2 => {
                // row split: each matrix is divided across the GPUs by the split shares
                let sp = splits(cfg, free);
                let mut prev = 0.0;
                for (i, s) in sp.iter().enumerate() {
                    gpu[i] += (gpu_bytes(t) as f64 * (s - prev)).round() as u64;
                    prev = *s;
                }
                let _ = d;
            }
            Some(d) => gpu[d] += gpu_bytes(t),
            None => {
                host += t.bytes;
                // 1-D tensors (norms, biases) run on the CPU without a copy
                if copyable && t.dims.len() >= 2 && t.dims.get(1).copied().unwrap_or(1) > 1 {
                    let r = role(&t.name);
                    if largest.map(|(b, _)| t.bytes > b).unwrap_or(true) {
                        largest = Some((t.bytes, r));
                    }
                }
            }
        }
    };
    for t in &weights.tensors {
        // NextN/MTP blocks past the main stack are created TENSOR_SKIP: read from the file but
        // put on no device (llama-model.cpp, GLM-4.5 nextn tensors)
        if layer_of(&t.name).is_some_and(|il| il >= n_main_layers) {
            continue;
        }
        let natural = match layer_of(&t.name) {
            Some(il) => layer_dev.get(il as usize).copied().flatten(),
            None if t.name.starts_with("output") => out_dev,
            // the input layer (token_embd, per-layer embeddings) always stays on the CPU
            None => None,
        };
        // token_embd is read by get_rows on the CPU: never a GPU op, never copied up
        let copyable = !t.name.starts_with("token_embd");
        put(t, natural, copyable, &mut gpu);
    }
    // tied embeddings: the output matrix is a duplicate of token_embd created on the output
    // layer's device (llama-model.cpp TENSOR_DUPLICATED)
    if tied && weights.get("output.weight").is_none() {
        if let Some(e) = weights.get("token_embd.weight") {
            let dup = Tensor {
                name: "output.weight".into(),
                ..e.clone()
            };
            put(&dup, out_dev, true, &mut gpu);
        }
    }
    let offloaded = layer_dev.iter().filter(|d| d.is_some()).count() as u64;
    Placement {
        layer_dev,
        gpu_weights: gpu,
        host_weights: host,
        largest_cpu_weight: largest,
        offloaded: (offloaded, n_blocks + 1),
    }
}
