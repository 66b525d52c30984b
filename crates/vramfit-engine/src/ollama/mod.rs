//! Ollama, as it runs GGUF models since v0.30.0 (ollama#16031, May 2026): in an upstream
//! `llama-server` subprocess that places layers itself (`--fit`, `-ngl auto`). Ollama's part is
//! the command it builds (llm/llama_server.go, v0.33.0-rc2 @fb30760, 2026-08-21):
//!
//! ```text
//! llama-server -c num_ctx × OLLAMA_NUM_PARALLEL -np OLLAMA_NUM_PARALLEL
//!              [-ctk T -ctv T]            OLLAMA_KV_CACHE_TYPE, when set
//!              --flash-attn on|off|auto   OLLAMA_FLASH_ATTENTION, else auto where supported
//!              [-b B -ub B]               num_batch, else the automatic generation batch
//!              [-ngl N]                   num_gpu, only when set
//! ```
//!
//! and its choices before that: the default `num_ctx` by VRAM tier, the GPU(s) it gives the
//! runner, the generation batch. The memory itself is llama.cpp's ([`crate::llamacpp::plan`]).
//!
//! Releases before v0.30.0 placed whole layers by their own estimate (`estimateGPULayers` in
//! llm/memory.go until Nov 2025, then the Ollama-engine probe-and-shrink layout): planned as whole
//! layers that keep Ollama's reserve free, with vramfit's memory model in place of its estimate. Ollama's OOM retry (one automatic-context tier lower) is reported as a suggestion.

pub mod args;
pub mod tags;

use crate::hardware::{Gpu, Hardware};
use crate::llamacpp;
use crate::plan::MemoryPlan;
pub use args::{parse, OllamaConfig};
use vramfit_model::units::{fmt_bytes, GIB, MIB};
use vramfit_model::{ModelSpec, WeightSet};

/// ml/device.go `MinimumMemory`: set aside per GPU by the scheduler (CUDA/ROCm; Metal 512 MiB).
pub const MINIMUM_MEMORY: u64 = 457 * MIB;

/// server/routes.go: the default context by total VRAM (each GPU's total less
/// OLLAMA_GPU_OVERHEAD, summed): ≥ 47 GiB → 262144, ≥ 23 GiB → 32768, else 4096 (since the
/// VRAM-tier default; earlier releases used 2048, then 4096).
pub fn default_num_ctx(gpus: &[Gpu], gpu_overhead: u64) -> u64 {
    let total: u64 = gpus
        .iter()
        .map(|g| g.total_bytes.saturating_sub(gpu_overhead))
        .sum();
    match total {
        t if t >= 47 * GIB => 262144,
        t if t >= 23 * GIB => 32768,
        _ => 4096,
    }
}

/// llm/llama_server.go `PredictServerVRAM`: file size + 2·L·kv_heads_min·(n_embd/n_head)·ctx·2
/// ("intentionally conservative"); the scheduler sizes GPU choice and batch with it.
pub fn predict_server_vram(spec: &ModelSpec, weights: &WeightSet, n_ctx: u64) -> u64 {
    let kvh = spec
        .layers
        .iter()
        .map(|l| l.n_head_kv)
        .filter(|&h| h > 0)
        .min()
        .unwrap_or(1);
    let head_dim = spec.n_embd / spec.n_head().max(1);
    weights.total_bytes() + 2 * spec.n_layer() * kvh * head_dim * n_ctx * 2
}

/// server/sched.go generation batch: 512, 1024 above 4096 tokens, 2048 above 32768; stepped down
/// while the prediction leaves too little room (≤ 80 % of available with the surcharge of
/// 768 MiB / 2 GiB, and under 75 % / 60 % headroom). Without flash attention on CUDA: 512, or 256
/// above 4096 tokens on an 8 GiB card.
pub fn generation_batch(
    ctx: u64,
    predicted: u64,
    available: u64,
    fa_off: bool,
    gpus: &[Gpu],
) -> u64 {
    if fa_off {
        let small = gpus
            .iter()
            .any(|g| g.free_bytes.min(g.total_bytes) <= 8 * GIB);
        return if ctx > 4096 && small { 256 } else { 512 };
    }
    let fits = |b: u64| {
        if predicted == 0 || available == 0 {
            return true;
        }
        let threshold = available * 80 / 100;
        let headroom = match b {
            2048.. => predicted <= available * 60 / 100,
            1024.. => predicted <= available * 75 / 100,
            _ => true,
        };
        let surcharge = match b {
            2048.. => 2 * GIB,
            1024.. => 768 * MIB,
            _ => 0,
        };
        predicted <= threshold && headroom && surcharge <= threshold - predicted
    };
    let mut b = match ctx {
        c if c > 32768 => 2048,
        c if c > 4096 => 1024,
        _ => 512,
    };
    while b > 512 && !fits(b) {
        b = if b > 1024 { 1024 } else { 512 };
    }
    b
}

