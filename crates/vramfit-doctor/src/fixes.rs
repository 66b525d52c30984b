//! Fixes: the arithmetic done from the log's own numbers, and the hook through which the
//! engine memory models compute what the log alone cannot.

use serde::Serialize;

use crate::settings::{EchoedSettings, Engine};

/// One change to make. `flag` is a command-line flag or environment variable (`--max-model-len`,
/// `PYTORCH_CUDA_ALLOC_CONF`); empty when the fix is an action (free another process, add RAM),
/// which `why` then states. `value` is empty for switches (`--enforce-eager`) and actions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fix {
    pub flag: String,
    pub value: String,
    pub why: String,
    /// what `check`'s engine model says of the command with this fix applied (`vramfit doctor
    /// LOG -- <command>` or `--gpu`); absent when the fix was not re-checked
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked: Option<String>,
}

impl Fix {
    pub fn flag(flag: &str, value: impl ToString, why: impl Into<String>) -> Fix {
        Fix {
            flag: flag.to_string(),
            value: value.to_string(),
            why: why.into(),
            checked: None,
        }
    }

    pub fn action(why: impl Into<String>) -> Fix {
        Fix {
            flag: String::new(),
            value: String::new(),
            why: why.into(),
            checked: None,
        }
    }
}

/// The engine memory models, as the doctor needs them. The binary implements this with
/// `vramfit-engine` (vLLM: module `vllm`, llama.cpp: module `llamacpp`) once the log names a
/// model it can resolve; the doctor asks only when the log's own numbers are not enough, and
/// every method may answer `None` ("cannot tell").
pub trait FixEngine {
    /// vLLM: the largest max_model_len whose KV for one request fits in `kv_available` bytes
    /// per worker, for the model and settings the log echoes (TP, KV dtype, sliding windows).
    /// `settings.max_model_len` is the failing length: search below it.
    fn vllm_max_model_len(&self, settings: &EchoedSettings, kv_available: u64) -> Option<u64>;

    /// llama.cpp: the largest n_ctx whose KV + compute buffers fit in `free_after_weights`
    /// bytes on the device, with the settings the log echoes.
    fn llamacpp_max_n_ctx(&self, settings: &EchoedSettings, free_after_weights: u64)
        -> Option<u64>;

    /// llama.cpp: the most layers (`-ngl`) whose weights, KV and compute fit in `free` bytes.
    fn llamacpp_max_gpu_layers(&self, settings: &EchoedSettings, free: u64) -> Option<u64>;
}

/// The doctor without engine models: every question is answered from the log or not at all.
pub struct LogOnly;

impl FixEngine for LogOnly {
    fn vllm_max_model_len(&self, _: &EchoedSettings, _: u64) -> Option<u64> {
        None
    }
    fn llamacpp_max_n_ctx(&self, _: &EchoedSettings, _: u64) -> Option<u64> {
        None
    }
    fn llamacpp_max_gpu_layers(&self, _: &EchoedSettings, _: u64) -> Option<u64> {
        None
    }
}

/// The flags and variables each engine reads. A fix for one engine's log never names another's.
/// Sources: vllm/engine/arg_utils.py, sglang/srt/server_args.py, llama.cpp common/arg.cpp,
/// ollama api/types.go (Options) and envconfig/config.go, text-generation-launcher --help,
/// lmdeploy cli/utils.py, transformers from_pretrained/BitsAndBytesConfig, PyTorch
/// c10/cuda/CUDAAllocatorConfig (PYTORCH_CUDA_ALLOC_CONF), NCCL and CUDA environment.
fn vocabulary(engine: Engine) -> &'static [&'static str] {
    match engine {
        Engine::Vllm => &[
            "--gpu-memory-utilization",
            "--max-model-len",
            "--max-num-seqs",
            "--max-num-batched-tokens",
            "--enforce-eager",
            "--tensor-parallel-size",
            "--pipeline-parallel-size",
            "--kv-cache-dtype",
            "--max-parallel-loading-workers",
            "--cpu-offload-gb",
            "--quantization",
            "--load-format",
            "--swap-space",
            "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS",
        ],
        Engine::Sglang => &[
            "--mem-fraction-static",
            "--max-running-requests",
            "--page-size",
            "--cuda-graph-max-bs",
            "--disable-cuda-graph",
            "--chunked-prefill-size",
            "--context-length",
            "--tp-size",
            "--kv-cache-dtype",
        ],
        Engine::LlamaCpp => &[
            "-ngl",
            "-c",
            "-ub",
            "-b",
            "-np",
            "-fa",
            "-ctk",
            "-ctv",
            "--tensor-split",
            "--no-mmap",
            "GGML_CUDA_NO_VMM",
        ],
        Engine::Ollama => &[
            "num_ctx",
            "num_gpu",
            "num_batch",
            "OLLAMA_KV_CACHE_TYPE",
            "OLLAMA_FLASH_ATTENTION",
            "OLLAMA_GPU_OVERHEAD",
            "OLLAMA_NUM_PARALLEL",
            "OLLAMA_MAX_LOADED_MODELS",
            "OLLAMA_CONTEXT_LENGTH",
        ],
        Engine::Tgi => &[
            "--max-batch-prefill-tokens",
            "--max-batch-total-tokens",
            "--max-input-tokens",
            "--max-total-tokens",
            "--cuda-memory-fraction",
            "--num-shard",
        ],
        Engine::Lmdeploy => &[
            "--cache-max-entry-count",
            "--session-len",
            "--max-batch-size",
            "--tp",
        ],
        Engine::Transformers => &[
            "max_memory",
            "device_map",
            "llm_int8_enable_fp32_cpu_offload",
            "low_cpu_mem_usage",
            "attn_implementation",
        ],
        Engine::Mlx | Engine::Pytorch | Engine::Unknown => &[],
    }
}

