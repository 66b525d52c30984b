//! `fit`: every engine's plans for a model on the given GPUs, ranked; and, when nothing fits,
//! the nearest thing that does.

use crate::error::PlanError;
use crate::headroom;
use crate::llamacpp::{self, Knobs};
use crate::model;
use crate::plan::{rank, Plan};
use crate::request::{Engine, Request, GGUF_LADDER, MIN_CONTEXT};
use crate::vllm;
use serde::Serialize;
use vramfit_engine::Hardware;
use vramfit_model::resolve::Resolved;
use vramfit_model::{ModelSpec, TensorDtype, WeightSet};

/// The answer of `fit`.
#[derive(Debug, Clone, Serialize)]
pub struct FitResult {
    pub model: String,
    pub plans: Vec<Plan>,
    /// what was assumed or left out
    pub notes: Vec<String>,
}

/// A resolved model with the GGUFs to try.
pub struct Model {
    pub resolved: Resolved,
    /// the query, for the commands (`ORG/NAME`, or a local path)
    pub query: String,
}

impl Model {
    pub fn load(query: &str) -> Result<Model, PlanError> {
        Ok(Model {
            resolved: model::load(query)?,
            query: query.to_string(),
        })
    }

    pub fn spec(&self) -> &ModelSpec {
        &self.resolved.spec
    }

    /// A GGUF file was read: llama.cpp can only load that quant.
    pub fn gguf_file(&self) -> bool {
        self.resolved.weights.as_ref().is_some_and(|w| {
            w.tensors
                .iter()
                .any(|t| matches!(t.dtype, TensorDtype::Ggml(_)))
        })
    }

    /// `ORG/NAME` for engines that download by repo id.
    pub fn repo(&self) -> String {
        let (base, _, _) = vramfit_model::resolve::split_gguf_repo(&self.query);
        if base.contains('/') && !std::path::Path::new(&self.query).exists() {
            base
        } else {
            self.resolved.spec.id.clone()
        }
    }

