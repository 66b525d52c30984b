//! llama.cpp (llama-server / llama-cli) startup logs: `build: 5274 (...)`, `Device 0: NAME,
//! compute capability 8.9`, `loaded meta data ... from PATH`, `load_tensors: CUDA0 model buffer
//! size = X MiB`, `llama_kv_cache...: CUDA0 KV buffer size = X MiB`, `CUDA0 compute buffer size =
//! X MiB`, `n_ctx = N`, `n_ubatch = N`, `n_seq_max = N`.

use super::scan::{number_after, size_after, strip_ansi};
use super::{Calibration, LogSettings, Measured, Outcome, Refusal};

/// The device index of `CUDA1 model buffer size` (None: not a GPU buffer).
fn cuda_index(line: &str, what: &str) -> Option<usize> {
    let at = line.find(what)?;
    let head = line[..at].trim_end();
    let word = head
        .rsplit(|c: char| c.is_whitespace() || c == ':')
        .next()?;
    ["CUDA", "ROCm", "Vulkan", "Metal", "SYCL"]
        .iter()
        .find_map(|p| word.strip_prefix(p))
        .and_then(|n| {
            if n.is_empty() {
                Some(0)
            } else {
                n.parse().ok()
            }
        })
}

fn put(
    v: &mut Vec<u64>,
    i: usize,
    x: u64,
    seen: &mut Vec<(usize, &'static str)>,
    kind: &'static str,
) -> bool {
    if v.len() <= i {
        v.resize(i + 1, 0);
    }
    let dup = seen.contains(&(i, kind));
    seen.push((i, kind));
    // KV buffers may be printed per cache (SWA + base); they add up
    if kind == "kv" {
        v[i] += x;
        return false;
    }
    v[i] = x;
    dup
}

/// `n_ctx         = 32768` (aligned with spaces; `n_ctx_per_seq` is another key).
fn setting(line: &str, key: &str) -> Option<u64> {
    let at = line.find(&format!(" {key} "))?;
    let rest = line[at + key.len() + 1..].trim_start();
    rest.strip_prefix('=')
        .and_then(super::scan::leading_number)
        .map(|v| v as u64)
}

const MARKERS: &[&str] = &[
    "build: ",
    "Device 0: ",
    "loaded meta data",
    "buffer size",
    "llama_context:",
    "llama_new_context_with_model:",
    "cudaMalloc failed",
    "failed to allocate",
];

pub fn read(text: &str, source: &str) -> Result<Calibration, Refusal> {
    static ANCHORS: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let anchors = ANCHORS.get_or_init(|| super::scan::anchors(MARKERS));
    let mut s = LogSettings::default();
    let mut m = Measured::default();
    let mut model = None;
    let mut builds = Vec::new();
    let mut gpu_name = None;
    let mut seen = Vec::new();
    let mut dup = false;
    let mut outcome = Outcome::Started;
    for raw in super::scan::matching_lines(text, anchors) {
        let line = strip_ansi(raw);
        let line = line.as_ref();
        if let Some(v) = number_after(line, "build: ") {
            builds.push(format!("b{}", v as u64));
        }
        if let Some(i) = line.find("Device 0: ") {
            gpu_name.get_or_insert_with(|| {
                line[i + 10..]
                    .split(',')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string()
            });
        }
        if line.contains("loaded meta data") {
            if let Some(p) = line.rsplit(" from ").next() {
                let p = p.split(" (version").next().unwrap_or(p).trim();
                model.get_or_insert(p.to_string());
            }
        }
        if let (Some(i), Some(b)) = (
            cuda_index(line, "model buffer size"),
            size_after(line, "model buffer size ="),
        ) {
            dup |= put(&mut m.device_model_bytes, i, b, &mut seen, "model");
        }
        if let (Some(i), Some(b)) = (
            cuda_index(line, "KV buffer size"),
            size_after(line, "KV buffer size ="),
        ) {
            put(&mut m.device_kv_bytes, i, b, &mut seen, "kv");
        }
        if let (Some(i), Some(b)) = (
            cuda_index(line, "compute buffer size"),
            size_after(line, "compute buffer size ="),
        ) {
            dup |= put(&mut m.device_compute_bytes, i, b, &mut seen, "compute");
        }
        if line.starts_with("llama_context:") || line.starts_with("llama_new_context_with_model:") {
            if let Some(v) = setting(line, "n_ctx") {
                s.n_ctx = Some(v);
            }
            if let Some(v) = setting(line, "n_ubatch") {
                s.n_ubatch = Some(v);
            }
            if let Some(v) = setting(line, "n_seq_max") {
                s.n_seq_max = Some(v);
            }
        }
        if line.contains("cudaMalloc failed: out of memory") || line.contains("failed to allocate")
        {
            outcome = Outcome::OutOfMemory;
        }
    }
    builds.sort();
    builds.dedup();
    if builds.len() > 1 {
        return Err(Refusal(format!(
            "{source}: the log holds runs of different llama.cpp builds ({}): give one run's log",
            builds.join(", ")
        )));
    }
    if dup {
        return Err(Refusal(format!(
            "{source}: a device's model or compute buffer is printed twice: the log mixes runs (or a model reload); give one run's log"
        )));
    }
    if m.device_compute_bytes.is_empty() && outcome == Outcome::Started {
        return Err(Refusal(format!(
            "{source}: the log ends before llama.cpp reserved its compute buffers (no 'compute buffer size' line): give the log up to 'server is listening' or the error"
        )));
    }
    m.weights_bytes = m.device_model_bytes.first().copied();
    let model = model.unwrap_or_default();
    Ok(Calibration {
        engine: "llama.cpp".into(),
        model,
        engine_version: builds.first().cloned(),
        gpu_name,
        gpu_total_bytes: None,
        source: source.to_string(),
        settings: s,
        measured: m,
        outcome,
        warnings: Vec::new(),
    })
}
