//! llama.cpp: the limit is the memory its buffers may take (model + KV + compute + output, read
//! from the startup log). CPU-only (`--ram SIZE`, or no GPU): one budget, the host's. With GPUs:
//! every GPU the command uses (the visible ones, in CUDA's order: llama.cpp's `CUDA0` is the
//! first of `CUDA_VISIBLE_DEVICES`) against its own free memory, each corrected by what that
//! GPU measured; the one with the least headroom binds.

use super::{last_line, launch_once, Args, Attempt, ProbeReport};
use crate::cmd::check;
use crate::error::CliError;
use crate::gpu_spec;
use crate::live::argv::{self, Launch};
use crate::live::group::{self, Group, GroupGpu};
use crate::live::llamalog::{self, Buffers};
use crate::live::proc::{free_port, Echo, Engine};
use std::time::Duration;
use vramfit_engine::{llamacpp, Hardware};
use vramfit_model::units::{fmt_bytes, parse_size};

/// The machine as probe judges it, and the NVML index of each GPU it keeps (the visible ones).
fn hardware(args: &Args, l: &Launch) -> Result<(Hardware, Vec<usize>), CliError> {
    if let Some(r) = &args.ram {
        let ram = parse_size(r)
            .map_err(|e| CliError::input(format!("--ram {r}: {e}; write e.g. 600MiB or 8GiB")))?;
        return Ok((
            Hardware {
                gpus: vec![],
                host_ram_bytes: Some(ram),
            },
            vec![],
        ));
    }
    let mut hw = match gpu_spec::hardware(args.gpu.as_deref(), args.gpu_free.as_deref()) {
        Err(_) if args.gpu.is_none() => gpu_spec::cpu_only(),
        r => r?,
    };
    // the GPUs the engine sees, in its order
    let mut index: Vec<usize> = (0..hw.gpus.len()).collect();
    if let Some(vis) = group::visible(l).map_err(CliError::input)? {
        let n = hw.gpus.len();
        if let Some(bad) = vis.iter().find(|i| **i >= n) {
            return Err(CliError::input(format!(
                "CUDA_VISIBLE_DEVICES names GPU {bad}, but there are {n}: fix the list, or describe the machine with --gpu"
            )));
        }
        hw.gpus = vis.iter().map(|&i| hw.gpus[i].clone()).collect();
        index = vis;
    }
    Ok((hw, index))
}

/// `llama-server --version` → `b5274`: `version: 5274 (d541533a)` (older builds) or
/// `version: 0.5.0-dev (build 6990, commit 0c1e570)` (recent). None when it prints no real
/// number (a checkout without history prints build 0 or 1), or says nothing within 10 s; the
/// process group is stopped either way.
fn own_build(l: &Launch) -> Option<String> {
    let argv = [l.words.first()?.clone(), "--version".to_string()];
    let mut e = Engine::spawn(&argv, &l.env, Echo::Quiet).ok()?;
    let t0 = std::time::Instant::now();
    while e.exited().is_none() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = e.log.clone();
    e.stop();
    parse_version(&log.text())
}

fn parse_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains("version:"))?;
    let rest = line.split("version:").nth(1)?;
    let from = rest.find("(build ").map(|i| i + 7).unwrap_or(0);
    let n: String = rest[from..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let n: u64 = n.parse().ok()?;
    (n > 1).then(|| format!("b{n}"))
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

    /// Predicted buffer bytes at context `c`, per limited device (the host when CPU-only).
    fn predicted(&self, hw: &Hardware, c: u64) -> Vec<u64> {
        let l = llamacpp::layout(&self.spec, &self.weights, &self.cfg, hw, c);
        if hw.gpus.is_empty() {
            vec![llamacpp::cpu::host_total(&self.spec, &l)]
        } else {
            (0..hw.gpus.len()).map(|d| l.used(d)).collect()
        }
    }

    /// The largest context (multiple of 256) whose prediction plus each device's correction
    /// fits each device's limit.
    fn boundary(&self, hw: &Hardware, limits: &[u64], corr: &[i64]) -> u64 {
        let top = self.spec.n_ctx_train.max(256);
        let ok = |c: u64| {
            self.predicted(hw, c)
                .iter()
                .zip(limits)
                .zip(corr)
                .all(|((p, lim), k)| *p as i64 + k <= *lim as i64)
        };
        vramfit_engine::search::largest_fitting(256, top / 256 * 256, 256, ok).unwrap_or(0)
    }
}

/// What each limited device measured (None until the context exists).
fn measured(b: &Buffers, gpus: usize) -> Option<Vec<u64>> {
    if !b.complete() {
        return None;
    }
    Some(if gpus == 0 {
        vec![b.total()]
    } else {
        (0..gpus).map(|i| b.on_gpu(i)).collect()
    })
}

