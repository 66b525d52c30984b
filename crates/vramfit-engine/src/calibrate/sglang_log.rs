//! SGLang startup logs (`python -m sglang.launch_server`; model_runner.py, scheduler.py):
//! `server_args=ServerArgs(model_path=..., mem_fraction_static=..., tp_size=..., ...)`,
//! `Load weight begin. avail mem=F GB`, `Load weight end. ..., avail mem=A GB, mem usage=W GB.`
//! (per TP rank; GB are GiB: SGLang's `get_available_gpu_memory` divides by 2^30; releases
//! before ~v0.4.3 print no 'mem usage', which is then F − A), `KV Cache is allocated. #tokens: T, K size: k GB,
//! V size: v GB`, `max_total_num_tokens=T, chunked_prefill_size=..., context_len=...`.

use super::scan::{kw_value, number_after, size_after, strip_ansi};
use super::{Calibration, LogSettings, Measured, Outcome, Refusal};

const MARKERS: &[&str] = &[
    "server_args=ServerArgs(",
    "sglang version",
    "Load weight begin",
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
    // per rank (the `TPn` tag, else the order of the lines): free before, (free after, usage)
    let mut begins: Vec<(Option<u64>, u64)> = Vec::new();
    let mut loads: Vec<(Option<u64>, u64, Option<u64>)> = Vec::new();
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
        if line.contains("Load weight begin") {
            if let Some(f) = size_after(line, "avail mem=") {
                begins.push((rank_tag(line), f));
            }
        }
        if line.contains("Load weight end") {
            if let Some(a) = size_after(line, "avail mem=") {
                loads.push((rank_tag(line), a, size_after(line, "mem usage=")));
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
    let measured: Vec<(u64, Option<u64>, Option<u64>)> = loads
        .iter()
        .enumerate()
        .map(|(i, &(rank, avail, usage))| {
            let begin = match rank {
                Some(_) => begins.iter().find(|b| b.0 == rank).map(|b| b.1),
                None => begins.get(i).map(|b| b.1),
            };
            (
                avail,
                usage.or(begin.map(|f| f.saturating_sub(avail))),
                begin,
            )
        })
        .collect();
    if let Some(&(avail, usage, begin)) = measured.iter().min_by_key(|l| l.0) {
        m.avail_after_load_bytes = Some(avail);
        m.weights_bytes = usage;
        m.free_at_start_bytes = begin;
        if usage.is_none() {
            warnings.push("'Load weight end' without 'mem usage' and no 'Load weight begin' line: weights stay predicted".into());
        }
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

/// The `TPn` rank tag SGLang puts in its log prefix (`[2025-03-08 12:29:21 TP1]`).
fn rank_tag(line: &str) -> Option<u64> {
    let i = line.find(" TP")?;
    let digits: String = line[i + 3..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SGLang's docs notebook of 2025-01-23 (v0.4.1 line): no 'mem usage' yet, so the weights
    /// are what loading took from the free memory.
    #[test]
    fn weights_from_the_begin_and_end_lines() {
        let log = "[2025-01-23 17:26:06 TP0] Load weight begin. avail mem=78.81 GB\n\
[2025-01-23 17:26:09 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.72 GB\n\
[2025-01-23 17:26:09 TP0] Memory pool end. avail mem=8.34 GB\n\
[2025-01-23 17:26:10 TP0] max_total_num_tokens=444500, max_prefill_tokens=16384, max_running_requests=2049, context_len=131072\n";
        let c = read(log, "docs.log").unwrap();
        let gib = |b: Option<u64>| b.unwrap() as f64 / (1u64 << 30) as f64;
        assert!((gib(c.measured.weights_bytes) - 15.09).abs() < 0.005);
        assert!((gib(c.measured.free_at_start_bytes) - 78.81).abs() < 0.005);
        assert_eq!(c.measured.max_total_num_tokens, Some(444500));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }
}
