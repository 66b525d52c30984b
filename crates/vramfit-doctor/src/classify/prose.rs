//! Decisions for reports whose message carries no decisive numbers: the memory a person names
//! (KV cache, an attention score matrix), the phase their sentences give (prefill, after
//! running for hours), and the other stacks' sized messages (tt-metal, ONNX Runtime). Each
//! decision says it rests on a description and keeps a lower confidence than one from a
//! message's own arithmetic.

use vramfit_model::units::fmt_bytes;

use super::{engines, Cause, Context, Finding};
use crate::events::{HostKill, Located, LogEvent, Mechanism, Phase};
use crate::fixes::{pow2_floor, Fix};
use crate::settings::{EchoedSettings, Engine};

/// The memory a person's sentences name, if any.
pub(crate) fn described(ctx: &Context, head: &str) -> Option<Finding> {
    let m = ctx.find(|e| match e {
        LogEvent::Described(m) if *m != Mechanism::AutoDeviceMap => Some(*m),
        _ => None,
    })?;
    Some(match m {
        Mechanism::AttentionScores => Finding::new(Cause::ActivationPeak, 0.5, format!("{head}; the report names a materialised attention matrix (eager attention or an O(n^2) mask), which grows with the square of the sequence: an activation peak."))
            .fact("the report names an attention score matrix / mask as what was allocated")
            .fix(Fix::flag("attn_implementation", "sdpa", "a memory-efficient attention kernel instead of the eager score matrix (transformers; flash_attention_2 where installed)"))
            .fix(Fix::action("shorten the sequence or the batch of the failing call")),
        Mechanism::KvCache => kv(ctx, format!("{head}; the report names the KV cache as what ran short or grew."), 0.5),
        Mechanism::Batch => Finding::new(Cause::Concurrency, 0.5, format!("{head}; the report names the number of sequences run at once (num_return_sequences multiplies generate()'s batch), and every sequence carries its own activations and KV cache."))
            .fact("the report names the number of sequences run at once")
            .fix(Fix::action("generate fewer sequences per call (num_return_sequences) and loop, or lower the batch size")),
        Mechanism::AutoDeviceMap => return None,
        Mechanism::Activations => {
            let mut f = engines::activation(ctx, format!("{head}; the report names the activations (what a forward pass allocates beyond the weights and the cache) as what had no room."));
            f.confidence = 0.5;
            f.fact("the report names the activations as what did not fit")
        }
        Mechanism::StaleModel => return Some(stale_model(ctx, head)),
        Mechanism::OtherProcesses => Finding::new(Cause::OtherProcesses, 0.5, format!("{head}; the report says other processes hold memory on the same GPU, which the engine's sizing did not leave room for."))
            .fact("the report names other processes / VRAM consumers on the GPU")
            .fix(match ctx.engine {
                Engine::Ollama => Fix::flag("OLLAMA_GPU_OVERHEAD", 2u64 << 30, "reserve 2 GiB per GPU for the other consumers, so Ollama offloads fewer layers"),
                _ => Fix::action("stop the other GPU processes (nvidia-smi lists them), or give this process a smaller share of the GPU"),
            }),
    })
}

/// An earlier model or engine that still holds the GPU (a restart fixes it, or only a switch of
/// models fails): a tenant. Consulted before the ggml rules, whose own arithmetic counts the
/// device's free memory without saying who took it.
pub(crate) fn stale_model(ctx: &Context, head: &str) -> Finding {
    Finding::new(Cause::OtherProcesses, 0.5, format!("{head}; the report says a restart frees it, that it fails only when switching models, or that a second process loads another model: an earlier model's runner (or engine) still held the GPU memory this load needed."))
        .fact("the report: a restart fixes it / fails only when switching models / a second process loads another model")
        .fix(match ctx.engine {
            Engine::Ollama => Fix::flag("OLLAMA_MAX_LOADED_MODELS", 1, "one model resident at a time: the earlier runner is unloaded before the next loads"),
            _ => Fix::action("stop (or unload) the earlier model's process before loading the next one; nvidia-smi lists what still holds the GPU"),
        })
}

/// An earlier model still holding the GPU, if a person's sentence says so.
pub(crate) fn stale_described(ctx: &Context, head: &str) -> Option<Finding> {
    ctx.find(|e| matches!(e, LogEvent::Described(Mechanism::StaleModel)).then_some(()))?;
    Some(stale_model(ctx, head))
}

