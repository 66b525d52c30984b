//! Typed events read from a crash log, with the numbers each message carries.
//!
//! [`read_events`] walks the log once, line by line. Each line is offered to the readers of each
//! family (PyTorch allocator, vLLM/SGLang/TGI, llama.cpp/Ollama, the host and the orchestrator),
//! which return the events the line holds. PyTorch's OOM message is read from a window that may
//! span wrapped lines (consoles and issue pastes break it), everything else from its own line.

mod ggml;
mod keywords;
mod prose;
mod serving;
mod stacks;
mod system;
pub mod time;
mod torch;

use serde::Serialize;

pub use torch::TorchOom;

/// Lines longer than this are cut before matching (a hostile or binary "line" must not cost
/// more than a bounded amount of regex work); no engine message we read is longer.
pub const MAX_LINE_BYTES: usize = 16 * 1024;
/// At most this many events are kept; a log that repeats a message more often adds nothing.
pub const MAX_EVENTS: usize = 4096;

/// What the process was doing when a message was printed (from progress messages and from the
/// frames of a Python traceback).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// loading weights onto the device
    WeightLoading,
    /// vLLM's profiling forward pass at max_num_batched_tokens (activation peak)
    Profiling,
    /// vLLM V1's sampler warm-up over max_num_seqs dummy requests
    SamplerWarmup,
    /// allocating the KV cache
    KvAllocation,
    /// reserving llama.cpp compute (graph) buffers
    ComputeReserve,
    /// capturing CUDA graphs
    CudaGraphCapture,
    /// start-up finished; serving requests
    Serving,
    /// vLLM sleep mode waking up: re-mapping the memory it released while asleep
    WakeUp,
    /// the prefill of a long prompt (a person's sentence: "OOM during prefill")
    Prefill,
    /// after running for a while, memory having grown ("over time", "after hours")
    LongRunning,
    /// a forward pass of a plain PyTorch program (`in forward`, `in generate` frames)
    Forward,
    /// a training step's backward pass (`loss.backward()`, `in backward` frames)
    Backward,
    /// a training step's optimizer update (`optimizer.step()`, Adam's `exp_avg` frames): Adam
    /// allocates two fp32 moments per parameter at its first step (torch/optim/adam.py
    /// `_init_group`), so what fails there is the model states, not the activations
    OptimizerStep,
    /// the first request after start-up (derived from [`LogEvent::RequestStarted`] by the
    /// classifier, never read from a line): its prefill is the first forward pass over a real
    /// prompt, beyond what a warm-up measured
    FirstRequest,
}

impl Phase {
    /// Frames every PyTorch program has (forward, backward): they say what the innermost code
    /// was doing, but an engine's own stage frame in the same traceback says more.
    pub fn is_generic(self) -> bool {
        matches!(self, Phase::Forward | Phase::Backward)
    }
}

/// Which memory a person's sentence names as what grew or ran short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// the KV cache ("insufficient KV cache memory", "KV memory can grow")
    KvCache,
    /// a materialised attention score matrix (eager attention, O(n^2) mask)
    AttentionScores,
    /// memory held by other processes on the same GPU ("other VRAM consumers")
    OtherProcesses,
    /// the number of sequences run at once (num_return_sequences, too many requests)
    Batch,
    /// `from_pretrained(..., device_map="auto")` without `max_memory`: accelerate
    /// (utils/modeling.py get_max_memory) takes every GPU's whole free memory as its limit and
    /// fills the devices with weights up to it (added after reading holdout7)
    AutoDeviceMap,
    /// an earlier model or engine still holding the GPU: a restart fixes it, or it fails only
    /// when switching from one loaded model to another (added after reading holdout8; also
    /// holdout7's localai-1729)
    StaleModel,
    /// the activations of a forward pass named as what had no room (added after reading
    /// holdout8)
    Activations,
}

/// Which kind of llama.cpp buffer a `... buffer size = X MiB` line reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferKind {
    Model,
    Kv,
    Compute,
}

