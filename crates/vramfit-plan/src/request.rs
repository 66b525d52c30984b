//! What the user asks the solver for: the model, the engines, the context and concurrency they
//! need, and what to optimise.

use crate::error::PlanError;
use serde::Serialize;

/// An engine the solver can plan for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Engine {
    #[serde(rename = "vllm")]
    Vllm,
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
    #[serde(rename = "sglang")]
    Sglang,
    #[serde(rename = "ollama")]
    Ollama,
    #[serde(rename = "transformers")]
    Transformers,
}

/// Every engine the solver plans, in the order `all` lists them.
pub const ALL_ENGINES: &[Engine] = &[
    Engine::Vllm,
    Engine::LlamaCpp,
    Engine::Sglang,
    Engine::Ollama,
    Engine::Transformers,
];

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::LlamaCpp => "llama.cpp",
            Engine::Sglang => "sglang",
            Engine::Ollama => "ollama",
            Engine::Transformers => "transformers",
        }
    }

    /// `--engine` values: `vllm`, `llama.cpp` (`llamacpp`, `llama-server`), `sglang`, `ollama`,
    /// `transformers` (`hf`), `all`; comma-separated.
    pub fn parse_list(s: &str) -> Result<Vec<Engine>, PlanError> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part.to_ascii_lowercase().as_str() {
                "vllm" => out.push(Engine::Vllm),
                "llama.cpp" | "llamacpp" | "llama-server" | "llama_cpp" => out.push(Engine::LlamaCpp),
                "sglang" => out.push(Engine::Sglang),
                "ollama" => out.push(Engine::Ollama),
                "transformers" | "hf" | "huggingface" => out.push(Engine::Transformers),
                "all" => out.extend(ALL_ENGINES),
                _ => {
                    return Err(PlanError::input(format!(
                        "--engine '{part}' is not an engine vramfit plans: use vllm, llama.cpp, sglang, ollama, transformers or all"
                    )))
                }
            }
        }
        let mut seen = Vec::new();
        out.retain(|e| {
            let new = !seen.contains(e);
            seen.push(*e);
            new
        });
        if out.is_empty() {
            return Err(PlanError::input(
                "--engine is empty: use vllm, llama.cpp, sglang, ollama, transformers or all",
            ));
        }
        Ok(out)
    }
}

/// What the ranking optimises first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Goal {
    /// weight precision, then KV precision, then context × concurrency, then speed (default)
    Quality,
    /// the longest context per request
    Context,
    /// the most requests at once
    Concurrency,
    /// the fastest decode
    Speed,
}

impl Goal {
    pub fn parse(s: &str) -> Result<Goal, PlanError> {
        match s.to_ascii_lowercase().as_str() {
            "quality" => Ok(Goal::Quality),
            "context" => Ok(Goal::Context),
            "concurrency" => Ok(Goal::Concurrency),
            "speed" => Ok(Goal::Speed),
            _ => Err(PlanError::input(format!(
                "--goal '{s}' is not a goal: use quality, context, concurrency or speed"
            ))),
        }
    }
}

/// A fit request.
#[derive(Debug, Clone)]
pub struct Request {
    pub engines: Vec<Engine>,
    /// context per request the user needs; None: as long as fits (up to the model's)
    pub context: Option<u64>,
    /// requests at once; None: 1 for llama.cpp, the engine default for vLLM
    pub concurrency: Option<u64>,
    pub goal: Goal,
    /// GGUF quants to consider (llama.cpp); None: the common ladder
    pub quants: Option<Vec<String>>,
    /// bytes to keep free per GPU instead of the measured-error policy of [`crate::headroom`]
    /// (e.g. 1 GiB, llama.cpp's `--fit-target` default)
    pub headroom: Option<u64>,
}

impl Request {
    /// What a usable default answer must give for a model of `n_ctx_train` tokens
    /// ([`crate::plan::Usable`]).
    pub fn usable(&self, n_ctx_train: u64) -> crate::plan::Usable {
        let own = if n_ctx_train > 0 {
            n_ctx_train
        } else {
            crate::plan::USABLE_CONTEXT
        };
        crate::plan::Usable {
            context: self.context.unwrap_or(crate::plan::USABLE_CONTEXT).min(own),
            concurrency: self.concurrency.unwrap_or(1),
        }
    }
}

/// The smallest context a plan is offered with when none is asked: llama.cpp's `--fit-ctx`
/// default (common/common.h, #16653).
pub const MIN_CONTEXT: u64 = 4096;

/// GGUF quants tried by default, best first (the levels community repos publish).
pub const GGUF_LADDER: &[&str] = &[
    "BF16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "IQ4_XS", "Q3_K_M", "IQ3_XXS", "Q2_K",
];
