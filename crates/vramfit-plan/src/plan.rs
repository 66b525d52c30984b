//! A ranked plan: the command, what it puts where, and why each knob has its value.

use crate::quality::Tier;
use crate::request::Goal;
use serde::Serialize;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use vramfit_engine::{DevicePlan, HostPlan, KvSummary, Verdict};
use vramfit_model::units::MIB;

/// One knob's value and the reason for it.
#[derive(Debug, Clone, Serialize)]
pub struct Setting {
    pub knob: String,
    pub value: String,
    pub why: String,
}

/// One configuration that fits.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub engine: String,
    /// the command, shell-quoted, ready to paste
    pub command: String,
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub settings: Vec<Setting>,
    pub verdict: Verdict,
    pub devices: Vec<DevicePlan>,
    pub host: HostPlan,
    pub kv_cache: KvSummary,
    /// the context per request the command sets
    pub max_model_len: u64,
    /// the largest context per request that fits with the other settings unchanged
    pub max_context: u64,
    /// requests at once the command is set up for
    pub concurrency: u64,
    /// the most requests of `max_model_len` that fit at once with the other settings
    pub max_concurrency: u64,
    /// decode tokens/s of one request: llama.cpp/Ollama as modelled on measured figures
    /// ([`crate::speed::ggml_decode`]), other engines a bandwidth roofline (an upper bound)
    pub est_tokens_per_s: f64,
    /// the bandwidth roofline of every engine's plan, which [`rank`] compares (a modelled
    /// llama.cpp speed against another engine's upper bound would favour the other engine)
    #[serde(skip)]
    pub roofline_tokens_per_s: f64,
    /// weight bits per parameter as loaded
    pub weight_bits: f64,
    /// KV cache bits per element
    pub kv_bits: f64,
    /// the weight format as loaded: a GGUF quant (`Q4_K_M`, `MXFP4_MOE`), `BF16`, `FP8 at
    /// load`, a pre-quantized repo's method, ...
    pub weight_format: String,
    /// expected quality loss against the published checkpoint: mean KL divergence of the
    /// weights' format plus the KV cache type's ([`crate::quality`], with its sources)
    pub quality_kld: f64,
    /// [`crate::quality::Tier`] of `quality_kld`
    pub quality: Tier,
    /// every layer's weights on the GPUs (llama.cpp's input embedding, which it always keeps in
    /// host RAM and reads one row of per token, does not count as offload)
    pub gpu_resident: bool,
    /// how the GPUs are used: "1 GPU", "layer split over 2 GPUs", "tensor parallel 2", ...
    pub split: String,
    /// the free memory per GPU the plan was solved against (free − headroom)
    pub planned_free_bytes: Vec<u64>,
    /// `vramfit check` line that verifies the plan against the same free memory
    pub check: String,
}

/// "1 GPU", "tensor parallel 2", "pipeline parallel 2", "tensor parallel 4 × pipeline parallel 2".
pub fn split_name(tp: u64, pp: u64) -> String {
    match (tp, pp) {
        (1, 1) => "1 GPU".to_string(),
        (t, 1) => format!("tensor parallel {t}"),
        (1, p) => format!("pipeline parallel {p}"),
        (t, p) => format!("tensor parallel {t} × pipeline parallel {p}"),
    }
}

/// `--gpu` and `--gpu-free` values of a plan's `check` line: the GPUs' totals (`real`) and the
/// free memory the plan was solved against (`planned`), in whole MiB.
pub fn gpu_args(
    real: &vramfit_engine::Hardware,
    planned: &vramfit_engine::Hardware,
) -> (String, String) {
    let join = |v: Vec<String>| v.join(",");
    (
        join(
            real.gpus
                .iter()
                .map(|g| format!("{}MiB", g.total_bytes / MIB))
                .collect(),
        ),
        join(
            planned
                .gpus
                .iter()
                .map(|g| format!("{}MiB", g.free_bytes / MIB))
                .collect(),
        ),
    )
}

/// The `vramfit check` line that re-checks a printed command on the free memory it was
/// planned for: `--gpu` the real totals, `--gpu-free` the planned free MiB ([`gpu_args`]).
pub fn check_line(
    real: &vramfit_engine::Hardware,
    planned: &vramfit_engine::Hardware,
    command: &str,
) -> String {
    let (gpu_arg, free_arg) = gpu_args(real, planned);
    format!("vramfit check --gpu {gpu_arg} --gpu-free {free_arg} -- {command}")
}

