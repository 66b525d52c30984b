//! Rules for PyTorch allocator failures: the numbers of the message first (fragmentation, free
//! memory, other processes), then what the process was doing.
//!
//! Thresholds (research/torch_snapshot.md §13):
//! - fragmentation needs the cached-but-unallocated memory to cover the request and to be more
//!   than noise: PyTorch prints the expandable_segments hint on every OOM, and a few hundred MiB
//!   unallocated on a large GPU is the normal rounding of its 2 MiB / 20 MiB blocks
//!   (c10/cuda/CUDACachingAllocator.cpp kRoundLarge, kLargeBuffer).
//! - "free >= requested" is not a capacity shortage only with slack: free is device-wide and
//!   other libraries (cuBLAS workspaces, NCCL) allocate between the failure and the report.

use vramfit_model::units::{fmt_bytes, GIB, MIB};

use super::{engines, Cause, Context, Finding};
use crate::events::{LogEvent, Phase, TorchOom};
use crate::fixes::{pow2_floor, vllm_util_for_free, Fix};
use crate::settings::Engine;

/// Unallocated cache below this share of the GPU is allocator noise, not fragmentation.
const FRAGMENTATION_MIN_SHARE: f64 = 0.02;
/// Free memory must exceed the request by this much (or 2% of the GPU) to call the OOM odd.
const FREE_SLACK: u64 = 512 * MIB;

fn expandable(u: u64, q: u64) -> Fix {
    Fix::flag(
        "PYTORCH_CUDA_ALLOC_CONF",
        "expandable_segments:True",
        format!(
            "{} reserved but unallocated >= {} requested: expandable segments let the cache grow in place instead of needing a new contiguous block",
            fmt_bytes(u),
            fmt_bytes(q)
        ),
    )
}

/// Memory other processes hold, per the process list in the message. With
/// `Including non-PyTorch memory, this process has X` every `Process N` is another process;
/// without it (containers: PID namespaces) our own process is one of the `Process N` lines, the
/// one closest above what PyTorch reserved.
pub(crate) fn foreign(t: &TorchOom) -> Option<(u64, Vec<(u64, u64)>)> {
    if t.processes.is_empty() {
        return None;
    }
    if t.this_process.is_some() {
        let sum = t.processes.iter().map(|p| p.1).sum();
        return Some((sum, t.processes.clone()));
    }
    let reserved = t.reserved().unwrap_or(0);
    let own = t
        .processes
        .iter()
        .enumerate()
        .filter(|(_, p)| p.1 >= reserved)
        .min_by_key(|(_, p)| p.1)
        .or_else(|| t.processes.iter().enumerate().max_by_key(|(_, p)| p.1))
        .map(|(i, _)| i)?;
    let others: Vec<(u64, u64)> = t
        .processes
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != own)
        .map(|(_, p)| *p)
        .collect();
    Some((others.iter().map(|p| p.1).sum(), others))
}