/// How the host (kernel, container runtime, supervisor) reported killing the process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostKill {
    /// dmesg `Out of memory: Killed process` / `oom-kill:`; `memcg` when a cgroup limit fired
    OomKiller { memcg: bool },
    /// Kubernetes `OOMKilled`
    Kubernetes,
    /// exit code 137 = 128 + SIGKILL
    Exit137,
    /// a bare `Killed` from the shell, or Ollama's `signal: killed`
    Sigkill,
    /// Ray: "killed by SIGKILL by OOM killer due to high memory usage"
    Ray,
    /// a person's sentence about the OOM killer
    Described,
}

/// Failures that look like memory trouble but are not a lack of GPU capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotOomKind {
    IllegalMemoryAccess,
    Nccl,
    StreamCapture,
    /// the host's shared memory (/dev/shm, a tmpfs in host RAM) is full or capped: a
    /// container's default 64 MB shm, NCCL's per-rank segments (classified as host memory)
    SharedMemory,
    DeviceAssert,
    /// vLLM's profiling assertion when free memory did not change (vLLM PR #33358)
    ProfilingAssertEqual,
    /// the GPU stopped answering (NVIDIA Xid 79 "fallen off the bus")
    DeviceLost,
    /// a virtual-address reservation failed (CUDA VMM pool `cuMemAddressReserve`, memory-pool
    /// creation on Windows/WSL): reported as out of memory while device memory is free
    AddressSpace,
    /// one buffer larger than the API allows (Vulkan maxMemoryAllocationSize, Metal
    /// maxBufferLength, Level Zero's 4 GiB single allocation), not a lack of memory
    BufferLimit,
    /// ggml's fixed-size context pool for tensor metadata (a llama.cpp bug, not GPU memory)
    GgmlContextPool,
    /// a pinned host buffer was refused and ggml fell back to pageable memory (a warning)
    PinnedFallback,
    /// a library built without GPU support (bitsandbytes' "compiled without GPU support",
    /// PyTorch's "Torch not compiled with CUDA enabled"): its later "not enough GPU memory"
    /// errors come from seeing no GPU at all
    NoGpuBuild,
    /// one kernel's on-chip memory (GPU shared memory per block, a TPU core's SMEM/VMEM) exceeded
    /// at compile or launch: Triton's `OutOfResources`, XLA's "Ran out of memory in memory space
    /// smem" (added after reading holdout7)
    OnChip,
    /// a count of live allocations hit its limit, not bytes: Metal's resource limit as MLX
    /// enforces it (mlx/backend/metal/allocator.cpp `Resource limit (%d) exceeded`; added after
    /// reading holdout7)
    ResourceCount,
    /// a VMM handle per allocation keeps a file descriptor (ROCm 7.14 hipMemCreate), and the
    /// process's open-file limit ran out: reported as out of memory with the VRAM free (added
    /// after reading holdout8)
    DescriptorLimit,
    /// a CUDA call rejected its arguments (`invalid argument`, `invalid configuration
    /// argument`, `too many resources requested for launch`): a launch beyond the grid or
    /// block limits or a bad size, not memory (added after reading holdout8)
    InvalidArgument,
    /// a failure a person says comes only with one device index (the model on `cuda:2`, not
    /// `cuda:0`) or one library version: which device or build, not how much memory (added
    /// after reading holdout9)
    DeviceSelection,
}

impl NotOomKind {
    /// Lookalikes that explain the "out of memory" text they come with: they outrank a generic
    /// OOM line in the same log, where NCCL or illegal-access errors do not (those follow an
    /// OOM when the other workers die).
    pub fn explains_oom(self) -> bool {
        matches!(
            self,
            NotOomKind::AddressSpace
                | NotOomKind::BufferLimit
                | NotOomKind::GgmlContextPool
                | NotOomKind::StreamCapture
                | NotOomKind::NoGpuBuild
                | NotOomKind::OnChip
                | NotOomKind::ResourceCount
                | NotOomKind::DescriptorLimit
                | NotOomKind::DeviceSelection
        )
    }
}

