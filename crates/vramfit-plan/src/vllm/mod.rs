//! vLLM plans: weight precision (the checkpoint's, or vLLM's in-flight `--quantization fp8` /
//! `bitsandbytes`), KV dtype, tensor/pipeline parallel over the given GPUs, CPU offload when
//! the weights alone do not fit, and `--max-model-len` at the exact boundary.
//!
//! Each plan is evaluated by `vllm::plan` on the `VllmConfig` parsed from the very command the
//! plan prints (`vramfit check` of it gives the same numbers), less the suggestions `check`
//! searches for when a command does not start (a plan never shows them).

use crate::headroom::Headroom;
use crate::plan::{command_line, Plan, Setting};
use crate::request::Request;
use crate::speed;
use std::collections::BTreeMap;
use vramfit_engine::cmdline::Command;
use vramfit_engine::vllm::{self, args::batch_defaults, Version};
use vramfit_engine::{Hardware, MemoryPlan, Verdict};
use vramfit_model::units::{fmt_bytes, GIB};
use vramfit_model::ModelSpec;

/// Weight precision as vLLM loads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// the checkpoint as published (its dtype or its own quantization)
    Checkpoint,
    /// `--quantization fp8`: dynamic per-tensor FP8 of an unquantized checkpoint
    Fp8,
    /// `--quantization bitsandbytes`: in-flight NF4
    Bnb4,
    /// a pre-quantized checkpoint of the model (AWQ, GPTQ, FP8 repo of the catalog), served
    /// by its repo id; the [`Setup`] then holds that repo and its spec ([`crate::variants`])
    Variant(&'static str),
}

impl Weights {
    fn flag(self) -> Option<&'static str> {
        match self {
            Weights::Checkpoint | Weights::Variant(_) => None,
            Weights::Fp8 => Some("fp8"),
            Weights::Bnb4 => Some("bitsandbytes"),
        }
    }
}

/// Tensor × pipeline parallel for `n` GPUs by vLLM's rules: the attention heads must divide by
/// TP (vllm/config/model.py `verify_with_parallel_config`), custom all-reduce and NCCL rings
/// want a power of two, a quantized checkpoint's groups or blocks must stay whole on every
/// rank ([`crate::variants::tp_ok`]); the rest of the GPUs become pipeline stages (layers
/// split evenly, vllm/distributed/utils.py `get_pp_indices`).
pub fn parallel_layout(spec: &ModelSpec, n: u64) -> (u64, u64) {
    let heads = spec.n_head().max(1);
    let mut tp = 1;
    let mut t = 1;
    while t <= n {
        if n.is_multiple_of(t) && heads.is_multiple_of(t) && crate::variants::tp_ok(spec, t) {
            tp = t;
        }
        t *= 2;
    }
    let pp = (n / tp).min(spec.n_layer().max(1));
    (tp, pp)
}

/// One vLLM launch.
#[derive(Debug, Clone, PartialEq)]
pub struct Knobs {
    pub weights: Weights,
    /// `--kv-cache-dtype`: `auto` or `fp8`
    pub kv: &'static str,
    pub tp: u64,
    pub pp: u64,
    pub gmu: f64,
    /// `--max-model-len`; None = `auto` (the search probe)
    pub max_model_len: Option<u64>,
    pub max_num_seqs: u64,
    pub max_num_batched_tokens: u64,
    pub cpu_offload_gib: u64,
}

pub struct Setup<'a> {
    pub spec: &'a ModelSpec,
    pub model: String,
    pub hw: &'a Hardware,
    pub headroom: Headroom,
}

impl<'a> Setup<'a> {
    pub fn env(&self) -> BTreeMap<String, String> {
        // fewer fragmentation failures when the KV pool is allocated next to the weights
        // (PyTorch CUDA caching allocator docs, expandable_segments)
        crate::plan::expandable_segments_env()
    }

    pub fn argv(&self, k: &Knobs) -> Vec<String> {
        let mut a: Vec<String> = vec!["vllm".into(), "serve".into(), self.model.clone()];
        let mml = k
            .max_model_len
            .map(|n| n.to_string())
            .unwrap_or_else(|| "auto".into());
        for (f, v) in [
            ("--max-model-len", mml),
            ("--gpu-memory-utilization", format!("{:.2}", k.gmu)),
            ("--max-num-seqs", k.max_num_seqs.to_string()),
            (
                "--max-num-batched-tokens",
                k.max_num_batched_tokens.to_string(),
            ),
            ("--kv-cache-dtype", k.kv.to_string()),
            ("--tensor-parallel-size", k.tp.to_string()),
            ("--pipeline-parallel-size", k.pp.to_string()),
        ] {
            a.push(f.into());
            a.push(v);
        }
        if let Some(q) = k.weights.flag() {
            a.push("--quantization".into());
            a.push(q.into());
        }
        if k.cpu_offload_gib > 0 {
            a.push("--cpu-offload-gb".into());
            a.push(k.cpu_offload_gib.to_string());
        }
        if crate::plan::needs_remote_code(&self.model, &self.spec.id) {
            a.push("--trust-remote-code".into());
        }
        a
    }

