//! vLLM startup logs, every era read (line texts as the releases print them):
//! - V0 (`worker.py`): `total_gpu_memory (X GiB) x gpu_memory_utilization (u)`, `model weights
//!   take W GiB; non_torch_memory takes N GiB; PyTorch activation peak memory takes A GiB; the
//!   rest of the memory reserved for KV Cache is K GiB`, `# GPU blocks: N` / `# cuda blocks: N`;
//! - V1 (`gpu_model_runner.py`, `gpu_worker.py`, `kv_cache_utils.py`): `Model loading took W GiB`,
//!   `Available KV cache memory: K GiB`, `GPU KV cache size: T tokens`, `Maximum concurrency for
//!   L tokens per request: Cx`, and from v0.10 the `Free memory on device (f/t GiB) on startup.
//!   Desired GPU memory utilization is (u, r GiB). Actual usage is ...` summary (weight / peak
//!   activation / non-torch / CUDAGraph before v0.27; consumed / peak activation / CUDAGraph after);
//! - v0.21+ (PR #30515): `Estimated CUDA graph memory: G GiB total` and `CUDA graph memory
//!   profiling is enabled` (or `... is disabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0)`).

use super::scan::{dict_value, kw_value, number_after, size_after, strip_ansi};
use super::{Calibration, LogSettings, Measured, Outcome, Refusal};
use std::collections::BTreeMap;

/// One worker's measured lines.
#[derive(Debug, Default, Clone)]
struct Worker {
    weights: Option<u64>,
    available: Option<i64>,
    total: Option<u64>,
    free: Option<u64>,
    requested: Option<u64>,
    activation: Option<u64>,
    non_torch: Option<u64>,
    consumed: Option<u64>,
    graph: Option<u64>,
    graph_estimate: Option<u64>,
}

const LEVELS: [&str; 5] = [" INFO ", " WARNING ", " DEBUG ", " ERROR ", " WARN "];

/// The worker a line belongs to: the last `(role pid=N)` tag before the log level.
fn worker_key(line: &str) -> String {
    let head_end = LEVELS
        .iter()
        .filter_map(|l| line.find(l))
        .min()
        .unwrap_or(line.len().min(160));
    let head = &line[..head_end];
    let mut key = String::new();
    let mut rest = head;
    while let Some(open) = rest.find('(') {
        let Some(close) = rest[open..].find(')') else {
            break;
        };
        let inner = &rest[open + 1..open + close];
        if inner.contains("pid=") {
            key = inner.trim().to_string();
        }
        rest = &rest[open + close + 1..];
    }
    key
}

fn gib(x: f64) -> u64 {
    (x * (1u64 << 30) as f64).round().max(0.0) as u64
}

fn signed_size(line: &str, marker: &str) -> Option<i64> {
    let v = number_after(line, marker)?;
    Some((v * (1u64 << 30) as f64).round() as i64)
}

/// Every marker the reader acts on (a line without one is skipped unread).
const MARKERS: &[&str] = &[
    "vLLM API server version",
    "LLM engine (v",
    "non-default args:",
    "Chunked prefill is enabled",
    "Using max model len",
    "GPU 0: ",
    "Model loading took",
    "Loading model weights took",
    "model weights take",
    "total_gpu_memory (",
    "non_torch_memory takes",
    "Available KV cache memory:",
    "Free memory on device (",
    "Estimated CUDA graph memory:",
    "CUDA graph memory profiling is",
    "Graph capturing finished",
    "as specified by kv_cache_memory_bytes",
    "# GPU blocks:",
    "# cuda blocks:",
    "num_gpu_blocks is:",
    "GPU KV cache size:",
    "Maximum concurrency for ",
    "No available memory for the cache blocks",
    "KV cache is needed",
    "maximum number of tokens that can be stored",
    "CUDA out of memory",
    "OutOfMemoryError",
    "█",
];