/// Variables every PyTorch-based engine honours.
const TORCH_ENV: &[&str] = &["PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF"];
/// Variables of the CUDA runtime and NCCL, for any engine.
const ANY_ENV: &[&str] = &[
    "CUDA_LAUNCH_BLOCKING",
    "NCCL_DEBUG",
    "MAX_JOBS",
    "CUDA_VISIBLE_DEVICES",
];

/// Whether `flag` is something `engine` reads.
pub fn belongs(engine: Engine, flag: &str) -> bool {
    if ANY_ENV.contains(&flag) || vocabulary(engine).contains(&flag) {
        return true;
    }
    let torch_based = !matches!(
        engine,
        Engine::LlamaCpp | Engine::Ollama | Engine::Mlx | Engine::Lmdeploy
    );
    if torch_based && TORCH_ENV.contains(&flag) {
        return true;
    }
    // transformers runs on PyTorch: its logs may also get PyTorch's own knobs
    matches!(engine, Engine::Pytorch | Engine::Unknown)
        && vocabulary(Engine::Transformers).contains(&flag)
}

/// The value a fix would set, compared with what the log shows is already set.
pub fn already_set(f: &Fix, s: &EchoedSettings) -> bool {
    let v = f.value.as_str();
    let int = |x: Option<u64>| x.is_some_and(|x| v.parse::<u64>().ok() == Some(x));
    let float =
        |x: Option<f64>| x.is_some_and(|x| v.parse::<f64>().is_ok_and(|y| (x - y).abs() < 1e-9));
    match f.flag.as_str() {
        "--gpu-memory-utilization" => float(s.gpu_memory_utilization),
        "--mem-fraction-static" => float(s.mem_fraction_static),
        "--cache-max-entry-count" => float(s.cache_max_entry_count),
        "--max-model-len" | "--context-length" => int(s.max_model_len),
        "--max-num-seqs" => int(s.max_num_seqs),
        "--max-running-requests" => int(s.max_running_requests),
        "--swap-space" => int(s.swap_space),
        "--page-size" => int(s.page_size),
        "--max-num-batched-tokens" => int(s.max_num_batched_tokens),
        "--tensor-parallel-size" | "--tp-size" | "--tp" => {
            int(s.tensor_parallel_size) || (s.tensor_parallel_size.is_none() && v == "1")
        }
        "--session-len" => int(s.session_len),
        "-c" | "num_ctx" => int(s.n_ctx),
        "-ub" => int(s.n_ubatch),
        "-b" | "num_batch" => int(s.n_batch),
        "-np" => int(s.n_parallel),
        "-ngl" | "num_gpu" => s
            .n_gpu_layers
            .is_some_and(|n| v.parse::<i64>().ok() == Some(n)),
        "--enforce-eager" => s.enforce_eager == Some(true),
        "--kv-cache-dtype" => s.kv_cache_dtype.as_deref() == Some(v),
        "-fa" => s.flash_attn == Some(true),
        "PYTORCH_CUDA_ALLOC_CONF" | "PYTORCH_HIP_ALLOC_CONF" => {
            v.contains("expandable_segments:True") && s.expandable_segments == Some(true)
        }
        _ => false,
    }
}

/// Keep only fixes that change something, in the engine's own vocabulary, with a value:
/// another engine's flag, the value already set, or a flag without a computed value is
/// dropped; the first fix for a flag wins.
pub fn vet(fixes: Vec<Fix>, engine: Engine, s: &EchoedSettings) -> Vec<Fix> {
    let mut out: Vec<Fix> = Vec::new();
    for mut f in fixes {
        if engine == Engine::Ollama {
            ollama_words(&mut f);
        }
        if !f.flag.is_empty() {
            let vague = matches!(f.value.as_str(), "fewer" | "lower" | "higher" | "more");
            if vague || !belongs(engine, &f.flag) || already_set(&f, s) {
                continue;
            }
            if out.iter().any(|o| o.flag == f.flag) {
                continue;
            }
        } else if out.iter().any(|o| o.flag.is_empty() && o.why == f.why) {
            continue;
        }
        out.push(f);
    }
    out
}

