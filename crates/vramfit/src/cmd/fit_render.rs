//! The text a person reads from `vramfit fit`: the top plans a few lines each (what it gives,
//! the command, the memory per GPU with the margin it leaves), plans that differ only in the KV
//! cache type folded into one "also:" line, identical GPUs in one row; `--explain` adds each
//! knob's reason. The whole answer stays short (≤ 50 lines for the default top 3).

use std::fmt::Write;
use vramfit_engine::{DevicePlan, Hardware};
use vramfit_model::units::{fmt_bytes, GIB};
use vramfit_plan::solve::FitResult;
use vramfit_plan::Plan;

/// Where the GPUs and their free memory came from, for the notice under the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuSource {
    /// NVML: live free memory
    Nvml,
    /// `--gpu` with `--gpu-free`
    GivenWithFree,
    /// `--gpu` alone: every byte assumed free
    GivenIdle,
}

/// Options of the text report.
pub struct Options {
    pub top: usize,
    pub explain: bool,
    pub source: GpuSource,
    /// host RAM the plans were checked against, and where it came from
    pub ram: Option<(u64, &'static str)>,
}

fn gib(b: u64) -> String {
    format!("{:.1}", b as f64 / GIB as f64)
}

fn kv_name(p: &Plan) -> String {
    p.settings
        .iter()
        .find(|s| {
            s.knob == "-ctk/-ctv"
                || s.knob == "--kv-cache-dtype"
                || s.knob == "OLLAMA_KV_CACHE_TYPE"
        })
        .map(|s| s.value.clone())
        .unwrap_or_else(|| format!("{}-bit", p.kv_bits))
}

/// Plans that differ only in the KV cache type: same engine, weights and split, both on the
/// GPUs or both offloading (an offload plan's KV type moves a few experts or layers; the
/// sibling line gives its context, `--explain` its placement).
fn same_but_kv(a: &Plan, b: &Plan) -> bool {
    a.engine == b.engine
        && a.weight_format == b.weight_format
        && a.split == b.split
        && a.gpu_resident == b.gpu_resident
        && a.argv.first() == b.argv.first()
        && model_word(a) == model_word(b)
}

/// An Ollama plan that runs the same GGUF with the same placement, context and KV type as a
/// llama.cpp plan (Ollama's runner is llama-server): one plan, two ways to launch it.
fn same_under_ollama(a: &Plan, b: &Plan) -> bool {
    a.engine == "llama.cpp"
        && b.engine == "ollama"
        && a.weight_format == b.weight_format
        && a.max_model_len == b.max_model_len
        && a.kv_bits == b.kv_bits
        && a.gpu_resident == b.gpu_resident
}

/// The model the command serves (a variant repo differs from the base).
fn model_word(p: &Plan) -> Option<&String> {
    p.argv
        .iter()
        .position(|w| w == "serve" || w == "--model-path" || w == "-hf" || w == "-m")
        .and_then(|i| p.argv.get(i + 1))
}

/// Group plans: each group is a leading plan and its siblings (KV-cache variants, the same
/// GGUF under Ollama), in rank order.
pub fn fold(plans: &[Plan]) -> Vec<(usize, Vec<usize>)> {
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        let home = groups.iter_mut().find(|(lead, _)| {
            let l = &plans[*lead];
            same_but_kv(l, p) || same_under_ollama(l, p) || same_under_ollama(p, l)
        });
        match home {
            Some((_, sib)) => sib.push(i),
            None => groups.push((i, Vec::new())),
        }
    }
    groups
}

fn ctx_text(n: u64) -> String {
    if n >= 1024 && n.is_multiple_of(1024) {
        format!("{}k", n / 1024)
    } else {
        n.to_string()
    }
}

