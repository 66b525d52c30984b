//! `vramfit check [--gpu SPEC] [--gpu-free LIST] [--engine-version V] [--json] -- <command>`:
//! will this exact serving command fit? Per device: weights, KV cache, compute, CUDA graphs,
//! overhead; the verdict; the largest context that fits; the smallest changes that make it fit.
//! Exit 0 fits, 1 does not fit, 2 bad input.

use crate::error::{CliError, CmdResult};
use crate::gpu_spec;
use crate::render;
use vramfit_engine::cmdline::{Command, EngineKind};
use vramfit_engine::{llamacpp, vllm, Hardware, MemoryPlan, Verdict};
use vramfit_model::resolve::{resolve, ResolveOptions, Resolved};
use vramfit_model::{layout, quant, GgmlType, WeightSet};

#[derive(clap::Args)]
pub struct Args {
    /// GPUs: `[N x] NAME_OR_SIZE`, comma-separated for mixed cards ("RTX 4090", "2x A100-80G", "24GiB", "4090,3090").
    #[arg(long)]
    pub gpu: Option<String>,
    /// Free memory per GPU at launch (other processes), comma-separated in device order ("23041MiB").
    #[arg(long = "gpu-free")]
    pub gpu_free: Option<String>,
    /// Engine release: vLLM/SGLang `0.15.2`, llama.cpp build `b5274`; default: current behaviour.
    #[arg(long = "engine-version")]
    pub engine_version: Option<String>,
    /// Print JSON (DESIGN.md's `check --json` contract).
    #[arg(long)]
    pub json: bool,
    /// The serving command, after `--` (it may start with VAR=value assignments).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub command: Vec<String>,
}

pub fn run(args: Args) -> CmdResult {
    let hw = gpu_spec::hardware(args.gpu.as_deref(), args.gpu_free.as_deref())?;
    let plan = check(&args.command, &hw, args.engine_version.as_deref())?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&plan).map_err(|e| CliError::input(e.to_string()))?
        );
    } else {
        print!("{}", render::check_report(&plan));
    }
    Ok(if plan.verdict == Verdict::Fits { 0 } else { 1 })
}

/// Run the engine model for a pasted command.
pub fn check(
    command: &[String],
    hw: &Hardware,
    version: Option<&str>,
) -> Result<MemoryPlan, CliError> {
    let cmd = Command::parse(command).map_err(|e| CliError::input(e.to_string()))?;
    match cmd.engine {
        Some(EngineKind::Vllm) => {
            let cfg = vllm::parse(&cmd, version).map_err(|e| CliError::input(e.to_string()))?;
            let r = load(&cfg.model)?;
            Ok(vllm::plan(&r.spec, r.weights.as_ref(), &cfg, hw))
        }
        Some(EngineKind::LlamaCpp) => {
            let build = match version {
                Some(v) => Some(llamacpp::version::Build::parse(v).ok_or_else(|| {
                    CliError::input(format!("--engine-version '{v}' is not a llama.cpp build: write b5274 or 5274"))
                })?),
                None => None,
            };
            let cfg = llamacpp::parse(&cmd.program, &cmd.args, &cmd.env, build).map_err(|e| CliError::input(e.to_string()))?;
            let model = cfg.model_path.clone().or(cfg.hf_repo.clone()).unwrap_or_default();
            let r = load(&model)?;
            let weights = gguf_weights(&r)?;
            Ok(llamacpp::plan(&r.spec, &weights, &cfg, hw))
        }
        Some(other) => Err(CliError::input(format!(
            "{} commands are not modelled yet by `check`; vLLM and llama.cpp (llama-server, llama-cli, llama-bench) are",
            other.name()
        ))),
        None => Err(CliError::input(format!(
            "'{}' is not a serving command vramfit knows: paste a vllm, llama-server/llama-cli, ollama, sglang or transformers command after --",
            cmd.program
        ))),
    }
}

/// Resolve a model for an engine.
pub fn load(model: &str) -> Result<Resolved, CliError> {
    resolve(model, &ResolveOptions::from_env()).map_err(|e| CliError::input(e.to_string()))
}

/// The GGUF tensors llama.cpp will load: read from the file, or predicted for the quant name.
pub fn gguf_weights(r: &Resolved) -> Result<WeightSet, CliError> {
    if let Some(w) = &r.weights {
        if w.tensors
            .iter()
            .any(|t| matches!(t.dtype, vramfit_model::TensorDtype::Ggml(_)))
        {
            return Ok(w.clone());
        }
    }
    let qname = r.gguf_quant.clone().unwrap_or_else(|| "Q4_K_M".into());
    let parsed = quant::FileType::parse(&qname).ok_or_else(|| {
        CliError::input(format!(
            "quant '{qname}' is not a llama.cpp quant name: use Q4_K_M, Q8_0, IQ4_XS, F16, ..."
        ))
    })?;
    let base_type = if parsed.ftype.default_type() == GgmlType::BF16 {
        GgmlType::BF16
    } else {
        GgmlType::F16
    };
    let full = layout::synthesize(&r.spec, base_type);
    // community quants of i-quant types are made with an importance matrix (llama-quantize
    // refuses most IQ types without one)
    let imatrix = qname.to_ascii_uppercase().contains("IQ");
    let mut w = quant::predict(&full, &r.spec, parsed.ftype, imatrix);
    w.source = format!("predicted {} from {}", parsed.ftype.name(), r.source);
    Ok(w)
}
