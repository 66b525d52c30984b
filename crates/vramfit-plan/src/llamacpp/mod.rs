//! llama.cpp (llama-server) plans: for each GGUF quant and KV cache type, all layers on the GPUs
//! if the context fits, else the routed experts of the first layers in host RAM (MoE) or fewer
//! GPU layers (dense), with the context and the parallel slots at their exact boundaries.
//!
//! Every plan, and every probe of the boundary searches, is evaluated with the engine crate's own
//! `llamacpp::layout` on the `LlamaCppConfig` parsed from the very command the plan prints, so
//! `vramfit check` of that command gives the same numbers. The tensors are read for placement
//! once per quant ([`llamacpp::prepare`]), not once per probe.

mod plans;
pub use plans::llama_plans;

use crate::headroom::Headroom;
use crate::plan::{command_line, Plan, Setting};
use crate::speed;
use std::collections::BTreeMap;
use vramfit_engine::llamacpp::placement::PreparedWeights;
use vramfit_engine::llamacpp::{self, placement, Layout, LlamaCppConfig};
use vramfit_engine::search::{largest_by_doubling, largest_fitting, smallest_fitting};
use vramfit_engine::{Hardware, Verdict};
use vramfit_model::units::{fmt_bytes, MIB};
use vramfit_model::weights::layer_of;
use vramfit_model::{GgmlType, ModelSpec, WeightSet};

/// The knob values of one llama-server launch.
#[derive(Debug, Clone, PartialEq)]
pub struct Knobs {
    pub kv: GgmlType,
    /// `-np`
    pub np: u64,
    /// context per slot; `-c` is `ctx × np`
    pub ctx: u64,
    /// `-ngl`; None = every layer and the output layer
    pub ngl: Option<u64>,
    /// `--n-cpu-moe`
    pub n_cpu_moe: Option<u64>,
    /// `-ts`, MiB per GPU (layer split by planned free memory)
    pub tensor_split: Option<Vec<u64>>,
}

/// One model at one quant, on planned hardware.
pub struct Setup<'a> {
    pub spec: &'a ModelSpec,
    pub weights: &'a WeightSet,
    /// `-m PATH` or `-hf REPO:QUANT`
    pub model_args: Vec<String>,
    pub quant: String,
    /// hardware with free memory already reduced by the headroom
    pub hw: Hardware,
    pub headroom: Headroom,
    /// the GPUs as given (free before headroom), for the report
    pub real_hw: Hardware,
    pub n_blocks: u64,
    /// `weights` read once for placement
    prepared: PreparedWeights<'a>,
}

/// KV cache types tried, best first (common/arg.cpp kv_cache_types; quantized V needs -fa).
pub const KV_TYPES: &[GgmlType] = &[GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0];