    /// The catalog id of the model (for the GGUF repo catalog), when it is a catalog model.
    pub fn catalog_id(&self) -> Option<&'static str> {
        vramfit_model::catalog::find_model(&self.resolved.spec.id)
            .or_else(|| vramfit_model::catalog::find_model(&self.query))
            .map(|c| c.id.as_str())
    }

    /// The GGUF quants llama.cpp can download for this model: those a repo of the GGUF catalog
    /// publishes ([`vramfit_model::catalog::gguf_repos`]), from `asked` or the default ladder.
    /// A model published in a native quantized format (gpt-oss's MXFP4) gets only its native
    /// GGUF: a wider one would be an upcast, more bytes and no more quality. The second value
    /// lists the asked quants no known repo publishes.
    pub fn gguf_quants(&self, asked: Option<&[String]>) -> (Vec<String>, Vec<String>) {
        use vramfit_model::catalog::gguf_repos;
        let Some(id) = self.catalog_id() else {
            return (Vec::new(), asked.map(|a| a.to_vec()).unwrap_or_default());
        };
        let native = gguf_repos::native_quant(id);
        let list: Vec<String> = match (asked, &native) {
            (Some(q), _) => q.iter().map(|s| s.to_ascii_uppercase()).collect(),
            (None, Some(n)) => vec![n.clone()],
            (None, None) => GGUF_LADDER.iter().map(|s| s.to_string()).collect(),
        };
        // an FP8 / AWQ / GPTQ checkpoint: no GGUF wider than 8 bits
        let capped = self.spec().quant.is_some();
        let (mut ok, mut missing) = (Vec::new(), Vec::new());
        for q in list {
            let upcast = capped && matches!(q.as_str(), "BF16" | "F16" | "F32");
            if !upcast && gguf_repos::repo_for(id, &q).is_some() {
                ok.push(q);
            } else {
                missing.push(q);
            }
        }
        (ok, missing)
    }

    /// The GGUF quants to try and their tensors, best first: the local file's, or those of
    /// [`Model::gguf_quants`].
    pub fn ggufs(&self, quants: Option<&[String]>) -> Result<Vec<(String, WeightSet)>, PlanError> {
        if self.gguf_file() {
            let w = model::gguf_weights(&self.resolved)?;
            let name = self
                .resolved
                .gguf_file_type
                .and_then(|id| vramfit_model::quant::FileType::from_id(id as u32))
                .map(|f| f.name().to_string())
                .unwrap_or_else(|| "file".into());
            return Ok(vec![(name, w)]);
        }
        if let Some(q) = quants {
            // a bad name is an error even where no repo would publish it
            for name in q {
                if vramfit_model::quant::FileType::parse(name).is_none() {
                    model::predicted_gguf(&self.resolved, name)?;
                }
            }
        }
        let (list, _) = self.gguf_quants(quants);
        let sets = model::predicted_ggufs(&self.resolved, &list)?;
        Ok(list.into_iter().zip(sets).collect())
    }

    /// Every quant a table or plan may name even without a known repo (`table` shows the
    /// memory of each quant; only commands are limited to published files).
    pub fn ggufs_any(&self, quants: Option<&[String]>) -> Result<Vec<(String, WeightSet)>, PlanError> {
        if self.gguf_file() {
            return self.ggufs(quants);
        }
        let list: Vec<String> = match quants {
            Some(q) => q.iter().map(|s| s.to_ascii_uppercase()).collect(),
            None => match self.catalog_id().and_then(vramfit_model::catalog::gguf_repos::native_quant) {
                Some(n) => vec![n],
                None => GGUF_LADDER.iter().map(|s| s.to_string()).collect(),
            },
        };
        let sets = model::predicted_ggufs(&self.resolved, &list)?;
        Ok(list.into_iter().zip(sets).collect())
    }

    /// llama.cpp's model flags for a quant: `-m FILE`, or `-hf` with the preferred repo of the
    /// GGUF catalog that publishes it (`ORG/NAME-GGUF` when none does: tables only, never a
    /// printed plan, see [`Model::gguf_quants`]).
    pub fn llama_args(&self, quant: &str) -> Vec<String> {
        if self.gguf_file() {
            return vec!["-m".into(), self.query.clone()];
        }
        let hf = self
            .catalog_id()
            .and_then(|id| vramfit_model::catalog::gguf_repos::repo_for(id, quant))
            .map(|r| r.hf_arg(quant))
            .unwrap_or_else(|| format!("{}-GGUF:{quant}", self.repo()));
        vec!["-hf".into(), hf]
    }
}

fn round_up_256(x: u64) -> u64 {
    x.div_ceil(256).max(1) * 256
}

/// llama.cpp plans for one quant: per KV type, all layers on the GPUs at the longest context
/// (or the asked one), else the fewest experts (MoE) or layers (dense) moved to the CPU.
pub fn llama_plans(s: &llamacpp::Setup, req: &Request) -> Vec<Plan> {
    let mut out = Vec::new();
    let np = req.concurrency.unwrap_or(1).max(1);
    let n_train = s.spec.n_ctx_train.max(256);
    let need = round_up_256(req.context.unwrap_or(MIN_CONTEXT).min(n_train));
    // a smaller KV type never needs more experts in host RAM than a larger one did
    let mut moe_upper = s.n_blocks;
    for &kv in llamacpp::KV_TYPES {
        let base = Knobs {
            kv,
            np,
            ctx: need,
            ngl: None,
            n_cpu_moe: None,
            tensor_split: s.split(),
        };
        let full = s.max_ctx(&base);
        if full >= need {
            let mut k = base.clone();
            k.ctx = match req.context {
                Some(_) => need,
                None => full,
            };
            let why = match req.context {
                Some(c) => format!("{c} tokens per slot as asked (a multiple of 256); up to {full} fit"),
                None => format!("the longest context per slot that fits (a multiple of 256, at most the model's {n_train})"),
            };
            out.push(s.plan(&k, why, None));
            continue;
        }
        if s.hw.gpus.is_empty() {
            continue;
        }
        let why_ctx = format!(
            "{need} tokens per slot{}; the GPU cannot hold every layer at this context",
            if req.context.is_some() {
                " as asked"
            } else {
                " (llama.cpp's --fit-ctx floor)"
            }
        );
        if s.spec.is_moe() {
            if let Some(n) = s.min_cpu_moe(&base, moe_upper) {
                moe_upper = n;
                let mut k = base.clone();
                k.n_cpu_moe = (n > 0).then_some(n);
                let why_ctx = raise_ctx(s, &mut k, req, why_ctx.clone());
                let why = format!(
                    "all layers' attention and shared weights on the GPU; routed experts of the first {n} of {} layers in host RAM",
                    s.n_blocks
                );
                out.push(s.plan(&k, why_ctx, Some(why)));
                continue;
            }
        }
        if let Some(ngl) = s.max_ngl(&base).filter(|n| *n > 0) {
            let mut k = base.clone();
            k.ngl = Some(ngl);
            let why_ctx = raise_ctx(s, &mut k, req, why_ctx);
            let why = format!(
                "the most layers that fit at {need} tokens: {ngl} of {} (with the output layer); the rest run on the CPU",
                s.n_blocks + 1
            );
            out.push(s.plan(&k, why_ctx, Some(why)));
        }
    }
    out
}

