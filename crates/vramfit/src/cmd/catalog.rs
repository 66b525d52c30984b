//! `vramfit catalog models|gpus [FILTER] [--json]`: list the embedded catalogs.
//!
//! Models show their architecture as vramfit reads it (the same HF config reader a downloaded
//! config.json goes through): attention layout and computed parameter counts beside the model
//! card's figures. GPUs show the memory engines see, bandwidth and compute capability.

use crate::error::{CliError, CmdResult};
use serde_json::{json, Value};
use std::fmt::Write;
use vramfit_model::catalog::lookup::gpu_tokens;
use vramfit_model::catalog::{self, CatalogGpu, CatalogModel};
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::layout::param_counts;
use vramfit_model::units::GIB;

#[derive(clap::Args)]
pub struct Args {
    /// Which catalog: `models` or `gpus`.
    #[arg(value_name = "models|gpus")]
    pub what: String,
    /// Only entries whose id, name or alias contains this text (GPUs: all its words).
    pub filter: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> CmdResult {
    let filter = args
        .filter
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty());
    let text = match args.what.to_ascii_lowercase().as_str() {
        "models" | "model" => {
            let list: Vec<&CatalogModel> = catalog::models()
                .iter()
                .filter(|m| model_matches(m, filter))
                .collect();
            if list.is_empty() {
                return Err(no_match("model", filter.unwrap_or_default(), "models"));
            }
            let rows: Vec<ModelRow> = list.into_iter().map(ModelRow::of).collect();
            if args.json {
                json_text(Value::Array(rows.iter().map(ModelRow::to_json).collect()))
            } else {
                models_table(&rows)
            }
        }
        "gpus" | "gpu" => {
            let list: Vec<&CatalogGpu> = catalog::gpus()
                .iter()
                .filter(|g| gpu_matches(g, filter))
                .collect();
            if list.is_empty() {
                return Err(no_match("GPU", filter.unwrap_or_default(), "gpus"));
            }
            if args.json {
                json_text(Value::Array(list.iter().map(|g| gpu_json(g)).collect()))
            } else {
                gpus_table(&list)
            }
        }
        other => {
            return Err(CliError::input(format!(
                "unknown catalog '{other}': use 'vramfit catalog models' or 'vramfit catalog gpus'"
            )))
        }
    };
    print!("{text}");
    Ok(0)
}

fn no_match(kind: &str, filter: &str, what: &str) -> CliError {
    CliError::input(format!(
        "no catalog {kind} matches '{filter}'; run 'vramfit catalog {what}' to list them all"
    ))
}

fn json_text(v: Value) -> String {
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

fn model_matches(m: &CatalogModel, filter: Option<&str>) -> bool {
    let Some(f) = filter.map(str::to_lowercase) else {
        return true;
    };
    std::iter::once(&m.id)
        .chain(std::iter::once(&m.display_name))
        .chain(m.aliases.iter())
        .any(|n| n.to_lowercase().contains(&f))
}

fn gpu_matches(g: &CatalogGpu, filter: Option<&str>) -> bool {
    let Some(f) = filter else { return true };
    let want = gpu_tokens(f);
    std::iter::once(&g.id)
        .chain(std::iter::once(&g.name))
        .chain(g.aliases.iter())
        .any(|n| {
            let t = gpu_tokens(n);
            want.iter().all(|w| t.contains(w))
        })
}

/// One model as the table and JSON show it; the spec fields are empty when the reader refuses.
struct ModelRow<'a> {
    model: &'a CatalogModel,
    attention: String,
    params: Option<(u64, u64)>,
}

impl<'a> ModelRow<'a> {
    fn of(model: &'a CatalogModel) -> ModelRow<'a> {
        match spec_from_config(&model.id, &model.config) {
            Ok(spec) => ModelRow {
                model,
                attention: spec.attention_words(),
                params: Some(param_counts(&spec)),
            },
            Err(_) => ModelRow {
                model,
                attention: String::new(),
                params: None,
            },
        }
    }

    fn to_json(&self) -> Value {
        let m = self.model;
        json!({
            "id": m.id,
            "display_name": m.display_name,
            "aliases": m.aliases,
            "model_type": m.model_type(),
            "architecture": m.config["architectures"][0],
            "layers": m.num_layers(),
            "attention": self.attention,
            "params_total": self.params.map(|p| p.0),
            "params_active": self.params.map(|p| p.1),
            "params_official_total": m.params_official_total,
            "params_official_active": m.params_official_active,
            "unverified": m.unverified,
            "config": m.config,
        })
    }
}

/// `7.6B`, `671B`, `135M`.
fn billions(n: u64) -> String {
    let b = n as f64 / 1e9;
    match b {
        b if b >= 100.0 => format!("{b:.0}B"),
        b if b >= 1.0 => format!("{b:.1}B"),
        _ => format!("{:.0}M", n as f64 / 1e6),
    }
}

fn params_cell(total: Option<u64>, active: Option<u64>) -> String {
    match (total, active) {
        (Some(t), Some(a)) if a < t => format!("{}/{}", billions(t), billions(a)),
        (Some(t), _) => billions(t),
        (None, _) => "-".to_string(),
    }
}

fn models_table(rows: &[ModelRow]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<48} {:<12} {:>6} {:>13} {:>13}  attention",
        "model", "model_type", "layers", "params", "card"
    );
    for r in rows {
        let m = r.model;
        let _ = writeln!(
            o,
            "{:<48} {:<12} {:>6} {:>13} {:>13}  {}",
            m.id,
            m.model_type(),
            m.num_layers().map_or("-".to_string(), |n| n.to_string()),
            params_cell(r.params.map(|p| p.0), r.params.map(|p| p.1)),
            params_cell(m.params_official_total, m.params_official_active),
            r.attention
        );
    }
    let _ = writeln!(
        o,
        "{} models; params = computed total/active, card = the model card's figures",
        rows.len()
    );
    o
}

