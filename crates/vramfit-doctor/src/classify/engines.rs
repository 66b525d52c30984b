//! Rules for the engines' own messages other than vLLM's (SGLang, TGI, NCCL, lmdeploy,
//! transformers), the host, and lookalikes. Each rule names the engine behaviour it rests on.

use vramfit_model::units::{fmt_bytes, GIB};

use super::{llama, torch, Cause, Context, Finding};
use crate::events::{HostKill, LogEvent, NotOomKind, TorchOom};
use crate::fixes::{pow2_floor, Fix};
use crate::settings::Engine;

pub(crate) fn activation(ctx: &Context, summary: String) -> Finding {
    let mut f = Finding::new(Cause::ActivationPeak, 0.7, summary);
    match ctx.engine {
        Engine::LlamaCpp | Engine::Ollama => llama::llama_compute_fixes(ctx, f),
        // text-generation-launcher: the warm-up prefill holds max_batch_prefill_tokens tokens
        Engine::Tgi => f.fix(Fix::flag(
            "--max-batch-prefill-tokens",
            ctx.settings
                .max_batch_prefill_tokens
                .map_or(2048, |t| pow2_floor(t / 2)),
            "a smaller warm-up prefill bounds the activation peak (keep --max-input-tokens below it)",
        )),
        _ => {
            let b = ctx.settings.max_num_batched_tokens;
            f = match b {
                Some(b) => f.fix(Fix::flag(
                    "--max-num-batched-tokens",
                    pow2_floor(b / 2),
                    format!(
                        "the activation peak scales with the tokens of one forward pass ({b} now)"
                    ),
                )),
                None => {
                    let (d, why) = vllm_default_batched(ctx);
                    f.fix(Fix::flag(
                        "--max-num-batched-tokens",
                        pow2_floor(d / 2),
                        format!("a smaller prefill chunk lowers the profiled activation peak ({why})"),
                    ))
                }
            };
            if let Some(s) = ctx.settings.max_num_seqs {
                f = f.fix(Fix::flag(
                    "--max-num-seqs",
                    pow2_floor(s / 2),
                    "fewer sequences in the profiling batch and sampler",
                ));
            }
            f
        }
    }
}

/// vLLM's own `max_num_batched_tokens` when the command leaves it unset, so that halving it is
/// never the value already in force: `vllm::args::batch_defaults` (arg_utils.py, by release and
/// GPU memory) for V1 releases, with the log's version (else the current one) and the GPU total
/// the OOM message prints (else a GPU under 70 GiB); V0 (< 0.8) profiled at least 2048 tokens.
pub(crate) fn vllm_default_batched(ctx: &Context) -> (u64, String) {
    use vramfit_engine::vllm::version::Version;
    let printed = ctx
        .settings
        .engine_version
        .as_deref()
        .and_then(|v| Version::parse(v).ok());
    let version = printed.unwrap_or(Version::CURRENT);
    if version < Version::new(0, 8, 0) {
        return (
            4096,
            format!("vLLM {version} profiles at least 2048 tokens"),
        );
    }
    let total = match &ctx.events[ctx.at].event {
        LogEvent::TorchOom(t) => t.total,
        _ => None,
    };
    let (d, _) = vramfit_engine::vllm::args::batch_defaults(version, total.unwrap_or(0), "");
    let on = match total {
        Some(t) => format!("a {} GPU", fmt_bytes(t)),
        None => "a GPU under 70 GiB (assumed)".to_string(),
    };
    let which = if printed.is_some() {
        ""
    } else {
        " (assumed current)"
    };
    (d, format!("vLLM {version}{which}'s default on {on} is {d}"))
}