/// Use what is left: with the placement fixed (experts or layers on the CPU), the context
/// rises to the longest that fits at that placement, unless one was asked.
fn raise_ctx(s: &llamacpp::Setup, k: &mut Knobs, req: &Request, why: String) -> String {
    if req.context.is_some() {
        return why;
    }
    let top = s.max_ctx(k);
    if top > k.ctx {
        k.ctx = top;
        return format!(
            "the longest context per slot that fits with this placement (a multiple of 256, at most the model's {})",
            s.spec.n_ctx_train
        );
    }
    why
}

/// `--quants` names a weight precision of at least one asked engine that takes the list: GGUF
/// quants for llama.cpp and Ollama, BF16 / INT8 / NF4 for transformers (vLLM and SGLang try
/// every precision they can load). A name no asked engine knows is a one-line error, not an
/// empty search.
fn check_quants(req: &Request) -> Result<(), PlanError> {
    let Some(list) = &req.quants else {
        return Ok(());
    };
    let gguf = req.engines.contains(&Engine::LlamaCpp) || req.engines.contains(&Engine::Ollama);
    let hf = req.engines.contains(&Engine::Transformers);
    if !gguf && !hf {
        // vLLM and SGLang try every precision they load; the list is not theirs
        return Ok(());
    }
    for q in list {
        let known = (gguf && vramfit_model::quant::FileType::parse(q).is_some())
            || (hf && crate::transformers::Weights::parse(q).is_ok());
        if !known {
            let expected = match (gguf, hf) {
                (true, true) => "a GGUF quant (Q4_K_M, Q8_0, IQ4_XS, BF16, ...) or INT8/NF4",
                (true, false) => "a GGUF quant such as Q4_K_M, Q8_0, IQ4_XS or BF16",
                _ => "BF16, INT8 or NF4",
            };
            return Err(PlanError::input(format!(
                "--quants '{q}' is not a weight precision of the asked engines: use {expected}"
            )));
        }
    }
    Ok(())
}

