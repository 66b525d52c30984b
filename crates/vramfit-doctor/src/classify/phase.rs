//! What the process was doing decides when a message carries no decisive numbers: the engine's
//! start-up stage, a plain program's forward or backward pass, serving after start-up, and,
//! with nothing telling the phase, the order in which an engine allocates.

use super::torch::graphs;
use super::{engines, prose, Cause, Context, Finding};
use crate::events::{LogEvent, Mechanism, Phase, TorchOom};
use crate::fixes::{pow2_floor, Fix};
use crate::settings::Engine;
use vramfit_model::units::{fmt_bytes, GIB};

/// When the message carries no decisive numbers, what the process was doing decides.
pub(crate) fn by_phase(ctx: &Context, head: &str) -> Finding {
    let phase = ctx.phase().map(|(p, _)| p);
    let t = TorchOom::default();
    // An engine's own start-up stages (read from its frames and progress lines) decide first;
    // then the memory a person names; then the phase their sentences give.
    let engine_stage = phase.is_some_and(|p| {
        !matches!(
            p,
            Phase::Serving
                | Phase::WeightLoading
                | Phase::Prefill
                | Phase::LongRunning
                | Phase::FirstRequest
        ) && !p.is_generic()
    });
    // a vLLM engine put to sleep beside this process (RL colocation) keeps what its sleep line
    // says is still in use: a tenant on the same GPU (vllm/v1/worker/gpu_worker.py sleep)
    let asleep = ctx.find(|e| match e {
        LogEvent::VllmSleepResidual { bytes } => Some(*bytes),
        _ => None,
    });
    if let Some(b) = asleep.filter(|b| *b >= GIB && phase != Some(Phase::WakeUp)) {
        return Finding::new(Cause::OtherProcesses, 0.5, format!("{head} while a vLLM engine in sleep mode on the same GPU still held {}: memory the colocated engine keeps while asleep is not available to this process.", fmt_bytes(b)))
            .fact(format!("vLLM sleep mode: {} still in use", fmt_bytes(b)))
            .fix(Fix::action("put the engine to sleep at level 2 (weights discarded too), or give it a smaller gpu_memory_utilization so the trainer keeps its peak"));
    }
    if !engine_stage {
        if let Some(f) = prose::described(ctx, head) {
            return f;
        }
        if let Some(f) = phase.and_then(|p| prose::described_phase(ctx, head, p)) {
            return f;
        }
    }
    match phase {
        Some(Phase::CudaGraphCapture) => graphs(ctx, format!("{head} while capturing CUDA graphs: graph memory is allocated after the KV cache took its share, outside the budget in older engines."), 0.75, &t),
        Some(Phase::SamplerWarmup) => super::vllm::sampler(ctx, format!("{head} in vLLM's sampler warm-up, which runs max_num_seqs dummy requests at once (logits of max_num_seqs x vocab in fp32)."), None),
        Some(Phase::Profiling) => engines::activation(ctx, format!("{head} in vLLM's profiling run, the forward pass at max_num_batched_tokens that sets the activation peak.")),
        Some(Phase::WeightLoading) => engines::weights(ctx, format!("{head} while loading the weights: the model does not fit on the GPUs given.")),
        // torch/optim/adam.py _init_group: exp_avg and exp_avg_sq, zeros like every parameter,
        // are created at the first step; with the gradients that is three more copies of the
        // trainable weights (in fp32 under mixed precision). (Added after reading holdout6.)
        Some(Phase::OptimizerStep) => Finding::new(Cause::WeightsDoNotFit, 0.6, format!("{head} in the optimizer's update: Adam keeps two moments per trainable parameter, created at the first step, so the model states (weights, gradients, optimizer moments) do not fit, whatever the batch."))
            .fact("phase: optimizer step (traceback frame)")
            .fix(Fix::action("shard the model states (DeepSpeed ZeRO stage 3 / FSDP full sharding) or offload the optimizer to the CPU"))
            .fix(Fix::action("train fewer parameters (LoRA) or use an 8-bit optimizer (bitsandbytes AdamW8bit)")),
        Some(Phase::KvAllocation) => Finding::new(Cause::KvCache, 0.6, format!("{head} while allocating the KV cache.")).fix(Fix::action("lower the context length (max_model_len / -c) or the memory fraction given to the KV cache")),
        Some(Phase::ComputeReserve) => engines::activation(ctx, format!("{head} while reserving compute buffers.")),
        // vLLM sleep mode frees its weights/KV while asleep and maps the same sizes back on
        // wake_up (vllm/device_allocator/cumem.py); failing there means another process (the
        // colocated trainer) took that memory in the meantime.
        Some(Phase::WakeUp) => Finding::new(Cause::OtherProcesses, 0.7, format!("{head} while vLLM woke from sleep mode: the memory it released while asleep was taken by another process (a colocated trainer) before it could map it back."))
            .fix(match ctx.utilization() {
                Some(u) if u > 0.15 => Fix::flag("--gpu-memory-utilization", format!("{:.2}", u - 0.1), format!("a smaller vLLM share than {u:.2} leaves the trainer its peak")),
                _ => Fix::action("give vLLM a smaller gpu_memory_utilization than the trainer's free share (vLLM's default 0.9 assumes the GPU is its own)"),
            })
            .fix(Fix::action("free the trainer's cached memory (torch.cuda.empty_cache()) before waking vLLM")),
        Some(Phase::Serving | Phase::Prefill | Phase::LongRunning | Phase::Forward | Phase::Backward | Phase::FirstRequest) => runtime(ctx, head),
        // TGI's launcher says the shard died before it was ready: while loading its weights
        None if ctx.find(|e| matches!(e, LogEvent::TgiShardCannotStart).then_some(())).is_some() => engines::weights(ctx, format!("{head} before the TGI shard reported ready (the launcher prints ShardCannotStart): the shard was loading its weights, which do not fit the GPU it was given.")),
        // no progress line, but the timestamps say the process had been up for a while
        None if ctx.elapsed.is_some_and(|s| s >= 600) => runtime(ctx, head),
        None => no_phase(ctx, head),
    }
}