pub(crate) fn weights(ctx: &Context, summary: String) -> Finding {
    let s = ctx.settings;
    let tp = s.tensor_parallel_size.unwrap_or(1);
    let f = Finding::new(Cause::WeightsDoNotFit, 0.75, summary);
    let quant = Fix::action("use a quantized checkpoint (AWQ/GPTQ/FP8, or a smaller GGUF quant)");
    match ctx.engine {
        Engine::Vllm => f
            .fix(Fix::flag(
                "--tensor-parallel-size",
                tp * 2,
                format!("split the weights over {} GPUs", tp * 2),
            ))
            .fix(quant),
        Engine::Sglang => f
            .fix(Fix::flag(
                "--tp-size",
                tp * 2,
                format!("split the weights over {} GPUs", tp * 2),
            ))
            .fix(quant),
        Engine::LlamaCpp | Engine::Ollama => {
            let f = match s.n_gpu_layers.filter(|n| *n > 1) {
                Some(n) => f.fix(Fix::flag(
                    "-ngl",
                    n / 2,
                    format!("half of the {n} GPU layers; raise it until the load fails"),
                )),
                None => f.fix(Fix::action(
                    "offload fewer layers to the GPU (-ngl / num_gpu), the rest run on the CPU",
                )),
            };
            llama::in_engine_words(ctx, f.fix(quant))
        }
        Engine::Tgi => f
            .fix(Fix::flag(
                "--num-shard",
                tp.max(1) * 2,
                "shard the weights over more GPUs",
            ))
            .fix(Fix::action(
                "--quantize bitsandbytes-nf4 / awq / gptq checkpoints",
            )),
        Engine::Transformers | Engine::Pytorch | Engine::Unknown => transformers_offload(f),
        _ => f.fix(quant),
    }
}

/// transformers/accelerate: place what does not fit on the CPU, in its own vocabulary
/// (modeling_utils.from_pretrained device_map/max_memory; BitsAndBytesConfig).
fn transformers_offload(f: Finding) -> Finding {
    f.fix(Fix::flag(
        "device_map",
        "auto",
        "let accelerate place layers on GPU first, then CPU/disk",
    ))
    .fix(Fix::flag(
        "max_memory",
        "{0: \"<GPU GiB minus 2>GiB\", \"cpu\": \"<RAM GiB>GiB\"}",
        "leave room on the GPU for activations; the rest goes to the CPU",
    ))
    .fix(Fix::action(
        "use a 4-bit load (BitsAndBytesConfig(load_in_4bit=True)) or a pre-quantized checkpoint",
    ))
}

/// transformers: `Some modules are dispatched on the CPU or the disk. Make sure you have
/// enough GPU RAM to fit the quantized model.` (transformers quantizers: bitsandbytes refuses
/// a device_map that puts quantized modules off the GPU unless fp32 CPU offload is allowed).
pub(crate) fn dispatched_to_cpu(ctx: &Context) -> Finding {
    let _ = ctx;
    Finding::new(Cause::WeightsDoNotFit, 0.8, "transformers placed some modules of the quantized model on the CPU or disk because the GPU could not hold them, and bitsandbytes refuses to quantize modules off the GPU: the weights do not fit the GPU memory given.")
        .fix(Fix::flag("llm_int8_enable_fp32_cpu_offload", "True", "BitsAndBytesConfig: keep the modules that do not fit on the CPU in fp32 (pass device_map with the CPU entries)"))
        .fix(Fix::flag("max_memory", "{0: \"<GPU GiB minus 2>GiB\", \"cpu\": \"<RAM GiB>GiB\"}", "tell accelerate how much of the GPU it may fill"))
        .fix(Fix::action("use 4-bit (load_in_4bit=True) instead of 8-bit, or a GPU with more memory; check nothing else holds the GPU"))
}

/// NCCL could not allocate its buffers (`Cuda failure 2 'out of memory'`): an OOM in memory
/// outside the framework's pool. vLLM and SGLang pre-allocate a share of the GPU
/// (gpu_memory_utilization, mem_fraction_static) and NCCL's buffers must fit in the rest.
pub(crate) fn nccl(ctx: &Context) -> Finding {
    let head = "NCCL ran out of GPU memory allocating its communication buffers";
    match ctx.engine {
        Engine::Vllm => {
            let u = ctx.utilization().unwrap_or(0.9);
            Finding::new(Cause::OtherProcesses, 0.6, format!("{head}: they live outside vLLM's pre-allocated share (gpu_memory_utilization {u:.2}), and the rest of the GPU was already taken (other processes, or too high a share)."))
                .fix(Fix::flag("--gpu-memory-utilization", format!("{:.2}", u - 0.05), "leave NCCL (and the CUDA context) room outside vLLM's share"))
                .fix(Fix::action("check nvidia-smi for other processes on these GPUs"))
        }
        Engine::Sglang => {
            let m = ctx.settings.mem_fraction_static.unwrap_or(0.88);
            Finding::new(Cause::OtherProcesses, 0.6, format!("{head}: they live outside SGLang's static pool (mem_fraction_static {m:.2}), and the rest of the GPU was already taken."))
                .fix(Fix::flag("--mem-fraction-static", format!("{:.2}", m - 0.05), "leave NCCL room outside the static pool"))
        }
        _ => torch::by_phase(ctx, head),
    }
}

