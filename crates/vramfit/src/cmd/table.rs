//! `vramfit table MODEL [--engine E] [--gpus LIST] [--quants LIST] [--context N] [--json]`:
//! quant × GPU matrix of the longest context that fits on one card (or, with --context, the
//! most requests of that length at once); ✗ where nothing fits.

use crate::cmd::fit::request;
use crate::error::{CliError, CmdResult};
use std::fmt::Write;
use vramfit_engine::Gpu;
use vramfit_model::catalog::find_gpu;
use vramfit_plan::solve::Model;
use vramfit_plan::table::{self, Column, Table, DEFAULT_GPUS};
use vramfit_plan::Engine;

#[derive(clap::Args)]
pub struct Args {
    /// Model: HF repo id, local GGUF / config.json / snapshot dir, or a catalog name.
    pub model: String,
    /// llama.cpp (default), vllm, sglang, ollama or transformers.
    #[arg(long, default_value = "llama.cpp")]
    pub engine: String,
    /// GPU columns, comma-separated: a name, or `2x RTX 3090` for several cards (llama.cpp and
    /// vLLM); default: one per memory class, 8 GB to 192 GB. `--gpu` (as `fit` and `check` spell
    /// it) is the same option.
    #[arg(long, alias = "gpu")]
    pub gpus: Option<String>,
    /// Quants (rows): GGUF names for llama.cpp and Ollama, BF16/FP8/BNB4 for vLLM, BF16/FP8 for
    /// SGLang, BF16/INT8/NF4 for transformers.
    #[arg(long)]
    pub quants: Option<String>,
    /// Context per request: cells show how many such requests fit at once.
    #[arg(long)]
    pub context: Option<String>,
    /// Print JSON: {"model", "engine", "cells": [{gpu, quant, max_context, max_concurrency}]}.
    #[arg(long)]
    pub json: bool,
}

fn gpu(name: &str) -> Result<Gpu, CliError> {
    let g = find_gpu(name).map_err(|e| CliError::input(format!("--gpus: {e}")))?;
    Ok(Gpu::from_catalog(g))
}

/// One `--gpus` entry: `RTX 4090` or `2x RTX 3090` (a column of several identical cards).
fn column(entry: &str) -> Result<Column, CliError> {
    let e = entry.trim();
    let (n, name) = match e.split_once(['x', 'X']) {
        Some((count, rest))
            if !count.trim().is_empty() && count.trim().chars().all(|c| c.is_ascii_digit()) =>
        {
            let n: usize = count.trim().parse().map_err(|_| {
                CliError::input(format!(
                    "--gpus '{e}': bad count; write e.g. \"2x RTX 3090\""
                ))
            })?;
            (n, rest.trim())
        }
        _ => (1, e),
    };
    if n == 0 || n > 16 {
        return Err(CliError::input(format!(
            "--gpus '{e}': a column of {n} GPUs is not tabled (1 to 16)"
        )));
    }
    let g = gpu(name)?;
    let label = if n == 1 {
        g.name.clone()
    } else {
        format!("{n}x {}", g.name)
    };
    Ok(Column {
        label,
        gpus: vec![g; n],
    })
}

pub fn run(args: Args) -> CmdResult {
    let req = request(
        &args.engine,
        args.context.as_deref(),
        None,
        "quality",
        args.quants.as_deref(),
    )?;
    let engine = match req.engines.as_slice() {
        [e] => *e,
        _ => {
            return Err(CliError::input(format!(
                "--engine '{}': a table is for one engine; use llama.cpp, vllm, sglang, ollama or transformers",
                args.engine
            )))
        }
    };
    let gpus: Vec<Column> = match &args.gpus {
        Some(list) => list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(column)
            .collect::<Result<_, _>>()?,
        None => DEFAULT_GPUS
            .iter()
            .map(|g| gpu(g).map(|g| Column::one(&g)))
            .collect::<Result<_, _>>()?,
    };
    if gpus.is_empty() {
        return Err(CliError::input(
            "--gpus is empty: name GPUs such as \"RTX 4090,H100\"",
        ));
    }
    let model = Model::load(&args.model).map_err(|e| CliError::input(e.to_string()))?;
    let t = table::table(&model, engine, &gpus, req.quants.as_deref(), req.context)
        .map_err(|e| CliError::input(e.to_string()))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&t).map_err(|e| CliError::input(e.to_string()))?
        );
    } else {
        print!("{}", render(&t, engine));
    }
    Ok(0)
}

fn short(name: &str) -> String {
    let s = name
        .replace("NVIDIA ", "")
        .replace("GeForce ", "")
        .replace("AMD Instinct ", "")
        .replace(" Blackwell Workstation Edition", "")
        .replace(" 80GB HBM3", "");
    s.chars().take(14).collect()
}

fn cell_text(v: Option<u64>, context_mode: bool) -> String {
    match v {
        None => "✗".into(),
        Some(n) if context_mode => format!("{n}x"),
        Some(n) if n >= 1024 && n % 1024 == 0 => format!("{}k", n / 1024),
        Some(n) if n >= 1000 => format!("{:.1}k", n as f64 / 1024.0),
        Some(n) => n.to_string(),
    }
}

/// Rows: quants; columns: GPUs.
pub fn render(t: &Table, engine: Engine) -> String {
    let mut o = String::new();
    let what = match t.context {
        Some(c) => format!("requests of {c} tokens at once"),
        None => "longest context per request".into(),
    };
    let _ = writeln!(
        o,
        "{} · {} · {what}, every weight on the column's GPUs (✗: nothing fits)",
        t.model,
        engine.name()
    );
    let _ = write!(o, "{:<9}", "quant");
    for g in &t.gpus {
        let _ = write!(o, " {:>14}", short(g));
    }
    let _ = writeln!(o);
    for q in &t.quants {
        let _ = write!(o, "{q:<9}");
        for g in &t.gpus {
            let c = t.cells.iter().find(|c| &c.gpu == g && &c.quant == q);
            let v = c.and_then(|c| {
                if t.context.is_some() {
                    c.max_concurrency
                } else {
                    c.max_context
                }
            });
            let _ = write!(o, " {:>14}", cell_text(v, t.context.is_some()));
        }
        let _ = writeln!(o);
    }
    o
}