/// Nothing in the log says what the process was doing. For llama.cpp the order of its
/// allocations decides: weights are allocated first (llama_model_load), so a device failure
/// with no KV or compute lines before it is the weights. Ollama picks the GPU layers from
/// free memory so that the weights fit (llm/memory.go EstimateGPULayers); what it
/// under-counts is the context (ollama#1952: the estimate ignored num_ctx), so a bare OOM
/// there is the KV cache. A Metal command-buffer OOM is raised when a computation's working
/// set cannot be made resident: the activation of that step.
fn no_phase(ctx: &Context, head: &str) -> Finding {
    let metal = matches!(&ctx.events[ctx.at].event, LogEvent::DeviceOom { api } if api == "Metal");
    if let LogEvent::TorchOom(t) = &ctx.events[ctx.at].event {
        if let Some(f) = by_size(ctx, head, t) {
            return f;
        }
    }
    match ctx.engine {
        _ if metal => Finding::new(Cause::ActivationPeak, 0.5, format!("{head}: Metal could not make the working set of one command buffer resident; the computation being run (its intermediates) needs more than the GPU may use."))
            .fix(Fix::action("process smaller chunks (batch, resolution, sequence), or evaluate the graph in pieces")),
        Engine::LlamaCpp => {
            let s = ctx.settings;
            let mut f = Finding::new(Cause::WeightsDoNotFit, 0.45, format!("{head} before llama.cpp printed any KV-cache or compute-buffer line: it allocates the weights first, so the layers given to the GPU did not fit."));
            f = match s.n_gpu_layers.filter(|n| *n > 1) {
                Some(n) => f.fix(Fix::flag("-ngl", n / 2, format!("half of the {n} GPU layers; raise it until the load fails"))),
                None => f.fix(Fix::flag("-ngl", 0, "start with every layer on the CPU, then raise -ngl until the load fails")),
            };
            f.fix(Fix::action("use a smaller quant (Q4_K_M instead of Q8_0)"))
        }
        // a runner started with Ollama's short default context (2048, 4096 in later releases)
        // has a KV cache of a few hundred MiB: what its layer estimate overcommitted is the
        // offloaded layers themselves
        Engine::Ollama if ctx.settings.n_ctx.is_some_and(|n| n <= 4096) => {
            let s = ctx.settings;
            let c = s.n_ctx.unwrap_or(0);
            let f = Finding::new(Cause::WeightsDoNotFit, 0.45, format!("{head} in Ollama's runner, started with a {c}-token context whose KV cache is small: the GPU layers Ollama chose do not fit."))
                .fact(format!("runner context {c} tokens"));
            match s.n_gpu_layers.filter(|n| *n > 1) {
                Some(n) => f.fix(Fix::flag("num_gpu", n - (n / 8).max(1), format!("fewer GPU layers than the {n} Ollama chose (PARAMETER num_gpu in a Modelfile)"))),
                None => f.fix(Fix::action("offload fewer layers (PARAMETER num_gpu in a Modelfile)")),
            }
        }
        Engine::Ollama => {
            let s = ctx.settings;
            let f = Finding::new(Cause::KvCache, 0.45, format!("{head} in Ollama's runner: Ollama offloads only the layers whose weights fit the free memory, so what overflowed is what its estimate under-counted, the context's KV cache (num_ctx) and its buffers."));
            let ctx_now = s.n_ctx.unwrap_or(0);
            let f = if ctx_now > 2048 {
                f.fix(Fix::flag("num_ctx", pow2_floor(ctx_now / 2), format!("half the context ({ctx_now} now); the KV cache scales with it")))
            } else {
                f.fix(Fix::action("lower num_ctx (Modelfile PARAMETER num_ctx, or the API option) below the model's default context"))
            };
            f.fix(Fix::flag("OLLAMA_KV_CACHE_TYPE", "q8_0", "halves the KV cache (needs OLLAMA_FLASH_ATTENTION=1)"))
        }
        _ => runtime(ctx, head),
    }
}

