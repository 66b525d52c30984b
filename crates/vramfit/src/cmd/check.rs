//! `vramfit check [--gpu SPEC] [--gpu-free LIST] [--engine-version V] [--json] -- <command>`:
//! will this exact serving command fit? Per device: weights, KV cache, compute, CUDA graphs,
//! overhead; the verdict; the largest context that fits; the smallest changes that make it fit.
//! Exit 0 fits, 1 does not fit, 2 bad input.

use crate::error::{CliError, CmdResult};
use crate::gpu_spec;
use crate::render;
use std::io::IsTerminal;
use vramfit_engine::cmdline::startup::{self, same_release, LogRelease};
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
    /// Host RAM for what the launch keeps on the CPU (e.g. 64GiB); given, a launch that needs
    /// more does not fit; default: this machine's MemAvailable, reported only.
    #[arg(long)]
    pub ram: Option<String>,
    /// Print JSON (DESIGN.md's `check --json` contract).
    #[arg(long)]
    pub json: bool,
    /// A Python script that builds the engine (vLLM `LLM(...)`, SGLang `Engine(...)`,
    /// transformers `from_pretrained(...)`), read without running it; `-` reads stdin.
    #[arg(long, value_name = "FILE")]
    pub python: Option<String>,
    /// The engine's startup log of this deployment: its measured numbers replace the predicted
    /// ones (cmd/from_log.rs); the GPU and release default to the log's.
    #[arg(long = "from-log")]
    pub from_log: Option<String>,
    /// The serving command, after `--` (it may start with VAR=value assignments).
    /// With neither a command nor --python, a Python snippet piped on stdin is read.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

pub fn run(args: Args) -> CmdResult {
    // the release the log states about itself selects the release modelled (cmdline/startup.rs)
    let ollama = is_engine(&args.command, EngineKind::Ollama);
    let engine = Command::parse(&args.command).ok().and_then(|c| c.engine);
    let log_release = match &args.from_log {
        // a log of another engine than the command's is refused with the calibration below
        Some(log) => log_release(log, ollama)?.filter(|r| Some(r.engine) == engine),
        None => None,
    };
    let cal = match &args.from_log {
        // Ollama logs give the release only: calibrate reads vLLM, SGLang and llama.cpp logs
        Some(_) if ollama => None,
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
            match gpu_spec::hardware(args.gpu.as_deref(), args.gpu_free.as_deref()) {
                // no --gpu and no GPU found: llama.cpp runs CPU-only, so plan for that
                Err(_)
                    if args.gpu.is_none()
                        && args.gpu_free.is_none()
                        && is_engine(&args.command, EngineKind::LlamaCpp) =>
                {
                    gpu_spec::cpu_only()
                }
                r => r?,
            }
        }
    };
    let mut release_notes = Vec::new();
    let release = match (&args.engine_version, &log_release) {
        (Some(v), Some(r)) => {
            if !same_release(v, &r.version) {
                release_notes.push(format!(
                    "--engine-version {v} is used, not the {} of the log's startup line `{}`",
                    r.version, r.line
                ));
            }
            Some(Release::given(v))
        }
        (Some(v), None) => Some(Release::given(v)),
        (None, Some(r)) => Some(Release {
            version: r.version.clone(),
            source: format!("the log's startup line `{}`", r.line),
            from_log: true,
        }),
        (None, None) => cal
            .as_ref()
            .and_then(|c| c.engine_version.clone())
            .map(|v| Release {
                version: v,
                source: "the log".into(),
                from_log: true,
            }),
    };
    // nothing after `--` and no --python: a snippet piped on stdin (the guides' `LLM(...)`,
    // `from_pretrained(...)` pasted as they are); a terminal there means nothing was given
    let python = match (&args.python, args.command.is_empty()) {
        (None, true) if std::io::stdin().is_terminal() => {
            return Err(CliError::input(
                "no serving command: give it after -- (vramfit check --gpu \"RTX 4090\" -- vllm serve MODEL), or a Python script with --python FILE or on stdin",
            ))
        }
        (None, true) => Some("-".to_string()),
        (p, _) => p.clone(),
    };
    let mut plan = match &python {
        Some(file) => {
            let src = crate::cmd::python::read_source(file)?;
            if src.trim().is_empty() && args.command.is_empty() {
                return Err(CliError::input(
                    "no serving command and nothing on stdin: give the command after --, or a Python script with --python FILE",
                ));
            }
            let version = release.as_ref().map(|r| r.version.as_str());
            crate::cmd::python::check_source(&src, &hw, version)?
        }
        None => check_release(&args.command, &hw, release.as_ref())?,
    };
    for g in hw
        .gpus
        .iter()
        .filter(|g| g.unified && g.name.starts_with("Apple"))
    {
        if !g.name.ends_with("GB") {
            release_notes.push(format!(
                "{}: planned with its largest memory configuration; give the Mac's, e.g. --gpu \"{} 32GB\"",
                g.name,
                g.name.trim_start_matches("Apple ")
            ));
            break;
        }
    }
    release_notes.append(&mut plan.notes);
    plan.notes = release_notes;
    let block = match &cal {
        Some(c) => Some(super::from_log::finish(&mut plan, c)?),
        None => super::from_log::stored_block(&plan),
    };
    let ram = crate::cmd::fit::host_ram(args.ram.as_deref())?;
    let idle = (args.gpu.is_some() && args.gpu_free.is_none() && cal.is_none())
        .then(|| super::idle_assumption(&hw))
        .flatten();
    margin_notes(&mut plan, idle);
    if let Some((bytes, from)) = ram {
        ram_note(&mut plan, bytes, from, args.ram.is_some());
    }
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

