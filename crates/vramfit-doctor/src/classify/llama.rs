//! Rules for llama.cpp (and Ollama, which runs it): which buffer failed — weights, KV cache,
//! compute — on which device, and what fits given the sizes the log printed.

use vramfit_model::units::fmt_bytes;

use super::{torch, Cause, Context, Finding};
use crate::events::{BufferKind, LogEvent};
use crate::fixes::{layers_that_fit, llama_ctx_that_fits, pow2_floor, Fix, LLAMA_FIT_MARGIN};
use crate::settings::Engine;

/// Ollama runs llama.cpp but takes its settings as Modelfile/API options and environment
/// variables (ollama api/types.go Options, envconfig/config.go): the same fix in its words.
pub(crate) fn in_engine_words(ctx: &Context, mut f: Finding) -> Finding {
    if ctx.engine != Engine::Ollama {
        return f;
    }
    for fix in &mut f.fixes {
        let (flag, value) = match fix.flag.as_str() {
            "-ngl" => ("num_gpu", fix.value.clone()),
            "-c" => ("num_ctx", fix.value.clone()),
            "-ub" | "-b" => ("num_batch", fix.value.clone()),
            "-np" => ("OLLAMA_NUM_PARALLEL", fix.value.clone()),
            "-ctk" => ("OLLAMA_KV_CACHE_TYPE", fix.value.clone()),
            "-fa" => ("OLLAMA_FLASH_ATTENTION", "1".to_string()),
            _ => continue,
        };
        fix.flag = flag.to_string();
        fix.value = value;
    }
    f
}

/// llama.cpp: which allocation failed (weights, KV, compute), on which device, with which sizes.
pub(crate) fn llama(ctx: &Context) -> Finding {
    if let Some(f) = super::prose::stale_described(ctx, "llama.cpp could not allocate a buffer") {
        return f;
    }
    if let Some(f) = super::prose::host_described(ctx, "llama.cpp could not allocate a buffer") {
        return in_engine_words(ctx, f);
    }
    let f = llama_inner(ctx);
    in_engine_words(ctx, f)
}

fn llama_inner(ctx: &Context) -> Finding {
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
            } else if let Some(n) = ctx.settings.n_gpu_layers.filter(|n| *n > 1) {
                f = f.fix(Fix::flag(
                    "-ngl",
                    n / 2,
                    format!("half of the {n} GPU layers; raise it until the load fails"),
                ));
            } else {
                f = f.fix(Fix::action(if ctx.engine == Engine::Ollama {
                    "offload fewer layers (PARAMETER num_gpu N, starting from half the model's layers)"
                } else {
                    "offload fewer layers (-ngl N, starting from half the model's layers)"
                }));
            }
            f.fix(Fix::action(if ctx.engine == Engine::Ollama {
                "use a smaller quantization tag of the model (e.g. q4_K_M instead of q8_0)"
            } else {
                "use a smaller quant (e.g. Q4_K_M instead of Q8_0), or --tensor-split over more GPUs"
            }))
        }
        LogEvent::LlamaKvAllocFailed => llama_kv(
            ctx,
            failed.map(|f| f.1),
            free,
            buffer(BufferKind::Model),
            &on,
        ),
        // the context is the KV cache (sized by n_ctx, the larger part at long contexts) and
        // the compute buffers (sized by the micro-batch); with neither named, the KV cache
        LogEvent::LlamaContextFailed => {
            let mut f = llama_kv(ctx, None, free, buffer(BufferKind::Model), &on);
            f.confidence = 0.6;
            f.summary = format!("llama.cpp could not create its context{}: the KV cache it sizes for the context (with the compute buffers) did not fit next to the weights.", ctx.settings.n_ctx.map_or(String::new(), |n| format!(" for n_ctx {n}")));
            f.fact("context creation failed; no line names the buffer")
        }
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
    let mut f = Finding::new(
        Cause::KvCache,
        0.9,
        format!(
            "llama.cpp could not allocate the KV cache{on}{}: weights already took the room.",
            s.n_ctx.map_or(String::new(), |n| format!(" for n_ctx {n}"))
        ),
    );
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

pub(crate) fn llama_compute_fixes(ctx: &Context, f: Finding) -> Finding {
    let f = llama_compute_inner(ctx, f);
    in_engine_words(ctx, f)
}

