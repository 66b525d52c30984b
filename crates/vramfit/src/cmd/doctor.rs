//! `vramfit doctor [--json] [--gpu SPEC] [FILE|-] [-- <command>]`: read a crash log (a file, or
//! stdin when no file or `-`) and print the cause, a paragraph with the numbers, and the fixes
//! in order. With the serving command after `--`, each fix is applied to it and re-checked
//! with `check`'s engine model (on `--gpu`, else the GPU size the log printed) before printing.
//!
//! Only the last 8 MiB of a log are read (the crash is at its end); a note on stderr says when
//! the head was skipped. Exit 0 whenever a diagnosis was made (not_oom and unknown included),
//! 2 when the input cannot be read or holds no text.

use std::io::{self, IsTerminal, Write};

use vramfit_doctor::{
    diagnose_with, read_log, read_log_file, render, EchoedSettings, FixEngine, InputError,
    MAX_LOG_BYTES, MAX_STREAM_BYTES,
};
use vramfit_engine::vllm::kv::{KvLayout, LayoutInputs};
use vramfit_model::resolve::{resolve, ResolveOptions};

use crate::cmd::doctor_recheck;
use crate::error::{CliError, CmdResult};

#[derive(clap::Args)]
pub struct Args {
    /// Print JSON (keys: cause, confidence, engine, evidence, fixes[{flag, value, why}], summary,
    /// settings, events).
    #[arg(long)]
    pub json: bool,
    /// The log file; `-` or nothing reads stdin.
    #[arg(value_name = "FILE")]
    pub file: Option<String>,
    /// GPUs to re-check the fixes on (`check`'s syntax: "RTX 4090", "2x A100-80G", 24GiB);
    /// default: the GPU size the log printed, else NVML.
    #[arg(long)]
    pub gpu: Option<String>,
    /// Free memory per GPU at launch, as for `check`.
    #[arg(long = "gpu-free")]
    pub gpu_free: Option<String>,
    /// Engine release for the re-check (`check --engine-version`).
    #[arg(long = "engine-version")]
    pub engine_version: Option<String>,
    /// The serving command that crashed, after `--`: every fix is applied to it and re-checked.
    #[arg(last = true, allow_hyphen_values = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

pub fn run(args: Args) -> CmdResult {
    let log = match args.file.as_deref() {
        None | Some("-") => {
            let stdin = io::stdin();
            if stdin.is_terminal() {
                return Err(CliError::input(
                    "no log given: pass a log file (`vramfit doctor server.log`) or pipe one in (`... | vramfit doctor -`)",
                ));
            }
            read_log(stdin.lock(), "stdin")
        }
        Some(path) => {
            let meta = std::fs::metadata(path).map_err(|e| {
                CliError::input(format!("cannot read log '{path}': {e}; pass a readable log file or `-` for stdin"))
            })?;
            if meta.is_dir() {
                return Err(CliError::input(format!(
                    "'{path}' is a directory: pass the log file inside it, or `-` for stdin"
                )));
            }
            read_log_file(std::path::Path::new(path))
        }
    }
    .map_err(|e: InputError| CliError::input(e.to_string()))?;
    if log.stopped {
        eprintln!(
            "vramfit: stopped reading after {} MiB of input that did not end; diagnosing its last {} MiB",
            MAX_STREAM_BYTES >> 20,
            MAX_LOG_BYTES >> 20
        );
    } else if log.dropped > 0 {
        eprintln!(
            "vramfit: read the last {} MiB of the log ({} bytes before it skipped)",
            MAX_LOG_BYTES >> 20,
            log.dropped
        );
    }
    let mut d = diagnose_with(&log.text, &EngineModels);
    let mut notes = Vec::new();
    if !args.command.is_empty() {
        use vramfit_doctor::Cause;
        // `check` models GPU memory: a host-RAM cause or a lookalike has no fix it can confirm
        let outside = match d.cause {
            Cause::HostMemory => Some("the cause is host RAM, and check models GPU memory"),
            Cause::NotOom => Some("the failure is not a lack of memory"),
            _ => None,
        };
        match outside {
            Some(why) => {
                for f in d.fixes.iter_mut().filter(|f| !f.flag.is_empty()) {
                    f.checked = Some(format!("not re-checked: {why}"));
                }
                notes.push(format!("fixes not re-checked: {why}"));
            }
            // an explicit --gpu that cannot be read is bad input (exit 2); no GPU known at all
            // (none given, none in the log, no NVML) leaves the diagnosis standing, unchecked
            None => {
                match doctor_recheck::hardware(args.gpu.as_deref(), args.gpu_free.as_deref(), &d) {
                    Ok(hw) => {
                        notes = doctor_recheck::recheck(
                            &mut d,
                            &args.command,
                            &hw,
                            args.engine_version.as_deref(),
                        )
                    }
                    Err(e) if args.gpu.is_some() => return Err(e),
                    Err(e) => {
                        for f in d.fixes.iter_mut().filter(|f| !f.flag.is_empty()) {
                            f.checked = Some("not re-checked: no GPU known (pass --gpu)".into());
                        }
                        notes.push(format!(
                            "fixes not re-checked: {}",
                            e.to_string().trim_start_matches("vramfit: ")
                        ));
                    }
                }
            }
        }
    } else if args.gpu.is_some() {
        notes.push("fixes not re-checked: paste the serving command after `--` (vramfit doctor LOG --gpu ... -- vllm serve ...)".to_string());
    }
    let out = if args.json {
        let mut v = render::json(&d);
        if !notes.is_empty() {
            v["recheck"] = serde_json::json!(notes);
        }
        let mut text = serde_json::to_string_pretty(&v)
            .map_err(|e| CliError::input(format!("cannot render JSON: {e}")))?;
        text.push('\n');
        text
    } else {
        let mut text = render::human(&d);
        for n in &notes {
            text.push_str(&format!("\nre-check: {n}\n"));
        }
        text
    };
    // a closed pipe (`| head`) is not an error worth a panic
    let mut stdout = io::stdout().lock();
    if let Err(e) = stdout
        .write_all(out.as_bytes())
        .and_then(|_| stdout.flush())
    {
        if e.kind() != io::ErrorKind::BrokenPipe {
            return Err(CliError::input(format!("cannot write the report: {e}")));
        }
    }
    Ok(0)
}

/// The engine memory models behind the doctor's fixes. A diagnosis reads only what is at hand:
/// the model the log names is resolved from local files, the HF cache or the embedded catalog,
/// never over the network.
struct EngineModels;

impl FixEngine for EngineModels {
    fn vllm_max_model_len(&self, s: &EchoedSettings, kv_available: u64) -> Option<u64> {
        let model = s.model.as_deref()?;
        let upper = s.max_model_len?;
        let mut opts = ResolveOptions::from_env();
        opts.hub.offline = true;
        opts.read_headers = false;
        let spec = resolve(model, &opts).ok()?.spec;
        let n_layers = spec.layers.len() as u64;
        // the first pipeline stage: vLLM splits layers evenly across stages
        let stage = n_layers.div_ceil(s.pipeline_parallel_size.unwrap_or(1).max(1));
        let layout = KvLayout::new(
            &spec,
            0..stage.min(n_layers),
            LayoutInputs {
                tp: s.tensor_parallel_size.unwrap_or(1).max(1),
                kv_cache_dtype: s.kv_cache_dtype.as_deref().unwrap_or("auto"),
                model_dtype_bytes: spec.dtype.bytes(),
                block_size: None,
                max_num_batched_tokens: s.max_num_batched_tokens.unwrap_or(2048),
                disable_hybrid: false,
                compute_capability: None,
                mla_cache: Default::default(),
                ssm_dtype_bytes: vramfit_engine::vllm::kv::ssm_state_bytes(
                    &spec,
                    None,
                    vramfit_engine::vllm::Version::CURRENT,
                    spec.dtype.bytes(),
                ),
            },
        );
        let n = layout.estimate_max_model_len(i64::try_from(kv_available).ok()?, upper);
        (n > 0).then_some(n)
    }

    fn llamacpp_max_n_ctx(&self, _: &EchoedSettings, _: u64) -> Option<u64> {
        None
    }

    fn llamacpp_max_gpu_layers(&self, _: &EchoedSettings, _: u64) -> Option<u64> {
        None
    }
}
