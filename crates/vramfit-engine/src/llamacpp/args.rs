//! llama.cpp command lines (`llama-server`, `llama-cli`, `llama-bench`, `llama-perplexity`, ...)
//! → [`LlamaCppConfig`]. Flag names and defaults from common/arg.cpp and common/common.h
//! (@82bb48500, 2026-08); defaults that changed over time are resolved in `resolve`.

use super::version::{change, Build, CURRENT};
use crate::error::EngineError;
use vramfit_model::GgmlType;

/// Which llama.cpp program runs; server defaults differ from the other tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Server,
    Cli,
    Bench,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlashAttn {
    On,
    Off,
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitMode {
    None,
    Layer,
    Row,
    Tensor,
}

/// Where `-ot` sends matching tensors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Cpu,
    Gpu(usize),
}

/// One `-ot PATTERN=BUFFER` rule, in the user's order (the first match wins).
#[derive(Debug, Clone)]
pub struct Override {
    pub pattern: regex::Regex,
    pub target: Target,
}

/// Everything llama.cpp reads from its command line that changes memory.
#[derive(Debug, Clone)]
pub struct LlamaCppConfig {
    pub tool: Tool,
    /// `-m PATH`
    pub model_path: Option<String>,
    /// `-hf ORG/NAME[-GGUF][:QUANT]`
    pub hf_repo: Option<String>,
    /// `-c`; None = the tool's default (4096, or the training context since #16653)
    pub n_ctx: Option<u64>,
    pub n_batch: u64,
    pub n_ubatch: u64,
    /// `-np`; None = the tool's default
    pub n_parallel: Option<u64>,
    pub kv_unified: Option<bool>,
    /// `-ngl`; None = default; negative = all
    pub n_gpu_layers: Option<i64>,
    pub flash_attn: Option<FlashAttn>,
    pub type_k: GgmlType,
    pub type_v: GgmlType,
    pub tensor_split: Option<Vec<f64>>,
    pub split_mode: SplitMode,
    pub main_gpu: usize,
    pub overrides: Vec<Override>,
    /// `--n-cpu-moe N` (`--cpu-moe` = all layers)
    pub n_cpu_moe: Option<u64>,
    pub no_kv_offload: bool,
    pub no_op_offload: bool,
    pub swa_full: bool,
    pub mmap: bool,
    pub mmproj: Option<String>,
    pub draft_model: Option<String>,
    pub fit: Option<bool>,
    /// `--fit-target` MiB per device (default 1024)
    pub fit_target_mib: Vec<u64>,
    pub fit_ctx: u64,
    /// what `--fit` decided for the layers (set by [`super::autofit`], never read from a flag)
    pub fit_layers: Option<std::sync::Arc<super::autofit::LayerParts>>,
    /// devices the process sees (CUDA_VISIBLE_DEVICES / `-dev`), as indices into the GPU list
    pub devices: Option<Vec<usize>>,
    /// llama-bench: tokens of prompt + generation + depth (its n_ctx, llama-bench.cpp
    /// `cparams.n_ctx = n_prompt + n_gen + n_depth`; defaults 512 + 128 + 0)
    pub bench_tokens: Option<u64>,
    pub build: Build,
    pub build_given: bool,
    /// flags read but not modelled, and assumptions, for the report
    pub notes: Vec<String>,
}

fn tool_of(program: &str) -> Tool {
    let base = program.rsplit(['/', '\\']).next().unwrap_or(program);
    let base = base.strip_suffix(".exe").unwrap_or(base);
    match base {
        "llama-server" | "server" => Tool::Server,
        "llama-cli" | "main" | "llama-run" => Tool::Cli,
        "llama-bench" => Tool::Bench,
        _ => Tool::Other,
    }
}

fn num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, EngineError> {
    v.trim().parse().map_err(|_| EngineError::BadValue {
        flag: flag.to_string(),
        value: v.to_string(),
        expected: "expected a number".into(),
    })
}

