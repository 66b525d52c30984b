//! Rules for llama.cpp (and Ollama, which runs it): which buffer failed — weights, KV cache,
//! compute — on which device, and what fits given the sizes the log printed.

use vramfit_model::units::fmt_bytes;

use super::{torch, Cause, Context, Finding};
use crate::events::{BufferKind, LogEvent};
use crate::fixes::{layers_that_fit, llama_ctx_that_fits, pow2_floor, Fix, LLAMA_FIT_MARGIN};

/// llama.cpp: which allocation failed (weights, KV, compute), on which device, with which sizes.
pub(crate) fn llama(ctx: &Context) -> Finding {
    let failed = ctx.before(|e| match e {
        LogEvent::GgmlAllocFailed { device, bytes } => Some((device.clone(), *bytes)),
        _ => None,
    });
    let dev_name = failed.as_ref().and_then(|f| f.0.clone());
    let on = dev_name
        .as_ref()
        .map_or(String::new(), |d| format!(" on {d}"));
    let size = failed
        .as_ref()
        .map_or(String::new(), |f| format!(" of {}", fmt_bytes(f.1)));
    let free = dev_name.as_ref().and_then(|d| {
        ctx.find(|e| match e {
            LogEvent::LlamaDeviceFree { device, free } if device == d => Some(*free),
            _ => None,
        })
    });
    let buffer = |kind: BufferKind| {
        ctx.find(|e| match e {
            LogEvent::LlamaBuffer {
                kind: k,
                device,
                bytes,
            } if *k == kind && (device.is_none() || *device == dev_name) => Some(*bytes),
            _ => None,
        })
    };
    match &ctx.events[ctx.at].event {
        LogEvent::LlamaWeightsAllocFailed { .. } => {
            let mut f = Finding::new(Cause::WeightsDoNotFit, 0.9, format!("llama.cpp could not allocate the model's weights{on}{size}: the layers given to this GPU do not fit."));
            let layers = ctx
                .settings
                .n_gpu_layers
                .filter(|n| *n > 0)
                .map(|n| n as u64)
                .map(|n| ctx.settings.n_layer.map_or(n, |l| n.min(l + 1)));
            if let (Some((_, bytes)), Some(free), Some(layers)) = (&failed, free, layers) {
                let per_layer = bytes / layers.max(1);
                if let Some(n) = layers_that_fit(per_layer, free.saturating_sub(LLAMA_FIT_MARGIN)) {
                    f = f.fact(format!("{} for {layers} layers ({} each); {} free", fmt_bytes(*bytes), fmt_bytes(per_layer), fmt_bytes(free)))
                        .fix(Fix::flag("-ngl", n, format!("the layers whose weights fit in {} free, keeping 1 GiB for KV and compute (llama.cpp --fit margin)", fmt_bytes(free))));
                }
            } else if let Some(n) =
                free.and_then(|fr| ctx.fx.llamacpp_max_gpu_layers(ctx.settings, fr))
            {
                f = f.fix(Fix::flag("-ngl", n, "the layers that fit (engine model)"));
            } else {
                f = f.fix(Fix::flag(
                    "-ngl",
                    ctx.settings
                        .n_gpu_layers
                        .filter(|n| *n > 1)
                        .map_or("fewer".to_string(), |n| (n / 2).to_string()),
                    "offload fewer layers to the GPU",
                ));
            }
            f.fix(Fix::action("use a smaller quant (e.g. Q4_K_M instead of Q8_0), or --tensor-split over more GPUs"))
        }
        LogEvent::LlamaKvAllocFailed => llama_kv(
            ctx,
            failed.map(|f| f.1),
            free,
            buffer(BufferKind::Model),
            &on,
        ),
        LogEvent::LlamaComputeAllocFailed => {
            let f = Finding::new(Cause::ActivationPeak, 0.8, format!("llama.cpp could not allocate its compute buffer{on}{size} (the graph's activations for one micro-batch), after weights and KV took their share."));
            llama_compute_fixes(ctx, f)
        }
        _ => {
            // a bare allocation failure: the phase says which buffer it was
            torch::by_phase(ctx, &format!("ggml could not allocate{size}{on}"))
        }
    }
}

