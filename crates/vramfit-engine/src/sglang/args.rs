//! `python -m sglang.launch_server` (or `sglang serve`) flags → [`SglangConfig`].
//!
//! Flag names from python/sglang/srt/server_args.py (`ServerArgs`, SGLang v0.5.x). Defaults that
//! depend on the GPU (`mem_fraction_static`, `chunked_prefill_size`, `cuda_graph_max_bs`) stay
//! `None` here and are resolved by [`super::defaults`] once the GPU is known.

use crate::cmdline::{Command, EngineKind, Flag, FlagReader};
use crate::error::EngineError;

/// A SGLang launch command as far as memory cares.
#[derive(Debug, Clone, PartialEq)]
pub struct SglangConfig {
    pub model: String,
    /// `--mem-fraction-static`; None: the GPU-dependent default
    pub mem_fraction_static: Option<f64>,
    /// `--context-length`; None: the model's own
    pub context_length: Option<u64>,
    pub max_running_requests: Option<u64>,
    /// `--max-total-tokens`: caps the token pool
    pub max_total_tokens: Option<u64>,
    pub chunked_prefill_size: Option<i64>,
    pub max_prefill_tokens: u64,
    pub tp_size: u64,
    pub pp_size: u64,
    pub dp_size: u64,
    pub enable_dp_attention: bool,
    /// `auto`, `fp8_e4m3`, `fp8_e5m2`, `bf16`, ...
    pub kv_cache_dtype: String,
    pub cuda_graph_max_bs: Option<u64>,
    pub disable_cuda_graph: bool,
    pub quantization: Option<String>,
    pub dtype: Option<String>,
    /// `--page-size` (tokens per KV page; default 1)
    pub page_size: u64,
    pub speculative_algorithm: Option<String>,
    /// `--attention-backend` (gpt-oss's hybrid sliding-window pool depends on it: [`super::swa`])
    pub attention_backend: Option<String>,
    /// `--swa-full-tokens-ratio`; None: 0.8 ([`super::swa::DEFAULT_RATIO`])
    pub swa_full_tokens_ratio: Option<f64>,
    /// `--disable-hybrid-swa-memory`
    pub disable_hybrid_swa_memory: bool,
    /// `CUDA_VISIBLE_DEVICES`
    pub visible_devices: Option<Vec<usize>>,
    /// the release (`--engine-version`); None: the current v0.5.x defaults
    pub version: Option<crate::vllm::Version>,
    /// the GPU runs under Windows or WSL2, whose driver backs device allocations past the card's
    /// memory with shared system memory (NVIDIA's "CUDA sysmem fallback policy", default on
    /// since driver 536.40): what SGLang allocates after its pool then slows the server instead
    /// of stopping it; the pool itself is still sized from the card's free memory
    pub sysmem_fallback: bool,
    /// flags that change memory but are not modelled (they go into the plan's problems)
    pub unmodelled: Vec<String>,
    /// unknown flags and assumptions
    pub notes: Vec<String>,
}

const FLAGS: &[Flag] = &[
    Flag::value("--model-path", &["--model"]),
    Flag::value("--mem-fraction-static", &[]),
    Flag::value("--context-length", &[]),
    Flag::value("--max-running-requests", &[]),
    Flag::value("--max-total-tokens", &[]),
    Flag::value("--chunked-prefill-size", &[]),
    Flag::value("--max-prefill-tokens", &[]),
    Flag::value("--tp-size", &["--tp", "--tensor-parallel-size"]),
    Flag::value("--pp-size", &["--pp", "--pipeline-parallel-size"]),
    Flag::value("--dp-size", &["--dp", "--data-parallel-size"]),
    Flag::boolean("--enable-dp-attention", &[]),
    Flag::value("--kv-cache-dtype", &[]),
    Flag::value("--cuda-graph-max-bs", &[]),
    Flag::value("--cuda-graph-bs", &[]),
    Flag::boolean("--disable-cuda-graph", &[]),
    Flag::value("--quantization", &[]),
    Flag::value("--dtype", &[]),
    Flag::value("--page-size", &[]),
    Flag::value("--speculative-algorithm", &[]),
    // read so that they are not reported as unknown; no memory effect modelled
    Flag::value("--host", &[]),
    Flag::value("--port", &[]),
    Flag::boolean("--trust-remote-code", &[]),
    Flag::value("--served-model-name", &[]),
    Flag::value("--tokenizer-path", &[]),
    Flag::value("--attention-backend", &[]),
    Flag::value("--swa-full-tokens-ratio", &[]),
    Flag::boolean("--disable-hybrid-swa-memory", &[]),
    Flag::boolean("--disable-radix-cache", &[]),
    Flag::boolean("--enable-torch-compile", &[]),
    Flag::value("--log-level", &[]),
    Flag::value("--random-seed", &[]),
    Flag::value("--reasoning-parser", &[]),
    Flag::value("--tool-call-parser", &[]),
];

