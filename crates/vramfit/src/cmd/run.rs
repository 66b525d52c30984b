//! `vramfit run [--max-restarts N] [--gpu SPEC] -- <command>`: check the command, launch it with
//! its output passed through, forward SIGINT/SIGTERM/SIGHUP to the engine's process group, and
//! when it dies of OOM read its log, let doctor's computed fix change the command and launch
//! again, at most N times, each change logged with its reason. Exits with the final engine's
//! exit code (2 for a command vramfit cannot launch).

use crate::cmd::check;
use crate::error::{CliError, CmdResult};
use crate::gpu_spec;
use crate::live::argv::Launch;
use crate::live::proc::{exit_code, Echo, Engine};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use vramfit_doctor::{Cause, Fix};

#[derive(clap::Args)]
pub struct Args {
    /// Relaunches after an OOM exit (0-10).
    #[arg(long = "max-restarts", default_value_t = 2)]
    pub max_restarts: u32,
    /// GPUs for the first check, as for `check` (default: NVML, or CPU-only for llama.cpp).
    #[arg(long)]
    pub gpu: Option<String>,
    /// Skip the `check` before the first launch.
    #[arg(long = "no-check")]
    pub no_check: bool,
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub command: Vec<String>,
}

/// Aliases a fix's flag may appear under in the command.
fn aliases(flag: &str) -> Vec<&str> {
    match flag {
        "-c" | "--ctx-size" => vec!["-c", "--ctx-size"],
        "-ngl" | "--n-gpu-layers" | "--gpu-layers" => {
            vec!["-ngl", "--n-gpu-layers", "--gpu-layers"]
        }
        "-np" | "--parallel" => vec!["-np", "--parallel"],
        "-ub" | "--ubatch-size" => vec!["-ub", "--ubatch-size"],
        "-b" | "--batch-size" => vec!["-b", "--batch-size"],
        f => vec![f],
    }
}

/// Apply one fix to the command; false when it is an action a person must take.
pub fn apply(l: &mut Launch, fix: &Fix) -> bool {
    let f = fix.flag.as_str();
    if f.is_empty() {
        return false;
    }
    if f.starts_with('-') {
        if fix.value.is_empty() {
            l.switch(f);
        } else {
            l.set(&aliases(f), &fix.value);
        }
        return true;
    }
    if f.chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    {
        l.env.retain(|(k, _)| k != f);
        l.env.push((f.to_string(), fix.value.clone()));
        return true;
    }
    false
}

fn say(msg: &str) {
    eprintln!("vramfit run: {msg}");
}

pub fn run(args: Args) -> CmdResult {
    if args.max_restarts > 10 {
        return Err(CliError::input(format!(
            "--max-restarts {}: give 0 to 10",
            args.max_restarts
        )));
    }
    let mut launch = Launch::parse(&args.command).map_err(CliError::input)?;
    if launch.engine.is_none() {
        return Err(CliError::input(format!(
            "'{}' is not a serving command vramfit knows: paste a vllm, llama-server, sglang or ollama command after --",
            launch.words.first().cloned().unwrap_or_default()
        )));
    }
    crate::live::proc::executable(launch.words.first().map(String::as_str).unwrap_or(""))
        .map_err(CliError::input)?;
    if !args.no_check {
        let hw = match gpu_spec::hardware(args.gpu.as_deref(), None) {
            Err(_) if args.gpu.is_none() => Ok(gpu_spec::cpu_only()),
            r => r,
        };
        match hw.and_then(|hw| check::check(&launch.argv(), &hw, None)) {
            Ok(p) => say(&format!(
                "check: {} ({}){}",
                if p.verdict == vramfit_engine::Verdict::Fits {
                    "fits"
                } else {
                    "does not fit"
                },
                p.problems
                    .first()
                    .cloned()
                    .unwrap_or_else(|| format!("max context {}", p.max_model_len)),
                if p.verdict == vramfit_engine::Verdict::Fits {
                    ""
                } else {
                    "; launching anyway, fixes follow an OOM"
                }
            )),
            Err(e) => say(&format!("check skipped: {e}")),
        }
    }
    let pending: Vec<(i32, Arc<AtomicBool>)> = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP]
        .into_iter()
        .map(|s| {
            let flag = Arc::new(AtomicBool::new(false));
            let _ = signal_hook::flag::register(s, flag.clone());
            (s, flag)
        })
        .collect();
    let forwarded = AtomicBool::new(false);
    let next_signal = || {
        for (s, f) in &pending {
            if f.swap(false, Ordering::SeqCst) {
                forwarded.store(true, Ordering::SeqCst);
                return Some(*s);
            }
        }
        None
    };
    let mut restarts = 0;
    loop {
        say(&format!("launching: {}", launch.display()));
        let mut e = Engine::spawn(&launch.words, &launch.env, Echo::PassThrough)
            .map_err(CliError::input)?;
        let status = e.wait_forwarding(&next_signal);
        let log = e.log.text();
        let code = status.as_ref().map(exit_code).unwrap_or(1);
        e.stop();
        if code == 0 || forwarded.load(Ordering::SeqCst) {
            return Ok(code);
        }
        let d = vramfit_doctor::diagnose(&log);
        let oom = !matches!(d.cause, Cause::NotOom | Cause::Unknown);
        if !oom {
            say(&format!(
                "the engine exited with code {code}, not from lack of memory ({}); not relaunching",
                d.summary
            ));
            return Ok(code);
        }
        if restarts >= args.max_restarts {
            say(&format!(
                "the engine ran out of memory again ({}); {} relaunch(es) used, giving up",
                d.summary, restarts
            ));
            return Ok(code);
        }
        let before = launch.clone();
        let applied: Vec<&Fix> = d
            .fixes
            .iter()
            .filter(|f| apply(&mut launch, f))
            .take(1)
            .collect();
        if applied.is_empty() || launch == before {
            say(&format!(
                "out of memory ({}), but doctor's fix is not a flag to change: {}",
                d.summary,
                d.fixes
                    .first()
                    .map(|f| f.why.clone())
                    .unwrap_or_else(|| "none".into())
            ));
            return Ok(code);
        }
        restarts += 1;
        for f in applied {
            say(&format!(
                "out of memory ({}); relaunch {restarts}/{}: {} {} — {}",
                d.summary, args.max_restarts, f.flag, f.value, f.why
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixes_edit_the_command() {
        let argv: Vec<String> = "llama-server -m m.gguf --ctx-size 32768 -ngl 99"
            .split(' ')
            .map(String::from)
            .collect();
        let mut l = Launch::parse(&argv).unwrap();
        assert!(apply(&mut l, &Fix::flag("-c", 21504, "KV fits")));
        assert!(apply(&mut l, &Fix::flag("-ngl", 20, "layers fit")));
        assert!(apply(
            &mut l,
            &Fix::flag(
                "PYTORCH_CUDA_ALLOC_CONF",
                "expandable_segments:True",
                "fragmentation"
            )
        ));
        assert!(apply(
            &mut l,
            &Fix::flag("--enforce-eager", "", "no graphs")
        ));
        assert!(!apply(&mut l, &Fix::action("free the other process")));
        assert_eq!(
            l.argv().join(" "),
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True llama-server -m m.gguf --ctx-size 21504 -ngl 20 --enforce-eager"
        );
    }
}