pub(crate) fn caching_allocator(ctx: &Context, t: &TorchOom) -> Finding {
    let dev = t.gpu.map_or(String::new(), |g| format!(" on GPU {g}"));
    let Some(q) = t.requested else {
        return by_phase(ctx, "A CUDA out-of-memory error without numbers");
    };
    let head = format!("PyTorch failed to allocate {}{dev}", fmt_bytes(q));
    let total = t.total.unwrap_or(0);
    if total > 0 && q > total {
        return Finding::new(
            Cause::ActivationPeak,
            0.6,
            format!("{head}, more than the whole GPU ({}): one tensor this large is an activation that grows with the input (batch x sequence, or attention without a memory-efficient kernel), not something any memory setting can fit.", fmt_bytes(total)),
        )
        .fact(format!("requested {} > total {}", fmt_bytes(q), fmt_bytes(total)))
        .fix(Fix::action("reduce the batch size or the sequence length of the failing call"));
    }
    if let Some(u) = t.reserved_unallocated {
        let noise = (total as f64 * FRAGMENTATION_MIN_SHARE) as u64;
        let free = t.free.unwrap_or(0);
        let strong = u >= q && u >= noise;
        let weak = free < q && free + u >= q && total > 0 && u as f64 >= total as f64 * 0.05;
        if strong || weak {
            let conf = if strong { 0.8 } else { 0.6 };
            let mut f = Finding::new(
                Cause::Fragmentation,
                conf,
                format!("{head} while PyTorch held {} reserved but unallocated: the memory exists inside PyTorch's cache, split into blocks too small for this request (fragmentation).", fmt_bytes(u)),
            )
            .fact(format!("{} reserved but unallocated vs {} requested; {} free on the device", fmt_bytes(u), fmt_bytes(q), fmt_bytes(free)));
            if ctx.settings.expandable_segments == Some(true) {
                f = f.fix(Fix::action("expandable_segments is already on: free cached blocks between phases (torch.cuda.empty_cache()) or lower the peak"));
            } else {
                f = f.fix(expandable(u, q));
            }
            return f;
        }
    }
    if ctx
        .find(|e| matches!(e, LogEvent::VllmCudaGraphOomHint).then_some(()))
        .is_some()
    {
        return graphs(ctx, format!("{head} during vLLM's CUDA-graph capture (vLLM prints its VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS hint for this case): the graph memory estimate reserved less than the real capture needed."), 0.85, t);
    }
    if let Some(free) = t.free {
        let slack = FREE_SLACK.max((total as f64 * 0.02) as u64);
        if free >= q.saturating_add(slack) {
            let mut f = Finding::new(
                Cause::Unknown,
                0.4,
                format!("{head} although {} was free on the device: this is not a plain capacity shortage.", fmt_bytes(free)),
            )
            .fact(format!("free {} >= requested {} + slack", fmt_bytes(free), fmt_bytes(q)));
            if let Some(a) = t.allowed {
                f = f
                    .fact(format!("a per-process limit of {} is set", fmt_bytes(a)))
                    .fix(Fix::action(format!("raise torch.cuda.set_per_process_memory_fraction: the process may use only {}", fmt_bytes(a))));
            }
            return f
                .fix(Fix::flag("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", "avoids needing one contiguous block (reported to help on Windows/WDDM and unified-memory APUs)"))
                .fix(Fix::action("check MIG/vGPU limits and, on APUs, the GTT/TTM limits of the driver"));
        }
    }
    if let Some((others, list)) = foreign(t) {
        if others >= GIB.max((total as f64 * 0.1) as u64) {
            return other_processes(ctx, t, &head, others, &list);
        }
    }
    let mut f = by_phase(ctx, &head);
    if let (Some(p), Some(a)) = (t.private_pools, t.allocated) {
        if p > 0 {
            f = f.fact(format!(
                "{} of the {} allocated sits in CUDA-graph private pools",
                fmt_bytes(p),
                fmt_bytes(a)
            ));
        }
    }
    if let (Some(free), true) = (t.free, total > 0) {
        f = f.fact(format!(
            "{} free of {}; {} requested",
            fmt_bytes(free),
            fmt_bytes(total),
            fmt_bytes(q)
        ));
    }
    f
}

fn other_processes(
    ctx: &Context,
    t: &TorchOom,
    head: &str,
    others: u64,
    list: &[(u64, u64)],
) -> Finding {
    let names: Vec<String> = list
        .iter()
        .take(4)
        .map(|(pid, b)| format!("process {pid} holds {}", fmt_bytes(*b)))
        .collect();
    let mut f = Finding::new(
        Cause::OtherProcesses,
        0.75,
        format!(
            "{head}: other processes hold {} of this GPU ({}).",
            fmt_bytes(others),
            names.join(", ")
        ),
    )
    .fact(format!("other processes: {}", fmt_bytes(others)));
    if let (Some(total), Engine::Vllm) = (t.total, ctx.engine) {
        if let Some(u) = vllm_util_for_free(total.saturating_sub(others), total) {
            f = f.fix(Fix::flag(
                "--gpu-memory-utilization",
                format!("{u:.2}"),
                format!(
                    "{}: leaves their memory out of vLLM's budget",
                    names.join(", ")
                ),
            ));
        }
    }
    f.fix(Fix::action(format!(
        "stop or move the other processes ({})",
        names.join(", ")
    )))
}