/// The device with the least headroom under `used`.
fn tightest(used: &[u64], limits: &[u64]) -> usize {
    (0..used.len())
        .min_by_key(|&i| limits[i] as i64 - used[i] as i64)
        .unwrap_or(0)
}

pub(super) fn probe_llamacpp(args: &Args, mut launch: Launch) -> Result<ProbeReport, CliError> {
    let (hw, index) = hardware(args, &launch)?;
    let limits: Vec<u64> = if hw.gpus.is_empty() {
        vec![hw.host_ram_bytes.ok_or_else(|| {
            CliError::input("no GPU and the host RAM is unknown: give the budget with --ram SIZE")
        })?]
    } else {
        hw.gpus.iter().map(|g| g.free_bytes).collect()
    };
    // the build the binary says it is, when not given (a release prints its build number)
    let own = match &args.engine_version {
        Some(_) => None,
        None => own_build(&launch),
    };
    let m = LlamaModel::load(&launch, args.engine_version.as_deref().or(own.as_deref()))?;
    let port = free_port().map_err(CliError::input)?;
    launch.set(argv::HOST, "127.0.0.1");
    launch.set(argv::PORT, &port.to_string());
    // the buffer sizes are printed at verbosity 4 only (recent builds: common/log.h)
    launch.set(&["-lv", "--verbosity", "--log-verbosity"], "4");
    let timeout = Duration::from_secs(args.timeout);
    let zero = vec![0i64; limits.len()];
    let predicted_context = m.boundary(&hw, &limits, &zero);
    if predicted_context == 0 {
        return Err(CliError::input(format!(
            "not even 256 tokens of context fit in {} with this model: raise the limit",
            limits
                .iter()
                .map(|l| fmt_bytes(*l))
                .collect::<Vec<_>>()
                .join(" + ")
        )));
    }
    let many = limits.len() > 1;
    let name = |i: usize| format!("GPU {} (llama.cpp device {i})", index[i]);
    let mut attempts = Vec::new();
    let mut c = predicted_context;
    let mut verified = None;
    for round in 0..2 {
        launch.set(argv::ctx_flags(launch.engine), &c.to_string());
        let (log, up, secs, why) = launch_once(&launch, timeout, &llamalog::server_ready)?;
        let b = llamalog::read(&log);
        let meas = measured(&b, hw.gpus.len());
        let predicted = m.predicted(&hw, c);
        let within = meas
            .as_ref()
            .is_some_and(|v| v.iter().zip(&limits).all(|(x, l)| x <= l));
        let bind = tightest(meas.as_ref().unwrap_or(&predicted), &limits);
        attempts.push(Attempt {
            command: launch.display(),
            context: c,
            started: up,
            within_limit: up && within,
            predicted_bytes: Some(predicted[bind]),
            measured_bytes: meas.as_ref().map(|v| v[bind]),
            log_says: llamalog::failure(&log)
                .or_else(|| why.clone().map(|w| format!("{w}: {}", last_line(&log)))),
            measured: Some(b),
            seconds: secs,
            ranks: vec![],
            binding_rank: many.then(|| name(bind)),
        });
        let Some(meas) = meas else {
            // it never got to its context: nothing to correct with
            break;
        };
        let corr: Vec<i64> = meas
            .iter()
            .zip(&predicted)
            .map(|(x, p)| *x as i64 - *p as i64)
            .collect();
        let next = m.boundary(&hw, &limits, &corr);
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
    let bind = tightest(&m.predicted(&hw, c), &limits);
    let grp = (!hw.gpus.is_empty()).then(|| Group {
        ranks: group::ranks(&launch).expect("llama.cpp has no rank flags"),
        gpus: hw
            .gpus
            .iter()
            .enumerate()
            .map(|(i, g)| GroupGpu {
                index: index[i],
                name: g.name.clone(),
                total_bytes: g.total_bytes,
                free_bytes: g.free_bytes,
            })
            .collect(),
        binding_gpu: Some(index[bind]),
    });
    Ok(ProbeReport {
        engine: "llama.cpp".into(),
        limit_bytes: Some(limits[bind]),
        predicted_context,
        verified_context: verified,
        verified_command,
        launches: attempts.len(),
        attempts,
        group: grp,
        notes: vec![],
        model_max_len: None,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_lines() {
        use super::parse_version as p;
        assert_eq!(
            p("version: 5274 (d541533a)\nbuilt with cc"),
            Some("b5274".into())
        );
        assert_eq!(
            p("version: 0.5.0-dev (build 6990, commit 0c1e570)"),
            Some("b6990".into())
        );
        assert_eq!(p("version: 0.5.0-dev (build 1, commit 0c1e570)"), None);
        assert_eq!(p("usage: llama-server [options]"), None);
    }
}