/// The margin policy shared with `fit` ([`vramfit_plan::headroom::policy_bytes`]), said per
/// GPU: what the launch leaves free against what vramfit's plans keep; and, when the GPUs come
/// from `--gpu` alone, that an idle headless GPU was assumed. Notes only: the verdict stays the
/// engine's.
fn margin_notes(plan: &mut MemoryPlan, assumed_idle: Option<String>) {
    use vramfit_model::units::fmt_bytes;
    let engine = plan.engine.clone();
    let mut short = Vec::new();
    let mut keep = 0;
    for (i, d) in plan.devices.iter().enumerate() {
        let m = vramfit_plan::headroom::policy_bytes(&engine, d.kv_cache_bytes.max(0) as u64);
        keep = keep.max(m);
        let left = d.free_bytes.saturating_sub(d.used_bytes);
        if plan.verdict == Verdict::Fits && left < m {
            short.push(format!("GPU {i} leaves {}", fmt_bytes(left)));
        }
    }
    if keep > 0 {
        let what = if short.is_empty() {
            "this launch keeps it".to_string()
        } else {
            format!(
                "below it: {} (tight: a desktop or the model's error can tip it over)",
                short.join(", ")
            )
        };
        plan.notes.push(format!(
            "margin: vramfit's plans keep {} free per GPU for {engine} (the measured error of the model, never below the engine's own margin); {what}",
            fmt_bytes(keep)
        ));
    }
    if let Some(line) = assumed_idle {
        plan.notes.push(line);
    }
}

/// Host RAM against what the launch keeps on the CPU (weights, KV cache, buffers, and 2 GiB
/// for the OS and the process); with `--ram` given, more than there is does not fit.
fn ram_note(plan: &mut MemoryPlan, ram: u64, from: &str, given: bool) {
    use vramfit_model::units::{fmt_bytes, GIB};
    let h = &plan.host;
    let host = h.weights_bytes + h.kv_cache_bytes + h.compute_bytes;
    if host == 0 {
        return;
    }
    let need = host + 2 * GIB;
    if need > ram {
        plan.notes.push(format!(
            "host RAM: the launch keeps {} on the CPU (+2 GiB for the OS), more than the {} there is ({from})",
            fmt_bytes(host),
            fmt_bytes(ram)
        ));
        if given {
            plan.verdict = Verdict::DoesNotFit;
        }
    }
}

fn is_engine(command: &[String], engine: EngineKind) -> bool {
    Command::parse(command).is_ok_and(|c| c.engine == Some(engine))
}

