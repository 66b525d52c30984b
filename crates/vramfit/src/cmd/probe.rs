//! `vramfit probe [--ram SIZE | --gpu SPEC] [--json] -- <command>`: launch the engine at the
//! predicted boundary, read what it allocated, correct the prediction by what it measured,
//! relaunch at most once, and print the verified command. Every launch is stopped (process
//! group, SIGTERM then SIGKILL) before the next one or before returning.
//!
//! llama.cpp: the limit is the memory its buffers may take (model + KV + compute + output, read
//! from the startup log): `--ram SIZE` for a CPU-only build, the GPU's free memory otherwise.
//! vLLM / SGLang: the engine's own verdict in its log (vLLM `GPU KV cache size: N tokens`, the
//! estimated maximum model length on failure; SGLang `max_total_num_tokens`).

use crate::cmd::check;
use crate::error::{CliError, CmdResult};
use crate::gpu_spec;
use crate::live::argv::{self, Launch};
use crate::live::llamalog::{self, Buffers};
use crate::live::proc::{free_port, Echo, Engine};
use serde::Serialize;
use std::time::{Duration, Instant};
use vramfit_engine::cmdline::EngineKind;
use vramfit_engine::{llamacpp, Hardware};
use vramfit_model::units::{fmt_bytes, parse_size};

#[derive(clap::Args)]
pub struct Args {
    /// CPU-only: the memory llama.cpp's buffers may take (e.g. 600MiB); plans for no GPU.
    #[arg(long)]
    pub ram: Option<String>,
    /// GPUs, as for `check` (default: NVML, or CPU-only when there is none).
    #[arg(long)]
    pub gpu: Option<String>,
    /// Engine release as for `check` (llama.cpp `b11312`).
    #[arg(long = "engine-version")]
    pub engine_version: Option<String>,
    /// Seconds one launch may take to become ready (1-3600).
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    #[arg(long)]
    pub json: bool,
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub command: Vec<String>,
}

/// One launch and what it showed.
#[derive(Debug, Serialize)]
pub struct Attempt {
    pub command: String,
    pub context: u64,
    /// became ready (llama.cpp: and its buffers fit the limit)
    pub started: bool,
    pub within_limit: bool,
    pub predicted_bytes: Option<u64>,
    pub measured: Option<Buffers>,
    pub measured_bytes: Option<u64>,
    /// what the engine's log said (failure line, KV tokens)
    pub log_says: Option<String>,
    pub seconds: f64,
}

#[derive(Debug, Serialize)]
pub struct ProbeReport {
    pub engine: String,
    pub limit_bytes: Option<u64>,
    pub predicted_context: u64,
    pub verified_context: Option<u64>,
    pub verified_command: Option<String>,
    pub launches: usize,
    pub attempts: Vec<Attempt>,
}

pub fn run(args: Args) -> CmdResult {
    if !(1..=3600).contains(&args.timeout) {
        return Err(CliError::input(format!(
            "--timeout {}: give the seconds one launch may take, 1 to 3600",
            args.timeout
        )));
    }
    let launch = Launch::parse(&args.command).map_err(CliError::input)?;
    let report = match launch.engine {
        Some(EngineKind::LlamaCpp) => probe_llamacpp(&args, launch)?,
        Some(EngineKind::Vllm) | Some(EngineKind::Sglang) => probe_by_log(&args, launch)?,
        _ => {
            return Err(CliError::input(format!(
                "'{}' is not an engine probe can launch: paste a llama-server, vllm serve or sglang command after --",
                launch.words.first().cloned().unwrap_or_default()
            )))
        }
    };
    if args.json {
        crate::render::emit(
            &(serde_json::to_string_pretty(&report).map_err(|e| CliError::input(e.to_string()))?
                + "\n"),
        );
    } else {
        let mut s = String::new();
        for (i, a) in report.attempts.iter().enumerate() {
            s += &format!(
                "launch {}: context {} → {}{} ({:.0}s)\n",
                i + 1,
                a.context,
                if a.started && a.within_limit {
                    "started"
                } else if a.started {
                    "started, over the limit"
                } else {
                    "did not start"
                },
                match (a.measured_bytes, a.predicted_bytes) {
                    (Some(m), Some(p)) =>
                        format!(", measured {} (predicted {})", fmt_bytes(m), fmt_bytes(p)),
                    (Some(m), None) => format!(", measured {}", fmt_bytes(m)),
                    _ => a
                        .log_says
                        .clone()
                        .map(|l| format!(": {l}"))
                        .unwrap_or_default(),
                },
                a.seconds
            );
        }
        match &report.verified_command {
            Some(c) => s += &format!("verified in {} launch(es): {c}\n", report.launches),
            None => s += "no context could be verified; see the launches above\n",
        }
        crate::render::emit(&s);
    }
    Ok(if report.verified_context.is_some() {
        0
    } else {
        1
    })
}

