//! SGLang startup logs (`python -m sglang.launch_server`; model_runner.py, scheduler.py):
//! `server_args=ServerArgs(model_path=..., mem_fraction_static=..., tp_size=..., ...)`,
//! `Load weight end. ..., avail mem=F GB, mem usage=W GB.` (per TP rank; GB are GiB: SGLang's
//! `get_available_gpu_memory` divides by 2^30), `KV Cache is allocated. #tokens: T, K size: k GB,
//! V size: v GB`, `max_total_num_tokens=T, chunked_prefill_size=..., context_len=...`.

use super::scan::{kw_value, number_after, size_after, strip_ansi};
use super::{Calibration, LogSettings, Measured, Outcome, Refusal};

const MARKERS: &[&str] = &[
    "server_args=ServerArgs(",
    "sglang version",
    "Load weight end",
    "KV Cache is allocated",
    "max_total_num_tokens=",
    "total_gpu_memory=",
    "Not enough memory",
    "CUDA out of memory",
    "OutOfMemoryError",
];

pub fn read(text: &str, source: &str) -> Result<Calibration, Refusal> {
    static ANCHORS: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let anchors = ANCHORS.get_or_init(|| super::scan::anchors(MARKERS));
    let mut s = LogSettings::default();
    let mut m = Measured::default();
    let mut model = None;
    let mut server_args = Vec::new();
    let mut loads: Vec<(u64, u64)> = Vec::new();
    let mut totals = Vec::new();
    let mut version = None;
    let mut outcome = Outcome::Started;
    let mut warnings = Vec::new();
    for raw in super::scan::matching_lines(text, anchors) {
        let line = strip_ansi(raw);
        let line = line.as_ref();
        if let Some(i) = line.find("server_args=ServerArgs(") {
            let args = &line[i..];
            server_args.push(args.to_string());
            model = kw_value(args, "model_path").map(str::to_string);
            let f = |k: &str| kw_value(args, k).and_then(|v| v.parse::<f64>().ok());
            s.mem_fraction_static = f("mem_fraction_static");
            s.tensor_parallel_size = f("tp_size").map(|v| v as u64);
            s.pipeline_parallel_size = f("pp_size").map(|v| v as u64);
            s.context_length = f("context_length").map(|v| v as u64);
            s.chunked_prefill_size = f("chunked_prefill_size").map(|v| v as u64);
            s.cuda_graph_max_bs = f("cuda_graph_max_bs").map(|v| v as u64);
            s.max_num_seqs = f("max_running_requests").map(|v| v as u64);
            s.kv_cache_dtype = kw_value(args, "kv_cache_dtype").map(str::to_string);
            s.quantization = kw_value(args, "quantization")
                .filter(|q| *q != "None")
                .map(str::to_string);
        }
        if let Some(i) = line.find("sglang version") {
            version = line[i + 14..]
                .trim_start_matches([':', '=', ' '])
                .split_whitespace()
                .next()
                .map(str::to_string);
        }
        if line.contains("Load weight end") {
            if let (Some(a), Some(u)) = (
                size_after(line, "avail mem="),
                size_after(line, "mem usage="),
            ) {
                loads.push((a, u));
            }
        }
        if let Some(t) = number_after(line, "KV Cache is allocated. #tokens:") {
            m.max_total_num_tokens = Some(t as u64);
            let k = size_after(line, "K size:").unwrap_or(0);
            let v = size_after(line, "V size:").unwrap_or(0);
            if k + v > 0 {
                m.kv_pool_bytes = Some(k + v);
            }
        }
        if let Some(t) = number_after(line, "max_total_num_tokens=") {
            m.max_total_num_tokens = Some(t as u64);
            if let Some(c) = number_after(line, "context_len=") {
                s.context_length = Some(c as u64);
            }
            if let Some(c) = number_after(line, "chunked_prefill_size=") {
                s.chunked_prefill_size = Some(c as u64);
            }
        }
        if let Some(t) = size_after(line, "total_gpu_memory=") {
            totals.push(t);
        }
        if line.contains("Not enough memory. Please try to increase --mem-fraction-static") {
            outcome = Outcome::NoKvMemory;
        }
        if line.contains("CUDA out of memory") || line.contains("OutOfMemoryError") {
            outcome = Outcome::OutOfMemory;
        }
    }
    server_args.sort();
    server_args.dedup();
    if server_args.len() > 1 {
        return Err(Refusal(format!(
            "{source}: the log holds {} SGLang starts with different server_args: give one run's log",
            server_args.len()
        )));
    }
    let tp =
        s.tensor_parallel_size.unwrap_or(1).max(1) * s.pipeline_parallel_size.unwrap_or(1).max(1);
    if loads.len() as u64 > tp {
        return Err(Refusal(format!(
            "{source}: {} 'Load weight end' lines for {tp} rank(s): the log mixes runs; give one run's log",
            loads.len()
        )));
    }
    if m.max_total_num_tokens.is_none() && outcome == Outcome::Started {
        return Err(Refusal(format!(
            "{source}: the log ends before SGLang sized its token pool (no 'KV Cache is allocated' or 'max_total_num_tokens' line): give the log up to the server start"
        )));
    }
    // the rank with the least memory left after loading binds the pool (get_available_gpu_memory
    // with distributed=True takes the minimum)
    if let Some(&(avail, usage)) = loads.iter().min_by_key(|(a, _)| *a) {
        m.avail_after_load_bytes = Some(avail);
        m.weights_bytes = Some(usage);
    } else {
        warnings.push("no 'Load weight end' line: weights and free memory stay predicted".into());
    }
    let model = model.unwrap_or_default();
    Ok(Calibration {
        engine: "sglang".into(),
        model,
        engine_version: version,
        gpu_name: None,
        gpu_total_bytes: totals.first().copied(),
        source: source.to_string(),
        settings: s,
        measured: m,
        outcome,
        warnings,
    })
}
