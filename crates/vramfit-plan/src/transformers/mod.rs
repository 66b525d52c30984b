//! HF transformers plans (`from_pretrained` + `generate`, with accelerate and bitsandbytes):
//! for each weight precision (bf16, or fp16 where a GPU lacks bf16; bitsandbytes int8; nf4 with
//! double quantization), every weight on one GPU, or `device_map="auto"` with `max_memory`
//! pinned over several GPUs and, when the weights do not fit, the CPU; the longest
//! prompt + new tokens (any integer) and the largest batch at their exact boundaries.
//!
//! The command is the transformers form `vramfit check` reads
//! (`vramfit_engine::transformers::args`), and every candidate is evaluated by
//! `vramfit_engine::transformers::plan` on the config parsed from it; the plan also carries the
//! equivalent Python call.

use crate::error::PlanError;
use crate::headroom::{self, Headroom};
use crate::model::Model;
use crate::plan::Plan;
use crate::request::{Request, MIN_CONTEXT};
use crate::table::Cell;
use std::collections::BTreeMap;
use vramfit_engine::cmdline::Command;
use vramfit_engine::transformers::{self as engine, TransformersConfig};
use vramfit_engine::{Gpu, Hardware, MemoryPlan, Verdict};
use vramfit_model::units::MIB;
use vramfit_model::ModelSpec;

/// New tokens per sequence when a plan is searched for the longest total: 512, a long answer
/// (generate's own default, `max_length` 20, is too short for a real run).
pub const NEW_TOKENS: u64 = 512;

/// Weight precision as transformers loads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// the model dtype (`--dtype bf16` or `fp16`)
    Half,
    /// bitsandbytes LLM.int8 (`load_in_8bit`)
    Int8,
    /// bitsandbytes 4-bit NF4 with double quantization
    Nf4,
}

impl Weights {
    /// Row name in tables and the plan's first setting.
    pub fn name(self, dtype: &str) -> String {
        match self {
            Weights::Half => dtype.to_ascii_uppercase(),
            Weights::Int8 => "INT8".into(),
            Weights::Nf4 => "NF4".into(),
        }
    }

    /// `--quants` names: BF16/FP16/F16, INT8/BNB8, NF4/BNB4.
    pub fn parse(q: &str) -> Result<Weights, PlanError> {
        match q.to_ascii_uppercase().as_str() {
            "BF16" | "FP16" | "F16" | "AUTO" => Ok(Weights::Half),
            "INT8" | "BNB8" | "8BIT" => Ok(Weights::Int8),
            "NF4" | "BNB4" | "4BIT" => Ok(Weights::Nf4),
            _ => Err(PlanError::input(format!(
                "--quants '{q}' is not a transformers weight precision: use BF16, INT8 or NF4"
            ))),
        }
    }

    fn flags(self) -> &'static [&'static str] {
        match self {
            Weights::Half => &[],
            Weights::Int8 => &["--load-in-8bit"],
            Weights::Nf4 => &[
                "--load-in-4bit",
                "--bnb-4bit-quant-type",
                "nf4",
                "--bnb-4bit-use-double-quant",
            ],
        }
    }
}

/// `--max-memory` with `--device-map auto`: MiB per GPU and for the CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct MaxMemory {
    pub gpus_mib: Vec<u64>,
    pub cpu_mib: u64,
}

impl MaxMemory {
    pub fn arg(&self) -> String {
        let mut parts: Vec<String> = self
            .gpus_mib
            .iter()
            .enumerate()
            .map(|(i, m)| format!("{i}:{m}MiB"))
            .collect();
        parts.push(format!("cpu:{}MiB", self.cpu_mib));
        parts.join(",")
    }
}

/// The knob values of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Knobs {
    pub weights: Weights,
    /// `--batch-size`: sequences per `generate` call
    pub batch: u64,
    pub prompt: u64,
    pub new_tokens: u64,
    /// None: everything on GPU 0 (`--device-map cuda:0`)
    pub max_memory: Option<MaxMemory>,
}

impl Knobs {
    pub fn total(&self) -> u64 {
        self.prompt + self.new_tokens
    }

