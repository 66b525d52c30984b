//! One case per message family of the catalog (research/torch_snapshot.md "Engine message
//! catalog", §11-13): the event is read with its numbers, the cause follows the engine's
//! semantics, and the fix is computed from the log's numbers.

use vramfit_doctor::{diagnose, Cause};

fn fix<'a>(d: &'a vramfit_doctor::Diagnosis, flag: &str) -> Option<&'a str> {
    d.fixes
        .iter()
        .find(|f| f.flag == flag)
        .map(|f| f.value.as_str())
}

#[test]
fn vllm_kv_without_estimate_scales_to_blocks() {
    // 0.8.2 prints GB and no estimate (vllm#15617)
    let d = diagnose("ValueError: To serve at least one request with the models's max seq len (116160), (4.43 GB KV cache is needed, which is larger than the available KV cache memory (3.48 GB). Try increasing gpu_memory_utilization or decreasing max_model_len when initializing the engine.");
    assert_eq!(d.cause, Cause::KvCache);
    // 116160 * 3.48 / 4.43 = 91249.8 -> 91248 (multiple of 16)
    assert_eq!(fix(&d, "--max-model-len"), Some("91248"));
}

#[test]
fn vllm_kv_prefers_vllms_own_estimate_and_offers_utilization() {
    let log = "INFO vllm serve m --gpu-memory-utilization 0.85\n\
INFO [gpu_worker.py] Free memory on device (78.84/79.25 GiB) on startup. Desired GPU memory utilization is (0.85, 67.36 GiB).\n\
ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.20 GiB). Based on the available memory, the estimated maximum model length is 75344. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.";
    let d = diagnose(log);
    assert_eq!(d.cause, Cause::KvCache);
    assert_eq!(d.fixes[0].flag, "--max-model-len");
    assert_eq!(d.fixes[0].value, "75344");
    // 0.85 + 6.8 GiB / 79.25 GiB = 0.9358 -> 0.94
    assert_eq!(fix(&d, "--gpu-memory-utilization"), Some("0.94"));
}

#[test]
fn vllm_v0_kv_tokens() {
    let d = diagnose("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (20000). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.");
    assert_eq!(d.cause, Cause::KvCache);
    assert_eq!(fix(&d, "--max-model-len"), Some("20000"));
}

#[test]
fn vllm_no_cache_blocks_with_breakdown_finds_the_utilization() {
    let log = "INFO worker.py:241] the current vLLM instance can use total_gpu_memory (23.65GiB) x gpu_memory_utilization (0.40) = 9.46GiB\n\
INFO worker.py:241] model weights take 14.99GiB; non_torch_memory takes 0.20GiB; PyTorch activation peak memory takes 1.20GiB; the rest of the memory reserved for KV Cache is -6.93GiB.\n\
ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.";
    let d = diagnose(log);
    // 0.90 x 23.65 - 16.39 = 4.9 GiB would be left for KV at the default share: the 0.40 set
    // is what left none (the budget fraction, labelled with other tenants)
    assert_eq!(d.cause, Cause::OtherProcesses);
    // (14.99 + 0.20 + 1.20 + 1) / 23.65 = 0.7353 -> 0.74
    assert_eq!(fix(&d, "--gpu-memory-utilization"), Some("0.74"));
}

#[test]
fn torch_oom_other_tenant_gives_utilization() {
    // format A with our own process named; another process holds 6.1 GiB
    let log = "vllm serve Qwen/Qwen3-8B\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.55 GiB of which 1.02 GiB is free. Process 4412 has 6.10 GiB memory in use. Including non-PyTorch memory, this process has 16.40 GiB memory in use. Of the allocated memory 15.80 GiB is allocated by PyTorch, and 120.00 MiB is reserved by PyTorch but unallocated.";
    let d = diagnose(log);
    assert_eq!(d.cause, Cause::OtherProcesses);
    // (23.55 - 6.10) / 23.55 = 0.741 -> 0.74
    assert_eq!(fix(&d, "--gpu-memory-utilization"), Some("0.74"));
    assert!(d.summary.contains("process 4412"));
}