    /// The engine's plan of the command for these knobs (without `check`'s suggestions).
    pub fn evaluate(&self, k: &Knobs) -> MemoryPlan {
        let mut words: Vec<String> = self.env().iter().map(|(k, v)| format!("{k}={v}")).collect();
        words.extend(self.argv(k));
        let cmd = Command::parse(&words).expect("the solver's own command parses");
        let cfg = vllm::parse(&cmd, None).expect("the solver's own command parses");
        vllm::plan_without_suggestions(self.spec, None, &cfg, self.hw)
    }

    /// The longest `--max-model-len` that starts (vLLM's auto-fit length, checked).
    pub fn max_len(&self, k: &Knobs) -> u64 {
        let mut probe = k.clone();
        probe.max_model_len = None;
        let p = self.evaluate(&probe);
        if p.verdict != Verdict::Fits {
            return 0;
        }
        p.max_model_len
    }
}

/// Budget fraction: the release default, lowered so that total × fraction stays within free
/// memory less the headroom (vLLM stops at start when free < requested, gpu_worker.py).
pub fn memory_fraction(hw: &Hardware, headroom: &Headroom) -> f64 {
    let default = Version::CURRENT.default_gpu_memory_utilization();
    let mut f = default;
    for (g, h) in hw.gpus.iter().zip(&headroom.bytes) {
        let cap = (g.free_bytes.saturating_sub(*h)) as f64 / g.total_bytes.max(1) as f64;
        let own = default - *h as f64 / g.total_bytes.max(1) as f64;
        f = f.min(cap).min(own);
    }
    ((f * 100.0).floor() / 100.0).max(0.05)
}

/// Plans for every weight precision and KV dtype that fits.
pub fn plans(setup: &Setup, req: &Request) -> Vec<Plan> {
    let hw = setup.hw;
    let n = hw.gpus.len() as u64;
    if n == 0 {
        return Vec::new();
    }
    let cc = hw
        .gpus
        .iter()
        .filter_map(|g| g.compute_capability)
        .fold(f64::INFINITY, f64::min);
    let quantized_ckpt = setup.spec.quant.is_some();
    let mut weight_opts = vec![Weights::Checkpoint];
    if !quantized_ckpt {
        // FP8 weights run natively from Ada/Hopper (8.9) and through the Marlin W8A16 kernel
        // on Ampere (8.0+) (vllm/model_executor/layers/quantization/fp8.py)
        if cc >= 8.0 || cc.is_infinite() {
            weight_opts.push(Weights::Fp8);
        }
        weight_opts.push(Weights::Bnb4);
    }
    plans_for(setup, req, &weight_opts, &kv_options(hw), true)
}

/// The KV dtypes plans offer: an FP8 KV cache needs FP8 attention kernels, Ada/Hopper and newer
/// (FlashAttention 3 / FlashInfer); taken as compute capability 8.9+ on every GPU.
pub fn kv_options(hw: &Hardware) -> Vec<&'static str> {
    let cc = hw
        .gpus
        .iter()
        .filter_map(|g| g.compute_capability)
        .fold(f64::INFINITY, f64::min);
    if cc >= 8.9 && !cc.is_infinite() {
        vec!["auto", "fp8"]
    } else {
        vec!["auto"]
    }
}

/// Plans serving the catalog's pre-quantized checkpoints of the model (`vllm serve
/// Qwen/Qwen3-8B-AWQ ...`), those vLLM runs on these GPUs ([`crate::variants::supported`]).
/// Each is evaluated with the variant's own spec, loaded as `check` loads the repo.
pub fn variant_plans(
    offers: &[crate::variants::Offer],
    hw: &Hardware,
    req: &Request,
    headroom: &Headroom,
) -> Vec<Plan> {
    let mut out = Vec::new();
    for o in offers {
        let spec = &o.resolved.spec;
        if crate::variants::supported(crate::variants::Engine::Vllm, spec, hw).is_err() {
            continue;
        }
        let setup = Setup {
            spec,
            model: o.variant.repo.clone(),
            hw,
            headroom: headroom.clone(),
        };
        let w = Weights::Variant(o.variant.repo.as_str());
        out.extend(plans_for(&setup, req, &[w], &kv_options(hw), true));
    }
    out
}