    fn with_total(&self, total: u64) -> Knobs {
        Knobs {
            prompt: total.saturating_sub(self.new_tokens).max(1),
            ..self.clone()
        }
    }
}

/// One model on planned hardware.
pub struct Setup<'a> {
    pub spec: &'a ModelSpec,
    /// `ORG/NAME` as `from_pretrained` takes it
    pub model: String,
    /// `bf16`, or `fp16` where a GPU lacks bf16
    pub dtype: &'static str,
    /// hardware with free memory reduced by the headroom
    pub hw: Hardware,
    pub real_hw: Hardware,
    pub headroom: Headroom,
}

/// bf16 needs compute capability 8.0 (torch.cuda.is_bf16_supported; unknown: taken as able).
pub fn dtype_for(hw: &Hardware) -> &'static str {
    if hw
        .gpus
        .iter()
        .all(|g| g.compute_capability.is_none_or(|cc| cc >= 8.0))
    {
        "bf16"
    } else {
        "fp16"
    }
}

impl<'a> Setup<'a> {
    pub fn new(
        spec: &'a ModelSpec,
        model: String,
        real_hw: &Hardware,
        headroom: Headroom,
    ) -> Setup<'a> {
        let mut hw = real_hw.clone();
        for (g, h) in hw.gpus.iter_mut().zip(&headroom.bytes) {
            g.free_bytes = g.free_bytes.saturating_sub(*h);
        }
        Setup {
            spec,
            model,
            dtype: dtype_for(real_hw),
            hw,
            real_hw: real_hw.clone(),
            headroom,
        }
    }

    pub fn env(&self) -> BTreeMap<String, String> {
        // fewer fragmentation failures while the dynamic cache grows by torch.cat (PyTorch CUDA
        // caching allocator docs, expandable_segments)
        crate::plan::expandable_segments_env()
    }

    pub fn argv(&self, k: &Knobs) -> Vec<String> {
        let mut a: Vec<String> = vec!["transformers".into(), self.model.clone()];
        a.extend(["--dtype".into(), self.dtype.into()]);
        a.extend(k.weights.flags().iter().map(|f| f.to_string()));
        for (f, v) in [
            ("--batch-size", k.batch.to_string()),
            ("--prompt-tokens", k.prompt.to_string()),
            ("--max-new-tokens", k.new_tokens.to_string()),
            ("--attn-implementation", "sdpa".to_string()),
        ] {
            a.push(f.into());
            a.push(v);
        }
        match &k.max_memory {
            None => a.extend(["--device-map".into(), "cuda:0".into()]),
            Some(mm) => a.extend([
                "--device-map".into(),
                "auto".into(),
                "--max-memory".into(),
                mm.arg(),
            ]),
        }
        a
    }

    /// The engine's config for these knobs, read from the command itself.
    pub fn config(&self, k: &Knobs) -> Option<TransformersConfig> {
        let mut words: Vec<String> = self.env().iter().map(|(k, v)| format!("{k}={v}")).collect();
        words.extend(self.argv(k));
        engine::parse(&Command::parse(&words).ok()?).ok()
    }

    /// The engine's plan of the command for these knobs.
    pub fn evaluate(&self, k: &Knobs) -> Option<MemoryPlan> {
        Some(engine::plan(self.spec, &self.config(k)?, &self.hw))
    }

    pub fn fits(&self, k: &Knobs) -> bool {
        self.evaluate(k).is_some_and(|p| p.verdict == Verdict::Fits)
    }

    /// The longest prompt + new tokens that fits with the other knobs (new tokens unchanged):
    /// the engine's own exact search; 0 when not even one prompt token fits.
    pub fn max_total(&self, k: &Knobs) -> u64 {
        // the shortest run: when it does not fit (or a placement problem such as bitsandbytes
        // refusing to offload holds at every length), nothing does
        let probe = k.with_total(k.new_tokens + 1);
        match self.evaluate(&probe) {
            Some(p) if p.verdict == Verdict::Fits => p.max_model_len,
            _ => 0,
        }
    }

    /// The largest batch of `k.total()` tokens each that fits (up to 1024); 0 when 1 does not.
    pub fn max_batch(&self, k: &Knobs) -> u64 {
        let ok = |b: u64| {
            let mut kk = k.clone();
            kk.batch = b;
            self.fits(&kk)
        };
        vramfit_engine::search::largest_by_doubling(1024, ok)
    }

    /// Bytes of the placement units (embeddings, blocks, norm + lm_head) at these knobs.
    fn units(&self, k: &Knobs) -> Vec<u64> {
        self.config(&Knobs {
            max_memory: None,
            ..k.clone()
        })
        .map(|c| engine::unit_bytes(self.spec, &c))
        .unwrap_or_default()
    }

    /// `max_memory` budgets: each GPU's planned free memory less `reserve` MiB (what its KV
    /// cache and activations need beside the weights), and the CPU enough for every weight.
    pub fn budgets(&self, k: &Knobs, reserve_mib: u64) -> MaxMemory {
        let all: u64 = self.units(k).iter().sum();
        MaxMemory {
            gpus_mib: self
                .hw
                .gpus
                .iter()
                .map(|g| (g.free_bytes / MIB).saturating_sub(reserve_mib))
                .collect(),
            cpu_mib: all.div_ceil(MIB) + 1,
        }
    }

    /// The smallest reserve (MiB per GPU) whose `max_memory` lets `k` fit with weights on
    /// GPU 0; None when none does. Too small a reserve leaves the KV cache no room; too large
    /// a one leaves GPU 0 without a unit (accelerate keeps room there for the largest unit
    /// still to place), so the search runs between "no reserve" and the largest reserve that
    /// still puts the first unit on GPU 0.
    pub fn min_reserve(&self, k: &Knobs) -> Option<MaxMemory> {
        let eval = |r: u64| {
            let mut kk = k.clone();
            kk.max_memory = Some(self.budgets(k, r));
            self.evaluate(&kk).is_some_and(|p| {
                p.verdict == Verdict::Fits && p.devices.first().is_some_and(|d| d.weights_bytes > 0)
            })
        };
        if eval(0) {
            return Some(self.budgets(k, 0));
        }
        let units = self.units(k);
        let first = units.first().copied()? + units.iter().copied().max()?;
        // bitsandbytes scales every budget by 0.9 (its adjust_max_memory)
        let first = match k.weights {
            Weights::Half => first,
            _ => first.div_ceil(9) * 10,
        };
        let free0 = self.hw.gpus.first()?.free_bytes / MIB;
        let mut hi = free0.checked_sub(first.div_ceil(MIB) + 1)?;
        if !eval(hi) {
            return None;
        }
        let mut lo = 0u64;
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if eval(mid) {
                hi = mid
            } else {
                lo = mid
            }
        }
        Some(self.budgets(k, hi))
    }
}

