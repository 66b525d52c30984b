//! `vramfit`: know before you load.
//!
//! A thin binary over the vramfit library crates: it parses the command line, calls the pure
//! core, and renders tables or JSON. Every command takes `--json` and exits non-zero with a
//! one-line error on bad input (2), or 1 where the answer itself is "does not fit".

mod cmd;
mod error;
mod gpu_spec;
mod live;
mod output;
mod render;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "vramfit",
    version,
    about = "Know before you load: GPU memory for LLM serving, predicted, planned, diagnosed and watched",
    long_about = None,
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Will this exact serving command fit? Paste it after `--`.
    Check(cmd::check::Args),
    /// The best configurations that fit a GPU, ranked, as ready-to-run commands.
    Fit(cmd::fit::Args),
    /// Quant × GPU matrix of the largest context (or concurrency) that fits.
    Table(cmd::table::Args),
    /// What is inside this model: attention layout, parameters, KV bytes per token, weight bytes.
    Inspect(cmd::inspect::Args),
    /// List the embedded catalogs of models and GPUs.
    Catalog(cmd::catalog::Args),
    /// Why did it crash? Reads a log (file or stdin) and names the cause and the fix.
    Doctor(cmd::doctor::Args),
    /// Analyze a PyTorch memory snapshot (torch.cuda.memory._snapshot() pickle).
    Snapshot(cmd::snapshot::Args),
    /// Watch GPU memory live, forecast OOM, export Prometheus metrics.
    Watch(cmd::watch::Args),
    /// Learn from your own engine: store what a vLLM, SGLang or llama.cpp startup log measured.
    Calibrate(cmd::calibrate::Args),
    /// Launch the engine at the predicted boundary, measure, correct, relaunch once; print the verified command.
    Probe(cmd::probe::Args),
    /// Peak load against an OpenAI-compatible server on this machine, with memory and KV sampling.
    Stress(cmd::stress::Args),
    /// Check, launch and watch an engine; on an OOM exit apply doctor's fix and relaunch.
    Run(cmd::run::Args),
}

fn main() -> ExitCode {
    output::install_panic_hook();
    let run = std::panic::catch_unwind(run);
    output::finish(run)
}

fn run() -> u8 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            if !e.use_stderr() {
                // --help, --version: clap's own text on stdout
                let _ = e.print();
                return 0;
            }
            output::error_line(&output::clap_one_line(&e.render().to_string()));
            return 2;
        }
    };
    let result = match cli.command {
        Command::Check(a) => cmd::check::run(a),
        Command::Fit(a) => {
            cmd::calibrate::install_stored();
            cmd::fit::run(a)
        }
        Command::Table(a) => {
            cmd::calibrate::install_stored();
            cmd::table::run(a)
        }
        Command::Calibrate(a) => cmd::calibrate::run(a),
        Command::Inspect(a) => cmd::inspect::run(a),
        Command::Catalog(a) => cmd::catalog::run(a),
        Command::Doctor(a) => cmd::doctor::run(a),
        Command::Snapshot(a) => cmd::snapshot::run(a),
        Command::Watch(a) => cmd::watch::run(a),
        Command::Probe(a) => cmd::probe::run(a),
        Command::Stress(a) => cmd::stress::run(a),
        Command::Run(a) => cmd::run::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            output::error_line(&e.message);
            e.code
        }
    }
}