pub fn read(text: &str, source: &str) -> Result<Calibration, Refusal> {
    static ANCHORS: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let anchors = ANCHORS.get_or_init(|| super::scan::anchors(MARKERS));
    let mut versions: Vec<String> = Vec::new();
    let mut api_pids: Vec<String> = Vec::new();
    let mut engine_inits: Vec<String> = Vec::new();
    let mut workers: BTreeMap<String, Worker> = BTreeMap::new();
    let mut s = LogSettings::default();
    let mut m = Measured::default();
    let mut model: Option<String> = None;
    let mut served: Option<String> = None;
    let mut outcome = Outcome::Started;
    let mut warnings = Vec::new();
    let mut conflicts = Vec::new();
    let mut gpu_name: Option<String> = None;
    let mut equiv_total: Option<u64> = None;
    let mut concurrency_len: Option<u64> = None;
    let mut pool_conflicts: Vec<String> = Vec::new();

    for raw in super::scan::matching_lines(text, anchors) {
        let line = strip_ansi(raw);
        let line = line.as_ref();
        let key = worker_key(line);
        let w = |workers: &mut BTreeMap<String, Worker>| {
            workers.entry(key.clone()).or_default().clone()
        };
        let mut set = |workers: &mut BTreeMap<String, Worker>,
                       f: &dyn Fn(&mut Worker) -> Option<String>| {
            let e = workers.entry(key.clone()).or_default();
            if let Some(c) = f(e) {
                conflicts.push(c);
            }
        };
        // --- identity
        if let Some(i) = line.find("vLLM API server version") {
            let v = line[i + 23..]
                .trim()
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string();
            versions.push(v);
            if let Some(pid) = key.rsplit("pid=").next().filter(|_| key.contains("pid=")) {
                api_pids.push(pid.to_string());
            } else {
                api_pids.push(format!("line{}", api_pids.len()));
            }
        } else if line.contains('█') && line.contains(" version ") {
            if let Some(v) = line.split(" version ").nth(1) {
                versions.push(v.split_whitespace().next().unwrap_or("").to_string());
            }
        }
        if let Some(i) = line.find("LLM engine (v") {
            let v: String = line[i + 13..].chars().take_while(|c| *c != ')').collect();
            versions.push(v);
            // the config after "with config:" identifies the run
            engine_inits.push(
                line.split("with config:")
                    .nth(1)
                    .unwrap_or("")
                    .trim()
                    .to_string(),
            );
            if let Some(v) = kw_value(line, "model") {
                model.get_or_insert(v.to_string());
            }
            if let Some(v) = kw_value(line, "max_seq_len").and_then(|v| v.parse().ok()) {
                s.max_model_len.get_or_insert(v);
            }
            if let Some(v) = kw_value(line, "tensor_parallel_size").and_then(|v| v.parse().ok()) {
                s.tensor_parallel_size = Some(v);
            }
            if let Some(v) = kw_value(line, "pipeline_parallel_size").and_then(|v| v.parse().ok()) {
                s.pipeline_parallel_size = Some(v);
            }
            if let Some(v) = kw_value(line, "quantization").filter(|v| *v != "None") {
                s.quantization = Some(v.to_string());
            }
            if let Some(v) = kw_value(line, "enforce_eager") {
                s.enforce_eager = Some(v == "True");
            }
            if let Some(v) = kw_value(line, "kv_cache_dtype") {
                s.kv_cache_dtype = Some(v.to_string());
            }
            if let Some(v) = kw_value(line, "served_model_name") {
                served.get_or_insert(v.to_string());
            }
        }
        if line.contains("non-default args:") {
            if let Some(v) = dict_value(line, "model").or_else(|| dict_value(line, "model_tag")) {
                model = Some(v.to_string());
            }
            if let Some(v) = dict_value(line, "served_model_name") {
                served = Some(v.to_string());
            }
            let num = |k: &str| dict_value(line, k).and_then(|v| v.parse::<f64>().ok());
            if let Some(v) = num("gpu_memory_utilization") {
                s.gpu_memory_utilization = Some(v);
            }
            if let Some(v) = num("max_model_len").filter(|v| *v > 0.0) {
                s.max_model_len = Some(v as u64);
            }
            if let Some(v) = num("max_num_seqs") {
                s.max_num_seqs = Some(v as u64);
            }
            if let Some(v) = num("max_num_batched_tokens") {
                s.max_num_batched_tokens = Some(v as u64);
            }
            if let Some(v) = num("tensor_parallel_size") {
                s.tensor_parallel_size = Some(v as u64);
            }
            if let Some(v) = num("pipeline_parallel_size") {
                s.pipeline_parallel_size = Some(v as u64);
            }
            if let Some(v) = num("block_size") {
                s.block_size = Some(v as u64);
            }
            if let Some(v) = dict_value(line, "kv_cache_dtype") {
                s.kv_cache_dtype = Some(v.to_string());
            }
            if let Some(v) = dict_value(line, "quantization") {
                s.quantization = Some(v.to_string());
            }
            if dict_value(line, "enforce_eager") == Some("True") {
                s.enforce_eager = Some(true);
            }
            if dict_value(line, "kv_cache_memory_bytes").is_some() {
                s.kv_cache_memory_given = true;
            }
        }
        if let Some(v) = number_after(
            line,
            "Chunked prefill is enabled with max_num_batched_tokens=",
        ) {
            s.max_num_batched_tokens = Some(v as u64);
        }
        if let Some(v) = number_after(line, "Using max model len ") {
            s.max_model_len = Some(v as u64);
        }
        if let Some(i) = line.find("GPU 0: ") {
            let n = line[i + 7..].trim();
            if n.starts_with("NVIDIA") || n.starts_with("Tesla") || n.starts_with("AMD") {
                gpu_name.get_or_insert(n.split(" (UUID").next().unwrap_or(n).trim().to_string());
            }
        }
        // --- weights
        for marker in [
            "Model loading took",
            "Loading model weights took",
            "model weights take",
        ] {
            if let Some(b) = size_after(line, marker) {
                set(&mut workers, &|e: &mut Worker| {
                    let old = e.weights.replace(b);
                    old.filter(|o| o.abs_diff(b) > (1 << 24)).map(|o| {
                        format!(
                            "weights {:.2} and {:.2} GiB",
                            o as f64 / 1073741824.0,
                            b as f64 / 1073741824.0
                        )
                    })
                });
            }
        }
        // --- V0 breakdown
        if let Some(t) = size_after(line, "total_gpu_memory (") {
            set(&mut workers, &|e: &mut Worker| {
                e.total = Some(t);
                None
            });
            if let Some(u) = number_after(line, "gpu_memory_utilization (") {
                s.gpu_memory_utilization = Some(u);
            }
            if let Some(r) = size_after(line, ") = ") {
                set(&mut workers, &|e: &mut Worker| {
                    e.requested = Some(r);
                    None
                });
            }
        }
        if line.contains("non_torch_memory takes") {
            let n = size_after(line, "non_torch_memory takes");
            let a = size_after(line, "activation peak memory takes");
            let k = signed_size(line, "reserved for KV Cache is");
            set(&mut workers, &|e: &mut Worker| {
                e.non_torch = n.or(e.non_torch);
                e.activation = a.or(e.activation);
                let old = e.available;
                e.available = k.or(e.available);
                old.zip(k)
                    .filter(|(o, k)| o.abs_diff(*k) > (1 << 24))
                    .map(|(o, k)| format!("KV pool {o} and {k} bytes"))
            });
        }
        // --- V1 pool
        if let Some(k) = signed_size(line, "Available KV cache memory:") {
            set(&mut workers, &|e: &mut Worker| {
                let old = e.available.replace(k);
                old.filter(|o| o.abs_diff(k) > (1 << 24)).map(|o| {
                    format!(
                        "'Available KV cache memory' {:.2} and {:.2} GiB",
                        o as f64 / 1073741824.0,
                        k as f64 / 1073741824.0
                    )
                })
            });
        }
        if line.contains("Free memory on device (") {
            let f = number_after(line, "Free memory on device (");
            let t = line
                .split("Free memory on device (")
                .nth(1)
                .and_then(|r| r.split('/').nth(1))
                .and_then(super::scan::leading_number);
            let util = number_after(line, "utilization is (");
            let req = line
                .split("utilization is (")
                .nth(1)
                .and_then(|r| r.split(',').nth(1))
                .and_then(super::scan::leading_number);
            let weights =
                size_after(line, "Actual usage is").filter(|_| line.contains("for weight"));
            let consumed = size_after(line, "Actual usage is")
                .filter(|_| line.contains("for consumed memory"));
            let act = line
                .split("GiB for peak activation")
                .next()
                .and_then(|h| h.rsplit(", ").next())
                .and_then(super::scan::leading_number);
            let nt = line
                .split("GiB for non-torch memory")
                .next()
                .filter(|_| line.contains("for non-torch memory"))
                .and_then(|h| h.rsplit(", ").next())
                .and_then(super::scan::leading_number);
            let graph = line
                .split("GiB for CUDAGraph memory")
                .next()
                .filter(|_| line.contains("for CUDAGraph memory"))
                .and_then(|h| h.rsplit("and ").next())
                .and_then(super::scan::leading_number);
            let in_use = signed_size(line, "kv cache memory in use is");
            if let Some(u) = util {
                s.gpu_memory_utilization = Some(u);
            }
            set(&mut workers, &|e: &mut Worker| {
                e.free = f.map(gib).or(e.free);
                e.total = t.map(gib).or(e.total);
                e.requested = req.map(gib).or(e.requested);
                e.weights = e.weights.or(weights);
                e.consumed = consumed.or(e.consumed);
                e.activation = act.map(gib).or(e.activation);
                e.non_torch = nt.map(gib).or(e.non_torch);
                e.graph = graph.map(gib).or(e.graph);
                e.available = e.available.or(in_use);
                None
            });
        }
        if let Some(g) = size_after(line, "Estimated CUDA graph memory:") {
            set(&mut workers, &|e: &mut Worker| {
                e.graph_estimate = Some(g);
                None
            });
        }
        if line.contains("CUDA graph memory profiling is enabled") {
            s.cuda_graphs_charged = Some(true);
            // "... --gpu-memory-utilization=0.9200 is equivalent to --gpu-memory-utilization=0.9024"
            let u = number_after(line, "current --gpu-memory-utilization=");
            let e = number_after(line, "equivalent to --gpu-memory-utilization=");
            if let (Some(u), Some(e)) = (u, e) {
                s.gpu_memory_utilization = Some(u);
                if let Some(g) = w(&mut workers).graph_estimate.filter(|_| u > e + 1e-4) {
                    equiv_total = Some((g as f64 / (u - e)) as u64);
                }
            }
        }
        if line.contains("CUDA graph memory profiling is disabled") {
            s.cuda_graphs_charged = Some(false);
        }
        if line.contains("Graph capturing finished") {
            if let Some(g) = size_after(line, "took") {
                set(&mut workers, &|e: &mut Worker| {
                    e.graph = Some(g);
                    None
                });
            }
        }
        if let Some(i) = line
            .find("reserved ")
            .filter(|_| line.contains("as specified by kv_cache_memory_bytes"))
        {
            s.kv_cache_memory_given = true;
            if let Some(k) = size_after(&line[i..], "reserved ") {
                set(&mut workers, &|e: &mut Worker| {
                    e.available = Some(k as i64);
                    None
                });
            }
        }
        // --- blocks, tokens, concurrency
        // one run prints one pool (data-parallel engines print the same one): two values are
        // two runs
        let mut once = |slot: &mut Option<u64>, v: u64, what: &str| {
            if let Some(old) = slot.replace(v) {
                if old != v {
                    pool_conflicts.push(format!("{what} {old} and {v}"));
                }
            }
        };
        for marker in ["# GPU blocks:", "# cuda blocks:", "num_gpu_blocks is:"] {
            if let Some(v) = number_after(line, marker) {
                once(&mut m.num_gpu_blocks, v as u64, "GPU blocks");
            }
        }
        if let Some(v) = number_after(line, "GPU KV cache size:") {
            once(&mut m.kv_tokens, v as u64, "'GPU KV cache size'");
        }
        if let Some(i) = line.find("Maximum concurrency for ") {
            let rest = &line[i + 24..];
            if let Some(len) = super::scan::leading_number(rest) {
                once(&mut concurrency_len, len as u64, "concurrency lengths");
            }
            if let Some(c) = number_after(rest, "per request:") {
                m.max_concurrency = Some(c);
            }
        }
        // --- failures
        if line.contains("No available memory for the cache blocks") {
            outcome = Outcome::NoKvMemory;
        }
        if line.contains("KV cache is needed, which is larger than the available KV cache memory")
            || line.contains(
                "is larger than the maximum number of tokens that can be stored in KV cache",
            )
        {
            outcome = Outcome::InsufficientKv;
            if let Some(v) = number_after(line, "estimated maximum model length is ") {
                m.estimated_max_model_len = Some(v as u64);
            }
            if let Some(k) = signed_size(line, "available KV cache memory (") {
                set(&mut workers, &|e: &mut Worker| {
                    e.available = e.available.or(Some(k));
                    None
                });
            }
        }
        if (line.contains("CUDA out of memory") || line.contains("OutOfMemoryError"))
            && outcome == Outcome::Started
        {
            outcome = Outcome::OutOfMemory;
        }
    }

    if let Some(l) = concurrency_len {
        s.max_model_len.get_or_insert(l);
    }
    // --- one run only
    versions.retain(|v| !v.is_empty());
    let mut distinct_versions = versions.clone();
    distinct_versions.sort();
    distinct_versions.dedup();
    if distinct_versions.len() > 1 {
        return Err(Refusal(format!(
            "{source}: the log holds starts of different vLLM releases ({}): give one run's log",
            distinct_versions.join(", ")
        )));
    }
    let mut pids = api_pids.clone();
    pids.sort();
    pids.dedup();
    if pids.len() > 1 {
        return Err(Refusal(format!(
            "{source}: the log holds {} vLLM server starts (API server pids {}): give one start's lines (two servers logging together, or a restart appended)",
            pids.len(),
            pids.join(", ")
        )));
    }
    let mut inits = engine_inits.clone();
    inits.sort();
    inits.dedup();
    if inits.len() > 1 {
        return Err(Refusal(format!(
            "{source}: the log holds {} engine starts with different configurations: give one run's log",
            inits.len()
        )));
    }
    conflicts.extend(pool_conflicts);
    if !conflicts.is_empty() {
        return Err(Refusal(format!(
            "{source}: the log reports two different measurements of one thing ({}): it mixes runs; give one run's log",
            conflicts[0]
        )));
    }

    // --- the binding worker: the smallest pool (vLLM takes the minimum of num_blocks)
    let with_pool: Vec<&Worker> = workers.values().filter(|w| w.available.is_some()).collect();
    let binding = with_pool
        .iter()
        .min_by_key(|w| w.available.unwrap_or(i64::MAX))
        .copied()
        .cloned();
    let any_weights = workers.values().find_map(|w| w.weights);
    let pool_known = binding.is_some() || m.num_gpu_blocks.is_some() || m.kv_tokens.is_some();
    if !pool_known && outcome != Outcome::NoKvMemory {
        return Err(Refusal(format!(
            "{source}: the log ends before vLLM sized the KV cache (no 'Available KV cache memory', 'GPU KV cache size' or '# GPU blocks' line{}): give the log up to 'Maximum concurrency' or the error",
            if outcome == Outcome::OutOfMemory {
                "; it ran out of memory first"
            } else {
                ""
            }
        )));
    }
    let b = binding.unwrap_or_default();
    m.weights_bytes = b.weights.or(any_weights);
    m.available_kv_bytes = b.available;
    m.activation_bytes = b.activation;
    m.non_torch_bytes = b.non_torch;
    m.consumed_bytes = b.consumed;
    m.cuda_graph_bytes = b.graph;
    m.cuda_graph_estimate_bytes = b.graph_estimate;
    m.requested_bytes = b.requested;
    m.free_at_start_bytes = b.free;
    let total = b
        .total
        .or_else(|| workers.values().find_map(|w| w.total))
        .or(equiv_total);
    if m.weights_bytes.is_none() {
        warnings.push("no 'Model loading took' line: the weights stay predicted".into());
    }
    if s.kv_cache_memory_given {
        warnings.push("--kv-cache-memory-bytes set the pool: vLLM did not profile it, so only the weights are measured".into());
    }
    if let (Some(f), Some(t)) = (m.free_at_start_bytes, total) {
        if (f as f64) < 0.9 * t as f64 {
            warnings.push(format!(
                "{:.1} GiB of the GPU were in use by other processes at start: the calibration holds for this vLLM, not for what else ran",
                (t - f) as f64 / 1073741824.0
            ));
        }
    }
    // a log without its start names no model: the caller fills it (--model, the command)
    let model = model.or(served).unwrap_or_default();
    Ok(Calibration {
        engine: "vllm".into(),
        model,
        engine_version: versions.first().cloned(),
        gpu_name,
        gpu_total_bytes: total,
        source: source.to_string(),
        settings: s,
        measured: m,
        outcome,
        warnings,
    })
}
