//! vLLM and SGLang say themselves how much context their KV cache holds: launch with the
//! user's length, read every rank's lines, and relaunch once at the binding rank's boundary.
//! Before launching, the GPUs of the TP × PP group are read (NVML, or `--gpu`/`--gpu-free`):
//! vLLM refuses to start when any of them has less free memory than its utilization asks for,
//! so probe says so without a launch.

use super::{last_line, launch_once, Args, Attempt, ProbeReport};
use crate::error::CliError;
use crate::gpu_spec;
use crate::live::argv::{self, Launch};
use crate::live::group::{self, Group};
use crate::live::proc::free_port;
use std::time::Duration;
use vramfit_engine::cmdline::EngineKind;
use vramfit_model::units::fmt_bytes;

/// vLLM's default `--gpu-memory-utilization` (vllm/config/cache.py).
const VLLM_DEFAULT_UTIL: f64 = 0.9;

/// The GPUs as `--gpu`/`--gpu-free` or NVML describe them; None when neither knows any.
fn known_gpus(args: &Args) -> Result<Option<vramfit_engine::Hardware>, CliError> {
    if args.gpu.is_none() && args.gpu_free.is_some() {
        return Err(CliError::input(
            "--gpu-free needs --gpu to say which GPUs it describes, e.g. --gpu \"8x H200\"",
        ));
    }
    match gpu_spec::hardware(args.gpu.as_deref(), args.gpu_free.as_deref()) {
        Ok(h) => Ok(Some(h)),
        Err(_) if args.gpu.is_none() => Ok(None),
        Err(e) => Err(e),
    }
}

/// vLLM's start-up check (vllm/v1/worker/gpu_worker.py init_device, 0.10+): every worker's
/// GPU must have `utilization × total` free, or it raises "Free memory on device ... is less
/// than desired GPU memory utilization". A note naming the binding GPU when it would refuse.
fn vllm_precheck(l: &Launch, g: &Group) -> Result<Option<String>, CliError> {
    let util = match l.get(&["--gpu-memory-utilization"]) {
        None => VLLM_DEFAULT_UTIL,
        Some(v) => match v.parse::<f64>() {
            Ok(u) if u > 0.0 && u <= 1.0 => u,
            _ => {
                return Err(CliError::input(format!(
                    "--gpu-memory-utilization '{v}' is not a fraction: give a number in (0, 1], e.g. 0.9"
                )))
            }
        },
    };
    let Some(b) = g.binding_gpu else {
        return Ok(None);
    };
    let gpu = g
        .gpus
        .iter()
        .find(|x| x.index == b)
        .expect("binding is in the group");
    let want = (util * gpu.total_bytes as f64) as u64;
    if gpu.free_bytes >= want {
        return Ok(None);
    }
    let fit = (gpu.free_bytes as f64 / gpu.total_bytes as f64 * 100.0).floor() / 100.0;
    Ok(Some(format!(
        "GPU {b} ({}) has {} free but --gpu-memory-utilization {util} asks {} of its {}: vLLM refuses to start; use --gpu-memory-utilization {fit:.2} or free that GPU",
        gpu.name,
        fmt_bytes(gpu.free_bytes),
        fmt_bytes(want),
        fmt_bytes(gpu.total_bytes)
    )))
}