/// ml/device.go `cudaFlashAttentionSupported`: compute capability ≥ 6.0 and not 7.2 (unknown: yes).
fn fa_supported(g: &Gpu) -> bool {
    match g.compute_capability {
        Some(cc) => cc >= 6.0 && (cc - 7.2).abs() > 1e-6,
        None => true,
    }
}

/// The most layers (output layer counted) that keep `reserve` free on every GPU.
fn legacy_layers(
    spec: &ModelSpec,
    weights: &WeightSet,
    cfg: &llamacpp::LlamaCppConfig,
    hw: &Hardware,
    reserve: u64,
) -> u64 {
    let pw = llamacpp::prepare(spec, weights);
    let n_ctx = llamacpp::default_ctx(cfg, spec);
    let ok = |n: u64| {
        let mut c = cfg.clone();
        c.n_gpu_layers = Some(n as i64);
        let l = llamacpp::layout_prepared(spec, &pw, &c, hw, n_ctx);
        hw.gpus
            .iter()
            .enumerate()
            .all(|(d, g)| l.used(d) + reserve <= g.free_bytes)
    };
    crate::search::largest_fitting(0, pw.n_blocks + 1, 1, ok).unwrap_or(0)
}

/// A llama-server fix from [`llamacpp::plan`] said with Ollama's knobs (Modelfile `PARAMETER`
/// lines, request options, `OLLAMA_*` in the environment of `ollama serve`); None for a fix
/// Ollama has no knob for (`--n-cpu-moe`, `--fit`).
pub fn ollama_fix(s: &str, np: u64) -> Option<String> {
    let (head, why) = s.split_once(": ").unwrap_or((s, ""));
    let words: Vec<&str> = head.split_whitespace().collect();
    let num = |flag: &str| {
        words
            .iter()
            .position(|w| *w == flag)
            .and_then(|i| words.get(i + 1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    let ctx_line = |n: u64| {
        let per = n / np.max(1);
        format!("PARAMETER num_ctx {per} in the Modelfile (or --num-ctx {per}, or OLLAMA_CONTEXT_LENGTH={per} for ollama serve)")
    };
    let kv =
        "OLLAMA_KV_CACHE_TYPE=q8_0 OLLAMA_FLASH_ATTENTION=1 in the environment of ollama serve";
    let why = why
        .replace("-c ", "num_ctx ")
        .replace("(-ngl ", "(num_gpu ");
    match words.first().copied()? {
        "-c" => Some(format!("{}: {why}", ctx_line(num("-c")?))),
        "-ctk" => match num("-c") {
            Some(n) => Some(format!(
                "{kv}, and {}: a q8_0 KV cache fits that context",
                ctx_line(n)
            )),
            None => Some(format!("{kv}: halves the KV cache")),
        },
        "-ngl" => {
            let n = num("-ngl")?;
            Some(format!(
                "PARAMETER num_gpu {n} in the Modelfile (or --num-gpu {n}): {why}"
            ))
        }
        "drop" if head.contains("-ngl") => Some(format!(
            "remove PARAMETER num_gpu (or --num-gpu): {}",
            why.replace("llama.cpp's --fit", "llama-server's --fit")
        )),
        _ => None,
    }
}

/// Everything Ollama decides before llama-server starts.
#[derive(Debug, Clone)]
pub struct Launch {
    pub gpus: Vec<Gpu>,
    pub num_ctx: u64,
    pub num_ctx_auto: bool,
    pub batch: Option<u64>,
    pub flash_attn: &'static str,
    pub llama_args: Vec<String>,
    pub notes: Vec<String>,
}

/// Ollama's choices for this model on this machine, and the llama-server command they make.
pub fn launch(spec: &ModelSpec, weights: &WeightSet, cfg: &OllamaConfig, hw: &Hardware) -> Launch {
    let mut notes = Vec::new();
    // Ollama's plan has no problem list: a visible-devices problem is reported as a note
    let mut problems = Vec::new();
    let visible = hw
        .visible(cfg.visible_devices.as_deref())
        .into_report(&mut notes, &mut problems);
    notes.extend(problems);
    let tier = default_num_ctx(&visible, cfg.gpu_overhead);
    let num_ctx_auto = cfg.num_ctx.is_none() && cfg.context_length_env.is_none();
    let mut num_ctx = cfg.num_ctx.or(cfg.context_length_env).unwrap_or(tier);
    if spec.n_ctx_train > 0 && num_ctx > spec.n_ctx_train {
        // llm/server.go NewLlamaServer: a num_ctx above the training context is lowered to it
        notes.push(format!(
            "num_ctx {num_ctx} is above the model's {}: Ollama lowers it",
            spec.n_ctx_train
        ));
        num_ctx = spec.n_ctx_train;
    }
    let np = cfg.num_parallel;
    let n_ctx = num_ctx * np;
    let predicted = predict_server_vram(spec, weights, n_ctx);
    let available_of = |g: &Gpu| {
        g.free_bytes
            .saturating_sub(cfg.gpu_overhead + MINIMUM_MEMORY)
    };
    // server/sched.go: without OLLAMA_SCHED_SPREAD, the best single GPU that holds the prediction
    let gpus = if !cfg.sched_spread && visible.len() > 1 && predicted > 0 {
        match visible
            .iter()
            .filter(|g| available_of(g) >= predicted)
            .max_by_key(|g| available_of(g))
        {
            Some(g) => {
                notes.push(format!(
                    "Ollama gives the runner one GPU ({}): the prediction {} fits there (OLLAMA_SCHED_SPREAD=1 uses all)",
                    g.name,
                    fmt_bytes(predicted)
                ));
                vec![g.clone()]
            }
            None => visible.clone(),
        }
    } else {
        visible.clone()
    };
    let flash_attn = match cfg.flash_attention {
        Some(true) => "on",
        Some(false) => "off",
        None if gpus.iter().all(fa_supported) => "auto",
        None => "off",
    };
    let available: u64 = gpus.iter().map(available_of).sum();
    let batch = cfg.num_batch.or_else(|| {
        let b = generation_batch(n_ctx, predicted, available, flash_attn == "off", &gpus);
        (b != 512).then_some(b)
    });
    let mut a: Vec<String> = vec![
        "-m".into(),
        cfg.model.clone(),
        "-c".into(),
        n_ctx.to_string(),
        "-np".into(),
        np.to_string(),
    ];
    if let Some(t) = &cfg.kv_cache_type {
        a.extend([
            "--cache-type-k".into(),
            t.clone(),
            "--cache-type-v".into(),
            t.clone(),
        ]);
    }
    a.extend(["--flash-attn".into(), flash_attn.into()]);
    if let Some(b) = batch {
        a.extend(["-b".into(), b.to_string(), "-ub".into(), b.to_string()]);
    }
    if let Some(n) = cfg.num_gpu {
        a.extend(["-ngl".into(), n.to_string()]);
    }
    if spec.vision_params > 0 {
        // llm/llama_server.go: LLAMA_ARG_FIT_TARGET raised by the projector (F16, 2 bytes a
        // parameter) over llama-server's 1024 MiB default
        let mib = 1024 + (spec.vision_params * 2).div_ceil(MIB);
        a.extend(["--fit-target".into(), mib.to_string()]);
    }
    Launch {
        gpus,
        num_ctx,
        num_ctx_auto,
        batch,
        flash_attn,
        llama_args: a,
        notes,
    }
}

/// The full `check` answer for an Ollama command. Errs only if llama.cpp's reader refuses the
/// command built from Ollama's settings (a value Ollama would pass on and llama-server reject).
pub fn plan(
    spec: &ModelSpec,
    weights: &WeightSet,
    cfg: &OllamaConfig,
    hw: &Hardware,
) -> Result<MemoryPlan, crate::error::EngineError> {
    let l = launch(spec, weights, cfg, hw);
    let sub_hw = Hardware {
        gpus: l.gpus.clone(),
        host_ram_bytes: hw.host_ram_bytes,
    };
    let legacy = cfg.release.is_some_and(|(a, b, _)| (a, b) < (0, 30));
    let mut largs = l.llama_args.clone();
    let mut legacy_note = None;
    if legacy {
        // before v0.30.0 Ollama's own scheduler chose the layers (llm/memory.go
        // estimateGPULayers): whole layers while they fit in free memory less its reserve
        // (MinimumMemory and OLLAMA_GPU_OVERHEAD); no --fit, no expert split
        largs.extend(["--fit".into(), "off".into()]);
        if cfg.num_gpu.is_none() {
            let base = llamacpp::parse("llama-server", &largs, &[], None)?;
            let n = legacy_layers(
                spec,
                weights,
                &base,
                &sub_hw,
                MINIMUM_MEMORY + cfg.gpu_overhead,
            );
            largs.extend(["-ngl".into(), n.to_string()]);
            legacy_note = Some(format!(
                "Ollama before v0.30.0 offloads whole layers by its own estimate (llm/memory.go estimateGPULayers, {} reserved per GPU): num_gpu {n} here, with vramfit's memory model in place of Ollama's estimate",
                fmt_bytes(MINIMUM_MEMORY + cfg.gpu_overhead)
            ));
        }
    }
    let lcfg = llamacpp::parse("llama-server", &largs, &[], None)?;
    let mut p = llamacpp::plan(spec, weights, &lcfg, &sub_hw);
    p.engine = "ollama".into();
    p.notes.extend(legacy_note);
    if spec.vision_params > 0 {
        // llm/llama_server.go appendMMProjArgs: the projector loads on the GPU (--mmproj), and
        // Ollama raises LLAMA_ARG_FIT_TARGET by its size so that --fit leaves room for it; an F16
        // projector is 2 bytes a parameter. With num_gpu pinned --fit places nothing: not counted.
        let proj = spec.vision_params * 2;
        // --fit ran (num_gpu not pinned) and the launch fits: the target it kept free holds it
        if cfg.num_gpu.is_none() && p.verdict == crate::plan::Verdict::Fits {
            p.notes.push(format!(
                "vision projector ({}): Ollama adds it to --fit-target, so --fit leaves that room on the GPU",
                fmt_bytes(proj)
            ));
        } else {
            p.problems.push(format!(
                "the vision projector ({} parameters, about {}) that Ollama loads with --mmproj is not counted: leave about that much more room",
                spec.vision_params,
                fmt_bytes(proj)
            ));
        }
    }
    // what llama-server's --fit did, said as the Ollama option that would pin it
    for n in p.notes.iter_mut() {
        if let Some(rest) = n.strip_prefix("--fit keeps ") {
            if let Some((head, ngl)) = rest.rsplit_once("(-ngl ") {
                *n = format!(
                    "llama-server's --fit keeps {head}(what PARAMETER num_gpu {} would pin)",
                    ngl.trim_end_matches(')')
                );
            }
        } else if n.starts_with("--fit ") {
            *n = format!("llama-server's {n}");
        }
    }
    let np = cfg.num_parallel.max(1);
    p.max_model_len /= np;
    let mut settings = vec![
        (
            "num_ctx".to_string(),
            format!(
                "{}{}",
                l.num_ctx,
                if l.num_ctx_auto {
                    " (VRAM-tier default)"
                } else {
                    ""
                }
            ),
        ),
        ("OLLAMA_NUM_PARALLEL".into(), np.to_string()),
        (
            "num_batch".into(),
            l.batch
                .map(|b| b.to_string())
                .unwrap_or_else(|| "512 (llama-server default)".into()),
        ),
        ("flash_attention".into(), l.flash_attn.into()),
        ("llama_server_args".into(), l.llama_args.join(" ")),
    ];
    settings.append(&mut p.settings);
    p.settings = settings;
    let mut notes = l.notes;
    if !legacy {
        notes.push("Ollama v0.30.0+ (ollama#16031) semantics: the model runs in llama-server with --fit; modelled as of v0.33.0-rc2".into());
    }
    if cfg.gpu_overhead > 0 {
        notes.push(format!(
            "OLLAMA_GPU_OVERHEAD {}: lowers the VRAM tier and the scheduler's free memory, not llama-server's own fit",
            fmt_bytes(cfg.gpu_overhead)
        ));
    }
    notes.append(&mut p.notes);
    p.notes = notes;
    p.notes.extend(cfg.notes.iter().cloned());
    // llama-server flags mean nothing to an Ollama user: say each fix in Ollama's vocabulary
    p.suggestions = p
        .suggestions
        .iter()
        .filter_map(|s| ollama_fix(s, np))
        .collect();
    if l.num_ctx_auto && p.verdict == crate::plan::Verdict::DoesNotFit && l.num_ctx > 4096 {
        let lower = if l.num_ctx > 32768 { 32768 } else { 4096 };
        p.suggestions.push(format!(
            "Ollama itself retries a failed load once with num_ctx {lower} (server/sched.go, automatic context only); or set OLLAMA_CONTEXT_LENGTH / PARAMETER num_ctx to at most {}",
            p.max_model_len
        ));
    }
    Ok(p)
}
