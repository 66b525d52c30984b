//! `vramfit fit MODEL --gpu SPEC [--engine E] [--context N] [--concurrency N] [--goal G]
//! [--quants LIST] [--json]`: ranked configurations that fit, each with the exact command, the
//! per-device memory and a reason per knob. Exit 0 with plans, 2 on bad input or when nothing
//! fits (the message names the nearest thing that does).

use crate::cmd::fit_render::{report, GpuSource, Options};
use crate::error::{CliError, CmdResult};
use crate::gpu_spec;
use vramfit_engine::Hardware;
use vramfit_model::units::{parse_context, parse_size};
use vramfit_plan::solve::{self, Model};
use vramfit_plan::{Engine, Goal, Request};

#[derive(clap::Args)]
pub struct Args {
    /// Model: HF repo id, local GGUF / config.json / snapshot dir, or a catalog name.
    pub model: String,
    /// GPUs: `[N x] NAME_OR_SIZE`, comma-separated for mixed cards; default: the GPUs NVML sees.
    #[arg(long)]
    pub gpu: Option<String>,
    /// Free memory per GPU (other tenants), comma-separated; default: NVML's live value, else all.
    #[arg(long = "gpu-free")]
    pub gpu_free: Option<String>,
    /// vllm, llama.cpp, sglang, ollama, transformers (comma-separated) or all.
    #[arg(long, default_value = "all")]
    pub engine: String,
    /// Context per request that must fit (32768, 32k); default: as long as fits.
    #[arg(long)]
    pub context: Option<String>,
    /// Requests served at once.
    #[arg(long)]
    pub concurrency: Option<u64>,
    /// quality (default), context, concurrency or speed.
    #[arg(long, default_value = "quality")]
    pub goal: String,
    /// GGUF quants to consider for llama.cpp (comma-separated); default: BF16 … Q2_K.
    #[arg(long)]
    pub quants: Option<String>,
    /// Memory to keep free per GPU instead of the measured-error headroom (e.g. 1GiB, as
    /// llama.cpp's --fit keeps).
    #[arg(long)]
    pub headroom: Option<String>,
    /// Host RAM for weights kept on the CPU (e.g. 64GiB); default: this machine's available
    /// memory (/proc/meminfo). A plan that needs more does not fit.
    #[arg(long)]
    pub ram: Option<String>,
    /// Plans to print (all in --json); KV-cache variants of one plan count once.
    #[arg(long, default_value_t = 3)]
    pub top: usize,
    /// Print every knob's value and reason, and the `check` line of each plan.
    #[arg(long)]
    pub explain: bool,
    /// Print JSON: {"plans": [{engine, command, env, settings, verdict, devices, kv_cache, ...}]}.
    #[arg(long)]
    pub json: bool,
}

/// GPUs from `--gpu`, or the live ones NVML reports (see [`gpu_spec::hardware`]).
pub fn hardware(gpu: Option<&str>, free: Option<&str>) -> Result<Hardware, CliError> {
    gpu_spec::hardware(gpu, free)
}

pub fn request(
    engine: &str,
    context: Option<&str>,
    concurrency: Option<u64>,
    goal: &str,
    quants: Option<&str>,
) -> Result<Request, CliError> {
    let context = context
        .map(|c| {
            parse_context(c).map_err(|_| {
                CliError::input(format!(
                    "--context '{c}' is not a token count: write 32768, 32k or 128K"
                ))
            })
        })
        .transpose()?;
    if context == Some(0) {
        return Err(CliError::input(
            "--context 0: give a positive token count such as 8192",
        ));
    }
    if concurrency == Some(0) {
        return Err(CliError::input(
            "--concurrency 0: give 1 or more requests at once",
        ));
    }
    Ok(Request {
        engines: Engine::parse_list(engine).map_err(|e| CliError::input(e.to_string()))?,
        context,
        concurrency,
        goal: Goal::parse(goal).map_err(|e| CliError::input(e.to_string()))?,
        quants: quants.map(|q| {
            q.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        }),
        headroom: None,
    })
}

/// Host RAM: `--ram SIZE`, else this machine's MemAvailable (/proc/meminfo); None when neither.
pub fn host_ram(ram: Option<&str>) -> Result<Option<(u64, &'static str)>, CliError> {
    if let Some(r) = ram {
        let b = parse_size(r).map_err(|_| {
            CliError::input(format!("--ram '{r}' is not a size: write 64GiB or 32GB"))
        })?;
        if b == 0 {
            return Err(CliError::input("--ram 0: give the host memory, e.g. 64GiB"));
        }
        return Ok(Some((b, "--ram")));
    }
    Ok(meminfo_available().map(|b| (b, "this machine's MemAvailable; --ram for another")))
}

/// MemAvailable of /proc/meminfo, in bytes.
fn meminfo_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

pub fn run(args: Args) -> CmdResult {
    let mut hw = hardware(args.gpu.as_deref(), args.gpu_free.as_deref())?;
    let ram = host_ram(args.ram.as_deref())?;
    hw.host_ram_bytes = ram.map(|(b, _)| b);
    let req = request(
        &args.engine,
        args.context.as_deref(),
        args.concurrency,
        &args.goal,
        args.quants.as_deref(),
    )?;
    let mut req = req;
    if let Some(h) = &args.headroom {
        req.headroom = Some(parse_size(h).map_err(|_| {
            CliError::input(format!(
                "--headroom '{h}' is not a size: write 1GiB or 512MiB"
            ))
        })?);
    }
    if req.quants.is_some()
        && req
            .engines
            .iter()
            .all(|e| matches!(e, Engine::Vllm | Engine::Sglang))
    {
        return Err(CliError::input(
            "--quants chooses GGUF quants (llama.cpp, Ollama) or BF16/INT8/NF4 (transformers); vLLM and SGLang plan every precision they load: drop --quants or add --engine llama.cpp",
        ));
    }
    // Apple Silicon: the GPU's share of the unified memory as check takes it, and only the
    // engines with a Metal backend (vLLM and SGLang have none; the transformers planner
    // models CUDA): check refuses those commands there
    let mut unified_notes = hw.apply_unified(None);
    if hw.gpus.iter().any(vramfit_engine::hardware::is_apple) {
        let before = req.engines.clone();
        req.engines
            .retain(|e| matches!(e, Engine::LlamaCpp | Engine::Ollama));
        if req.engines.is_empty() {
            return Err(CliError::input(format!(
                "--engine {}: no Metal backend; on Apple Silicon ({}) plan llama.cpp or Ollama: --engine llama.cpp,ollama",
                args.engine, hw.gpus[0].name
            )));
        }
        if req.engines.len() < before.len() {
            unified_notes.push(
                "Apple Silicon: vLLM, SGLang and transformers (CUDA) plans left out; llama.cpp and Ollama run on Metal".into(),
            );
        }
    }
    let model = Model::load(&args.model).map_err(|e| CliError::input(e.to_string()))?;
    let mut res = solve::fit(&model, &hw, &req).map_err(|e| CliError::input(e.to_string()))?;
    res.notes.extend(unified_notes);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&res).map_err(|e| CliError::input(e.to_string()))?
        );
    } else {
        let source = match (&args.gpu, &args.gpu_free) {
            (None, _) => GpuSource::Nvml,
            (Some(_), Some(_)) => GpuSource::GivenWithFree,
            (Some(_), None) => GpuSource::GivenIdle,
        };
        let o = Options {
            top: args.top.max(1),
            explain: args.explain,
            source,
            ram,
        };
        crate::render::emit(&report(&res, &hw, &o));
    }
    Ok(0)
}
