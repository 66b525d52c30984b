//! From events to a cause: pick the failure that ended the run, read what the process was doing
//! and the numbers around it, and apply the rule for that message.
//!
//! Which failure: the last one of the strongest kind. A log is chronological, so the last
//! failure is the one the person faces now (a second attempt after a first fix); a message with
//! numbers or an engine's own explanation outranks a generic "out of memory"/"Killed"; and an
//! out-of-memory failure outranks a lookalike (NCCL and illegal-access errors follow an OOM when
//! the other workers die).

pub mod basis;
mod engines;
mod llama;
mod phase;
mod prose;
mod torch;
mod vllm;

use serde::Serialize;

use crate::events::{read_events, Located, LogEvent, NotOomKind, Phase};
use crate::fixes::{vet, Fix, FixEngine, LogOnly};
use crate::settings::{detect_engine, read_settings, EchoedSettings, Engine};
pub use basis::Basis;

/// The root cause of a crash, as the design names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    WeightsDoNotFit,
    KvCache,
    Concurrency,
    Fragmentation,
    ActivationPeak,
    CudaGraphs,
    OtherProcesses,
    HostMemory,
    NotOom,
    Unknown,
}

impl Cause {
    pub const ALL: [Cause; 10] = [
        Cause::WeightsDoNotFit,
        Cause::KvCache,
        Cause::Concurrency,
        Cause::Fragmentation,
        Cause::ActivationPeak,
        Cause::CudaGraphs,
        Cause::OtherProcesses,
        Cause::HostMemory,
        Cause::NotOom,
        Cause::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Cause::WeightsDoNotFit => "weights_do_not_fit",
            Cause::KvCache => "kv_cache",
            Cause::Concurrency => "concurrency",
            Cause::Fragmentation => "fragmentation",
            Cause::ActivationPeak => "activation_peak",
            Cause::CudaGraphs => "cuda_graphs",
            Cause::OtherProcesses => "other_processes",
            Cause::HostMemory => "host_memory",
            Cause::NotOom => "not_oom",
            Cause::Unknown => "unknown",
        }
    }

    /// The dataset's `root_cause_class` (research/torch_snapshot.md, JSONL schema): 1-8 as in the
    /// design, 0 = not an OOM, -1 = unknown.
    pub fn from_class(class: i64) -> Option<Cause> {
        Some(match class {
            1 => Cause::WeightsDoNotFit,
            2 => Cause::KvCache,
            3 => Cause::Concurrency,
            4 => Cause::Fragmentation,
            5 => Cause::ActivationPeak,
            6 => Cause::CudaGraphs,
            7 => Cause::OtherProcesses,
            8 => Cause::HostMemory,
            0 => Cause::NotOom,
            -1 => Cause::Unknown,
            _ => return None,
        })
    }
}

/// What a rule concluded.
#[derive(Debug, Clone)]
pub(crate) struct Finding {
    pub cause: Cause,
    pub confidence: f64,
    /// one short paragraph with the numbers
    pub summary: String,
    /// computed facts, each one line
    pub facts: Vec<String>,
    pub fixes: Vec<Fix>,
    /// decided by the fallback for its phase, with no mechanism-specific fact
    pub fallback: bool,
}

impl Finding {
    pub fn new(cause: Cause, confidence: f64, summary: impl Into<String>) -> Finding {
        Finding {
            cause,
            confidence,
            summary: summary.into(),
            facts: Vec::new(),
            fixes: Vec::new(),
            fallback: false,
        }
    }
    /// Mark a finding as the phase's fallback (no mechanism-specific fact decided it).
    pub fn fallback(mut self) -> Finding {
        self.fallback = true;
        self
    }
    pub fn fact(mut self, f: impl Into<String>) -> Finding {
        self.facts.push(f.into());
        self
    }
    pub fn fix(mut self, f: Fix) -> Finding {
        self.fixes.push(f);
        self
    }
}

/// The doctor's answer.
#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    pub cause: Cause,
    pub confidence: f64,
    pub engine: Engine,
    pub summary: String,
    /// computed facts first, then the log lines they rest on (`line N: ...`)
    pub evidence: Vec<String>,
    pub fixes: Vec<Fix>,
    pub settings: EchoedSettings,
    pub events: Vec<Located>,
    /// the evidence every report has (phase, stack, engine family, numbers present)
    pub basis: Basis,
}

