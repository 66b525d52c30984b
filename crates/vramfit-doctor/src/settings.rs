//! Settings a log echoes: the command line, vLLM's `non-default args: {...}` and engine config
//! line, SGLang's `ServerArgs(...)`, llama.cpp's `llama_context: n_ctx = ...` lines, Ollama's
//! `starting llama server cmd=...`; and which engine wrote the log.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::events::clip;

/// The engine that wrote a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    Vllm,
    Sglang,
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
    Ollama,
    Tgi,
    Transformers,
    Pytorch,
    Lmdeploy,
    Mlx,
    Unknown,
}

impl Engine {
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::LlamaCpp => "llama.cpp",
            Engine::Ollama => "ollama",
            Engine::Tgi => "tgi",
            Engine::Transformers => "transformers",
            Engine::Pytorch => "pytorch",
            Engine::Lmdeploy => "lmdeploy",
            Engine::Mlx => "mlx",
            Engine::Unknown => "unknown",
        }
    }
}

/// What the log says about how the engine was configured. Absent = not printed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EchoedSettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
    // vLLM / SGLang
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_memory_utilization: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tensor_parallel_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline_parallel_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_num_seqs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_num_batched_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enforce_eager: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_cache_dtype: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_fraction_static: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_running_requests: Option<u64>,
    /// vLLM's CPU swap space per GPU, GiB (`--swap-space`, `swap_space=`)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_space: Option<u64>,
    /// SGLang's KV page size in tokens (`--page-size`)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u64>,
    // llama.cpp / Ollama
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_ctx: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_gpu_layers: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_batch: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_ubatch: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_parallel: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_layer: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flash_attn: Option<bool>,
    // TGI
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_batch_prefill_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_batch_total_tokens: Option<u64>,
    // lmdeploy
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_max_entry_count: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_len: Option<u64>,
    /// `PYTORCH_CUDA_ALLOC_CONF` (or `PYTORCH_ALLOC_CONF`) already holds expandable_segments:True
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expandable_segments: Option<bool>,
}

/// A setting we know, whatever spelling the engine uses.
#[derive(Clone, Copy)]
enum Key {
    Model,
    MaxModelLen,
    Util,
    Tp,
    Pp,
    MaxNumSeqs,
    MaxBatchedTokens,
    EnforceEager,
    KvDtype,
    MemFraction,
    MaxRunning,
    SwapSpace,
    PageSize,
    NCtx,
    Ngl,
    NBatch,
    NUbatch,
    NParallel,
    NLayer,
    FlashAttn,
    TgiPrefill,
    TgiTotal,
    CacheEntry,
    SessionLen,
}

/// Spellings: python keyword (vLLM config, SGLang ServerArgs, llama.cpp `name = value` lines)
/// and command-line flags (vllm/engine/arg_utils.py, sglang/srt/server_args.py,
/// llama.cpp common/arg.cpp, text-generation-launcher).
const NAMES: &[(&str, Key)] = &[
    ("model", Key::Model),
    ("model_path", Key::Model),
    ("max_model_len", Key::MaxModelLen),
    ("max_seq_len", Key::MaxModelLen),
    ("context_length", Key::MaxModelLen),
    ("gpu_memory_utilization", Key::Util),
    ("tensor_parallel_size", Key::Tp),
    ("tp_size", Key::Tp),
    ("pipeline_parallel_size", Key::Pp),
    ("max_num_seqs", Key::MaxNumSeqs),
    ("max_num_batched_tokens", Key::MaxBatchedTokens),
    ("enforce_eager", Key::EnforceEager),
    ("kv_cache_dtype", Key::KvDtype),
    ("mem_fraction_static", Key::MemFraction),
    ("max_running_requests", Key::MaxRunning),
    ("swap_space", Key::SwapSpace),
    ("page_size", Key::PageSize),
    ("n_ctx", Key::NCtx),
    ("n_batch", Key::NBatch),
    ("n_ubatch", Key::NUbatch),
    ("n_seq_max", Key::NParallel),
    ("n_layer", Key::NLayer),
    ("flash_attn", Key::FlashAttn),
    // Ollama options (api/types.go) in JSON or `PARAMETER` lines
    ("num_ctx", Key::NCtx),
    ("num_gpu", Key::Ngl),
    ("num_batch", Key::NBatch),
    // lmdeploy TurbomindEngineConfig
    ("cache_max_entry_count", Key::CacheEntry),
    ("session_len", Key::SessionLen),
];

