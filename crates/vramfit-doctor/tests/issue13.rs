//! The examples of issue 13, each answered as the issue says it must be: the cause from the
//! message's own numbers, and fixes in the engine's own words that change something.

use vramfit_doctor::{diagnose, Cause, Diagnosis, Engine};

fn fix<'a>(d: &'a Diagnosis, flag: &str) -> Option<&'a str> {
    d.fixes
        .iter()
        .find(|f| f.flag == flag)
        .map(|f| f.value.as_str())
}

fn flags(d: &Diagnosis) -> Vec<&str> {
    d.fixes.iter().map(|f| f.flag.as_str()).collect()
}

#[test]
fn reserved_unallocated_twice_the_request_is_fragmentation() {
    // mlverse/torch#1222: 19.69 - 12.04 = 7.65 GiB reserved but unallocated > 2 x 2.93 GiB
    let d = diagnose("CUDA out of memory. Tried to allocate 2.93 GiB (GPU 0; 23.80 GiB total capacity; 12.04 GiB already allocated; 2.82 GiB free; 19.69 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF");
    assert_eq!(d.cause, Cause::Fragmentation, "{}", d.summary);
    assert!(
        d.evidence.iter().any(|e| e.contains("7.65 GiB")),
        "{:?}",
        d.evidence
    );
    assert_eq!(
        fix(&d, "PYTORCH_CUDA_ALLOC_CONF"),
        Some("expandable_segments:True")
    );
    assert!(d.confidence >= 0.8);
}

#[test]
fn free_plus_unallocated_covers_the_request_is_fragmentation() {
    // vllm-project/compressed-tensors#587
    let d = diagnose("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 79.18 GiB of which 1.08 GiB is free. Including non-PyTorch memory, this process has 78.09 GiB memory in use. Of the allocated memory 75.31 GiB is allocated by PyTorch, and 1.83 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_ALLOC_CONF=expandable_segments:True to avoid fragmentation.");
    assert_eq!(d.cause, Cause::Fragmentation, "{}", d.summary);
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("free 1.08 GiB < 1.96 GiB requested")),
        "{:?}",
        d.evidence
    );
    // The fix's reason states the comparison that holds: 1.83 GiB alone does not cover 1.96 GiB.
    let why = &d
        .fixes
        .iter()
        .find(|f| f.flag == "PYTORCH_CUDA_ALLOC_CONF")
        .expect("allocator fix")
        .why;
    assert!(
        why.contains("free 1.08 GiB + reserved but unallocated 1.83 GiB = 2.91 GiB >= 1.96 GiB"),
        "{why}"
    );
}

#[test]
fn expandable_segments_already_on_is_not_suggested_again() {
    let d = diagnose("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python train.py\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 79.18 GiB of which 1.08 GiB is free. Of the allocated memory 75.31 GiB is allocated by PyTorch, and 1.83 GiB is reserved by PyTorch but unallocated.");
    assert_eq!(d.cause, Cause::Fragmentation);
    assert_eq!(fix(&d, "PYTORCH_CUDA_ALLOC_CONF"), None, "{:?}", d.fixes);
}

#[test]
fn nccl_cuda_failure_out_of_memory_is_an_oom() {
    // vllm-project/vllm#19865 (vLLM 0.9.1, DeepSeek-R1 on B200)
    let log = "vllm serve deepseek-ai/DeepSeek-R1 --tensor-parallel-size 8 --gpu-memory-utilization 0.95\n\
(VllmWorker rank=3 pid=15164) ERROR 06-19 07:06:13 [multiproc_executor.py:527] torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.26.2\n\
(VllmWorker rank=3 pid=15164) ERROR 06-19 07:06:13 [multiproc_executor.py:527] ncclUnhandledCudaError: Call to CUDA function failed.\n\
(VllmWorker rank=3 pid=15164) ERROR 06-19 07:06:13 [multiproc_executor.py:527] Last error:\n\
(VllmWorker rank=3 pid=15164) ERROR 06-19 07:06:13 [multiproc_executor.py:527] Cuda failure 2 'out of memory'";
    let d = diagnose(log);
    assert_ne!(d.cause, Cause::NotOom, "{}", d.summary);
    assert_eq!(d.cause, Cause::OtherProcesses);
    assert_eq!(fix(&d, "--gpu-memory-utilization"), Some("0.90"));
    // the same failure in a training job with no pre-allocated pool is still an OOM
    let d = diagnose("node:2134736:2285781 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\nnode:2134736:2285781 [0] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes");
    assert!(
        !matches!(d.cause, Cause::NotOom | Cause::Unknown),
        "{:?}",
        d.cause
    );
}