/// The release the log's startup line states (`vLLM API server version X`, llama.cpp's
/// `build: N (commit)`, Ollama's `Listening on ... (version X)`); for an Ollama command the
/// log must be an Ollama server log, as nothing else is read from it.
fn log_release(path: &str, ollama: bool) -> Result<Option<LogRelease>, CliError> {
    let text = super::calibrate::read_text(path)?;
    let r = startup::release_in_log(&text).map_err(|e| CliError::input(format!("{path}: {e}")))?;
    match r {
        Some(r) if ollama && r.engine != EngineKind::Ollama => Err(CliError::input(format!(
            "{path} is a {} log, the command runs ollama: give the Ollama server's log (journalctl -u ollama, ~/.ollama/logs/server.log)",
            r.engine.name()
        ))),
        None if ollama => Err(CliError::input(format!(
            "{path}: no `Listening on ... (version X)` line, so not an Ollama server log: give the log from the server's start (journalctl -u ollama, ~/.ollama/logs/server.log)"
        ))),
        // a source build (0.0.0) names no release: the command's or the current one is used
        Some(r) if startup::is_dev_build(&r) => Ok(None),
        r => Ok(r),
    }
}

/// The engine release to model and where it was read.
#[derive(Debug, Clone)]
pub struct Release {
    pub version: String,
    /// `--engine-version`, or the log's startup line
    pub source: String,
    pub from_log: bool,
}

impl Release {
    fn given(v: &str) -> Release {
        Release {
            version: v.to_string(),
            source: "--engine-version".into(),
            from_log: false,
        }
    }
}

/// Run the engine model for a pasted command (`version`: `--engine-version`).
pub fn check(
    command: &[String],
    hw: &Hardware,
    version: Option<&str>,
) -> Result<MemoryPlan, CliError> {
    check_release(command, hw, version.map(Release::given).as_ref())
}

/// [`check`] with the release and where it comes from: a release given (flag or log) wins over
/// one the pasted text names (image tag, pip line), and a disagreement is reported.
pub fn check_release(
    command: &[String],
    hw: &Hardware,
    release: Option<&Release>,
) -> Result<MemoryPlan, CliError> {
    let cmd = Command::parse(command).map_err(|e| CliError::input(e.to_string()))?;
    // a release named in the pasted text (image tag, pip line) when none is given
    if let (None, Some(e)) = (release, &cmd.hints.image_error) {
        return Err(CliError::input(e.clone()));
    }
    if let Some(e) = &cmd.hints.error {
        return Err(CliError::input(e.clone()));
    }
    let named = cmd.engine.and_then(|e| cmd.hints.version_for(e));
    let hint = named.filter(|_| release.is_none());
    let version = release
        .map(|r| r.version.clone())
        .or(hint.map(|h| h.version.clone()));
    let mut hw = hw.clone();
    let mut notes = hw.apply_unified(cmd.hints.wired_limit_mb);
    if let Some(h) = hint {
        notes.push(format!(
            "engine release {} read from {}",
            h.version, h.source
        ));
    }
    if let Some(r) = release.filter(|r| r.from_log) {
        notes.push(format!(
            "engine release {} read from {}",
            r.version, r.source
        ));
    }
    if let (Some(r), Some(h)) = (release, named.filter(|_| hint.is_none())) {
        if !same_release(&r.version, &h.version) {
            notes.push(if r.from_log {
                format!(
                    "conflict: the command's {} names {}, but the log ran {}: the log's release is modelled; if the command is what you will run, check it without --from-log",
                    h.source, h.version, r.version
                )
            } else {
                format!(
                    "--engine-version {} is used, not the {} of {}",
                    r.version, h.version, h.source
                )
            });
        }
    }
    if matches!(cmd.engine, Some(EngineKind::Vllm | EngineKind::Sglang))
        && hw.gpus.iter().any(vramfit_engine::hardware::is_apple)
    {
        return Err(CliError::input(format!(
            "{} has no Metal backend: on Apple Silicon ({}) run the model with llama.cpp or Ollama (vramfit checks those), or MLX",
            cmd.engine.map(|e| e.name()).unwrap_or_default(),
            hw.gpus[0].name
        )));
    }
    let mut plan = check_engine(&cmd, &hw, version.as_deref())?;
    notes.append(&mut plan.notes);
    plan.notes = notes;
    Ok(plan)
}