impl<'a> Setup<'a> {
    pub fn new(
        spec: &'a ModelSpec,
        weights: &'a WeightSet,
        model_args: Vec<String>,
        quant: String,
        real_hw: &Hardware,
        headroom: Headroom,
    ) -> Setup<'a> {
        let mut hw = real_hw.clone();
        for (g, h) in hw.gpus.iter_mut().zip(&headroom.bytes) {
            g.free_bytes = g.free_bytes.saturating_sub(*h);
        }
        let prepared = llamacpp::prepare(spec, weights);
        Setup {
            spec,
            weights,
            model_args,
            quant,
            hw,
            headroom,
            real_hw: real_hw.clone(),
            n_blocks: prepared.n_blocks,
            prepared,
        }
    }

    /// The command for these knobs.
    pub fn argv(&self, k: &Knobs) -> Vec<String> {
        let mut a: Vec<String> = vec!["llama-server".into()];
        a.extend(self.model_args.iter().cloned());
        let ngl = k.ngl.unwrap_or(self.n_blocks + 1);
        let kv = k.kv.to_string();
        for (f, v) in [
            ("-c", (k.ctx * k.np).to_string()),
            ("-np", k.np.to_string()),
            ("-ngl", ngl.to_string()),
            ("-fa", "on".to_string()),
            ("-ctk", kv.clone()),
            ("-ctv", kv),
            ("-b", "2048".to_string()),
            ("-ub", "512".to_string()),
        ] {
            a.push(f.into());
            a.push(v);
        }
        if let Some(n) = k.n_cpu_moe {
            a.push("--n-cpu-moe".into());
            a.push(n.to_string());
        }
        if let Some(ts) = &k.tensor_split {
            a.push("-sm".into());
            a.push("layer".into());
            a.push("-ts".into());
            a.push(
                ts.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        a.push("--fit".into());
        a.push("off".into());
        a
    }

    /// The engine's config for these knobs, read from the command itself.
    pub fn config(&self, k: &Knobs) -> LlamaCppConfig {
        let argv = self.argv(k);
        llamacpp::parse(&argv[0], &argv[1..], &[], None).expect("the solver's own command parses")
    }

    /// The engine's layout of a config at a requested context (`llamacpp::layout`).
    pub fn layout(&self, cfg: &LlamaCppConfig, n_ctx: u64) -> Layout {
        llamacpp::layout_prepared(self.spec, &self.prepared, cfg, &self.hw, n_ctx)
    }

    fn fits_cfg(&self, cfg: &LlamaCppConfig, n_ctx: u64) -> bool {
        self.layout(cfg, n_ctx).fits(&self.hw.gpus)
    }

    /// Does the launch fit the planned free memory?
    pub fn fits(&self, k: &Knobs) -> bool {
        self.fits_cfg(&self.config(k), k.ctx * k.np)
    }

    /// The largest context per slot (a multiple of 256, at most the training context) that fits
    /// with the other knobs; 0 when 256 does not.
    pub fn max_ctx(&self, k: &Knobs) -> u64 {
        let cfg = self.config(k);
        let ok = |c: u64| self.fits_cfg(&cfg, c * k.np);
        let top = (self.spec.n_ctx_train / 256).max(1) * 256;
        largest_fitting(256, top, 256, ok).unwrap_or(0)
    }

    /// The most slots of `k.ctx` each that fit (up to 256); 0 when one does not.
    pub fn max_np(&self, k: &Knobs) -> u64 {
        let ok = |n: u64| {
            let mut kk = k.clone();
            kk.np = n;
            self.fits(&kk)
        };
        // doubling first: most answers are a few slots
        largest_by_doubling(256, ok)
    }

    /// Fewest layers whose routed experts go to host RAM so that `k` fits, searched up to
    /// `upper` (a count known to fit, e.g. that of a larger KV type; `n_blocks` when none is);
    /// None if even all do not suffice.
    pub fn min_cpu_moe(&self, k: &Knobs, upper: u64) -> Option<u64> {
        let ok = |n: u64| self.fits(&self.with_cpu_moe(k, n));
        smallest_fitting(0, upper.min(self.n_blocks), 1, ok)
    }

    /// `k` with the routed experts of the first `n` layers in host RAM (`--n-cpu-moe n`) and,
    /// on several GPUs, the layer split that goes with it ([`Setup::split_for`]).
    pub fn with_cpu_moe(&self, k: &Knobs, n: u64) -> Knobs {
        let mut kk = k.clone();
        kk.n_cpu_moe = (n > 0).then_some(n);
        kk.tensor_split = self.split_for(n);
        kk
    }

    /// Layer split for several GPUs with the routed experts of the first `n_cpu_moe` layers in
    /// host RAM. `--n-cpu-moe` empties the first layers, which a split by free memory hands to
    /// the first GPU, leaving it nearly idle while weights sit in host RAM. llama.cpp gives layer
    /// `il` to the first device whose cumulative `-ts` share exceeds `il / layers`
    /// (src/llama-model.cpp load_tensors), so `-ts` as layer counts places layers exactly: each
    /// GPU gets the layers whose GPU-resident weights fill it in proportion to its free memory.
    pub fn split_for(&self, n_cpu_moe: u64) -> Option<Vec<u64>> {
        let free = self.split()?;
        if n_cpu_moe == 0 {
            return Some(free);
        }
        let n = self.n_blocks as usize;
        let mut per_layer = vec![0u64; n + 1];
        for t in &self.weights.tensors {
            match layer_of(&t.name) {
                Some(l) if (l as usize) < n => {
                    if !(t.name.contains("_exps") && l < n_cpu_moe) {
                        per_layer[l as usize] += t.bytes;
                    }
                }
                None if t.name.starts_with("output") => per_layer[n] += t.bytes,
                _ => {}
            }
        }
        let total = per_layer.iter().sum::<u64>().max(1) as f64;
        let total_free = free.iter().sum::<u64>().max(1) as f64;
        let mut counts = vec![0u64; free.len()];
        let (mut d, mut done, mut share) = (0usize, 0u64, free[0] as f64 / total_free);
        for b in per_layer {
            // a layer goes to the GPU whose share its middle falls in
            while d + 1 < free.len() && (done as f64 + b as f64 / 2.0) / total > share {
                d += 1;
                share += free[d] as f64 / total_free;
            }
            counts[d] += 1;
            done += b;
        }
        Some(counts)
    }

    /// Most GPU layers (`-ngl`, output layer counted) that fit; None if not even 0 does.
    pub fn max_ngl(&self, k: &Knobs) -> Option<u64> {
        let ok = |n: u64| {
            let mut kk = k.clone();
            kk.ngl = Some(n);
            self.fits(&kk)
        };
        largest_fitting(0, self.n_blocks + 1, 1, ok)
    }

    /// Layer split shares for several GPUs: the planned free memory in MiB.
    pub fn split(&self) -> Option<Vec<u64>> {
        (self.hw.gpus.len() > 1).then(|| self.hw.gpus.iter().map(|g| g.free_bytes / MIB).collect())
    }

    /// Expected loss of the quant's weights ([`crate::quality::gguf_kld`]); a quant the
    /// scoreboard lacks is placed by its bits per weight between the measured ones.
    pub fn weight_kld(&self) -> f64 {
        crate::quality::gguf_kld(&self.quant).unwrap_or_else(|| {
            let bpw =
                self.weights.total_bytes() as f64 * 8.0 / self.weights.total_elems().max(1) as f64;
            crate::quality::kld_of_bits(bpw)
        })
    }

    /// Bytes one token reads per GPU (with that GPU's bandwidth, GB/s) and from host RAM, for
    /// these knobs.
    fn bytes_read(&self, k: &Knobs, cfg: &LlamaCppConfig) -> (Vec<(f64, f64)>, f64) {
        let free: Vec<u64> = self.hw.gpus.iter().map(|g| g.free_bytes).collect();
        let devs = placement::layer_devices(cfg, self.n_blocks, &free);
        let mut on_dev = vec![0.0; free.len()];
        let mut host = 0.0;
        let cpu_moe = k.n_cpu_moe.unwrap_or(0);
        for t in &self.weights.tensors {
            let a = speed::active_bytes(&t.name, t.bytes, &t.dims, self.spec);
            let layer = layer_of(&t.name);
            let dev = match layer {
                Some(l) if t.name.contains("_exps") && l < cpu_moe => None,
                Some(l) => devs.get(l as usize).copied().flatten(),
                None if t.name.starts_with("output") => devs.last().copied().flatten(),
                None => None,
            };
            match dev {
                Some(d) => on_dev[d] += a,
                None => host += a,
            }
        }
        let dev_bw = on_dev
            .iter()
            .zip(&self.hw.gpus)
            .map(|(b, g)| {
                (
                    *b,
                    g.bandwidth_gbps
                        .unwrap_or(speed::UNKNOWN_GPU_BANDWIDTH_GBPS),
                )
            })
            .collect();
        (dev_bw, host)
    }

    /// Decode tokens/s for these knobs, as ggml reaches it ([`speed::ggml_decode`]).
    pub fn tokens_per_s(&self, k: &Knobs, cfg: &LlamaCppConfig) -> f64 {
        let (dev_bw, host) = self.bytes_read(k, cfg);
        let cost = if self.hw.gpus.iter().any(vramfit_engine::hardware::is_apple) {
            speed::GGML_METAL
        } else {
            speed::GGML_GPU
        };
        speed::ggml_decode(
            &dev_bw,
            host,
            speed::HOST_BANDWIDTH_GBPS,
            self.n_blocks,
            cost,
        )
    }

    /// The bandwidth roofline of the same knobs, which plans of every engine are ranked by.
    pub fn roofline_tokens_per_s(&self, k: &Knobs, cfg: &LlamaCppConfig) -> f64 {
        let (dev_bw, host) = self.bytes_read(k, cfg);
        speed::sequential(&dev_bw, host, speed::HOST_BANDWIDTH_GBPS)
    }

    /// The full plan for these knobs: the engine's plan of the printed command, the boundaries
    /// and a reason per knob.
    pub fn plan(&self, k: &Knobs, why_ctx: String, why_offload: Option<String>) -> Plan {
        let cfg = self.config(k);
        let argv = self.argv(k);
        // the engine's layout of the printed command (what `check` computes), without check's
        // own searches and suggestions
        let l = self.layout(&cfg, k.ctx * k.np);
        let devices = l.device_plans(&self.real_hw.gpus);
        let fits = l.fits(&self.hw.gpus);
        let max_context = self.max_ctx(k);
        let max_concurrency = self.max_np(k);
        let n_dev = self.hw.gpus.len();
        let split = match n_dev {
            0 => "CPU only".to_string(),
            1 => "1 GPU".to_string(),
            n if k.n_cpu_moe.is_some() => {
                format!("layer split over {n} GPUs, layers counted to fill each (-sm layer -ts)")
            }
            n => format!("layer split over {n} GPUs by free memory (-sm layer -ts)"),
        };
        let kvb = k.kv.to_string();
        let mut settings = vec![
            Setting {
                knob: "quant".into(),
                value: self.quant.clone(),
                why: format!(
                    "{:.2} bits per weight, {} of GGUF tensors{}",
                    self.weights.total_bytes() as f64 * 8.0 / self.weights.total_elems().max(1) as f64,
                    fmt_bytes(self.weights.total_bytes()),
                    if self.quant.starts_with("IQ") {
                        "; an i-quant: ranked after a K-quant of the same quality tier and context (Q4_K_M is the common default; i-quants decode slower on Metal, on the CPU and on AMD)"
                    } else {
                        ""
                    }
                ),
            },
            Setting {
                knob: "-c".into(),
                value: (k.ctx * k.np).to_string(),
                why: why_ctx,
            },
            Setting {
                knob: "-np".into(),
                value: k.np.to_string(),
                why: format!(
                    "{} slot(s) of {} tokens each (a separate KV stream per slot); at most {max_concurrency} slots of this context fit",
                    k.np, k.ctx
                ),
            },
            Setting {
                knob: "-ngl".into(),
                value: k.ngl.unwrap_or(self.n_blocks + 1).to_string(),
                why: why_offload.clone().unwrap_or_else(|| {
                    format!("all {} blocks and the output layer on the GPU", self.n_blocks)
                }),
            },
            Setting {
                knob: "-ctk/-ctv".into(),
                value: kvb.clone(),
                why: format!(
                    "{} KV cache, {} per token",
                    kvb,
                    fmt_bytes(l.kv_bytes_per_token)
                ),
            },
            Setting {
                knob: "-fa".into(),
                value: "on".into(),
                why: "flash attention: the smallest compute buffer, and required for a quantized V cache".into(),
            },
            Setting {
                knob: "-b/-ub".into(),
                value: "2048/512".into(),
                why: "llama.cpp's defaults, pinned: the compute buffer grows with -ub".into(),
            },
            Setting {
                knob: "--fit".into(),
                value: "off".into(),
                why: "so llama.cpp's own fitting (on by default since b7407) cannot change what was planned".into(),
            },
        ];
        if let Some(n) = k.n_cpu_moe {
            settings.push(Setting {
                knob: "--n-cpu-moe".into(),
                value: n.to_string(),
                why: format!(
                    "routed experts of layers 0–{} in host RAM: the fewest that make -c {} fit",
                    n - 1,
                    k.ctx * k.np
                ),
            });
        }
        if let Some(ts) = &k.tensor_split {
            settings.push(Setting {
                knob: "-ts".into(),
                value: ts.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","),
                why: if k.n_cpu_moe.is_some() {
                    "layers per GPU, counted so the weights each keeps there (the first layers' experts are in host RAM) fill it in proportion to its planned free memory".into()
                } else {
                    "layers split in proportion to each GPU's planned free MiB (llama.cpp's own default, pinned)".into()
                },
            });
        }
        settings.push(self.headroom.setting());
        let planned_free: Vec<u64> = self.hw.gpus.iter().map(|g| g.free_bytes).collect();
        let env = BTreeMap::new();
        let est = self.tokens_per_s(k, &cfg);
        let kld = self.weight_kld() + crate::quality::kv_kld(&k.kv.to_string());
        Plan {
            engine: "llama.cpp".into(),
            command: command_line(&env, &argv),
            check: crate::plan::check_line(&self.real_hw, &self.hw, &command_line(&env, &argv)),
            argv,
            env,
            settings,
            verdict: if fits {
                Verdict::Fits
            } else {
                Verdict::DoesNotFit
            },
            devices,
            host: l.host_plan(),
            kv_cache: l.kv_summary(),
            max_model_len: k.ctx,
            max_context,
            concurrency: k.np,
            max_concurrency,
            est_tokens_per_s: (est * 10.0).round() / 10.0,
            roofline_tokens_per_s: (self.roofline_tokens_per_s(k, &cfg) * 10.0).round() / 10.0,
            weight_bits: self.weights.total_bytes() as f64 * 8.0
                / self.weights.total_elems().max(1) as f64,
            kv_bits: k.kv.bytes_per_elem() * 8.0,
            weight_format: self.quant.clone(),
            quality_kld: kld,
            quality: crate::quality::Tier::of(kld),
            gpu_resident: k.n_cpu_moe.is_none() && k.ngl.is_none_or(|n| n > self.n_blocks),
            split,
            planned_free_bytes: planned_free,
        }
    }
}
