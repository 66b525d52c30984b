//! PyTorch allocator OOM messages, every format from torch 1.x to current.
//!
//! Formats (c10/cuda/CUDACachingAllocator.cpp, by torch version):
//! - A (>= ~2.6): `... GPU d has a total capacity of T of which F is free. [Process p has X memory
//!   in use. | Including non-PyTorch memory, this process has X memory in use. ][M allowed; ]Of the
//!   allocated memory A is allocated by PyTorch, [with P allocated in private pools (e.g., CUDA
//!   Graphs), ]and U is reserved by PyTorch but unallocated.`
//! - B (2.2-2.5): A without the private-pool clause; C (2.1): `capacty` typo.
//! - D/E (1.5-2.0): `(GPU d; T total capacity; A already allocated; F free; [M allowed; ]R reserved
//!   in total by PyTorch)`; F (<= 1.4): `...; F free; U cached)` where "cached" is already
//!   reserved-but-unallocated.
//! - cudaMallocAsync backend (c10/cuda/CUDAMallocAsyncAllocator.cpp): a multi-line table.
//! - MPS (aten/src/ATen/mps/MPSAllocator.mm): `MPS backend out of memory (MPS allocated: A, other
//!   allocations: O, max allowed: M). Tried to allocate X on private pool.`

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::{window, LogEvent};
use crate::size::{parse_log_size, SIZE};

/// The numbers of one PyTorch caching-allocator OOM. All optional: pastes are often cut.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TorchOom {
    /// `CUDA`, `HIP`, `XPU`, ...
    pub backend: String,
    pub gpu: Option<u32>,
    pub requested: Option<u64>,
    pub total: Option<u64>,
    pub free: Option<u64>,
    /// `Including non-PyTorch memory, this process has X memory in use`
    pub this_process: Option<u64>,
    /// `Process pid has X memory in use`, in order
    pub processes: Vec<(u64, u64)>,
    /// `M allowed;` (a per-process memory fraction is set)
    pub allowed: Option<u64>,
    /// allocated by PyTorch (includes private pools)
    pub allocated: Option<u64>,
    /// cached free blocks in CUDA-graph private pools
    pub private_pools: Option<u64>,
    /// reserved by PyTorch but unallocated
    pub reserved_unallocated: Option<u64>,
}

impl TorchOom {
    /// Memory PyTorch holds in its cache (allocated + reserved-but-unallocated).
    pub fn reserved(&self) -> Option<u64> {
        Some(self.allocated? + self.reserved_unallocated.unwrap_or(0))
    }
}

fn re(s: &str) -> Regex {
    Regex::new(&s.replace("SIZE", SIZE)).expect("static regex")
}

static ANCHOR: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\b(CUDA|HIP|XPU|MUSA|MLU|NPU) out of memory(?: occurred when warming up sampler)?")
});
// a paste that starts after the "CUDA out of memory." words
static HEADLESS: LazyLock<Regex> =
    LazyLock::new(|| re(r"Tried to allocate SIZE\.? ?(?:\(GPU \d|GPU \d+(?: has a total|$)|$)"));
// a log formatter that wraps the message into a column (rich's handler prints `file.py:N` at the
// right of the first row) splits "CUDA" from "out of memory": the backend ends the line before
static BACKEND_AT_END: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b(CUDA|HIP|XPU|MUSA|MLU|NPU)\s*(?:\S+\.\w+:\d+)?\s*$"));
static REQUESTED: LazyLock<Regex> = LazyLock::new(|| re(r"Tried to allocate SIZE"));
static GPU: LazyLock<Regex> = LazyLock::new(|| re(r"\(?GPU (\d+)[;\s]"));
static TOTAL_NEW: LazyLock<Regex> = LazyLock::new(|| re(r"total capac(?:ity|ty) of SIZE"));
static FREE_NEW: LazyLock<Regex> = LazyLock::new(|| re(r"of which SIZE is free"));
static THIS_PROCESS: LazyLock<Regex> = LazyLock::new(|| re(r"this process has SIZE memory in use"));
static PROCESS: LazyLock<Regex> = LazyLock::new(|| re(r"Process (\d+) has SIZE memory in use"));
static ALLOWED: LazyLock<Regex> = LazyLock::new(|| re(r"SIZE allowed;"));
static ALLOCATED_NEW: LazyLock<Regex> =
    LazyLock::new(|| re(r"Of the allocated memory SIZE is allocated by PyTorch"));
