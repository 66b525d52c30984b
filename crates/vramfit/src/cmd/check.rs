//! `vramfit check [--gpu SPEC] [--gpu-free LIST] [--engine-version V] [--json] -- <command>`:
//! will this exact serving command fit? Per device: weights, KV cache, compute, CUDA graphs,
//! overhead; the verdict; the largest context that fits; the smallest changes that make it fit.
//! Exit 0 fits, 1 does not fit, 2 bad input.

use crate::error::{CliError, CmdResult};
use crate::gpu_spec;
use crate::render;
use vramfit_engine::cmdline::{Command, EngineKind};
use vramfit_engine::{llamacpp, ollama, sglang, transformers, vllm, Hardware, MemoryPlan, Verdict};
use vramfit_model::resolve::Resolved;
use vramfit_model::WeightSet;

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
    /// The engine's startup log of this deployment: its measured numbers replace the predicted
    /// ones (cmd/from_log.rs); the GPU and release default to the log's.
    #[arg(long = "from-log")]
    pub from_log: Option<String>,
    /// The serving command, after `--` (it may start with VAR=value assignments).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub command: Vec<String>,
}

pub fn run(args: Args) -> CmdResult {
    let cal = match &args.from_log {
        Some(log) => {
            let mut c = super::calibrate::from_log(log, args.gpu.as_deref(), None, None)?;
            if c.model.is_empty() {
                // a log without its start: it is taken as the command's deployment
                c.model = super::from_log::command_model(&args.command).unwrap_or_default();
                c.warnings
                    .push("the log names no model: taken as the command's".into());
            }
            Some(c)
        }
        None => None,
    };
    let hw = match &cal {
        Some(c) => {
            super::from_log::install(c);
            super::from_log::hardware(c, args.gpu.as_deref(), args.gpu_free.as_deref())?
        }
        None => {
            super::calibrate::install_stored();
            gpu_spec::hardware(args.gpu.as_deref(), args.gpu_free.as_deref())?
        }
    };
    let version = args
        .engine_version
        .clone()
        .or_else(|| cal.as_ref().and_then(|c| c.engine_version.clone()));
    let mut plan = check(&args.command, &hw, version.as_deref())?;
    let block = match &cal {
        Some(c) => Some(super::from_log::finish(&mut plan, c)?),
        None => super::from_log::stored_block(&plan),
    };
    let text = if args.json {
        let mut v = serde_json::to_value(&plan).map_err(|e| CliError::input(e.to_string()))?;
        if let (Some(b), Some(o)) = (block, v.as_object_mut()) {
            o.insert("calibration".into(), b);
        }
        serde_json::to_string_pretty(&v).map_err(|e| CliError::input(e.to_string()))? + "\n"
    } else {
        render::check_report(&plan)
    };
    render::emit(&text);
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
        Some(EngineKind::Ollama) => {
            let read = |p: &str| std::fs::read_to_string(p).map_err(|e| e.to_string());
            let cfg = ollama::parse(&cmd, version, &read).map_err(|e| CliError::input(e.to_string()))?;
            let mut r = match ollama::tags::resolve(&cfg.model) {
                Some(ollama::tags::OllamaModel::Library { repo, quant }) => {
                    let mut r = load(&repo)?;
                    r.gguf_quant.get_or_insert(quant);
                    r
                }
                Some(ollama::tags::OllamaModel::HfRepo(id)) => load(&id)?,
                Some(ollama::tags::OllamaModel::Path(p)) => load(&p)?,
                None => {
                    return Err(CliError::input(format!(
                        "Ollama model '{}' is not in vramfit's tag table: name it as hf.co/ORG/NAME-GGUF:QUANT or give the GGUF path",
                        cfg.model
                    )))
                }
            };
            if r.gguf_quant.is_none() && r.weights.is_none() {
                r.gguf_quant = Some("Q4_K_M".into());
            }
            let weights = gguf_weights(&r)?;
            ollama::plan(&r.spec, &weights, &cfg, hw).map_err(|e| CliError::input(e.to_string()))
        }
        Some(EngineKind::Sglang) => {
            let cfg = sglang::parse(&cmd).map_err(|e| CliError::input(e.to_string()))?;
            let r = load(&cfg.model)?;
            let mut plan = sglang::plan(&r.spec, r.weights.as_ref(), &cfg, hw);
            if let Some(v) = version {
                plan.notes.push(format!("--engine-version {v}: SGLang is modelled as of v0.5.x (server_args.py defaults); older releases are not distinguished"));
            }
            Ok(plan)
        }
        Some(EngineKind::Transformers) => {
            let cfg = transformers::parse(&cmd).map_err(|e| CliError::input(e.to_string()))?;
            let r = load(&cfg.model)?;
            Ok(transformers::plan(&r.spec, &cfg, hw))
        }
        None => Err(CliError::input(format!(
            "'{}' is not a serving command vramfit knows: paste a vllm, llama-server/llama-cli, ollama, sglang or transformers command after --",
            cmd.program
        ))),
    }
}

/// Resolve a model for an engine (shared with the solver: `vramfit_plan::model`).
pub fn load(model: &str) -> Result<Resolved, CliError> {
    vramfit_plan::model::load(model).map_err(|e| CliError::input(e.to_string()))
}

/// The GGUF tensors llama.cpp will load: read from the file, or predicted for the quant name.
pub fn gguf_weights(r: &Resolved) -> Result<WeightSet, CliError> {
    vramfit_plan::model::gguf_weights(r).map_err(|e| CliError::input(e.to_string()))
}