mod render;
pub use render::render;

/// New tokens for a total: [`NEW_TOKENS`], or half of a shorter total.
pub fn new_tokens_for(total: u64) -> u64 {
    NEW_TOKENS.min(total / 2).max(1)
}

/// Plans for one weight precision.
pub fn plans_for(s: &Setup, req: &Request, weights: Weights) -> Vec<Plan> {
    let n = s.hw.gpus.len();
    if n == 0 {
        return Vec::new();
    }
    let n_train = s.spec.n_ctx_train.max(2);
    // an asked context past the model's is planned at the model's, as for the other engines
    let need = req.context.unwrap_or(MIN_CONTEXT).min(n_train).max(2);
    let new_tokens = new_tokens_for(need);
    let base = Knobs {
        weights,
        batch: req.concurrency.unwrap_or(1).max(1),
        prompt: need - new_tokens,
        new_tokens,
        max_memory: None,
    };
    let at = |k: &Knobs, why: Option<String>| -> Option<Plan> {
        let max = s.max_total(k);
        if max < need {
            return None;
        }
        // weights in host RAM: the asked context (or the 4096 floor) with the most on the GPUs,
        // as the other engines' offload plans; else the longest total
        let offloaded = s.evaluate(k).is_some_and(|p| p.host.weights_bytes > 0);
        let total = match req.context {
            Some(_) => need,
            None if offloaded => need,
            None => max,
        };
        render(s, &k.with_total(total), max, why)
    };
    if n == 1 {
        if let Some(p) = at(&base, None) {
            return vec![p];
        }
        // the weights (or the KV cache beside them) do not fit one GPU: the rest to the CPU,
        // which bitsandbytes refuses
        if weights != Weights::Half {
            return Vec::new();
        }
    }
    let Some(mm) = s.min_reserve(&base) else {
        return Vec::new();
    };
    let mut k = base.clone();
    k.max_memory = Some(mm);
    at(&k, None).into_iter().collect()
}

