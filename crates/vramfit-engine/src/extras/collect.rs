//! Reading a command's extras (rules and sources in the module docs above).

use super::clip::{warmup_bytes, ClipDims};
use super::mm_profile::{dummy_batch, encoder_peak_bytes, image_limit, Scheduler};
use super::{flag, flag_all, has, lora_slot_bytes, Extra};
use crate::cmdline::EngineKind;
use vramfit_model::ModelSpec;

/// A model or file the command names, as the caller resolved it.
pub struct Loaded {
    pub spec: Option<ModelSpec>,
    /// bytes of its tensors as they will be loaded (GGUF header, or predicted)
    pub weight_bytes: u64,
    /// a vision projector's encoder widths (its GGUF `clip.vision.*` keys)
    pub clip: Option<ClipDims>,
}

/// What [`collect`] needs to know about the main plan.
pub struct Context<'a> {
    pub engine: EngineKind,
    pub args: &'a [String],
    pub spec: &'a ModelSpec,
    /// devices in the plan (vLLM/SGLang: tensor × pipeline ranks)
    pub devices: usize,
    /// bytes per KV element of the main plan (2 for f16, 1 for fp8)
    pub kv_elem_bytes: f64,
    /// KV cells of the main plan (llama.cpp: the whole context)
    pub kv_tokens: u64,
    /// the model's vision encoder widths (its `vision_config`), for a projector `-hf` fetches
    pub vision: Option<ClipDims>,
    /// vLLM: what its multimodal profiling pass needs (`None` for a text-only model)
    pub mm: Option<MmProfile>,
}

/// vLLM's multimodal profile inputs (`mm_profile.rs`).
#[derive(Debug, Clone, Copy)]
pub struct MmProfile {
    pub scheduler: Scheduler,
    /// prompt tokens of one image of the largest size (`None`: the processor is not read)
    pub tokens_per_image: Option<u64>,
    /// the text dummy batch's activation peak on one GPU (the plan's compute bytes)
    pub text_peak_bytes: u64,
}

/// The extras `ctx.args` ask for, and notes on what could not be counted. `load` resolves a
/// model name, path or GGUF the command names.
pub fn collect(
    ctx: &Context,
    load: &dyn Fn(&str) -> Result<Loaded, String>,
) -> (Vec<Extra>, Vec<String>) {
    let mut extras = Vec::new();
    let mut notes = Vec::new();
    let a = ctx.args;
    let n = ctx.devices.max(1);
    let on_each = |b: u64| vec![b; n];
    match ctx.engine {
        EngineKind::Vllm => {
            let tp: u64 = flag(a, &["--tensor-parallel-size", "-tp"])
                .and_then(|v| v.parse().ok())
                .unwrap_or(1);
            if has(a, &["--enable-lora"]) {
                let slots = flag(a, &["--max-loras"])
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(1);
                let rank = flag(a, &["--max-lora-rank"])
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(16);
                let elem = lora_elem(flag(a, &["--lora-dtype"]), ctx.spec);
                let (bytes, moe) = lora_slot_bytes(
                    ctx.spec,
                    rank,
                    slots,
                    tp,
                    has(a, &["--fully-sharded-loras"]),
                    elem,
                );
                extras.push(Extra {
                    what: format!("LoRA slots (--max-loras {slots}, --max-lora-rank {rank})"),
                    device_bytes: on_each(bytes),
                    host_bytes: 0,
                    kv_bytes_per_token: 0,
                    activation: false,
                    source: "vllm/lora/layers/base_linear.py create_lora_weights",
                });
                if moe {
                    notes.push("LoRA on MoE experts is not counted".into());
                }
            }
            if let Some(mm) = &ctx.mm {
                vllm_mm_profile(ctx, mm, &mut extras, &mut notes);
            }
            if let Some(sc) = flag(a, &["--speculative-config", "-sc"]) {
                let draft = serde_json::from_str::<serde_json::Value>(sc)
                    .ok()
                    .and_then(|v| v.get("model").and_then(|m| m.as_str()).map(str::to_string));
                if let Some(d) = draft {
                    push_draft(&mut extras, &mut notes, load, &d, ctx, tp, "vllm/v1/spec_decode: the drafter loads with the target's TP and its layers share the KV pool");
                }
            }
        }
        EngineKind::Sglang => {
            let tp: u64 = flag(a, &["--tp-size", "--tp", "--tensor-parallel-size"])
                .and_then(|v| v.parse().ok())
                .unwrap_or(1);
            if has(a, &["--enable-lora"]) || flag(a, &["--lora-paths"]).is_some() {
                let slots = flag(a, &["--max-loras-per-batch"])
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(8);
                let rank = match flag(a, &["--max-lora-rank"]).and_then(|v| v.parse().ok()) {
                    Some(r) => r,
                    None => {
                        notes.push("SGLang takes the LoRA rank from the adapters: rank 16 assumed (give --max-lora-rank)".into());
                        16
                    }
                };
                let (bytes, moe) =
                    lora_slot_bytes(ctx.spec, rank, slots, tp, false, ctx.spec.dtype.bytes());
                extras.push(Extra {
                    what: format!("LoRA memory pool (--max-loras-per-batch {slots}, rank {rank})"),
                    device_bytes: on_each(bytes),
                    host_bytes: 0,
                    kv_bytes_per_token: 0,
                    activation: false,
                    source: "sglang/srt/lora/mem_pool.py get_lora_A_shape/get_lora_B_shape",
                });
                if moe {
                    notes.push("LoRA on MoE experts is not counted".into());
                }
            }
            if let Some(d) = flag(
                a,
                &["--speculative-draft-model-path", "--speculative-draft"],
            ) {
                push_draft(&mut extras, &mut notes, load, d, ctx, tp, "sglang/srt/speculative: the draft worker loads its model and takes KV for its layers from the same budget");
            }
        }
        EngineKind::LlamaCpp | EngineKind::Ollama => llamacpp(ctx, load, &mut extras, &mut notes),
        EngineKind::Transformers => {}
    }
    (extras, notes)
}

