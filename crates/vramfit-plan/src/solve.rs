//! `fit`: every engine's plans for a model on the given GPUs, ranked; and, when nothing fits,
//! the nearest thing that does.

use crate::error::PlanError;
use crate::headroom;
use crate::llamacpp::{self, llama_plans};
pub use crate::model::Model;
use crate::plan::{rank, Plan};
use crate::request::{Engine, Request};
use crate::vllm;
use serde::Serialize;
use vramfit_engine::Hardware;

/// The answer of `fit`.
#[derive(Debug, Clone, Serialize)]
pub struct FitResult {
    pub model: String,
    pub plans: Vec<Plan>,
    /// what was assumed or left out
    pub notes: Vec<String>,
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
        let need = |p: &Plan| {
            if p.host_bytes() > 0 {
                p.host_bytes() + os
            } else {
                0
            }
        };
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