fn hardware(args: &Args) -> Result<Hardware, CliError> {
    if let Some(r) = &args.ram {
        let ram = parse_size(r)
            .map_err(|e| CliError::input(format!("--ram {r}: {e}; write e.g. 600MiB or 8GiB")))?;
        return Ok(Hardware {
            gpus: vec![],
            host_ram_bytes: Some(ram),
        });
    }
    match gpu_spec::hardware(args.gpu.as_deref(), None) {
        Err(_) if args.gpu.is_none() => Ok(gpu_spec::cpu_only()),
        r => r,
    }
}

/// Launch once; wait for ready, exit or timeout; stop it; return its log and whether it came up.
fn launch_once(
    l: &Launch,
    timeout: Duration,
    ready: &dyn Fn(&str) -> bool,
) -> Result<(String, bool, f64), CliError> {
    let mut e = Engine::spawn(&l.words, &l.env, Echo::Quiet).map_err(CliError::input)?;
    let t0 = Instant::now();
    let mut up = false;
    while t0.elapsed() < timeout {
        if ready(&e.log.text()) {
            up = true;
            break;
        }
        if e.exited().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let secs = t0.elapsed().as_secs_f64();
    let log = e.log.clone();
    e.stop();
    Ok((log.text(), up, secs))
}

/// The llama.cpp model pieces probe predicts with.
struct LlamaModel {
    spec: vramfit_model::ModelSpec,
    weights: vramfit_model::WeightSet,
    cfg: llamacpp::LlamaCppConfig,
}

impl LlamaModel {
    fn load(l: &Launch, version: Option<&str>) -> Result<LlamaModel, CliError> {
        let cmd = vramfit_engine::cmdline::Command::parse(&l.argv())
            .map_err(|e| CliError::input(e.to_string()))?;
        let build = match version {
            Some(v) => Some(llamacpp::version::Build::parse(v).ok_or_else(|| {
                CliError::input(format!(
                    "--engine-version '{v}' is not a llama.cpp build: write b5274 or 5274"
                ))
            })?),
            None => None,
        };
        let cfg = llamacpp::parse(&cmd.program, &cmd.args, &cmd.env, build)
            .map_err(|e| CliError::input(e.to_string()))?;
        let model = cfg
            .model_path
            .clone()
            .or(cfg.hf_repo.clone())
            .unwrap_or_default();
        let r = check::load(&model)?;
        let weights = check::gguf_weights(&r)?;
        Ok(LlamaModel {
            spec: r.spec,
            weights,
            cfg,
        })
    }

    /// Predicted buffer bytes at context `c` (everything on the limited device).
    fn predicted(&self, hw: &Hardware, c: u64) -> u64 {
        let l = llamacpp::layout(&self.spec, &self.weights, &self.cfg, hw, c);
        if hw.gpus.is_empty() {
            llamacpp::cpu::host_total(&self.spec, &l)
        } else {
            l.used(0)
        }
    }

    /// The largest context (multiple of 256) whose prediction plus `correction` fits `limit`.
    fn boundary(&self, hw: &Hardware, limit: u64, correction: i64) -> u64 {
        let top = self.spec.n_ctx_train.max(256);
        let ok = |c: u64| (self.predicted(hw, c) as i64 + correction) <= limit as i64;
        vramfit_engine::search::largest_fitting(256, top / 256 * 256, 256, ok).unwrap_or(0)
    }
}

fn probe_llamacpp(args: &Args, mut launch: Launch) -> Result<ProbeReport, CliError> {
    let hw = hardware(args)?;
    let limit = if hw.gpus.is_empty() {
        hw.host_ram_bytes.ok_or_else(|| {
            CliError::input("no GPU and the host RAM is unknown: give the budget with --ram SIZE")
        })?
    } else {
        hw.gpus[0].free_bytes
    };
    let m = LlamaModel::load(&launch, args.engine_version.as_deref())?;
    let port = free_port().map_err(CliError::input)?;
    launch.set(argv::HOST, "127.0.0.1");
    launch.set(argv::PORT, &port.to_string());
    // the buffer sizes are printed at verbosity 4 only (recent builds: common/log.h)
    launch.set(&["-lv", "--verbosity", "--log-verbosity"], "4");
    let timeout = Duration::from_secs(args.timeout);
    let predicted_context = m.boundary(&hw, limit, 0);
    if predicted_context == 0 {
        return Err(CliError::input(format!(
            "not even 256 tokens of context fit in {} with this model: raise the limit",
            fmt_bytes(limit)
        )));
    }
    let mut attempts = Vec::new();
    let mut c = predicted_context;
    let mut verified = None;
    for round in 0..2 {
        launch.set(argv::ctx_flags(launch.engine), &c.to_string());
        let (log, up, secs) = launch_once(&launch, timeout, &llamalog::server_ready)?;
        let b = llamalog::read(&log);
        let measured = b.complete().then(|| b.total());
        let within = measured.is_some_and(|x| x <= limit);
        let predicted = m.predicted(&hw, c);
        attempts.push(Attempt {
            command: launch.display(),
            context: c,
            started: up,
            within_limit: up && within,
            predicted_bytes: Some(predicted),
            measured_bytes: measured,
            log_says: llamalog::failure(&log).or_else(|| (!up).then(|| last_line(&log))),
            measured: Some(b),
            seconds: secs,
        });
        let Some(meas) = measured else {
            // it never got to its context: nothing to correct with
            break;
        };
        let correction = meas as i64 - predicted as i64;
        let next = m.boundary(&hw, limit, correction);
        if up && within {
            verified = Some(c);
        }
        if next == c || round == 1 || next == 0 {
            break;
        }
        if up && within && next < c {
            break;
        }
        c = next;
    }
    let verified_command = verified.map(|v| {
        let mut l = launch.clone();
        l.set(argv::ctx_flags(l.engine), &v.to_string());
        l.display()
    });
    Ok(ProbeReport {
        engine: "llama.cpp".into(),
        limit_bytes: Some(limit),
        predicted_context,
        verified_context: verified,
        verified_command,
        launches: attempts.len(),
        attempts,
    })
}

fn last_line(log: &str) -> String {
    log.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)")
        .trim()
        .chars()
        .take(300)
        .collect()
}

