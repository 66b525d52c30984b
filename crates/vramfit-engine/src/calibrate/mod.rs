//! Calibration from the user's own engine: a vLLM, SGLang or llama.cpp startup log is read
//! ([`read_log`]) into the components the engine measured (weights, activation peak, non-torch,
//! CUDA graphs, the KV pool it sized; llama.cpp's buffers), identified by model × engine version
//! × GPU, and stored ([`store`]). The engine models apply a matching calibration
//! ([`crate::vllm::calibrated`], [`crate::sglang`]): the measured numbers replace the predicted
//! ones and what a changed setting moves is the predicted difference, so a what-if
//! (`--gpu-memory-utilization 0.85`, `--max-num-seqs 64`, another `--max-model-len`) starts from
//! the user's own numbers.
//!
//! A log that cannot give one well-defined calibration is refused with the reason: another
//! engine's log, two server starts (two API-server pids, two versions), disagreeing measurements
//! of one worker, a log that ends before the KV cache was sized.

pub mod llamacpp_log;
pub mod registry;
pub mod scan;
pub mod sglang_log;
pub mod store;
pub mod vllm_log;

use serde::{Deserialize, Serialize};

/// The settings of the run the log comes from, as the log states them (None: not printed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LogSettings {
    pub gpu_memory_utilization: Option<f64>,
    pub max_model_len: Option<u64>,
    pub max_num_batched_tokens: Option<u64>,
    pub max_num_seqs: Option<u64>,
    pub tensor_parallel_size: Option<u64>,
    pub pipeline_parallel_size: Option<u64>,
    pub kv_cache_dtype: Option<String>,
    pub block_size: Option<u64>,
    pub enforce_eager: Option<bool>,
    pub quantization: Option<String>,
    /// vLLM v0.21+: the CUDA-graph estimate was taken out of the budget
    pub cuda_graphs_charged: Option<bool>,
    /// `--kv-cache-memory-bytes`: the pool was not profiled
    pub kv_cache_memory_given: bool,
    // SGLang
    pub mem_fraction_static: Option<f64>,
    pub context_length: Option<u64>,
    pub chunked_prefill_size: Option<u64>,
    pub cuda_graph_max_bs: Option<u64>,
    // llama.cpp
    pub n_ctx: Option<u64>,
    pub n_ubatch: Option<u64>,
    pub n_seq_max: Option<u64>,
}

/// What the engine measured (bytes; None: not printed). Per-worker values are the binding
/// worker's (the one with the smallest pool), as the engine sizes the pool by it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Measured {
    pub weights_bytes: Option<u64>,
    pub activation_bytes: Option<u64>,
    pub non_torch_bytes: Option<u64>,
    /// vLLM v0.27+: weights + non-torch, from mem_get_info
    pub consumed_bytes: Option<u64>,
    pub cuda_graph_estimate_bytes: Option<u64>,
    pub cuda_graph_bytes: Option<u64>,
    /// the budget (total × utilization) the log printed
    pub requested_bytes: Option<u64>,
    pub free_at_start_bytes: Option<u64>,
    pub available_kv_bytes: Option<i64>,
    pub num_gpu_blocks: Option<u64>,
    pub kv_tokens: Option<u64>,
    pub max_concurrency: Option<f64>,
    /// vLLM's estimated maximum model length when the KV check failed
    pub estimated_max_model_len: Option<u64>,
    // SGLang
    pub avail_after_load_bytes: Option<u64>,
    pub max_total_num_tokens: Option<u64>,
    pub kv_pool_bytes: Option<u64>,
    // llama.cpp, per device in order (CUDA0, CUDA1, ...)
    pub device_model_bytes: Vec<u64>,
    pub device_kv_bytes: Vec<u64>,
    pub device_compute_bytes: Vec<u64>,
}

/// How the run ended, as far as the log shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    #[default]
    Started,
    NoKvMemory,
    InsufficientKv,
    OutOfMemory,
}