pub(crate) fn graphs(ctx: &Context, summary: String, conf: f64, t: &TorchOom) -> Finding {
    let mut f = Finding::new(Cause::CudaGraphs, conf, summary);
    if let Some(p) = t.private_pools.filter(|p| *p > 0) {
        f = f.fact(format!("{} held in CUDA-graph private pools", fmt_bytes(p)));
    }
    engines::graph_fixes(ctx, f)
}

/// When the message carries no decisive numbers, what the process was doing decides.
pub(crate) fn by_phase(ctx: &Context, head: &str) -> Finding {
    let phase = ctx.phase().map(|(p, _)| p);
    let t = TorchOom::default();
    match phase {
        Some(Phase::CudaGraphCapture) => graphs(ctx, format!("{head} while capturing CUDA graphs: graph memory is allocated after the KV cache took its share, outside the budget in older engines."), 0.75, &t),
        Some(Phase::SamplerWarmup) => engines::sampler(ctx, format!("{head} in vLLM's sampler warm-up, which runs max_num_seqs dummy requests at once (logits of max_num_seqs x vocab in fp32)."), None),
        Some(Phase::Profiling) => engines::activation(ctx, format!("{head} in vLLM's profiling run, the forward pass at max_num_batched_tokens that sets the activation peak.")),
        Some(Phase::WeightLoading) => engines::weights(ctx, format!("{head} while loading the weights: the model does not fit on the GPUs given.")),
        Some(Phase::KvAllocation) => Finding::new(Cause::KvCache, 0.6, format!("{head} while allocating the KV cache.")).fix(Fix::action("lower the context length (max_model_len / -c) or the memory fraction given to the KV cache")),
        Some(Phase::ComputeReserve) => engines::activation(ctx, format!("{head} while reserving compute buffers.")),
        // vLLM sleep mode frees its weights/KV while asleep and maps the same sizes back on
        // wake_up (vllm/device_allocator/cumem.py); failing there means another process (the
        // colocated trainer) took that memory in the meantime.
        Some(Phase::WakeUp) => Finding::new(Cause::OtherProcesses, 0.7, format!("{head} while vLLM woke from sleep mode: the memory it released while asleep was taken by another process (a colocated trainer) before it could map it back."))
            .fix(Fix::flag("--gpu-memory-utilization", ctx.utilization().map_or("lower".to_string(), |u| format!("{:.2}", u - 0.1)), "a smaller vLLM share leaves the trainer its peak"))
            .fix(Fix::action("free the trainer's cached memory (torch.cuda.empty_cache()) before waking vLLM")),
        Some(Phase::Serving) | None => runtime(ctx, head),
    }
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
                (Engine::Ollama, _) => f.fix(Fix::flag("num_gpu", "fewer", "Ollama option: fewer layers on the GPU leaves room for the buffers (or set OLLAMA_GPU_OVERHEAD)")),
                (_, Some(n)) => f.fix(Fix::flag("-ngl", n - n / 8, format!("about 1/8 fewer GPU layers than {n}"))),
                _ => f.fix(Fix::flag("-ngl", "fewer", "fewer GPU layers leaves room for the buffers")),
            };
            f.fix(Fix::flag("-ub", pow2_floor(s.n_ubatch.unwrap_or(512) / 2).max(32), "a smaller micro-batch shrinks the workspaces"))
        }
        Engine::Vllm | Engine::Sglang | Engine::Tgi => {
            let mut f = Finding::new(Cause::Concurrency, 0.5, format!("{head} at run time: requests in flight (and their prefill/sampling buffers) needed more than the memory left outside the engine's budget."));
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
        _ => Finding::new(Cause::Concurrency, 0.45, format!("{head} while running: the batch being processed needs more than is left after the model."))
            .fix(Fix::action("lower the batch size (or the number of items processed at once)"))
            .fix(Fix::action("shorten the inputs, or use a memory-efficient attention kernel")),
    }
}