/// Ollama runs llama.cpp under its own names: a rule written for llama.cpp's runner speaks
/// Ollama's vocabulary in an Ollama log (Modelfile `PARAMETER num_gpu / num_ctx / num_batch`,
/// `OLLAMA_KV_CACHE_TYPE`, `OLLAMA_FLASH_ATTENTION`, `OLLAMA_NUM_PARALLEL`; ollama docs/faq.md,
/// api.md options).
fn ollama_words(f: &mut Fix) {
    let (flag, value) = match (f.flag.as_str(), f.value.as_str()) {
        ("-ngl", v) => ("num_gpu", v.to_string()),
        ("-c", v) => ("num_ctx", v.to_string()),
        ("-b", v) => ("num_batch", v.to_string()),
        ("-ctk" | "-ctv", v) => ("OLLAMA_KV_CACHE_TYPE", v.to_string()),
        ("-fa", _) => ("OLLAMA_FLASH_ATTENTION", "1".to_string()),
        ("-np", v) => ("OLLAMA_NUM_PARALLEL", v.to_string()),
        _ => return,
    };
    f.flag = flag.to_string();
    f.value = value;
}

/// vLLM pages KV in blocks of 16 tokens (vllm/config/cache.py default block_size; CUDA).
pub const VLLM_BLOCK: u64 = 16;
/// llama.cpp pads n_ctx to 256 (src/llama-context.cpp, research/llamacpp_memory.md §2.2).
pub const LLAMA_CTX_PAD: u64 = 256;
/// llama.cpp `--fit` keeps 1024 MiB free per device (common/fit.cpp, PR #16653).
pub const LLAMA_FIT_MARGIN: u64 = 1024 << 20;

/// The largest max_model_len whose KV fits, for full attention (KV linear in length): scale the
/// failing length by available/needed and round down to a whole block.
pub fn vllm_len_that_fits(max_model_len: u64, needed: u64, available: u64) -> Option<u64> {
    if needed == 0 || available == 0 {
        return None;
    }
    let tokens = (max_model_len as u128 * available as u128 / needed as u128) as u64;
    let tokens = tokens / VLLM_BLOCK * VLLM_BLOCK;
    (tokens > 0).then_some(tokens)
}

/// The largest gpu_memory_utilization vLLM accepts with `free` of `total` bytes free: its
/// start-up check needs free >= utilization × total (vllm/v1/worker/gpu_worker.py); two decimals,
/// rounded down.
pub fn vllm_util_for_free(free: u64, total: u64) -> Option<f64> {
    if total == 0 || free == 0 {
        return None;
    }
    let u = (free as f64 / total as f64 * 100.0).floor() / 100.0;
    (u >= 0.05).then_some(u.min(0.99))
}

/// The largest n_ctx (multiple of 256) whose KV fits in `room` bytes, given the KV bytes one
/// token costs (measured from the log: KV buffer / n_ctx).
pub fn llama_ctx_that_fits(kv_per_token: u64, room: u64) -> Option<u64> {
    if kv_per_token == 0 {
        return None;
    }
    let n = room / kv_per_token / LLAMA_CTX_PAD * LLAMA_CTX_PAD;
    (n > 0).then_some(n)
}

/// The most whole layers of `per_layer` bytes that fit in `room` bytes.
pub fn layers_that_fit(per_layer: u64, room: u64) -> Option<u64> {
    if per_layer == 0 {
        return None;
    }
    Some(room / per_layer)
}

/// The largest power of two <= n (at least 1): batch-like knobs are set in powers of two.
pub fn pow2_floor(n: u64) -> u64 {
    if n <= 1 {
        1
    } else {
        1 << (63 - n.leading_zeros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use vramfit_model::units::GIB;

    #[test]
    fn vllm_len_rounds_to_blocks() {
        // 131072 tokens need 16 GiB; 9.2 GiB available -> 75366.4 -> 75360
        let a = (9.2 * GIB as f64) as u64;
        assert_eq!(vllm_len_that_fits(131072, 16 * GIB, a), Some(75360));
        assert_eq!(vllm_len_that_fits(131072, 16 * GIB, 0), None);
    }

    #[test]
    fn util_from_free() {
        // vllm-20305: 31.44 of 47.38 GiB free -> 0.66
        let u = vllm_util_for_free((31.44 * GIB as f64) as u64, (47.38 * GIB as f64) as u64);
        assert_eq!(u, Some(0.66));
    }

    proptest! {
        #[test]
        fn smaller_room_never_fits_more(per in 1u64..1_000_000, a in 0u64..1u64<<40, b in 0u64..1u64<<40) {
            let (lo, hi) = if a < b { (a, b) } else { (b, a) };
            let f = |r| llama_ctx_that_fits(per, r).unwrap_or(0);
            prop_assert!(f(lo) <= f(hi));
            prop_assert!(f(hi) * per <= hi);
        }

        #[test]
        fn vllm_len_fits(len in 1u64..10_000_000, needed in 1u64..1u64<<40, avail in 0u64..1u64<<40) {
            if let Some(n) = vllm_len_that_fits(len, needed, avail) {
                prop_assert!(n % VLLM_BLOCK == 0);
                prop_assert!((n as u128) * (needed as u128) <= (len as u128) * (avail as u128));
            }
        }
    }
}