/// The `PYTORCH_CUDA_ALLOC_CONF` setting of the PyTorch engines' plans (vLLM, SGLang), with
/// the engine's own words on it.
pub fn expandable_segments_setting(why: &str) -> Setting {
    Setting {
        knob: "PYTORCH_CUDA_ALLOC_CONF".into(),
        value: "expandable_segments:True".into(),
        why: why.into(),
    }
}

/// `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`, the environment of the PyTorch engines'
/// plans (each planner says why it matters for its engine).
pub fn expandable_segments_env() -> BTreeMap<String, String> {
    BTreeMap::from([(
        "PYTORCH_CUDA_ALLOC_CONF".to_string(),
        "expandable_segments:True".to_string(),
    )])
}

/// The repo ships Python code the engines must run to load it: every Kimi K2 repo (and its
/// quantized copies) keeps its tokenizer in `tokenization_kimi.py` (TikToken), so vLLM and SGLang
/// refuse it without `--trust-remote-code` (MoonshotAI/Kimi-K2 docs/deploy_guidance.md: every
/// vLLM and SGLang command there passes it).
pub fn needs_remote_code(model: &str, spec_id: &str) -> bool {
    [model, spec_id]
        .iter()
        .any(|m| m.to_ascii_lowercase().contains("kimi-k2"))
}

/// Quote one word for a POSIX shell when it needs it.
pub fn shell_quote(w: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c);
    if !w.is_empty() && w.chars().all(safe) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// `VAR=value ... argv`, shell-quoted.