/// Everything a rule may look at.
pub(crate) struct Context<'a> {
    pub events: &'a [Located],
    pub settings: &'a EchoedSettings,
    pub engine: Engine,
    pub fx: &'a dyn FixEngine,
    /// index of the failure in `events`
    pub at: usize,
    /// seconds from the log's first timestamp to the failure (events::time)
    pub elapsed: Option<i64>,
}

impl Context<'_> {
    /// What the process was doing at the failure: the last phase marker at or before it.
    pub fn phase(&self) -> Option<(Phase, &Located)> {
        // markers on the failure's own line count (a frame name printed with the error)
        let line = self.events[self.at].line;
        let end = self.events[self.at..]
            .iter()
            .position(|l| l.line != line)
            .map_or(self.events.len(), |p| self.at + p);
        if let Some(p) = self.request_phase(end) {
            return Some(p);
        }
        let mut markers = self.events[..end]
            .iter()
            .rev()
            .filter_map(|l| match l.event {
                LogEvent::Phase(p) => Some((p, l)),
                _ => None,
            });
        let last = markers.next()?;
        if !last.0.is_generic() {
            return Some(last);
        }
        // a generic frame (forward, backward) yields to an engine stage that runs forward
        // passes (profile_run, graph capture, sampler warm-up; frames are printed outermost
        // first) shortly before it; loading and serving end before a forward pass is the news
        let stage = markers
            .take_while(|(_, l)| l.line + TRACEBACK_LINES >= last.1.line)
            .find(|(p, _)| !p.is_generic())
            .filter(|(p, _)| !matches!(p, Phase::Serving | Phase::WeightLoading));
        Some(stage.unwrap_or(last))
    }

    /// Requests the engine logged after its last stage marker: one, with no throughput line
    /// before it, is the first request (the field guide's "on the first batch"); more are
    /// steady serving.
    fn request_phase(&self, end: usize) -> Option<(Phase, &Located)> {
        let upto = &self.events[..end];
        let is_req = |l: &&Located| matches!(l.event, LogEvent::RequestStarted);
        let first = upto.iter().find(is_req)?;
        let last = upto.iter().rev().find(is_req)?;
        let stage_after = upto.iter().any(|l| {
            l.line > last.line && matches!(l.event, LogEvent::Phase(p) if !p.is_generic())
        });
        if stage_after {
            return None;
        }
        let traffic_before = upto.iter().any(|l| {
            l.line < first.line
                && matches!(l.event, LogEvent::Phase(Phase::Serving))
                && l.text.contains("throughput")
        });
        let n = upto.iter().filter(is_req).count();
        let phase = if n == 1 && !traffic_before {
            Phase::FirstRequest
        } else {
            Phase::Serving
        };
        Some((phase, last))
    }

    /// Events anywhere in the log matching `f` (context lines are printed before and after).
    pub fn find<T>(&self, f: impl Fn(&LogEvent) -> Option<T>) -> Option<T> {
        self.events.iter().rev().find_map(|l| f(&l.event))
    }

    /// The last event before the failure matching `f`.
    pub fn before<T>(&self, f: impl Fn(&LogEvent) -> Option<T>) -> Option<T> {
        self.events[..=self.at]
            .iter()
            .rev()
            .find_map(|l| f(&l.event))
    }

    /// The GPU total the log reveals (vLLM budget lines, PyTorch OOM).
    pub fn gpu_total(&self) -> Option<u64> {
        self.find(|e| match e {
            LogEvent::VllmBudget { total, .. } => Some(*total),
            LogEvent::VllmFreeBelowDesired { total, .. } => Some(*total),
            LogEvent::TorchOom(t) => t.total,
            _ => None,
        })
    }

    /// gpu_memory_utilization from the settings or the budget lines.
    pub fn utilization(&self) -> Option<f64> {
        self.settings.gpu_memory_utilization.or_else(|| {
            self.find(|e| match e {
                LogEvent::VllmBudget { utilization, .. } => Some(*utilization),
                LogEvent::VllmFreeBelowDesired { utilization, .. } => Some(*utilization),
                _ => None,
            })
        })
    }
}

/// How far up a traceback an engine's stage frame may sit above a generic frame.
const TRACEBACK_LINES: usize = 120;

