//! SGLang's rows of `vramfit table`: per weight precision and single GPU, the longest
//! `--context-length` that fits (or, at a given context, the most requests of it at once).

use super::{plans_for, Weights};
use crate::error::PlanError;
use crate::model::Model;
use crate::request::{Engine, Goal, Request};
use crate::table::Cell;
use vramfit_engine::{Gpu, Hardware};

/// SGLang's weight precisions as table rows.
pub const SGLANG_QUANTS: &[&str] = &["BF16", "FP8"];

fn weights(q: &str) -> Result<Weights, PlanError> {
    match q.to_ascii_uppercase().as_str() {
        "BF16" | "F16" | "FP16" | "AUTO" | "CHECKPOINT" => Ok(Weights::Checkpoint),
        "FP8" => Ok(Weights::Fp8),
        _ => Err(PlanError::input(format!(
            "--quants '{q}' is not an SGLang weight precision: use BF16 (the checkpoint) or FP8"
        ))),
    }
}

/// The quant names (rows) and one cell per GPU × quant, GPU-major as the vLLM rows are. A cell
/// is empty where the weights do not load on that GPU (FP8 below compute capability 8.0, or
/// of an already quantized checkpoint) or nothing of at least 4096 tokens (the asked context)
/// fits.
pub fn table_cells(
    m: &Model,
    gpus: &[Gpu],
    quants: Option<&[String]>,
    context: Option<u64>,
) -> Result<(Vec<String>, Vec<Cell>), PlanError> {
    let names: Vec<String> = match quants {
        Some(q) => q.iter().map(|s| s.to_ascii_uppercase()).collect(),
        None => SGLANG_QUANTS.iter().map(|s| s.to_string()).collect(),
    };
    let opts: Vec<Weights> = names.iter().map(|q| weights(q)).collect::<Result<_, _>>()?;
    let req = Request {
        engines: vec![Engine::Sglang],
        context,
        concurrency: None,
        goal: Goal::Quality,
        quants: None,
        headroom: None,
    };
    let repo = m.repo();
    let mut cells = Vec::new();
    for g in gpus {
        let hw = Hardware {
            gpus: vec![g.clone()],
            host_ram_bytes: None,
        };
        for (q, &w) in names.iter().zip(&opts) {
            let p = plans_for(
                m.spec(),
                m.resolved.weights.as_ref(),
                &repo,
                &hw,
                &req,
                &[w],
                &["auto"],
            )
            .into_iter()
            .next();
            cells.push(Cell {
                gpu: g.name.clone(),
                quant: q.clone(),
                max_context: p.as_ref().map(|p| p.max_context),
                max_concurrency: match context {
                    Some(_) => p.as_ref().map(|p| p.max_concurrency).filter(|n| *n > 0),
                    None => None,
                },
            });
        }
    }
    Ok((names, cells))
}
