//! What a llama.cpp startup log says it allocated: the model, KV, output and compute buffers
//! (llama-model.cpp load_tensors, llama-kv-cache.cpp, llama-context.cpp; printed in MiB with two
//! decimals), the context it settled on, and whether the server came up.

use serde::Serialize;

const MIB: f64 = 1048576.0;

/// Buffer sizes in bytes, summed over devices and buffer types (read back from MiB with two
/// decimals: ±5 KiB per line).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Buffers {
    pub model_bytes: u64,
    pub kv_bytes: u64,
    pub output_bytes: u64,
    pub compute_bytes: u64,
    /// compute buffers per buffer type, in the order printed (`CPU`, `CUDA0`, `CUDA_Host`)
    pub compute_by_device: Vec<(String, u64)>,
    /// model + KV + output + compute per buffer type, in the order first printed
    /// (`CPU_Mapped`, `CUDA0`, `CUDA1`, `CUDA_Host`)
    pub by_device: Vec<(String, u64)>,
    pub n_ctx: Option<u64>,
    /// `build: 11312 (0c1e5709)` or `version: ...`
    pub build: Option<String>,
}

impl Buffers {
    /// Everything the engine allocated through its buffers.
    pub fn total(&self) -> u64 {
        self.model_bytes + self.kv_bytes + self.output_bytes + self.compute_bytes
    }

    /// What GPU `i` holds: the buffers of a device named with that index (`CUDA1`, `ROCm1`,
    /// `Vulkan1`, `SYCL1`; Apple's single `Metal`/`MTL0` is 0), host buffer types left out.
    pub fn on_gpu(&self, i: usize) -> u64 {
        self.by_device
            .iter()
            .filter(|(d, _)| gpu_index(d) == Some(i))
            .map(|(_, v)| v)
            .sum()
    }

    /// True once the compute buffers are reserved: the context exists.
    pub fn complete(&self) -> bool {
        !self.compute_by_device.is_empty()
    }
}