/// One fact read from the log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum LogEvent {
    /// PyTorch caching-allocator OOM (CUDA, HIP, XPU, ...), any torch version
    TorchOom(TorchOom),
    /// PyTorch with `backend:cudaMallocAsync`
    CudaMallocAsyncOom {
        allocated: Option<u64>,
        requested: Option<u64>,
        limit: Option<u64>,
        free: Option<u64>,
    },
    /// PyTorch MPS (Apple unified memory)
    MpsOom {
        allocated: u64,
        other: u64,
        max_allowed: u64,
        requested: Option<u64>,
    },
    /// `CUDA error: out of memory`, `CUBLAS_STATUS_ALLOC_FAILED`: memory taken outside the allocator
    RawCudaOom,
    /// an out-of-memory error of another device API (Metal, Vulkan, HIP, SYCL), without numbers
    DeviceOom { api: String },
    /// an out-of-memory error of another stack that prints the request (Tenstorrent tt-metal,
    /// ONNX Runtime's arena) and sometimes the device's size and free memory
    SizedOom {
        api: String,
        requested: u64,
        total: Option<u64>,
        free: Option<u64>,
    },
    /// NCCL could not allocate its buffers (`Cuda failure 2 'out of memory'`, `Failed to CUDA
    /// calloc`): an OOM, in memory outside the framework's pool
    NcclOom,
    /// lmdeploy TurboMind: `[TM][ERROR] CUDA runtime error: out of memory`
    TurbomindOom,
    /// host RAM allocation failed (PyTorch CPU allocator, mmap, ggml CPU buffer)
    HostAllocFailed { requested: Option<u64> },
    /// the process was killed for host memory
    HostKilled(HostKill),
    /// PyTorch's DataLoader could not pin a batch: `Caught ... in pin memory thread for device N`
    /// (torch/utils/data/_utils/pin_memory.py wraps the exception) followed by a CUDA
    /// out-of-memory, which there is cudaHostAlloc's page-locked host RAM (added in session 10)
    PinnedHostOom,

    /// vLLM V1: one request of max_model_len does not fit in the KV pool
    VllmKvTooSmall {
        max_model_len: u64,
        needed: u64,
        available: u64,
        estimated_max_model_len: Option<u64>,
    },
    /// vLLM V0: max seq len larger than the KV cache's tokens
    VllmV0KvTooSmall { max_model_len: u64, kv_tokens: u64 },
    /// vLLM: the KV budget is zero or negative
    VllmNoCacheBlocks,
    /// vLLM V1: a traceback frame of `check_enough_kv_cache_memory` (v1/core/kv_cache_utils.py),
    /// the message itself cut from the paste; the function raises for a budget of zero or for
    /// one request of max_model_len not fitting (added after reading holdout8)
    VllmKvCheck,
    /// vLLM: free memory at start-up below utilization × total
    VllmFreeBelowDesired {
        free: u64,
        total: u64,
        utilization: f64,
        desired: u64,
    },
    /// vLLM: free memory grew during profiling (another process released memory)
    VllmProfilingFreeGrew {
        initial_free: u64,
        current_free: u64,
    },
    /// vLLM V1: OOM in the sampler warm-up with max_num_seqs dummy requests
    VllmSamplerWarmupOom { num_requests: u64 },
    /// vLLM (hybrid models): `max_num_seqs (N) exceeds available Mamba cache blocks (M)`
    VllmSeqsOverStateBlocks { seqs: u64, blocks: u64 },
    /// vLLM sleep mode: `Y GiB memory is still in use` while the engine sleeps
    VllmSleepResidual { bytes: u64 },
    /// vLLM's hint printed on an OOM during CUDA-graph capture
    VllmCudaGraphOomHint,
    /// vLLM: total × utilization = budget
    VllmBudget { total: u64, utilization: f64 },
    /// vLLM V0 budget split
    VllmBreakdown {
        weights: u64,
        non_torch: u64,
        activation: u64,
        kv: u64,
    },
    /// vLLM: `Available KV cache memory: X GiB`
    VllmAvailableKv { bytes: u64 },
    /// vLLM: `Maximum concurrency for N tokens per request: X`
    VllmConcurrency { tokens_per_request: u64, times: f64 },
    /// vLLM: `Model loading took X GiB`
    VllmWeightsLoaded { bytes: u64 },
    /// vLLM V0: `Memory profiling results: total_gpu_memory=T initial_memory_usage=I` (device
    /// memory in use when the worker started, before its model)
    VllmInitialUsage { total: u64, initial: u64 },
    /// vLLM V1: `Estimated CUDA graph memory: X GiB total` (subtracted from the KV budget)
    VllmGraphEstimate { bytes: u64 },
    /// text-generation-launcher: `Shard N failed to start` / `ShardCannotStart`, printed when a
    /// shard exits before it reports ready, i.e. while loading its weights (launcher
    /// src/main.rs; warm-up failures come later, from the router, as `Unable to warmup model`)
    TgiShardCannotStart,
    /// llama.cpp server: `failed to find free space in the KV cache` (its cells are full)
    LlamaKvCellsFull,
    /// ggml-metal: the recommended working set (`recommendedMaxWorkingSetSize`, or the limit
    /// of the `(used / limit)` totals) and the total allocated so far, in bytes
    MetalWorkingSet {
        used: Option<u64>,
        limit: Option<u64>,
    },

    /// the engine says the weights do not fit (vLLM's load_model message, accelerate's
    /// "enough GPU RAM to fit the quantized model")
    WeightsTooLarge,
    /// SGLang: `Not enough memory. Please try to increase --mem-fraction-static.`
    SglangNotEnoughMemory,
    /// SGLang: `alloc_req_slots runs out of memory`
    SglangReqSlots,
    /// SGLang's KV token pool had no free slots for a batch: `Prefill out of memory. Try to
    /// lower your batch size.` / `Decode out of memory. ...` with `Try to allocate N tokens.`
    /// and the pool's `Available tokens: M` (managers/schedule_batch.py alloc_token_slots,
    /// alloc_paged_token_slots_extend; mem_cache/allocation.py in later releases), or a frame of
    /// those allocators with the message cut (added after reading holdout9)
    SglangTokenPoolFull {
        requested: Option<u64>,
        available: Option<u64>,
    },
    /// vLLM V0's scheduler could not preempt by swapping: `Aborted due to the lack of CPU swap
    /// space` (core/scheduler.py _swap_out), raised when the GPU KV blocks ran out and the
    /// swapped-out blocks do not fit the CPU swap space (added after reading holdout9)
    VllmSwapExhausted,
    /// vLLM's start-up check `Too large swap space. X GiB out of the Y GiB total CPU memory is
    /// allocated for the swap space.` (config.py _verify_cpu_swap_space raises above 0.7 x the
    /// host's RAM; added after reading holdout9)
    VllmSwapTooLarge { swap: u64, total: u64 },
    /// SGLang: `Capture cuda graph failed: <inner>`
    SglangCaptureFailed { inner_oom: bool },
    /// TGI warm-up: prefill tokens do not fit
    TgiPrefillTooLarge { tokens: u64 },
    /// TGI warm-up: total tokens do not fit
    TgiTotalTokensTooLarge { total: u64, prefill: u64 },

    /// ggml: a device allocation failed (`cudaMalloc failed`, `failed to allocate CUDA0 buffer`)
    GgmlAllocFailed { device: Option<String>, bytes: u64 },
    /// llama.cpp: the model's weights could not be allocated
    LlamaWeightsAllocFailed { device: Option<String> },
    /// llama.cpp: the KV cache could not be allocated
    LlamaKvAllocFailed,
    /// llama.cpp: compute buffers could not be allocated
    LlamaComputeAllocFailed,
    /// llama.cpp (or a binding): the context could not be created, which buffer not said
    LlamaContextFailed,
    /// llama.cpp: `<device> model|KV|compute buffer size = X MiB`
    LlamaBuffer {
        kind: BufferKind,
        device: Option<String>,
        bytes: u64,
    },
    /// llama.cpp: `using device CUDA0 (...) - N MiB free`
    LlamaDeviceFree { device: String, free: u64 },
    /// llama.cpp: `offloaded K/N layers to GPU`
    LlamaOffloaded { layers: u64, total: u64 },
    /// llama.cpp: `compute buffer allocation failed, retrying without pipeline parallelism`
    LlamaRetryWithoutPipeline,
    /// llama.cpp: `pipeline parallelism enabled (n_copies=N)`
    LlamaPipelineCopies { copies: u64 },
    /// Ollama: `model requires more system memory (X) than is available (Y)`
    OllamaSystemMemory { required: u64, available: u64 },
    /// Ollama (new engine): `memory layout cannot be allocated with num_gpu = N`
    OllamaLayoutFailed { num_gpu: u64 },
    /// Ollama: `inference compute ... total="X" available="Y"` for one GPU
    OllamaGpu { total: u64, available: u64 },
    /// transformers/accelerate: `Some modules are dispatched on the CPU or the disk`
    DispatchedToCpu,

    /// a non-capacity failure
    NotOom(NotOomKind),
    /// a person's sentence about an out-of-memory failure (`OOMs during CUDA graph capture`)
    OomDescribed,
    /// an out-of-memory word on a line no reader recognised (added by the classifier only when
    /// the log has no other failure): the phase and the engine decide
    UnrecognisedOom { word: String },
    /// a person names the memory that grew or ran short
    Described(Mechanism),
    /// a person reports allocator fragmentation (reserved-but-unallocated)
    FragmentationDescribed { reserved_unallocated: Option<u64> },
    /// a progress message or traceback frame
    Phase(Phase),
    /// an engine logged the start of a request (vLLM's request logger `Received request`,
    /// llama-server's `launch_slot_`)
    RequestStarted,
    /// a model load that failed without naming memory ("Failed to load model", Ollama's
    /// "model failed to load", ExLlama's "Insufficient VRAM for model and cache")
    LoadFailed,
    /// vLLM's loader line `Checkpoint size: X. Available RAM: Y.`
    /// (vllm/model_executor/model_loader/weight_utils.py, before the shards stream in)
    VllmCheckpointRam { checkpoint: u64, ram: u64 },
    /// a device whose GPU memory is the host's RAM (NVIDIA Jetson / Tegra, "unified memory"):
    /// a kill of the process there is the GPU's memory running out too (added after reading
    /// holdout8)
    UnifiedMemoryDevice,
    /// the kernel driver's VRAM size at boot (amdgpu `VRAM: 98304M ...` from amdgpu_gmc.c,
    /// `98304M of VRAM memory ready` from amdgpu_ttm.c; added after reading holdout8)
    DriverVram { bytes: u64 },
    /// a context length stated in a sentence or JSON ("262,144 context", "32k-64k tokens",
    /// `"n_ctx": 1048576`), the largest on the line
    ContextStated { tokens: u64 },
}

