//! llama.cpp / ggml and Ollama messages.
//!
//! Buffer lines by era (llama.cpp src/llama-model.cpp, src/llama-kv-cache.cpp,
//! src/llama-context.cpp; see research/llamacpp_memory.md §7): `llm_load_tensors: CUDA0 buffer
//! size`, `load_tensors: CUDA0 model buffer size`, `llama_kv_cache[_unified|_init]: CUDA0 KV
//! buffer size`, `KV self size`, `CUDA0 compute buffer size`.

use std::sync::LazyLock;

use regex::Regex;

use super::{BufferKind, LogEvent, Phase};
use crate::size::{mib, parse_log_size, SIZE};

fn re(s: &str) -> Regex {
    Regex::new(&s.replace("SIZE", SIZE)).expect("static regex")
}

// ggml/src/ggml-cuda/ggml-cuda.cu ggml_backend_cuda_buffer_type_alloc_buffer (HIP builds: hipMalloc)
static CUDA_MALLOC: LazyLock<Regex> =
    LazyLock::new(|| re(r"allocating ([\d.]+) MiB on device (\d+): (?:cuda|hip)Malloc failed"));
// ggml/src/ggml-metal: "ggml_backend_metal_buffer_type_alloc_buffer: error: failed to allocate buffer, size = X MiB"
static METAL_ALLOC: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"ggml_backend_metal_buffer_type_alloc_buffer: error: failed to allocate buffer, size =\s*([\d.]+) MiB",
    )
});
// ggml/src/ggml-alloc.c ggml_gallocr_reserve_n / alloc_tensor_range
static GALLOCR: LazyLock<Regex> = LazyLock::new(|| {
    re(r"ggml_gallocr_reserve_n(?:_impl)?: failed to allocate (\S+) buffer of size (\d+)")
});
static TENSOR_RANGE: LazyLock<Regex> =
    LazyLock::new(|| re(r"alloc_tensor_range: failed to allocate (\S+) buffer of size (\d+)"));
// src/llama-model.cpp load_tensors: "unable to allocate CUDA0 buffer"
static UNABLE_BUFFER: LazyLock<Regex> = LazyLock::new(|| re(r"unable to allocate (\S+) buffer"));
// src/llama-kv-cache.cpp / older llama.cpp llama_kv_cache_init
static KV_FAILED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"failed to allocate buffer for kv cache|llama_kv_cache_init\(\) failed|failed to initialize the context: failed to allocate buffer for kv",
    )
});
// src/llama-context.cpp: "failed to allocate compute buffers" / "... compute pp buffers"
// llama.cpp common/common.cpp common_init_from_params ("failed to create context with
// model"), llama-cpp-python ("Failed to create llama_context"), bindings that wrap a null
// llama_init_from_model: the context (KV cache + compute buffers) could not be made; the line
// that says which buffer, when printed, is read on its own and outranks this
static CONTEXT_FAILED: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)failed to create (?:the )?(?:llama_)?context|failed to initialize the context")
});
static COMPUTE_FAILED: LazyLock<Regex> =
    LazyLock::new(|| re(r"failed to allocate compute (?:pp )?buffers"));
// ggml/src/ggml-backend.cpp ggml_backend_cpu_buffer_type_alloc_buffer
static CPU_FAILED: LazyLock<Regex> = LazyLock::new(|| {
    re(r"ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size (\d+)")
});
static MODEL_BUFFER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?:llm_)?load_tensors:\s+(\S+) (?:model )?buffer size\s*=\s*([\d.]+) MiB")
});
static KV_BUFFER: LazyLock<Regex> =
    LazyLock::new(|| re(r"(\S+) KV buffer size\s*=\s*([\d.]+) MiB"));
static KV_SELF: LazyLock<Regex> = LazyLock::new(|| re(r"KV self size\s*=\s*([\d.]+) MiB"));
static COMPUTE_BUFFER: LazyLock<Regex> =
    LazyLock::new(|| re(r"(\S+) compute buffer size\s*=\s*([\d.]+) MiB"));
// ggml-metal: `recommendedMaxWorkingSetSize = X MB` at init, then every buffer allocation prints
// the running total against it: `allocated buffer, size = X MiB, ( used / limit)` (MB in older
// builds, which divide by 1024*1024 as well)
static METAL_LIMIT: LazyLock<Regex> =
    LazyLock::new(|| re(r"recommendedMaxWorkingSetSize\s*=\s*([\d.]+) MB"));