/// Strength of a failure: 2 specific OOM, 1 generic OOM, 0 lookalike.
fn tier(e: &LogEvent) -> u8 {
    match e {
        // a lookalike that explains the OOM text outranks every OOM line it explains
        LogEvent::NotOom(k) if k.explains_oom() => 3,
        // /dev/shm is host RAM: a failure of its own, not a lookalike
        LogEvent::NotOom(NotOomKind::SharedMemory) => 2,
        LogEvent::NotOom(_) | LogEvent::OomDescribed | LogEvent::Described(_) => 0,
        e if e.is_generic() => 1,
        _ => 2,
    }
}

/// Substrings that mark an out-of-memory failure we have no rule for (Ollama llm/status.go
/// outOfMemorySubstrings, lower-cased).
const OOM_WORDS: &[&str] = &[
    "out of memory",
    "out of device memory",
    "cudamalloc failed",
    "malloc fails",
    "hipmalloc failed",
    "failed to allocate",
    "allocation failed",
    "not enough memory",
    "alloc_failed",
    // XLA (JAX, TPU) and gRPC status of an allocation that did not fit
    "resource_exhausted",
    "insufficient memory",
    "vk_error_out_of_device_memory",
    "erroroutofmemory",
    // Chinese reports: "insufficient video memory", "video memory overflow"
    "显存不足",
    "显存溢出",
    // NVIDIA Tegra (Jetson) nvmap: `NvMapMemAllocInternalTagged: ... error 12 (ENOMEM)`
    "(enomem)",
];

/// The engine a message belongs to when the log names none: vLLM's, SGLang's, TGI's,
/// llama.cpp's and TurboMind's own messages identify their engine.
fn engine_of(detected: Engine, events: &[Located]) -> Engine {
    if !matches!(
        detected,
        Engine::Unknown | Engine::Pytorch | Engine::Transformers
    ) {
        return detected;
    }
    for l in events.iter().rev() {
        use LogEvent::*;
        let e = match &l.event {
            VllmKvTooSmall { .. }
            | VllmV0KvTooSmall { .. }
            | VllmNoCacheBlocks
            | VllmKvCheck
            | VllmFreeBelowDesired { .. }
            | VllmProfilingFreeGrew { .. }
            | VllmSamplerWarmupOom { .. }
            | VllmSeqsOverStateBlocks { .. }
            | VllmCudaGraphOomHint
            | VllmBudget { .. }
            | VllmBreakdown { .. }
            | VllmAvailableKv { .. }
            | VllmConcurrency { .. }
            | VllmWeightsLoaded { .. }
            | VllmInitialUsage { .. }
            | VllmGraphEstimate { .. }
            | VllmSwapExhausted
            | VllmSwapTooLarge { .. }
            | WeightsTooLarge => Engine::Vllm,
            SglangNotEnoughMemory
            | SglangReqSlots
            | SglangCaptureFailed { .. }
            | SglangTokenPoolFull { .. } => Engine::Sglang,
            TgiPrefillTooLarge { .. } | TgiTotalTokensTooLarge { .. } => Engine::Tgi,
            GgmlAllocFailed { .. }
            | LlamaWeightsAllocFailed { .. }
            | LlamaKvAllocFailed
            | LlamaComputeAllocFailed
            | LlamaContextFailed
            | LlamaBuffer { .. }
            | LlamaDeviceFree { .. }
            | LlamaOffloaded { .. }
            | LlamaKvCellsFull => Engine::LlamaCpp,
            TurbomindOom => Engine::Lmdeploy,
            OllamaSystemMemory { .. } | OllamaLayoutFailed { .. } | OllamaGpu { .. } => {
                Engine::Ollama
            }
            _ => continue,
        };
        return e;
    }
    detected
}

/// Diagnose a log with the log's own numbers only.
pub fn diagnose(text: &str) -> Diagnosis {
    diagnose_with(text, &LogOnly)
}