pub(crate) fn other_allocators(ctx: &Context) -> Finding {
    match &ctx.events[ctx.at].event {
        LogEvent::MpsOom {
            allocated,
            other,
            max_allowed,
            requested,
        } => {
            let q = requested.unwrap_or(0);
            let head = format!(
                "The MPS allocator refused {} (MPS allocated {}, other allocations {}, max allowed {})",
                fmt_bytes(q), fmt_bytes(*allocated), fmt_bytes(*other), fmt_bytes(*max_allowed)
            );
            if q > *max_allowed {
                return Finding::new(
                    Cause::ActivationPeak,
                    0.6,
                    format!("{head}: one tensor larger than the whole allowance."),
                )
                .fix(Fix::action(
                    "reduce the batch size or sequence length of the failing call",
                ));
            }
            if other >= allocated && (*other as f64) >= *max_allowed as f64 * 0.3 {
                return Finding::new(Cause::OtherProcesses, 0.7, format!("{head}: memory outside PyTorch's MPS pool (other apps, the OS, non-tensor buffers) takes most of the unified memory allowance."))
                    .fact(format!("other allocations {} >= MPS allocated {}", fmt_bytes(*other), fmt_bytes(*allocated)))
                    .fix(Fix::action(format!("close other applications: {} is held outside this process's tensors", fmt_bytes(*other))))
                    .fix(Fix::action("process smaller chunks; PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 only removes the guard and may swap or crash the system"));
            }
            Finding::new(Cause::Concurrency, 0.55, format!("{head}: this process's own tensors fill the allowance; the batch being processed is too large."))
                .fact(format!("MPS allocated {} of {} allowed", fmt_bytes(*allocated), fmt_bytes(*max_allowed)))
                .fix(Fix::action("lower the batch size (items processed at once)"))
        }
        LogEvent::CudaMallocAsyncOom {
            allocated,
            requested,
            limit,
            free,
        } => {
            let head = "PyTorch (cudaMallocAsync backend) could not allocate".to_string();
            if let (Some(a), Some(q), Some(l), Some(fr)) = (allocated, requested, limit, free) {
                if a + q <= *l && *fr < *q {
                    let others = l.saturating_sub(*a).saturating_sub(*fr);
                    return Finding::new(Cause::OtherProcesses, 0.65, format!("{head} {}: this process holds {} of a {} limit, yet only {} is free; about {} is held outside it.", fmt_bytes(*q), fmt_bytes(*a), fmt_bytes(*l), fmt_bytes(*fr), fmt_bytes(others)))
                        .fix(Fix::action("stop the other processes on this GPU"));
                }
                return by_phase(
                    ctx,
                    &format!(
                        "{head} {} with {} already allocated of a {} limit",
                        fmt_bytes(*q),
                        fmt_bytes(*a),
                        fmt_bytes(*l)
                    ),
                );
            }
            by_phase(ctx, &head)
        }
        _ => {
            // raw `CUDA error: out of memory`: memory taken outside the caching allocator
            if ctx.utilization().is_some_and(|u| u >= 0.95) {
                let u = ctx.utilization().unwrap_or(0.95);
                return Finding::new(Cause::OtherProcesses, 0.5, format!("A CUDA call outside PyTorch's allocator ran out of memory with gpu_memory_utilization {u:.2}: the pre-allocated pool left nothing for the CUDA context, cuBLAS and NCCL workspaces."))
                    .fix(Fix::flag("--gpu-memory-utilization", format!("{:.2}", u - 0.05), "leave room outside the pool for non-PyTorch allocations"));
            }
            by_phase(ctx, "A CUDA call ran out of memory (no allocator numbers)")
        }
    }
}

pub(crate) fn fragmentation_described(u: Option<u64>) -> Finding {
    let mut f = Finding::new(
        Cause::Fragmentation,
        0.6,
        match u {
            Some(u) => format!("The report describes allocator fragmentation: {} reserved but unallocated while a large allocation failed.", fmt_bytes(u)),
            None => "The report describes allocator fragmentation (memory free in total but not in one block).".to_string(),
        },
    );
    if let Some(u) = u {
        f = f.fact(format!("{} reserved but unallocated", fmt_bytes(u)));
    }
    f.fix(Fix::flag(
        "PYTORCH_CUDA_ALLOC_CONF",
        "expandable_segments:True",
        "lets the cache grow segments in place instead of needing new contiguous blocks",
    ))
}