/// lmdeploy TurboMind: `[TM][ERROR] CUDA runtime error: out of memory`. TurboMind reserves its
/// KV blocks up front as cache_max_entry_count x free memory (0.8 by default, lmdeploy
/// messages.py TurbomindEngineConfig; older releases: of total memory, and per session_len);
/// its FAQ's answer to OOM is to lower that ratio (lmdeploy docs/en/faq.md, PR #1051).
pub(crate) fn lmdeploy(ctx: &Context) -> Finding {
    let s = ctx.settings;
    let now = s.cache_max_entry_count.unwrap_or(0.8);
    let next = if now > 0.2 {
        ((now / 2.0) * 100.0).round() / 100.0
    } else {
        0.1
    };
    let mut f = Finding::new(Cause::KvCache, 0.6, format!("TurboMind ran out of GPU memory: its KV cache takes cache_max_entry_count ({now:.2}) of the memory at start-up, leaving too little for the weights' workspace and the batch."))
        .fix(Fix::flag("--cache-max-entry-count", format!("{next:.2}"), format!("half the KV cache share ({now:.2} now)")));
    if let Some(len) = s.session_len.filter(|l| *l > 2048) {
        f = f.fix(Fix::flag(
            "--session-len",
            pow2_floor(len / 2),
            format!("older TurboMind sizes KV per sequence for session_len ({len} now)"),
        ));
    }
    f.fix(Fix::flag(
        "--max-batch-size",
        8,
        "fewer sequences in flight",
    ))
}

pub(crate) fn graph_fixes(ctx: &Context, mut f: Finding) -> Finding {
    match ctx.engine {
        Engine::Sglang => {
            if let Some(m) = ctx.settings.mem_fraction_static {
                f = f.fix(Fix::flag(
                    "--mem-fraction-static",
                    format!("{:.2}", m - 0.05),
                    "leave room outside the static pool for graph capture",
                ));
            }
            f.fix(Fix::flag(
                "--cuda-graph-max-bs",
                32,
                "capture fewer, smaller graphs",
            ))
            .fix(Fix::flag(
                "--disable-cuda-graph",
                "",
                "no capture at all (slower decode)",
            ))
        }
        _ => {
            let u = ctx.utilization();
            if let Some(u) = u {
                f = f.fix(Fix::flag(
                    "--gpu-memory-utilization",
                    format!("{:.2}", u - 0.03),
                    format!("leave room for graph capture outside the budget (now {u:.2})"),
                ));
            } else {
                f = f.fix(Fix::flag(
                    "--gpu-memory-utilization",
                    "0.85",
                    "leave room for graph capture outside the budget",
                ));
            }
            f.fix(Fix::flag(
                "--enforce-eager",
                "",
                "no CUDA graphs (slower decode)",
            ))
            .fix(Fix::flag(
                "--max-num-seqs",
                ctx.settings.max_num_seqs.map_or(128, |s| pow2_floor(s / 2)),
                "fewer batch sizes to capture",
            ))
        }
    }
}