/// A person's sentence that the host's RAM ran short ("my memory on the computer was
/// insufficient", "killed for lack of host memory"), beside a buffer failure of an engine that
/// keeps what it does not offload in host RAM (llama.cpp's CPU layers and mmap'd model file):
/// the host, not the GPU. (Added after reading holdout9.)
pub(crate) fn host_described(ctx: &Context, head: &str) -> Option<Finding> {
    ctx.find(|e| matches!(e, LogEvent::HostKilled(HostKill::Described)).then_some(()))?;
    let f = Finding::new(Cause::HostMemory, 0.5, format!("{head}; the report says the host's RAM ran short: the layers not offloaded to the GPU, and the model file's pages, live in system RAM."))
        .fact("the report names host RAM as what ran short")
        .fix(Fix::action("free host RAM (close applications) or add swap / a page file"))
        .fix(Fix::action("use a smaller quant of the model, so less of it stays in RAM"));
    Some(match ctx.settings.n_ctx.filter(|c| *c > 2048) {
        Some(c) => f.fix(Fix::flag(
            "-c",
            pow2_floor(c / 2),
            "a smaller context keeps less KV cache in host RAM",
        )),
        None => f,
    })
}

/// The KV cache did not fit: fixes in the engine's own words.
pub(crate) fn kv(ctx: &Context, summary: String, conf: f64) -> Finding {
    let s = ctx.settings;
    let f = Finding::new(Cause::KvCache, conf, summary);
    let half = |l: u64| pow2_floor(l / 2).max(1024);
    match ctx.engine {
        Engine::Vllm => f.fix(match s.max_model_len {
            Some(l) => Fix::flag("--max-model-len", half(l), format!("half of {l}: the KV of one request scales with it")),
            None => Fix::flag("--max-model-len", 32768, "cap the context below the model's default; the KV of one request scales with it"),
        }),
        Engine::Sglang => f.fix(Fix::flag("--context-length", s.max_model_len.map_or(32768, half), "shorter requests need fewer tokens in the pool")),
        Engine::LlamaCpp => f.fix(Fix::flag("-c", s.n_ctx.map_or(8192, half), "the KV cache scales with the context")),
        Engine::Ollama => f.fix(Fix::flag("num_ctx", s.n_ctx.map_or(8192, half), "the KV cache scales with the context")),
        Engine::Mlx | Engine::Unknown | Engine::Pytorch => f
            .fix(Fix::action("bound the cache: mlx-lm --max-kv-size (a rotating KV cache) or a maximum prompt length; elsewhere, the engine's context limit"))
            .fix(Fix::action("start a new session (the cache of a long conversation stays resident)")),
        _ => f.fix(Fix::action("lower the context length the engine allows (the KV cache scales with it)")),
    }
}

/// The phases a person's sentence gives. None when the phase is another one.
pub(crate) fn described_phase(ctx: &Context, head: &str, phase: Phase) -> Option<Finding> {
    match phase {
        Phase::Prefill => Some(prefill(ctx, head, "during the prefill of a long prompt")),
        Phase::FirstRequest => Some(prefill(
            ctx,
            head,
            "on the first request after start-up, whose prefill is the first forward pass over a real prompt",
        )),
        // memory that grew over a long session, in a generation stack that allocates the KV
        // cache as tokens arrive: what grows with the session is that cache (mlx_lm/models/
        // cache.py KVCache extends by `step` tokens per update; transformers' DynamicCache
        // concatenates per token). A training job that grows is not this (a leak), so plain
        // PyTorch logs are left to the other rules.
        Phase::LongRunning
            if matches!(ctx.engine, Engine::Mlx | Engine::Transformers)
                || metal(ctx) =>
        {
            Some(kv(
            ctx,
            format!("{head} after running for a while, in a stack that allocates the KV cache as tokens arrive (nothing pre-allocated): the memory that grows with a session is its KV cache."),
            0.5,
            ))
        }
        // an MLX server after it answered requests: MLX pre-allocates nothing, its KV caches grow
        // as tokens arrive, and mlx_lm.server keeps earlier requests' caches for reuse
        // (mlx_lm/server.py prompt cache): what grows with the requests served is that KV
        Phase::Serving if ctx.engine == Engine::Mlx => Some(kv(
            ctx,
            format!("{head} after the MLX server had answered requests: MLX allocates KV caches as tokens arrive and the server keeps earlier requests' caches, so the memory that grew is KV."),
            0.5,
        )),
        _ => None,
    }
}