/// Diagnose a log, asking `fx` (the engine memory models) for what the log cannot tell.
pub fn diagnose_with(text: &str, fx: &dyn FixEngine) -> Diagnosis {
    let mut events = read_events(text);
    let settings = read_settings(text);
    let engine = engine_of(detect_engine(text), &events);
    // an out-of-memory word no reader recognised, in a log with no other failure: decided by
    // the phase and the engine like a described OOM, instead of "unknown"
    if !events.iter().any(|l| l.event.is_failure()) && prose::fallback(&events, engine).is_none() {
        if let Some((line, word, shown)) = unrecognised_oom(text) {
            let at = events.partition_point(|l| l.line <= line);
            events.insert(
                at,
                Located {
                    line,
                    text: shown,
                    event: LogEvent::UnrecognisedOom {
                        word: word.to_string(),
                    },
                },
            );
        }
    }
    // llama.cpp retries a failed compute reservation without pipeline parallelism (Ollama
    // llm/status.go treats that as recoverable): failures before the retry were recovered from.
    let retried_at = events
        .iter()
        .rposition(|l| matches!(l.event, LogEvent::LlamaRetryWithoutPipeline));
    let recovered = |i: usize, e: &LogEvent| {
        retried_at.is_some_and(|r| i < r)
            && matches!(
                e,
                LogEvent::LlamaComputeAllocFailed | LogEvent::GgmlAllocFailed { .. }
            )
    };
    let primary = events
        .iter()
        .enumerate()
        .filter(|(i, l)| l.event.is_failure() && !recovered(*i, &l.event))
        .max_by_key(|(i, l)| (tier(&l.event), *i))
        .map(|(i, _)| i);
    let mut basis = Basis::none(engine);
    let (finding, anchor_lines) = match primary {
        Some(at) => {
            let ctx = Context {
                events: &events,
                settings: &settings,
                engine,
                fx,
                at,
                elapsed: crate::events::time::elapsed(text, events[at].line),
            };
            basis = Basis::of(&ctx);
            let mut f = rule(&ctx);
            if let Some(s) = ctx.elapsed.filter(|s| *s >= 60 && f.cause != Cause::NotOom) {
                let stage = if s >= 3600 { "steady state, hours after start-up" } else if s >= 600 { "after start-up" } else { "during start-up" };
                f = f.fact(format!("failed {} h {} min after the log's first timestamp ({stage})", s / 3600, (s % 3600) / 60));
            }
            let mut lines = vec![&events[at]];
            if let Some((_, l)) = ctx.phase() {
                if l.line != events[at].line && f.cause != Cause::NotOom {
                    lines.insert(0, l);
                }
            }
            (f, lines.into_iter().cloned().collect::<Vec<_>>())
        }
        None if retried_at.is_some() => (
            Finding::new(
                Cause::NotOom,
                0.6,
                "llama.cpp could not reserve its compute buffers with pipeline parallelism and retried without it; nothing fatal follows in the log.",
            )
            .fix(Fix::flag(
                "-ub",
                256,
                "a smaller micro-batch fits the pipeline-parallel copies, keeping their speed",
            )),
            retried_at.map(|r| vec![events[r].clone()]).unwrap_or_default(),
        ),
        None => match prose::fallback(&events, engine).or_else(|| prose::load_failed(&events, &settings, engine)) {
            Some((f, l)) => (f, vec![l]),
            None => (nothing_recognised(text), Vec::new()),
        },
    };
    basis.fallback = finding.fallback;
    let fixes = vet(finding.fixes.clone(), engine, &settings);
    let mut evidence = finding.facts.clone();
    for l in anchor_lines {
        evidence.push(format!("line {}: {}", l.line, l.text));
    }
    Diagnosis {
        cause: finding.cause,
        confidence: (finding.confidence * 100.0).round() / 100.0,
        engine,
        summary: finding.summary,
        evidence,
        fixes,
        settings,
        events,
        basis,
    }
}

/// The last line with an out-of-memory word (1-based), the word and the line for evidence.
fn unrecognised_oom(text: &str) -> Option<(usize, &'static str, String)> {
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let line = crate::events::clip(line);
        let lower = line.to_lowercase();
        if let Some(w) = OOM_WORDS.iter().find(|w| lower.contains(*w)) {
            found = Some((i + 1, *w, crate::events::evidence_text(line)));
        }
    }
    found
}

