//! `vramfit probe [--ram SIZE | --gpu SPEC] [--json] -- <command>`: launch the engine at the
//! predicted boundary, read what it allocated, correct the prediction by what it measured,
//! relaunch at most once, and print the verified command. Every launch is stopped (process
//! group, SIGTERM then SIGKILL) before the next one or before returning.
//!
//! llama.cpp: the limit is the memory its buffers may take (model + KV + compute + output, read
//! from the startup log): `--ram SIZE` for a CPU-only build, the GPU's free memory otherwise.
//! vLLM / SGLang: the engine's own verdict in its log (vLLM `GPU KV cache size: N tokens`, the
//! estimated maximum model length on failure; SGLang `max_total_num_tokens`), read per rank of
//! the TP × PP group, the binding rank deciding (by_log.rs, live/group.rs).
//! With GPUs, llama.cpp is judged on every GPU it uses, each against its own free memory.

mod by_log;
mod llama;

use crate::error::{CliError, CmdResult};
use crate::live::argv::Launch;
use crate::live::group::{Group, RankReading};
use crate::live::llamalog::Buffers;
use crate::live::proc::{Echo, Engine};
use serde::Serialize;
use std::time::{Duration, Instant};
use vramfit_engine::cmdline::EngineKind;
use vramfit_model::units::fmt_bytes;

#[derive(clap::Args)]
pub struct Args {
    /// CPU-only: the memory llama.cpp's buffers may take (e.g. 600MiB); plans for no GPU.
    #[arg(long)]
    pub ram: Option<String>,
    /// GPUs, as for `check` (default: NVML, or CPU-only when there is none).
    #[arg(long)]
    pub gpu: Option<String>,
    /// Free memory per GPU with --gpu (`70GiB,60GiB`), as nvidia-smi shows it.
    #[arg(long = "gpu-free")]
    pub gpu_free: Option<String>,
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
    /// vLLM/SGLang: what each worker (rank) said about its memory
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankReading>,
    /// the rank with the least memory, when there are several
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binding_rank: Option<String>,
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
    /// the TP × PP × DP ranks and the GPUs they use (vLLM/SGLang; llama.cpp with GPUs)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<Group>,
    /// what stopped the probe before a launch, or what the logs lacked
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// vLLM / SGLang: the model's own maximum length, which the relaunch does not pass, when
    /// the model resolves offline
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_max_len: Option<u64>,
}

pub fn run(args: Args) -> CmdResult {
    if !(1..=3600).contains(&args.timeout) {
        return Err(CliError::input(format!(
            "--timeout {}: give the seconds one launch may take, 1 to 3600",
            args.timeout
        )));
    }
    let launch = Launch::parse(&args.command).map_err(CliError::input)?;
    if launch.engine.is_some() {
        crate::live::proc::executable(launch.words.first().map(String::as_str).unwrap_or(""))
            .map_err(CliError::input)?;
    }
    let report = match launch.engine {
        Some(EngineKind::LlamaCpp) => llama::probe_llamacpp(&args, launch)?,
        Some(EngineKind::Vllm) | Some(EngineKind::Sglang) => by_log::probe_by_log(&args, launch)?,
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
        if let Some(g) = report.group.as_ref().filter(|g| !g.gpus.is_empty()) {
            let gpus: Vec<String> = g
                .gpus
                .iter()
                .map(|x| {
                    format!(
                        "{} ({} free{})",
                        x.index,
                        fmt_bytes(x.free_bytes),
                        if Some(x.index) == g.binding_gpu && g.gpus.len() > 1 {
                            ", binding"
                        } else {
                            ""
                        }
                    )
                })
                .collect();
            s += &format!(
                "GPUs of TP {} × PP {} × DP {}: {}\n",
                g.ranks.tp,
                g.ranks.pp,
                g.ranks.dp,
                gpus.join(", ")
            );
        }
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
            if let Some(b) = &a.binding_rank {
                match a.ranks.len() {
                    0 => s += &format!("  binding: {b}\n"),
                    n => s += &format!("  binding rank: {b} (of {n} that spoke)\n"),
                }
            }
        }
        for n in &report.notes {
            s += &format!("{n}\n");
        }
        match &report.verified_command {
            Some(c) => s += &format!("verified in {} launch(es): {c}\n", report.launches),
            None if report.launches == 0 => s += "nothing launched: see above\n",
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

/// Launch once; wait for ready, exit or timeout; stop it (its whole process group); return its
/// log, whether it came up, the seconds it took, and why it stopped when it did not come up.
pub(super) fn launch_once(
    l: &Launch,
    timeout: Duration,
    ready: &dyn Fn(&str) -> bool,
) -> Result<(String, bool, f64, Option<String>), CliError> {
    let mut e = Engine::spawn(&l.words, &l.env, Echo::Quiet).map_err(CliError::input)?;
    let t0 = Instant::now();
    let mut up = false;
    let mut exited = None;
    while t0.elapsed() < timeout {
        if ready(&e.log.text()) {
            up = true;
            break;
        }
        if let Some(s) = e.exited() {
            exited = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let secs = t0.elapsed().as_secs_f64();
    let log = e.log.clone();
    e.stop();
    let why = match (up, exited) {
        (true, _) => None,
        (false, Some(s)) => Some(format!(
            "exited with code {} before it was ready",
            crate::live::proc::exit_code(&s)
        )),
        (false, None) => Some(format!(
            "not ready within {}s (--timeout); stopped it",
            timeout.as_secs()
        )),
    };
    Ok((log.text(), up, secs, why))
}

pub(super) fn last_line(log: &str) -> String {
    log.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)")
        .trim()
        .chars()
        .take(300)
        .collect()
}
