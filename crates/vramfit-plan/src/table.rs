//! `table`: the quant × GPU matrix of the longest context that fits on one card (or, at a
//! given context, the most requests at once). Each cell is one boundary search with the
//! engine's cheap layout function; the GGUF tensors of a quant are predicted once per table.

use crate::error::PlanError;
use crate::headroom;
use crate::llamacpp::{self, Knobs};
use crate::request::{Engine, Goal, Request};
use crate::solve::Model;
use crate::vllm;
use serde::Serialize;
use vramfit_engine::{Gpu, Hardware};
use vramfit_model::GgmlType;

/// The GPUs a table spans by default: one per common memory class (8, 12, 16, 24, 32, 48, 80,
/// 96, 141, 192 GB), by catalog id.
pub const DEFAULT_GPUS: &[&str] = &[
    "rtx-4060",
    "rtx-3060-12gb",
    "rtx-4060-ti-16gb",
    "rtx-4090",
    "rtx-5090",
    "l40s",
    "h100-sxm",
    "rtx-pro-6000-blackwell",
    "h200",
    "mi300x",
];

/// vLLM's weight precisions as table rows.
pub const VLLM_QUANTS: &[&str] = &["BF16", "FP8", "BNB4"];

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub gpu: String,
    pub quant: String,
    /// longest context per request, all on the GPU; null: nothing fits
    pub max_context: Option<u64>,
    /// at `--context`: the most requests of that length at once; null otherwise or when none
    pub max_concurrency: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Table {
    pub model: String,
    pub engine: String,
    pub context: Option<u64>,
    pub gpus: Vec<String>,
    pub quants: Vec<String>,
    pub cells: Vec<Cell>,
}

fn one(g: &Gpu) -> Hardware {
    Hardware {
        gpus: vec![g.clone()],
        host_ram_bytes: None,
    }
}

fn vllm_weights(q: &str) -> Result<vllm::Weights, PlanError> {
    match q.to_ascii_uppercase().as_str() {
        "BF16" | "F16" | "FP16" | "AUTO" | "CHECKPOINT" => Ok(vllm::Weights::Checkpoint),
        "FP8" => Ok(vllm::Weights::Fp8),
        "BNB4" | "NF4" | "BITSANDBYTES" => Ok(vllm::Weights::Bnb4),
        _ => Err(PlanError::input(format!(
            "--quants '{q}' is not a vLLM weight precision: use BF16, FP8 or BNB4"
        ))),
    }
}

/// Build the table. `context`: fill `max_concurrency` at that context per request.
pub fn table(
    m: &Model,
    engine: Engine,
    gpus: &[Gpu],
    quants: Option<&[String]>,
    context: Option<u64>,
) -> Result<Table, PlanError> {
    let mut cells = Vec::new();
    let quant_names: Vec<String>;
    match engine {
        Engine::LlamaCpp => {
            let ggufs = m.ggufs_any(quants)?;
            quant_names = ggufs.iter().map(|(q, _)| q.clone()).collect();
            for g in gpus {
                let hw = one(g);
                for (q, w) in &ggufs {
                    let h = headroom::llamacpp(w, &hw);
                    let s = llamacpp::Setup::new(m.spec(), w, m.llama_args(q), q.clone(), &hw, h);
                    let mut k = Knobs {
                        kv: GgmlType::F16,
                        np: 1,
                        ctx: 256,
                        ngl: None,
                        n_cpu_moe: None,
                        tensor_split: None,
                    };
                    let max_ctx = s.max_ctx(&k);
                    let max_conc = context.map(|c| {
                        k.ctx = c.div_ceil(256).max(1) * 256;
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
        }
        Engine::Vllm => {
            quant_names = match quants {
                Some(q) => q.to_vec(),
                None => VLLM_QUANTS.iter().map(|s| s.to_string()).collect(),
            };
            let opts: Vec<vllm::Weights> = quant_names
                .iter()
                .map(|q| vllm_weights(q))
                .collect::<Result<_, _>>()?;
            for g in gpus {
                let hw = one(g);
                let s = vllm::Setup {
                    spec: m.spec(),
                    model: m.repo(),
                    hw: &hw,
                    headroom: headroom::vllm(&hw),
                };
                for (q, &w) in quant_names.iter().zip(&opts) {
                    let req = Request {
                        engines: vec![Engine::Vllm],
                        context,
                        concurrency: None,
                        goal: Goal::Quality,
                        quants: None,
                        headroom: None,
                    };
                    let p = vllm::plans_for(&s, &req, &[w], &["auto"], false)
                        .into_iter()
                        .next();
                    cells.push(Cell {
                        gpu: g.name.clone(),
                        quant: q.to_ascii_uppercase(),
                        max_context: p.as_ref().map(|p| p.max_context),
                        max_concurrency: match context {
                            Some(_) => p.as_ref().map(|p| p.max_concurrency).filter(|n| *n > 0),
                            None => None,
                        },
                    });
                }
            }
        }
        Engine::Sglang => {
            let (q, c) = crate::sglang::table_cells(m, gpus, quants, context)?;
            quant_names = q;
            cells = c;
        }
        Engine::Ollama => {
            let (q, c) = crate::ollama::table_cells(m, gpus, quants, context)?;
            quant_names = q;
            cells = c;
        }
        Engine::Transformers => {
            let (q, c) = crate::transformers::table_cells(m, gpus, quants, context)?;
            quant_names = q;
            cells = c;
        }
    }
    Ok(Table {
        model: m.spec().id.clone(),
        engine: engine.name().into(),
        context,
        gpus: gpus.iter().map(|g| g.name.clone()).collect(),
        quants: quant_names,
        cells,
    })
}