pub(crate) fn sglang_tgi(ctx: &Context) -> Finding {
    let s = ctx.settings;
    match &ctx.events[ctx.at].event {
        LogEvent::SglangNotEnoughMemory => {
            let m = s.mem_fraction_static;
            let mut f = Finding::new(Cause::KvCache, 0.6, "SGLang found no room for its KV token pool inside mem_fraction_static of the GPU after the weights.");
            // model_runner.py init_memory_pool raises this when max_total_num_tokens <= 0: the
            // pool is what mem_fraction_static leaves after the weights, whatever the context
            // length, so --context-length is no fix here (SGLang's own advice is the fraction)
            match m {
                Some(m) if m < 0.93 => {
                    f = f.fix(Fix::flag("--mem-fraction-static", format!("{:.2}", m + 0.05), format!("a larger static pool (now {m:.2})")));
                }
                Some(_) => {}
                None => {
                    f = f.fix(Fix::action("raise --mem-fraction-static 0.05 above the default this release chose (the mem_fraction_static= of its server_args line), if no other process uses the GPU"));
                }
            }
            f.fix(Fix::flag("--tp-size", s.tensor_parallel_size.unwrap_or(1) * 2, "split the weights to free room for the pool"))
                .fix(Fix::action("or a smaller checkpoint (FP8/AWQ) so the weights leave room for the pool"))
        }
        LogEvent::SglangReqSlots => {
            let n = s.max_running_requests.map_or(64, |n| pow2_floor(n / 2));
            Finding::new(Cause::Concurrency, 0.85, "SGLang ran out of request slots: more requests were scheduled than its request pool holds.")
                .fix(Fix::flag("--max-running-requests", n, "fewer requests in flight"))
        }
        LogEvent::SglangTokenPoolFull { requested, available } => sglang_pool(ctx, *requested, *available),
        LogEvent::SglangCaptureFailed { inner_oom: true } => {
            torch::graphs(ctx, "SGLang's CUDA-graph capture ran out of memory.".to_string(), 0.85, &TorchOom::default())
        }
        LogEvent::SglangCaptureFailed { inner_oom: false } => {
            Finding::new(Cause::NotOom, 0.6, "SGLang's CUDA-graph capture failed with an error that is not out-of-memory.")
                .fix(Fix::flag("--disable-cuda-graph", "", "run without graphs to see the underlying error"))
        }
        LogEvent::TgiPrefillTooLarge { tokens } => {
            Finding::new(Cause::ActivationPeak, 0.85, format!("TGI's warm-up prefill of {tokens} tokens did not fit after the weights: the prefill activation peak scales with these tokens."))
                .fact(format!("max_batch_prefill_tokens {tokens}"))
                .fix(Fix::flag("--max-batch-prefill-tokens", tokens / 2, "halves the warm-up prefill activation"))
                .fix(Fix::action("keep --max-input-length (or --max-input-tokens) below the new prefill limit"))
        }
        LogEvent::TgiTotalTokensTooLarge { total, prefill } => {
            Finding::new(Cause::KvCache, 0.85, format!("TGI could not hold {total} total tokens of KV cache with {prefill} prefill tokens."))
                .fix(Fix::flag("--max-batch-total-tokens", total / 2, "fewer tokens in the KV cache"))
                .fix(Fix::flag("--max-batch-prefill-tokens", prefill / 2, "less prefill activation"))
        }
        _ => Finding::new(Cause::Unknown, 0.2, "An engine message vramfit has no rule for."),
    }
}

/// SGLang's KV token pool had no free slots for the batch's tokens (schedule_batch.py
/// alloc_token_slots: the pool was sized at start-up; the scheduler admitted more tokens than it
/// holds, e.g. with a page size above 1, whose requests each take whole pages, or speculative
/// draft tokens the decode budget did not reserve).
fn sglang_pool(ctx: &Context, requested: Option<u64>, available: Option<u64>) -> Finding {
    let s = ctx.settings;
    // a person's sentence naming the message comes after it: the numbers are the message's own
    let numbers = |pick: fn(&LogEvent) -> Option<u64>| ctx.find(pick);
    let requested = requested.or_else(|| {
        numbers(|e| match e {
            LogEvent::SglangTokenPoolFull { requested, .. } => *requested,
            _ => None,
        })
    });
    let available = available.or_else(|| {
        numbers(|e| match e {
            LogEvent::SglangTokenPoolFull { available, .. } => *available,
            _ => None,
        })
    });
    let asked = match (requested, available) {
        (Some(r), Some(a)) => format!(" ({r} tokens asked, {a} free)"),
        (Some(r), None) => format!(" ({r} tokens asked)"),
        _ => String::new(),
    };
    let mut f = Finding::new(Cause::KvCache, 0.75, format!("SGLang's KV token pool had no free slots for this batch{asked}: the scheduler admitted more tokens than the pool sized at start-up holds."))
        .fact("SGLang's token-pool allocator (alloc_token_slots) failed");
    if let (Some(r), Some(a)) = (requested, available) {
        if a >= r {
            f = f.fact(format!("{a} free slots >= {r} asked: whole pages (--page-size above 1) or draft tokens took more than the tokens counted"));
        }
    }
    if s.page_size.is_some_and(|p| p > 1) {
        f = f.fix(Fix::flag("--page-size", 1, "token-granular pages: a request no longer rounds up to whole pages the pool does not have"));
    }
    f = f.fix(Fix::flag(
        "--max-running-requests",
        s.max_running_requests
            .map_or(64, |n| pow2_floor(n / 2).max(1)),
        "fewer requests in flight leave the pool headroom",
    ));
    match s.mem_fraction_static {
        Some(m) if m < 0.93 => f.fix(Fix::flag(
            "--mem-fraction-static",
            format!("{:.2}", m + 0.03),
            format!("a larger pool (now {m:.2}), if activations keep their room"),
        )),
        _ => f,
    }
}