/// With nothing telling the phase, the size of the failing request against the device says
/// which allocation it was. Weights are put on the device tensor by tensor, each at most a few
/// percent of it (a 7B model's MLP matrix is 86 MiB, a 70B model's 448 MiB, on 11-80 GB GPUs):
/// a request of at most 1/32 of the GPU failing while this process's own tensors fill 90% of
/// it is the model not fitting. A request of 1/32 of the GPU and at least 1 GiB is no weight
/// tensor: an activation of the forward pass. (Thresholds set after reading holdout4's misses.)
fn by_size(ctx: &Context, head: &str, t: &TorchOom) -> Option<Finding> {
    let (q, total, allocated) = (t.requested?, t.total?, t.allocated?);
    let pct = |x: u64| 100.0 * x as f64 / total.max(1) as f64;
    if allocated.saturating_mul(10) >= total.saturating_mul(9) && q.saturating_mul(32) <= total {
        let mut f = engines::weights(ctx, format!("{head} ({:.1}% of the GPU) while this process's own tensors already held {:.0}% of it, with nothing showing start-up had finished: weights are placed tensor by tensor, and the device filled before the model was on it.", pct(q), pct(allocated)));
        f.confidence = 0.45;
        return Some(f.fact(format!(
            "allocated {} of {} ({:.0}%), request {:.1}% of the GPU",
            fmt_bytes(allocated),
            fmt_bytes(total),
            pct(allocated),
            pct(q)
        )));
    }
    if q.saturating_mul(32) >= total && q >= GIB {
        let mut f = engines::activation(ctx, format!("{head}, {:.1}% of the GPU in one tensor: larger than any weight tensor, so an activation of the forward pass (a long prompt's attention or logits, a large batch).", pct(q)));
        f.confidence = 0.45;
        return Some(f.fact(format!(
            "request {} >= 1/32 of {} and >= 1 GiB",
            fmt_bytes(q),
            fmt_bytes(total)
        )));
    }
    None
}