fn llama_compute_inner(ctx: &Context, mut f: Finding) -> Finding {
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

/// Ollama's new engine: `memory layout cannot be allocated with num_gpu = N`. The layers the
/// user asked for (num_gpu) do not fit with the KV cache and compute graph Ollama printed per
/// device; the number that fits follows from those sizes and the GPU's available memory.
pub(crate) fn ollama_layout(ctx: &Context, num_gpu: u64) -> Finding {
    if let Some(f) = super::prose::stale_described(
        ctx,
        &format!("Ollama could not lay out {num_gpu} GPU layers"),
    ) {
        return f;
    }
    let sum = |kind: BufferKind| -> u64 {
        let mut total = 0;
        for l in ctx.events.iter() {
            if let LogEvent::LlamaBuffer {
                kind: k,
                device,
                bytes,
            } = &l.event
            {
                if *k == kind && device.as_deref().is_some_and(|d| !d.starts_with("CPU")) {
                    total += bytes;
                }
            }
        }
        total
    };
    let (weights, kv, graph) = (
        sum(BufferKind::Model),
        sum(BufferKind::Kv),
        sum(BufferKind::Compute),
    );
    let available: u64 = ctx
        .events
        .iter()
        .filter_map(|l| match l.event {
            LogEvent::OllamaGpu { available, .. } => Some(available),
            _ => None,
        })
        .sum();
    let mut f = Finding::new(
        Cause::WeightsDoNotFit,
        0.7,
        format!("Ollama cannot lay out {num_gpu} GPU layers: the weights of those layers, the KV cache and the compute graph do not fit the GPUs' free memory."),
    );
    if weights + kv + graph > 0 {
        f = f.fact(format!(
            "on the GPUs: weights {}, KV cache {}, compute graph {}",
            fmt_bytes(weights),
            fmt_bytes(kv),
            fmt_bytes(graph)
        ));
    }
    if available > 0 {
        f = f.fact(format!("GPUs report {} available", fmt_bytes(available)));
    }
    if weights > 0 && available > 0 && num_gpu > 0 {
        let per_layer = weights / num_gpu;
        let room = available.saturating_sub(kv + graph);
        if let Some(n) = layers_that_fit(per_layer, room).filter(|n| *n < num_gpu) {
            f = f.fix(Fix::flag(
                "num_gpu",
                n,
                format!(
                    "{} per layer; {} left after KV and graph",
                    fmt_bytes(per_layer),
                    fmt_bytes(room)
                ),
            ));
        }
    }
    if kv > weights / 4 && kv > 0 {
        let c = ctx.settings.n_ctx.filter(|c| *c > 2048);
        f = match c {
            Some(c) => f.fix(Fix::flag(
                "num_ctx",
                pow2_floor(c / 2),
                format!(
                    "the KV cache ({}) is large: half the context ({c} now)",
                    fmt_bytes(kv)
                ),
            )),
            None => f.fix(Fix::flag(
                "OLLAMA_KV_CACHE_TYPE",
                "q8_0",
                format!(
                    "the KV cache ({}) is large: 8-bit halves it (with OLLAMA_FLASH_ATTENTION=1)",
                    fmt_bytes(kv)
                ),
            )),
        };
    }
    f.fix(Fix::action(format!("or remove the num_gpu {num_gpu} override (Modelfile PARAMETER num_gpu / API option) so Ollama offloads only the layers that fit")))
}

/// llama.cpp's server found no free KV cells for a batch (tools/server/server.cpp
/// update_slots: `failed to find free space in the KV cache`): the context it was started with
/// (shared by its slots) is full. The device did not run out; the configured cache did.
pub(crate) fn kv_cells_full(ctx: &Context) -> Finding {
    let s = ctx.settings;
    let f = Finding::new(Cause::KvCache, 0.8, "llama.cpp's server found no free space in its KV cache: the context it was started with (-c, shared by the -np slots) is full of the conversations in flight.")
        .fact("the server retried with smaller batches and still found no free KV cells");
    let f = match s.n_ctx {
        Some(n) => f.fix(Fix::flag("-c", n * 2, format!("twice the {n}-token context (the KV cache grows with it; check it still fits the device)"))),
        None => f.fix(Fix::action("start the server with a larger context (-c) or fewer parallel slots (-np)")),
    };
    in_engine_words(
        ctx,
        f.fix(Fix::action(
            "shorten conversations (the server keeps each slot's history in the cache)",
        )),
    )
}

/// A Metal OOM in llama.cpp (unified memory): Metal lets a process keep at most its
/// recommended working set resident (ggml-metal prints `recommendedMaxWorkingSetSize` and a
/// running `(used / limit)` total per buffer). llama.cpp allocates the weights first, then the
/// KV cache (n_ctx) and the compute buffers (n_ubatch): if the weights alone exceed the working
/// set they are the cause, otherwise what filled the rest is the context's KV cache, which is
/// the term that reaches gigabytes (the compute buffer is a few hundred MiB at the default
/// micro-batch).
pub(crate) fn metal(ctx: &Context) -> Finding {
    let limit = ctx.find(|e| match e {
        LogEvent::MetalWorkingSet { limit, .. } => *limit,
        _ => None,
    });
    let weights: u64 = {
        let mut seen = Vec::new();
        for l in ctx.events.iter() {
            if let LogEvent::LlamaBuffer {
                kind: BufferKind::Model,
                bytes,
                ..
            } = &l.event
            {
                seen.push(*bytes);
            }
        }
        seen.iter().sum()
    };
    let head = "Metal could not keep this llama.cpp process's buffers resident";
    // no model-buffer line to size the weights by, but ggml-metal's running total had passed
    // the working set: as with a log that ends there (classify/prose.rs fallback), what was
    // allocated by then is the model's buffers, which come first
    let over = limit.and_then(|l| {
        ctx.find(|e| match e {
            LogEvent::MetalWorkingSet { used: Some(u), .. } if *u > l => Some(*u),
            _ => None,
        })
    });
    if let (0, Some(u), Some(l)) = (weights, over, limit) {
        let f = Finding::new(Cause::WeightsDoNotFit, 0.55, format!("{head}: its buffers had reached {} against Metal's recommended working set of {} before the failing computation; the model's buffers, allocated first, do not fit what Metal keeps resident.", fmt_bytes(u), fmt_bytes(l)))
            .fact(format!("allocated {} > recommended working set {}", fmt_bytes(u), fmt_bytes(l)))
            .fix(Fix::action(if ctx.engine == Engine::Ollama {
                "offload fewer layers (PARAMETER num_gpu) or use a smaller quantization tag"
            } else {
                "offload fewer layers (-ngl) or use a smaller quant"
            }));
        return in_engine_words(ctx, f);
    }
    let f = match limit {
        Some(l) if weights > 0 && weights >= l => {
            let f = Finding::new(
                Cause::WeightsDoNotFit,
                0.7,
                format!(
                    "{head}: the weights alone ({}) exceed Metal's recommended working set ({}).",
                    fmt_bytes(weights),
                    fmt_bytes(l)
                ),
            )
            .fact(format!(
                "weights {} >= working set {}",
                fmt_bytes(weights),
                fmt_bytes(l)
            ));
            let f = match ctx.settings.n_gpu_layers.filter(|n| *n > 1 && *n < 999) {
                Some(n) => f.fix(Fix::flag(
                    "-ngl",
                    n / 2,
                    format!("half of the {n} GPU layers"),
                )),
                None => f.fix(Fix::action(
                    "offload fewer layers (-ngl) so part of the model runs on the CPU",
                )),
            };
            f.fix(Fix::action("use a smaller quant"))
        }
        _ => {
            let mut f = Finding::new(Cause::KvCache, 0.5, format!("{head} once the context was allocated: the weights fit the working set, and the KV cache of the context (n_ctx) is the allocation large enough to fill the rest."));
            if let (Some(l), true) = (limit, weights > 0) {
                f = f.fact(format!(
                    "weights {} of a {} working set",
                    fmt_bytes(weights),
                    fmt_bytes(l)
                ));
            }
            match ctx.settings.n_ctx.filter(|n| *n > 2048) {
                Some(n) => f.fix(Fix::flag("-c", pow2_floor(n / 2), format!("half of the {n}-token context; the KV cache scales with it"))),
                None => f.fix(Fix::action("set a smaller context (-c); the default may be the model's full training context")),
            }
            .fix(Fix::flag("-ctk", "q8_0", "halves the K cache (with -fa, -ctv q8_0 halves the V cache too)"))
        }
    };
    in_engine_words(ctx, f)
}