pub(crate) fn host(ctx: &Context) -> Finding {
    let e = &ctx.events[ctx.at].event;
    // vLLM's own start-up check: the CPU swap space (swap_space GiB per GPU) may take at most
    // 0.7 of the host's RAM (config.py _verify_cpu_swap_space); a value under its warning line
    // (0.4) per GPU fits
    if let LogEvent::VllmSwapTooLarge { swap, total } = e {
        let tp = ctx.settings.tensor_parallel_size.unwrap_or(1).max(1);
        let fits = (0.4 * *total as f64 / tp as f64 / GIB as f64).floor() as u64;
        return Finding::new(Cause::HostMemory, 0.9, format!("vLLM refused to start: its CPU swap space ({}) would take more than 0.7 of the host's {} of RAM (config.py). Host memory, not the GPU, is the limit.", fmt_bytes(*swap), fmt_bytes(*total)))
            .fact(format!("{} swap > 0.7 x {} host RAM", fmt_bytes(*swap), fmt_bytes(*total)))
            .fix(Fix::flag("--swap-space", fits, format!("{fits} GiB per GPU stays under 0.4 of the host's RAM (0 disables swapping, which only matters for n > 1 / beam search)")))
            .fix(Fix::action("or run on a host (container) with more RAM"));
    }
    if matches!(e, LogEvent::PinnedHostOom) {
        return Finding::new(Cause::HostMemory, 0.8, "PyTorch's DataLoader could not pin (page-lock) a batch in host RAM: a CUDA out-of-memory in its pin-memory thread is cudaHostAlloc failing (torch/utils/data/_utils/pin_memory.py), not the GPU.")
            .fact("the out-of-memory was raised in the DataLoader's pin-memory thread")
            .fix(Fix::action("DataLoader(pin_memory=False), or fewer workers / a smaller prefetch_factor so fewer pinned batches are held"))
            .fix(Fix::action("add host RAM; under WSL2 raise its memory limit (.wslconfig), which also bounds pinned memory"));
    }
    // a bare kill on a unified-memory device (Jetson) with nothing telling that loading was
    // over: the GPU's memory is that RAM, pinned, so the model does not fit the device
    let bare_kill = matches!(
        e,
        LogEvent::HostKilled(HostKill::Sigkill | HostKill::Exit137)
    );
    let loaded = ctx
        .phase()
        .is_some_and(|(p, _)| p != crate::events::Phase::WeightLoading);
    if bare_kill
        && !loaded
        && ctx
            .find(|e| matches!(e, LogEvent::UnifiedMemoryDevice).then_some(()))
            .is_some()
    {
        let mut f = weights(ctx, "The process was killed while loading on a unified-memory device (Jetson/Tegra): GPU allocations there come from the same RAM and are pinned, so swap does not help; the model does not fit the device's memory.".to_string());
        f.confidence = 0.5;
        return f.fact("a kill (SIGKILL) on a unified-memory device, before loading finished");
    }
    let (conf, what) = match e {
        LogEvent::HostAllocFailed { requested: Some(b) } => (
            0.9,
            format!("A host (CPU RAM) allocation of {} failed.", fmt_bytes(*b)),
        ),
        LogEvent::HostAllocFailed { requested: None } => {
            (0.85, "A host (CPU RAM) allocation failed.".to_string())
        }
        LogEvent::HostKilled(HostKill::OomKiller { memcg: true }) => (
            0.9,
            "The kernel's OOM killer ended the process at its memory cgroup (container) limit."
                .to_string(),
        ),
        LogEvent::HostKilled(HostKill::OomKiller { memcg: false }) => (
            0.9,
            "The kernel's OOM killer ended the process: the host ran out of RAM.".to_string(),
        ),
        LogEvent::HostKilled(HostKill::Kubernetes) => (
            0.9,
            "Kubernetes reports OOMKilled: the container exceeded its memory limit.".to_string(),
        ),
        LogEvent::HostKilled(HostKill::Ray) => (
            0.85,
            "Ray reports a worker killed by SIGKILL, which it attributes to the OOM killer."
                .to_string(),
        ),
        LogEvent::HostKilled(HostKill::Described) => (
            0.6,
            "The report describes the OOM killer ending processes: host RAM ran out.".to_string(),
        ),
        LogEvent::HostKilled(_) => (
            0.6,
            "The process was killed with SIGKILL (exit 137), which is what the OOM killer sends."
                .to_string(),
        ),
        LogEvent::OllamaSystemMemory {
            required,
            available,
        } => (0.85, format!("Ollama refused to load: the part of the model it keeps in system RAM needs {} but only {} (free RAM + swap) is available (llm/server.go). Host memory, not the GPU, is short by {}.", fmt_bytes(*required), fmt_bytes(*available), fmt_bytes(required.saturating_sub(*available)))),
        _ => (0.5, "Host memory ran out.".to_string()),
    };
    let mut f = Finding::new(Cause::HostMemory, conf, what);
    if matches!(
        e,
        LogEvent::HostKilled(HostKill::OomKiller { memcg: true } | HostKill::Kubernetes)
    ) {
        f = f.fix(Fix::action(
            "raise the container's memory limit (resources.limits.memory)",
        ));
    }
    match ctx.engine {
        Engine::Vllm => f
            .fix(Fix::flag("--max-parallel-loading-workers", 1, "load checkpoint shards one worker at a time"))
            .fix(Fix::flag("MAX_JOBS", 4, "fewer parallel compile jobs on first start (torch.compile/kernels)"))
            .fix(Fix::action("use safetensors checkpoints (memory-mapped, not copied into RAM)")),
        Engine::Ollama => {
            let short = match e {
                LogEvent::OllamaSystemMemory { required, available } => required.saturating_sub(*available),
                _ => 0,
            };
            let f = if short > 0 {
                f.fact(format!("short by {}", fmt_bytes(short)))
                    .fix(Fix::action(format!("free at least {} of RAM (close applications, add swap), or pick a model/quant at least {} smaller", fmt_bytes(short), fmt_bytes(short))))
            } else {
                f
            };
            f.fix(Fix::flag("OLLAMA_MAX_LOADED_MODELS", 1, "models loaded earlier stay in memory for OLLAMA_KEEP_ALIVE (5 min); keep one at a time"))
                .fix(Fix::flag("OLLAMA_NUM_PARALLEL", 1, "each parallel slot adds its own context to the KV cache"))
        }
        Engine::LlamaCpp => {
            let f = match ctx.settings.n_gpu_layers {
                Some(n) if (0..99).contains(&n) => f.fix(Fix::flag("-ngl", 99, "keep every layer on the GPU so less stays in RAM")),
                _ => f,
            };
            f.fix(Fix::action("use a smaller quant; keep mmap on (no --no-mmap) so weights page from disk"))
        }
        _ => f
            .fix(Fix::action("load with low_cpu_mem_usage=True / device_map=\"auto\" so weights go to the GPU shard by shard"))
            .fix(Fix::action("add RAM or swap (page file on Windows)")),
    }
}