#[test]
fn torch_oom_fragmentation_when_unallocated_covers_request() {
    let d = diagnose("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.10 GiB is free. Including non-PyTorch memory, this process has 78.04 GiB memory in use. Of the allocated memory 73.90 GiB is allocated by PyTorch, and 3.20 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.");
    assert_eq!(d.cause, Cause::Fragmentation);
    assert_eq!(
        fix(&d, "PYTORCH_CUDA_ALLOC_CONF"),
        Some("expandable_segments:True")
    );
    assert!(d.fixes[0]
        .why
        .contains("3.20 GiB reserved but unallocated >= 2.00 GiB requested"));
}

#[test]
fn torch_hint_with_tiny_unallocated_is_not_fragmentation() {
    // the hint is printed on every OOM; 24 MiB unallocated on 24 GiB is noise
    let d = diagnose("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 3.00 MiB is free. Including non-PyTorch memory, this process has 23.64 GiB memory in use. Of the allocated memory 23.30 GiB is allocated by PyTorch, and 24.85 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.");
    assert_ne!(d.cause, Cause::Fragmentation);
}

#[test]
fn torch_old_formats_read() {
    // format D (torch 1.10-2.0): reserved in total minus allocated is the unallocated cache
    let d = diagnose("RuntimeError: CUDA out of memory. Tried to allocate 1.39 GiB (GPU 0; 6.00 GiB total capacity; 2.04 GiB already allocated; 478.00 MiB free; 3.65 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.");
    assert_eq!(d.cause, Cause::Fragmentation);
    // format F (torch <= 1.4): "cached" is unallocated; 9.28 GiB free >> 12.5 MiB -> not capacity
    let d = diagnose("RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total capacity; 8.57 MiB already allocated; 9.28 GiB free; 4.68 MiB cached)");
    assert_eq!(d.cause, Cause::Unknown);
}

#[test]
fn cuda_graph_capture_phase() {
    let log = "INFO model_runner.py:1413] Capturing cudagraphs for decoding. This may lead to unexpected consequences if the model is not static.\n\
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total capacity of 15.77 GiB of which 12.00 MiB is free. Including non-PyTorch memory, this process has 15.75 GiB memory in use. Of the allocated memory 14.90 GiB is allocated by PyTorch, with 300.00 MiB allocated in private pools (e.g., CUDA Graphs), and 30.00 MiB is reserved by PyTorch but unallocated.";
    let d = diagnose(log);
    assert_eq!(d.cause, Cause::CudaGraphs);
    assert!(fix(&d, "--enforce-eager").is_some());
}

#[test]
fn sampler_warmup_halves_seqs() {
    let d = diagnose("RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.");
    assert_eq!(d.cause, Cause::Concurrency);
    assert_eq!(fix(&d, "--max-num-seqs"), Some("512"));
}

#[test]
fn vllm_free_below_desired() {
    let d = diagnose("ValueError: Free memory on device cuda:0 (10.20/23.55 GiB) on startup is less than desired GPU memory utilization (0.9, 21.20 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.");
    assert_eq!(d.cause, Cause::OtherProcesses);
    assert_eq!(fix(&d, "--gpu-memory-utilization"), Some("0.43"));
}

#[test]
fn llama_kv_failure_computes_context() {
    let log = "llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 4090) - 16000 MiB free\n\
./llama-server -m model.gguf -c 131072 -ngl 99\n\
load_tensors:        CUDA0 model buffer size =  4403.49 MiB\n\
llama_context: n_ctx         = 131072\n\
ggml_backend_cuda_buffer_type_alloc_buffer: allocating 16384.00 MiB on device 0: cudaMalloc failed: out of memory\n\
llama_kv_cache_init: failed to allocate buffer for kv cache\n\
llama_init_from_model: llama_kv_cache_init() failed for self-attention cache";
    let d = diagnose(log);
    assert_eq!(d.cause, Cause::KvCache);
    // 16384 MiB / 131072 cells = 128 KiB per token; (16000 - 4403.49 - 1024) MiB / 128 KiB
    // = 84580 -> 84480 (multiple of 256)
    assert_eq!(fix(&d, "-c"), Some("84480"));
}

