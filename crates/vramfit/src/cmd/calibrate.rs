//! `vramfit calibrate LOG [--out FILE] [--gpu SPEC] [--model ID] [--json]`: read a vLLM, SGLang
//! or llama.cpp startup log, and store what the engine measured (weights, non-KV memory, the KV
//! pool, buffers) keyed by model × engine version × GPU; `check`, `fit` and `table` then apply it
//! to that deployment. Also the log side of `check --from-log LOG`.

use crate::error::{CliError, CmdResult};
use crate::gpu_spec;
use crate::render;
use std::io::Read;
use std::path::{Path, PathBuf};
use vramfit_engine::calibrate::{self, store, Calibration, MAX_LOG_BYTES};

#[derive(clap::Args)]
pub struct Args {
    /// The engine's startup log (file, or - for stdin).
    pub log: String,
    /// Where to store it (default: VRAMFIT_CALIBRATION, else ~/.config/vramfit/calibrations.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The GPU the log was written on, when the log does not say (vLLM prints only its memory).
    #[arg(long)]
    pub gpu: Option<String>,
    /// The model's repo id, when the log names a local path that is not the repo's name.
    #[arg(long)]
    pub model: Option<String>,
    /// The engine release, when the log does not print it.
    #[arg(long = "engine-version")]
    pub engine_version: Option<String>,
    /// Read and show, but do not store.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// The command the log was written by, after `--`: fills the settings the log does not print
    /// (tensor parallel, utilization, batch limits, model).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// Fill what the log did not print from the command that wrote it.
pub fn fill_from_command(cal: &mut Calibration, command: &[String]) -> Result<(), CliError> {
    use vramfit_engine::cmdline::{Command, EngineKind};
    if command.is_empty() {
        return Ok(());
    }
    let cmd = Command::parse(command).map_err(|e| CliError::input(e.to_string()))?;
    let s = &mut cal.settings;
    match cmd.engine {
        Some(EngineKind::Vllm) if cal.engine == "vllm" => {
            let c = vramfit_engine::vllm::parse(&cmd, cal.engine_version.as_deref())
                .map_err(|e| CliError::input(e.to_string()))?;
            s.tensor_parallel_size.get_or_insert(c.tensor_parallel_size);
            s.pipeline_parallel_size
                .get_or_insert(c.pipeline_parallel_size);
            s.gpu_memory_utilization
                .get_or_insert(c.gpu_memory_utilization);
            if let Some(v) = c.max_num_batched_tokens {
                s.max_num_batched_tokens.get_or_insert(v);
            }
            if let Some(v) = c.max_num_seqs {
                s.max_num_seqs.get_or_insert(v);
            }
            if let vramfit_engine::vllm::MaxModelLen::Tokens(v) = c.max_model_len {
                s.max_model_len.get_or_insert(v);
            }
            s.enforce_eager.get_or_insert(c.enforce_eager);
            s.kv_cache_dtype.get_or_insert(c.kv_cache_dtype.clone());
            if s.cuda_graphs_charged.is_none() {
                s.cuda_graphs_charged = c.estimate_cudagraphs;
            }
            if cal.model.is_empty() {
                cal.model = c.model;
            }
        }
        Some(EngineKind::Sglang) if cal.engine == "sglang" => {
            let c =
                vramfit_engine::sglang::parse(&cmd).map_err(|e| CliError::input(e.to_string()))?;
            s.tensor_parallel_size.get_or_insert(c.tp_size);
            s.pipeline_parallel_size.get_or_insert(c.pp_size);
            if let Some(v) = c.mem_fraction_static {
                s.mem_fraction_static.get_or_insert(v);
            }
            if cal.model.is_empty() {
                cal.model = c.model;
            }
        }
        _ => {
            return Err(CliError::input(format!(
                "the command after -- is not a {} command: give the command that wrote the log",
                cal.engine
            )))
        }
    }
    Ok(())
}

/// Read a log file (at most [`MAX_LOG_BYTES`]; `-` is stdin).
pub fn read_text(path: &str) -> Result<String, CliError> {
    let mut buf = Vec::new();
    let res = if path == "-" {
        std::io::stdin()
            .take(MAX_LOG_BYTES as u64)
            .read_to_end(&mut buf)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(MAX_LOG_BYTES as u64).read_to_end(&mut buf))
    };
    res.map_err(|e| CliError::input(format!("cannot read log '{path}': {e}")))?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Parse a log into a calibration, with the user's corrections, and settle which GPU it is of.
pub fn from_log(
    path: &str,
    gpu: Option<&str>,
    model: Option<&str>,
    version: Option<&str>,
) -> Result<Calibration, CliError> {
    let text = read_text(path)?;
    let name = Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string());
    let mut cal = calibrate::read_log(&text, &name).map_err(|e| CliError::input(e.to_string()))?;
    if let Some(m) = model {
        cal.model = m.to_string();
    }
    if let Some(v) = version {
        cal.engine_version = Some(v.to_string());
    }
    if let Some(spec) = gpu {
        let hw = gpu_spec::hardware(Some(spec), None)?;
        let g = &hw.gpus[0];
        if let Some(t) = cal.gpu_total_bytes {
            let rel = (t as f64 - g.total_bytes as f64).abs() / g.total_bytes as f64;
            if rel > 0.03 {
                return Err(CliError::input(format!(
                    "the log says the GPU has {:.2} GiB, but --gpu '{spec}' has {:.2} GiB: name the GPU the log was written on",
                    t as f64 / (1u64 << 30) as f64,
                    g.total_bytes as f64 / (1u64 << 30) as f64
                )));
            }
        } else {
            cal.gpu_total_bytes = Some(g.total_bytes);
        }
        if !g.name.ends_with(" GPU") {
            cal.gpu_name = Some(g.name.clone());
        }
    }
    if cal.gpu_name.is_none() && cal.gpu_total_bytes.is_none() {
        return Err(CliError::input(format!(
            "{name}: the log does not say which GPU it ran on: add --gpu NAME (e.g. --gpu \"RTX 4090\" or --gpu 23.56GiB)"
        )));
    }
    Ok(cal)
}

