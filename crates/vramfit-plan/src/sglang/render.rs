//! A solved SGLang launch as a [`Plan`]: the command, the `check` line, one reason per knob and
//! the decode-speed estimate.

use super::{Knobs, Setup, Weights, KV_FP8};
use crate::plan::{command_line, Plan, Setting};
use crate::speed;
use vramfit_engine::MemoryPlan;
use vramfit_model::units::fmt_bytes;

pub fn render(
    setup: &Setup,
    k: &Knobs,
    mp: MemoryPlan,
    max_context: u64,
    max_conc: u64,
    default_mfs: f64,
) -> Plan {
    let argv = setup.argv(k);
    let env = setup.env();
    let weight_bits = match k.weights {
        Weights::Checkpoint | Weights::Variant(_) => crate::plan::nominal_bits(setup.spec),
        Weights::Fp8 => 8.0,
    };
    let (weight_format, weight_kld) = match k.weights {
        Weights::Checkpoint => (crate::quality::checkpoint_format(setup.spec), 0.0),
        Weights::Fp8 => (
            "FP8 at load".to_string(),
            crate::quality::checkpoint_kld(Some("fp8")),
        ),
        Weights::Variant(_) => (
            crate::quality::checkpoint_format(setup.spec),
            crate::quality::variant_kld(weight_bits),
        ),
    };
    let kld = weight_kld + crate::quality::kv_kld(k.kv);
    let est = speed::tensor_pipeline(setup.spec, &setup.hw, &mp.devices, k.tp, 0);
    let split = crate::plan::split_name(k.tp, k.pp);
    let tokens = mp.kv_cache.tokens;
    let heads = setup.spec.n_head();
    let n_ctx = setup.spec.n_ctx_train;
    let ctx_why = if k.context_length == max_context {
        format!(
            "the longest that fits: the {tokens}-token pool must hold one request of the full length (SGLang caps a request at min(context, pool) − 1 tokens){}",
            if max_context == n_ctx && tokens > n_ctx {
                format!(", and the model's own {n_ctx} is reached")
            } else {
                String::new()
            }
        )
    } else {
        format!(
            "as asked ({max_conc} of it fit the {tokens}-token pool at once); up to {max_context} fits with these settings"
        )
    };
    let mfs_why = if (k.mfs - default_mfs).abs() < 5e-4 {
        format!("SGLang's default for this GPU ({default_mfs:.3}, server_args.py), pinned: weights + token pool = this × the free memory at start")
    } else {
        format!(
            "SGLang's default {default_mfs:.3} lowered so that the {:.1} % outside the static pool holds the activations, CUDA graphs and NCCL buffers on this free memory",
            (1.0 - k.mfs) * 100.0
        )
    };
    let mut settings = vec![
        Setting {
            knob: "--quantization".into(),
            value: match k.weights {
                Weights::Variant(repo) => format!("(checkpoint {repo})"),
                w => w.flag().unwrap_or("(checkpoint)").into(),
            },
            why: match k.weights {
                Weights::Checkpoint => {
                    format!("the checkpoint as published, {weight_bits:.1} bits per weight")
                }
                Weights::Fp8 => {
                    "FP8 weights quantized at load (half of 16-bit), no other repo needed".into()
                }
                Weights::Variant(repo) => crate::variants::why(
                    crate::variants::Engine::Sglang,
                    repo,
                    setup.spec,
                    &setup.hw,
                    weight_bits,
                ),
            },
        },
        Setting {
            knob: "--context-length".into(),
            value: k.context_length.to_string(),
            why: ctx_why,
        },
        Setting {
            knob: "--max-running-requests".into(),
            value: match k.max_running_requests {
                Some(n) => n.to_string(),
                None => "(SGLang's own)".into(),
            },
            why: match k.max_running_requests {
                Some(n) => format!(
                    "pinned to the {n} asked for; {max_conc} request{} of the full length fit{} the pool at once ({:.2}x)",
                    if max_conc == 1 { "" } else { "s" },
                    if max_conc == 1 { "s" } else { "" },
                    mp.kv_cache.max_concurrency
                ),
                None => format!(
                    "left to SGLang, which keeps {} request slots sharing the {tokens}-token pool (model_runner_kv_cache_mixin.py _resolve_max_num_reqs, v0.5.x): {max_conc} request{} of the full length at once, more when shorter",
                    own_slots(&mp).map_or("its own number of".to_string(), |s| s.to_string()),
                    if max_conc == 1 { "" } else { "s" },
                ),
            },
        },
        Setting {
            knob: "--kv-cache-dtype".into(),
            value: k.kv.into(),
            why: format!(
                "{} per token of KV cache{}",
                fmt_bytes(mp.kv_cache.bytes_per_token),
                if k.kv == KV_FP8 {
                    " (e4m3: the FP8 format SGLang's default attention backends read in-kernel)"
                } else {
                    ""
                }
            ),
        },
        Setting {
            knob: "--mem-fraction-static".into(),
            value: format!("{:.3}", k.mfs),
            why: mfs_why,
        },
        Setting {
            knob: "--tp-size/--pp-size".into(),
            value: format!("{}/{}", k.tp, k.pp),
            why: format!("{split}: TP is the largest power of two dividing the GPU count and the {heads} attention heads (and fitting the KV heads), PP takes the rest"),
        },
        Setting {
            knob: "--chunked-prefill-size".into(),
            value: k.chunked_prefill_size.to_string(),
            why: "SGLang's default for this GPU, pinned: the activation peak is planned at it".into(),
        },
        Setting {
            knob: "--cuda-graph-max-bs".into(),
            value: k.cuda_graph_max_bs.to_string(),
            why: "SGLang's default for this GPU and TP, pinned: CUDA graph memory is planned at it".into(),
        },
        Setting {
            knob: "--page-size".into(),
            value: k.page_size.to_string(),
            why: if k.page_size == 1 {
                "SGLang's default, pinned: the pool is counted in single tokens".into()
            } else {
                format!("what SGLang sets for the TRT-LLM attention backends of this GPU, pinned: the pool is whole pages of {} tokens", k.page_size)
            },
        },
        crate::plan::expandable_segments_setting(
            "fewer fragmentation OOMs in PyTorch's caching allocator (SGLang honours it)",
        ),
    ];
    settings.push(setup.headroom.setting());
    let command = command_line(&env, &argv);
    Plan {
        engine: "sglang".into(),
        check: crate::plan::check_line(&setup.hw, &setup.hw, &command),
        command,
        argv,
        env,
        settings,
        verdict: mp.verdict,
        devices: mp.devices,
        host: mp.host,
        kv_cache: mp.kv_cache,
        max_model_len: k.context_length,
        max_context,
        concurrency: k.max_running_requests.unwrap_or(max_conc),
        max_concurrency: max_conc,
        est_tokens_per_s: (est * 10.0).round() / 10.0,
        roofline_tokens_per_s: (est * 10.0).round() / 10.0,
        weight_bits,
        kv_bits: if k.kv == KV_FP8 { 8.0 } else { 16.0 },
        quality: crate::quality::Tier::of(kld),
        quality_kld: kld,
        weight_format,
        gpu_resident: true,
        split,
        planned_free_bytes: setup.hw.gpus.iter().map(|g| g.free_bytes).collect(),
    }
}

/// The request slots SGLang derives when `--max-running-requests` is not given, as the engine
/// model reports them (its `max_running_requests` setting).
pub fn own_slots(mp: &MemoryPlan) -> Option<u64> {
    mp.settings
        .iter()
        .find(|(k, _)| k == "max_running_requests")
        .and_then(|(_, v)| v.parse().ok())
}
