//! `vllm serve` flags and environment → [`VllmConfig`], with vLLM's defaults by release.

use super::version::Version;
use crate::cmdline::{Command, EngineKind, Flag, FlagReader, Flags};
use crate::error::EngineError;
use vramfit_model::units::{parse_size, GIB};

/// `--max-model-len`: the model's own, a number, or fitted to memory (`auto` / `-1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxModelLen {
    /// not given: the model's `max_position_embeddings` (after rope scaling, as vLLM derives it)
    FromModel,
    Tokens(u64),
    /// `--max-model-len auto` / `-1`: the largest length that fits (`_auto_fit_max_model_len`)
    Auto,
}

/// `--speculative-config` as far as memory cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Speculative {
    pub method: String,
    pub num_speculative_tokens: u64,
    pub draft_model: Option<String>,
}

/// A `vllm serve` command as vLLM resolves it. Fields that depend on the GPU (batch defaults)
/// stay `None` here and are resolved by [`super::plan`].
#[derive(Debug, Clone, PartialEq)]
pub struct VllmConfig {
    pub model: String,
    pub version: Version,
    /// true when `--engine-version` named the release
    pub version_given: bool,
    pub gpu_memory_utilization: f64,
    pub max_model_len: MaxModelLen,
    pub max_num_seqs: Option<u64>,
    pub max_num_batched_tokens: Option<u64>,
    /// `--block-size`; `None`: 16, or what the attention backend forces
    pub block_size: Option<u64>,
    /// `auto` (the model dtype), `fp8`, `fp8_e4m3`, `fp8_e5m2`, `bfloat16`, `fp8_ds_mla`
    pub kv_cache_dtype: String,
    pub kv_cache_memory_bytes: Option<u64>,
    pub cpu_offload_bytes: u64,
    pub enforce_eager: bool,
    pub quantization: Option<String>,
    pub dtype: Option<String>,
    pub tensor_parallel_size: u64,
    pub pipeline_parallel_size: u64,
    pub data_parallel_size: u64,
    /// `--decode-context-parallel-size`: the TP ranks that split each request's KV by tokens
    pub decode_context_parallel_size: u64,
    pub enable_expert_parallel: bool,
    pub speculative: Option<Speculative>,
    pub limit_mm_per_prompt: Option<String>,
    pub enable_prefix_caching: Option<bool>,
    pub disable_hybrid_kv_cache_manager: bool,
    pub num_gpu_blocks_override: Option<u64>,
    /// `CUDA_VISIBLE_DEVICES`: the physical GPU indices the workers see, in order
    pub visible_devices: Option<Vec<usize>>,
    /// `VLLM_PP_LAYER_PARTITION`
    pub pp_layer_partition: Option<Vec<u64>>,
    /// `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` (None: the release's default)
    pub estimate_cudagraphs: Option<bool>,
    /// `-O0` / `cudagraph_mode: NONE` in `--compilation-config`: no CUDA graphs
    pub cudagraphs_disabled: bool,
    /// `VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`: a max_model_len beyond the model's is accepted
    pub allow_long_max_model_len: bool,
    /// `VLLM_USE_V2_MODEL_RUNNER` (None: the release's default for the model, [`super::runner`])
    pub use_v2_model_runner: Option<bool>,
    /// `VLLM_USE_V1` (None: the release's default, [`VllmConfig::runs_v0`])
    pub use_v1: Option<bool>,
    /// `NCCL_NVLS_ENABLE=0` or `NCCL_CUMEM_ENABLE=0` in the command: NCCL takes no NVLS buffers
    /// (vllm::runner::nccl_nvls)
    pub nvls_disabled: bool,
    /// `VLLM_ROCM_MOE_PADDING` (default on): ROCm pads unquantized MoE weights
    /// ([`super::rocm::moe_padding_bytes`])
    pub rocm_moe_padding: bool,
    /// `--mamba-ssm-cache-dtype` (None: auto, [`super::kv::ssm_state_bytes`])
    pub mamba_ssm_cache_dtype: Option<String>,
    /// `VLLM_MXFP4_USE_MARLIN` (None: the backend vLLM picks, [`super::mxfp4::backend`])
    pub mxfp4_use_marlin: Option<bool>,
    /// the GPUs run ROCm (AMD), set by the plan from the GPU's name (ROCm-only weight layouts:
    /// [`super::rocm::moe_padding_bytes`])
    pub rocm: bool,
    /// the GPU's compute capability, set by the plan (kernel-dependent weight layouts: MXFP4
    /// experts padded for Marlin); None when unknown
    pub compute_capability: Option<f64>,
    /// flags that were not recognised, as written
    pub unknown_flags: Vec<String>,
    /// what a reader should know about how the command was read
    pub notes: Vec<String>,
}