/// Flags that change memory but are not modelled: they go into the plan's problems.
const UNMODELLED: &[&str] = &[
    "--enable-hierarchical-cache",
    "--hicache-ratio",
    "--cpu-offload-gb",
    "--enable-lora",
    "--lora-paths",
    "--max-loras-per-batch",
    "--enable-ep-moe",
    "--ep-size",
    "--enable-mixed-chunk",
    "--num-continuous-decode-steps",
    "--enable-memory-saver",
    "--enable-piecewise-cuda-graph",
    "--torch-compile-max-bs",
];

fn num<T: std::str::FromStr>(flag: &str, v: &str, expected: &str) -> Result<T, EngineError> {
    v.trim()
        .replace('_', "")
        .parse()
        .map_err(|_| EngineError::bad_value(flag, v, expected))
}

/// Read a SGLang command line.
pub fn parse(cmd: &Command) -> Result<SglangConfig, EngineError> {
    if cmd.engine != Some(EngineKind::Sglang) {
        return Err(EngineError::WrongEngine {
            program: cmd.program.clone(),
            engine: "SGLang",
            example: "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2",
        });
    }
    let flags = FlagReader::new(FLAGS)
        .underscores_as_dashes()
        .read(&cmd.args)?;
    let mut positionals: Vec<&str> = flags.positionals.iter().map(String::as_str).collect();
    if positionals.first() == Some(&"serve") {
        positionals.remove(0);
    }
    let model = flags
        .get("--model-path")
        .or(positionals.first().copied())
        .map(str::to_string)
        .ok_or(EngineError::NoModel {
            engine: "SGLang",
            example: "python -m sglang.launch_server --model-path ORG/MODEL",
        })?;
    let count = |f: &str| -> Result<Option<u64>, EngineError> {
        flags
            .get(f)
            .map(|v| num::<u64>(f, v, "a whole number such as 8"))
            .transpose()
    };
    let mem_fraction_static = match flags.get("--mem-fraction-static") {
        None => None,
        Some(v) => {
            let f: f64 = num("--mem-fraction-static", v, "a fraction such as 0.88")?;
            if !(f > 0.0 && f < 1.0) {
                return Err(EngineError::bad_value(
                    "--mem-fraction-static",
                    v,
                    "a fraction in (0, 1), such as 0.88",
                ));
            }
            Some(f)
        }
    };
    let mut notes = Vec::new();
    let mut unmodelled = Vec::new();
    let mut cuda_graph_max_bs = count("--cuda-graph-max-bs")?;
    if let Some(list) = flags.get("--cuda-graph-bs") {
        // server_args.py: an explicit capture list sets cuda_graph_max_bs to its maximum
        let mut max = 0;
        for w in list.split([',', ' ']).filter(|w| !w.is_empty()) {
            max = max.max(num::<u64>(
                "--cuda-graph-bs",
                w,
                "batch sizes such as 1,2,4,8",
            )?);
        }
        cuda_graph_max_bs = Some(max);
    }
    for u in &flags.unknown {
        let name = u.split([' ', '=']).next().unwrap_or(u).replace('_', "-");
        if UNMODELLED.contains(&name.as_str()) {
            unmodelled.push(format!("{u}: changes memory but is not modelled"));
        } else {
            notes.push(format!("{u}: not a memory flag vramfit knows; ignored"));
        }
    }
    let visible_devices = match cmd.env_var("CUDA_VISIBLE_DEVICES") {
        None => None,
        Some(v) => Some(
            v.split(',')
                .filter(|x| !x.trim().is_empty())
                .map(|x| {
                    x.trim().parse::<usize>().map_err(|_| EngineError::BadEnv {
                        name: "CUDA_VISIBLE_DEVICES".into(),
                        value: v.into(),
                        expected: "GPU indices such as 0,1".into(),
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let tp_size = count("--tp-size")?.unwrap_or(1).max(1);
    let pp_size = count("--pp-size")?.unwrap_or(1).max(1);
    let dp_size = count("--dp-size")?.unwrap_or(1).max(1);
    // values SGLang's own parser refuses are refused here (crate::choices names the sources)
    use crate::choices::{check, MODEL_DTYPES, SGLANG_KV_CACHE_DTYPES, SGLANG_QUANTIZATIONS};
    check(
        "SGLang",
        "--kv-cache-dtype",
        flags.get("--kv-cache-dtype"),
        SGLANG_KV_CACHE_DTYPES,
    )?;
    check(
        "SGLang",
        "--quantization",
        flags.get("--quantization"),
        SGLANG_QUANTIZATIONS,
    )?;
    check("SGLang", "--dtype", flags.get("--dtype"), MODEL_DTYPES)?;
    let swa_full_tokens_ratio = match flags.get("--swa-full-tokens-ratio") {
        None => None,
        Some(v) => {
            let r: f64 = num("--swa-full-tokens-ratio", v, "a ratio such as 0.8")?;
            // the pool sizes below divide by full + ratio × swa: a ratio must be positive
            if !(r > 0.0 && r.is_finite()) {
                return Err(EngineError::bad_value(
                    "--swa-full-tokens-ratio",
                    v,
                    "a positive ratio such as 0.8",
                ));
            }
            Some(r)
        }
    };
    Ok(SglangConfig {
        model,
        mem_fraction_static,
        context_length: count("--context-length")?,
        max_running_requests: count("--max-running-requests")?,
        max_total_tokens: count("--max-total-tokens")?,
        chunked_prefill_size: flags
            .get("--chunked-prefill-size")
            .map(|v| num::<i64>("--chunked-prefill-size", v, "tokens such as 8192, or -1"))
            .transpose()?,
        // server_args.py: max_prefill_tokens default 16384
        max_prefill_tokens: count("--max-prefill-tokens")?.unwrap_or(16384),
        tp_size,
        pp_size,
        dp_size,
        enable_dp_attention: flags.bool("--enable-dp-attention").unwrap_or(false),
        kv_cache_dtype: flags.get("--kv-cache-dtype").unwrap_or("auto").to_string(),
        cuda_graph_max_bs,
        disable_cuda_graph: flags.bool("--disable-cuda-graph").unwrap_or(false),
        quantization: flags.get("--quantization").map(str::to_string),
        dtype: flags.get("--dtype").map(str::to_string),
        page_size: count("--page-size")?.unwrap_or(1).max(1),
        speculative_algorithm: flags.get("--speculative-algorithm").map(str::to_string),
        attention_backend: flags.get("--attention-backend").map(str::to_string),
        swa_full_tokens_ratio,
        disable_hybrid_swa_memory: flags.bool("--disable-hybrid-swa-memory").unwrap_or(false),
        visible_devices,
        version: None,
        sysmem_fallback: false,
        unmodelled,
        notes,
    })
}

/// GPU-dependent defaults SGLang resolves in `ServerArgs._handle_gpu_memory_settings`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuDefaults {
    pub chunked_prefill_size: i64,
    pub cuda_graph_max_bs: u64,
    pub mem_fraction_static: f64,
    /// SGLang's own reserve estimate behind the default fraction, MiB
    pub reserved_mib: f64,
}

/// `_handle_gpu_memory_settings` (server_args.py, SGLang v0.5.x after PR #15927, 2025-12):
/// tiers of GPU memory (MiB) pick chunked_prefill_size and cuda_graph_max_bs; the default
/// fraction is `(gpu_mem − reserved) / gpu_mem` rounded to 3 places, where
/// `reserved = 512 + max(chunked, 2048)·1.5 + cuda_graph_max_bs·2 + tp·pp/8·1024` MiB
/// (+ DP-attention padding), at least 10 GiB above 60 GiB cards, + 2 GiB for EAGLE drafts.
pub fn gpu_defaults(cfg: &SglangConfig, gpu_mem_mib: f64) -> GpuDefaults {
    // (upper bound MiB, chunked_prefill_size, cuda_graph_max_bs for tp < 4, for tp >= 4)
    const TIERS: &[(f64, i64, u64, u64)] = &[
        (20.0 * 1024.0, 2048, 8, 8),      // T4, 4080
        (35.0 * 1024.0, 2048, 24, 80),    // A10, 4090, 5090
        (60.0 * 1024.0, 4096, 32, 160),   // A100-40G, L40
        (90.0 * 1024.0, 8192, 256, 512),  // H100, A100-80G
        (160.0 * 1024.0, 8192, 256, 512), // H20, H200
        (f64::INFINITY, 16384, 512, 512), // B200, MI300
    ];
    let tier = TIERS
        .iter()
        .find(|t| gpu_mem_mib < t.0)
        .copied()
        .unwrap_or(TIERS[TIERS.len() - 1]);
    let chunked = cfg.chunked_prefill_size.unwrap_or(tier.1);
    let graph_bs = cfg
        .cuda_graph_max_bs
        .unwrap_or(if cfg.tp_size < 4 { tier.2 } else { tier.3 });
    let mut reserved = 512.0;
    reserved += if chunked > 0 {
        (chunked.max(2048)) as f64 * 1.5
    } else {
        cfg.max_prefill_tokens.max(2048) as f64 * 1.5
    };
    reserved += graph_bs as f64 * 2.0;
    reserved += (cfg.tp_size * cfg.pp_size) as f64 / 8.0 * 1024.0;
    if cfg.enable_dp_attention {
        reserved += (graph_bs * cfg.dp_size * 3) as f64;
        if graph_bs > 300 {
            reserved += (graph_bs * cfg.dp_size) as f64 * 1.5;
        }
    }
    if gpu_mem_mib > 60.0 * 1024.0 {
        reserved = reserved.max(10.0 * 1024.0);
    }
    match cfg
        .speculative_algorithm
        .as_deref()
        .map(str::to_ascii_uppercase)
    {
        Some(a) if a == "STANDALONE" => reserved += 6.0 * 1024.0,
        Some(a) if a != "NGRAM" => reserved += 2.0 * 1024.0,
        _ => {}
    }
    let fraction = super::fraction::legacy_default(
        cfg.version,
        gpu_mem_mib,
        cfg.tp_size * cfg.pp_size,
        cfg.speculative_algorithm.as_deref(),
        cfg.enable_dp_attention,
    )
    .unwrap_or(((gpu_mem_mib - reserved) / gpu_mem_mib * 1000.0).round() / 1000.0);
    GpuDefaults {
        chunked_prefill_size: chunked,
        cuda_graph_max_bs: graph_bs,
        mem_fraction_static: cfg.mem_fraction_static.unwrap_or(fraction),
        reserved_mib: reserved,
    }
}

/// The batch sizes SGLang captures CUDA graphs for (`_generate_cuda_graph_batch_sizes`, no
/// speculative decoding): 1, 2, 4, 8, 12, then every 8 to 256, every 16 to 512, every 32 above.
pub fn cuda_graph_batch_sizes(max_bs: u64) -> Vec<u64> {
    let mut v: Vec<u64> = vec![1, 2, 4, 8, 12];
    v.extend((16..=256).step_by(8));
    v.extend((272..512).step_by(16));
    v.extend((512..=max_bs.max(512)).step_by(32));
    v.retain(|&b| b <= max_bs);
    v
}