/// The model's own maximum length (`max_position_embeddings` and its aliases), when the model
/// resolves without the network (a local path, the Hugging Face cache, the embedded catalog),
/// and the engine would hold the context to it: vLLM refuses a longer `--max-model-len` unless
/// VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (vllm/config/model.py _get_and_verify_max_len), SGLang a
/// longer `--context-length` unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1
/// (sglang/srt/configs/model_config.py).
fn model_max_len(l: &Launch, sglang: bool) -> Option<u64> {
    let allow = if sglang {
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
    } else {
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
    };
    let set = |v: &str| matches!(v.trim(), "1" | "true" | "True");
    if l.env.iter().any(|(k, v)| k == allow && set(v))
        || std::env::var(allow).is_ok_and(|v| set(&v))
    {
        return None;
    }
    let name = l.get(&["--model-path", "--model"]).or_else(|| {
        // `vllm serve MODEL`
        let i = l.words.iter().position(|w| w == "serve")?;
        l.words.get(i + 1).filter(|w| !w.starts_with('-')).cloned()
    })?;
    let mut opts = vramfit_model::resolve::ResolveOptions::from_env();
    opts.hub.offline = true;
    opts.read_headers = false;
    let r = vramfit_model::resolve::resolve(&name, &opts).ok()?;
    (r.spec.n_ctx_train > 0).then_some(r.spec.n_ctx_train)
}

pub(super) fn probe_by_log(args: &Args, mut launch: Launch) -> Result<ProbeReport, CliError> {
    let sglang = launch.engine == Some(EngineKind::Sglang);
    let engine = if sglang { "sglang" } else { "vllm" };
    let hw = known_gpus(args)?;
    let grp = group::group(&launch, hw.as_ref()).map_err(CliError::input)?;
    let flags = argv::ctx_flags(launch.engine);
    let first: u64 = launch.get(flags).and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut notes = Vec::new();
    if !sglang {
        if let Some(n) = vllm_precheck(&launch, &grp)? {
            notes.push(n);
            return Ok(ProbeReport {
                engine: engine.into(),
                limit_bytes: None,
                predicted_context: first,
                verified_context: None,
                verified_command: None,
                launches: 0,
                attempts: vec![],
                group: Some(grp),
                notes,
                model_max_len: None,
            });
        }
    }
    let port = free_port().map_err(CliError::input)?;
    launch.set(argv::HOST, "127.0.0.1");
    launch.set(argv::PORT, &port.to_string());
    let timeout = Duration::from_secs(args.timeout);
    let ready = |log: &str| {
        log.contains("Application startup complete")
            || log.contains("Uvicorn running on")
            || log.contains("The server is fired up and ready to roll")
    };
    let model_max = model_max_len(&launch, sglang);
    let mut attempts = Vec::new();
    let mut verified = None;
    let mut c = first;
    for _ in 0..2 {
        if c > 0 {
            launch.set(flags, &c.to_string());
        }
        let (log, up, secs, why) = launch_once(&launch, timeout, &ready)?;
        // every rank's lines; the engine runs with the smallest KV any of them holds
        let ranks = group::readings(&log, sglang);
        let (capacity, estimate) = group::capacity(&ranks);
        let bind = group::binding(&ranks).map(|r| r.rank.clone());
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
                .or_else(|| why.clone().map(|w| format!("{w}: {}", last_line(&log)))),
            seconds: secs,
            binding_rank: if ranks.len() > 1 { bind } else { None },
            ranks,
        });
        // vLLM pages by 16 tokens (vllm/config/cache.py block_size); no longer than the model
        let boundary = capacity
            .or(estimate)
            .map(|n| if sglang { n } else { n / 16 * 16 })
            .map(|n| model_max.map_or(n, |m| n.min(m)));
        if up {
            verified = Some(c);
        }
        match boundary {
            Some(b) if b != c && b > 0 && !(up && b <= c) => c = b,
            _ => break,
        }
    }
    if grp.ranks.world() > 1 && attempts.iter().all(|a| a.ranks.is_empty()) {
        notes.push(format!(
            "the log named no rank's KV memory for the {} GPUs of this command",
            grp.ranks.world()
        ));
    }
    let verified_command = verified.map(|v| {
        let mut l = launch.clone();
        if v > 0 {
            l.set(flags, &v.to_string());
        }
        l.display()
    });
    Ok(ProbeReport {
        engine: engine.into(),
        limit_bytes: None,
        predicted_context: first,
        verified_context: verified,
        verified_command,
        launches: attempts.len(),
        attempts,
        group: Some(grp),
        notes,
        model_max_len: model_max,
    })
}