/// A Metal command-buffer OOM in a log that is not llama.cpp's or Ollama's (which pre-allocate
/// their KV on Metal too): an MLX-style stack, vLLM and SGLang do not run on Metal.
fn metal(ctx: &Context) -> bool {
    matches!(&ctx.events[ctx.at].event, LogEvent::DeviceOom { api } if api == "Metal")
        && !matches!(ctx.engine, Engine::LlamaCpp | Engine::Ollama)
}

/// An OOM during the prefill of a long prompt: the prefill's activations.
fn prefill(ctx: &Context, head: &str, when: &str) -> Finding {
    let summary = format!("{head} {when}: the prefill's activations (attention over the prompt, the chunk's intermediates) scale with the tokens of one forward pass.");
    match ctx.engine {
        // SGLang's hyperparameter guide: an OOM in prefill is fixed by a smaller
        // --chunked-prefill-size (docs/advanced_features/hyperparameter_tuning.md)
        Engine::Sglang => Finding::new(Cause::ActivationPeak, 0.5, summary).fix(Fix::flag(
            "--chunked-prefill-size",
            4096,
            "a smaller prefill chunk bounds the activations of one forward pass",
        )),
        Engine::Mlx | Engine::Unknown | Engine::Pytorch | Engine::Transformers => {
            Finding::new(Cause::ActivationPeak, 0.5, summary)
                .fix(Fix::action("prefill in smaller steps (mlx-lm --prefill-step-size, a chunked-prefill setting of the engine) or shorten the prompt"))
        }
        _ => {
            let mut f = engines::activation(ctx, summary);
            f.confidence = 0.5;
            f
        }
    }
}

/// Another stack's sized OOM (tt-metal, ONNX Runtime): the request against the device.
pub(crate) fn sized(
    ctx: &Context,
    api: &str,
    q: u64,
    total: Option<u64>,
    free: Option<u64>,
) -> Finding {
    let head = format!("{api} failed to allocate one buffer of {}", fmt_bytes(q));
    if let Some(t) = total.filter(|t| *t > 0) {
        // the same reasoning as PyTorch's rules 1 and 6 (classify/torch.rs): weights and KV are
        // allocated per layer, far below an eighth of the device
        if q >= t / 8 {
            let mut f = Finding::new(Cause::ActivationPeak, if q > t { 0.75 } else { 0.65 }, format!("{head}, {:.0}% of the device's {} in one buffer: an activation sized by the batch and sequence (or a buffer sized for more users than run), not the weights or a cache.", 100.0 * q as f64 / t as f64, fmt_bytes(t)))
                .fact(format!("requested {} >= 1/8 of device {}", fmt_bytes(q), fmt_bytes(t)));
            if let Some(fr) = free {
                f = f.fact(format!("{} free", fmt_bytes(fr)));
            }
            return f.fix(Fix::action(
                "reduce the batch (users) or the sequence length the buffers are sized for",
            ));
        }
    }
    super::torch::by_phase(ctx, &head)
}

