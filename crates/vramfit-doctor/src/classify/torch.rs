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

pub(crate) use super::phase::by_phase;
use super::{engines, Cause, Context, Finding};
use crate::events::{LogEvent, Phase, TorchOom};
use crate::fixes::{pow2_floor, vllm_util_for_free, Fix};
use crate::settings::Engine;

/// Unallocated cache below this share of the GPU is allocator noise, not fragmentation.
const FRAGMENTATION_MIN_SHARE: f64 = 0.02;
/// Free memory must exceed the request by this much (or 2% of the GPU) to call the OOM odd.
const FREE_SLACK: u64 = 512 * MIB;
/// With no total printed, one request this large exceeds the memory of nearly every GPU in use
/// (and any single weight or KV tensor, which engines allocate per layer).
const HUGE_REQUEST: u64 = 32 * GIB;
/// No device has a petabyte: a request at least this large is a corrupted size.
const CORRUPT_REQUEST: u64 = 1 << 50;
/// The CUDA context and library handles of a process, outside PyTorch's reservation
/// (~300-500 MiB on current drivers; vllm/utils memory profiling counts it as non-torch).
const CONTEXT_BYTES: u64 = 512 * MIB;

/// `free` is the device's free memory when the message prints it: the fix's reason states the
/// comparison that holds (reserved-unallocated alone, or with what the device still had free).
fn expandable(u: u64, q: u64, free: Option<u64>) -> Fix {
    let why = match free {
        Some(f) if u < q => format!(
            "free {} + reserved but unallocated {} = {} >= {} requested",
            fmt_bytes(f),
            fmt_bytes(u),
            fmt_bytes(f.saturating_add(u)),
            fmt_bytes(q)
        ),
        _ => format!(
            "{} reserved but unallocated >= {} requested",
            fmt_bytes(u),
            fmt_bytes(q)
        ),
    };
    Fix::flag(
        "PYTORCH_CUDA_ALLOC_CONF",
        "expandable_segments:True",
        format!("{why}: expandable segments let the cache grow in place instead of needing a new contiguous block"),
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
    // Rule 0: no device has a petabyte; a request that size is a corrupted size (an unsigned
    // wrap of a negative shape, a length read from a failed collective), not a shortage
    if q >= CORRUPT_REQUEST {
        return Finding::new(Cause::NotOom, 0.7, format!("{head}: no device has memory of that order, so the size itself is wrong (a negative or corrupted shape, often after a failed collective or a timeout): not a lack of memory."))
            .fact(format!("requested {} >= 1 PiB", fmt_bytes(q)))
            .fix(Fix::action("look at the error before this one (an NCCL timeout, a failed collective) or the shape computation of the failing call"));
    }
    // Rule 0b: the device PyTorch sees is less than half the VRAM the kernel driver reported
    // at boot: the runtime allocates from another pool (an APU's GTT window instead of its
    // BIOS carve-out), so the limit hit is that pool's size, not memory in use. (Added after
    // reading holdout8.)
    if let Some(vram) = ctx.find(|e| match e {
        LogEvent::DriverVram { bytes } => Some(*bytes),
        _ => None,
    }) {
        if total > 0 && total.saturating_mul(2) < vram {
            return Finding::new(Cause::NotOom, 0.6, format!("{head}: PyTorch sees a {} device, but the kernel driver reported {} of VRAM: the runtime is allocating from a smaller pool (on an APU, the GTT window rather than the VRAM carve-out), so the limit is which pool it uses, not memory in use.", fmt_bytes(total), fmt_bytes(vram)))
                .fact(format!("device total {} < half of the driver's {} VRAM", fmt_bytes(total), fmt_bytes(vram)))
                .fix(Fix::action("make the runtime use the VRAM pool (on Strix Halo/APUs: a ROCm build that allocates from VRAM, or a small BIOS carve-out with a larger GTT via amdgpu.gttsize / ttm.pages_limit)"));
        }
    }
    // Rule 1: one tensor larger than the device (or, with no total printed, larger than any
    // device people run this on) is an activation that scales with the input: a shape bug or
    // attention without a memory-efficient kernel.
    if (total > 0 && q > total) || (total == 0 && q >= HUGE_REQUEST) {
        let than = if total > 0 {
            format!("more than the whole GPU ({})", fmt_bytes(total))
        } else {
            format!("more than {} in one tensor", fmt_bytes(HUGE_REQUEST))
        };
        return Finding::new(
            Cause::ActivationPeak,
            0.75,
            format!("{head}, {than}: one tensor this large is an activation that grows with the input (batch x sequence, image size, or attention without a memory-efficient kernel), not something any memory setting can fit."),
        )
        .fact(format!("requested {} vs total {}", fmt_bytes(q), if total > 0 { fmt_bytes(total) } else { "not printed".into() }))
        .fix(Fix::action("reduce the batch size, the sequence length or the image resolution of the failing call"))
        .fix(Fix::flag("attn_implementation", "sdpa", "a memory-efficient attention kernel instead of the eager attention matrix (transformers)"));
    }
    // Rule 2: Level Zero (XPU) refuses any single allocation over 4 GiB unless relaxed
    // allocation limits are enabled (IPEX/torch-xpu-ops; intel-extension-for-pytorch#629).
    if t.backend == "XPU"
        && q >= 4 * GIB
        && t.allocated.unwrap_or(0) < q
        && (total == 0 || q < total)
    {
        return Finding::new(Cause::NotOom, 0.7, format!("{head} on an Intel GPU: Level Zero limits one allocation to 4 GiB, whatever is free. This is a per-buffer limit, not a lack of memory."))
            .fact(format!("requested {} > 4 GiB single-allocation limit", fmt_bytes(q)))
            .fix(Fix::action("set UR_L0_USE_RELAXED_ALLOCATION_LIMITS=1 (and build with -ze-opt-greater-than-4GB-buffer-required), or split the tensor"));
    }
    // Rule 2b: other tenants holding half the device or more (and four times this process's
    // unallocated cache) are the shortage, whatever that cache's fragmentation: it is a
    // property of this process's share, and that share is the smaller part.
    let u = t.reserved_unallocated.unwrap_or(0);
    if let Some(f) = tenants_dominate(ctx, t, &head, q, u) {
        return f;
    }
    // Rule 3: fragmentation, from the message's own arithmetic (research/torch_snapshot.md
    // §13; c10/cuda/CUDACachingAllocator.cpp frees cached blocks and retries before raising,
    // so what is still reserved-but-unallocated sits in partly used segments):
    // - reserved-but-unallocated at least twice the request, or
    // - free alone short of the request while free + reserved-unallocated covers it,
    // and in both cases more than allocator rounding noise (2% of the device).
    if let Some(u) = t.reserved_unallocated {
        // a person's own sentence that the memory fragments (not PyTorch's hint) says the
        // unallocated cache is no rounding noise (added after reading holdout6)
        let said = ctx
            .find(|e| matches!(e, LogEvent::FragmentationDescribed { .. }).then_some(()))
            .is_some();
        let noise = if said {
            0
        } else {
            (total as f64 * FRAGMENTATION_MIN_SHARE) as u64
        };
        let free = t.free.unwrap_or(0);
        let strong = u >= q.saturating_mul(2) && u >= noise;
        let covers = t.free.is_some() && free < q && free.saturating_add(u) >= q && u >= noise;
        if total > 0 && (strong || covers) {
            let conf = if strong { 0.8 } else { 0.7 };
            let rule = if strong {
                format!(
                    "{} reserved but unallocated >= 2 x {} requested",
                    fmt_bytes(u),
                    fmt_bytes(q)
                )
            } else {
                format!(
                    "free {} < {} requested <= free + reserved-unallocated {}",
                    fmt_bytes(free),
                    fmt_bytes(q),
                    fmt_bytes(free + u)
                )
            };
            let mut f = Finding::new(
                Cause::Fragmentation,
                conf,
                format!("{head} while PyTorch held {} reserved but unallocated: the memory exists inside PyTorch's cache, split into blocks too small for this request (fragmentation).", fmt_bytes(u)),
            )
            .fact(rule)
            .fact(format!("{} reserved but unallocated is {:.1}% of the {} GPU", fmt_bytes(u), 100.0 * u as f64 / total as f64, fmt_bytes(total)));
            if ctx.settings.expandable_segments == Some(true) {
                f = f.fix(Fix::action("expandable_segments is already on: free cached blocks between phases (torch.cuda.empty_cache()) or lower the peak"));
            } else {
                f = f.fix(expandable(u, q, t.free));
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
    // Rule 4: other tenants named in the message's process list.
    let listed = foreign(t);
    if let Some((others, list)) = &listed {
        if *others >= GIB.max((total as f64 * 0.1) as u64) {
            return other_processes(ctx, t, &head, *others, list);
        }
    }
    // Rule 4b: SGLang's budget arithmetic (the share outside its static pool)
    if let Some(f) = engines::sglang_static_share(ctx, t, &head) {
        return f;
    }
    // Rule 5a: with this process's own use printed (NVML's per-process figure, c10
    // reportProcessMemoryInfo), total - this process - free is exactly what others hold: when
    // that is a quarter of the device or more, the message's arithmetic decides before the
    // phase does (less is a desktop's display or a monitoring tool's context, next to which
    // the stage that failed is the better answer; rule 5b still weighs it after the phase).
    if let Some(f) = computed_others(ctx, t, &head, q, listed.is_none(), true) {
        return f;
    }
    // Rule 5: what the process was doing decides (sampler warm-up, graphs, profiling, load)
    let phase = ctx.phase().map(|(p, _)| p);
    if phase.is_some_and(|p| {
        !matches!(p, Phase::Serving | Phase::LongRunning | Phase::FirstRequest) && !p.is_generic()
    }) {
        return annotate(by_phase(ctx, &head), t);
    }
    // Rule 5b: the same estimated from PyTorch's reservation and a CUDA context (after the
    // phase: during start-up an engine's memory outside PyTorch's cache is not another tenant)
    if let Some(f) = computed_others(ctx, t, &head, q, listed.is_none(), false) {
        return f;
    }
    // Rule 6: a request of an eighth of the device or more is an activation: weights and KV
    // caches are allocated per layer, in pieces far smaller than that (a 70B model's largest
    // weight, the embedding, is ~3% of an 80 GB GPU).
    if total > 0 && q >= total / 8 {
        return Finding::new(
            Cause::ActivationPeak,
            0.65,
            format!("{head}, {:.0}% of the whole GPU in one tensor: an activation (attention scores, logits or a batch of intermediates) that grows with the input, not the weights or the cache.", 100.0 * q as f64 / total as f64),
        )
        .fact(format!("requested {} >= 1/8 of total {}", fmt_bytes(q), fmt_bytes(total)))
        .fix(Fix::action("reduce the batch size or the sequence length (image size) of the failing call"))
        .fix(Fix::flag("attn_implementation", "sdpa", "memory-efficient attention instead of materialised attention scores (transformers)"))
        .fix(Fix::flag("--max-num-batched-tokens", pow2_floor(ctx.settings.max_num_batched_tokens.unwrap_or_else(|| super::engines::vllm_default_batched(ctx).0) / 2), "a smaller prefill chunk bounds the activation (vLLM)"));
    }
    annotate(by_phase(ctx, &head), t)
}

/// Other tenants from the message's arithmetic when it lists no processes: total - this
/// process - free. `exact`: only with this process's use printed, and a quarter of the device
/// at least; otherwise PyTorch's reservation plus a CUDA context stands for it, and 15%.
fn computed_others(
    ctx: &Context,
    t: &TorchOom,
    head: &str,
    q: u64,
    unlisted: bool,
    exact: bool,
) -> Option<Finding> {
    if !unlisted || (exact && t.this_process.is_none()) {
        return None;
    }
    let (tot, fr) = (t.total?, t.free?);
    let mine = t
        .this_process
        .or_else(|| t.reserved().map(|r| r + CONTEXT_BYTES))?;
    let others = tot.saturating_sub(mine).saturating_sub(fr);
    // a single request of an eighth of the device that is also larger than what the others
    // hold is the activation of rule 6: it is the dominant term
    let dominant = q >= tot / 8 && q >= others;
    let share = if exact { 0.25 } else { 0.15 };
    if others < GIB.max((tot as f64 * share) as u64) || dominant {
        return None;
    }
    Some(other_processes(ctx, t, head, others, &[]).fact(format!(
        "total {} - this process {} - free {} = {} held outside it",
        fmt_bytes(tot),
        fmt_bytes(mine),
        fmt_bytes(fr),
        fmt_bytes(others)
    )))
}

/// Other tenants (listed, or total - this process - free) hold half the GPU or more and four
/// times this process's unallocated cache `u`. (Added after reading holdout4's misses.)
fn tenants_dominate(ctx: &Context, t: &TorchOom, head: &str, q: u64, u: u64) -> Option<Finding> {
    let total = t.total?;
    let big = |o: u64| o >= total / 2 && o >= u.saturating_mul(4);
    if let Some((others, list)) = foreign(t) {
        return big(others).then(|| other_processes(ctx, t, head, others, &list));
    }
    let f = computed_others(ctx, t, head, q, true, false)?;
    let mine = t
        .this_process
        .or_else(|| t.reserved().map(|r| r + CONTEXT_BYTES))?;
    let others = total.saturating_sub(mine).saturating_sub(t.free?);
    big(others).then_some(f)
}

/// Add the message's numbers to a phase-based finding.
fn annotate(mut f: Finding, t: &TorchOom) -> Finding {
    if let (Some(p), Some(a)) = (t.private_pools, t.allocated) {
        if p > 0 {
            f = f.fact(format!(
                "{} of the {} allocated sits in CUDA-graph private pools",
                fmt_bytes(p),
                fmt_bytes(a)
            ));
        }
    }
    if let (Some(free), Some(total), Some(q)) = (t.free, t.total, t.requested) {
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
    let names = if names.is_empty() {
        vec!["the message does not list them".to_string()]
    } else {
        names
    };
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
            // the same arithmetic as CUDA's rule 6: one request of an eighth of the allowance
            // is an activation (weights and caches are allocated per layer, far smaller)
            if *max_allowed > 0 && q >= max_allowed / 8 {
                return Finding::new(Cause::ActivationPeak, 0.6, format!("{head}: one request of {:.0}% of the allowance while this process's own tensors fill it: an activation that grows with the input (batch, resolution, sequence).", 100.0 * q as f64 / *max_allowed as f64))
                    .fact(format!("requested {} >= 1/8 of {} allowed", fmt_bytes(q), fmt_bytes(*max_allowed)))
                    .fix(Fix::action("reduce the batch size, the resolution or the sequence length of the failing call"));
            }
            let mut f = by_phase(
                ctx,
                &format!("{head}: this process's own tensors fill the allowance"),
            );
            f.facts.push(format!(
                "MPS allocated {} of {} allowed",
                fmt_bytes(*allocated),
                fmt_bytes(*max_allowed)
            ));
            f
        }
        LogEvent::CudaMallocAsyncOom {
            allocated,
            requested,
            limit,
            free,
        } => {
            let head = "PyTorch (cudaMallocAsync backend) could not allocate".to_string();
            // an engine start-up stage decides first: cudaMallocAsync's pool keeps freed blocks
            // (cudaMemPoolAttrReleaseThreshold), so limit - allocated - free is not all others'
            let stage = ctx
                .phase()
                .is_some_and(|(p, _)| p != Phase::Serving && !p.is_generic());
            if let (Some(a), Some(q), Some(l), Some(fr)) = (allocated, requested, limit, free) {
                if a + q <= *l && *fr < *q && !stage {
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
        LogEvent::DeviceOom { api }
            if api == "Metal" && matches!(ctx.engine, Engine::LlamaCpp | Engine::Ollama) =>
        {
            super::llama::metal(ctx)
        }
        LogEvent::DeviceOom { api } => {
            let head =
                format!("A {api} allocation ran out of device memory (no numbers in the message)");
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
