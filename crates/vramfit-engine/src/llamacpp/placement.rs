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

/// The routed-expert tensors `--cpu-moe` / `--n-cpu-moe` keep on the CPU
/// (common/common.h llm_ffn_exps_cpu_override).
fn is_routed_expert(name: &str) -> bool {
    static EXPS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\.ffn_(up|down|gate|gate_up)_(ch|)exps").expect("static pattern")
    });
    EXPS.is_match(name)
}

/// `--cpu-moe` / `--n-cpu-moe N`: the routed-expert tensors of every layer (or of layers below N)
/// stay on the CPU. Checked after the user's `-ot` rules, on what [`PreparedWeights`] read of
/// the name once: per-layer regexes cost more than the whole layout.
fn cpu_moe(cfg: &LlamaCppConfig, t: &TensorInfo) -> bool {
    match cfg.n_cpu_moe {
        None => false,
        Some(n) => t.routed_expert && (n == u64::MAX || t.layer.is_some_and(|il| il < n)),
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

/// What placement reads of one tensor, taken from its name and shape once per weight set.
#[derive(Debug, Clone)]
struct TensorInfo {
    /// index in `WeightSet::tensors`; None for the tied output duplicate
    index: Option<usize>,
    layer: Option<u64>,
    bytes: u64,
    gpu_bytes: u64,
    /// 2-D or more: divided across the GPUs by a row split
    two_d: bool,
    /// 2-D or more with more than one row: a GPU op would copy it up when left on the CPU
    matrix: bool,
    routed_expert: bool,
    /// which FFN projection the name starts (`--fit` moves parts of a layer by these)
    ffn: super::autofit::FfnPart,
    role: CpuWeightRole,
    /// `token_embd*`: read by get_rows on the CPU, never copied up
    input: bool,
    /// `output*` without a layer number: on the output layer's device
    output: bool,
}

impl TensorInfo {
    fn of(index: Option<usize>, t: &Tensor) -> TensorInfo {
        TensorInfo {
            index,
            layer: layer_of(&t.name),
            bytes: t.bytes,
            gpu_bytes: gpu_bytes(t),
            two_d: t.dims.len() >= 2,
            matrix: t.dims.len() >= 2 && t.dims.get(1).copied().unwrap_or(1) > 1,
            routed_expert: is_routed_expert(&t.name),
            ffn: super::autofit::FfnPart::of(&t.name),
            role: role(&t.name),
            // the per-layer token embeddings of Gemma 3n / 4 are an input layer too (get_rows)
            input: t.name.starts_with("token_embd") || t.name.starts_with("per_layer_token_embd"),
            output: t.name.starts_with("output"),
        }
    }
}

/// A weight set read once for placement: each tensor's layer, GPU bytes and role, which do not
/// change with the knobs. Searches that lay out one model many times build it once;
/// [`place`] builds it on every call.
#[derive(Debug, Clone)]
pub struct PreparedWeights<'a> {
    pub weights: &'a WeightSet,
    /// repeating blocks llama.cpp sees ([`super::n_blocks`])
    pub n_blocks: u64,
    n_main_layers: u64,
    tensors: Vec<TensorInfo>,
    /// tied embeddings: the output matrix llama.cpp duplicates from token_embd
    tied_output: Option<TensorInfo>,
}

impl<'a> PreparedWeights<'a> {
    /// `n_main_layers`: the spec's layers (blocks past them are NextN/MTP, put on no device);
    /// `tied`: the model ties its output matrix to the token embeddings.
    pub fn new(weights: &'a WeightSet, n_main_layers: u64, tied: bool) -> PreparedWeights<'a> {
        let tensors: Vec<TensorInfo> = weights
            .tensors
            .iter()
            .enumerate()
            .map(|(i, t)| TensorInfo::of(Some(i), t))
            .collect();
        let n_blocks = tensors
            .iter()
            .filter_map(|t| t.layer)
            .max()
            .map(|m| m + 1)
            .unwrap_or(0)
            .max(n_main_layers);
        let tied_output = if tied && weights.get("output.weight").is_none() {
            weights.get("token_embd.weight").map(|e| {
                let dup = Tensor {
                    name: "output.weight".into(),
                    ..e.clone()
                };
                TensorInfo::of(None, &dup)
            })
        } else {
            None
        };
        PreparedWeights {
            weights,
            n_blocks,
            n_main_layers,
            tensors,
            tied_output,
        }
    }

    fn name(&self, t: &TensorInfo) -> &str {
        match t.index {
            Some(i) => &self.weights.tensors[i].name,
            None => "output.weight",
        }
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
    let mut pw = PreparedWeights::new(weights, n_main_layers, tied);
    pw.n_blocks = n_blocks;
    place_prepared(cfg, &pw, free)
}

/// [`place`] on a weight set read beforehand.
pub fn place_prepared(cfg: &LlamaCppConfig, pw: &PreparedWeights, free: &[u64]) -> Placement {
    let n_blocks = pw.n_blocks;
    let layer_dev = layer_devices(cfg, n_blocks, free);
    let out_dev = layer_dev[n_blocks as usize];
    let rules: &[Override] = &cfg.overrides;
    let n_dev = free.len();
    let row_split = (cfg.split_mode == SplitMode::Row).then(|| splits(cfg, free));
    let mut gpu = vec![0u64; n_dev];
    let mut host = 0u64;
    let mut largest: Option<(u64, CpuWeightRole)> = None;

    let mut put = |t: &TensorInfo, natural: Dev, copyable: bool, gpu: &mut Vec<u64>| {
        let rule = if rules.is_empty() {
            None
        } else {
            let name = pw.name(t);
            rules.iter().find(|r| r.pattern.is_match(name))
        };
        let dev = match rule {
            Some(r) => match r.target {
                Target::Cpu => None,
                Target::Gpu(i) if i < n_dev => Some(i),
                Target::Gpu(_) => natural,
            },
            None if cpu_moe(cfg, t) => None,
            None => match (&cfg.fit_layers, t.layer) {
                (Some(parts), Some(il)) => parts.device_of(il, t.ffn, t.routed_expert, natural),
                _ => natural,
            },
        };
        match (dev, &row_split) {
            (Some(_), Some(sp)) if t.two_d => {
                // row split: each matrix is divided across the GPUs by the split shares
                let mut prev = 0.0;
                for (i, s) in sp.iter().enumerate() {
                    gpu[i] += (t.gpu_bytes as f64 * (s - prev)).round() as u64;
                    prev = *s;
                }
            }
            (Some(d), _) => gpu[d] += t.gpu_bytes,
            (None, _) => {
                host += t.bytes;
                // 1-D tensors (norms, biases) run on the CPU without a copy
                if copyable && t.matrix && largest.map(|(b, _)| t.bytes > b).unwrap_or(true) {
                    largest = Some((t.bytes, t.role));
                }
            }
        }
    };
    for t in &pw.tensors {
        // NextN/MTP blocks past the main stack are created TENSOR_SKIP: read from the file but
        // put on no device (llama-model.cpp, GLM-4.5 nextn tensors)
        if t.layer.is_some_and(|il| il >= pw.n_main_layers) {
            continue;
        }
        let natural = match t.layer {
            Some(il) => layer_dev.get(il as usize).copied().flatten(),
            None if t.output => out_dev,
            // the input layer (token_embd, per-layer embeddings) always stays on the CPU
            None => None,
        };
        // token_embd is read by get_rows on the CPU: never a GPU op, never copied up
        put(t, natural, !t.input, &mut gpu);
    }
    // tied embeddings: the output matrix is a duplicate of token_embd created on the output
    // layer's device (llama-model.cpp TENSOR_DUPLICATED); on the CPU it is the same mapped
    // bytes as token_embd, counted once (a CPU-only b11312 prints the file's size for gemma3)
    if let Some(dup) = pw.tied_output.as_ref().filter(|_| out_dev.is_some()) {
        put(dup, out_dev, true, &mut gpu);
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

#[cfg(test)]
mod tests {
    use super::*;
    use vramfit_model::hf_config::spec_from_config;
    use vramfit_model::quant::{self, FileType};
    use vramfit_model::{catalog, layout, GgmlType};

    /// Placement read off each tensor's name on every call, as before [`PreparedWeights`]:
    /// the reference the prepared placement must equal.
    fn place_by_name(
        cfg: &LlamaCppConfig,
        w: &WeightSet,
        nb: u64,
        main: u64,
        tied: bool,
        free: &[u64],
    ) -> (Vec<u64>, u64, Option<(u64, CpuWeightRole)>) {
        let layer_dev = layer_devices(cfg, nb, free);
        let out_dev = layer_dev[nb as usize];
        let (mut gpu, mut host, mut largest) = (vec![0u64; free.len()], 0u64, None);
        let mut put = |t: &Tensor, natural: Dev, copyable: bool| {
            let dev = match cfg.overrides.iter().find(|r| r.pattern.is_match(&t.name)) {
                Some(r) => match r.target {
                    Target::Cpu => None,
                    Target::Gpu(i) if i < free.len() => Some(i),
                    Target::Gpu(_) => natural,
                },
                None if cfg.n_cpu_moe.is_some_and(|n| {
                    is_routed_expert(&t.name)
                        && (n == u64::MAX || layer_of(&t.name).is_some_and(|il| il < n))
                }) =>
                {
                    None
                }
                None => natural,
            };
            match dev {
                Some(_) if cfg.split_mode == SplitMode::Row && t.dims.len() >= 2 => {
                    let mut prev = 0.0;
                    for (i, s) in splits(cfg, free).iter().enumerate() {
                        gpu[i] += (gpu_bytes(t) as f64 * (s - prev)).round() as u64;
                        prev = *s;
                    }
                }
                Some(d) => gpu[d] += gpu_bytes(t),
                None => {
                    host += t.bytes;
                    if copyable
                        && t.dims.len() >= 2
                        && t.dims.get(1).copied().unwrap_or(1) > 1
                        && largest.map(|(b, _)| t.bytes > b).unwrap_or(true)
                    {
                        largest = Some((t.bytes, role(&t.name)));
                    }
                }
            }
        };
        for t in &w.tensors {
            if layer_of(&t.name).is_some_and(|il| il >= main) {
                continue;
            }
            let natural = match layer_of(&t.name) {
                Some(il) => layer_dev.get(il as usize).copied().flatten(),
                None if t.name.starts_with("output") => out_dev,
                None => None,
            };
            let input =
                t.name.starts_with("token_embd") || t.name.starts_with("per_layer_token_embd");
            put(t, natural, !input);
        }
        if tied && w.get("output.weight").is_none() {
            if let Some(e) = w.get("token_embd.weight") {
                put(
                    &Tensor {
                        name: "output.weight".into(),
                        ..e.clone()
                    },
                    out_dev,
                    true,
                );
            }
        }
        (gpu, host, largest)
    }

    #[test]
    fn prepared_placement_equals_placement_by_name() {
        let q = FileType::parse("Q3_K_M").unwrap().ftype;
        let flags: &[&str] = &[
            "",
            "-ngl 5",
            "--cpu-moe",
            "--n-cpu-moe 7",
            "-ot exps=CPU -ot attn=CUDA1",
            "-ot output=CPU",
            "-sm row --n-cpu-moe 3",
            "-ts 1,3 -ngl 20",
        ];
        let ids = [
            "Qwen/Qwen3-30B-A3B",
            "Qwen/Qwen3-0.6B",
            "zai-org/GLM-4.5-Air",
            "deepseek-ai/DeepSeek-V2-Lite",
            "google/gemma-3-4b-it",
            "meta-llama/Llama-3.1-8B-Instruct",
            "ai21labs/Jamba-v0.1",
        ];
        for id in ids {
            let m = catalog::models().iter().find(|m| m.id == id).unwrap();
            let spec = spec_from_config(&m.id, &m.config).unwrap();
            let w = quant::predict(&layout::synthesize(&spec, GgmlType::F16), &spec, q, false);
            let pw = PreparedWeights::new(&w, spec.n_layer(), spec.tie_word_embeddings);
            for free in [vec![20u64 << 30], vec![40 << 30, 10 << 30]] {
                for f in flags {
                    let mut args = vec!["-m".to_string(), "x.gguf".to_string()];
                    args.extend(f.split_whitespace().map(String::from));
                    let cfg = super::super::parse("llama-server", &args, &[], None).unwrap();
                    let p = place_prepared(&cfg, &pw, &free);
                    let want = place_by_name(
                        &cfg,
                        &w,
                        pw.n_blocks,
                        spec.n_layer(),
                        spec.tie_word_embeddings,
                        &free,
                    );
                    assert_eq!(
                        (p.gpu_weights, p.host_weights, p.largest_cpu_weight),
                        want,
                        "{id} {f} {free:?}"
                    );
                }
            }
        }
    }
}