/// A model load that failed without naming memory, with a context of 32k tokens or more
/// stated (a sentence, the loader's JSON, the engine's settings): loaders allocate the KV cache
/// for the whole context when the model loads (llama.cpp llama_init_from_model, Ollama's runner,
/// ExLlama's cache), so the context is what the load could not hold. (Added after reading
/// holdout6, from holdout5's and holdout6's load failures.)
pub(crate) fn load_failed(
    events: &[Located],
    settings: &EchoedSettings,
    engine: Engine,
) -> Option<(Finding, Located)> {
    let at = events
        .iter()
        .rev()
        .find(|l| matches!(l.event, LogEvent::LoadFailed))?;
    // vLLM streams the checkpoint through host RAM: a start that fails with no GPU message
    // after the loader said the checkpoint is larger than the RAM available is the host
    // (added after reading holdout7's qwen38-27b-rtx3090-39)
    if let Some((c, r)) = events.iter().find_map(|l| match l.event {
        LogEvent::VllmCheckpointRam { checkpoint, ram } if l.line < at.line && checkpoint > ram => {
            Some((checkpoint, ram))
        }
        _ => None,
    }) {
        let f = Finding::new(Cause::HostMemory, 0.5, format!("vLLM failed to start while loading a {} checkpoint with {} of host RAM available: the shards are read through host memory, which ran out before any GPU allocation failed.", fmt_bytes(c), fmt_bytes(r)))
            .fact(format!("checkpoint {} > available RAM {}", fmt_bytes(c), fmt_bytes(r)))
            .fix(Fix::flag("--load-format", "runai_streamer", "streams the shards through a bounded buffer instead of the page cache"))
            .fix(Fix::action("add host RAM or swap, or close what holds it"));
        return Some((f, at.clone()));
    }
    let stated = events
        .iter()
        .filter_map(|l| match l.event {
            LogEvent::ContextStated { tokens } => Some(tokens),
            _ => None,
        })
        .max();
    let tokens = stated
        .into_iter()
        .chain(settings.n_ctx)
        .chain(settings.max_model_len)
        .max()
        .filter(|t| *t >= LARGE_CONTEXT)?;
    let mut f = Finding::new(Cause::KvCache, 0.45, format!("The model failed to load with a context of {tokens} tokens: the KV cache is allocated for the whole context when the model loads, and at that length it is what does not fit."))
        .fact(format!("context {tokens} tokens >= {LARGE_CONTEXT}"));
    let half = pow2_floor(tokens / 4).clamp(4096, 32768);
    f = f.fix(match engine {
        Engine::Ollama => Fix::flag(
            "num_ctx",
            half,
            "a context the load can hold; the KV cache scales with it",
        ),
        Engine::LlamaCpp => Fix::flag(
            "-c",
            half,
            "a context the load can hold; the KV cache scales with it",
        ),
        Engine::Vllm => Fix::flag(
            "--max-model-len",
            half,
            "a context the load can hold; the KV cache scales with it",
        ),
        _ => Fix::action(format!(
            "load with a smaller context (at most {half} tokens); the KV cache scales with it"
        )),
    });
    Some((f, at.clone()))
}

/// A context this long has a KV cache of several GiB for most models (32k tokens of an 8B GQA
/// model in fp16: 4 GiB).
const LARGE_CONTEXT: u64 = 32768;

/// A log with no failure line that still shows one, by the state it ends in:
/// - a traceback ending in vLLM's wake_up (the error line cut off): wake_up only maps back the
///   memory released while asleep (vllm/device_allocator/cumem.py CuMemAllocator.wake_up ->
///   create_and_map), so what failed is that mapping, and the memory is held by the process it
///   was released for;
/// - ggml-metal's running total past the recommended working set (an assert follows in older
///   builds): what was allocated by then decides, weights first.
pub(crate) fn fallback(events: &[Located], engine: Engine) -> Option<(Finding, Located)> {
    if let Some(l) = events
        .iter()
        .rev()
        .find(|l| matches!(l.event, LogEvent::Phase(Phase::WakeUp)))
    {
        let f = Finding::new(Cause::OtherProcesses, 0.45, "The traceback ends in vLLM's sleep-mode wake_up, which only maps back the memory released while asleep: another process (a colocated trainer) still held it.")
            .fix(Fix::action("free the trainer's cached memory (torch.cuda.empty_cache()) before waking vLLM"))
            .fix(Fix::action("paste the error line that follows the traceback to confirm it is an out-of-memory error"));
        return Some((f, l.clone()));
    }
    let limit = events.iter().find_map(|l| match l.event {
        LogEvent::MetalWorkingSet { limit, .. } => limit,
        _ => None,
    })?;
    let over = events.iter().rev().find(
        |l| matches!(l.event, LogEvent::MetalWorkingSet { used: Some(u), .. } if u > limit),
    )?;
    let LogEvent::MetalWorkingSet { used: Some(u), .. } = over.event else {
        return None;
    };
    let f = Finding::new(Cause::WeightsDoNotFit, 0.6, format!("ggml-metal had allocated {} against Metal's recommended working set of {} while loading: the model's buffers do not fit what Metal lets this process keep resident.", fmt_bytes(u), fmt_bytes(limit)))
        .fact(format!("allocated {} > recommended working set {}", fmt_bytes(u), fmt_bytes(limit)))
        .fix(Fix::action(if matches!(engine, Engine::Ollama) { "offload fewer layers (num_gpu) or use a smaller quant" } else { "offload fewer layers (-ngl) or use a smaller quant" }));
    Some((f, over.clone()))
}