/// One row per run of identical GPUs with the same use.
fn device_rows(devs: &[DevicePlan]) -> Vec<String> {
    let mut rows = Vec::new();
    let mut i = 0;
    while i < devs.len() {
        let d = &devs[i];
        let mut j = i + 1;
        let close = |a: u64, b: u64| a.abs_diff(b) < 64 * (1 << 20);
        while j < devs.len()
            && devs[j].name == d.name
            && close(devs[j].used_bytes, d.used_bytes)
            && close(devs[j].weights_bytes, d.weights_bytes)
        {
            j += 1;
        }
        let n = j - i;
        let label = if n == 1 {
            format!("GPU {i}")
        } else {
            format!("GPU {i}-{} ({n}x, each)", j - 1)
        };
        let kv = d.kv_cache_bytes.max(0) as u64;
        let other = d.used_bytes.saturating_sub(d.weights_bytes + kv);
        rows.push(format!(
            "{label}: {} of {} GiB (weights {}, KV {}, other {}), leaves {} GiB free",
            gib(d.used_bytes),
            gib(d.free_bytes),
            gib(d.weights_bytes),
            gib(kv),
            gib(other),
            gib(d.free_bytes.saturating_sub(d.used_bytes))
        ));
        i = j;
    }
    rows
}

fn verdict_line(rank: usize, p: &Plan) -> String {
    let place = if p.gpu_resident {
        "all on GPU".to_string()
    } else {
        format!("{} GiB of weights in host RAM", gib(p.host.weights_bytes))
    };
    let conc = if p.concurrency > 1 {
        format!(" × {} requests", p.concurrency)
    } else {
        String::new()
    };
    format!(
        "#{rank} {} · {} ({}) · {} context{conc} · {}{:.0} tok/s · {place} · {}",
        p.engine,
        p.weight_format,
        p.quality.name(),
        ctx_text(p.max_model_len),
        speed_mark(p),
        p.est_tokens_per_s,
        p.split
    )
}

/// "~" for a decode speed modelled on measured figures (llama.cpp, Ollama: docs/speed.md), "≤"
/// for a bandwidth roofline, which real engines stay under (vLLM, SGLang, transformers).
fn speed_mark(p: &Plan) -> &'static str {
    match p.engine.as_str() {
        "llama.cpp" | "ollama" => "~",
        _ => "≤",
    }
}

/// A sibling as one line: "also: q8_0 KV cache gives 2.0× the context (40k)".
fn also_line(lead: &Plan, s: &Plan) -> String {
    if s.engine != lead.engine {
        let name = s
            .settings
            .iter()
            .find(|x| x.knob == "Modelfile")
            .map(|x| x.value.clone())
            .unwrap_or_default();
        let from = name
            .split('\'')
            .find(|w| w.starts_with("FROM "))
            .unwrap_or("the same GGUF")
            .to_string();
        return format!(
            "also: the same under {} ({from}; its command with --explain or --json)",
            s.engine
        );
    }
    let gain_ctx = s.max_model_len as f64 / lead.max_model_len.max(1) as f64;
    let gain_conc = s.max_concurrency as f64 / lead.max_concurrency.max(1) as f64;
    let what = if gain_ctx > 1.01 {
        format!(
            "{:.1}× the context ({})",
            gain_ctx,
            ctx_text(s.max_model_len)
        )
    } else if gain_conc > 1.01 {
        format!(
            "{:.1}× the requests at once ({})",
            gain_conc, s.max_concurrency
        )
    } else if s.quality_kld < lead.quality_kld {
        return format!(
            "also: {} KV cache, a smaller quality loss, at {} context",
            kv_name(s),
            ctx_text(s.max_model_len)
        );
    } else {
        format!("{} context", ctx_text(s.max_model_len))
    };
    format!("also: {} KV cache gives {what}", kv_name(s))
}

