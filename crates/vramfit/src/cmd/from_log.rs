//! `check --from-log LOG -- <command>`: the command evaluated with the log's measurements in
//! place of the predicted ones (vLLM and SGLang in the engine models, llama.cpp's buffers here),
//! and the JSON's `calibration` block saying which numbers are measured.

use crate::error::CliError;
use crate::gpu_spec;
use serde_json::{json, Value};
use vramfit_engine::calibrate::{registry, store, Calibration};
use vramfit_engine::{Hardware, MemoryPlan, Verdict};

/// The GPUs to evaluate on: `--gpu` when given, else the log's (its name in the catalog, else
/// its total), as many as the log's tensor × pipeline parallel.
pub fn hardware(
    cal: &Calibration,
    gpu: Option<&str>,
    free: Option<&str>,
) -> Result<Hardware, CliError> {
    if gpu.is_some() {
        return gpu_spec::hardware(gpu, free);
    }
    let n = cal.settings.tensor_parallel_size.unwrap_or(1).max(1)
        * cal.settings.pipeline_parallel_size.unwrap_or(1).max(1);
    let one = match (&cal.gpu_name, cal.gpu_total_bytes) {
        (Some(name), _) if gpu_spec::hardware(Some(name), None).is_ok() => name.clone(),
        (_, Some(t)) => format!("{:.2}GiB", t as f64 / (1u64 << 30) as f64),
        _ => {
            return Err(CliError::input(
                "the log does not say which GPU it ran on: add --gpu NAME",
            ))
        }
    };
    gpu_spec::hardware(Some(&format!("{n}x {one}")), free)
}

/// llama.cpp: the log's buffers replace the predicted ones when the KV buffers agree (the same
/// context, cache types and layer split), since the KV cache is computed exactly.
fn apply_llamacpp(plan: &mut MemoryPlan, cal: &Calibration) -> bool {
    let m = &cal.measured;
    let kv_log: u64 = m.device_kv_bytes.iter().sum();
    let kv_plan: u64 = plan
        .devices
        .iter()
        .map(|d| d.kv_cache_bytes.max(0) as u64)
        .sum();
    let same = m.device_model_bytes.len() == plan.devices.len()
        && kv_log > 0
        && (kv_log as f64 - kv_plan as f64).abs() <= 0.01 * kv_log as f64;
    if !same {
        return false;
    }
    for (i, d) in plan.devices.iter_mut().enumerate() {
        d.weights_bytes = m.device_model_bytes[i];
        if let Some(c) = m.device_compute_bytes.get(i) {
            d.compute_bytes = *c;
        }
        d.finish();
        if d.used_bytes > d.free_bytes && plan.verdict == Verdict::Fits {
            plan.verdict = Verdict::DoesNotFit;
            plan.problems.push(format!(
                "{}: the measured buffers ({} MiB) exceed the {} MiB free",
                d.name,
                d.used_bytes >> 20,
                d.free_bytes >> 20
            ));
        }
    }
    true
}

/// After the engine model ran with `cal` installed: whether it was applied, llama.cpp's part,
/// and the JSON block. Errors when the log is of another deployment than the command.
pub fn finish(plan: &mut MemoryPlan, cal: &Calibration) -> Result<Value, CliError> {
    let applied = match plan.engine.as_str() {
        "llama.cpp" if cal.engine == "llama.cpp" => apply_llamacpp(plan, cal),
        _ => {
            plan.settings.iter().any(|(k, _)| k == "calibration")
                || plan.notes.iter().any(|n| n.starts_with("calibrated from"))
        }
    };
    if cal.engine != plan.engine {
        return Err(CliError::input(format!(
            "the log is a {} log, the command runs {}: give the log of the command's engine",
            cal.engine, plan.engine
        )));
    }
    if !applied {
        return Err(CliError::input(format!(
            "the log ({}) is not of this deployment: its model, GPU, release or layout differs from the command's (model '{}' in the log, '{}' in the command){}",
            store::key(cal),
            cal.model,
            plan.model.id,
            if plan.engine == "llama.cpp" { "; llama.cpp logs apply to the same context, cache types and layer split" } else { "" }
        )));
    }
    Ok(block(plan, cal))
}

/// The `calibration` block of the JSON: where each number comes from.
pub fn block(plan: &MemoryPlan, cal: &Calibration) -> Value {
    let mut sources = serde_json::Map::new();
    for (k, v) in &plan.settings {
        if let Some(what) = k.strip_prefix("source of ") {
            sources.insert(what.to_string(), Value::String(v.clone()));
        }
    }
    if sources.is_empty() {
        let tag = if plan.engine == "llama.cpp" {
            "measured"
        } else {
            "measured where the layout matches the log's"
        };
        for k in ["weights_bytes", "compute_bytes", "kv_cache_bytes"] {
            sources.insert(k.into(), Value::String(tag.into()));
        }
    }
    json!({
        "source": cal.source,
        "key": store::key(cal),
        "engine_version": cal.engine_version,
        "sources": sources,
        "warnings": cal.warnings,
    })
}

/// Install the log's calibration alone for this process.
pub fn install(cal: &Calibration) {
    registry::install(vec![cal.clone()]);
}

/// The `calibration` block when a stored calibration was applied (None: pure prediction).
pub fn stored_block(plan: &MemoryPlan) -> Option<Value> {
    let src = plan.settings.iter().find(|(k, _)| k == "calibration")?;
    let cal = registry::installed()
        .into_iter()
        .find(|c| src.1.starts_with(&c.source))?;
    Some(block(plan, &cal))
}

/// The model a pasted vLLM or SGLang command serves.
pub fn command_model(command: &[String]) -> Option<String> {
    use vramfit_engine::cmdline::{Command, EngineKind};
    let cmd = Command::parse(command).ok()?;
    match cmd.engine {
        Some(EngineKind::Vllm) => vramfit_engine::vllm::parse(&cmd, None)
            .ok()
            .map(|c| c.model),
        Some(EngineKind::Sglang) => vramfit_engine::sglang::parse(&cmd).ok().map(|c| c.model),
        _ => None,
    }
}
