//! Ollama plans (v0.30+, which runs every GGUF in an upstream llama-server): for each GGUF quant
//! and KV cache type, every layer on the GPUs at the longest `num_ctx` that fits (or the asked
//! one), else the most layers (`num_gpu`) that fit; `OLLAMA_NUM_PARALLEL` at its exact boundary.
//!
//! Every memory knob is pinned so that neither Ollama nor llama-server changes the plan:
//! - `num_ctx`, `num_gpu` and `num_batch` are model options, set in a Modelfile (no environment
//!   variable sets `num_gpu` or `num_batch`: envconfig/config.go, ollama v0.33.0-rc2). With
//!   `num_gpu` Ollama passes `-ngl` (llm/llama_server.go startLlamaServer), and llama-server's
//!   own `--fit` then leaves the placement alone ("n_gpu_layers already set by user",
//!   common/fit.cpp) instead of moving layers off a GPU that keeps less than its 1 GiB target;
//!   `num_batch` replaces Ollama's automatic generation batch (512–2048 from its own VRAM
//!   prediction, server/sched.go `automaticGenerationBatch`).
//! - `OLLAMA_FLASH_ATTENTION`, `OLLAMA_KV_CACHE_TYPE`, `OLLAMA_NUM_PARALLEL` and, on several GPUs,
//!   `OLLAMA_SCHED_SPREAD` (else the scheduler picks one GPU when its estimate fits there,
//!   server/sched.go `selectLlamaServerPlacement`) are the server's environment.
//!
//! The command starts the server with that environment, then creates and runs the model from the
//! Modelfile. Every candidate is evaluated by `vramfit_engine::ollama` on the config parsed from
//! that very command (and Modelfile), so `vramfit check` of it reproduces the plan.
//!
//! Context: `num_ctx` is per slot; Ollama passes `-c num_ctx × OLLAMA_NUM_PARALLEL -np N` and
//! llama.cpp pads each slot's cells to a multiple of 256 (src/llama-context.cpp), so the
//! boundary moves in steps of 256 (or ends at the training context, to which Ollama lowers a
//! larger `num_ctx`: llm/server.go).

use crate::error::PlanError;
use crate::headroom::{self, Headroom};
use crate::llamacpp;
use crate::model::Model;
use crate::plan::USABLE_CONTEXT;
use crate::plan::{command_line, shell_quote, Plan};
use crate::request::{Request, MIN_CONTEXT};
use crate::table::Cell;
use std::collections::BTreeMap;
use vramfit_engine::cmdline::Command;
use vramfit_engine::ollama::{self as engine, tags, OllamaConfig};
use vramfit_engine::{Gpu, Hardware};
use vramfit_model::units::fmt_bytes;
use vramfit_model::{GgmlType, ModelSpec, WeightSet};

/// GGUF quants tried when none are asked: the three every current Ollama library model ships
/// (`fp16`, `q8_0`, `q4_K_M` tags on ollama.com/library), plus the library's default quant.
pub const LADDER: &[&str] = &["F16", "Q8_0", "Q4_K_M"];

/// The Modelfile the command reads (`ollama create NAME -f Modelfile`).
pub const MODELFILE: &str = "Modelfile";

/// The batch pinned with `num_batch` (Ollama passes `-b N -ub N`): 512, Ollama's own default
/// option (api/types.go DefaultOptions) and llama-server's default `-ub`.
pub const NUM_BATCH: u64 = 512;

/// Architectures Ollama serves with one slot whatever OLLAMA_NUM_PARALLEL says (server/sched.go
/// `load`, ollama#4165), as Hugging Face `model_type` without underscores.
const SINGLE_SLOT: &[&str] = &[
    "mllama",
    "qwen3vl",
    "qwen3vlmoe",
    "qwen35",
    "qwen35moe",
    "qwen3next",
    "lfm2",
    "lfm2moe",
    "nemotronh",
    "nemotronhmoe",
    "nemotronhomni",
];

/// The knob values of one Ollama launch.
#[derive(Debug, Clone, PartialEq)]
pub struct Knobs {
    /// OLLAMA_KV_CACHE_TYPE
    pub kv: GgmlType,
    /// OLLAMA_NUM_PARALLEL
    pub np: u64,
    /// `num_ctx`: context per slot
    pub num_ctx: u64,
    /// `num_gpu`: layers on the GPUs, the output layer counted (llama-server's `-ngl`)
    pub num_gpu: u64,
}