/// The GPU index in a llama.cpp buffer-type name; None for host types (`CPU`, `CUDA_Host`).
fn gpu_index(dev: &str) -> Option<usize> {
    if dev.contains("Host") || dev.starts_with("CPU") {
        return None;
    }
    if dev == "Metal" {
        return Some(0);
    }
    let digits: String = dev
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

fn add(by: &mut Vec<(String, u64)>, dev: &str, v: u64) {
    match by.iter_mut().find(|(d, _)| d == dev) {
        Some(e) => e.1 += v,
        None => by.push((dev.to_string(), v)),
    }
}

fn mib_after(line: &str, key: &str) -> Option<(String, u64)> {
    let i = line.find(key)?;
    let head = line[..i].trim_end();
    let dev = head.rsplit([' ', ':']).next().unwrap_or("").to_string();
    let rest = line[i + key.len()..].trim_start();
    let rest = rest.strip_prefix('=')?.trim_start();
    let num: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let v: f64 = num.parse().ok()?;
    if !rest[num.len()..].trim_start().starts_with("MiB") {
        return None;
    }
    Some((dev, (v * MIB).round() as u64))
}

/// Read the buffers from a llama.cpp log (any of llama-server, llama-cli; one launch).
pub fn read(log: &str) -> Buffers {
    let mut b = Buffers::default();
    for line in log.lines() {
        if let Some((dev, v)) = mib_after(line, "model buffer size") {
            b.model_bytes += v;
            add(&mut b.by_device, &dev, v);
        } else if let Some((dev, v)) = mib_after(line, "KV buffer size") {
            b.kv_bytes += v;
            add(&mut b.by_device, &dev, v);
        } else if let Some((dev, v)) = mib_after(line, "output buffer size") {
            b.output_bytes += v;
            add(&mut b.by_device, &dev, v);
        } else if let Some((dev, v)) = mib_after(line, "RS buffer size") {
            b.kv_bytes += v;
            add(&mut b.by_device, &dev, v);
        } else if let Some((dev, v)) = mib_after(line, "compute buffer size") {
            b.compute_bytes += v;
            add(&mut b.by_device, &dev, v);
            b.compute_by_device.push((dev, v));
        } else if let Some(i) = line.find("n_ctx ") {
            // `llama_context: n_ctx         = 4096`
            if line[..i].trim_end().ends_with(':') {
                let v = line[i + 5..].trim_start().trim_start_matches('=').trim();
                if let Ok(n) = v.parse() {
                    b.n_ctx = Some(n);
                }
            }
        } else if b.build.is_none() {
            // `build: 11312 (0c1e5709) with cc` (older), `common_params_print_info: build 1
            // (0c1e570) with GNU` (recent; a checkout without history prints build 1, and only
            // the commit in parentheses names it)
            for key in ["build: ", "build "] {
                if let Some(i) = line.find(key) {
                    let v = line[i + key.len()..].trim();
                    if v.starts_with(|c: char| c.is_ascii_digit()) {
                        b.build = Some(v.to_string());
                        break;
                    }
                }
            }
        }
    }
    b
}

/// The server answers requests (llama-server prints this once the model is loaded).
pub fn server_ready(log: &str) -> bool {
    // `server is listening on http://...` (older builds), `llama_server: listening on http://...`
    log.contains("listening on http") || log.contains("all slots are idle")
}

/// A failure the startup log names (allocation, or a refused setting), first such line.
pub fn failure(log: &str) -> Option<String> {
    const KEYS: [&str; 6] = [
        "failed to allocate",
        "out of memory",
        "failed to create context",
        "failed to load model",
        "error loading model",
        "exiting due to model loading error",
    ];
    log.lines()
        .find(|l| {
            let l = l.to_ascii_lowercase();
            KEYS.iter().any(|k| l.contains(k))
        })
        .map(|l| l.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cpu_buffers() {
        let log = "build: 11312 (0c1e5709) with cc\n\
load_tensors:   CPU_Mapped model buffer size =    37.62 MiB\n\
llama_context: n_ctx         = 4096\n\
llama_context:        CPU  output buffer size =     0.49 MiB\n\
llama_kv_cache:        CPU KV buffer size =    16.00 MiB\n\
llama_kv_cache:        CPU KV buffer size =     2.00 MiB\n\
sched_reserve:        CPU compute buffer size =   294.01 MiB\n";
        let b = read(log);
        assert_eq!(b.kv_bytes, 18 << 20);
        assert_eq!(b.n_ctx, Some(4096));
        assert_eq!(b.compute_by_device[0].0, "CPU");
        assert_eq!(b.compute_bytes, (294.01 * MIB).round() as u64);
        assert_eq!(b.build.as_deref(), Some("11312 (0c1e5709) with cc"));
        assert!(b.complete());
        assert_eq!(b.on_gpu(0), 0);
        let recent = "0.00.014.674 I cmn  common_param: common_params_print_info: build 1 (0c1e570) with GNU 12.2.0 for Linux x86_64\n";
        assert_eq!(
            read(recent).build.as_deref(),
            Some("1 (0c1e570) with GNU 12.2.0 for Linux x86_64")
        );
        let two = "load_tensors:        CUDA0 model buffer size =   100.00 MiB\n\
load_tensors:        CUDA1 model buffer size =    50.00 MiB\n\
load_tensors:   CPU_Mapped model buffer size =    10.00 MiB\n\
llama_kv_cache:      CUDA1 KV buffer size =     8.00 MiB\n\
sched_reserve:      CUDA0 compute buffer size =    20.00 MiB\n\
sched_reserve:  CUDA_Host compute buffer size =     4.00 MiB\n";
        let b = read(two);
        assert_eq!(b.on_gpu(0), 120 << 20);
        assert_eq!(b.on_gpu(1), 58 << 20);
        assert_eq!(b.total(), 192 << 20);
        assert!(failure(
            "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 1"
        )
        .is_some());
    }
}