/// The weight precisions to plan: the asked ones, else the model dtype and both bitsandbytes
/// levels (bitsandbytes on NVIDIA GPUs only: its CUDA backend is the supported one; a
/// checkpoint that is already quantized is loaded as published).
pub fn weight_options(
    spec: &ModelSpec,
    hw: &Hardware,
    asked: Option<&[String]>,
) -> Result<Vec<Weights>, PlanError> {
    if let Some(q) = asked {
        return q.iter().map(|x| Weights::parse(x)).collect();
    }
    let nvidia = hw.gpus.iter().all(|g| g.compute_capability.is_some());
    Ok(if spec.quant.is_some() || !nvidia {
        vec![Weights::Half]
    } else {
        vec![Weights::Half, Weights::Int8, Weights::Nf4]
    })
}

/// Every transformers plan that fits `hw`, unranked.
pub fn plans(m: &Model, hw: &Hardware, req: &Request) -> Vec<Plan> {
    if hw.gpus.is_empty() || m.gguf_file() {
        return Vec::new();
    }
    // an unknown --quants name is reported by the llama.cpp planner; here it plans nothing
    let Ok(opts) = weight_options(
        m.spec(),
        hw,
        req.quants
            .as_deref()
            .filter(|q| q.iter().all(|x| Weights::parse(x).is_ok())),
    ) else {
        return Vec::new();
    };
    let h = match req.headroom {
        Some(b) => headroom::fixed(hw, b),
        None => headroom::transformers(hw),
    };
    let s = Setup::new(m.spec(), m.repo(), hw, h);
    std::thread::scope(|scope| {
        let jobs: Vec<_> = opts
            .iter()
            .map(|&w| {
                let s = &s;
                scope.spawn(move || plans_for(s, req, w))
            })
            .collect();
        jobs.into_iter()
            .flat_map(|j| j.join().unwrap_or_default())
            .collect()
    })
}

/// The weight-precision × GPU cells of `vramfit table --engine transformers`: per single GPU,
/// every weight on it and one sequence, the longest prompt + 512 new tokens; at `context`, the
/// largest batch.
pub fn table_cells(
    m: &Model,
    gpus: &[Gpu],
    quants: Option<&[String]>,
    context: Option<u64>,
) -> Result<(Vec<String>, Vec<Cell>), PlanError> {
    let names: Vec<String> = match quants {
        Some(q) => q.iter().map(|x| x.to_ascii_uppercase()).collect(),
        None => vec!["BF16".into(), "INT8".into(), "NF4".into()],
    };
    let opts: Vec<Weights> = names
        .iter()
        .map(|q| Weights::parse(q))
        .collect::<Result<_, _>>()?;
    let mut cells = Vec::new();
    for g in gpus {
        let hw = Hardware {
            gpus: vec![g.clone()],
            host_ram_bytes: None,
        };
        let s = Setup::new(m.spec(), m.repo(), &hw, headroom::transformers(&hw));
        for (q, &w) in names.iter().zip(&opts) {
            let total = context.unwrap_or(MIN_CONTEXT).max(2);
            let new_tokens = new_tokens_for(total);
            let k = Knobs {
                weights: w,
                batch: 1,
                prompt: total - new_tokens,
                new_tokens,
                max_memory: None,
            };
            let max = s.max_total(&k);
            cells.push(Cell {
                gpu: g.name.clone(),
                quant: q.clone(),
                max_context: (max > new_tokens).then_some(max),
                max_concurrency: context.map(|_| s.max_batch(&k)).filter(|b| *b > 0),
            });
        }
    }
    Ok((names, cells))
}

#[cfg(test)]
mod tests;