/// One calibration: a log's measurements, keyed by model × engine × version × GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// "vllm" | "sglang" | "llama.cpp"
    pub engine: String,
    /// the model as the log names it (repo id or local path)
    pub model: String,
    pub engine_version: Option<String>,
    pub gpu_name: Option<String>,
    /// per-GPU total memory as the engine saw it (cudaMemGetInfo)
    pub gpu_total_bytes: Option<u64>,
    /// the log file it came from
    pub source: String,
    pub settings: LogSettings,
    pub measured: Measured,
    pub outcome: Outcome,
    /// what the reader could not settle; kept with the calibration and shown when it is used
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// Why a log gives no calibration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// Which engine wrote a log (None: none recognised), from markers only that engine prints.
pub fn detect_engine(text: &str) -> Vec<&'static str> {
    const VLLM: &[&str] = &[
        "vLLM API server version",
        "LLM engine (v",
        "Available KV cache memory",
        "kv_cache_utils.py",
        "gpu_model_runner.py",
        "the rest of the memory reserved for KV Cache",
        "# GPU blocks:",
    ];
    const SGLANG: &[&str] = &[
        "server_args=ServerArgs(",
        "KV Cache is allocated. #tokens",
        "max_total_num_tokens=",
        "Load weight end.",
        "sglang.launch_server",
    ];
    const LLAMA: &[&str] = &[
        "llama_kv_cache",
        "load_tensors:",
        "llama_context:",
        "llama_model_loader:",
        "llm_load_tensors:",
        "compute buffer size",
    ];
    static SET: std::sync::OnceLock<(regex::Regex, usize, usize)> = std::sync::OnceLock::new();
    let (re, nv, ns) = SET.get_or_init(|| {
        let all: Vec<&str> = VLLM.iter().chain(SGLANG).chain(LLAMA).copied().collect();
        let alt: Vec<String> = all
            .iter()
            .map(|m| format!("({})", regex::escape(m)))
            .collect();
        (
            regex::Regex::new(&alt.join("|")).expect("literal alternation"),
            VLLM.len(),
            SGLANG.len(),
        )
    });
    // one pass; each engine is found at its first marker
    let mut seen = [false; 3];
    for caps in re.captures_iter(text) {
        let i = (1..caps.len())
            .find(|&i| caps.get(i).is_some())
            .unwrap_or(1)
            - 1;
        let e = if i < *nv {
            0
        } else if i < nv + ns {
            1
        } else {
            2
        };
        seen[e] = true;
        if seen.iter().all(|s| *s) {
            break;
        }
    }
    let names = ["vllm", "sglang", "llama.cpp"];
    (0..3).filter(|&i| seen[i]).map(|i| names[i]).collect()
}

/// The largest log read (bytes): a startup log is kilobytes to a few megabytes; a longer file
/// is mostly request traffic, of which only the start matters.
pub const MAX_LOG_BYTES: usize = 64 << 20;

/// Read a startup log into a calibration. `source`: the file name, kept for the report.
pub fn read_log(text: &str, source: &str) -> Result<Calibration, Refusal> {
    let text = if text.len() > MAX_LOG_BYTES {
        let mut end = MAX_LOG_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        &text[..end]
    } else {
        text
    };
    let engines = detect_engine(text);
    match engines.as_slice() {
        [] => Err(Refusal(format!(
            "{source}: no vLLM, SGLang or llama.cpp startup lines found (such as 'Available KV cache memory', 'KV Cache is allocated', 'KV buffer size'): give the engine's startup log"
        ))),
        ["vllm"] => vllm_log::read(text, source),
        ["sglang"] => sglang_log::read(text, source),
        ["llama.cpp"] => llamacpp_log::read(text, source),
        // vLLM prints a few words llama.cpp also prints (compute buffer size in GGUF runs)
        ["vllm", "llama.cpp"] if text.contains("vLLM API server version") || text.contains("LLM engine (v") => {
            vllm_log::read(text, source)
        }
        many => Err(Refusal(format!(
            "{source}: the log mixes {} lines: give one engine's startup log",
            many.join(" and ")
        ))),
    }
}

/// The last path component of a model name, lower-cased: `/models/Qwen3-8B` and `Qwen/Qwen3-8B`
/// name the same model.
pub fn model_stem(model: &str) -> String {
    model
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase()
}