const FLAGS: &[Flag] = &[
    Flag::value("--model", &[]),
    Flag::value("--gpu-memory-utilization", &[]),
    Flag::value("--max-model-len", &[]),
    Flag::value("--max-num-seqs", &[]),
    Flag::value("--max-num-batched-tokens", &[]),
    Flag::value("--block-size", &[]),
    Flag::value("--kv-cache-dtype", &[]),
    Flag::value("--mamba-ssm-cache-dtype", &[]),
    Flag::value("--kv-cache-memory-bytes", &["--kv-cache-memory"]),
    Flag::value("--cpu-offload-gb", &[]),
    Flag::boolean("--enforce-eager", &[]),
    Flag::value("--quantization", &["-q"]),
    Flag::value("--dtype", &[]),
    Flag::value("--tensor-parallel-size", &["-tp"]),
    Flag::value("--pipeline-parallel-size", &["-pp"]),
    Flag::value("--data-parallel-size", &["-dp"]),
    Flag::value("--decode-context-parallel-size", &["-dcp"]),
    Flag::boolean("--enable-expert-parallel", &["-ep"]),
    Flag::value("--speculative-config", &["-sc"]),
    Flag::value("--limit-mm-per-prompt", &[]),
    Flag::boolean("--enable-prefix-caching", &[]),
    Flag::boolean("--disable-hybrid-kv-cache-manager", &[]),
    Flag::value("--num-gpu-blocks-override", &[]),
    Flag::value("--compilation-config", &["-cc"]),
    Flag::value("--optimization-level", &[]),
    // flags that do not change memory, known so that they do not swallow the next word
    Flag::boolean("--trust-remote-code", &[]),
    Flag::boolean("--disable-log-stats", &[]),
    Flag::boolean("--disable-log-requests", &[]),
    Flag::boolean("--enable-log-requests", &[]),
    Flag::boolean("--enable-auto-tool-choice", &[]),
    Flag::boolean("--enable-chunked-prefill", &[]),
    Flag::boolean("--enable-lora", &[]),
    Flag::boolean("--enable-sleep-mode", &[]),
    Flag::boolean("--disable-custom-all-reduce", &[]),
    Flag::boolean("--async-scheduling", &[]),
    Flag::boolean("--headless", &[]),
];

/// Flags read without comment (they do not change memory).
const HARMLESS: &[&str] = &[
    "--host",
    "--port",
    "--served-model-name",
    "--api-key",
    "--tool-call-parser",
    "--reasoning-parser",
    "--chat-template",
    "--load-format",
    "--download-dir",
    "--seed",
    "--uvicorn-log-level",
    "--tokenizer",
    "--revision",
    "--hf-token",
    "--generation-config",
    "--attention-backend",
    "--distributed-executor-backend",
    "--swap-space",
    "--max-log-len",
];