fn gpu_json(g: &CatalogGpu) -> Value {
    json!({
        "id": g.id,
        "name": g.name,
        "aliases": g.aliases,
        "vendor": g.vendor,
        "memory_bytes": g.memory_bytes,
        "memory_estimated": g.memory_estimated,
        "memory_marketing_gb": g.memory_marketing_gb,
        "bandwidth_gbps": g.bandwidth_gbps,
        "compute_capability": g.compute_capability,
        "unified_memory": g.unified_memory,
        "bf16": g.bf16,
        "fp8": g.fp8,
        "fp4": g.fp4,
    })
}

fn gpus_table(list: &[&CatalogGpu]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<52} {:>11} {:>10} {:>7}  formats",
        "GPU", "memory GiB", "GB/s", "cc"
    );
    for g in list {
        let mem = format!(
            "{:.2}{}",
            g.memory_bytes as f64 / GIB as f64,
            if g.memory_estimated { "~" } else { "" }
        );
        let mut formats: Vec<&str> = Vec::new();
        for (on, name) in [
            (g.bf16, "bf16"),
            (g.fp8, "fp8"),
            (g.fp4, "fp4"),
            (g.unified_memory, "unified"),
        ] {
            if on {
                formats.push(name);
            }
        }
        let _ = writeln!(
            o,
            "{:<52} {:>11} {:>10} {:>7}  {}",
            g.name,
            mem,
            format!("{}", g.bandwidth_gbps),
            g.compute_capability.as_deref().unwrap_or("-"),
            formats.join(" ")
        );
    }
    let _ = writeln!(
        o,
        "{} GPUs; ~ = derived from the marketing size, not seen on a real device",
        list.len()
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_filter_matches_ids_and_aliases_case_insensitively() {
        let m = catalog::find_model("Qwen/Qwen3-8B").unwrap();
        assert!(model_matches(m, Some("qwen3-8")));
        assert!(model_matches(m, Some("qwen3:8b")));
        assert!(!model_matches(m, Some("llama")));
        assert!(model_matches(m, None));
    }

    #[test]
    fn gpu_filter_needs_every_word() {
        let g = catalog::find_gpu("RTX 4090").unwrap();
        assert!(gpu_matches(g, Some("4090")));
        assert!(gpu_matches(g, Some("rtx4090")));
        assert!(!gpu_matches(g, Some("4090 ti")));
    }

    #[test]
    fn model_rows_carry_the_computed_layout() {
        let row = ModelRow::of(catalog::find_model("google/gemma-3-27b-it").unwrap());
        assert!(
            row.attention.contains("52 sliding window (1024)"),
            "{}",
            row.attention
        );
        let v = row.to_json();
        assert_eq!(v["id"], "google/gemma-3-27b-it");
        assert_eq!(v["layers"], 62);
        assert!(v["params_total"].as_u64().unwrap() > 26_000_000_000);
        let table = models_table(&[row]);
        assert!(table
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("google/gemma-3-27b-it"));
    }

    #[test]
    fn gpu_json_has_the_contract_keys() {
        let v = gpu_json(catalog::find_gpu("H100").unwrap());
        assert_eq!(v["name"], "NVIDIA H100 80GB HBM3");
        assert!(v["memory_bytes"].as_u64().unwrap() > 80_000_000_000);
        let table = gpus_table(&[catalog::find_gpu("T4").unwrap()]);
        assert!(
            table.contains("Tesla T4") && table.contains("14.74"),
            "{table}"
        );
    }

    #[test]
    fn parameter_cells_read_naturally() {
        assert_eq!(billions(7_615_616_512), "7.6B");
        assert_eq!(billions(671_026_000_000), "671B");
        assert_eq!(billions(135_000_000), "135M");
        assert_eq!(
            params_cell(Some(30_500_000_000), Some(3_300_000_000)),
            "30.5B/3.3B"
        );
        assert_eq!(params_cell(None, None), "-");
    }

    #[test]
    fn an_unknown_catalog_name_is_a_one_line_input_error() {
        let err = run(Args {
            what: "cards".into(),
            filter: None,
            json: false,
        })
        .unwrap_err();
        assert_eq!(err.code, 2);
        assert!(err.message.contains("'cards'") && !err.message.contains('\n'));
        let err = run(Args {
            what: "gpus".into(),
            filter: Some("zz9999".into()),
            json: true,
        })
        .unwrap_err();
        assert!(err.message.contains("'zz9999'"));
    }
}