/// Rank every engine's plans for a model on `hw`.
pub fn fit(m: &Model, hw: &Hardware, req: &Request) -> Result<FitResult, PlanError> {
    if hw.gpus.is_empty() {
        return Err(PlanError::input(
            "no GPU to plan for: give --gpu \"RTX 4090\" (or a size such as 24GiB)",
        ));
    }
    check_quants(req)?;
    let mut plans = Vec::new();
    let mut notes = Vec::new();
    let ggufs = if req.engines.contains(&Engine::LlamaCpp) {
        m.ggufs(req.quants.as_deref())?
    } else {
        Vec::new()
    };
    if req.engines.contains(&Engine::LlamaCpp) && !m.gguf_file() {
        let (ok, missing) = m.gguf_quants(req.quants.as_deref());
        if ok.is_empty() {
            notes.push(format!(
                "llama.cpp: no known GGUF repo of {} publishes {} (vramfit's GGUF catalog); convert it yourself (convert_hf_to_gguf.py, llama-quantize) and run fit on the .gguf",
                m.spec().id,
                if missing.is_empty() { "a GGUF".to_string() } else { missing.join(", ") }
            ));
        } else if req.quants.is_some() && !missing.is_empty() {
            notes.push(format!(
                "llama.cpp: no known GGUF repo publishes {} of {}; not planned",
                missing.join(", "),
                m.spec().id
            ));
        }
    }
    if req.engines.contains(&Engine::Vllm) && m.gguf_file() {
        notes.push("vLLM: not planned for a local GGUF file (give the HF repo id)".into());
    }
    if req.engines.contains(&Engine::Sglang) && m.gguf_file() {
        notes.push("SGLang: not planned for a local GGUF file (give the HF repo id)".into());
    }
    if req.engines.contains(&Engine::Transformers) && m.gguf_file() {
        notes.push("transformers: not planned for a local GGUF file (give the HF repo id)".into());
    }
    // pre-quantized checkpoints of this model (AWQ, GPTQ, FP8 repos) for vLLM and SGLang
    let offers = if req.engines.contains(&Engine::Vllm) || req.engines.contains(&Engine::Sglang) {
        crate::variants::offers(m)
    } else {
        Vec::new()
    };
    for (engine, e) in [
        (Engine::Vllm, crate::variants::Engine::Vllm),
        (Engine::Sglang, crate::variants::Engine::Sglang),
    ] {
        if req.engines.contains(&engine) {
            notes.extend(crate::variants::skipped(&offers, e, hw));
        }
    }
    let offers = &offers;
    // quants and engines are independent searches: one thread each
    std::thread::scope(|scope| {
        let mut jobs = Vec::new();
        for (q, w) in &ggufs {
            jobs.push(scope.spawn(move || {
                let h = match req.headroom {
                    Some(b) => headroom::fixed(hw, b),
                    None => headroom::llamacpp(w, hw),
                };
                let s = llamacpp::Setup::new(m.spec(), w, m.llama_args(q), q.clone(), hw, h);
                llama_plans(&s, req)
            }));
        }
        if req.engines.contains(&Engine::Vllm) && !m.gguf_file() {
            jobs.push(scope.spawn(move || {
                let s = vllm::Setup {
                    spec: m.spec(),
                    model: m.repo(),
                    hw,
                    headroom: match req.headroom {
                        Some(b) => headroom::fixed(hw, b),
                        None => headroom::vllm(hw),
                    },
                };
                let mut p = vllm::plans(&s, req);
                p.extend(vllm::variant_plans(offers, hw, req, &s.headroom));
                p
            }));
        }
        if req.engines.contains(&Engine::Sglang) && !m.gguf_file() {
            jobs.push(scope.spawn(move || crate::sglang::plans(m, hw, req)));
            jobs.push(scope.spawn(move || crate::sglang::variant_plans(offers, hw, req)));
        }
        if req.engines.contains(&Engine::Ollama) {
            jobs.push(scope.spawn(move || crate::ollama::plans(m, hw, req)));
        }
        if req.engines.contains(&Engine::Transformers) && !m.gguf_file() {
            jobs.push(scope.spawn(move || crate::transformers::plans(m, hw, req)));
        }
        for j in jobs {
            plans.extend(j.join().expect("a search thread panicked"));
        }
    });
    // a plan that needs more host RAM than there is does not fit (weights, KV and buffers kept
    // on the CPU; the OS and the engine process need some too: 2 GiB taken for them)
    if let Some(ram) = hw.host_ram_bytes {
        let before = plans.len();
        let os = 2 * vramfit_model::units::GIB;
        let need = |p: &Plan| if p.host_bytes() > 0 { p.host_bytes() + os } else { 0 };
        let most = plans.iter().map(need).max().unwrap_or(0);
        plans.retain(|p| need(p) <= ram);
        if plans.len() < before {
            notes.push(format!(
                "host RAM: {} plan(s) left out that need more than the {} of host RAM (up to {}); give --ram for another machine",
                before - plans.len(),
                vramfit_model::units::fmt_bytes(ram),
                vramfit_model::units::fmt_bytes(most)
            ));
        }
    }
    rank(&mut plans, req.goal, &req.usable(m.spec().n_ctx_train));
    if plans.is_empty() {
        return Err(PlanError::input(crate::nearest::explain(m, hw, req)));
    }
    Ok(FitResult {
        model: m.spec().id.clone(),
        plans,
        notes,
    })
}