/// Read a vLLM command. `version`: `--engine-version` (`0.15.2`), else the current release.
pub fn parse(cmd: &Command, version: Option<&str>) -> Result<VllmConfig, EngineError> {
    if cmd.engine != Some(EngineKind::Vllm) {
        return Err(EngineError::WrongEngine {
            program: cmd.program.clone(),
            engine: "vLLM",
            example: "vllm serve Qwen/Qwen3-8B --max-model-len 32768",
        });
    }
    let (version, version_given) = match version {
        Some(v) => (Version::parse(v)?, true),
        None => (Version::CURRENT, false),
    };
    let mut words: Vec<String> = Vec::with_capacity(cmd.args.len());
    let mut cudagraphs_disabled = false;
    let mut iter = cmd.args.iter().peekable();
    while let Some(w) = iter.next() {
        // `-O0`..`-O3`, `-O 0`, `-O=0` (vllm/utils/argparse_utils.py rewrites them to
        // --optimization-level); O0 means no compilation and no CUDA graphs (config/vllm.py)
        let level = if let Some(rest) = w.strip_prefix("-O") {
            let rest = rest.trim_start_matches('=');
            if rest.is_empty() {
                iter.next().cloned()
            } else {
                Some(rest.to_string())
            }
        } else {
            words.push(w.clone());
            continue;
        };
        if level.as_deref() == Some("0") {
            cudagraphs_disabled = true;
        }
    }
    let flags = FlagReader::new(FLAGS)
        .underscores_as_dashes()
        .read(&words)?;
    let mut positionals: Vec<&str> = flags.positionals.iter().map(String::as_str).collect();
    if positionals.first() == Some(&"serve") {
        positionals.remove(0);
    }
    let model = flags
        .get("--model")
        .or(positionals.first().copied())
        .map(str::to_string)
        .ok_or(EngineError::NoModel {
            engine: "vLLM",
            example: "vllm serve ORG/MODEL",
        })?;

    let mut notes = Vec::new();
    let gpu_memory_utilization = match flags.get("--gpu-memory-utilization") {
        Some(v) => {
            let u = parse_f64("--gpu-memory-utilization", v, "a fraction such as 0.9")?;
            if !(u > 0.0 && u <= 1.0) {
                return Err(EngineError::bad_value(
                    "--gpu-memory-utilization",
                    v,
                    "a fraction in (0, 1], such as 0.9",
                ));
            }
            u
        }
        None => version.default_gpu_memory_utilization(),
    };
    let max_model_len = match flags.get("--max-model-len") {
        None => MaxModelLen::FromModel,
        Some(v) => parse_max_model_len(v)?,
    };
    let tensor_parallel_size = parse_count(&flags, "--tensor-parallel-size")?.unwrap_or(1);
    let pipeline_parallel_size = parse_count(&flags, "--pipeline-parallel-size")?.unwrap_or(1);
    let data_parallel_size = parse_count(&flags, "--data-parallel-size")?.unwrap_or(1);
    let decode_context_parallel_size =
        parse_count(&flags, "--decode-context-parallel-size")?.unwrap_or(1);
    if decode_context_parallel_size > 1 && tensor_parallel_size % decode_context_parallel_size != 0
    {
        // the decode-context-parallel groups are carved out of the TP group (vLLM PR #23734)
        return Err(EngineError::bad_value(
            "--decode-context-parallel-size",
            &decode_context_parallel_size.to_string(),
            "a divisor of --tensor-parallel-size",
        ));
    }
    if data_parallel_size > 1 {
        notes.push(format!(
            "--data-parallel-size {data_parallel_size}: each replica is planned alone (replicas do not share memory)"
        ));
    }
    let kv_cache_memory_bytes = match flags.get("--kv-cache-memory-bytes") {
        None => None,
        Some(v) => Some(parse_size(v).map_err(|_| {
            EngineError::bad_value(
                "--kv-cache-memory-bytes",
                v,
                "bytes such as 8589934592 or 8GiB",
            )
        })?),
    };
    let cpu_offload_bytes = match flags.get("--cpu-offload-gb") {
        None => 0,
        // vllm/config/cache.py: cpu_offload_gb is GiB (`* GiB_bytes` in the offloader)
        Some(v) => (parse_f64("--cpu-offload-gb", v, "GiB such as 4")? * GIB as f64) as u64,
    };
    let speculative = flags
        .get("--speculative-config")
        .map(parse_speculative)
        .transpose()?;
    if let Some(cc) = flags.get("--compilation-config") {
        let lower = cc.to_ascii_lowercase().replace(' ', "");
        if lower.contains("\"cudagraph_mode\":\"none\"") || lower == "0" {
            cudagraphs_disabled = true;
        }
    }
    if flags.get("--optimization-level") == Some("0") {
        cudagraphs_disabled = true;
    }
    let env = |name: &str| cmd.env_var(name);
    let visible_devices = env("CUDA_VISIBLE_DEVICES")
        .map(|v| parse_list::<usize>("CUDA_VISIBLE_DEVICES", v, "GPU indices such as 0,1"))
        .transpose()?;
    let pp_layer_partition = env("VLLM_PP_LAYER_PARTITION")
        .map(|v| parse_list::<u64>("VLLM_PP_LAYER_PARTITION", v, "layer counts such as 16,24"))
        .transpose()?;
    // a 0/1 switch vLLM reads from the environment (envs.py: "1"/"true" or "0"/"false")
    let switch = |name: &str| match env(name).map(str::trim) {
        None => Ok(None),
        Some("1" | "true" | "True") => Ok(Some(true)),
        Some("0" | "false" | "False") => Ok(Some(false)),
        Some(v) => Err(EngineError::BadEnv {
            name: name.into(),
            value: v.into(),
            expected: "0 or 1".into(),
        }),
    };
    let estimate_cudagraphs = switch("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS")?;
    let use_v2_model_runner = switch("VLLM_USE_V2_MODEL_RUNNER")?;
    let use_v1 = switch("VLLM_USE_V1")?;
    let rocm_moe_padding = switch("VLLM_ROCM_MOE_PADDING")?.unwrap_or(true);
    let mxfp4_use_marlin = switch("VLLM_MXFP4_USE_MARLIN")?;
    let mut unknown_flags = Vec::new();
    for u in &flags.unknown {
        let name = u.split([' ', '=']).next().unwrap_or(u);
        if !HARMLESS.contains(&name.replace('_', "-").as_str()) {
            unknown_flags.push(u.clone());
        }
    }
    if positionals.len() > 1 {
        unknown_flags.extend(positionals[1..].iter().map(|s| s.to_string()));
    }
    // values vLLM's own parser refuses are refused here (crate::choices names the sources)
    use crate::choices::{check, MODEL_DTYPES, VLLM_KV_CACHE_DTYPES, VLLM_QUANTIZATIONS};
    check(
        "vLLM",
        "--kv-cache-dtype",
        flags.get("--kv-cache-dtype"),
        VLLM_KV_CACHE_DTYPES,
    )?;
    check(
        "vLLM",
        "--quantization",
        flags.get("--quantization"),
        VLLM_QUANTIZATIONS,
    )?;
    check("vLLM", "--dtype", flags.get("--dtype"), MODEL_DTYPES)?;
    Ok(VllmConfig {
        model,
        version,
        version_given,
        gpu_memory_utilization,
        max_model_len,
        max_num_seqs: parse_count(&flags, "--max-num-seqs")?,
        max_num_batched_tokens: match flags.get("--max-num-batched-tokens") {
            None => None,
            Some(v) => Some(parse_human_int("--max-num-batched-tokens", v)?),
        },
        block_size: parse_count(&flags, "--block-size")?,
        kv_cache_dtype: flags.get("--kv-cache-dtype").unwrap_or("auto").to_string(),
        mamba_ssm_cache_dtype: flags.get("--mamba-ssm-cache-dtype").map(str::to_string),
        kv_cache_memory_bytes,
        cpu_offload_bytes,
        enforce_eager: flags.bool("--enforce-eager").unwrap_or(false),
        quantization: flags.get("--quantization").map(str::to_string),
        dtype: flags.get("--dtype").map(str::to_string),
        tensor_parallel_size,
        pipeline_parallel_size,
        data_parallel_size,
        decode_context_parallel_size,
        enable_expert_parallel: flags.bool("--enable-expert-parallel").unwrap_or(false),
        speculative,
        limit_mm_per_prompt: flags.get("--limit-mm-per-prompt").map(str::to_string),
        enable_prefix_caching: flags.bool("--enable-prefix-caching"),
        disable_hybrid_kv_cache_manager: flags
            .bool("--disable-hybrid-kv-cache-manager")
            .unwrap_or(false),
        num_gpu_blocks_override: parse_count(&flags, "--num-gpu-blocks-override")?,
        visible_devices,
        pp_layer_partition,
        estimate_cudagraphs,
        cudagraphs_disabled,
        allow_long_max_model_len: matches!(
            env("VLLM_ALLOW_LONG_MAX_MODEL_LEN").map(str::trim),
            Some("1" | "true" | "True")
        ),
        use_v2_model_runner,
        use_v1,
        nvls_disabled: ["NCCL_NVLS_ENABLE", "NCCL_CUMEM_ENABLE"]
            .iter()
            .any(|n| env(n).map(str::trim) == Some("0")),
        rocm_moe_padding,
        mxfp4_use_marlin,
        rocm: false,
        compute_capability: None,
        unknown_flags,
        notes,
    })
}