/// The human report.
pub fn report(res: &FitResult, hw: &Hardware, o: &Options) -> String {
    let mut out = String::new();
    let groups = fold(&res.plans);
    let _ = writeln!(out, "{} on {}", res.model, gpu_summary(hw));
    match o.source {
        GpuSource::GivenIdle => {
            if let Some(line) = super::idle_assumption(hw) {
                let _ = writeln!(out, "{line}");
            }
        }
        GpuSource::Nvml => {
            let _ = writeln!(out, "free memory: NVML's live reading");
        }
        GpuSource::GivenWithFree => {}
    }
    if let Some((ram, from)) = o.ram {
        let _ = writeln!(out, "host RAM: {} ({from})", fmt_bytes(ram));
    }
    let _ = writeln!(
        out,
        "{} plan(s) fit, {} after folding KV-cache and Ollama variants; the best {}:",
        res.plans.len(),
        groups.len(),
        o.top.min(groups.len())
    );
    for (rank, (lead, sibs)) in groups.iter().take(o.top).enumerate() {
        let p = &res.plans[*lead];
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", verdict_line(rank + 1, p));
        if let Some(mf) = p.settings.iter().find(|s| s.knob == "Modelfile") {
            let _ = writeln!(out, "  {}", mf.value);
        }
        let _ = writeln!(out, "  {}", p.command);
        for row in device_rows(&p.devices) {
            let _ = writeln!(out, "  {row}");
        }
        if !p.gpu_resident && p.host.weights_bytes > 0 {
            let _ = writeln!(
                out,
                "  offload: {} of weights read from host memory every token; expect about {:.0} tok/s at best",
                fmt_bytes(p.host.weights_bytes),
                p.est_tokens_per_s
            );
        }
        if p.max_context > p.max_model_len || p.max_concurrency > p.concurrency {
            let _ = writeln!(
                out,
                "  room: up to {} context, or {} request{} of {} at once",
                ctx_text(p.max_context),
                p.max_concurrency,
                if p.max_concurrency == 1 { "" } else { "s" },
                ctx_text(p.max_model_len)
            );
        }
        // the best sibling of each kind: another KV type, the other engine
        let mut shown: Vec<&str> = Vec::new();
        for s in sibs {
            let sp = &res.plans[*s];
            let kind = if sp.engine == p.engine {
                "kv"
            } else {
                "engine"
            };
            if shown.contains(&kind) {
                continue;
            }
            shown.push(kind);
            let _ = writeln!(out, "  {}", also_line(p, sp));
        }
        if o.explain {
            for s in &p.settings {
                let _ = writeln!(out, "    {} {}: {}", s.knob, s.value, s.why);
            }
            let _ = writeln!(out, "    check: {}", p.check);
            for s in sibs
                .iter()
                .filter(|s| res.plans[**s].engine != p.engine)
                .take(1)
            {
                let _ = writeln!(
                    out,
                    "    {}: {}",
                    res.plans[*s].engine, res.plans[*s].command
                );
            }
        }
    }
    if groups.len() > o.top {
        let _ = writeln!(
            out,
            "\n({} more with --top {}, every knob's reason with --explain, all in --json)",
            groups.len() - o.top,
            groups.len()
        );
    } else if !o.explain {
        let _ = writeln!(out, "\n(every knob's reason with --explain)");
    }
    for n in &res.notes {
        let _ = writeln!(out, "note: {n}");
    }
    if res
        .plans
        .iter()
        .any(|p| p.engine == "llama.cpp" || p.engine == "ollama")
    {
        // the margin policy shared with check (vramfit_engine::margin): `--fit off` drops
        // llama.cpp's own margin, so the plan keeps at least that much itself
        let _ = writeln!(
            out,
            "margin: llama.cpp/Ollama plans keep at least llama.cpp's own --fit-target ({} per GPU) free, as `check` does; their --fit off only stops llama.cpp re-placing what was planned",
            vramfit_model::units::fmt_bytes(vramfit_engine::margin::LLAMACPP_FIT_TARGET_BYTES)
        );
    }
    let _ = writeln!(
        out,
        "speed: ~ llama.cpp/Ollama decode modelled on published figures (docs/speed.md), ≤ a bandwidth bound that vLLM/SGLang/transformers stay under; quality: measured KL divergence of the format (lossless < near-lossless < good < fair < poor)"
    );
    out
}

/// "1x NVIDIA GeForce RTX 4090 (24.0 GiB free)", "4x NVIDIA A100 80GB (79.3 GiB free each)".
fn gpu_summary(hw: &Hardware) -> String {
    let mut parts: Vec<(String, u64, usize)> = Vec::new();
    for g in &hw.gpus {
        match parts.last_mut() {
            Some((n, f, c)) if *n == g.name && *f == g.free_bytes => *c += 1,
            _ => parts.push((g.name.clone(), g.free_bytes, 1)),
        }
    }
    parts
        .iter()
        .map(|(n, f, c)| {
            let each = if *c > 1 { " each" } else { "" };
            format!("{c}x {n} ({} GiB free{each})", gib(*f))
        })
        .collect::<Vec<_>>()
        .join(" + ")
}
