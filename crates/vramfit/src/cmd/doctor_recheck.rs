//! `vramfit doctor LOG [--gpu SPEC] -- <command>`: every fix that is a flag or a variable of the
//! command is applied to it and run through `check`'s engine model on the GPUs (from `--gpu`,
//! else the total the log printed, else NVML) before it is printed. A fix the model says
//! does not fit is kept but marked, and moved after the ones that fit.

use vramfit_doctor::{Cause, Diagnosis, Engine, Fix};
use vramfit_engine::{Gpu, Hardware, Verdict};
use vramfit_model::units::fmt_bytes;

use crate::cmd::check;
use crate::error::CliError;
use crate::gpu_spec;

/// Spellings of one setting on the command line (llama.cpp common/arg.cpp, vLLM arg_utils.py,
/// SGLang server_args.py): a fix names one, the pasted command may use another.
const ALIASES: &[&[&str]] = &[
    &["-c", "--ctx-size"],
    &["-ngl", "--n-gpu-layers", "--gpu-layers"],
    &["-ub", "--ubatch-size"],
    &["-b", "--batch-size"],
    &["-np", "--parallel"],
    &["-fa", "--flash-attn"],
    &["-ctk", "--cache-type-k"],
    &["-ctv", "--cache-type-v"],
    &["-tp", "--tensor-parallel-size"],
    &["--tp-size", "--tp"],
];

fn spellings(flag: &str) -> Vec<&str> {
    ALIASES
        .iter()
        .find(|g| g.contains(&flag))
        .map_or_else(|| vec![flag], |g| g.to_vec())
}

/// The command with one fix applied; None when the fix is not a flag or variable of it.
pub fn apply(command: &[String], f: &Fix) -> Option<Vec<String>> {
    if f.flag.is_empty() {
        return None;
    }
    let mut out: Vec<String> = command.to_vec();
    // an environment variable goes in front as VAR=value (check reads leading assignments)
    if f.flag
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    {
        out.retain(|a| !a.starts_with(&format!("{}=", f.flag)));
        out.insert(0, format!("{}={}", f.flag, f.value));
        return Some(out);
    }
    if !f.flag.starts_with('-') {
        return None;
    }
    let names = spellings(&f.flag);
    let switch = f.value.is_empty();
    let mut i = 0;
    let mut found = false;
    while i < out.len() {
        let a = out[i].clone();
        if let Some((name, _)) = a.split_once('=') {
            if names.contains(&name) {
                out[i] = format!("{name}={}", f.value);
                found = true;
            }
        } else if names.contains(&a.as_str()) {
            found = true;
            if !switch {
                if i + 1 < out.len() && !out[i + 1].starts_with('-') {
                    out[i + 1] = f.value.clone();
                } else {
                    out.insert(i + 1, f.value.clone());
                }
            }
        }
        i += 1;
    }
    if !found {
        out.push(f.flag.clone());
        if !switch {
            out.push(f.value.clone());
        }
    }
    Some(out)
}

/// The GPUs to re-check on: `--gpu` (with `--gpu-free`), else the total the log printed.
pub fn hardware(
    gpu: Option<&str>,
    gpu_free: Option<&str>,
    d: &Diagnosis,
) -> Result<Hardware, CliError> {
    if gpu.is_some() {
        return gpu_spec::hardware(gpu, gpu_free);
    }
    if let Some(total) = log_total(d) {
        let n = d.settings.tensor_parallel_size.unwrap_or(1).max(1) as usize;
        let g = Gpu {
            name: format!("{} GPU (from the log)", fmt_bytes(total)),
            total_bytes: total,
            free_bytes: total,
            bandwidth_gbps: None,
            compute_capability: None,
            unified: false,
        };
        return Ok(Hardware {
            gpus: vec![g; n],
            host_ram_bytes: None,
        });
    }
    gpu_spec::hardware(None, gpu_free)
}

/// The GPU size the log's own messages printed (PyTorch OOM, vLLM budget lines).
fn log_total(d: &Diagnosis) -> Option<u64> {
    d.events.iter().rev().find_map(|l| {
        let v = serde_json::to_value(&l.event).ok()?;
        v.get("total")
            .and_then(|t| t.as_u64())
            .filter(|t| *t > (1 << 30))
    })
}