fn check_engine(
    cmd: &Command,
    hw: &Hardware,
    version: Option<&str>,
) -> Result<MemoryPlan, CliError> {
    match cmd.engine {
        Some(EngineKind::Vllm) => {
            let cfg = vllm::parse(&cmd, version).map_err(|e| CliError::input(e.to_string()))?;
            let r = load(&cfg.model)?;
            let mut plan = vllm::plan(&r.spec, r.weights.as_ref(), &cfg, hw);
            super::extras::add(&mut plan, &cmd, &r.spec);
            Ok(plan)
        }
        Some(EngineKind::LlamaCpp) => {
            let build = match version {
                Some(v) => Some(llamacpp::version::Build::parse(v).ok_or_else(|| {
                    CliError::input(format!("--engine-version '{v}' is not a llama.cpp build: write b5274 or 5274"))
                })?),
                None => None,
            };
            let mut cfg = llamacpp::parse(&cmd.program, &cmd.args, &cmd.env, build).map_err(|e| CliError::input(e.to_string()))?;
            let model = cfg.model_path.clone().or(cfg.hf_repo.clone()).unwrap_or_default();
            let r = load(&model)?;
            let weights = gguf_weights(&r)?;
            let mut plan = llamacpp::plan(&r.spec, &weights, &cfg, hw);
            // llama.cpp#21489: --fit keeps the projector's memory free on the first GPU
            let proj = super::extras::projector_gpu_bytes(&plan, &cmd, &r.spec);
            if proj > 0
                && llamacpp::autofit::enabled(&cfg)
                && (!cfg.build_given || cfg.build.has(llamacpp::version::change::MMPROJ_FIT))
            {
                let n = hw.gpus.len().max(1);
                if cfg.fit_target_mib.len() == 1 && n > 1 {
                    cfg.fit_target_mib = vec![cfg.fit_target_mib[0]; n];
                }
                if let Some(t) = cfg.fit_target_mib.first_mut() {
                    *t += proj.div_ceil(1 << 20);
                }
                plan = llamacpp::plan(&r.spec, &weights, &cfg, hw);
                plan.notes.push(format!(
                    "--fit keeps {} MiB more free on the first GPU for the vision projector (its weights and warm-up compute; llama.cpp#21489)",
                    proj.div_ceil(1 << 20)
                ));
            }
            super::extras::add(&mut plan, &cmd, &r.spec);
            Ok(plan)
        }
        Some(EngineKind::Ollama) => {
            let read = |p: &str| std::fs::read_to_string(p).map_err(|e| e.to_string());
            let cfg = ollama::parse(&cmd, version, &read).map_err(|e| CliError::input(e.to_string()))?;
            if let Some(m) = ollama::tags::cloud_message(&cfg.model) {
                return Err(CliError::input(m));
            }
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
            if let Some(v) = version {
                // SGLang releases are numbered as vLLM's are (PEP 440)
                vllm::version::Version::parse(v).map_err(|_| {
                    CliError::input(format!("--engine-version '{v}' is not an SGLang release: write e.g. 0.5.4"))
                })?;
            }
            let mut cfg = sglang::parse(&cmd).map_err(|e| CliError::input(e.to_string()))?;
            // the default --mem-fraction-static changed twice (sglang/fraction.rs)
            cfg.version = version.and_then(|v| vllm::version::Version::parse(v).ok());
            let r = load(&cfg.model)?;
            let mut plan = sglang::plan(&r.spec, r.weights.as_ref(), &cfg, hw);
            let flags = sglang::suggest::suggest(&r.spec, r.weights.as_ref(), &cfg, hw, &plan);
            if !flags.is_empty() {
                // the flags replace the prose hint the plan gives when nothing was searched
                plan.suggestions.retain(|s| !s.starts_with("raise --tp-size"));
            }
            plan.suggestions.splice(0..0, flags);
            super::extras::add(&mut plan, &cmd, &r.spec);
            if let Some(v) = version {
                plan.notes.push(format!("--engine-version {v}: SGLang's default --mem-fraction-static is taken from that release; the rest is modelled as of v0.5.x"));
            }
            Ok(plan)
        }
        Some(EngineKind::Transformers) => {
            let cfg = transformers::parse(&cmd).map_err(|e| CliError::input(e.to_string()))?;
            let r = load(&cfg.model)?;
            Ok(transformers::plan(&r.spec, &cfg, hw))
        }
        None if vramfit_engine::python::script_of(&cmd.program, &cmd.args).is_some() => {
            crate::cmd::python::check_command(&cmd, hw, version)
        }
        None => Err(CliError::input(format!(
            "'{}' is not a serving command vramfit knows: paste a vllm, llama-server/llama-cli, ollama, sglang or transformers command after --, or a Python script that builds the engine (`-- python serve.py`, `--python FILE`)",
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