#[test]
fn llama_weights_failure_computes_layers() {
    let log = "llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 3060) - 11900 MiB free\n\
llama-cli -m big.gguf -ngl 81\n\
ggml_backend_cuda_buffer_type_alloc_buffer: allocating 40000.00 MiB on device 0: cudaMalloc failed: out of memory\n\
alloc_tensor_range: failed to allocate CUDA0 buffer of size 41943040000\n\
llama_model_load: error loading model: unable to allocate CUDA0 buffer";
    let d = diagnose(log);
    assert_eq!(d.cause, Cause::WeightsDoNotFit);
    // 40000 MiB / 81 layers = 493.8 MiB; (11900 - 1024) / 493.8 = 22
    assert_eq!(fix(&d, "-ngl"), Some("22"));
}

#[test]
fn llama_compute_failure_is_activation() {
    let d = diagnose("llama_new_context_with_model: pipeline parallelism enabled (n_copies=4)\nggml_backend_cuda_buffer_type_alloc_buffer: allocating 144.00 MiB on device 4: cudaMalloc failed: out of memory\nggml_gallocr_reserve_n: failed to allocate CUDA4 buffer of size 150995968\nllama_new_context_with_model: failed to allocate compute buffers");
    assert_eq!(d.cause, Cause::ActivationPeak);
    assert_eq!(fix(&d, "-ub"), Some("256"));
    assert!(d.summary.contains("CUDA4"));
}

#[test]
fn host_memory_family() {
    for log in [
        "[26002.109061] Out of memory: Killed process 576419 (python) total-vm:78521468kB, anon-rss:54398260kB",
        "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137",
        "RuntimeError: [enforce fail at alloc_cpu.cpp:81] data. DefaultCPUAllocator: not enough memory: you tried to allocate 238551040 bytes.",
        "Loading checkpoint shards:  75%|#######5  | 3/4 [00:08<00:02,  2.83s/it]Killed",
        "time=2024-05-01 level=ERROR msg=\"error loading llama server\" error=\"llama runner process has terminated: signal: killed\"",
        // ollama#12634: the CPU buffer is host RAM even though the message is llama.cpp's weights one
        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 437944320\nalloc_tensor_range: failed to allocate CPU buffer of size 437944320\nllama_model_load: error loading model: unable to allocate CPU buffer",
        // /dev/shm is host RAM (a container's 64 MB default): NCCL's segment did not fit
        "Error while creating shared memory segment /dev/shm/nccl-AbCd (size 9637888): No space left on device",
    ] {
        assert_eq!(diagnose(log).cause, Cause::HostMemory, "{log}");
    }
}

#[test]
fn lookalikes_are_not_oom() {
    for log in [
        "RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously reported at some other API call",
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error",
        "RuntimeError: CUDA error: operation not permitted when stream is capturing",
        "Exception: Capture cuda graph failed: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer",
    ] {
        assert_eq!(diagnose(log).cause, Cause::NotOom, "{log}");
    }
}