pub fn run(args: Args) -> CmdResult {
    let mut cal = from_log(
        &args.log,
        args.gpu.as_deref(),
        args.model.as_deref(),
        args.engine_version.as_deref(),
    )?;
    fill_from_command(&mut cal, &args.command)?;
    if cal.model.is_empty() {
        return Err(CliError::input(format!(
            "{}: the log names no model (its start is missing): add --model ORG/NAME or the command after --",
            cal.source
        )));
    }
    let path = match (&args.out, args.dry_run) {
        (_, true) => None,
        (Some(p), false) => Some(p.clone()),
        (None, false) => Some(store::default_path().ok_or_else(|| {
            CliError::input(
                "no place to store calibrations (no HOME, or VRAMFIT_CALIBRATION=off): name a file with --out",
            )
        })?),
    };
    if let Some(p) = &path {
        store::save(p, cal.clone()).map_err(CliError::input)?;
    }
    let key = store::key(&cal);
    let text = if args.json {
        let v = serde_json::json!({
            "key": key,
            "stored_at": path.as_ref().map(|p| p.display().to_string()),
            "calibration": cal,
        });
        serde_json::to_string_pretty(&v).map_err(|e| CliError::input(e.to_string()))? + "\n"
    } else {
        report(&cal, &key, path.as_deref())
    };
    render::emit(&text);
    Ok(0)
}

fn gib(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
}

fn report(c: &Calibration, key: &str, path: Option<&Path>) -> String {
    let m = &c.measured;
    let mut out = format!("calibration: {key}\n");
    let mut line = |what: &str, v: Option<String>| {
        if let Some(v) = v {
            out.push_str(&format!("  {what:<28} {v}\n"));
        }
    };
    line("weights (per worker)", m.weights_bytes.map(gib));
    line("activation peak", m.activation_bytes.map(gib));
    line("non-torch", m.non_torch_bytes.map(gib));
    line("consumed (weights+non-torch)", m.consumed_bytes.map(gib));
    line(
        "CUDA graphs, estimate",
        m.cuda_graph_estimate_bytes.map(gib),
    );
    line("CUDA graphs, captured", m.cuda_graph_bytes.map(gib));
    line(
        "available KV cache",
        m.available_kv_bytes.map(|b| gib(b.max(0) as u64)),
    );
    line("GPU blocks", m.num_gpu_blocks.map(|b| b.to_string()));
    line(
        "KV cache tokens",
        m.kv_tokens
            .or(m.max_total_num_tokens)
            .map(|b| b.to_string()),
    );
    line(
        "max concurrency",
        m.max_concurrency.map(|c| format!("{c:.2}x")),
    );
    line(
        "free after weights (SGLang)",
        m.avail_after_load_bytes.map(gib),
    );
    for (i, b) in m.device_model_bytes.iter().enumerate() {
        line(&format!("device {i} model buffer"), Some(gib(*b)));
    }
    for (i, b) in m.device_compute_bytes.iter().enumerate() {
        line(&format!("device {i} compute buffer"), Some(gib(*b)));
    }
    line("outcome", Some(format!("{:?}", c.outcome).to_lowercase()));
    for w in &c.warnings {
        out.push_str(&format!("  warning: {w}\n"));
    }
    match path {
        Some(p) => out.push_str(&format!("stored in {}\n", p.display())),
        None => out.push_str("not stored (--dry-run)\n"),
    }
    out
}

/// Install the stored calibrations for this process (check, fit, table). A broken store is a
/// warning, not a failure: the predictions do not need it.
pub fn install_stored() {
    let Some(path) = store::default_path() else {
        return;
    };
    match store::load(&path) {
        Ok(s) => calibrate::registry::install(s.calibrations),
        Err(e) => eprintln!("vramfit: warning: {e}"),
    }
}