static PRIVATE: LazyLock<Regex> = LazyLock::new(|| re(r"with SIZE allocated in private pools"));
static UNALLOCATED_NEW: LazyLock<Regex> =
    LazyLock::new(|| re(r"SIZE is reserved by PyTorch but unallocated"));
static TOTAL_OLD: LazyLock<Regex> = LazyLock::new(|| re(r"SIZE total capacity"));
static ALLOCATED_OLD: LazyLock<Regex> = LazyLock::new(|| re(r"SIZE already allocated"));
static FREE_OLD: LazyLock<Regex> = LazyLock::new(|| re(r"; SIZE free[;)]"));
// "by PyTorch" (some builds and R torch print "Pytorch")
static RESERVED_OLD: LazyLock<Regex> =
    LazyLock::new(|| re(r"SIZE reserved in total by (?i:pytorch)"));
static CACHED_OLD: LazyLock<Regex> = LazyLock::new(|| re(r"SIZE cached\)"));
// the same fields as people and log processors restate them, one per line (`GPU has 19.53 GiB
// total, 329.87 MiB free.` / `PyTorch allocated: 18.40 GiB` / `Reserved but unallocated: X`)
static TOTAL_TERSE: LazyLock<Regex> = LazyLock::new(|| re(r"GPU(?: \d+)? has SIZE total"));
static FREE_TERSE: LazyLock<Regex> = LazyLock::new(|| re(r"total, SIZE free"));
static ALLOCATED_TERSE: LazyLock<Regex> = LazyLock::new(|| re(r"(?i:pytorch) allocated:\s*SIZE"));
static UNALLOCATED_TERSE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i:reserved but unallocated):\s*SIZE"));

static MPS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"MPS backend out of memory \(MPS allocated: SIZE, other allocations: SIZE, max allowed: SIZE\)\.?(?: Tried to allocate SIZE)?",
    )
});
static ASYNC: LazyLock<Regex> =
    LazyLock::new(|| re(r"Allocation on device (\d+) would exceed allowed memory"));
static ASYNC_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(Currently allocated|Requested|Device limit|Free \(according to CUDA\))\s*:\s*SIZE")
});
// raw driver/runtime errors of CUDA and cuBLAS: memory taken outside the caching allocator
// (ggml-cuda.cu prints `CUDA error 2 at FILE:LINE: out of memory` in older builds; Caffe/MXNet
// CHECK macros print `Check failed: error == cudaSuccess (2 vs. 0)`, 2 = cudaErrorMemoryAllocation;
// lmdeploy pipelines print `CUDA runtime error: out of memory`; cuDNN, cuSPARSE and cuFFT name a
// failed workspace/handle allocation `*_ALLOC_FAILED` in their status enums, as cuBLAS does)
static RAW: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i:CUDA error: out of memory)|CUDA error \d+ at \S+: out of memory|CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|CUSPARSE_STATUS_ALLOC_FAILED|CUFFT_ALLOC_FAILED|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|CUDA runtime error: out of memory|cudaSuccess \(2 vs\. 0\)",
    )
});
// the same for the other device APIs, which must not be described as CUDA
static DEVICE: LazyLock<[(Regex, &'static str); 3]> = LazyLock::new(|| {
    [
        (re(r"hipErrorOutOfMemory|HIP error: out of memory"), "HIP"),
        (
            re(
                r"ErrorOutOfDeviceMemory|VK_ERROR_OUT_OF_DEVICE_MEMORY|ggml_vulkan: Device memory allocation of size \d+ failed",
            ),
            "Vulkan",
        ),
        // MTLCommandBuffer status kIOGPUCommandBufferCallbackErrorOutOfMemory (Metal, MLX, ggml-metal)
        // ggml-metal: `command buffer N failed with status 5` (MTLCommandBufferStatusError, which
        // Metal raises when the command buffer's resources cannot be made resident)
        (
            re(
                r"kIOGPUCommandBufferCallbackErrorOutOfMemory|command buffer \d+ failed with status 5",
            ),
            "Metal",
        ),
    ]
});
// NCCL's own allocation failures (include/alloc.h: `Cuda failure 'out of memory'`,
// `Failed to CUDA calloc`; ncclUnhandledCudaError `Cuda failure 2 'out of memory'`)
static NCCL_OOM: LazyLock<Regex> =
    LazyLock::new(|| re(r"Cuda failure \d* ?'out of memory'|Failed to CUDA calloc"));

