//! One transformers plan: the engine's plan of the printed command, the boundaries, a reason per
//! knob, and the same run as a Python call.

use super::{Knobs, Setup, Weights};
use crate::plan::{command_line, Plan, Setting};
use crate::speed;
use vramfit_engine::Verdict;
use vramfit_model::units::{fmt_bytes, MIB};

fn setting(knob: &str, value: impl Into<String>, why: impl Into<String>) -> Setting {
    Setting {
        knob: knob.into(),
        value: value.into(),
        why: why.into(),
    }
}

/// The run as `from_pretrained` + `generate` (keyword names of transformers 4.56+ / 5.x, where
/// `dtype` replaced `torch_dtype`).
pub fn python(s: &Setup, k: &Knobs) -> String {
    let dt = if s.dtype == "bf16" {
        "torch.bfloat16"
    } else {
        "torch.float16"
    };
    let mut args = vec![format!("{:?}", s.model), format!("dtype={dt}")];
    match &k.max_memory {
        None => args.push("device_map=\"cuda:0\"".into()),
        Some(mm) => {
            let mut parts: Vec<String> = mm
                .gpus_mib
                .iter()
                .enumerate()
                .map(|(i, m)| format!("{i}: \"{m}MiB\""))
                .collect();
            parts.push(format!("\"cpu\": \"{}MiB\"", mm.cpu_mib));
            args.push("device_map=\"auto\"".into());
            args.push(format!("max_memory={{{}}}", parts.join(", ")));
        }
    }
    match k.weights {
        Weights::Half => {}
        Weights::Int8 => {
            args.push("quantization_config=BitsAndBytesConfig(load_in_8bit=True)".into())
        }
        Weights::Nf4 => args.push(format!(
            "quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype={dt})"
        )),
    }
    args.push("attn_implementation=\"sdpa\"".into());
    format!(
        "AutoModelForCausalLM.from_pretrained({}).generate(input_ids, max_new_tokens={})  # input_ids: {} × {} tokens",
        args.join(", "),
        k.new_tokens,
        k.batch,
        k.prompt
    )
}