const FLAGS: &[(&str, Key)] = &[
    ("--model", Key::Model),
    ("--model-path", Key::Model),
    ("--max-model-len", Key::MaxModelLen),
    ("--context-length", Key::MaxModelLen),
    ("--gpu-memory-utilization", Key::Util),
    ("--tensor-parallel-size", Key::Tp),
    ("--tp-size", Key::Tp),
    ("--tp", Key::Tp),
    ("-tp", Key::Tp),
    ("--pipeline-parallel-size", Key::Pp),
    ("-pp", Key::Pp),
    ("--max-num-seqs", Key::MaxNumSeqs),
    ("--max-num-batched-tokens", Key::MaxBatchedTokens),
    ("--enforce-eager", Key::EnforceEager),
    ("--kv-cache-dtype", Key::KvDtype),
    ("--mem-fraction-static", Key::MemFraction),
    ("--max-running-requests", Key::MaxRunning),
    ("--swap-space", Key::SwapSpace),
    ("--page-size", Key::PageSize),
    ("--ctx-size", Key::NCtx),
    ("-c", Key::NCtx),
    ("--n-gpu-layers", Key::Ngl),
    ("--gpu-layers", Key::Ngl),
    ("-ngl", Key::Ngl),
    ("--batch-size", Key::NBatch),
    ("-b", Key::NBatch),
    ("--ubatch-size", Key::NUbatch),
    ("-ub", Key::NUbatch),
    ("--parallel", Key::NParallel),
    ("-np", Key::NParallel),
    ("--flash-attn", Key::FlashAttn),
    ("-fa", Key::FlashAttn),
    ("--max-batch-prefill-tokens", Key::TgiPrefill),
    ("--max-batch-total-tokens", Key::TgiTotal),
    ("--cache-max-entry-count", Key::CacheEntry),
    ("--session-len", Key::SessionLen),
];

/// Flags without a value.
const SWITCHES: &[&str] = &["--enforce-eager", "-fa"];

/// `name=value` (vLLM config line, ServerArgs, llama.cpp `n_ctx = 4096`) and `'name': value`
/// (vLLM's non-default args dict).
static KV_PAIRS: LazyLock<[Regex; 2]> = LazyLock::new(|| {
    [
        Regex::new(r#"\b([a-z_]+)\s*=\s*('[^']*'|"[^"]*"|[^,\s)}{]+)"#).expect("static regex"),
        Regex::new(r#"['"]([a-z_]+)['"]\s*:\s*('[^']*'|"[^"]*"|[^,\s)}{]+)"#)
            .expect("static regex"),
    ]
});
static YAML_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:-\s+)?([a-z][a-z0-9]*(?:[_-][a-z0-9]+)+)\s*:\s+([\w.]+)\s*(?:#.*)?$")
        .expect("static regex")
});
static VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:vLLM API server version|vLLM version|LLM engine \(v)\s*v?(\d+\.\d+[\w.+-]*)|sglang==(\d[\w.]*)|build: (\d+) \(")
        .expect("static regex")
});
static ALLOC_CONF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"PYTORCH_(?:CUDA_|HIP_)?ALLOC_CONF=\S*expandable_segments:(True|true|1|False|false|0)",
    )
    .expect("static regex")
});

fn int(v: &str) -> Option<u64> {
    let v = v
        .trim_matches(|c| c == '\'' || c == '"')
        .replace(['_', ','], "");
    if let Some(k) = v.strip_suffix(['k', 'K']) {
        return k.parse::<u64>().ok().map(|n| n * 1024);
    }
    v.parse().ok()
}