/// One model at one quant, on planned hardware.
pub struct Setup<'a> {
    /// the same model at the same quant as llama.cpp sees it: planned hardware, headroom,
    /// blocks, and the decode-speed roofline
    pub llama: llamacpp::Setup<'a>,
    /// the model as Ollama names it: a library tag, `hf.co/ORG/NAME-GGUF:QUANT`, or a GGUF path
    pub source: String,
    /// every GPU runs flash attention (needed for a quantized V cache)
    pub flash_attention: bool,
    /// Ollama forces one slot for this architecture
    pub single_slot: bool,
}

/// How Ollama names the model at `quant`, only as vramfit's GGUF catalog has seen it pulled
/// ([`vramfit_model::catalog::gguf_repos`]): a library name (`qwen3:30b-a3b`), else a GGUF repo
/// of the catalog that publishes the quant (`hf.co/unsloth/Qwen3-30B-A3B-GGUF:Q6_K`, which
/// Ollama pulls from the Hub), a local GGUF path as given; None when no known name exists.
pub fn source_name(m: &Model, quant: &str) -> Option<String> {
    use vramfit_model::catalog::gguf_repos;
    if m.gguf_file() {
        return Some(m.query.clone());
    }
    let id = m.catalog_id()?;
    if let Some(o) = gguf_repos::ollama_name(id, quant) {
        return Some(o.name.clone());
    }
    gguf_repos::repo_for(id, quant).map(|r| format!("hf.co/{}", r.hf_arg(quant)))
}

/// The quants to plan: the asked ones, the file's, or [`LADDER`] and the library's default.
pub fn quants(m: &Model, asked: Option<&[String]>) -> Vec<String> {
    if let Some(q) = asked {
        return q.iter().map(|s| s.to_ascii_uppercase()).collect();
    }
    // a model published in a native quantized format (gpt-oss's MXFP4): only its native GGUF,
    // as for llama.cpp (`Model::gguf_quants`); another tag is an upcast or a needless loss
    if let Some(n) = m
        .catalog_id()
        .and_then(vramfit_model::catalog::gguf_repos::native_quant)
    {
        return vec![n];
    }
    let mut out: Vec<String> = LADDER.iter().map(|s| s.to_string()).collect();
    let repo = m.repo();
    if let Some(t) = tags::TAGS
        .iter()
        .find(|t| t.repo.eq_ignore_ascii_case(&repo))
    {
        if !out.iter().any(|q| q == t.quant) {
            out.push(t.quant.to_string());
        }
    }
    out
}

/// llama.cpp's headroom (Ollama's runner is llama-server), and on the first GPU the vision
/// projector Ollama loads there with `--mmproj` (llm/llama_server.go appendMMProjArgs; the
/// engine model does not count it), taken as F16, the type Ollama's library ships projectors in.
pub fn headroom_for(spec: &ModelSpec, w: &WeightSet, hw: &Hardware, req: &Request) -> Headroom {
    let mut h = match req.headroom {
        Some(b) => headroom::fixed(hw, b),
        None => headroom::llamacpp(w, hw),
    };
    if spec.vision_params > 0 {
        if let Some(first) = h.bytes.first_mut() {
            *first += spec.vision_params * 2;
        }
        h.why.push_str(&format!(
            "; on the first GPU also the {} vision projector Ollama loads there",
            fmt_bytes(spec.vision_params * 2)
        ));
    }
    h
}

