//! The vramfit solver: search an engine's memory knobs for configurations that fit the given
//! GPUs, rank them, and print commands that pin every memory-relevant flag.
//!
//! Every candidate is evaluated with the engine crate's own model (`vramfit_engine::llamacpp`,
//! `vramfit_engine::vllm`) on the config parsed from the command the plan prints, so feeding
//! that command to `vramfit check` reproduces the plan. Boundaries (the longest context, the
//! most parallel slots) are binary searches over the engine's cheap layout function.
//!
//! ```no_run
//! use vramfit_plan::{solve, Engine, Goal, Request};
//! # fn hw() -> vramfit_engine::Hardware { unimplemented!() }
//! let model = vramfit_plan::model::Model::load("Qwen/Qwen3-8B").unwrap();
//! let req = Request { engines: vec![Engine::LlamaCpp], context: None, concurrency: None,
//!                     goal: Goal::Quality, quants: None, headroom: None };
//! let best = &solve::fit(&model, &hw(), &req).unwrap().plans[0];
//! println!("{}", best.command);
//! ```
//!
//! - [`request`]: what is asked (engines, context, concurrency, goal)
//! - [`model`]: the [`model::Model`] every planner takes (resolved spec, download names, GGUFs)
//! - [`llamacpp`], [`vllm`], [`sglang`], [`ollama`], [`transformers`]: one folder per engine, as
//!   in the engine crate: its knobs, search, command and rendering. Planners depend on `model`,
//!   `plan`, `request` and `headroom`, never on [`solve`]; `solve` calls the planners.
//! - [`quality`]: measured quality loss per weight format and KV cache type
//! - [`headroom`]: what is kept free, from the measured error of the engine models
//! - [`speed`]: decode tokens/s: a bandwidth roofline, and ggml's measured form
//! - [`plan`]: the plan, its ranking; [`solve`]: `fit`; [`table`]: the quant × GPU matrix
//! - [`variants`]: the catalog's pre-quantized checkpoints (AWQ, GPTQ, FP8 repos) as vLLM and
//!   SGLang options, with the engines' kernel support by compute capability
//! - [`nearest`]: what comes closest when nothing fits

pub mod error;
pub mod headroom;
pub mod llamacpp;
pub mod model;
pub mod nearest;
pub mod ollama;
pub mod plan;
pub mod quality;
pub mod request;
pub mod sglang;
pub mod solve;
pub mod speed;
pub mod table;
pub mod transformers;
pub mod variants;
pub mod vllm;

pub use error::PlanError;
pub use plan::{Plan, Setting};
pub use request::{Engine, Goal, Request};
