//! The evidence every report has, whatever its wording: when the failure happened, which stack
//! raised it, which of the message's numbers are present. The rules decide from these first
//! (classify/torch.rs); the learned prior (classify/prior.rs) is keyed by them.

use serde::Serialize;

use super::Context;
use crate::events::{LogEvent, Phase};
use crate::settings::Engine;

/// When the failure happened, in the field guide's terms (load, warm-up, graph capture, the
/// first forward pass, steady serving, hours in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// weights being put on the device
    Load,
    /// an engine's start-up measurement: profiling run, sampler warm-up, KV or compute
    /// reservation
    Warmup,
    /// CUDA-graph capture
    Capture,
    /// a forward (or backward) pass of a plain PyTorch stack, or a long prompt's prefill
    Compute,
    /// start-up finished, requests being served
    Steady,
    /// an hour or more after the log's first timestamp, or memory that grew over time
    AfterHours,
    /// vLLM sleep mode waking up
    Wake,
    /// nothing in the text says
    Unknown,
}

impl When {
    pub fn as_str(self) -> &'static str {
        match self {
            When::Load => "load",
            When::Warmup => "warmup",
            When::Capture => "capture",
            When::Compute => "compute",
            When::Steady => "steady",
            When::AfterHours => "after_hours",
            When::Wake => "wake",
            When::Unknown => "unknown",
        }
    }

    pub(crate) fn of(phase: Option<Phase>, elapsed: Option<i64>) -> When {
        match phase {
            Some(Phase::WeightLoading | Phase::OptimizerStep) => When::Load,
            Some(
                Phase::Profiling
                | Phase::SamplerWarmup
                | Phase::KvAllocation
                | Phase::ComputeReserve,
            ) => When::Warmup,
            Some(Phase::CudaGraphCapture) => When::Capture,
            Some(Phase::Prefill | Phase::Forward | Phase::Backward | Phase::FirstRequest) => {
                When::Compute
            }
            Some(Phase::LongRunning) => When::AfterHours,
            Some(Phase::WakeUp) => When::Wake,
            Some(Phase::Serving) if elapsed.is_some_and(|s| s >= 3600) => When::AfterHours,
            Some(Phase::Serving) => When::Steady,
            None => match elapsed {
                Some(s) if s >= 3600 => When::AfterHours,
                Some(s) if s >= 600 => When::Steady,
                _ => When::Unknown,
            },
        }
    }
}

/// Which kind of message raised the failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stack {
    /// PyTorch's caching allocator with the request printed
    TorchSized,
    /// a CUDA/HIP/Metal/Vulkan/MPS OOM without the allocator's numbers
    DeviceBare,
    /// ggml / llama.cpp / Ollama allocation messages
    Ggml,
    /// a serving engine's own budget message (vLLM, SGLang, TGI, lmdeploy)
    Engine,
    /// the host: the kernel OOM killer, a cgroup, host allocations
    Host,
    /// NCCL, cuBLAS and other library allocations outside the framework's pool
    Library,
    /// a lookalike (illegal access, buffer limits, address space, ...)
    Lookalike,
    /// a person's description of the failure, no message
    Described,
    /// no failure recognised
    None,
}

impl Stack {
    pub fn as_str(self) -> &'static str {
        match self {
            Stack::TorchSized => "torch_sized",
            Stack::DeviceBare => "device_bare",
            Stack::Ggml => "ggml",
            Stack::Engine => "engine",
            Stack::Host => "host",
            Stack::Library => "library",
            Stack::Lookalike => "lookalike",
            Stack::Described => "described",
            Stack::None => "none",
        }
    }

    pub(crate) fn of(e: &LogEvent) -> Stack {
        use LogEvent::*;
        match e {
            TorchOom(t) if t.requested.is_some() => Stack::TorchSized,
            TorchOom(_)
            | CudaMallocAsyncOom { .. }
            | MpsOom { .. }
            | RawCudaOom
            | DeviceOom { .. }
            | SizedOom { .. }
            | UnrecognisedOom { .. } => Stack::DeviceBare,
            GgmlAllocFailed { .. }
            | LlamaWeightsAllocFailed { .. }
            | LlamaKvAllocFailed
            | LlamaComputeAllocFailed
            | LlamaContextFailed
            | LlamaKvCellsFull
            | OllamaLayoutFailed { .. } => Stack::Ggml,
            HostAllocFailed { .. }
            | HostKilled(_)
            | OllamaSystemMemory { .. }
            | VllmSwapTooLarge { .. }
            | PinnedHostOom => Stack::Host,
            NcclOom => Stack::Library,
            NotOom(_) => Stack::Lookalike,
            OomDescribed | Described(_) | FragmentationDescribed { .. } => Stack::Described,
            _ => Stack::Engine,
        }
    }
}

/// The engine's family: how it manages memory (a pre-allocated pool, llama.cpp's buffers, or
/// PyTorch's allocator as the program uses it).
pub fn family(e: Engine) -> &'static str {
    match e {
        Engine::Vllm | Engine::Sglang | Engine::Tgi | Engine::Lmdeploy => "pool",
        Engine::LlamaCpp | Engine::Ollama => "ggml",
        Engine::Transformers | Engine::Pytorch | Engine::Mlx => "torch",
        Engine::Unknown => "unknown",
    }
}

/// The evidence a decision rested on, kept with the diagnosis (the JSON's `basis`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Basis {
    pub when: When,
    pub stack: Stack,
    /// the engine family (see [`family`])
    pub family: &'static str,
    /// the message printed the device's total and its free memory
    pub has_totals: bool,
    /// the decision came from no mechanism-specific fact, only from the fallback for its
    /// phase (confidence is then low)
    pub fallback: bool,
}

impl Basis {
    /// The key of the learned prior's table: phase, family, stack, numbers present.
    pub fn key(&self) -> String {
        format!(
            "{}|{}|{}|{}",
            self.when.as_str(),
            self.family,
            self.stack.as_str(),
            if self.has_totals {
                "totals"
            } else {
                "no_totals"
            }
        )
    }

    pub(crate) fn of(ctx: &Context) -> Basis {
        let e = &ctx.events[ctx.at].event;
        let has_totals = match e {
            LogEvent::TorchOom(t) => t.total.is_some() && t.free.is_some(),
            LogEvent::CudaMallocAsyncOom { limit, free, .. } => limit.is_some() && free.is_some(),
            LogEvent::MpsOom { .. } => true,
            LogEvent::SizedOom { total, free, .. } => total.is_some() && free.is_some(),
            LogEvent::OllamaSystemMemory { .. } => true,
            _ => ctx.gpu_total().is_some(),
        };
        Basis {
            when: When::of(ctx.phase().map(|(p, _)| p), ctx.elapsed),
            stack: Stack::of(e),
            family: family(ctx.engine),
            has_totals,
            fallback: false,
        }
    }

    /// A report with no failure line.
    pub(crate) fn none(engine: Engine) -> Basis {
        Basis {
            when: When::Unknown,
            stack: Stack::None,
            family: family(engine),
            has_totals: false,
            fallback: true,
        }
    }
}