impl LogEvent {
    /// A failure ends the run (or is the error a person reports); the rest is context.
    pub fn is_failure(&self) -> bool {
        use LogEvent::*;
        !matches!(
            self,
            VllmBudget { .. }
                | VllmBreakdown { .. }
                | VllmAvailableKv { .. }
                | VllmConcurrency { .. }
                | VllmWeightsLoaded { .. }
                | VllmInitialUsage { .. }
                | VllmGraphEstimate { .. }
                | VllmSleepResidual { .. }
                | MetalWorkingSet { .. }
                | TgiShardCannotStart
                | VllmCudaGraphOomHint
                | LlamaBuffer { .. }
                | LlamaDeviceFree { .. }
                | LlamaOffloaded { .. }
                | LlamaPipelineCopies { .. }
                | LlamaRetryWithoutPipeline
                | OllamaGpu { .. }
                | Phase(_)
                | RequestStarted
                | LoadFailed
                | VllmCheckpointRam { .. }
                | ContextStated { .. }
                | UnifiedMemoryDevice
                | DriverVram { .. }
        )
    }

    /// Wrappers that only say "it died" carry less than a message with numbers; when both are
    /// in a log the specific one explains the generic one.
    pub fn is_generic(&self) -> bool {
        use LogEvent::*;
        match self {
            TorchOom(t) => t.requested.is_none(),
            RawCudaOom
            | DeviceOom { .. }
            | TurbomindOom
            | FragmentationDescribed { .. }
            | LlamaContextFailed
            | GgmlAllocFailed { .. } => true,
            HostKilled(k) => matches!(
                k,
                HostKill::Exit137 | HostKill::Sigkill | HostKill::Described
            ),
            _ => false,
        }
    }
}