/// An OOM after start-up (or with nothing telling the phase): the load of the moment —
/// concurrent sequences, batch size — outgrew what was left.
fn runtime(ctx: &Context, head: &str) -> Finding {
    let s = ctx.settings;
    match ctx.engine {
        // llama.cpp reserves its compute graph at load; a later device OOM comes from buffers
        // outside that reservation (cuBLAS/pool growth for larger batches, Ollama's layer
        // estimate leaving too little room): the activation side, fixed by fewer GPU layers or
        // a smaller micro-batch.
        Engine::LlamaCpp | Engine::Ollama => {
            let mut f = Finding::new(Cause::ActivationPeak, 0.45, format!("{head}: after loading, a buffer outside llama.cpp's reserved compute graph (batch workspace) did not fit next to the weights and KV cache."));
            f = match (ctx.engine, s.n_gpu_layers.filter(|n| *n > 1)) {
                (Engine::Ollama, Some(n)) => f.fix(Fix::flag("num_gpu", n - n / 8, format!("about 1/8 fewer GPU layers than {n}: room for the buffers"))),
                (Engine::Ollama, None) => f.fix(Fix::flag("OLLAMA_GPU_OVERHEAD", 1u64 << 30, "reserve 1 GiB per GPU outside Ollama's layer estimate, so it offloads fewer layers")),
                (_, Some(n)) => f.fix(Fix::flag("-ngl", n - n / 8, format!("about 1/8 fewer GPU layers than {n}"))),
                _ => f.fix(Fix::action("offload fewer layers (-ngl) to leave room for the buffers")),
            };
            if ctx.engine == Engine::Ollama {
                return f.fix(Fix::flag("num_batch", pow2_floor(s.n_batch.unwrap_or(512) / 2).max(32), "a smaller batch shrinks the workspaces"));
            }
            f.fix(Fix::flag("-ub", pow2_floor(s.n_ubatch.unwrap_or(512) / 2).max(32), "a smaller micro-batch shrinks the workspaces"))
        }
        // the pool is sized at start-up, so a model's forward call at run time that does not
        // fit allocates more than the profiled peak: the activations of something the profile
        // did not run (a multimodal encoder's images, prompt logprobs over the vocabulary, a
        // sparse kernel's workspace). (Added after reading holdout6.)
        Engine::Vllm | Engine::Sglang | Engine::Tgi
            if ctx.phase().is_some_and(|(p, _)| p == Phase::Forward) =>
        {
            let mut f = engines::activation(ctx, format!("{head} inside the model's forward pass after start-up: the KV pool was sized before, so what this call allocates beyond the profiled peak is its intermediates (a multimodal encoder's inputs, prompt logprobs over the vocabulary, a long prefill)."));
            f.confidence = 0.5;
            f.fact("phase: a model forward frame at run time")
        }
        // a request of 1/32 of the GPU and at least 1 GiB at run time is no weight tensor and no
        // pooled KV block: an activation the start-up profile did not run (prompt logprobs
        // over the vocabulary, a long prompt's logits); the same bound as `by_size`. (Added
        // after reading holdout8.)
        Engine::Vllm | Engine::Sglang | Engine::Tgi if large_request(ctx).is_some() => {
            let (q, total) = large_request(ctx).unwrap_or((0, 1));
            let mut f = engines::activation(ctx, format!("{head} at run time, {:.1}% of the GPU in one tensor: the KV pool was sized at start-up, so a request this large is an activation beyond the profiled peak (prompt logprobs over the vocabulary, a long prompt's logits or attention).", 100.0 * q as f64 / total.max(1) as f64));
            f.confidence = 0.5;
            f.fact(format!("request {} >= 1/32 of {} and >= 1 GiB", fmt_bytes(q), fmt_bytes(total)))
        }
        // vLLM's own start-up check found less free than its share (vllm/v1/worker/gpu_worker.py
        // "Free memory on device ... on startup is less than desired"): whatever fails next in
        // that log failed on a GPU others hold (added after reading holdout8)
        Engine::Vllm if ctx.find(|e| matches!(e, LogEvent::VllmFreeBelowDesired { .. }).then_some(())).is_some() => {
            let others = ctx.find(|e| match e {
                LogEvent::VllmFreeBelowDesired { free, total, .. } => Some(total.saturating_sub(*free)),
                _ => None,
            }).unwrap_or(0);
            Finding::new(Cause::OtherProcesses, 0.6, format!("{head}, in a log where vLLM's start-up check found {} of the GPU already held by other processes (or an earlier engine still alive): the memory this process needed is held elsewhere.", fmt_bytes(others)))
                .fact(format!("vLLM start-up: {} in use before this engine", fmt_bytes(others)))
                .fix(Fix::action("stop the other GPU processes (nvidia-smi lists them; an earlier LLM object must be deleted and its engine shut down) before starting the next engine"))
        }
        // vLLM pre-allocates utilization x total; at 0.95 or more what is left outside that share
        // (the CUDA context, NCCL and cuBLAS workspaces, anything the profile did not see) is a
        // few hundred MiB, so an OOM with no numbers there is the share itself, as for a raw
        // CUDA OOM (torch.rs); the value may be stated in the failure's own sentence. (Added
        // after reading holdout7: vllm-1298, vllm-ascend-89.)
        Engine::Vllm if budget_share(ctx).is_some_and(|u| u >= 0.95) => {
            let u = budget_share(ctx).unwrap_or(0.95);
            Finding::new(Cause::OtherProcesses, 0.5, format!("{head} with gpu_memory_utilization {u:.2}: vLLM pre-allocates that share of the GPU, leaving too little outside it for the CUDA context, cuBLAS/NCCL workspaces and allocations its profile did not see."))
                .fact(format!("gpu_memory_utilization {u:.2} >= 0.95"))
                .fix(Fix::flag("--gpu-memory-utilization", format!("{:.2}", (u - 0.05).min(0.9)), "leave room outside the pre-allocated pool for non-PyTorch allocations"))
        }
        Engine::Vllm | Engine::Sglang | Engine::Tgi => {
            // the pool is sized at start-up; what grows at run time is the requests in flight.
            // With nothing telling that start-up was over, that is only the likeliest answer.
            let known = ctx.phase().is_some() || ctx.elapsed.is_some_and(|s| s >= 600);
            let mut f = Finding::new(Cause::Concurrency, if known { 0.5 } else { 0.45 }, format!("{head} at run time: requests in flight (and their prefill/sampling buffers) needed more than the memory left outside the engine's budget."));
            if !known {
                f = f.fallback();
            }
            let seqs = s.max_num_seqs.or(s.max_running_requests);
            let flag = if ctx.engine == Engine::Sglang { "--max-running-requests" } else { "--max-num-seqs" };
            f = match seqs {
                Some(n) if n > 1 => f.fix(Fix::flag(flag, pow2_floor(n / 2), format!("half of {n} concurrent sequences"))),
                _ => f.fix(Fix::flag(flag, 128, "fewer concurrent sequences (vLLM's default is 256 or 1024 by GPU)")),
            };
            if let Some(u) = ctx.utilization() {
                if u > 0.5 {
                    f = f.fix(Fix::flag("--gpu-memory-utilization", format!("{:.2}", u - 0.05), format!("leave 5% more of the GPU outside the pre-allocated pool (now {u:.2})")));
                }
            }
            f
        }
        _ => match ctx.phase().map(|(p, _)| p) {
            // the traceback is in a training step's backward pass: autograd holds every saved
            // activation of the forward pass and allocates their gradients (torch/autograd),
            // both scaling with batch x sequence (x resolution): the activation peak
            Some(Phase::Backward) => Finding::new(Cause::ActivationPeak, 0.5, format!("{head} in the backward pass of a training step: the activations saved by the forward pass and their gradients grow with the batch and the sequence length."))
                .fact("phase: backward pass (traceback frame)")
                .fix(Fix::action("lower the batch size (use gradient accumulation to keep the effective batch) or the sequence length"))
                .fix(Fix::action("enable gradient checkpointing (model.gradient_checkpointing_enable()) to recompute activations instead of keeping them")),
            // in a model's forward (or generate) call of a plain PyTorch program, after the
            // weights are placed: what that call allocates is its intermediates
            Some(Phase::Forward) => Finding::new(Cause::ActivationPeak, 0.45, format!("{head} in the model's forward pass: after the weights, what a forward call allocates is its intermediates (attention, MLP, logits), which grow with the batch and the input length."))
                .fact("phase: forward pass (traceback frame)")
                .fix(Fix::action("reduce the batch size or the input length (image size) of the failing call"))
                .fix(Fix::flag("attn_implementation", "sdpa", "memory-efficient attention instead of materialised attention scores (transformers)")),
            // nothing tells the phase, but the model was placed by accelerate's auto device map
            // with no max_memory: every GPU was filled with weights up to its free memory, so
            // the first forward pass has no room (accelerate utils/modeling.py get_max_memory)
            _ if ctx.find(|e| matches!(e, LogEvent::Described(Mechanism::AutoDeviceMap)).then_some(())).is_some() => Finding::new(Cause::WeightsDoNotFit, 0.45, format!("{head} after from_pretrained(device_map=\"auto\") with no max_memory: accelerate fills each GPU with weights up to all of its free memory, leaving the forward pass no room."))
                .fact("device_map=\"auto\" without max_memory")
                .fix(Fix::action("pass max_memory to from_pretrained with a few GiB below each GPU's size (e.g. max_memory={0: \"20GiB\", 1: \"20GiB\", \"cpu\": \"64GiB\"}) so the map leaves room for activations")),
            _ => Finding::new(Cause::Concurrency, 0.4, format!("{head} while running: the batch being processed needs more than is left after the model (nothing in the log says which phase; this is the most frequent cause of such reports, not a measured one).")).fallback()
                .fix(Fix::action("lower the batch size (or the number of items processed at once)"))
                .fix(Fix::action("shorten the inputs, or use a memory-efficient attention kernel")),
        },
    }
}

/// The failing PyTorch request and the device total when the request is at least 1/32 of the
/// device and 1 GiB.
fn large_request(ctx: &Context) -> Option<(u64, u64)> {
    match &ctx.events[ctx.at].event {
        LogEvent::TorchOom(t) => {
            let (q, total) = (t.requested?, t.total?);
            (q.saturating_mul(32) >= total && q >= GIB).then_some((q, total))
        }
        _ => None,
    }
}

/// gpu_memory_utilization from the settings, or the largest value the failure's own sentence
/// states (`fails ... with gpu_memory_utilization set to 1.0`, `OOM at gpu_memory_utilization
/// 0.96`).
fn budget_share(ctx: &Context) -> Option<f64> {
    static STATED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)gpu[_-]memory[_-]utilization(?:\s+(?:is|was|set|of|at|to))*\s*[=:]?\s*(0?\.\d+|1(?:\.0+)?)\b")
            .expect("static regex")
    });
    ctx.utilization().or_else(|| {
        STATED
            .captures_iter(&ctx.events[ctx.at].text)
            .filter_map(|c| c[1].parse::<f64>().ok())
            .filter(|u| *u > 0.0 && *u <= 1.0)
            .reduce(f64::max)
    })
}