impl EchoedSettings {
    fn set(&mut self, key: Key, raw: &str) {
        let v = raw.trim().trim_matches(|c| c == '\'' || c == '"');
        if v.is_empty() || v == "None" {
            return;
        }
        let flag = || matches!(v, "True" | "true" | "1" | "on" | "enabled");
        match key {
            Key::Model => self.model = Some(v.chars().take(200).collect()),
            Key::MaxModelLen => self.max_model_len = int(v).or(self.max_model_len),
            Key::Util => {
                self.gpu_memory_utilization = v
                    .parse()
                    .ok()
                    .filter(|u: &f64| *u > 0.0 && *u <= 1.0)
                    .or(self.gpu_memory_utilization)
            }
            Key::Tp => self.tensor_parallel_size = int(v).or(self.tensor_parallel_size),
            Key::Pp => self.pipeline_parallel_size = int(v).or(self.pipeline_parallel_size),
            Key::MaxNumSeqs => self.max_num_seqs = int(v).or(self.max_num_seqs),
            Key::MaxBatchedTokens => {
                self.max_num_batched_tokens = int(v).or(self.max_num_batched_tokens)
            }
            Key::EnforceEager => self.enforce_eager = Some(flag()),
            Key::KvDtype => self.kv_cache_dtype = Some(v.chars().take(32).collect()),
            Key::MemFraction => {
                self.mem_fraction_static = v.parse().ok().or(self.mem_fraction_static)
            }
            Key::MaxRunning => self.max_running_requests = int(v).or(self.max_running_requests),
            Key::SwapSpace => self.swap_space = int(v).or(self.swap_space),
            Key::PageSize => self.page_size = int(v).or(self.page_size),
            Key::NCtx => self.n_ctx = int(v).filter(|n| *n > 0).or(self.n_ctx),
            Key::Ngl => self.n_gpu_layers = v.parse().ok().or(self.n_gpu_layers),
            Key::NBatch => self.n_batch = int(v).or(self.n_batch),
            Key::NUbatch => self.n_ubatch = int(v).or(self.n_ubatch),
            Key::NParallel => self.n_parallel = int(v).or(self.n_parallel),
            Key::NLayer => self.n_layer = int(v).or(self.n_layer),
            Key::FlashAttn => self.flash_attn = Some(flag()),
            Key::TgiPrefill => self.max_batch_prefill_tokens = int(v),
            Key::TgiTotal => self.max_batch_total_tokens = int(v),
            Key::CacheEntry => {
                self.cache_max_entry_count = v.parse().ok().or(self.cache_max_entry_count)
            }
            Key::SessionLen => self.session_len = int(v).or(self.session_len),
        }
    }
}

fn looks_like_config(line: &str) -> bool {
    line.contains("non-default args")
        || line.contains("with config:")
        || line.contains("ServerArgs(")
        || line.contains("server_args=")
        || line.contains("llama_context:")
        || line.contains("llama_new_context_with_model:")
        || line.contains("print_info:")
        || line.contains("llm_load_print_meta:")
        || line.contains("Args {")
        || line.contains("EngineConfig(")
        || line.contains("\"options\"")
}

/// Ollama Modelfile lines: `PARAMETER num_ctx 131072`.
/// llama.cpp's KV cache line: `llama_kv_cache: size = ... (131072 cells, ...)` (older builds:
/// `llama_kv_cache_init: kv_size = 4096`); its cells are the context when `n_ctx` is not echoed.
static KV_CELLS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"llama_kv_cache\w*:.*?(?:\((\d+) cells|kv_size = (\d+))").expect("static regex")
});

static PARAMETER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"PARAMETER\s+(num_ctx|num_gpu|num_batch)\s+(\d+)").expect("static regex")
});

fn looks_like_command(line: &str) -> bool {
    [
        "vllm serve",
        "vllm.entrypoints",
        "sglang.launch_server",
        "llama-server",
        "llama-cli",
        "llama-bench",
        "llama-sweep-bench",
        "llama server",
        "text-generation-launcher",
        "--max-model-len",
        "--gpu-memory-utilization",
        "-ngl",
        "--n-gpu-layers",
        "--ctx-size",
        "lmdeploy serve",
        "lmdeploy chat",
    ]
    .iter()
    .any(|m| line.contains(m))
}