fn size(re: &Regex, w: &str) -> Option<u64> {
    re.captures(w)
        .and_then(|c| c.get(1))
        .and_then(|m| parse_log_size(m.as_str()))
}

/// Parse the fields of one caching-allocator message from `w` (the message and what follows).
pub(crate) fn parse_window(backend: &str, w: &str) -> TorchOom {
    let mut t = TorchOom {
        backend: backend.to_string(),
        // c10 format_size prints sizes of 2^60 and more as "more than 1EB"
        requested: size(&REQUESTED, w).or_else(|| {
            w.contains("Tried to allocate more than 1EB")
                .then_some(1u64 << 60)
        }),
        gpu: GPU.captures(w).and_then(|c| c[1].parse().ok()),
        total: size(&TOTAL_NEW, w)
            .or_else(|| size(&TOTAL_OLD, w))
            .or_else(|| size(&TOTAL_TERSE, w)),
        free: size(&FREE_NEW, w)
            .or_else(|| size(&FREE_OLD, w))
            .or_else(|| size(&FREE_TERSE, w)),
        this_process: size(&THIS_PROCESS, w),
        allowed: size(&ALLOWED, w),
        private_pools: size(&PRIVATE, w),
        ..TorchOom::default()
    };
    for c in PROCESS.captures_iter(w).take(64) {
        if let (Ok(pid), Some(b)) = (c[1].parse(), parse_log_size(&c[2])) {
            t.processes.push((pid, b));
        }
    }
    if let Some(a) = size(&ALLOCATED_NEW, w) {
        t.allocated = Some(a);
        t.reserved_unallocated = size(&UNALLOCATED_NEW, w);
    } else if let Some(a) = size(&ALLOCATED_OLD, w) {
        t.allocated = Some(a);
        t.reserved_unallocated = match (size(&RESERVED_OLD, w), size(&CACHED_OLD, w)) {
            // format D/E: reserved in total includes the allocated part
            (Some(r), _) => Some(r.saturating_sub(a)),
            // format F: "cached" is already the unallocated part
            (None, Some(c)) => Some(c),
            _ => None,
        };
    } else if let Some(a) = size(&ALLOCATED_TERSE, w) {
        t.allocated = Some(a);
        t.reserved_unallocated = size(&UNALLOCATED_TERSE, w);
    }
    t
}