fn llama_kv(
    ctx: &Context,
    kv_bytes: Option<u64>,
    free: Option<u64>,
    model: Option<u64>,
    on: &str,
) -> Finding {
    let s = ctx.settings;
    let mut f = Finding::new(Cause::KvCache, 0.9, format!("llama.cpp could not allocate the KV cache{on} for n_ctx {}: weights already took the room.", s.n_ctx.map_or("?".to_string(), |n| n.to_string())));
    let ctx_n = s.n_ctx;
    if let (Some(kv), Some(n), Some(free)) = (kv_bytes, ctx_n, free) {
        let per_token = kv / n.max(1);
        let room = free
            .saturating_sub(model.unwrap_or(0))
            .saturating_sub(LLAMA_FIT_MARGIN);
        match llama_ctx_that_fits(per_token, room) {
            Some(c) if c < n => {
                f = f
                    .fact(format!(
                        "KV {} for {n} cells = {} per token; {} free after weights and a 1 GiB margin",
                        fmt_bytes(kv),
                        fmt_bytes(per_token),
                        fmt_bytes(room)
                    ))
                    .fix(Fix::flag(
                        "-c",
                        c,
                        "largest context whose KV fits (multiple of 256)",
                    ));
            }
            // the free memory printed at load should have held it: something else took memory
            _ => {
                f = f
                    .fact(format!(
                        "{} free at load should have held {} of KV: memory was taken after the load started (another process?)",
                        fmt_bytes(free),
                        fmt_bytes(kv)
                    ))
                    .fix(Fix::flag(
                        "-c",
                        pow2_floor(n / 2),
                        format!("half the context ({n} now); KV scales with it"),
                    ));
            }
        }
    } else if let Some(c) = free.and_then(|fr| {
        ctx.fx
            .llamacpp_max_n_ctx(s, fr.saturating_sub(model.unwrap_or(0)))
    }) {
        f = f.fix(Fix::flag(
            "-c",
            c,
            "largest context that fits (engine model)",
        ));
    } else if let Some(n) = ctx_n {
        f = f.fix(Fix::flag(
            "-c",
            pow2_floor(n / 2),
            format!("half the context ({n} now); KV scales with it"),
        ));
    }
    if let Some(p) = s.n_parallel.filter(|p| *p > 1) {
        f = f.fix(Fix::flag(
            "-np",
            1,
            format!("{p} parallel slots share n_ctx but each needs its own cells"),
        ));
    }
    f.fix(Fix::flag(
        "-ctk",
        "q8_0",
        "8-bit K cache halves K (with -ctv q8_0 and -fa on, V too)",
    ))
}

pub(crate) fn llama_compute_fixes(ctx: &Context, mut f: Finding) -> Finding {
    let s = ctx.settings;
    if let Some(c) = ctx.find(|e| match e {
        LogEvent::LlamaPipelineCopies { copies } if *copies > 1 => Some(*copies),
        _ => None,
    }) {
        f = f.fact(format!("pipeline parallelism keeps {c} copies of the compute buffer"))
            .fix(Fix::flag("--tensor-split", "", "give the failing GPU fewer layers (or leave it out with CUDA_VISIBLE_DEVICES)"))
            .fix(Fix::action(format!("build with -DGGML_SCHED_MAX_COPIES=1: pipeline parallelism keeps {c} compute-buffer copies (ggml-backend.cpp)")));
    }
    // llama.cpp's default n_ubatch is 512 (common/common.h)
    let (ub, now) = match s.n_ubatch {
        Some(ub) => (ub, format!("{ub} now")),
        None => (512, "default 512".to_string()),
    };
    f = f.fix(Fix::flag(
        "-ub",
        pow2_floor(ub / 2).max(32),
        format!("compute buffers scale with the micro-batch ({now})"),
    ));
    if s.flash_attn != Some(true) {
        f = f.fix(Fix::flag("-fa", "on", "without flash attention the attention scores (n_ctx x ubatch) sit in the compute buffer"));
    }
    if let Some(n) = s.n_ctx {
        f = f.fix(Fix::flag(
            "-c",
            pow2_floor(n / 2),
            "a shorter context shrinks KV and the attention part of compute",
        ));
    }
    f
}