/// Read the settings a log echoes. Later mentions override earlier ones (a restarted server).
pub fn read_settings(text: &str) -> EchoedSettings {
    let mut s = EchoedSettings::default();
    // the largest KV cache of the log (an iSWA model prints its smaller sliding-window cache too)
    let mut kv_cells: Option<u64> = None;
    for line in text.lines().map(clip) {
        if let Some(c) = line
            .contains("llama_kv_cache")
            .then(|| KV_CELLS.captures(line))
            .flatten()
        {
            let n = c.get(1).or(c.get(2)).and_then(|m| int(m.as_str()));
            kv_cells = kv_cells.max(n.filter(|n| *n > 0));
        }
        if looks_like_config(line) {
            for pairs in KV_PAIRS.iter() {
                for c in pairs.captures_iter(line).take(256) {
                    if let Some((_, key)) = NAMES.iter().find(|(n, _)| *n == &c[1]) {
                        s.set(*key, &c[2]);
                    }
                }
            }
        }
        // a YAML config (SGLang/vLLM `--config` files, launcher recipes): `mem-fraction-static: 0.95`
        if let Some(c) = YAML_PAIR.captures(line) {
            let name = c[1].replace('-', "_");
            if let Some((_, key)) = NAMES.iter().find(|(n, _)| *n == name) {
                s.set(*key, &c[2]);
            }
        }
        if line.contains("PARAMETER") {
            for c in PARAMETER.captures_iter(line).take(16) {
                if let Some((_, key)) = NAMES.iter().find(|(n, _)| *n == &c[1]) {
                    s.set(*key, &c[2]);
                }
            }
        }
        if looks_like_command(line) {
            let words: Vec<&str> = line.split_whitespace().take(512).collect();
            for (j, w) in words.iter().enumerate() {
                // `vllm serve MODEL`: the model is positional
                if *w == "serve" {
                    if let Some(m) = words.get(j + 1).filter(|m| !m.starts_with('-')) {
                        s.set(Key::Model, m);
                    }
                }
                let (name, inline) = match w.split_once('=') {
                    Some((n, v)) if n.starts_with('-') => (n, Some(v)),
                    _ => (*w, None),
                };
                let Some((_, key)) = FLAGS.iter().find(|(f, _)| *f == name) else {
                    continue;
                };
                if let Some(v) = inline {
                    s.set(*key, v);
                } else if SWITCHES.contains(&name)
                    && words.get(j + 1).is_none_or(|n| n.starts_with('-'))
                {
                    s.set(*key, "true");
                } else if let Some(v) = words.get(j + 1) {
                    s.set(*key, v.trim_end_matches(['\\', ',', '"']));
                }
            }
        }
        let versioned = line.contains("version")
            || line.contains("engine (v")
            || line.contains("sglang==")
            || line.contains("build: ");
        if let Some(c) = versioned.then(|| VERSION.captures(line)).flatten() {
            if let Some(v) = c.get(1).or(c.get(2)).or(c.get(3)) {
                s.engine_version = Some(v.as_str().chars().take(40).collect());
            }
        }
        // PyTorch's OOM hint names the setting; only an echoed environment counts
        let hint = !line.contains("ALLOC_CONF")
            || line.contains("out of memory")
            || line.contains("try setting");
        if let Some(c) = (!hint).then(|| ALLOC_CONF.captures(line)).flatten() {
            s.expandable_segments = Some(matches!(&c[1], "True" | "true" | "1"));
        }
    }
    s.n_ctx = s.n_ctx.or(kv_cells);
    s
}

/// Markers of each engine, strongest first; the engine with the most marker hits wins.
const ENGINE_MARKERS: &[(&str, Engine)] = &[
    ("ollama", Engine::Ollama),
    // a report that names the engine in its prose
    ("Ollama", Engine::Ollama),
    ("llama runner", Engine::Ollama),
    ("sglang", Engine::Sglang),
    ("mem-fraction-static", Engine::Sglang),
    ("mem_fraction_static", Engine::Sglang),
    ("text-generation-launcher", Engine::Tgi),
    ("text_generation_server", Engine::Tgi),
    // the launcher's tracing target (router/launcher src/main.rs)
    ("text_generation_launcher", Engine::Tgi),
    ("max-batch-prefill-tokens", Engine::Tgi),
    ("Warmup(", Engine::Tgi),
    ("vllm", Engine::Vllm),
    ("vLLM", Engine::Vllm),
    ("EngineCore", Engine::Vllm),
    ("gpu_memory_utilization", Engine::Vllm),
    ("kv_cache_utils", Engine::Vllm),
    ("model_runner.py", Engine::Vllm),
    ("Capturing cudagraphs", Engine::Vllm),
    ("desired GPU memory utilization", Engine::Vllm),
    ("llama_", Engine::LlamaCpp),
    ("ggml_", Engine::LlamaCpp),
    ("llama-server", Engine::LlamaCpp),
    ("load_tensors", Engine::LlamaCpp),
    ("turbomind", Engine::Lmdeploy),
    // lmdeploy's Python API (TurbomindEngineConfig)
    ("Turbomind", Engine::Lmdeploy),
    ("lmdeploy", Engine::Lmdeploy),
    ("[TM]", Engine::Lmdeploy),
    ("mlx.core", Engine::Mlx),
    ("mlx_lm", Engine::Mlx),
    ("MLX error", Engine::Mlx),
    ("[metal::", Engine::Mlx),
    ("[METAL]", Engine::Mlx),
    ("transformers", Engine::Transformers),
    ("dispatched on the CPU", Engine::Transformers),
    ("BitsAndBytes", Engine::Transformers),
    ("from_pretrained", Engine::Transformers),
    (".generate(", Engine::Transformers),
    ("torch", Engine::Pytorch),
    ("PyTorch", Engine::Pytorch),
    ("MPS backend", Engine::Pytorch),
];