pub fn command_line(env: &BTreeMap<String, String>, argv: &[String]) -> String {
    env.iter()
        .map(|(k, v)| format!("{k}={}", shell_quote(v)))
        .chain(argv.iter().map(|a| shell_quote(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The precision a checkpoint's weights are stored at, by its format rather than its bytes:
/// the quantization config's bits (AWQ/GPTQ 4 or 8), FP8 8, MXFP4/NVFP4 4, else the dtype's
/// bits. Ranking by bytes instead would put an FP8 repo (its scales and 16-bit embeddings make
/// 9.2 bits per parameter for Qwen3-8B-FP8) above the same FP8 quantized at load.
pub fn nominal_bits(spec: &vramfit_model::ModelSpec) -> f64 {
    match &spec.quant {
        Some(q) => {
            if let Some(b) = q.bits {
                return b as f64;
            }
            let m = q.method.to_ascii_lowercase();
            let f = q.format.as_deref().unwrap_or("").to_ascii_lowercase();
            if m.contains("mxfp4") || f.contains("fp4") || f.contains("w4") {
                4.0
            } else if m.contains("fp8") || f.contains("fp8") || f.contains("w8") {
                8.0
            } else {
                spec.dtype.bytes() as f64 * 8.0
            }
        }
        None => spec.dtype.bytes() as f64 * 8.0,
    }
}

fn cmp_f(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

/// Decode speed below which a plan is not worth its precision: 5 tokens/s, about English
/// reading speed (≈4 words/s at ≈1.3 tokens per word). Such plans (mostly in host RAM) rank
/// after every faster one, fastest first, whatever the goal but speed.
pub const USABLE_TOKENS_PER_S: f64 = 5.0;

/// The context a default answer must give to count as usable: 16k tokens, a long chat or a
/// mid-size document with room for the answer (or the model's own context when shorter).
pub const USABLE_CONTEXT: u64 = 16384;

/// Among offload plans, those slower than this rank after the faster ones whatever their
/// quality tier: three times reading speed, so a chat answer keeps ahead of the reader. A vLLM
/// `--cpu-offload-gb` plan moving 19 GiB per token (~11 tok/s) is no #2 where a llama.cpp
/// `--n-cpu-moe` plan of the same model runs at ~100 tok/s.
pub const INTERACTIVE_TOKENS_PER_S: f64 = 3.0 * USABLE_TOKENS_PER_S;

/// What makes a plan a usable default answer ([`rank`]).
#[derive(Debug, Clone, Copy)]
pub struct Usable {
    /// context per request a plan must reach: the asked one, else [`USABLE_CONTEXT`] capped at
    /// the model's own
    pub context: u64,
    /// requests at once that count toward context × concurrency: the asked number, else 1 (one
    /// person's requests; more slots are shown but do not outrank context)
    pub concurrency: u64,
}

impl Plan {
    /// Every weight on the GPUs (nothing read from host RAM per token).
    pub fn gpu_resident(&self) -> bool {
        self.gpu_resident
    }

    /// Host RAM the launch needs besides the OS: weights, KV cache and compute buffers kept on
    /// the CPU.
    pub fn host_bytes(&self) -> u64 {
        self.host.weights_bytes + self.host.kv_cache_bytes + self.host.compute_bytes
    }

    /// Is this plan a usable default: every weight on the GPUs, at least `u.context` tokens per
    /// request, output quality Fair or better, and not slower than reading speed.
    pub fn usable(&self, u: &Usable) -> bool {
        self.gpu_resident()
            && self.max_model_len >= u.context
            && self.quality.usable()
            && self.roofline_tokens_per_s >= USABLE_TOKENS_PER_S
    }

    /// A GGUF i-quant (IQ4_XS, IQ3_XXS, ...). Of two plans of one quality tier that serve the
    /// same context, the K-quant ranks first although the i-quant is smaller: Q4_K_M is the
    /// common default, and i-quants decode slower on Metal (llama.cpp PR #5747: IQ4_XS 53.9
    /// against Q4_0's 63.1 t/s on an M2 Max GPU, though 4 % faster on CUDA), on the CPU for
    /// sub-4-bit types (ik_llama.cpp PR #152) and on AMD (llama.cpp#9644).
    pub fn is_iquant(&self) -> bool {
        matches!(self.engine.as_str(), "llama.cpp" | "ollama")
            && self.weight_format.starts_with("IQ")
    }

    /// Context × the requests that count, for the ranking.
    fn served(&self, u: &Usable) -> u64 {
        self.max_model_len * self.concurrency.min(u.concurrency.max(1))
    }
}

/// Order plans best first for a goal.
///
/// The balanced default (`quality`): usable plans ([`Plan::usable`]: GPU-resident at a usable
/// context and quality) beat every other; among them the quality tier of weights and KV cache
/// ([`crate::quality`], measured KL divergence) first, then context × concurrency, then a
/// K-quant before an i-quant ([`Plan::is_iquant`]), then speed, then the measured loss itself. Then offload plans fast enough to read: those that reach the
/// usable context first, then those at least [`INTERACTIVE_TOKENS_PER_S`] fast (an offload plan is chosen to run the model at all, and a 13k-token
/// vLLM `--cpu-offload-gb` plan at 11 tok/s is no answer where a partial llama.cpp offload
/// gives 40k at 40 tok/s), then best quality, then the fastest; and last the rest, fastest
/// first. `context`, `concurrency` and `speed` put their own measure
/// first and quality's order after it.
pub fn rank(plans: &mut [Plan], goal: Goal, u: &Usable) {
    let quality = |a: &Plan, b: &Plan| {
        a.quality
            .cmp(&b.quality)
            .then(b.served(u).cmp(&a.served(u)))
            .then(a.is_iquant().cmp(&b.is_iquant()))
            .then(cmp_f(b.roofline_tokens_per_s, a.roofline_tokens_per_s))
            .then(cmp_f(a.quality_kld, b.quality_kld))
    };
    let class = |p: &Plan| -> u8 {
        if p.usable(u) {
            0
        } else if p.roofline_tokens_per_s >= USABLE_TOKENS_PER_S && p.quality.usable() {
            1
        } else if p.roofline_tokens_per_s >= USABLE_TOKENS_PER_S {
            2
        } else {
            3
        }
    };
    let slow = |p: &Plan| p.roofline_tokens_per_s < USABLE_TOKENS_PER_S;
    plans.sort_by(|a, b| match goal {
        Goal::Quality => class(a).cmp(&class(b)).then_with(|| match class(a) {
            1 | 2 => {
                // offload plans: those reaching the usable context, then the quality tier,
                // then speed before context (a few more tokens of context bought with layers
                // moved off the GPU are not worth the speed)
                let short = |p: &Plan| p.max_model_len < u.context;
                let crawl = |p: &Plan| p.roofline_tokens_per_s < INTERACTIVE_TOKENS_PER_S;
                short(a)
                    .cmp(&short(b))
                    .then(crawl(a).cmp(&crawl(b)))
                    .then(a.quality.cmp(&b.quality))
                    .then(cmp_f(b.roofline_tokens_per_s, a.roofline_tokens_per_s))
                    .then(quality(a, b))
            }
            3 => cmp_f(b.roofline_tokens_per_s, a.roofline_tokens_per_s).then(quality(a, b)),
            _ => quality(a, b),
        }),
        Goal::Context => slow(a)
            .cmp(&slow(b))
            .then(b.max_model_len.cmp(&a.max_model_len))
            .then(quality(a, b)),
        Goal::Concurrency => slow(a)
            .cmp(&slow(b))
            .then(b.max_concurrency.cmp(&a.max_concurrency))
            .then(quality(a, b)),
        Goal::Speed => cmp_f(b.roofline_tokens_per_s, a.roofline_tokens_per_s).then(quality(a, b)),
    });
}