#[test]
fn oom_outranks_the_nccl_errors_that_follow_it() {
    let log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 100.00 MiB is free. Including non-PyTorch memory, this process has 79.00 GiB memory in use. Of the allocated memory 78.00 GiB is allocated by PyTorch, and 50.00 MiB is reserved by PyTorch but unallocated.\n\
[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited";
    assert_ne!(diagnose(log).cause, Cause::NotOom);
}

#[test]
fn sglang_and_tgi() {
    let d = diagnose("Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 7 has a total capacity of 95.00 GiB of which 200.00 MiB is free.\nPossible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)");
    assert_eq!(d.cause, Cause::CudaGraphs);
    assert_eq!(diagnose("RuntimeError: alloc_req_slots runs out of memory. Please set a smaller number for `--max-running-requests`.").cause, Cause::Concurrency);
    let d = diagnose("Error: Warmup(Generation(\"Not enough memory to handle 8192 prefill tokens. You need to decrease `--max-batch-prefill-tokens`\"))");
    assert_eq!(d.cause, Cause::ActivationPeak);
    assert_eq!(fix(&d, "--max-batch-prefill-tokens"), Some("4096"));
    let d = diagnose("Not enough memory to handle 16000 total tokens with 4096 prefill tokens. You need to decrease `--max-batch-total-tokens` or `--max-batch-prefill-tokens`");
    assert_eq!(d.cause, Cause::KvCache);
}

#[test]
fn mps_and_cuda_malloc_async() {
    assert_eq!(diagnose("RuntimeError: MPS backend out of memory (MPS allocated: 1.45 GB, other allocations: 7.42 GB, max allowed: 9.07 GB). Tried to allocate 563.62 MB on private pool.").cause, Cause::OtherProcesses);
    let d = diagnose("torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently allocated     : 6.08 GiB\nRequested               : 4.83 GiB\nDevice limit            : 22.20 GiB\nFree (according to CUDA): 11.12 MiB\nPyTorch limit (set by user-supplied memory fraction)\n                        : 22.20 GiB");
    assert_eq!(d.cause, Cause::OtherProcesses);
}

#[test]
fn nothing_recognised() {
    assert_eq!(diagnose("hello world").cause, Cause::Unknown);
    assert_eq!(
        diagnose("Traceback (most recent call last):\nKeyError: 'foo'").cause,
        Cause::NotOom
    );
}

#[test]
fn hostile_inputs_stay_bounded() {
    let start = std::time::Instant::now();
    // one 8 MiB line, no newline, that repeats a message prefix
    let big = "CUDA out of memory. Tried to allocate ".repeat(8 * 1024 * 1024 / 38);
    let _ = diagnose(&big);
    // many short lines with the same failure
    let many = "ValueError: No available memory for the cache blocks.\n".repeat(150_000);
    let d = diagnose(&many);
    assert!(d.events.len() <= vramfit_doctor::events::MAX_EVENTS);
    // binary noise
    let noise: String = (0..4_000_000u64)
        .map(|i| char::from_u32(((i * 7919) % 0xD7FF) as u32).unwrap_or(' '))
        .collect();
    let _ = diagnose(&noise);
    assert!(start.elapsed().as_secs() < 60, "took {:?}", start.elapsed());
}

#[test]
fn weights_messages_and_other_backends() {
    // vLLM's load_model message wraps the allocator error on one line (gpu_model_runner.py)
    let d = diagnose("(EngineCore pid=36704) ERROR 04-07 15:58:28 [gpu_model_runner.py:4818] Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using --quantization. (original error: CUDA out of memory. Tried to allocate 112.00 MiB. GPU 0 has a total capacity of 31.36 GiB of which 90.00 MiB is free.)");
    assert_eq!(d.cause, Cause::WeightsDoNotFit);
    assert_eq!(fix(&d, "--tensor-parallel-size"), Some("2"));
    // the same message followed by the traceback's torch error: the phase carries it
    let d = diagnose("ERROR Failed to load model - not enough GPU memory.\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 100.00 MiB. GPU 0 has a total capacity of 23.52 GiB of which 20.00 MiB is free. Including non-PyTorch memory, this process has 23.49 GiB memory in use. Of the allocated memory 23.10 GiB is allocated by PyTorch, and 10.00 MiB is reserved by PyTorch but unallocated.");
    assert_eq!(d.cause, Cause::WeightsDoNotFit);
    // Vulkan and Metal device OOMs are read as device OOMs, not ignored; with no KV or
    // compute line before it, llama.cpp was still allocating weights (real case:
    // ggml-org/llama.cpp#15256, data oom-h2-048)
    let d = diagnose("llama-server -m m.gguf -ngl 40\nggml_vulkan: Device memory allocation of size 1073741824 failed.\nggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory");
    assert_eq!(d.cause, Cause::WeightsDoNotFit);
    assert_eq!(fix(&d, "-ngl"), Some("20"));
    assert!(
        d.summary.contains("Vulkan") || d.summary.contains("llama.cpp"),
        "{}",
        d.summary
    );
    assert_eq!(
        diagnose("NVRM: Xid (PCI:0000:01:00): 79, pid=1234, GPU has fallen off the bus.").cause,
        Cause::NotOom
    );
}

/// An engine model that answers every question with fixed numbers.
struct FixedEngine;

impl vramfit_doctor::FixEngine for FixedEngine {
    fn vllm_max_model_len(&self, s: &vramfit_doctor::EchoedSettings, kv: u64) -> Option<u64> {
        // the failing length is passed as the upper bound
        assert_eq!(s.max_model_len, Some(131072));
        assert_eq!(kv, (9.2 * (1u64 << 30) as f64).round() as u64);
        Some(40960)
    }
    fn llamacpp_max_n_ctx(&self, _: &vramfit_doctor::EchoedSettings, _: u64) -> Option<u64> {
        Some(8192)
    }
    fn llamacpp_max_gpu_layers(&self, _: &vramfit_doctor::EchoedSettings, _: u64) -> Option<u64> {
        Some(20)
    }
}

#[test]
fn engine_models_answer_what_the_log_cannot() {
    let log = "ValueError: To serve at least one request with the models's max seq len (131072), (18.00 GB KV cache is needed, which is larger than the available KV cache memory (9.20 GB).";
    let d = vramfit_doctor::diagnose_with(log, &FixedEngine);
    assert_eq!(fix(&d, "--max-model-len"), Some("40960"));
    assert!(d.fixes[0].why.contains("vLLM KV model"));
    // vLLM's own printed estimate wins over any model
    let printed = format!(
        "{log} Based on the available memory, the estimated maximum model length is 66992."
    );
    let d = vramfit_doctor::diagnose_with(&printed, &FixedEngine);
    assert_eq!(fix(&d, "--max-model-len"), Some("66992"));
}

#[test]
fn recovered_compute_reservation_is_not_a_crash() {
    // llama.cpp PR #26297 thread: the reservation failed, was retried without pipeline
    // parallelism, and the server went on to load
    let log = "E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 51748.72 MiB on device 1: cudaMalloc failed: out of memory\n\
E ggml_gallocr_reserve_n_impl: failed to allocate CUDA1 buffer of size 54262464512\n\
E graph_reserve: failed to allocate compute buffers\n\
W sched_reserve: compute buffer allocation failed, retrying without pipeline parallelism\n\
I srv    load_model: initializing, n_slots = 1, n_ctx_slot = 50176, kv_unified = 'false'";
    assert_eq!(diagnose(log).cause, Cause::NotOom);
    // a failure after the retry still counts
    let failed = format!("{log}\nE graph_reserve: failed to allocate compute buffers");
    assert_eq!(diagnose(&failed).cause, Cause::ActivationPeak);
}

#[test]
fn no_cache_blocks_on_the_versions_with_profiling_fragmentation() {
    let log = "INFO 12-20 10:00:00 llm_engine.py:72] Initializing an LLM engine (v0.2.6) with config: model='meta-llama/Llama-2-70b-hf', tensor_parallel_size=4\n\
ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.";
    assert_eq!(diagnose(log).cause, Cause::Fragmentation);
    // later releases: the budget (the share, or other processes on the device, which V0
    // counts as used) at low confidence
    let later = diagnose(&log.replace("v0.2.6", "v0.6.4"));
    assert_eq!(later.cause, Cause::OtherProcesses);
    assert!(later.basis.fallback && later.confidence <= 0.45);
}