#[test]
fn ollama_system_memory_is_host_memory_in_ollamas_words() {
    let d = diagnose(
        "Error: model requires more system memory (164.8 GiB) than is available (13.4 GiB)",
    );
    assert_eq!(d.engine, Engine::Ollama);
    assert_eq!(d.cause, Cause::HostMemory, "{}", d.summary);
    let f = flags(&d);
    assert!(!f.contains(&"--tensor-parallel-size"), "{f:?}");
    assert!(
        f.iter()
            .all(|x| x.is_empty() || x.starts_with("OLLAMA_") || x.starts_with("num_")),
        "{f:?}"
    );
    assert!(d.summary.contains("151.40 GiB"), "{}", d.summary);
}

#[test]
fn transformers_cpu_dispatch_gets_a_transformers_fix() {
    let d = diagnose("ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to fit the quantized model. If you want to dispatch the model on the CPU or the disk while keeping these modules in 32-bit, you need to set `load_in_8bit_fp32_cpu_offload=True` and pass a custom `device_map` to `from_pretrained`.");
    assert_eq!(d.cause, Cause::WeightsDoNotFit);
    assert_eq!(d.engine, Engine::Transformers);
    assert!(
        !flags(&d).iter().any(|f| f.starts_with("--")),
        "{:?}",
        d.fixes
    );
    assert_eq!(fix(&d, "llm_int8_enable_fp32_cpu_offload"), Some("True"));
}

#[test]
fn vllm_0_9_no_cache_blocks_never_repeats_the_setting_or_says_upgrade_from_0_2_5() {
    let log = "INFO 06-20 10:00:00 [__init__.py:244] vLLM API server version 0.9.1\n\
INFO 06-20 10:00:01 [api_server.py:1287] non-default args: {'model': 'Qwen/Qwen2.5-7B-Instruct', 'gpu_memory_utilization': 0.9}\n\
ERROR 06-20 10:02:11 [core.py:515] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.";
    let d = diagnose(log);
    assert_eq!(d.engine, Engine::Vllm);
    assert_ne!(
        fix(&d, "--gpu-memory-utilization"),
        Some("0.90"),
        "{:?}",
        d.fixes
    );
    assert_eq!(fix(&d, "--gpu-memory-utilization"), Some("0.95"));
    assert!(
        d.fixes.iter().all(|f| !f.why.contains("0.2.5")),
        "{:?}",
        d.fixes
    );
    assert!(!d.summary.contains("0.2.5"));
    // when the value is already 0.95 the share is not raised again
    let d = diagnose(&log.replace("0.9}", "0.95}"));
    assert_eq!(fix(&d, "--gpu-memory-utilization"), None, "{:?}", d.fixes);
}