static METAL_TOTAL: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?:allocated buffer|ggml_metal_add_buffer).*\(\s*([\d.]+)\s*/\s*(?:([\d.]+))?")
});
// src/llama.cpp llama_model_load_from_file_impl
static DEVICE_FREE: LazyLock<Regex> =
    LazyLock::new(|| re(r"using device (\S+) \(.*\) - (\d+) MiB free"));
static OFFLOADED: LazyLock<Regex> = LazyLock::new(|| re(r"offloaded (\d+)/(\d+) layers to GPU"));
static PIPELINE: LazyLock<Regex> =
    LazyLock::new(|| re(r"pipeline parallelism enabled \(n_copies=(\d+)\)"));
// ollama llm/server.go (until 9db4bdbad, 2026-05)
static OLLAMA_SYSTEM: LazyLock<Regex> =
    LazyLock::new(|| re(r"model requires more system memory \(SIZE\) than is available \(SIZE\)"));

// ollama (new engine, llm/server.go): `memory layout cannot be allocated with num_gpu = N`
static OLLAMA_LAYOUT: LazyLock<Regex> =
    LazyLock::new(|| re(r"memory layout cannot be allocated with num_gpu = (\d+)"));
// ollama ml/backend/ggml (backend.go, ggml.go): per-device breakdown lines
// `msg="model weights" device=CUDA0 size="11.9 GiB"` (or buffer=), `msg="kv cache" ...`,
// `msg="compute graph" device=CUDA0 size="98.0 MiB"` (or backend=/buffer_type=)
static OLLAMA_PART: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"msg="(model weights|kv cache|compute graph)"(?:\s+\w+=\S+)*?\s+(?:device|buffer|buffer_type)=(\S+)(?:\s+\w+=\S+)*?\s+size="SIZE""#,
    )
});
// ollama discover (types.go LogDetails): `msg="inference compute" ... total="X" available="Y"`
static OLLAMA_GPU: LazyLock<Regex> =
    LazyLock::new(|| re(r#"msg="inference compute".*?total="SIZE".*?available="SIZE""#));

/// ggml buffer types that live in host RAM: `CPU`, `CPU_Mapped`, `CUDA_Host` (pinned), ...
fn is_host(buffer_type: &str) -> bool {
    buffer_type.starts_with("CPU") || buffer_type.ends_with("_Host")
}

/// Read llama.cpp / Ollama events on one line.
pub(super) fn read(line: &str, out: &mut Vec<LogEvent>) {
    if !(line.contains("buffer")
        || line.contains("alloc")
        || line.contains("MiB")
        || line.contains("memory")
        || line.contains("kv cache")
        || line.contains("offloaded")
        || line.contains("pipeline")
        || line.contains("msg=")
        || line.contains("recommendedMaxWorkingSetSize"))
    {
        return;
    }
    if line.contains("recommendedMaxWorkingSetSize") {
        if let Some(c) = METAL_LIMIT.captures(line) {
            out.push(LogEvent::MetalWorkingSet {
                used: None,
                limit: mib(&c[1]),
            });
        }
    } else if line.contains("allocated") && line.contains("metal") {
        if let Some(c) = METAL_TOTAL.captures(line) {
            out.push(LogEvent::MetalWorkingSet {
                used: mib(&c[1]),
                limit: c.get(2).and_then(|m| mib(m.as_str())),
            });
        }
    }
    if let Some(c) = CUDA_MALLOC.captures(line) {
        if let Some(bytes) = mib(&c[1]) {
            out.push(LogEvent::GgmlAllocFailed {
                device: Some(format!("CUDA{}", &c[2])),
                bytes,
            });
        }
    }
    if let Some(c) = METAL_ALLOC.captures(line) {
        if let Some(bytes) = mib(&c[1]) {
            out.push(LogEvent::GgmlAllocFailed {
                device: Some("Metal".to_string()),
                bytes,
            });
        }
    }
    if let Some(c) = GALLOCR.captures(line) {
        if let Ok(bytes) = c[2].parse() {
            out.push(LogEvent::GgmlAllocFailed {
                device: Some(c[1].to_string()),
                bytes,
            });
        }
        out.push(LogEvent::Phase(Phase::ComputeReserve));
    }
    if let Some(c) = TENSOR_RANGE.captures(line) {
        let bytes = c[2].parse().ok();
        if is_host(&c[1]) {
            out.push(LogEvent::HostAllocFailed { requested: bytes });
        } else {
            if let Some(bytes) = bytes {
                out.push(LogEvent::GgmlAllocFailed {
                    device: Some(c[1].to_string()),
                    bytes,
                });
            }
            out.push(LogEvent::LlamaWeightsAllocFailed {
                device: Some(c[1].to_string()),
            });
        }
    } else if let Some(c) = UNABLE_BUFFER.captures(line) {
        if line.contains("load") {
            out.push(if is_host(&c[1]) {
                LogEvent::HostAllocFailed { requested: None }
            } else {
                LogEvent::LlamaWeightsAllocFailed {
                    device: Some(c[1].to_string()),
                }
            });
        }
    }
    if KV_FAILED.is_match(line) {
        out.push(LogEvent::LlamaKvAllocFailed);
    }
    if CONTEXT_FAILED.is_match(line) && !KV_FAILED.is_match(line) && !COMPUTE_FAILED.is_match(line)
    {
        out.push(LogEvent::LlamaContextFailed);
    }
    if COMPUTE_FAILED.is_match(line) {
        out.push(LogEvent::LlamaComputeAllocFailed);
    }
    if let Some(c) = CPU_FAILED.captures(line) {
        out.push(LogEvent::HostAllocFailed {
            requested: c[1].parse().ok(),
        });
    }
    let buffer = |kind, device: Option<&str>, v: &str| {
        mib(v).map(|bytes| LogEvent::LlamaBuffer {
            kind,
            device: device.map(str::to_string),
            bytes,
        })
    };
    if let Some(c) = MODEL_BUFFER.captures(line) {
        out.extend(buffer(BufferKind::Model, Some(&c[1]), &c[2]));
        out.push(LogEvent::Phase(Phase::WeightLoading));
    }
    if let Some(c) = KV_BUFFER.captures(line) {
        out.extend(buffer(BufferKind::Kv, Some(&c[1]), &c[2]));
        out.push(LogEvent::Phase(Phase::KvAllocation));
    } else if let Some(c) = KV_SELF.captures(line) {
        out.extend(buffer(BufferKind::Kv, None, &c[1]));
        out.push(LogEvent::Phase(Phase::KvAllocation));
    }
    if let Some(c) = COMPUTE_BUFFER.captures(line) {
        out.extend(buffer(BufferKind::Compute, Some(&c[1]), &c[2]));
        out.push(LogEvent::Phase(Phase::ComputeReserve));
    }
    if let Some(c) = DEVICE_FREE.captures(line) {
        if let Some(free) = mib(&c[2]) {
            out.push(LogEvent::LlamaDeviceFree {
                device: c[1].to_string(),
                free,
            });
        }
    }
    if let Some(c) = OFFLOADED.captures(line) {
        if let (Ok(l), Ok(t)) = (c[1].parse(), c[2].parse()) {
            out.push(LogEvent::LlamaOffloaded {
                layers: l,
                total: t,
            });
        }
    }
    // src/llama-context.cpp sched_reserve (2026): the failed reservation is retried with one copy
    if line.contains("retrying without pipeline parallelism") {
        out.push(LogEvent::LlamaRetryWithoutPipeline);
    }
    if let Some(c) = PIPELINE.captures(line) {
        if let Ok(n) = c[1].parse() {
            out.push(LogEvent::LlamaPipelineCopies { copies: n });
        }
    }
    if let Some(c) = OLLAMA_LAYOUT.captures(line) {
        if let Ok(n) = c[1].parse() {
            out.push(LogEvent::OllamaLayoutFailed { num_gpu: n });
        }
    }
    if line.contains("msg=\"") {
        if let Some(c) = OLLAMA_PART.captures(line) {
            let kind = match &c[1] {
                "model weights" => BufferKind::Model,
                "kv cache" => BufferKind::Kv,
                _ => BufferKind::Compute,
            };
            if let Some(bytes) = parse_log_size(&c[3]) {
                out.push(LogEvent::LlamaBuffer {
                    kind,
                    device: Some(c[2].trim_matches('"').to_string()),
                    bytes,
                });
            }
        }
        if let Some(c) = OLLAMA_GPU.captures(line) {
            if let (Some(total), Some(available)) = (parse_log_size(&c[1]), parse_log_size(&c[2])) {
                out.push(LogEvent::OllamaGpu { total, available });
            }
        }
    }
    if let Some(c) = OLLAMA_SYSTEM.captures(line) {
        if let (Some(r), Some(a)) = (parse_log_size(&c[1]), parse_log_size(&c[2])) {
            out.push(LogEvent::OllamaSystemMemory {
                required: r,
                available: a,
            });
        }
    }
}