impl<'a> Setup<'a> {
    pub fn new(
        spec: &'a ModelSpec,
        weights: &'a WeightSet,
        quant: String,
        source: String,
        real_hw: &Hardware,
        headroom: Headroom,
    ) -> Setup<'a> {
        let llama = llamacpp::Setup::new(spec, weights, Vec::new(), quant, real_hw, headroom);
        // ml/device.go cudaFlashAttentionSupported: compute capability 6.0+, not 7.2 (unknown: yes)
        let flash_attention = real_hw.gpus.iter().all(|g| {
            g.compute_capability
                .is_none_or(|cc| cc >= 6.0 && (cc - 7.2).abs() > 1e-6)
        });
        let family = spec.model_type.replace('_', "").to_ascii_lowercase();
        Setup {
            llama,
            source,
            flash_attention,
            single_slot: SINGLE_SLOT.contains(&family.as_str()),
        }
    }

    fn spec(&self) -> &ModelSpec {
        self.llama.spec
    }

    /// Every block and the output layer.
    pub fn all_layers(&self) -> u64 {
        self.llama.n_blocks + 1
    }

    /// The Modelfile's lines.
    pub fn modelfile_lines(&self, k: &Knobs) -> Vec<String> {
        vec![
            format!("FROM {}", self.source),
            format!("PARAMETER num_ctx {}", k.num_ctx),
            format!("PARAMETER num_gpu {}", k.num_gpu),
            format!("PARAMETER num_batch {NUM_BATCH}"),
        ]
    }

    /// The Modelfile's text.
    pub fn modelfile(&self, k: &Knobs) -> String {
        self.modelfile_lines(k).join("\n") + "\n"
    }

    /// A shell line that writes the Modelfile.
    pub fn write_modelfile(&self, k: &Knobs) -> String {
        let lines: Vec<String> = self
            .modelfile_lines(k)
            .iter()
            .map(|l| shell_quote(l))
            .collect();
        format!("printf '%s\\n' {} > {MODELFILE}", lines.join(" "))
    }

    /// The server's environment.
    pub fn env(&self, k: &Knobs) -> BTreeMap<String, String> {
        let mut env = BTreeMap::from([
            (
                "OLLAMA_FLASH_ATTENTION".to_string(),
                if self.flash_attention { "1" } else { "0" }.to_string(),
            ),
            ("OLLAMA_KV_CACHE_TYPE".to_string(), k.kv.to_string()),
            ("OLLAMA_NUM_PARALLEL".to_string(), k.np.to_string()),
        ]);
        if self.llama.hw.gpus.len() > 1 {
            env.insert("OLLAMA_SCHED_SPREAD".into(), "1".into());
        }
        env
    }

    /// The name `ollama create` gives the pinned model: the source's last part, lower case.
    pub fn model_name(&self) -> String {
        let base = self.source.rsplit('/').next().unwrap_or(&self.source);
        let clean: String = base
            .to_ascii_lowercase()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        format!("{}-vramfit", clean.trim_matches('-'))
    }

    /// The command: the server with its environment, then the model created from the Modelfile
    /// and run (the pause lets the server open its port before the client calls it).
    pub fn command(&self, k: &Knobs) -> String {
        let name = self.model_name();
        format!(
            "{} & sleep 2; ollama create {name} -f {MODELFILE} && ollama run {name}",
            command_line(&self.env(k), &["ollama".to_string(), "serve".to_string()])
        )
    }

    /// The engine's config for these knobs, read from the command and its Modelfile.
    pub fn config(&self, k: &Knobs) -> Option<OllamaConfig> {
        let cmd = Command::parse(&[self.command(k)]).ok()?;
        let text = self.modelfile(k);
        let read = |p: &str| {
            if p == MODELFILE {
                Ok(text.clone())
            } else {
                Err(format!("{p}: not the planned Modelfile"))
            }
        };
        engine::parse(&cmd, None, &read).ok()
    }

    /// Does the launch Ollama makes of this config fit the planned free memory?
    fn fits_cfg(&self, cfg: &OllamaConfig) -> bool {
        let hw = &self.llama.hw;
        let l = engine::launch(self.spec(), self.llama.weights, cfg, hw);
        let sub = Hardware {
            gpus: l.gpus.clone(),
            host_ram_bytes: hw.host_ram_bytes,
        };
        let Ok(lcfg) = vramfit_engine::llamacpp::parse("llama-server", &l.llama_args, &[], None)
        else {
            return false;
        };
        let n_ctx = lcfg.n_ctx.unwrap_or(0);
        vramfit_engine::llamacpp::layout(self.spec(), self.llama.weights, &lcfg, &sub, n_ctx)
            .fits(&sub.gpus)
    }

    /// Does the launch fit the planned free memory?
    pub fn fits(&self, k: &Knobs) -> bool {
        self.config(k).is_some_and(|c| self.fits_cfg(&c))
    }

    /// The largest `num_ctx` that fits with the other knobs: the training context, else a
    /// multiple of 256 below it; 0 when 256 does not fit.
    pub fn max_ctx(&self, k: &Knobs) -> u64 {
        let ok = |c: u64| {
            let mut kk = k.clone();
            kk.num_ctx = c;
            self.fits(&kk)
        };
        let n_train = self.spec().n_ctx_train.max(256);
        if ok(n_train) {
            return n_train;
        }
        // (n_train - 1) / 256 steps lie below the training context; one more is lowered to it
        let (mut lo, mut hi) = (1u64, (n_train - 1) / 256 + 1);
        if hi <= 1 || !ok(256) {
            return 0;
        }
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if ok(mid * 256) {
                lo = mid
            } else {
                hi = mid
            }
        }
        lo * 256
    }

    /// The most slots of `k.num_ctx` each that fit (up to 256; 1 where Ollama forces one);
    /// 0 when one does not.
    pub fn max_np(&self, k: &Knobs) -> u64 {
        let ok = |n: u64| {
            let mut kk = k.clone();
            kk.np = n;
            self.fits(&kk)
        };
        let cap = if self.single_slot { 1 } else { 256 };
        vramfit_engine::search::largest_by_doubling(cap, ok)
    }

    /// The most layers on the GPUs (`num_gpu`) that fit; None if not even 0 does.
    pub fn max_num_gpu(&self, k: &Knobs) -> Option<u64> {
        let ok = |n: u64| {
            let mut kk = k.clone();
            kk.num_gpu = n;
            self.fits(&kk)
        };
        let top = self.all_layers();
        if ok(top) {
            return Some(top);
        }
        if !ok(0) {
            return None;
        }
        let (mut lo, mut hi) = (0u64, top);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if ok(mid) {
                lo = mid
            } else {
                hi = mid
            }
        }
        Some(lo)
    }
}

