//! One Ollama plan: the engine's plan of the printed command (with its Modelfile), the
//! boundaries, and a reason per knob.

use super::{Knobs, Setup, MODELFILE, NUM_BATCH};
use crate::llamacpp;
use crate::plan::{gpu_args, shell_quote, Plan, Setting};
use vramfit_engine::cmdline::shell_split;
use vramfit_engine::ollama as engine;
use vramfit_engine::{Hardware, Verdict};
use vramfit_model::units::fmt_bytes;

fn setting(knob: &str, value: impl Into<String>, why: impl Into<String>) -> Setting {
    Setting {
        knob: knob.into(),
        value: value.into(),
        why: why.into(),
    }
}

/// Where the name Ollama pulls comes from, and how sure it is.
fn source_why(s: &Setup) -> String {
    let src = &s.source;
    if src.starts_with("hf.co/") {
        format!("Ollama pulls {src} from the Hub (the usual community GGUF name: check that the repo and quant exist)")
    } else if src.ends_with(".gguf") || src.starts_with('/') || src.starts_with("./") {
        format!("the Modelfile's FROM is the GGUF file {src}")
    } else if src.contains('-') && src.contains(':') {
        let lib = src.split(':').next().unwrap_or(src);
        format!("Ollama library tag {src} (some library models spell it with an -instruct or -it infix: see ollama.com/library/{lib}/tags)")
    } else {
        format!("Ollama library tag {src}, this quant being the tag's default")
    }
}