fn vllm_mm_profile(
    ctx: &Context,
    mm: &MmProfile,
    extras: &mut Vec<Extra>,
    notes: &mut Vec<String>,
) {
    let a = ctx.args;
    if has(a, &["--skip-mm-profiling"]) {
        notes.push("--skip-mm-profiling: vLLM does not profile the multimodal encoder, so its peak (a batch of images) is not in the memory budget and can run out of memory at the first image requests".into());
        return;
    }
    // MultiModalConfig.get_limit_per_prompt: 999 per modality unless the flag says
    let limit = flag(a, &["--limit-mm-per-prompt"])
        .and_then(image_limit)
        .unwrap_or(999);
    if limit == 0 {
        return;
    }
    // otherwise the vLLM plan's own note says the pass is not modelled
    let (Some(t), Some(v)) = (mm.tokens_per_image, ctx.vision) else {
        return;
    };
    let (budget, items) = dummy_batch(&mm.scheduler, t, limit);
    let side = v.image_size / v.patch_size.max(1);
    let enc = encoder_peak_bytes(items, side * side, v.patch_size, v.n_embd, v.n_ff);
    // encoder outputs kept in the encoder cache while the text batch runs (in the model dtype)
    let outputs = items * t * ctx.spec.n_embd * 2;
    let extra = enc.saturating_sub(mm.text_peak_bytes).max(outputs);
    extras.push(Extra {
        what: format!(
            "multimodal profile ({items} images of {0} x {0} in the encoder, budget {budget} tokens; encoder peak {1:.2} GiB vs text peak {2:.2} GiB)",
            v.image_size,
            enc as f64 / (1u64 << 30) as f64,
            mm.text_peak_bytes as f64 / (1u64 << 30) as f64,
        ),
        device_bytes: vec![extra; ctx.devices.max(1)],
        host_bytes: 0,
        kv_bytes_per_token: 0,
        activation: true,
        source: "vllm/v1/worker/gpu_model_runner.py profile_run (encoder dummy batch, outputs cached during the text dummy run); vllm/multimodal/budget.py _get_max_items",
    });
}

