//! The hook from `check` into [`vramfit_engine::extras`]: LoRA slots, draft models and vision
//! projectors the command loads besides the model, resolved here (GGUF headers for adapter and
//! projector files, the usual model resolution for drafts) and added to the plan.

use vramfit_engine::cmdline::{Command, EngineKind};
use vramfit_engine::extras::clip::ClipDims;
use vramfit_engine::extras::mm_profile::{tokens_per_image, Scheduler};
use vramfit_engine::extras::{self, Budget, Context, Loaded, MmProfile};
use vramfit_engine::MemoryPlan;
use vramfit_model::source::FileSource;
use vramfit_model::ModelSpec;

/// Bytes the vision projector takes on the first GPU (its tensors and its warm-up compute
/// buffer), for llama.cpp's `--fit`, which keeps that much free (ggml-org/llama.cpp#21489).
pub fn projector_gpu_bytes(plan: &MemoryPlan, cmd: &Command, spec: &ModelSpec) -> u64 {
    let Some(ctx) = context(plan, cmd, spec) else {
        return 0;
    };
    let (found, _) = extras::collect(&ctx, &load);
    found
        .iter()
        .filter(|e| e.what.starts_with("vision projector"))
        .map(|e| e.device_bytes.first().copied().unwrap_or(0))
        .sum()
}

fn context<'a>(plan: &MemoryPlan, cmd: &'a Command, spec: &'a ModelSpec) -> Option<Context<'a>> {
    let engine = cmd.engine?;
    let per_token_f16 = spec.kv_bytes_per_token(1.0).max(1);
    let config = vramfit_model::catalog::find_model(&spec.id).map(|m| &m.config);
    let setting = |k: &str| -> Option<u64> {
        plan.settings
            .iter()
            .find(|(key, _)| key == k)
            .and_then(|(_, v)| v.split_whitespace().next()?.parse().ok())
    };
    // a plan calibrated from a log already holds the measured peak, encoder pass included
    let calibrated = plan.settings.iter().any(|(k, _)| k == "calibration");
    let mm = (engine == EngineKind::Vllm && spec.vision_params > 0 && !calibrated)
        .then(|| {
            Some(MmProfile {
                scheduler: Scheduler {
                    max_num_batched_tokens: setting("max_num_batched_tokens")?,
                    max_num_seqs: setting("max_num_seqs")?,
                    max_model_len: setting("max_model_len")?,
                },
                tokens_per_image: config.and_then(tokens_per_image),
                text_peak_bytes: plan.devices.first().map(|d| d.compute_bytes)?,
            })
        })
        .flatten();
    Some(Context {
        engine,
        args: &cmd.args,
        spec,
        devices: plan.devices.len(),
        kv_elem_bytes: plan.kv_cache.bytes_per_token as f64 / per_token_f16 as f64,
        kv_tokens: plan.kv_cache.tokens,
        vision: config
            .and_then(|c| c.get("vision_config"))
            .and_then(ClipDims::from_vision_config),
        mm,
    })
}

/// Count the command's extras in `plan` (the model's own plan, already computed).
pub fn add(plan: &mut MemoryPlan, cmd: &Command, spec: &ModelSpec) {
    let Some(ctx) = context(plan, cmd, spec) else {
        return;
    };
    let engine = ctx.engine;
    let (found, notes) = extras::collect(&ctx, &load);
    if !found.is_empty() || !notes.is_empty() {
        // the engine model's own "not modelled" notes for the flags counted here
        let counted = [
            "--lora",
            "--max-lora",
            "--enable-lora",
            "--mmproj",
            "drafter",
            "-md ",
            "--speculative-draft",
            "multimodal encoder",
            "--skip-mm-profiling",
        ];
        plan.notes.retain(|n| {
            let disclaims = ["not modelled", "no memory effect", "not counted", "ignored"]
                .iter()
                .any(|w| n.contains(w));
            !(disclaims && counted.iter().any(|f| n.contains(f)))
        });
    }
    plan.notes.extend(notes);
    let (budget, len_key) = match engine {
        EngineKind::Vllm => (Budget::KvPool, Some("max_model_len")),
        // SGLang starts with a pool shorter than --context-length and refuses longer requests
        // (its own plan says so): only a pool with no room left stops it
        EngineKind::Sglang => (Budget::KvPool, None),
        _ => (Budget::Additive, None),
    };
    let configured = len_key.and_then(|k| {
        plan.settings
            .iter()
            .find(|(key, _)| key == k)
            .and_then(|(_, v)| v.split_whitespace().next()?.parse().ok())
    });
    extras::apply(plan, &found, budget, configured);
}

/// A file or model the command names: a local GGUF by its header (adapters and projectors
/// have no model spec), anything else as a model.
fn load(name: &str) -> Result<Loaded, String> {
    let path = std::path::Path::new(name);
    if name.to_ascii_lowercase().ends_with(".gguf") && path.is_file() {
        let src = FileSource::open(path).map_err(|e| format!("cannot open {name}: {e}"))?;
        let g = vramfit_model::gguf::read_gguf(&src).map_err(|e| format!("{name}: {e}"))?;
        let spec = vramfit_model::resolve::spec_from_gguf(name, &g).ok();
        // a projector (tools/mtmd/clip.cpp load_hparams): its encoder widths
        let k = |key: &str| g.get_u64(&format!("clip.vision.{key}"));
        let clip = (|| {
            Some(ClipDims {
                image_size: k("image_size")?,
                patch_size: k("patch_size").filter(|p| *p > 0)?,
                n_embd: k("embedding_length")?,
                n_ff: k("feed_forward_length")?,
                n_head: k("attention.head_count")?,
            })
        })();
        return Ok(Loaded {
            spec,
            weight_bytes: g.weight_set().total_bytes(),
            clip,
        });
    }
    let r = super::check::load(name).map_err(|e| e.message)?;
    let weight_bytes = match &r.weights {
        Some(w) => w.total_bytes(),
        None if r.gguf_quant.is_some() => super::check::gguf_weights(&r)
            .map_err(|e| e.message)?
            .total_bytes(),
        None => {
            let (total, _) = vramfit_model::layout::param_counts(&r.spec);
            total.saturating_mul(r.spec.dtype.bytes())
        }
    };
    Ok(Loaded {
        spec: Some(r.spec),
        weight_bytes,
        clip: None,
    })
}