/// The full plan for these knobs, or None when the engine says the printed command does not
/// fit (the searches and the engine agree, so only on a bug).
pub fn render(s: &Setup, k: &Knobs, why_ctx: String, why_gpu: Option<String>) -> Option<Plan> {
    let spec = s.llama.spec;
    let w = s.llama.weights;
    let hw = &s.llama.hw;
    let cfg = s.config(k)?;
    let mp = engine::plan(spec, w, &cfg, hw).ok()?;
    if mp.verdict != Verdict::Fits {
        return None;
    }
    let launch = engine::launch(spec, w, &cfg, hw);
    let lcfg =
        vramfit_engine::llamacpp::parse("llama-server", &launch.llama_args, &[], None).ok()?;
    let max_context = s.max_ctx(k);
    let max_np = s.max_np(k);
    let env = s.env(k);
    let command = s.command(k);
    let argv: Vec<String> = shell_split(&command)
        .unwrap_or_default()
        .into_iter()
        .skip(env.len())
        .collect();
    let n_dev = launch.gpus.len();
    let split = match n_dev {
        1 => "1 GPU".to_string(),
        n => format!("layer split over {n} GPUs by free memory (OLLAMA_SCHED_SPREAD=1)"),
    };
    // the report shows each GPU's real free memory, as the llama.cpp plans do
    let mut devices = mp.devices.clone();
    for (d, g) in devices.iter_mut().zip(&launch.gpus) {
        if let Some(real) = s
            .llama
            .real_hw
            .gpus
            .iter()
            .zip(&hw.gpus)
            .find(|(_, p)| p.name == g.name && p.free_bytes == g.free_bytes)
        {
            d.free_bytes = real.0.free_bytes;
        }
    }
    let bits = w.total_bytes() as f64 * 8.0 / w.total_elems().max(1) as f64;
    let all = s.all_layers();
    let kv = k.kv.to_string();
    let mut settings = vec![
        setting(
            "quant",
            &s.llama.quant,
            format!(
                "{bits:.2} bits per weight, {} of GGUF tensors; {}",
                fmt_bytes(w.total_bytes()),
                source_why(s)
            ),
        ),
        setting(
            MODELFILE,
            s.write_modelfile(k),
            "run this first: num_ctx, num_gpu and num_batch are model options that no environment variable sets (server/routes.go modelOptions); the command creates the model from this file",
        ),
        setting("num_ctx", k.num_ctx.to_string(), why_ctx),
        setting(
            "OLLAMA_NUM_PARALLEL",
            k.np.to_string(),
            format!(
                "{} slot(s) of {} tokens each (Ollama passes -c num_ctx × slots -np slots: one KV stream per slot); at most {max_np} slots of this context fit{}",
                k.np,
                k.num_ctx,
                if s.single_slot {
                    " (Ollama serves this architecture with one slot whatever the variable says: server/sched.go)"
                } else {
                    ""
                }
            ),
        ),
        setting(
            "num_gpu",
            k.num_gpu.to_string(),
            why_gpu.unwrap_or_else(|| {
                format!(
                    "all {} blocks and the output layer on the GPU, pinned: with num_gpu unset llama-server's --fit moves layers off a GPU left with less than 1 GiB free (common/fit.cpp)",
                    all - 1
                )
            }),
        ),
        setting(
            "OLLAMA_KV_CACHE_TYPE",
            &kv,
            format!(
                "{kv} KV cache, {} per token",
                fmt_bytes(mp.kv_cache.bytes_per_token)
            ),
        ),
        setting(
            "OLLAMA_FLASH_ATTENTION",
            if s.flash_attention { "1" } else { "0" },
            if s.flash_attention {
                "flash attention on: the smallest compute buffer, and required for a quantized KV cache"
            } else {
                "off: a GPU here lacks Ollama's flash-attention support (compute capability 6.0+, not 7.2: ml/device.go), so the KV cache stays f16"
            },
        ),
        setting(
            "num_batch",
            NUM_BATCH.to_string(),
            "pinned: Ollama otherwise picks 512, 1024 or 2048 from its own VRAM estimate (server/sched.go automaticGenerationBatch), and the compute buffer grows with it",
        ),
    ];
    if n_dev > 1 {
        settings.push(setting(
            "OLLAMA_SCHED_SPREAD",
            "1",
            "use every GPU: without it Ollama gives the model one GPU whenever its own estimate fits there (server/sched.go)",
        ));
    }
    settings.push(setting(
        "ollama serve",
        "with this environment",
        "where Ollama already runs as a service (systemd, the desktop app), set these variables in its environment instead (systemctl edit ollama.service) and restart it",
    ));
    settings.push(s.llama.headroom.setting());
    let (gpu_arg, free_arg) = gpu_args(&s.llama.real_hw, hw);
    let speed_knobs = llamacpp::Knobs {
        kv: k.kv,
        np: k.np,
        ctx: k.num_ctx,
        ngl: Some(k.num_gpu),
        n_cpu_moe: None,
        tensor_split: None,
    };
    let est = s.llama.tokens_per_s(&speed_knobs, &lcfg);
    let kld = s.llama.weight_kld() + crate::quality::kv_kld(&k.kv.to_string());
    let spread = Hardware {
        gpus: launch.gpus.clone(),
        host_ram_bytes: hw.host_ram_bytes,
    };
    Some(Plan {
        engine: "ollama".into(),
        check: format!(
            "{} && vramfit check --gpu {gpu_arg} --gpu-free {free_arg} -- {}",
            s.write_modelfile(k),
            shell_quote(&command)
        ),
        command,
        argv,
        env,
        settings,
        verdict: mp.verdict,
        devices,
        host: mp.host,
        kv_cache: mp.kv_cache,
        max_model_len: k.num_ctx,
        max_context,
        concurrency: k.np,
        max_concurrency: max_np,
        est_tokens_per_s: (est * 10.0).round() / 10.0,
        roofline_tokens_per_s: (s.llama.roofline_tokens_per_s(&speed_knobs, &lcfg) * 10.0).round()
            / 10.0,
        weight_bits: bits,
        kv_bits: k.kv.bytes_per_elem() * 8.0,
        weight_format: s.llama.quant.clone(),
        quality_kld: kld,
        quality: crate::quality::Tier::of(kld),
        gpu_resident: k.num_gpu >= all,
        split,
        planned_free_bytes: spread.gpus.iter().map(|g| g.free_bytes).collect(),
    })
}