impl VllmConfig {
    /// Workers (GPUs) the engine uses: tensor × pipeline parallel.
    pub fn world_size(&self) -> u64 {
        self.tensor_parallel_size * self.pipeline_parallel_size
    }

    /// True when the start runs the V0 engine: every release before v0.8.0 (VLLM_USE_V1 became
    /// 1), and from v0.8.0 until V0 was removed (taken as v0.11.0) when `VLLM_USE_V1=0` or the
    /// GPU's compute capability is below 8.0 (engine/arg_utils.py `_is_v1_supported_oracle`:
    /// "Compute Capability < 8.0 is not supported by the V1 Engine. Falling back to V0", printed
    /// by 0.8.2 on a T4 and 0.10.1.1 on Kaggle T4s, code-index ids 7884883735, 70088477848).
    /// The compute capability is the plan's GPU's ([`VllmConfig::compute_capability`]).
    pub fn runs_v0(&self) -> bool {
        if self.version < Version::new(0, 8, 0) {
            return true;
        }
        self.version < Version::new(0, 11, 0)
            && (self.use_v1 == Some(false)
                || (self.use_v1.is_none() && self.compute_capability.is_some_and(|c| c < 8.0)))
    }

    /// True when the start-up profile charges everything on the device that torch did not
    /// allocate (`mem_get_info` used − torch allocated): the CUDA context and the memory other
    /// processes hold on the GPU go out of the budget. V0's `determine_num_available_blocks` of
    /// v0.6.4.x (vllm/worker/worker.py: `non_torch_allocations = total_allocated_bytes -
    /// torch_allocated_bytes`, PR #9352, the "Memory profiling results: ... initial_memory_usage"
    /// line; replaced in v0.6.5 by the baseline-snapshot profiler of PR #10511) and V1's
    /// `determine_available_memory` until PR #19312 ("V1's memory profiling incorrectly counts
    /// memory used by other processes as non_torch_allocations"; the boundary is taken as v0.9.0,
    /// as for [`super::profile::V1_EARLY_CONTEXT_BYTES`]).
    pub fn profiles_device_wide(&self) -> bool {
        if self.runs_v0() {
            self.version >= Version::new(0, 6, 4) && self.version < Version::new(0, 6, 5)
        } else {
            self.version < Version::new(0, 9, 0)
        }
    }