mod render;
pub use render::render;

/// Plans for one quant: per KV type, every layer on the GPUs at the longest context (or the
/// asked one), else the most layers that fit at the asked context (or the 4096 floor).
pub fn plans_for(s: &Setup, req: &Request) -> Vec<Plan> {
    let mut out = Vec::new();
    let np = req.concurrency.unwrap_or(1).max(1);
    if s.llama.hw.gpus.is_empty() || (s.single_slot && np > 1) {
        return out;
    }
    let n_train = s.spec().n_ctx_train.max(256);
    let need = req.context.unwrap_or(MIN_CONTEXT).min(n_train);
    let kvs: &[GgmlType] = if s.flash_attention {
        llamacpp::KV_TYPES
    } else {
        &[GgmlType::F16]
    };
    for &kv in kvs {
        let base = Knobs {
            kv,
            np,
            num_ctx: need,
            num_gpu: s.all_layers(),
        };
        let full = s.max_ctx(&base);
        if full >= need {
            let mut k = base.clone();
            let why = match req.context {
                Some(c) => {
                    format!("{c} tokens per slot as asked; up to {full} fit (steps of 256)")
                }
                None => {
                    k.num_ctx = full;
                    format!("the longest context per slot that fits (steps of 256, at most the model's {n_train})")
                }
            };
            out.extend(render(s, &k, why, None));
            continue;
        }
        // an offload placement is chosen for a usable context first (16k or the model's own),
        // the floor only when even that does not fit, and the context then rises to the
        // boundary at that placement (as the llama.cpp planner does)
        let usable = (USABLE_CONTEXT.min(n_train)).div_ceil(256) * 256;
        let targets: Vec<u64> = if req.context.is_none() && usable > need {
            vec![usable, need]
        } else {
            vec![need]
        };
        for at in targets {
            let mut b = base.clone();
            b.num_ctx = at;
            let Some(n) = s.max_num_gpu(&b).filter(|n| *n > 0) else {
                continue;
            };
            let mut k = b.clone();
            k.num_gpu = n;
            let mut why_ctx = format!(
                "{at} tokens per slot{}; the GPUs cannot hold every layer at this context",
                if req.context.is_some() {
                    " as asked"
                } else if at == need {
                    " (vramfit's 4096-token floor)"
                } else {
                    " (a usable context)"
                }
            );
            if req.context.is_none() {
                let top = s.max_ctx(&k);
                if top > k.num_ctx {
                    k.num_ctx = top;
                    why_ctx = format!("the longest context per slot that fits with this placement (steps of 256, at most the model's {n_train})");
                }
            }
            let why_gpu = format!(
                "the most layers that fit at {at} tokens: {n} of {} (with the output layer); the rest run on the CPU{}",
                s.all_layers(),
                if s.spec().is_moe() {
                    " (whole layers: Ollama has no expert-offload option; llama-server's own --fit, with num_gpu unset, would move experts instead but is not predictable)"
                } else {
                    ""
                }
            );
            out.extend(render(s, &k, why_ctx, Some(why_gpu)));
            break;
        }
    }
    out
}