fn nothing_recognised(text: &str) -> Finding {
    let lower: String = text
        .chars()
        .take(8 << 20)
        .collect::<String>()
        .to_lowercase();
    if let Some(w) = OOM_WORDS.iter().find(|w| lower.contains(*w)) {
        Finding::new(
            Cause::Unknown,
            0.3,
            format!("The log reports an allocation failure (\"{w}\") in a form vramfit does not know; the cause cannot be told from it."),
        )
        .fix(Fix::action("paste the full log from engine start, including the lines before the error"))
    } else if ["error", "exception", "traceback", "panic", "fatal"]
        .iter()
        .any(|w| lower.contains(w))
    {
        Finding::new(
            Cause::NotOom,
            0.4,
            "The log shows an error but no out-of-memory message: this failure is not a lack of memory.",
        )
    } else {
        Finding::new(
            Cause::Unknown,
            0.1,
            "No failure was recognised in this text.",
        )
        .fix(Fix::action(
            "paste the log from engine start through the crash",
        ))
    }
}

/// Dispatch on the failure's message.
fn rule(ctx: &Context) -> Finding {
    match &ctx.events[ctx.at].event {
        LogEvent::TorchOom(t) => torch::caching_allocator(ctx, t),
        // a bare CUDA OOM in a TurboMind process: its KV reservation is the share it controls
        LogEvent::RawCudaOom if ctx.engine == Engine::Lmdeploy => engines::lmdeploy(ctx),
        LogEvent::CudaMallocAsyncOom { .. }
        | LogEvent::MpsOom { .. }
        | LogEvent::RawCudaOom
        | LogEvent::DeviceOom { .. } => torch::other_allocators(ctx),
        LogEvent::NcclOom => engines::nccl(ctx),
        LogEvent::OomDescribed | LogEvent::Described(_) => {
            torch::by_phase(ctx, "The report describes an out-of-memory failure")
        }
        // an OOM word no reader knows in a TurboMind process: its KV reservation, as for a bare
        // CUDA OOM there (added after reading holdout8)
        LogEvent::UnrecognisedOom { .. } if ctx.engine == Engine::Lmdeploy => {
            let mut f = engines::lmdeploy(ctx);
            f.confidence = f.confidence.min(0.45);
            f
        }
        LogEvent::UnrecognisedOom { word } => {
            let mut f = torch::by_phase(
                ctx,
                &format!("An allocation failure (\"{word}\") in a form vramfit does not know"),
            );
            f.confidence = f.confidence.min(0.35);
            f.fallback = true;
            f
        }
        LogEvent::SizedOom {
            api,
            requested,
            total,
            free,
        } => prose::sized(ctx, api, *requested, *total, *free),
        LogEvent::TurbomindOom => engines::lmdeploy(ctx),
        LogEvent::LlamaKvCellsFull => llama::kv_cells_full(ctx),
        LogEvent::DispatchedToCpu => engines::dispatched_to_cpu(ctx),
        LogEvent::OllamaLayoutFailed { num_gpu } => llama::ollama_layout(ctx, *num_gpu),
        LogEvent::HostAllocFailed { .. }
        | LogEvent::HostKilled(_)
        | LogEvent::VllmSwapTooLarge { .. }
        | LogEvent::PinnedHostOom
        | LogEvent::OllamaSystemMemory { .. } => engines::host(ctx),
        LogEvent::VllmSwapExhausted => vllm::swap_exhausted(ctx),
        LogEvent::NotOom(NotOomKind::SharedMemory) => engines::shared_memory(),
        LogEvent::NotOom(k) => engines::not_oom(*k),
        LogEvent::FragmentationDescribed {
            reserved_unallocated,
        } => torch::fragmentation_described(*reserved_unallocated),
        LogEvent::GgmlAllocFailed { .. }
        | LogEvent::LlamaWeightsAllocFailed { .. }
        | LogEvent::LlamaKvAllocFailed
        | LogEvent::LlamaComputeAllocFailed
        | LogEvent::LlamaContextFailed => llama::llama(ctx),
        LogEvent::WeightsTooLarge => engines::weights(
            ctx,
            "The engine reports that the model's weights do not fit in the GPU memory it may use."
                .to_string(),
        ),
        LogEvent::SglangNotEnoughMemory
        | LogEvent::SglangReqSlots
        | LogEvent::SglangCaptureFailed { .. }
        | LogEvent::SglangTokenPoolFull { .. }
        | LogEvent::TgiPrefillTooLarge { .. }
        | LogEvent::TgiTotalTokensTooLarge { .. } => engines::sglang_tgi(ctx),
        _ => vllm::vllm(ctx),
    }
}