    /// True when CUDA graphs are captured at all.
    pub fn uses_cuda_graphs(&self) -> bool {
        !self.enforce_eager && !self.cudagraphs_disabled
    }

    /// True when the CUDA-graph estimate is taken out of the KV budget.
    pub fn deducts_cuda_graphs(&self) -> bool {
        self.uses_cuda_graphs()
            && self
                .estimate_cudagraphs
                .unwrap_or_else(|| self.version.deducts_cuda_graphs())
    }

    /// `max_num_batched_tokens` and `max_num_seqs` as vLLM resolves them on this GPU.
    pub fn batch_limits(
        &self,
        device_total_bytes: u64,
        device_name: &str,
        max_model_len: u64,
    ) -> (u64, u64) {
        let (tokens, seqs) = batch_defaults(self.version, device_total_bytes, device_name);
        // V0's scheduler default is 256 sequences at every release (SchedulerConfig)
        let seqs = self
            .max_num_seqs
            .unwrap_or(if self.runs_v0() { 256 } else { seqs });
        if self.runs_v0() && self.max_num_batched_tokens.is_none() {
            // V0 (the default engine before v0.8.0, when VLLM_USE_V1 became 1): chunked prefill
            // is on by default only for contexts over 32K (arg_utils.py: "Chunked prefill is
            // enabled by default for models with max_model_len > 32K"); without it the scheduler
            // must take a whole prompt, so max_num_batched_tokens = max(max_model_len, 2048)
            // (config.py SchedulerConfig) and the profile run is that many tokens.
            let chunked = max_model_len > 32768;
            let t = if chunked {
                2048
            } else {
                max_model_len.max(2048)
            };
            return (t, seqs);
        }
        let tokens = self.max_num_batched_tokens.unwrap_or_else(|| {
            // arg_utils.py `_set_default_max_num_seqs_and_batched_tokens_args`: the default is
            // capped at max_num_seqs * max_model_len
            tokens.min(seqs.saturating_mul(max_model_len.max(1)))
        });
        (tokens, seqs)
    }
}