/// Plans for the given weight precisions and KV dtypes; `offload`: allow `--cpu-offload-gb`.
pub fn plans_for(
    setup: &Setup,
    req: &Request,
    weight_opts: &[Weights],
    kv_opts: &[&'static str],
    offload: bool,
) -> Vec<Plan> {
    let hw = setup.hw;
    let n = hw.gpus.len() as u64;
    if n == 0 {
        return Vec::new();
    }
    let (tp, pp) = parallel_layout(setup.spec, n);
    let first = &hw.gpus[0];
    let (default_mnbt, default_seqs) =
        batch_defaults(Version::CURRENT, first.total_bytes, &first.name);
    let seqs = req.concurrency.unwrap_or(default_seqs);
    let gmu = memory_fraction(hw, &setup.headroom);
    let min_len = req
        .context
        .unwrap_or(crate::request::MIN_CONTEXT.min(setup.spec.n_ctx_train.max(1)));
    let mut out = Vec::new();
    for &w in weight_opts {
        for &kv in kv_opts {
            let mut k = Knobs {
                weights: w,
                kv,
                tp,
                pp,
                gmu,
                max_model_len: None,
                max_num_seqs: seqs,
                max_num_batched_tokens: default_mnbt,
                cpu_offload_gib: 0,
            };
            let mut fit = setup.max_len(&k);
            if fit < min_len && offload {
                match min_offload(setup, &k, min_len) {
                    Some(g) => {
                        k.cpu_offload_gib = g;
                        fit = setup.max_len(&k);
                    }
                    None => continue,
                }
            }
            let len = req.context.unwrap_or(fit).min(fit);
            if len == 0 || len < min_len {
                continue;
            }
            k.max_model_len = Some(len);
            let mp = setup.evaluate(&k);
            if mp.verdict != Verdict::Fits {
                continue;
            }
            let mut mp = mp;
            let want = req.concurrency.unwrap_or(1);
            let conc = |mp: &MemoryPlan| mp.kv_cache.max_concurrency.floor().max(0.0) as u64;
            if conc(&mp) < want && req.context.is_none() {
                // use what is left for the asked requests: the longest --max-model-len at which
                // `want` requests of the full length fit the pool (the pool does not depend on
                // the length, so fitting is monotone)
                let ok = |l: u64| {
                    let mut kk = k.clone();
                    kk.max_model_len = Some(l);
                    let p = setup.evaluate(&kk);
                    p.verdict == Verdict::Fits && conc(&p) >= want
                };
                match vramfit_engine::search::largest_fitting(min_len, len, 1, ok) {
                    Some(l) => {
                        k.max_model_len = Some(l);
                        mp = setup.evaluate(&k);
                    }
                    None => continue,
                }
            }
            let max_conc = conc(&mp);
            if max_conc < want {
                continue;
            }
            out.push(render(setup, &k, mp, fit, max_conc));
        }
    }
    out
}

/// The fewest whole GiB of `--cpu-offload-gb` that let `min_len` tokens start. Offloading X
/// bytes lowers a worker's weights by X and so raises its KV pool by X (gpu_worker.py: the
/// pool is what is left after the weights), so the first guess comes from one plan's pool
/// deficit; a few evaluations then confirm it is the fewest.
fn min_offload(setup: &Setup, k: &Knobs, min_len: u64) -> Option<u64> {
    let probe = |g: u64| {
        let mut kk = k.clone();
        kk.cpu_offload_gib = g;
        kk.max_model_len = Some(min_len);
        setup.evaluate(&kk)
    };
    let p0 = probe(0);
    let workers = p0.devices.len().max(1) as u64;
    let need = p0.kv_cache.bytes_per_token / workers * min_len.div_ceil(16) * 16;
    let worst = p0
        .devices
        .iter()
        .map(|d| d.kv_cache_bytes)
        .min()
        .unwrap_or(0);
    let weights = p0
        .devices
        .iter()
        .map(|d| d.weights_bytes)
        .max()
        .unwrap_or(0);
    let mut g = ((need as i64 - worst).max(0) as u64).div_ceil(GIB).max(1);
    let cap = weights.div_ceil(GIB) + 1;
    let fits = |g: u64| probe(g).verdict == Verdict::Fits;
    while !fits(g) {
        g += 1;
        if g > cap {
            return None;
        }
    }
    while g > 1 && fits(g - 1) {
        g -= 1;
    }
    Some(g)
}

fn render(setup: &Setup, k: &Knobs, mp: MemoryPlan, max_context: u64, max_conc: u64) -> Plan {
    let argv = setup.argv(k);
    let env = setup.env();
    let weight_bits = match k.weights {
        Weights::Checkpoint | Weights::Variant(_) => crate::plan::nominal_bits(setup.spec),
        Weights::Fp8 => 8.0,
        Weights::Bnb4 => 4.5,
    };
    let (weight_format, weight_kld) = match k.weights {
        Weights::Checkpoint => (crate::quality::checkpoint_format(setup.spec), 0.0),
        Weights::Fp8 => (
            "FP8 at load".to_string(),
            crate::quality::checkpoint_kld(Some("fp8")),
        ),
        Weights::Bnb4 => (
            "NF4 at load".to_string(),
            crate::quality::checkpoint_kld(Some("nf4")),
        ),
        Weights::Variant(_) => (
            crate::quality::checkpoint_format(setup.spec),
            crate::quality::variant_kld(weight_bits),
        ),
    };
    let kld = weight_kld + crate::quality::kv_kld(k.kv);
    let est = speed::tensor_pipeline(
        setup.spec,
        setup.hw,
        &mp.devices,
        k.tp,
        mp.host.weights_bytes,
    );
    let split = crate::plan::split_name(k.tp, k.pp);
    let heads = setup.spec.n_head();
    let mut settings = vec![
        Setting {
            knob: "--quantization".into(),
            value: match k.weights {
                Weights::Variant(repo) => format!("(checkpoint {repo})"),
                w => w.flag().unwrap_or("(checkpoint)").into(),
            },
            why: match k.weights {
                Weights::Checkpoint => format!("the checkpoint as published, {weight_bits:.1} bits per weight"),
                Weights::Fp8 => "FP8 weights quantized at load (half of 16-bit), no other repo needed".into(),
                Weights::Bnb4 => "bitsandbytes 4-bit quantized at load: a quarter of 16-bit, slower kernels".into(),
                Weights::Variant(repo) => crate::variants::why(crate::variants::Engine::Vllm, repo, setup.spec, setup.hw, weight_bits),
            },
        },
        Setting {
            knob: "--max-model-len".into(),
            value: k.max_model_len.unwrap_or(0).to_string(),
            why: format!("{max_context} is the longest that starts with these settings (vLLM's own auto-fit length)"),
        },
        Setting {
            knob: "--max-num-seqs".into(),
            value: k.max_num_seqs.to_string(),
            why: format!("pinned; {max_conc} requests of the full length fit the KV pool at once ({:.2}x)", mp.kv_cache.max_concurrency),
        },
        Setting {
            knob: "--max-num-batched-tokens".into(),
            value: k.max_num_batched_tokens.to_string(),
            why: "vLLM's default for this GPU, pinned: the activation peak is profiled at it".into(),
        },
        Setting {
            knob: "--kv-cache-dtype".into(),
            value: k.kv.into(),
            why: format!("{} per token of KV cache", fmt_bytes(mp.kv_cache.bytes_per_token)),
        },
        Setting {
            knob: "--gpu-memory-utilization".into(),
            value: format!("{:.2}", k.gmu),
            why: format!("{}: {}", setup.headroom.why, "budget = total × this, must stay under free memory"),
        },
        Setting {
            knob: "--tensor-parallel-size/--pipeline-parallel-size".into(),
            value: format!("{}/{}", k.tp, k.pp),
            why: format!("{split}: TP is the largest power of two dividing both the GPU count and the {heads} attention heads, PP takes the rest"),
        },
        crate::plan::expandable_segments_setting(
            "fewer fragmentation OOMs in PyTorch's caching allocator",
        ),
    ];
    if k.cpu_offload_gib > 0 {
        settings.push(Setting {
            knob: "--cpu-offload-gb".into(),
            value: k.cpu_offload_gib.to_string(),
            why: format!("the fewest whole GiB of weights in host RAM that let {} tokens start; read over PCIe every step (~{} GB/s). Check that it takes effect: vllm#51396 (open, Aug 2026) reports it silently ignored where the V2 model runner is used (the default for most models; fix in PR #48468), which then ends in an OOM", k.max_model_len.unwrap_or(0), speed::PCIE_BANDWIDTH_GBPS),
        });
    }
    let command = command_line(&env, &argv);
    Plan {
        engine: "vllm".into(),
        check: crate::plan::check_line(setup.hw, setup.hw, &command),
        command,
        argv,
        env,
        settings,
        verdict: mp.verdict,
        devices: mp.devices,
        host: mp.host,
        kv_cache: mp.kv_cache,
        max_model_len: k.max_model_len.unwrap_or(0),
        max_context,
        concurrency: k.max_num_seqs.min(max_conc.max(1)),
        max_concurrency: max_conc,
        est_tokens_per_s: (est * 10.0).round() / 10.0,
        roofline_tokens_per_s: (est * 10.0).round() / 10.0,
        weight_bits,
        kv_bits: if k.kv == "fp8" { 8.0 } else { 16.0 },
        quality: crate::quality::Tier::of(kld),
        quality_kld: kld,
        weight_format,
        gpu_resident: k.cpu_offload_gib == 0,
        split,
        planned_free_bytes: setup.hw.gpus.iter().map(|g| g.free_bytes).collect(),
    }
}