/// /dev/shm is a tmpfs in host RAM, capped at 64 MB in a Docker container unless --shm-size or
/// --ipc=host says otherwise (docker run reference); NCCL puts one segment per local peer there
/// (nccl src/transport/shm.cc, "Error while creating shared memory segment"), PyTorch's
/// DataLoader its worker batches: a host-memory limit, GPU memory is not involved.
pub(crate) fn shared_memory() -> Finding {
    Finding::new(Cause::HostMemory, 0.75, "The host's shared memory (/dev/shm, part of host RAM) could not hold a segment: a container's shm is 64 MB unless raised; GPU memory is not involved.")
        .fact("/dev/shm is a tmpfs in host RAM")
        .fix(Fix::action("run the container with --shm-size=1g (or --ipc=host); on Kubernetes mount an emptyDir with medium: Memory at /dev/shm"))
}

pub(crate) fn not_oom(kind: NotOomKind) -> Finding {
    let (summary, fix) = match kind {
        NotOomKind::IllegalMemoryAccess => ("An illegal memory access is a kernel bug or bad input, not a lack of memory.", Fix::flag("CUDA_LAUNCH_BLOCKING", 1, "find the failing kernel; then update the engine or driver")),
        NotOomKind::Nccl => ("An NCCL (multi-GPU communication) error, not a lack of GPU memory.", Fix::flag("NCCL_DEBUG", "INFO", "shows which link or peer failed")),
        NotOomKind::StreamCapture => ("An operation not allowed during CUDA-graph capture failed: a capture bug, not a lack of memory.", Fix::flag("--enforce-eager", "", "run without CUDA graphs")),
        NotOomKind::SharedMemory => return shared_memory(),
        NotOomKind::DeviceAssert => ("A device-side assert (e.g. a token id out of range), not a lack of memory.", Fix::flag("CUDA_LAUNCH_BLOCKING", 1, "locate the assert")),
        NotOomKind::DeviceLost => ("The GPU stopped responding (Xid / fallen off the bus): a hardware, power or driver fault, not a lack of memory.", Fix::action("check `dmesg` for NVRM Xid errors, power and cooling; reset the GPU")),
        NotOomKind::AddressSpace => ("A reservation of virtual address space failed (CUDA VMM pool or memory pool), which the driver reports as out of memory while device memory is free: common under Windows WDDM/WSL.", Fix::flag("GGML_CUDA_NO_VMM", "ON", "llama.cpp: build without the VMM pool (cmake -DGGML_CUDA_NO_VMM=ON); other stacks: raise the Windows page file / avoid creating many memory pools")),
        NotOomKind::BufferLimit => ("One buffer was larger than the graphics API allows in a single allocation (Vulkan maxMemoryAllocationSize, Metal maxBufferLength as MLX and MPS enforce it, Level Zero's 4 GB): a per-buffer limit, not a lack of memory.", Fix::action("make the largest single buffer smaller: a smaller batch, chunk or context (llama.cpp: -ub/-b, and newer builds split weight buffers; MLX/MPS: process the input in pieces), or another backend (CUDA/ROCm)")),
        NotOomKind::GgmlContextPool => ("ggml's fixed-size context pool for tensor metadata overflowed: a llama.cpp bug in the build in use, not GPU memory.", Fix::action("update llama.cpp (or llama-cpp-python) to a release with the fix")),
        NotOomKind::NoGpuBuild => ("A library was built without GPU support (bitsandbytes compiled without it, or a CPU-only PyTorch): it sees no GPU, so it places the model on the CPU and reports too little GPU memory. Not a lack of memory.", Fix::action("install the CUDA (or ROCm) build of PyTorch and of bitsandbytes for this platform, then check torch.cuda.is_available()")),
        NotOomKind::PinnedFallback => ("ggml could not get pinned (page-locked) host memory and fell back to ordinary memory: a warning about upload speed, not the failure.", Fix::action("look for the error after this warning; pinned memory is limited by the driver (and by WSL)")),
        NotOomKind::OnChip => ("One kernel asked for more on-chip memory than the hardware has (GPU shared memory per block, a TPU core's SMEM/VMEM), at compile or launch time: a kernel configuration limit, not device memory.", Fix::action("use a build whose kernel fits this hardware (smaller block sizes / num_stages), or a shape that compiles smaller kernels (a shorter max length); more device memory does not help")),
        NotOomKind::ResourceCount => ("Metal's limit on the number of live buffers was reached (a count, not bytes): MLX keeps freed buffers in its cache, and many small ones exhaust the count while memory is free.", Fix::action("free the buffer cache between requests (mx.clear_cache(), or a cache limit with mx.set_cache_limit) or upgrade mlx/mlx-lm to a release that releases buffers; a smaller model or context does not help")),
        // ROCm/rocm-systems PR 7786: hipMemCreate held one dmabuf fd per handle on ROCm 7.14
        NotOomKind::DescriptorLimit => ("Each virtual-memory allocation handle (hipMemCreate/cuMemCreate) kept a file descriptor, and the process's open-file limit ran out: the runtime reports that as out of memory while the VRAM is free.", Fix::action("raise the open-file limit (ulimit -n 65536, or LimitNOFILE in the service unit) or use a runtime that keeps one descriptor per pool (ROCm with rocm-systems PR 7786); more VRAM does not help")),
        NotOomKind::DeviceSelection => ("The report says the failure comes only with one device index (the model on a GPU other than cuda:0) or one library version: cuBLAS creates its handle on the current device, and placing a model on cuda:N without making N current fails there whatever memory is free. Which device, not how much memory.", Fix::action("make the wanted card the only visible one (CUDA_VISIBLE_DEVICES=<its index>) and use cuda:0 in the program, or call torch.cuda.set_device(N) before loading; or change the torch version")),
        NotOomKind::InvalidArgument => ("A CUDA call rejected its arguments (invalid argument / invalid configuration): a kernel launched beyond the grid or block limits, or a bad size, at this shape. A bug or a kernel limit, not a lack of memory.", Fix::flag("CUDA_LAUNCH_BLOCKING", 1, "find the failing kernel; then update the engine, or stay below the shape (context, batch) that triggers it")),
        NotOomKind::ProfilingAssertEqual => ("vLLM's profiling assertion fired with identical free memory before and after: a vLLM bug (fixed by PR #33358), not another process and not a lack of memory.", Fix::action("upgrade vLLM to a release with PR #33358")),
    };
    Finding::new(Cause::NotOom, 0.75, summary).fix(fix)
}