/// A number after `key` on some line of the log (the last such line).
fn number_after(log: &str, key: &str) -> Option<u64> {
    log.lines().rev().find_map(|l| {
        let i = l.find(key)?;
        let digits: String = l[i + key.len()..]
            .trim_start_matches([' ', '=', ':'])
            .chars()
            .filter(|c| *c != ',')
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.parse().ok()
    })
}

/// vLLM and SGLang say themselves how much context their KV cache holds: launch with the
/// user's length, read it, and relaunch once at that boundary.
fn probe_by_log(args: &Args, mut launch: Launch) -> Result<ProbeReport, CliError> {
    let sglang = launch.engine == Some(EngineKind::Sglang);
    let port = free_port().map_err(CliError::input)?;
    launch.set(argv::HOST, "127.0.0.1");
    launch.set(argv::PORT, &port.to_string());
    let flags = argv::ctx_flags(launch.engine);
    let timeout = Duration::from_secs(args.timeout);
    let ready = |log: &str| {
        log.contains("Application startup complete")
            || log.contains("Uvicorn running on")
            || log.contains("The server is fired up and ready to roll")
    };
    let mut attempts = Vec::new();
    let mut verified = None;
    let first: u64 = launch.get(flags).and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut c = first;
    for _ in 0..2 {
        if c > 0 {
            launch.set(flags, &c.to_string());
        }
        let (log, up, secs) = launch_once(&launch, timeout, &ready)?;
        // the tokens the KV cache holds: vLLM `GPU KV cache size: 1,234 tokens`, SGLang
        // `max_total_num_tokens=1234`; on failure vLLM's estimate
        let capacity = if sglang {
            number_after(&log, "max_total_num_tokens")
        } else {
            number_after(&log, "GPU KV cache size")
        };
        let estimate = number_after(&log, "estimated maximum model length is");
        attempts.push(Attempt {
            command: launch.display(),
            context: c,
            started: up,
            within_limit: up,
            predicted_bytes: None,
            measured: None,
            measured_bytes: None,
            log_says: capacity
                .map(|n| format!("KV cache holds {n} tokens"))
                .or(estimate.map(|n| format!("estimated maximum model length {n}")))
                .or_else(|| (!up).then(|| last_line(&log))),
            seconds: secs,
        });
        // vLLM pages by 16 tokens (vllm/config/cache.py block_size)
        let boundary = capacity
            .or(estimate)
            .map(|n| if sglang { n } else { n / 16 * 16 });
        if up {
            verified = Some(c);
        }
        match boundary {
            Some(b) if b != c && b > 0 && !(up && b <= c) => c = b,
            _ => break,
        }
    }
    let verified_command = verified.map(|v| {
        let mut l = launch.clone();
        if v > 0 {
            l.set(flags, &v.to_string());
        }
        l.display()
    });
    Ok(ProbeReport {
        engine: if sglang { "sglang" } else { "vllm" }.into(),
        limit_bytes: None,
        predicted_context: first,
        verified_context: verified,
        verified_command,
        launches: attempts.len(),
        attempts,
    })
}