/// Which engine wrote the log, by counting markers (Ollama and SGLang logs also mention
/// llama.cpp and torch; they win ties by coming first).
pub fn detect_engine(text: &str) -> Engine {
    // the engine names itself at start-up and around the failure: the first and last 2 MiB
    // of a long log say as much as the whole of it, at a fraction of the scanning
    const SPAN: usize = 2 << 20;
    let (head, tail) = if text.len() > 2 * SPAN {
        let mut a = SPAN;
        while !text.is_char_boundary(a) {
            a -= 1;
        }
        let mut b = text.len() - SPAN;
        while !text.is_char_boundary(b) {
            b += 1;
        }
        (&text[..a], &text[b..])
    } else {
        (text, "")
    };
    let mut score: Vec<(Engine, usize)> = Vec::new();
    for (m, e) in ENGINE_MARKERS {
        let n = head.matches(m).take(1000).count() + tail.matches(m).take(1000).count();
        if n == 0 {
            continue;
        }
        // a wrapper engine's name is decisive even if the wrapped engine is more verbose
        let weight = match e {
            Engine::Ollama | Engine::Sglang | Engine::Tgi | Engine::Lmdeploy => 1000,
            Engine::Vllm => 100,
            Engine::Pytorch => 1,
            _ => 10,
        };
        match score.iter_mut().find(|(x, _)| x == e) {
            Some((_, s)) => *s += n * weight,
            None => score.push((*e, n * weight)),
        }
    }
    score
        .into_iter()
        .max_by_key(|(_, s)| *s)
        .map_or(Engine::Unknown, |(e, _)| e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_command_and_config() {
        let s = read_settings(
            "vllm serve Qwen/Qwen3-8B --max-model-len 32k --gpu-memory-utilization=0.95 -tp 2 --enforce-eager\n\
             INFO non-default args: {'model': 'Qwen/Qwen3-8B', 'max_num_seqs': 512}",
        );
        assert_eq!(s.model.as_deref(), Some("Qwen/Qwen3-8B"));
        assert_eq!(s.max_model_len, Some(32768));
        assert_eq!(s.gpu_memory_utilization, Some(0.95));
        assert_eq!(s.tensor_parallel_size, Some(2));
        assert_eq!(s.enforce_eager, Some(true));
        assert_eq!(s.max_num_seqs, Some(512));
    }

    #[test]
    fn llama_cpp_context_lines() {
        let s = read_settings(
            "./llama-server -m model.gguf -c 65536 -ngl 99 -fa\nllama_context: n_ctx         = 65536\nllama_context: n_ubatch      = 512\nprint_info: n_layer          = 61",
        );
        assert_eq!(s.n_ctx, Some(65536));
        assert_eq!(s.n_gpu_layers, Some(99));
        assert_eq!(s.flash_attn, Some(true));
        assert_eq!(s.n_ubatch, Some(512));
        assert_eq!(s.n_layer, Some(61));
    }

    #[test]
    fn kv_cache_cells_stand_in_for_an_unechoed_context() {
        // a pasted tail with no `llama_context: n_ctx` line; the iSWA cache's smaller SWA part
        // does not win
        let s = read_settings(
            "llama_kv_cache: size = 16384.00 MiB (131072 cells,  32 layers,  1/1 seqs), K (f16): 8192.00 MiB, V (f16): 8192.00 MiB\nllama_kv_cache_iswa: creating SWA KV cache, size = 1024 cells\nllama_kv_cache: size = 64.00 MiB (  1024 cells,  24 layers,  1/1 seqs)",
        );
        assert_eq!(s.n_ctx, Some(131072));
        let s = read_settings("llama_kv_cache_init: kv_size = 4096, offload = 1, type_k = 'f16'");
        assert_eq!(s.n_ctx, Some(4096));
        // the echoed context wins
        let s = read_settings("llama_context: n_ctx = 8192\nllama_kv_cache: size = 1.00 MiB (8448 cells, 1 layers, 1/1 seqs)");
        assert_eq!(s.n_ctx, Some(8192));
    }

    #[test]
    fn engines() {
        assert_eq!(detect_engine("ERROR [core.py:343] vllm ..."), Engine::Vllm);
        assert_eq!(
            detect_engine("llama_kv_cache_init: ggml_"),
            Engine::LlamaCpp
        );
        assert_eq!(
            detect_engine("ollama llama runner ggml_ llama_"),
            Engine::Ollama
        );
        assert_eq!(detect_engine("nothing here"), Engine::Unknown);
    }
}
