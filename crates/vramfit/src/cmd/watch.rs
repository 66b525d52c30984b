//! `vramfit watch`: live GPU memory with leak/spike/headroom/new-process alerts and an OOM
//! forecast, as a terminal dashboard, JSON lines, or a Prometheus exporter. `--record` writes
//! the samples as a trace; `--replay` feeds a trace through the same pipeline.

use crate::error::{CliError, CmdResult};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;
use vramfit_watch::collect::{self, WithEngines};
use vramfit_watch::detect::DetectConfig;
use vramfit_watch::engine_metrics::EngineProbe;
use vramfit_watch::export::prometheus;
use vramfit_watch::pipeline::Pipeline;
use vramfit_watch::sampler::{NvmlSampler, ReplaySampler, Sampler};
use vramfit_watch::trace::TraceWriter;

#[derive(clap::Args)]
pub struct Args {
    /// Print one JSON object per sample interval instead of the dashboard.
    #[arg(long)]
    pub json: bool,
    /// Serve Prometheus metrics at ADDR (e.g. 0.0.0.0:9400) and run without a terminal.
    #[arg(long, value_name = "ADDR")]
    pub prometheus: Option<String>,
    /// Write every sample to FILE as JSON lines (one line per GPU per sample).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Read samples from a recorded trace instead of NVML.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Replay speed: simulated seconds per second, or `max` for as fast as possible.
    #[arg(long, value_name = "X", default_value = "1")]
    pub speed: String,
    /// Seconds between samples: 1 by default, 0.1 at the fastest (10 Hz).
    #[arg(long, value_name = "SECS", default_value = "1")]
    pub interval: String,
    /// A serving engine's HTTP address, `[GPU,...=]http://HOST:PORT` (vLLM, llama-server,
    /// SGLang); without GPUs it covers every GPU. Repeat for several engines.
    #[arg(long = "engine", value_name = "[GPUS=]URL")]
    pub engines: Vec<String>,
    /// Alert when free memory falls under this: a share (`3%`) or a size (`1GiB`).
    #[arg(long, value_name = "PCT|SIZE", default_value = "3%")]
    pub headroom: String,
    /// Seconds a steady climb must last before it is called a leak.
    #[arg(long, value_name = "SECS", default_value = "30")]
    pub leak_after: String,
    /// Stop after this many seconds of samples (on the sampler's clock).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<String>,
    /// With --prometheus and --replay: keep serving the last sample this many seconds after the
    /// trace ends.
    #[arg(long, value_name = "SECS", default_value = "0")]
    pub linger: String,
}

fn seconds(flag: &str, v: &str, min: f64, max: f64) -> Result<f64, CliError> {
    let x: f64 = v
        .trim()
        .trim_end_matches('s')
        .parse()
        .map_err(|_| CliError::input(format!("{flag} '{v}' is not a number of seconds")))?;
    if !(x >= min && x <= max) {
        return Err(CliError::input(format!(
            "{flag} '{v}' must be between {min} and {max} seconds"
        )));
    }
    Ok(x)
}

fn detect_config(a: &Args) -> Result<DetectConfig, CliError> {
    let mut cfg = DetectConfig::default();
    let h = a.headroom.trim();
    if let Some(pct) = h.strip_suffix('%') {
        let p: f64 = pct.trim().parse().map_err(|_| {
            CliError::input(format!(
                "--headroom '{h}' is not understood: write a share like 3% or a size like 1GiB"
            ))
        })?;
        if !(0.0..=50.0).contains(&p) {
            return Err(CliError::input(format!(
                "--headroom '{h}' must be between 0% and 50%"
            )));
        }
        cfg.headroom_fraction = p / 100.0;
    } else {
        cfg.headroom_bytes = Some(
            vramfit_model::units::parse_size(h)
                .map_err(|e| CliError::input(format!("--headroom: {e}")))?,
        );
    }
    cfg.leak_min_span_s = seconds("--leak-after", &a.leak_after, 10.0, 900.0)?;
    Ok(cfg)
}