#[test]
fn ollama_memory_layout_with_its_breakdown() {
    // the new engine's lines (ollama ml/backend/ggml, discover): GPU, per-device breakdown,
    // then the error the API returns
    let log = r#"time=2025-10-11T20:55:47.000+02:00 level=INFO source=types.go:130 msg="inference compute" id=GPU-3752f260 library=CUDA compute=8.6 name=CUDA0 description="NVIDIA GeForce RTX 3090" total="24.0 GiB" available="22.8 GiB"
time=2025-10-11T20:55:48.100+02:00 level=INFO source=ggml.go:365 msg="model weights" device=CUDA0 size="21.4 GiB"
time=2025-10-11T20:55:48.100+02:00 level=INFO source=ggml.go:365 msg="model weights" device=CPU size="1.0 GiB"
time=2025-10-11T20:55:48.200+02:00 level=INFO source=backend.go:321 msg="kv cache" device=CUDA0 size="3.9 GiB"
time=2025-10-11T20:55:48.200+02:00 level=INFO source=backend.go:332 msg="compute graph" device=CUDA0 size="1.1 GiB"
time=2025-10-11T20:55:48.200+02:00 level=INFO source=backend.go:342 msg="total memory" size="27.4 GiB"
Error: 500 Internal Server Error: memory layout cannot be allocated with num_gpu = 63"#;
    let d = diagnose(log);
    assert_eq!(d.engine, Engine::Ollama);
    assert_ne!(d.cause, Cause::Unknown);
    assert_eq!(d.cause, Cause::WeightsDoNotFit);
    // 21.4 GiB / 63 layers = 0.34 GiB; 22.8 - 3.9 - 1.1 = 17.8 GiB -> 52 layers
    assert_eq!(fix(&d, "num_gpu"), Some("52"), "{:?}", d.fixes);
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("KV cache 3.90 GiB") || e.contains("KV cache 3.9")),
        "{:?}",
        d.evidence
    );
    assert!(
        flags(&d).iter().all(|f| !f.starts_with('-')),
        "{:?}",
        d.fixes
    );
}

#[test]
fn metal_oom_is_not_described_as_cuda() {
    let d = diagnose("libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] Command buffer execution failed: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)");
    assert!(!d.summary.contains("CUDA"), "{}", d.summary);
    assert!(d.summary.contains("Metal"), "{}", d.summary);
    assert_ne!(d.cause, Cause::Unknown);
}

#[test]
fn lookalikes_are_named() {
    for (log, what) in [
        ("CUDA error: out of memory\n  current device: 0, in function alloc at ggml-cuda.cu:476\n  cuMemAddressReserve(&pool_addr, CUDA_POOL_VMM_MAX_SIZE, 0, 0, 0)", "address space"),
        ("ggml_vulkan: Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory\nggml_gallocr_reserve_n: failed to allocate Vulkan0 buffer of size 4757131264\nllama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers", "per-buffer"),
        ("ggml_metal_add_buffer: buffer 'data' size 18300780544 is larger than buffer maximum of 17179869184", "per-buffer"),
        ("RuntimeError: CUDA error: an illegal memory access was encountered", "illegal memory access"),
        ("ERROR Search for `cudaErrorStreamCaptureUnsupported' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.", "capture"),
    ] {
        let d = diagnose(log);
        assert_eq!(d.cause, Cause::NotOom, "{log}: {}", d.summary);
        assert!(d.summary.contains(what), "{what}: {}", d.summary);
    }
}

#[test]
fn request_larger_than_the_device_is_an_activation() {
    let d = diagnose("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 74.16 GiB. GPU 0 has a total capacity of 44.40 GiB of which 29.89 GiB is free. Process 2684311 has 14.51 GiB memory in use. Of the allocated memory 13.44 GiB is allocated by PyTorch, and 738.96 MiB is reserved by PyTorch but unallocated.");
    assert_eq!(d.cause, Cause::ActivationPeak);
    let d =
        diagnose("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 218.96 GiB");
    assert_eq!(d.cause, Cause::ActivationPeak);
}

#[test]
fn other_tenants_by_subtraction() {
    // total - reserved - free: 23.5 - (8.0 + 0.5) - 0.1 = 14.9 GiB held by someone else
    let d = diagnose("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 23.50 GiB of which 100.00 MiB is free. Of the allocated memory 7.90 GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.");
    assert_eq!(d.cause, Cause::OtherProcesses, "{}", d.summary);
}