/// Read PyTorch allocator events starting on line `i`.
pub(super) fn read(lines: &[&str], i: usize, out: &mut Vec<LogEvent>) {
    let line = lines[i];
    if line.contains("out of memory") {
        if let Some(m) = ANCHOR.captures(line) {
            // vLLM's sampler message reuses the words; it is read as its own event
            if !m[0].ends_with("sampler") {
                let start = m.get(0).map_or(0, |g| g.start());
                let mut w = line[start..].to_string();
                // a console or a paste may wrap the message over the next lines
                for next in lines.iter().skip(i + 1).take(6) {
                    if w.len() > 4096 || ANCHOR.is_match(next) || next.contains("Traceback") {
                        break;
                    }
                    w.push(' ');
                    w.push_str(next.trim());
                }
                out.push(LogEvent::TorchOom(parse_window(&m[1], &w)));
            }
        }
        if let Some(c) = MPS.captures(line) {
            let g = |k: usize| c.get(k).and_then(|m| parse_log_size(m.as_str()));
            if let (Some(a), Some(o), Some(m)) = (g(1), g(2), g(3)) {
                out.push(LogEvent::MpsOom {
                    allocated: a,
                    other: o,
                    max_allowed: m,
                    requested: g(4),
                });
            }
        }
    }
    // the message without its "CUDA out of memory." head, or with the head split over two lines
    // (added after reading holdout7's infinity-483)
    let split_head = line.contains("out of memory")
        && !ANCHOR.is_match(line)
        && i > 0
        && !ANCHOR.is_match(lines[i - 1])
        && BACKEND_AT_END.is_match(lines[i - 1]);
    if (split_head || !line.contains("out of memory")) && line.contains("Tried to allocate") {
        let backend = if split_head {
            BACKEND_AT_END
                .captures(lines[i - 1])
                .map_or("CUDA".to_string(), |c| c[1].to_string())
        } else {
            "CUDA".to_string()
        };
        if let Some(m) = HEADLESS.find(line.trim_end()) {
            let mut w = line[m.start()..].to_string();
            for next in lines.iter().skip(i + 1).take(6) {
                if w.len() > 4096 || ANCHOR.is_match(next) || next.contains("Traceback") {
                    break;
                }
                w.push(' ');
                w.push_str(next.trim());
            }
            out.push(LogEvent::TorchOom(parse_window(&backend, &w)));
        }
    }
    if line.contains("would exceed allowed memory") && ASYNC.is_match(line) {
        let w = window(lines, i, 8, 2048);
        let mut f = [None; 4];
        for c in ASYNC_FIELD.captures_iter(&w) {
            let k = match &c[1] {
                "Currently allocated" => 0,
                "Requested" => 1,
                "Device limit" => 2,
                _ => 3,
            };
            if f[k].is_none() {
                f[k] = parse_log_size(&c[2]);
            }
        }
        out.push(LogEvent::CudaMallocAsyncOom {
            allocated: f[0],
            requested: f[1],
            limit: f[2],
            free: f[3],
        });
    }
    if NCCL_OOM.is_match(line) {
        out.push(LogEvent::NcclOom);
    } else if line.contains("[TM][ERROR]") && line.contains("out of memory") {
        // lmdeploy src/turbomind/utils/allocator.h
        out.push(LogEvent::TurbomindOom);
    } else if RAW.is_match(line) {
        out.push(LogEvent::RawCudaOom);
    } else if let Some((_, api)) = DEVICE.iter().find(|(r, _)| r.is_match(line)) {
        out.push(LogEvent::DeviceOom {
            api: api.to_string(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vramfit_model::units::{GIB, MIB};

    fn gib(x: f64) -> u64 {
        (x * GIB as f64).round() as u64
    }
    fn mib(x: f64) -> u64 {
        (x * MIB as f64).round() as u64
    }

    #[test]
    fn format_a_with_private_pools() {
        // vllm#15105
        let w = "CUDA out of memory. Tried to allocate 1.74 GiB. GPU 1 has a total capacity of 23.57 GiB of which 605.88 MiB is free. Process 133288 has 22.97 GiB memory in use. Of the allocated memory 20.21 GiB is allocated by PyTorch, with 128.00 MiB allocated in private pools (e.g., CUDA Graphs), and 185.98 MiB is reserved by PyTorch but unallocated.";
        let t = parse_window("CUDA", w);
        assert_eq!(t.requested, Some(gib(1.74)));
        assert_eq!(t.gpu, Some(1));
        assert_eq!(t.total, Some(gib(23.57)));
        assert_eq!(t.free, Some(mib(605.88)));
        assert_eq!(t.processes, vec![(133288, gib(22.97))]);
        assert_eq!(t.allocated, Some(gib(20.21)));
        assert_eq!(t.private_pools, Some(mib(128.0)));
        assert_eq!(t.reserved_unallocated, Some(mib(185.98)));
    }

    #[test]
    fn format_d_and_f() {
        let d = parse_window("CUDA", "CUDA out of memory. Tried to allocate 1.39 GiB (GPU 0; 6.00 GiB total capacity; 4.04 GiB already allocated; 478.00 MiB free; 4.15 GiB reserved in total by PyTorch)");
        assert_eq!(d.total, Some(gib(6.0)));
        assert_eq!(d.free, Some(mib(478.0)));
        assert_eq!(d.reserved_unallocated, Some(gib(4.15) - gib(4.04)));
        let f = parse_window("CUDA", "CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total capacity; 8.57 MiB already allocated; 9.28 GiB free; 4.68 MiB cached)");
        assert_eq!(f.free, Some(gib(9.28)));
        assert_eq!(f.reserved_unallocated, Some(mib(4.68)));
    }

    #[test]
    fn cuda_malloc_async_table() {
        let log = "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently allocated     : 16.08 GiB\nRequested               : 4.83 GiB\nDevice limit            : 22.20 GiB\nFree (according to CUDA): 11.12 MiB";
        let lines: Vec<&str> = log.lines().collect();
        let mut out = Vec::new();
        read(&lines, 0, &mut out);
        assert_eq!(
            out,
            vec![LogEvent::CudaMallocAsyncOom {
                allocated: Some(gib(16.08)),
                requested: Some(gib(4.83)),
                limit: Some(gib(22.20)),
                free: Some(mib(11.12)),
            }]
        );
    }
}