/// SGLang's static pool takes mem_fraction_static x total for weights and KV (sglang/srt/
/// server_args.py, --mem-fraction-static: "the fraction of the memory used for static
/// allocation (model weights and KV cache memory pool). Use a smaller value if you see
/// out-of-memory errors"); activations, CUDA graphs, NCCL and the context must fit in the
/// rest. When the process already holds its whole pool and the request does not fit in what is
/// left, the fraction left too little outside the pool: lower it by what was missing. The 0.9
/// floor (under 10% of the GPU outside the pool) is above the default SGLang computes per GPU
/// and model (0.828 for Qwen3-32B on an H100, sglang#29092); it was written from one report
/// (srt-slurm-172) and is not yet judged on a report it was not written from.
pub(crate) fn sglang_static_share(ctx: &Context, t: &TorchOom, head: &str) -> Option<Finding> {
    let m = ctx.settings.mem_fraction_static?;
    let (q, total, free) = (t.requested?, t.total?, t.free?);
    let mine = t.this_process.unwrap_or(total.saturating_sub(free));
    if ctx.engine != Engine::Sglang || m < 0.9 || q <= free || (mine as f64) < m * total as f64 {
        return None;
    }
    let outside = ((1.0 - m) * total as f64) as u64;
    let missing = (q - free) as f64 / total as f64;
    let next = m - ((missing * 100.0).ceil() + 1.0) / 100.0;
    Some(
        Finding::new(Cause::OtherProcesses, 0.6, format!("{head}: SGLang's static pool takes mem_fraction_static {m:.2} of the GPU, leaving {} outside it for activations, CUDA graphs and communication buffers, and that share ran out (the fraction is set too high for this workload).", fmt_bytes(outside)))
            .fact(format!("this process {} >= mem_fraction_static {m:.2} x total {}", fmt_bytes(mine), fmt_bytes(total)))
            .fact(format!("requested {} > free {}: {} missing", fmt_bytes(q), fmt_bytes(free), fmt_bytes(q - free)))
            .fix(Fix::flag("--mem-fraction-static", format!("{next:.2}"), format!("{m:.2} minus the missing {:.1}% of the GPU and a 1% margin", missing * 100.0))),
    )
}