#[test]
fn the_failure_at_the_end_of_a_long_serving_log_is_found() {
    // hours of throughput lines (each a phase marker) used to fill the event cap first
    let mut log = String::from("INFO 06-30 13:40:00 [gpu_worker.py:241] the current vLLM instance can use total_gpu_memory (79.15GiB) x gpu_memory_utilization (0.90) = 71.24GiB\n");
    for i in 0..20_000 {
        log.push_str(&format!("INFO 06-30 {:02}:{:02}:00 [loggers.py:118] Engine 000: Avg prompt throughput: 1520.3 tokens/s, Running: 48 reqs, GPU KV cache usage: 61.2%\n", 14 + i / 3600 % 10, i / 60 % 60));
        log.push_str("INFO 06-30 14:00:00 [logger.py:43] Received request chatcmpl-1: prompt: 'hello', params: SamplingParams(n=1, temperature=0.7, max_tokens=512)\n");
    }
    log.push_str("ERROR 06-30 23:10:02 [core.py:515] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 79.18 GiB of which 1.08 GiB is free. Including non-PyTorch memory, this process has 78.09 GiB memory in use. Of the allocated memory 75.31 GiB is allocated by PyTorch, and 1.83 GiB is reserved by PyTorch but unallocated.\n");
    let d = diagnose(&log);
    assert_eq!(d.cause, Cause::Fragmentation, "{}", d.summary);
    assert_eq!(d.engine, Engine::Vllm);
    assert!(
        d.evidence.iter().any(|e| e.contains("steady state")),
        "{:?}",
        d.evidence
    );
}

#[test]
fn vllm_activation_fix_halves_the_releases_own_default() {
    // vLLM 0.8.5 serves with 2048 batched tokens on a 24 GB card (arg_utils.py batch defaults):
    // suggesting 2048 would change nothing
    let log = "INFO 03-02 10:00:00 [__init__.py:239] vLLM API server version 0.8.5\n\
INFO 03-02 10:00:05 [gpu_model_runner.py:1329] Model loading took 14.99 GiB and 5.2 seconds\n\
ERROR 03-02 10:00:20 [core.py:396] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.71 GiB. GPU 0 has a total capacity of 23.55 GiB of which 2.10 GiB is free. Including non-PyTorch memory, this process has 21.43 GiB memory in use. Of the allocated memory 19.52 GiB is allocated by PyTorch, and 1.45 GiB is reserved by PyTorch but unallocated.";
    let d = diagnose(log);
    assert_eq!(d.cause, Cause::ActivationPeak, "{}", d.summary);
    assert_eq!(
        fix(&d, "--max-num-batched-tokens"),
        Some("1024"),
        "{:?}",
        d.fixes
    );
    // from v0.9.0 an 80 GB card (not an A100) serves with 8192
    let d = diagnose(
        &log.replace("version 0.8.5", "version 0.9.1")
            .replace("23.55 GiB of which", "79.19 GiB of which")
            .replace("has 21.43 GiB", "has 77.02 GiB")
            .replace("19.52 GiB is allocated", "75.11 GiB is allocated"),
    );
    assert_eq!(d.cause, Cause::ActivationPeak, "{}", d.summary);
    assert_eq!(
        fix(&d, "--max-num-batched-tokens"),
        Some("4096"),
        "{:?}",
        d.fixes
    );
}

#[test]
fn sglang_not_enough_memory_gets_its_own_fraction_never_a_context_length() {
    // SGLang raises this when the pool left by mem_fraction_static after the weights holds no
    // token (model_runner.py init_memory_pool); the context length does not change that pool
    let tail = "[2025-05-01 10:00:00 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=2.10 GB, mem usage=15.28 GB.\n\
[2025-05-01 10:00:01 TP0] RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.";
    let d = diagnose(&format!(
        "[2025-05-01 09:59:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', mem_fraction_static=0.88, tp_size=1)\n{tail}"
    ));
    assert_eq!(d.engine, Engine::Sglang);
    assert_eq!(d.cause, Cause::KvCache, "{}", d.summary);
    assert_eq!(
        fix(&d, "--mem-fraction-static"),
        Some("0.93"),
        "{:?}",
        d.fixes
    );
    assert!(!flags(&d).contains(&"--context-length"), "{:?}", d.fixes);
    let d = diagnose(tail);
    assert!(!flags(&d).contains(&"--context-length"), "{:?}", d.fixes);
    assert!(
        d.fixes
            .iter()
            .any(|f| f.why.contains("--mem-fraction-static")),
        "{:?}",
        d.fixes
    );
}