fn cache_type(flag: &str, v: &str) -> Result<GgmlType, EngineError> {
    // allowed cache types: common/arg.cpp kv_cache_types
    const ALLOWED: &[&str] = &[
        "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1",
    ];
    if ALLOWED.iter().any(|a| a.eq_ignore_ascii_case(v)) {
        if let Some(t) = GgmlType::from_name(v) {
            return Ok(t);
        }
    }
    Err(EngineError::BadValue {
        flag: flag.to_string(),
        value: v.to_string(),
        expected: format!("llama.cpp accepts {}", ALLOWED.join(", ")),
    })
}

fn gpu_index(buft: &str) -> Option<Target> {
    let b = buft.trim();
    if b.eq_ignore_ascii_case("cpu") || b.starts_with("CPU") {
        return Some(Target::Cpu);
    }
    // CUDA0, ROCm1, Vulkan0, SYCL0, Metal, MTL0, CANN0: a device name with its index
    let digits: String = b.chars().rev().take_while(|c| c.is_ascii_digit()).collect();
    let idx: usize = digits
        .chars()
        .rev()
        .collect::<String>()
        .parse()
        .unwrap_or(0);
    let name = &b[..b.len() - digits.len()];
    matches!(
        name.to_ascii_lowercase().as_str(),
        "cuda"
            | "rocm"
            | "vulkan"
            | "sycl"
            | "metal"
            | "mtl"
            | "cann"
            | "musa"
            | "opencl"
            | "gpu"
            | "hip"
    )
    .then_some(Target::Gpu(idx))
}

/// Parse `-ot` values: `PATTERN=BUFFER[,PATTERN=BUFFER...]`.
fn overrides(flag: &str, v: &str) -> Result<Vec<Override>, EngineError> {
    let mut out = Vec::new();
    for part in v.split(',').filter(|p| !p.trim().is_empty()) {
        let (pat, buft) = part.rsplit_once('=').ok_or_else(|| EngineError::BadValue {
            flag: flag.to_string(),
            value: part.to_string(),
            expected:
                "write it as <tensor name regex>=<buffer type>, e.g. \"\\.ffn_.*_exps\\.=CPU\""
                    .into(),
        })?;
        let target = gpu_index(buft).ok_or_else(|| EngineError::BadValue {
            flag: flag.to_string(),
            value: buft.to_string(),
            expected: "the buffer type must be CPU or a device such as CUDA0".into(),
        })?;
        let pattern = regex::Regex::new(pat).map_err(|e| EngineError::BadValue {
            flag: flag.to_string(),
            value: pat.to_string(),
            expected: format!(
                "not a regex vramfit can read ({})",
                e.to_string().lines().last().unwrap_or("")
            ),
        })?;
        out.push(Override { pattern, target });
    }
    Ok(out)
}

fn on_off(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "enabled" | "yes" => Some(true),
        "off" | "false" | "0" | "disabled" | "no" => Some(false),
        _ => None,
    }
}

/// Flags that take no value (so the next token is not consumed).
const BOOL_FLAGS: &[&str] = &[
    "-kvu",
    "--kv-unified",
    "-no-kvu",
    "--no-kv-unified",
    "-cmoe",
    "--cpu-moe",
    "-nkvo",
    "--no-kv-offload",
    "--no-op-offload",
    "--swa-full",
    "--no-mmap",
    "--mlock",
    "--no-mmproj",
    "--no-warmup",
    "-cnv",
    "-no-cnv",
    "--conversation",
    "--no-conversation",
    "--verbose",
    "-v",
    "--cont-batching",
    "-cb",
    "--no-cont-batching",
    "-nocb",
    "--jinja",
    "--no-webui",
    "--embedding",
    "--embeddings",
    "--reranking",
    "--metrics",
    "--slots",
    "--no-slots",
    "--log-disable",
    "-e",
    "--escape",
    "--no-escape",
    "-i",
    "--interactive",
    "--mmproj-offload",
    "--no-mmproj-offload",
    "-sp",
    "--special",
    "--check-tensors",
    "-no-perf",
    "--no-perf",
];