/// Every Ollama plan that fits `hw`, unranked.
pub fn plans(m: &Model, hw: &Hardware, req: &Request) -> Vec<Plan> {
    if hw.gpus.is_empty() {
        return Vec::new();
    }
    let names = quants(m, req.quants.as_deref());
    // an unknown quant name is skipped here; the llama.cpp planner reports it
    let ggufs: Vec<(String, WeightSet)> = if m.gguf_file() {
        m.ggufs(None).unwrap_or_default()
    } else {
        names
            .iter()
            .filter(|q| source_name(m, q).is_some())
            .filter_map(|q| m.ggufs_any(Some(std::slice::from_ref(q))).ok())
            .flatten()
            .collect()
    };
    std::thread::scope(|scope| {
        let jobs: Vec<_> = ggufs
            .iter()
            .map(|(q, w)| {
                scope.spawn(move || {
                    let h = headroom_for(m.spec(), w, hw, req);
                    let name = source_name(m, q).unwrap_or_default();
                    let s = Setup::new(m.spec(), w, q.clone(), name, hw, h);
                    plans_for(&s, req)
                })
            })
            .collect();
        jobs.into_iter()
            .flat_map(|j| j.join().unwrap_or_default())
            .collect()
    })
}

fn one(g: &Gpu) -> Hardware {
    Hardware {
        gpus: vec![g.clone()],
        host_ram_bytes: None,
    }
}

/// The quant × GPU cells of `vramfit table --engine ollama`: per single GPU, every layer on it
/// with an f16 KV cache and one slot, the longest `num_ctx`; at `context`, the most slots.
pub fn table_cells(
    m: &Model,
    gpus: &[Gpu],
    quants_asked: Option<&[String]>,
    context: Option<u64>,
) -> Result<(Vec<String>, Vec<Cell>), PlanError> {
    let ggufs = if m.gguf_file() {
        m.ggufs(None)?
    } else {
        m.ggufs_any(Some(&quants(m, quants_asked)))?
    };
    let names: Vec<String> = ggufs.iter().map(|(q, _)| q.clone()).collect();
    let mut cells = Vec::new();
    for g in gpus {
        let hw = one(g);
        for (q, w) in &ggufs {
            let h = headroom::llamacpp(w, &hw);
            let h = Headroom {
                bytes: h
                    .bytes
                    .iter()
                    .map(|b| b + m.spec().vision_params * 2)
                    .collect(),
                why: h.why,
            };
            let name = source_name(m, q).unwrap_or_else(|| m.repo());
            let s = Setup::new(m.spec(), w, q.clone(), name, &hw, h);
            let mut k = Knobs {
                kv: GgmlType::F16,
                np: 1,
                num_ctx: 256,
                num_gpu: s.all_layers(),
            };
            let max_ctx = s.max_ctx(&k);
            let max_conc = context.map(|c| {
                k.num_ctx = c.min(m.spec().n_ctx_train.max(256));
                s.max_np(&k)
            });
            cells.push(Cell {
                gpu: g.name.clone(),
                quant: q.clone(),
                max_context: (max_ctx > 0).then_some(max_ctx),
                max_concurrency: max_conc.filter(|n| *n > 0),
            });
        }
    }
    Ok((names, cells))
}

#[cfg(test)]
mod tests;