/// The full plan for these knobs, or None when the engine says the command does not fit.
pub fn render(s: &Setup, k: &Knobs, max_total: u64, why_split: Option<String>) -> Option<Plan> {
    let mp = s.evaluate(k)?;
    if mp.verdict != Verdict::Fits {
        return None;
    }
    let argv = s.argv(k);
    let env = s.env();
    let command = command_line(&env, &argv);
    let max_batch = s.max_batch(k);
    let (params, active) = vramfit_model::layout::param_counts(s.spec);
    let frac = active as f64 / params.max(1) as f64;
    let on_gpus: u64 = mp.devices.iter().map(|d| d.weights_bytes).sum();
    let host = mp.host.weights_bytes;
    // ranked by the format's precision (crate::plan::nominal_bits), shown by its bytes
    let loaded_bits = (on_gpus + host) as f64 * 8.0 / params.max(1) as f64;
    let weight_bits = match k.weights {
        Weights::Half => crate::plan::nominal_bits(s.spec),
        Weights::Int8 => 8.0,
        Weights::Nf4 => 4.0,
    };
    let (weight_format, kld) = match k.weights {
        Weights::Half => (crate::quality::checkpoint_format(s.spec), 0.0),
        Weights::Int8 => (
            "INT8 at load".to_string(),
            crate::quality::checkpoint_kld(Some("int8")),
        ),
        Weights::Nf4 => (
            "NF4 at load".to_string(),
            crate::quality::checkpoint_kld(Some("nf4")),
        ),
    };
    // roofline: the GPUs hold consecutive layers and run one after another; offloaded weights
    // cross PCIe every forward (accelerate's hooks copy them to the GPU)
    let per_dev: Vec<(f64, f64)> = mp
        .devices
        .iter()
        .zip(&s.hw.gpus)
        .map(|(d, g)| {
            (
                d.weights_bytes as f64 * frac,
                g.bandwidth_gbps
                    .unwrap_or(speed::UNKNOWN_GPU_BANDWIDTH_GBPS),
            )
        })
        .collect();
    let est = speed::sequential(&per_dev, host as f64 * frac, speed::PCIE_BANDWIDTH_GBPS);
    let used_gpus = mp.devices.iter().filter(|d| d.weights_bytes > 0).count();
    let split = match (&k.max_memory, host > 0) {
        (None, _) => "1 GPU".to_string(),
        (Some(_), true) if used_gpus == 1 => "1 GPU + CPU offload (device_map auto)".into(),
        (Some(_), true) => format!("layers over {used_gpus} GPUs + CPU offload (device_map auto)"),
        (Some(_), false) => format!("layers over {used_gpus} GPUs (device_map auto)"),
    };
    let name = k.weights.name(s.dtype);
    let mut settings = vec![
        setting(
            "weights",
            &name,
            match k.weights {
                Weights::Half if s.spec.quant.is_some() => format!(
                    "the checkpoint is already quantized ({}): planned as transformers' {} compute copy, an upper bound",
                    s.spec.quant.as_ref().map(|q| q.method.as_str()).unwrap_or("?"),
                    s.dtype
                ),
                Weights::Half => format!("{} weights as published, {loaded_bits:.1} bits per weight", s.dtype),
                Weights::Int8 => format!("bitsandbytes LLM.int8: linear layers in int8 with a scale per row ({loaded_bits:.1} bits per weight); embeddings, norms and lm_head stay {}", s.dtype),
                Weights::Nf4 => format!("bitsandbytes NF4 with double quantization: linear layers in 4 bits plus 8-bit block scales ({loaded_bits:.1} bits per weight); slower kernels than {}", s.dtype),
            },
        ),
        setting(
            "--dtype",
            s.dtype,
            if s.dtype == "bf16" {
                "bfloat16: every GPU here has it (compute capability 8.0+)"
            } else {
                "float16: a GPU here lacks bfloat16 (compute capability below 8.0); a model trained in bf16 may overflow in fp16"
            },
        ),
        setting(
            "--prompt-tokens/--max-new-tokens",
            format!("{}/{}", k.prompt, k.new_tokens),
            format!(
                "{} tokens per sequence; {max_total} is the longest that fits with {} new tokens (one more does not)",
                k.total(),
                k.new_tokens
            ),
        ),
        setting(
            "--batch-size",
            k.batch.to_string(),
            format!("{} sequence(s) per generate call (the dynamic KV cache grows with each); at most {max_batch} of this length fit", k.batch),
        ),
    ];
    match &k.max_memory {
        None => settings.push(setting(
            "--device-map",
            "cuda:0",
            "every weight on the one GPU: nothing for accelerate to place",
        )),
        Some(mm) => settings.push(setting(
            "--device-map/--max-memory",
            format!("auto/{}", mm.arg()),
            why_split.unwrap_or_else(|| {
                format!(
                    "pinned budgets so accelerate places the same layers whatever is free at load: each GPU's planned free memory{} (its KV cache and activations use the rest){}",
                    match mm.gpus_mib.first().zip(s.hw.gpus.first()) {
                        Some((b, g)) if *b < g.free_bytes / MIB => format!(" less {} MiB", g.free_bytes / MIB - b),
                        _ => String::new(),
                    },
                    if host > 0 {
                        format!("; {} of weights stay in host RAM and cross PCIe every token (~{} GB/s)", fmt_bytes(host), speed::PCIE_BANDWIDTH_GBPS)
                    } else {
                        String::new()
                    }
                )
            }),
        )),
    }
    settings.extend([
        setting(
            "--attn-implementation",
            "sdpa",
            "PyTorch SDPA: no per-head score matrix (eager keeps fp32 scores), transformers' default",
        ),
        setting(
            "PYTORCH_CUDA_ALLOC_CONF",
            "expandable_segments:True",
            "fewer fragmentation OOMs while the dynamic cache grows",
        ),
        setting(
            "python",
            python(s, k),
            "the same run in Python (the command above is vramfit's notation for it)",
        ),
        s.headroom.setting(),
    ]);
    let mut devices = mp.devices.clone();
    for (d, g) in devices.iter_mut().zip(&s.real_hw.gpus) {
        d.free_bytes = g.free_bytes;
    }
    Some(Plan {
        engine: "transformers".into(),
        check: crate::plan::check_line(&s.real_hw, &s.hw, &command),
        command,
        argv,
        env,
        settings,
        verdict: mp.verdict,
        devices,
        host: mp.host,
        kv_cache: mp.kv_cache,
        max_model_len: k.total(),
        max_context: max_total,
        concurrency: k.batch,
        max_concurrency: max_batch,
        est_tokens_per_s: (est * 10.0).round() / 10.0,
        roofline_tokens_per_s: (est * 10.0).round() / 10.0,
        weight_bits,
        kv_bits: 16.0,
        weight_format,
        quality_kld: kld,
        quality: crate::quality::Tier::of(kld),
        gpu_resident: host == 0,
        split,
        planned_free_bytes: s.hw.gpus.iter().map(|g| g.free_bytes).collect(),
    })
}