fn sampler(a: &Args) -> Result<(Box<dyn Sampler + Send>, String), CliError> {
    let probes = a
        .engines
        .iter()
        .map(|e| EngineProbe::parse(e))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::input(e.to_string()))?;
    if let Some(path) = &a.replay {
        let speed = match a.speed.trim() {
            "max" => None,
            s => Some(
                s.parse::<f64>()
                    .ok()
                    .filter(|x| *x > 0.0 && x.is_finite())
                    .ok_or_else(|| {
                        CliError::input(format!(
                            "--speed '{s}' must be a number above 0 (e.g. 10) or 'max'"
                        ))
                    })?,
            ),
        };
        let replay =
            ReplaySampler::open(path, speed).map_err(|e| CliError::input(e.to_string()))?;
        // The file name only: the screen should not depend on where the trace lies.
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        let label = format!("replay {name}");
        return Ok((Box::new(WithEngines::new(replay, probes)), label));
    }
    let interval = seconds("--interval", &a.interval, 0.1, 3600.0)?;
    let nvml = NvmlSampler::new(Duration::from_secs_f64(interval))
        .map_err(|e| CliError::input(e.to_string()))?;
    Ok((Box::new(WithEngines::new(nvml, probes)), "live".to_string()))
}

pub fn run(a: Args) -> CmdResult {
    let cfg = detect_config(&a)?;
    let duration = a
        .duration
        .as_deref()
        .map(|d| seconds("--duration", d, 0.0, 1e9))
        .transpose()?;
    let linger = seconds("--linger", &a.linger, 0.0, 86400.0)?;
    if a.prometheus.is_none() && !a.json && !std::io::stdout().is_terminal() {
        return Err(CliError::input(
            "standard output is not a terminal: add --json for JSON lines or --prometheus ADDR for an exporter",
        ));
    }
    if let (Some(r), Some(p)) = (&a.record, &a.replay) {
        let same = match (std::fs::canonicalize(r), std::fs::canonicalize(p)) {
            (Ok(x), Ok(y)) => x == y,
            _ => r == p,
        };
        if same {
            return Err(CliError::input(format!(
                "--record {} would overwrite the trace being replayed; record to another file",
                r.display()
            )));
        }
    }
    // The source first: without NVML (or with a bad trace) no empty recording is left behind.
    let (sampler, label) = sampler(&a)?;
    let mut pipeline = Pipeline::new(cfg);
    if let Some(path) = &a.record {
        pipeline.recorder =
            Some(TraceWriter::create(path).map_err(|e| CliError::input(e.to_string()))?);
    }
    if let Some(addr) = &a.prometheus {
        let exporter = prometheus::serve(addr).map_err(|e| CliError::input(e.to_string()))?;
        eprintln!(
            "vramfit: serving metrics at http://{}/metrics",
            exporter.addr
        );
        pipeline.exporter = Some(exporter.page.clone());
    }
    let rx = collect::spawn(sampler);
    if a.prometheus.is_none() && !a.json {
        vramfit_watch::tui::terminal::run(&label, rx, &mut pipeline)
            .map_err(|e| CliError::input(e.to_string()))?;
        return Ok(0);
    }
    let stdout = std::io::stdout();
    let mut first_t = None;
    for event in rx {
        let Some(tick) = event.map_err(|e| CliError::input(e.to_string()))? else {
            break;
        };
        let report = pipeline
            .process(&tick)
            .map_err(|e| CliError::input(e.to_string()))?;
        if a.json {
            let mut out = stdout.lock();
            let line = serde_json::to_string(&report).expect("a report always serializes");
            if let Err(e) = writeln!(out, "{line}").and_then(|_| out.flush()) {
                // the reader went away (`| head`) ends quietly; a full disk is an error
                crate::output::record_write_error(&e);
                return Ok(0);
            }
        }
        let t0 = *first_t.get_or_insert(tick.t);
        if duration.is_some_and(|d| tick.t - t0 >= d) {
            break;
        }
    }
    if a.prometheus.is_some() && linger > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(linger));
    }
    Ok(0)
}