/// Read a llama.cpp command line. `program` is argv[0]; `env` the leading assignments.
pub fn parse(
    program: &str,
    args: &[String],
    env: &[(String, String)],
    build: Option<Build>,
) -> Result<LlamaCppConfig, EngineError> {
    let tool = tool_of(program);
    let mut c = LlamaCppConfig {
        tool,
        model_path: None,
        hf_repo: None,
        n_ctx: None,
        n_batch: 2048,
        n_ubatch: 512,
        n_parallel: None,
        kv_unified: None,
        n_gpu_layers: None,
        flash_attn: None,
        type_k: GgmlType::F16,
        type_v: GgmlType::F16,
        tensor_split: None,
        split_mode: SplitMode::Layer,
        main_gpu: 0,
        overrides: Vec::new(),
        n_cpu_moe: None,
        no_kv_offload: false,
        no_op_offload: false,
        swa_full: false,
        mmap: true,
        mmproj: None,
        draft_model: None,
        fit: None,
        fit_target_mib: vec![1024],
        fit_ctx: 4096,
        fit_layers: None,
        devices: None,
        bench_tokens: None,
        build: build.unwrap_or(CURRENT),
        build_given: build.is_some(),
        notes: Vec::new(),
    };
    let (mut bench_p, mut bench_n, mut bench_d) = (512u64, 128u64, 0u64);
    // llama-bench takes comma lists and runs every combination: the largest one decides memory
    let list_max = |flag: &str, v: &str| -> Result<u64, EngineError> {
        v.split(',')
            .map(|x| num::<u64>(flag, x))
            .try_fold(0u64, |m, x| x.map(|x| m.max(x)))
    };
    // LLAMA_ARG_* environment variables mirror the flags (common/arg.cpp set_env)
    let mut argv: Vec<String> = Vec::new();
    for (k, v) in env {
        let flag = match k.as_str() {
            "LLAMA_ARG_CTX_SIZE" => "-c",
            "LLAMA_ARG_N_GPU_LAYERS" => "-ngl",
            "LLAMA_ARG_FLASH_ATTN" => "-fa",
            "LLAMA_ARG_N_PARALLEL" => "-np",
            "LLAMA_ARG_BATCH" => "-b",
            "LLAMA_ARG_UBATCH" => "-ub",
            "LLAMA_ARG_CACHE_TYPE_K" => "-ctk",
            "LLAMA_ARG_CACHE_TYPE_V" => "-ctv",
            "LLAMA_ARG_MODEL" => "-m",
            "LLAMA_ARG_HF_REPO" => "-hf",
            "LLAMA_ARG_FIT" => "--fit",
            "CUDA_VISIBLE_DEVICES" | "HIP_VISIBLE_DEVICES" | "ROCR_VISIBLE_DEVICES" => {
                let ids: Vec<usize> = v.split(',').filter_map(|x| x.trim().parse().ok()).collect();
                c.devices = Some((0..ids.len()).collect());
                continue;
            }
            _ => continue,
        };
        argv.push(flag.into());
        argv.push(v.clone());
    }
    argv.extend(args.iter().cloned());

    let mut i = 0;
    while i < argv.len() {
        let raw = argv[i].clone();
        i += 1;
        let (flag, inline) = match raw.split_once('=') {
            Some((f, v)) if f.starts_with('-') && !f.contains(' ') => {
                (f.to_string(), Some(v.to_string()))
            }
            _ => (raw.clone(), None),
        };
        if !flag.starts_with('-') {
            c.notes.push(format!("ignored argument '{flag}'"));
            continue;
        }
        let f = flag.as_str();
        // flags with an optional value
        if matches!(f, "-fa" | "--flash-attn" | "-fit" | "--fit") {
            let is_fit = f.ends_with("fit");
            let next = inline.clone().or_else(|| {
                argv.get(i)
                    .filter(|v| {
                        on_off(v).is_some()
                            || v.as_str() == "auto"
                            // --fit takes on|off (common/arg.cpp): a word after it is its value
                            || (is_fit && !v.starts_with('-') && !v.contains('/'))
                    })
                    .cloned()
                    .inspect(|_| i += 1)
            });
            let v = next.unwrap_or_else(|| "on".into());
            if is_fit {
                c.fit = Some(on_off(&v).ok_or_else(|| EngineError::BadValue {
                    flag: flag.clone(),
                    value: v.clone(),
                    expected: "use --fit on or --fit off".into(),
                })?);
            } else {
                c.flash_attn = Some(match (v.as_str(), on_off(&v)) {
                    ("auto", _) => FlashAttn::Auto,
                    (_, Some(true)) => FlashAttn::On,
                    (_, Some(false)) => FlashAttn::Off,
                    _ => {
                        return Err(EngineError::BadValue {
                            flag: flag.clone(),
                            value: v,
                            expected: "use on, off or auto".into(),
                        })
                    }
                });
            }
            continue;
        }
        if BOOL_FLAGS.contains(&f) {
            match f {
                "-kvu" | "--kv-unified" => c.kv_unified = Some(true),
                "-no-kvu" | "--no-kv-unified" => c.kv_unified = Some(false),
                "-cmoe" | "--cpu-moe" => c.n_cpu_moe = Some(u64::MAX),
                "-nkvo" | "--no-kv-offload" => c.no_kv_offload = true,
                "--no-op-offload" => c.no_op_offload = true,
                "--swa-full" => c.swa_full = true,
                "--no-mmap" => c.mmap = false,
                "--embedding" | "--embeddings" | "--reranking" => {
                    c.notes.push(format!("{f}: embedding mode reserves outputs for the whole batch; modelled as a generation server"))
                }
                _ => {}
            }
            continue;
        }
        let value = match inline.or_else(|| {
            let v = argv.get(i).cloned();
            i += 1;
            v
        }) {
            Some(v) => v,
            None => return Err(EngineError::MissingValue { flag: flag.clone() }),
        };
        match f {
            "-m" | "--model" => c.model_path = Some(value),
            "-hf" | "-hfr" | "--hf-repo" => c.hf_repo = Some(value),
            "-hff" | "--hf-file" => c.notes.push(format!(
                "--hf-file {value}: the file name is used only to pick the quant"
            )),
            "-p" | "--n-prompt" if tool == Tool::Bench => bench_p = list_max(f, &value)?,
            "-n" | "--n-gen" if tool == Tool::Bench => bench_n = list_max(f, &value)?,
            "-d" | "--n-depth" if tool == Tool::Bench => bench_d = list_max(f, &value)?,
            "-b" | "--batch-size" if tool == Tool::Bench => c.n_batch = list_max(f, &value)?,
            "-ub" | "--ubatch-size" if tool == Tool::Bench => c.n_ubatch = list_max(f, &value)?,
            "-ngl" | "--n-gpu-layers" if tool == Tool::Bench && value.contains(',') => {
                c.n_gpu_layers = Some(list_max(f, &value)? as i64)
            }
            "-c" | "--ctx-size" => c.n_ctx = Some(num(f, &value)?),
            "-b" | "--batch-size" => c.n_batch = num(f, &value)?,
            "-ub" | "--ubatch-size" => c.n_ubatch = num(f, &value)?,
            "-np" | "--parallel" => {
                let n: i64 = num(f, &value)?;
                c.n_parallel = (n > 0).then_some(n as u64);
            }
            "-ngl" | "--gpu-layers" | "--n-gpu-layers" => {
                c.n_gpu_layers = Some(match value.as_str() {
                    "auto" => -1,
                    "all" => -2,
                    v => num(f, v)?,
                })
            }
            "-ctk" | "--cache-type-k" => c.type_k = cache_type(f, &value)?,
            "-ctv" | "--cache-type-v" => c.type_v = cache_type(f, &value)?,
            "-ts" | "--tensor-split" => {
                let parts: Result<Vec<f64>, _> =
                    value.split([',', '/']).map(|p| num::<f64>(f, p)).collect();
                c.tensor_split = Some(parts?);
            }
            "-sm" | "--split-mode" => {
                c.split_mode = match value.as_str() {
                    "none" => SplitMode::None,
                    "layer" => SplitMode::Layer,
                    "row" => SplitMode::Row,
                    "tensor" => SplitMode::Tensor,
                    _ => {
                        return Err(EngineError::BadValue {
                            flag: flag.clone(),
                            value,
                            expected: "use none, layer, row or tensor".into(),
                        })
                    }
                }
            }
            "-mg" | "--main-gpu" => c.main_gpu = num(f, &value)?,
            "-ot" | "--override-tensor" => c.overrides.extend(overrides(f, &value)?),
            "-ncmoe" | "--n-cpu-moe" => c.n_cpu_moe = Some(num(f, &value)?),
            "-mm" | "--mmproj" | "-mmu" | "--mmproj-url" => c.mmproj = Some(value),
            "-md" | "--model-draft" | "-hfd" | "--hf-repo-draft" => c.draft_model = Some(value),
            "-fitt" | "--fit-target" => {
                let parts: Result<Vec<u64>, _> =
                    value.split(',').map(|p| num::<u64>(f, p)).collect();
                c.fit_target_mib = parts?;
            }
            "-fitc" | "--fit-ctx" => c.fit_ctx = num(f, &value)?,
            "-dev" | "--device" => {
                if value != "none" {
                    c.devices = Some((0..value.split(',').count()).collect());
                } else {
                    c.devices = Some(Vec::new());
                }
            }
            // llama-bench / llama-perplexity take the same model flags; their other flags
            // (prompt length, repetitions) do not change the buffers
            _ => c
                .notes
                .push(format!("{f} {value}: no memory effect modelled")),
        }
    }
    if tool == Tool::Bench {
        c.bench_tokens = Some(bench_p + bench_n + bench_d);
        // llama-bench offloads every layer by default (99 in older builds, -1 = all now)
        c.n_gpu_layers = c.n_gpu_layers.or(Some(99));
    }
    if c.model_path.is_none() && c.hf_repo.is_none() {
        return Err(EngineError::NoModel {
            engine: "llama.cpp",
            example: "-m PATH.gguf or -hf ORG/NAME-GGUF[:QUANT]",
        });
    }
    if c.n_ubatch == 0 || c.n_batch == 0 {
        return Err(EngineError::BadValue {
            flag: "-ub".into(),
            value: "0".into(),
            expected: "batch sizes must be positive".into(),
        });
    }
    Ok(c)
}

impl LlamaCppConfig {
    /// Flash attention as this build resolves it: explicit, else `auto` from #15434 on, else off.
    /// `auto` is on where every attention layer runs on a GPU (llama-context.cpp resolve_fused_ops).
    pub fn flash_attn_on(&self) -> bool {
        match self.flash_attn {
            Some(FlashAttn::On) => true,
            Some(FlashAttn::Off) => false,
            Some(FlashAttn::Auto) => true,
            None => self.build.has(change::FA_AUTO_DEFAULT),
        }
    }

    /// (n_parallel, kv_unified) as the tool resolves them: llama-server from #16736 on uses
    /// 4 slots with a unified cache unless told otherwise (tools/server/server.cpp).
    pub fn parallel(&self) -> (u64, bool) {
        let server_auto = self.tool == Tool::Server
            && self.build.has(change::SERVER_NP4_UNIFIED)
            && self.n_parallel.is_none()
            && self.kv_unified != Some(false)
            && self.draft_model.is_none();
        if server_auto {
            return (4, true);
        }
        (
            self.n_parallel.unwrap_or(1),
            self.kv_unified.unwrap_or(false),
        )
    }
}
