//! Fragments of every message the doctor reads, glued in random order with random numbers:
//! the diagnosis never panics, and every fix it prints has a value and is the engine's own.

use proptest::prelude::*;
use vramfit_doctor::diagnose;

const FRAGMENTS: &[&str] = &[
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {a} GiB. GPU 0 has a total capacity of {b} GiB of which {c} MiB is free. Of the allocated memory {d} GiB is allocated by PyTorch, and {e} MiB is reserved by PyTorch but unallocated.",
    "CUDA out of memory. Tried to allocate {a} GiB (GPU 0; {b} GiB total capacity; {d} GiB already allocated; {c} MiB free; {e} GiB reserved in total by PyTorch)",
    "XPU out of memory. Tried to allocate {a} GiB. GPU 0 has a total capacity of {b} GiB. Of the allocated memory 0 bytes is allocated by PyTorch",
    "Cuda failure 2 'out of memory'",
    "Error: model requires more system memory ({a} GiB) than is available ({b} GiB)",
    "memory layout cannot be allocated with num_gpu = {n}",
    "time=2025-10-11T20:55:48.100+02:00 level=INFO msg=\"model weights\" device=CUDA0 size=\"{a} GiB\"",
    "time=2025-10-11T20:55:48.100+02:00 level=INFO msg=\"kv cache\" device=CUDA0 size=\"{c} MiB\"",
    "msg=\"inference compute\" id=GPU-1 library=CUDA total=\"{b} GiB\" available=\"{d} GiB\"",
    "ValueError: No available memory for the cache blocks.",
    "INFO non-default args: {'gpu_memory_utilization': 0.{n}, 'max_num_seqs': {n}}",
    "ValueError: To serve at least one request with the model's max seq len ({n}), ({a} GiB KV cache is needed, which is larger than the available KV cache memory ({c} GiB).",
    "[TM][ERROR] CUDA runtime error: out of memory /opt/lmdeploy/allocator.h:223",
    "Some modules are dispatched on the CPU or the disk.",
    "ggml_vulkan: Device memory allocation of size {n} failed.",
    "[METAL] Command buffer execution failed: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)",
    "llama-server -m x.gguf -ngl {n} -c {n} -ub {n}",
    "PARAMETER num_ctx {n}",
    "INFO 06-30 13:{n}:19 [loggers.py:118] Avg prompt throughput: 1.0 tokens/s",
    "in capture_model",
    "oom-kill:constraint=CONSTRAINT_MEMCG",
    "cuMemAddressReserve(&pool_addr, CUDA_POOL_VMM_MAX_SIZE, 0, 0, 0)",
    "The process OOMs during CUDA graph capture",
];

fn render(i: usize, a: u32, b: u32, n: u32) -> String {
    FRAGMENTS[i % FRAGMENTS.len()]
        .replace("{a}", &format!("{}.{}", a % 300, a % 100))
        .replace("{b}", &format!("{}.{}", b % 200, b % 97))
        .replace("{c}", &format!("{}", (a ^ b) % 5000))
        .replace("{d}", &format!("{}.5", (a % 1000 + b % 1000) % 150))
        .replace("{e}", &format!("{}", b % 9000))
        .replace("{n}", &format!("{}", n % 200_000))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn any_mix_of_messages_is_diagnosed_without_panic(parts in prop::collection::vec((0usize..64, any::<u32>(), any::<u32>(), any::<u32>()), 1..12)) {
        let log: Vec<String> = parts.iter().map(|(i, a, b, n)| render(*i, *a, *b, *n)).collect();
        let d = diagnose(&log.join("\n"));
        prop_assert!((0.0..=1.0).contains(&d.confidence));
        for f in &d.fixes {
            if !f.flag.is_empty() {
                prop_assert!(f.value != "fewer" && f.value != "lower", "{:?}", f);
            }
        }
    }
}
