//! `table`: the quant × GPU matrix of the longest context that fits on a column's GPUs (one
//! card, or several such as `2x RTX 3090` for llama.cpp and vLLM), or, at a given context, the
//! most requests at once. Each cell is one boundary search with the engine's cheap layout
//! function; the GGUF tensors of a quant are predicted once per table. Rows: the ladder (or the
//! model's native GGUF only, for gpt-oss's MXFP4), and the IQ2 quants where in some column
//! they are the only thing that fits.

use crate::error::PlanError;
use crate::headroom;
use crate::llamacpp::{self, Knobs};
use crate::model::Model;
use crate::request::{Engine, Goal, Request};
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

/// A table column: its label (`RTX 4090`, `2x RTX 3090`) and its GPUs.
#[derive(Debug, Clone)]
pub struct Column {
    pub label: String,
    pub gpus: Vec<Gpu>,
}

impl Column {
    pub fn one(g: &Gpu) -> Column {
        Column {
            label: g.name.clone(),
            gpus: vec![g.clone()],
        }
    }

    fn hw(&self) -> Hardware {
        Hardware {
            gpus: self.gpus.clone(),
            host_ram_bytes: None,
        }
    }
}

/// Quants tried only for the table's last resort: kept as rows where, in some column, they are
/// the only thing that fits (bartowski publishes them for large models).
pub const LAST_RESORT: &[&str] = &["IQ2_M", "IQ2_XXS"];

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
    cols: &[Column],
    quants: Option<&[String]>,
    context: Option<u64>,
) -> Result<Table, PlanError> {
    let multi = cols.iter().any(|c| c.gpus.len() > 1);
    if multi && !matches!(engine, Engine::LlamaCpp | Engine::Vllm) {
        return Err(PlanError::input(format!(
            "--gpus: columns of several GPUs are tabled for llama.cpp and vllm, not {}; name one GPU per column",
            engine.name()
        )));
    }
    let singles: Vec<Gpu> = cols.iter().map(|c| c.gpus[0].clone()).collect();
    let mut cells = Vec::new();
    let mut quant_names: Vec<String>;
    match engine {
        Engine::LlamaCpp => {
            let mut ggufs = m.ggufs_any(quants)?;
            let extra = quants.is_none() && !m.gguf_file() && ggufs.len() > 1;
            if extra {
                let more: Vec<String> = LAST_RESORT.iter().map(|s| s.to_string()).collect();
                ggufs.extend(m.ggufs_any(Some(&more))?);
            }
            quant_names = ggufs.iter().map(|(q, _)| q.clone()).collect();
            for c in cols {
                let hw = c.hw();
                for (q, w) in &ggufs {
                    let h = headroom::llamacpp(w, &hw);
                    let s = llamacpp::Setup::new(m.spec(), w, m.llama_args(q), q.clone(), &hw, h);
                    let mut k = Knobs {
                        kv: GgmlType::F16,
                        np: 1,
                        ctx: 256,
                        ngl: None,
                        n_cpu_moe: None,
                        tensor_split: s.split(),
                    };
                    let max_ctx = s.max_ctx(&k);
                    let max_conc = context.map(|c| {
                        k.ctx = c.div_ceil(256).max(1) * 256;
                        s.max_np(&k)
                    });
                    cells.push(Cell {
                        gpu: c.label.clone(),
                        quant: q.clone(),
                        max_context: (max_ctx > 0).then_some(max_ctx),
                        max_concurrency: max_conc.filter(|n| *n > 0),
                    });
                }
            }
            if extra {
                // a last-resort row stays where it is the only row that fits a column
                let standard: Vec<String> = quant_names
                    .iter()
                    .filter(|q| !LAST_RESORT.contains(&q.as_str()))
                    .cloned()
                    .collect();
                let fits = |g: &str, q: &str| {
                    cells
                        .iter()
                        .any(|c: &Cell| c.gpu == g && c.quant == q && c.max_context.is_some())
                };
                let keep: Vec<String> = LAST_RESORT
                    .iter()
                    .filter(|q| {
                        cols.iter().any(|c| {
                            fits(&c.label, q) && !standard.iter().any(|s| fits(&c.label, s))
                        })
                    })
                    .map(|q| q.to_string())
                    .collect();
                quant_names.retain(|q| !LAST_RESORT.contains(&q.as_str()) || keep.contains(q));
                cells.retain(|c| quant_names.contains(&c.quant));
            }
        }
        Engine::Vllm => {
            quant_names = match quants {
                Some(q) => q.to_vec(),
                None => VLLM_QUANTS.iter().map(|s| s.to_string()).collect(),
            };
            if quants.is_none() && m.spec().quant.is_some() {
                // a quantized checkpoint (MXFP4, FP8, AWQ): its own format only, no upcast
                quant_names = vec![crate::quality::checkpoint_format(m.spec())];
            }
            let opts: Vec<vllm::Weights> = if quants.is_none() && m.spec().quant.is_some() {
                vec![vllm::Weights::Checkpoint]
            } else {
                quant_names
                    .iter()
                    .map(|q| vllm_weights(q))
                    .collect::<Result<_, _>>()?
            };
            for c in cols {
                let hw = c.hw();
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
                        gpu: c.label.clone(),
                        quant: q.to_ascii_uppercase(),
                        max_context: p.as_ref().map(|p| p.max_context),
                        max_concurrency: match context {
                            Some(_) => p.as_ref().map(|p| p.max_concurrency).filter(|n| *n > 0),
                            None => None,
                        },
                    });
                }
            }
            quant_names = quant_names.iter().map(|q| q.to_ascii_uppercase()).collect();
        }
        Engine::Sglang => {
            let (q, c) = crate::sglang::table_cells(m, &singles, quants, context)?;
            quant_names = q;
            cells = c;
        }
        Engine::Ollama => {
            let (q, c) = crate::ollama::table_cells(m, &singles, quants, context)?;
            quant_names = q;
            cells = c;
        }
        Engine::Transformers => {
            let (q, c) = crate::transformers::table_cells(m, &singles, quants, context)?;
            quant_names = q;
            cells = c;
        }
    }
    Ok(Table {
        model: m.spec().id.clone(),
        engine: engine.name().into(),
        context,
        gpus: cols.iter().map(|c| c.label.clone()).collect(),
        quants: quant_names,
        cells,
    })
}