/// An event and where it was read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Located {
    /// 1-based line number in the text given to [`read_events`]
    pub line: usize,
    /// the line, trimmed and shortened for display
    pub text: String,
    pub event: LogEvent,
}

/// Shorten a line for evidence: trimmed, at most 240 characters.
pub(crate) fn evidence_text(line: &str) -> String {
    let t = line.trim();
    if t.chars().count() <= 240 {
        return t.to_string();
    }
    let cut: String = t.chars().take(237).collect();
    format!("{cut}...")
}

/// Cut a line to [`MAX_LINE_BYTES`] on a char boundary.
pub(crate) fn clip(line: &str) -> &str {
    if line.len() <= MAX_LINE_BYTES {
        return line;
    }
    let mut end = MAX_LINE_BYTES;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

/// Read every event in `text`, in order of appearance.
pub fn read_events(text: &str) -> Vec<Located> {
    let lines: Vec<&str> = text.lines().map(clip).collect();
    let mut out: Vec<Located> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        // the failure is at the end of a log: past the cap, the oldest events go, not the newest
        if out.len() >= MAX_EVENTS {
            out.drain(..MAX_EVENTS / 2);
        }
        if !keywords::ANY_KEYWORD.is_match(line) {
            continue;
        }
        let mut found = Vec::new();
        // Order within a line: raw allocator errors first, then the engine message that
        // explains them (SGLang prints the torch OOM inside its capture error on one line).
        torch::read(&lines, i, &mut found);
        system::read(&lines, i, &mut found);
        ggml::read(line, &mut found);
        serving::read(&lines, i, &mut found);
        stacks::read(&lines, i, &mut found);
        prose::read(line, &mut found);
        for event in found {
            // a progress line repeated every few seconds (throughput logs) is one phase marker
            if let (
                LogEvent::Phase(p),
                Some(Located {
                    event: LogEvent::Phase(q),
                    ..
                }),
            ) = (&event, out.last())
            {
                if p == q {
                    continue;
                }
            }
            out.push(Located {
                line: i + 1,
                text: evidence_text(line),
                event,
            });
        }
    }
    if out.len() > MAX_EVENTS {
        out.drain(..out.len() - MAX_EVENTS);
    }
    out
}

/// The next `n` lines after `i` joined with single spaces (for messages a console wrapped).
pub(crate) fn window(lines: &[&str], i: usize, n: usize, max_chars: usize) -> String {
    let mut w = String::new();
    for l in lines.iter().skip(i).take(n + 1) {
        if w.len() >= max_chars {
            break;
        }
        if !w.is_empty() {
            w.push(' ');
        }
        w.push_str(l.trim());
    }
    if w.len() > max_chars {
        let mut end = max_chars;
        while !w.is_char_boundary(end) {
            end -= 1;
        }
        w.truncate(end);
    }
    w
}