fn lora_elem(dtype: Option<&str>, spec: &ModelSpec) -> u64 {
    match dtype.map(|d| d.to_ascii_lowercase()) {
        Some(d) if d.contains("32") => 4,
        Some(d) if d.contains("16") => 2,
        _ => spec.dtype.bytes(),
    }
}

#[allow(clippy::too_many_arguments)]
fn push_draft(
    extras: &mut Vec<Extra>,
    notes: &mut Vec<String>,
    load: &dyn Fn(&str) -> Result<Loaded, String>,
    name: &str,
    ctx: &Context,
    tp: u64,
    source: &'static str,
) {
    match load(name) {
        Ok(d) => {
            let per_token = d
                .spec
                .as_ref()
                .map(|s| s.kv_bytes_per_token(ctx.kv_elem_bytes))
                .unwrap_or(0);
            let per_rank = d.weight_bytes.div_ceil(tp.max(1));
            extras.push(Extra {
                what: format!("draft model {name}"),
                device_bytes: vec![per_rank; ctx.devices.max(1)],
                host_bytes: 0,
                kv_bytes_per_token: per_token,
                activation: false,
                source,
            });
        }
        Err(e) => notes.push(format!("draft model {name} is not counted: {e}")),
    }
}

fn llamacpp(
    ctx: &Context,
    load: &dyn Fn(&str) -> Result<Loaded, String>,
    extras: &mut Vec<Extra>,
    notes: &mut Vec<String>,
) {
    let a = ctx.args;
    let n = ctx.devices.max(1);
    let first = |b: u64| {
        let mut v = vec![0; n];
        v[0] = b;
        v
    };
    for f in flag_all(a, &["--lora", "--lora-scaled"]) {
        match load(f) {
            Ok(l) => extras.push(Extra {
                what: format!("LoRA adapter {f}"),
                device_bytes: first(l.weight_bytes),
                host_bytes: 0,
                kv_bytes_per_token: 0,
                activation: false,
                source: "common/common.cpp common_init_from_params: llama_adapter_lora_init",
            }),
            Err(e) => notes.push(format!("LoRA adapter {f} is not counted: {e}")),
        }
    }
    let offload = !has(a, &["--no-mmproj-offload"]);
    let mmproj = flag(a, &["--mmproj", "-mm"]);
    let place = |b: u64| {
        if offload {
            (first(b), 0)
        } else {
            (vec![0; n], b)
        }
    };
    let mut clip = ctx.vision;
    if let Some(f) = mmproj {
        match load(f) {
            Ok(l) => {
                clip = l.clip;
                let (dev, host) = place(l.weight_bytes);
                extras.push(Extra {
                    what: format!("vision projector {f}"),
                    device_bytes: dev,
                    host_bytes: host,
                    kv_bytes_per_token: 0,
                    activation: false,
                    source: "tools/mtmd/clip.cpp clip_model_loader",
                });
            }
            Err(e) => notes.push(format!("vision projector {f} is not counted: {e}")),
        }
    } else if flag(a, &["-hf", "--hf-repo"]).is_some()
        && !has(a, &["--no-mmproj"])
        && ctx.spec.vision_params > 0
    {
        // -hf downloads the repo's mmproj file; community projectors ship in F16
        let (dev, host) = place(ctx.spec.vision_params * 2);
        extras.push(Extra {
            what: format!("vision projector fetched by -hf ({} M parameters, F16 assumed)", ctx.spec.vision_params / 1_000_000),
            device_bytes: dev,
            host_bytes: host,
            kv_bytes_per_token: 0,
            activation: false,
            source: "common/arg.cpp: -hf fetches the repo's mmproj unless --no-mmproj; tools/mtmd/clip.cpp",
        });
    }
    if mmproj.is_some()
        || extras
            .iter()
            .any(|e| e.what.starts_with("vision projector"))
    {
        match clip {
            Some(d) => {
                // clip.cpp warmup: flash attention is tried unless -fa off
                let fa = !matches!(flag(a, &["-fa", "--flash-attn"]), Some("off" | "0" | "false"));
                let (dev, host) = place(warmup_bytes(&d, d.image_size, fa));
                extras.push(Extra {
                    what: format!(
                        "vision projector warm-up compute ({0} x {0} image, flash attention {1})",
                        d.image_size,
                        if fa { "on" } else { "off" }
                    ),
                    device_bytes: dev,
                    host_bytes: host,
                    kv_bytes_per_token: 0,
                    activation: false,
                    source: "tools/mtmd/clip.cpp warmup/alloc_compute_meta: the encoder graph of one image of warmup_image_size (= image_size by default; Qwen-VL projectors warm up larger)",
                });
            }
            None => notes.push("the projector's warmup compute buffer (hundreds of MiB at the largest image) is not counted: its encoder widths are not known".into()),
        }
    }
    if let Some(d) = flag(
        a,
        &["-md", "--model-draft", "-hfd", "-hfrd", "--hf-repo-draft"],
    ) {
        match load(d) {
            Ok(l) => {
                let ngld = flag(a, &["-ngld", "--gpu-layers-draft", "--n-gpu-layers-draft"]);
                let on_gpu = !matches!(ngld, Some("0"));
                let np: u64 = flag(a, &["-np", "--parallel"])
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(1)
                    .max(1);
                let cells: u64 = flag(a, &["-cd", "--ctx-size-draft"])
                    .and_then(|v| v.parse().ok())
                    .filter(|c| *c > 0)
                    .unwrap_or(ctx.kv_tokens / np);
                let kv_elem = match flag(a, &["-ctkd", "--cache-type-k-draft"]) {
                    Some(t) if t.starts_with("q8") => 34.0 / 32.0,
                    Some(t) if t.starts_with("q4") => 18.0 / 32.0,
                    _ => 2.0,
                };
                let kv = l
                    .spec
                    .as_ref()
                    .map(|s| s.kv_bytes_per_token(kv_elem))
                    .unwrap_or(0)
                    * cells;
                let ub: u64 = flag(a, &["-ub", "--ubatch-size"])
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(512);
                let fa = !matches!(
                    flag(a, &["-fa", "--flash-attn"]),
                    Some("off" | "0" | "false")
                );
                let compute = l
                    .spec
                    .as_ref()
                    .map(|s| draft_compute_bytes(s, ub, cells, fa))
                    .unwrap_or(0);
                let bytes = l.weight_bytes + kv + compute;
                extras.push(Extra {
                    what: format!(
                        "draft model {d} ({cells} cells of KV, {} MiB compute buffer)",
                        compute >> 20
                    ),
                    device_bytes: if on_gpu { first(bytes) } else { vec![0; n] },
                    host_bytes: if on_gpu { 0 } else { bytes },
                    kv_bytes_per_token: 0,
                    activation: false,
                    source: "tools/server load_model: the draft is a second llama_context (params copied from the target's, so its -ub), n_ctx = -cd, else n_ctx / n_parallel; -ngld layers on the GPU",
                });
                if l.spec.is_none() {
                    notes.push("the draft context's compute buffer is not counted (its model is not known)".into());
                }
            }
            Err(e) => notes.push(format!("draft model {d} is not counted: {e}")),
        }
    }
}

/// The draft context's compute buffer (llama-context.cpp sched_reserve, the phase model of
/// llamacpp/compute.rs for one device): the larger of the output phase (f32 logits for a whole
/// ubatch, as builds before b9460 reserve, plus the hidden state twice and the f16 KQ mask with
/// flash attention) and the attention phase (the KQ mask, and without flash attention the f32
/// scores of every head over the draft's cells).
pub fn draft_compute_bytes(spec: &ModelSpec, ub: u64, cells: u64, fa: bool) -> u64 {
    let embd = 2 * spec.n_embd * ub * 4;
    let mask = if fa { cells * ub * 2 } else { 0 };
    let out = spec.n_vocab * ub * 4 + embd + mask;
    let n_head = spec.layers.iter().map(|l| l.n_head).max().unwrap_or(0);
    let attn = if fa {
        cells * ub * 2 + embd
    } else {
        cells * ub * 4 + n_head * cells * ub * 4 + embd
    };
    out.max(attn)
}