/// Re-check each fix; returns notes for the report (what the original command does).
pub fn recheck(
    d: &mut Diagnosis,
    command: &[String],
    hw: &Hardware,
    version: Option<&str>,
) -> Vec<String> {
    let mut notes = Vec::new();
    let mut base_fits = false;
    let model_len = match check::check(command, hw, version) {
        Ok(plan) if plan.verdict == Verdict::Fits => {
            base_fits = true;
            notes.push(format!(
                "check's model says the command as given fits on {}: the failure is outside what it models (other processes, fragmentation, a bug), or the GPU differs",
                describe(hw)
            ));
            plan.max_model_len
        }
        Ok(plan) => {
            notes.push(format!(
                "check's model agrees: the command as given does not fit on {}",
                describe(hw)
            ));
            plan.max_model_len
        }
        Err(e) => {
            notes.push(format!("fixes not re-checked: {e}"));
            for f in d.fixes.iter_mut().filter(|f| !f.flag.is_empty()) {
                f.checked = Some("not re-checked: check could not read the command".into());
            }
            return notes;
        }
    };
    for f in d.fixes.iter_mut() {
        let Some(edited) = apply(command, f) else {
            if !f.flag.is_empty() {
                f.checked = Some("not re-checked: not a flag of this command".into());
            }
            continue;
        };
        f.checked = Some(match check::check(&edited, hw, version) {
            // the command as given fits by check's model too: "fits" confirms nothing
            Ok(plan) if plan.verdict == Verdict::Fits && base_fits => {
                "re-checked: fits, as the command as given does (check's model does not see this failure)".to_string()
            }
            Ok(plan) if plan.verdict == Verdict::Fits => "re-checked: fits".to_string(),
            Ok(plan) => {
                let why = plan.problems.first().cloned().unwrap_or_default();
                // a context length the model says is too long: take the model's own largest
                let context = matches!(
                    f.flag.as_str(),
                    "--max-model-len" | "--context-length" | "-c"
                );
                let current: Option<u64> = f.value.parse().ok();
                if context && model_len > 0 && current.is_some_and(|c| model_len < c) {
                    let mut g = f.clone();
                    g.value = model_len.to_string();
                    let ok = apply(command, &g)
                        .and_then(|e| check::check(&e, hw, version).ok())
                        .is_some_and(|p| p.verdict == Verdict::Fits);
                    if ok {
                        f.why = format!(
                            "{} (lowered from {} by check's engine model)",
                            f.why, f.value
                        );
                        f.value = g.value;
                        "re-checked: fits".to_string()
                    } else {
                        format!("re-checked: does not fit by itself ({why})")
                    }
                } else {
                    format!("re-checked: does not fit by itself ({why})")
                }
            }
            Err(e) => format!("not re-checked: {e}"),
        });
    }
    // a KV-cache cause whose log did not print the largest context (vLLM's message cut, a
    // server's bare pool error): check's model gives it for this command and GPU
    if let Some(f) = context_from_model(d, command, hw, version, model_len, base_fits) {
        d.fixes.insert(0, f);
    }
    // fixes that fit first, then the rest in their order
    d.fixes.sort_by_key(|f| match f.checked.as_deref() {
        Some(c) if c.starts_with("re-checked: fits") => 0,
        Some(c) if c.starts_with("re-checked: does not") => 2,
        _ => 1,
    });
    notes
}

/// The context flag of the engine the log names, set to check's largest fitting context, when
/// the cause is the KV cache, the command as given does not fit, no context fix has a value,
/// and the command with it fits by check's model.
fn context_from_model(
    d: &Diagnosis,
    command: &[String],
    hw: &Hardware,
    version: Option<&str>,
    model_len: u64,
    base_fits: bool,
) -> Option<Fix> {
    let flag = match d.engine {
        Engine::Vllm => "--max-model-len",
        Engine::Sglang => "--context-length",
        Engine::LlamaCpp => "-c",
        _ => return None,
    };
    let has = d.fixes.iter().any(|f| f.flag == flag);
    if d.cause != Cause::KvCache || base_fits || has || model_len < 256 {
        return None;
    }
    let mut f = Fix::flag(
        flag,
        model_len,
        format!(
            "the largest context check's engine model fits on {}",
            describe(hw)
        ),
    );
    let fits = apply(command, &f)
        .and_then(|e| check::check(&e, hw, version).ok())
        .is_some_and(|p| p.verdict == Verdict::Fits);
    fits.then(|| {
        f.checked = Some("re-checked: fits".into());
        f
    })
}

fn describe(hw: &Hardware) -> String {
    match hw.gpus.first() {
        Some(g) if hw.gpus.len() > 1 => format!("{} x {}", hw.gpus.len(), g.name),
        Some(g) => g.name.clone(),
        None => "no GPU".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn flags_are_replaced_or_added_in_any_spelling() {
        let c = cmd("vllm serve m --max-model-len 131072 --gpu-memory-utilization=0.95");
        let f = Fix::flag("--max-model-len", 32768, "x");
        assert_eq!(
            apply(&c, &f).unwrap(),
            cmd("vllm serve m --max-model-len 32768 --gpu-memory-utilization=0.95")
        );
        let f = Fix::flag("--gpu-memory-utilization", "0.90", "x");
        assert_eq!(
            apply(&c, &f).unwrap(),
            cmd("vllm serve m --max-model-len 131072 --gpu-memory-utilization=0.90")
        );
        let f = Fix::flag("--enforce-eager", "", "x");
        assert_eq!(apply(&c, &f).unwrap().last().unwrap(), "--enforce-eager");
        let c = cmd("llama-server -m x.gguf --ctx-size 65536");
        assert_eq!(
            apply(&c, &Fix::flag("-c", 8192, "x")).unwrap(),
            cmd("llama-server -m x.gguf --ctx-size 8192")
        );
        let e = apply(
            &c,
            &Fix::flag("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", "x"),
        )
        .unwrap();
        assert_eq!(e[0], "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
        assert!(apply(&c, &Fix::action("free memory")).is_none());
        assert!(apply(&c, &Fix::flag("num_ctx", 4096, "x")).is_none());
    }
}