/// `EngineArgs.get_batch_defaults` for the OpenAI API server (`vllm serve`), by release
/// (vllm/engine/arg_utils.py):
/// - from v0.9.0: GPUs of at least 70 GiB other than the A100 get 8192 batched tokens and 1024
///   sequences (the A100 is excluded since PR #17885), every other GPU 2048 and 256;
/// - v0.8.4–v0.8.x: only GPUs named H100/H200 get 8192/1024, every other GPU 2048 and 256
///   (PR #16158 lowered V1's sequences to 256 off H100/H200 "since many people have run into
///   OOM when using V1", vllm#15617);
/// - earlier V1 (`_set_default_args_v1`): 1024 sequences everywhere, 8192 tokens on H100/H200
///   and 2048 elsewhere.
///
/// V0 keeps its own 256 sequences ([`VllmConfig::batch_limits`]). The v0.9.0 boundary is
/// approximate (not pinned down in the source history read).
pub fn batch_defaults(version: Version, device_total_bytes: u64, device_name: &str) -> (u64, u64) {
    let name = device_name.to_ascii_lowercase();
    let hopper = name.contains("h100") || name.contains("h200");
    if version < Version::new(0, 8, 4) {
        // V1 before PR #16158 (v0.8.4): 1024 sequences on every GPU (docs PR #15357: "The
        // default max_num_seqs has been raised from 256 in V0 to 1024 in V1"), 8192 batched
        // tokens on H100/H200 and 2048 elsewhere (`_set_default_args_v1`)
        return (if hopper { 8192 } else { 2048 }, 1024);
    }
    let large = if version >= Version::new(0, 9, 0) {
        device_total_bytes >= 70 * GIB && !name.contains("a100")
    } else {
        hopper
    };
    if large {
        (8192, 1024)
    } else {
        (2048, 256)
    }
}

fn parse_f64(flag: &str, v: &str, expected: &str) -> Result<f64, EngineError> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| EngineError::bad_value(flag, v, expected))
}

fn parse_count(flags: &Flags, flag: &str) -> Result<Option<u64>, EngineError> {
    match flags.get(flag) {
        None => Ok(None),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(EngineError::bad_value(flag, v, "a positive whole number")),
        },
    }
}

/// vLLM's `human_readable_int` (vllm/engine/arg_utils.py): `25.6k` = 25600 (lowercase k/m/g are
/// powers of 1000), `32K` = 32768 (uppercase K/M/G are powers of 1024).
fn parse_human_int(flag: &str, v: &str) -> Result<u64, EngineError> {
    let t = v.trim();
    let bad = || EngineError::bad_value(flag, v, "a token count such as 32768, 32k or 32K");
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        Some('g') => (&t[..t.len() - 1], 1e9),
        Some('K') => (&t[..t.len() - 1], 1024.0),
        Some('M') => (&t[..t.len() - 1], 1024.0 * 1024.0),
        Some('G') => (&t[..t.len() - 1], 1024.0 * 1024.0 * 1024.0),
        _ => (t, 1.0),
    };
    let x: f64 = num.parse().map_err(|_| bad())?;
    let n = x * mult;
    if !(1.0..=1e12).contains(&n) || n.fract() != 0.0 {
        return Err(bad());
    }
    Ok(n as u64)
}

fn parse_max_model_len(v: &str) -> Result<MaxModelLen, EngineError> {
    let t = v.trim();
    if t == "-1" || t.eq_ignore_ascii_case("auto") {
        return Ok(MaxModelLen::Auto);
    }
    parse_human_int("--max-model-len", t)
        .map(MaxModelLen::Tokens)
        .map_err(|_| {
            EngineError::bad_value(
                "--max-model-len",
                v,
                "a token count such as 32768, 32k, or auto",
            )
        })
}

fn parse_list<T: std::str::FromStr>(
    name: &str,
    v: &str,
    expected: &str,
) -> Result<Vec<T>, EngineError> {
    v.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse::<T>())
        .collect::<Result<Vec<T>, _>>()
        .map_err(|_| EngineError::BadEnv {
            name: name.into(),
            value: v.into(),
            expected: expected.into(),
        })
}

fn parse_speculative(v: &str) -> Result<Speculative, EngineError> {
    let bad = || {
        EngineError::bad_value(
            "--speculative-config",
            v,
            "a JSON object such as '{\"method\": \"eagle3\", \"model\": \"ORG/DRAFT\", \"num_speculative_tokens\": 3}'",
        )
    };
    let json: serde_json::Value = serde_json::from_str(v).map_err(|_| bad())?;
    let obj = json.as_object().ok_or_else(bad)?;
    let draft_model = obj
        .get("model")
        .and_then(|m| m.as_str())
        .map(str::to_string);
    let method = obj
        .get("method")
        .and_then(|m| m.as_str())
        .map(str::to_string)
        .or_else(|| draft_model.as_ref().map(|_| "draft_model".to_string()))
        .unwrap_or_else(|| "unknown".to_string());
    let num_speculative_tokens = obj
        .get("num_speculative_tokens")
        .and_then(|n| n.as_u64())
        .unwrap_or(1);
    Ok(Speculative {
        method,
        num_speculative_tokens,
        draft_model,
    })
}
