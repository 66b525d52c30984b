//! The phase read from a traceback's frames decides a bare OOM, and an out-of-memory failure no
//! reader knows is decided from the phase and the engine instead of "unknown". Inputs are real
//! tracebacks from public issues (each names its source).

use vramfit_doctor::classify::basis::When;
use vramfit_doctor::{diagnose, Cause};

#[test]
fn bare_oom_in_backward_is_the_activation_peak() {
    // pytorch/pytorch#18313 (GTX 1080 Ti; "the memory needed for the backward pass")
    let d = diagnose(
        r#"Traceback (most recent call last):
  File "info.py", line 409, in <module>
    loss.backward()
  File "/home/xyz/anaconda3/envs/ml_torch/lib/python3.7/site-packages/torch/tensor.py", line 93, in backward
    torch.autograd.backward(self, gradient, retain_graph, create_graph)
  File "/home/xyz/anaconda3/envs/ml_torch/lib/python3.7/site-packages/torch/autograd/__init__.py", line 90, in backward
    allow_unreachable=True)  # allow_unreachable flag
RuntimeError: CUDA error: out of memory"#,
    );
    assert_eq!(d.cause, Cause::ActivationPeak, "{}", d.summary);
    assert_eq!(d.basis.when, When::Compute);
    assert!(!d.basis.fallback);
    assert!(d.evidence.iter().any(|e| e.contains("backward")));
}

#[test]
fn cudnn_workspace_failure_is_an_oom() {
    // clcarwin/convert_torch_to_pytorch#10: "insufficient memory due to large batch size"
    let d = diagnose(
        r#"File "/opt/anaconda3/lib/python3.6/site-packages/torch/autograd/variable.py", line 146, in backward
    self._execution_engine.run_backward((self,), (gradient,), retain_variables)
RuntimeError: CUDNN_STATUS_ALLOC_FAILED"#,
    );
    assert_eq!(d.cause, Cause::ActivationPeak, "{}", d.summary);
}

#[test]
fn loading_progress_then_generate_is_the_forward_pass() {
    // a transformers script: the checkpoint loaded (progress line), then generate() failed in
    // the model's forward; the loading line must not decide (frame names of transformers 4.40 and torch
    // 2.3; paths and line numbers illustrative)
    let d = diagnose(
        r#"Loading checkpoint shards: 100%|██████████| 4/4 [00:05<00:00,  1.31s/it]
Traceback (most recent call last):
  File "/app/run.py", line 31, in <module>
    out = model.generate(**inputs, max_new_tokens=512)
  File "/usr/local/lib/python3.10/site-packages/transformers/generation/utils.py", line 1622, in generate
    result = self._sample(
  File "/usr/local/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1541, in _call_impl
    return forward_call(*args, **kwargs)
  File "/usr/local/lib/python3.10/site-packages/transformers/models/llama/modeling_llama.py", line 1174, in forward
    logits = logits.float()
RuntimeError: CUDA error: out of memory"#,
    );
    assert_eq!(d.basis.when, When::Compute, "{:?}", d.basis);
    assert_eq!(d.cause, Cause::ActivationPeak, "{}", d.summary);
}

#[test]
fn an_engine_stage_outranks_the_forward_frame_inside_it() {
    // vLLM V0 worker: profile_run -> ... -> forward (frame names of vllm/worker/worker.py and
    // model_runner.py 0.6.x; line numbers illustrative)
    let d = diagnose(
        r#"  File "/usr/local/lib/python3.12/dist-packages/vllm/worker/worker.py", line 223, in determine_num_available_blocks
    self.model_runner.profile_run()
  File "/usr/local/lib/python3.12/dist-packages/vllm/worker/model_runner.py", line 1331, in profile_run
    self.execute_model(model_input, kv_caches, intermediate_tensors)
  File "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py", line 1747, in _call_impl
    return forward_call(*args, **kwargs)
  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/llama.py", line 566, in forward
    model_output = self.model(input_ids, positions, kv_caches,
RuntimeError: CUDA error: out of memory"#,
    );
    assert_eq!(d.basis.when, When::Warmup, "{:?}", d.basis);
    assert_eq!(d.cause, Cause::ActivationPeak, "{}", d.summary);
}

#[test]
fn an_unknown_oom_format_is_decided_not_unknown() {
    // JAX/XLA's allocator message (google/jax issues): no reader knows it, but it is an OOM
    let d = diagnose("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.");
    assert_ne!(d.cause, Cause::Unknown, "{}", d.summary);
    assert_ne!(d.cause, Cause::NotOom, "{}", d.summary);
    assert!(d.confidence <= 0.35, "{}", d.confidence);
    assert!(d.basis.fallback);
}

#[test]
fn metal_per_buffer_limits_are_lookalikes() {
    // Blaizzy/mlx-vlm generate_step (mlx/backend/metal/allocator.cpp's message), and PyTorch
    // MPS's maxBufferLength check (aten/src/ATen/mps/MPSAllocator.mm)
    for log in [
        "RuntimeError: [metal::malloc] Attempting to allocate 135383101952 bytes which is greater than the maximum allowed buffer size of 86586540032 bytes.",
        "RuntimeError: Invalid buffer size: 7.63 GB",
    ] {
        let d = diagnose(log);
        assert_eq!(d.cause, Cause::NotOom, "{log}: {}", d.summary);
        assert!(d.summary.contains("per-buffer limit"), "{}", d.summary);
    }
}

#[test]
fn the_end_of_loading_opens_the_profiling_run() {
    // vLLM 0.31 start-up lines (dev set vllm-log-005), then an OOM before any later stage line:
    // vLLM runs its profiling pass right after "Model loading took"; the weights are loaded
    let d = diagnose(
        r#"(EngineCore pid=326) INFO 10-06 17:00:10 [default_loader.py:484] Loading weights took 0.87 seconds
(EngineCore pid=326) INFO 10-06 17:00:11 [model_runner.py:407] Model loading took 15.0 GiB memory and 5.420225 seconds
(EngineCore pid=326) ERROR 10-06 17:00:14 [core.py:708] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 79.25 GiB of which 1.02 GiB is free."#,
    );
    assert_eq!(d.basis.when, When::Warmup, "{:?}", d.basis);
    assert_ne!(d.cause, Cause::WeightsDoNotFit, "{}", d.summary);
}

#[test]
fn an_oom_after_ollamas_runner_started_is_not_the_load() {
    // Ollama's own lines (llm/server.go "llama runner started in", ggml-cuda's cudaMalloc
    // failure); the runner answered, so the failure came with a request, not at load
    let d = diagnose(
        r#"time=2024-11-08T01:14:14.096+05:30 level=INFO source=server.go:626 msg="llama runner started in 2.52 seconds"
[GIN] 2024/11/08 - 01:14:20 | 200 |  6.1s | 127.0.0.1 | POST "/api/chat"
ggml_backend_cuda_buffer_type_alloc_buffer: allocating 1024.00 MiB on device 0: cudaMalloc failed: out of memory"#,
    );
    assert_eq!(d.basis.when, When::Steady, "{:?}", d.basis);
    assert_ne!(d.cause, Cause::WeightsDoNotFit, "{}", d.summary);
}

#[test]
fn the_first_request_is_its_prefill_and_later_ones_are_serving() {
    // vLLM's own lines (api_server start-up, entrypoints/logger.py's request log, the torch
    // OOM of the engine core); numbers illustrative
    let start = "INFO 05-10 12:00:00 [api_server.py:1024] Starting vLLM API server on http://0.0.0.0:8000\nINFO:     Application startup complete.\n";
    let req = "INFO 05-10 12:01:00 [logger.py:39] Received request chatcmpl-7f2: prompt: '<|im_start|>user ...', params: SamplingParams(n=1, max_tokens=2048)\n";
    let oom = "ERROR 05-10 12:01:01 [core.py:398] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB.";
    let first = diagnose(&format!("{start}{req}{oom}"));
    assert_eq!(first.basis.when, When::Compute, "{:?}", first.basis);
    assert_eq!(first.cause, Cause::ActivationPeak, "{}", first.summary);
    let tput = "INFO 05-10 12:01:30 [loggers.py:116] Avg prompt throughput: 812.4 tokens/s, Avg generation throughput: 95.0 tokens/s, Running: 12 reqs\n";
    let later = diagnose(&format!("{start}{req}{tput}{req}{oom}"));
    assert_eq!(later.basis.when, When::Steady, "{:?}", later.basis);
    assert_eq!(later.cause, Cause::Concurrency, "{}", later.summary);
}

#[test]
fn exact_other_tenants_outrank_the_loading_phase() {
    // torch >= 2.2 message (c10 reportProcessMemoryInfo) in a container, where the other
    // processes are not listed; frames of transformers' from_pretrained (numbers illustrative):
    // 23.65 - 9.10 - 0.02 = 14.5 GiB is held by another tenant, more than a quarter of the GPU
    let d = diagnose(
        r#"  File "/usr/local/lib/python3.10/site-packages/transformers/modeling_utils.py", line 3531, in from_pretrained
    ) = cls._load_pretrained_model(
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 20.06 MiB is free. Including non-PyTorch memory, this process has 9.10 GiB memory in use. Of the allocated memory 8.61 GiB is allocated by PyTorch, and 41.52 MiB is reserved by PyTorch but unallocated."#,
    );
    assert_eq!(d.basis.when, When::Load, "{:?}", d.basis);
    assert_eq!(d.cause, Cause::OtherProcesses, "{}", d.summary);
}

#[test]
fn llama_cpp_rules_speak_ollama_in_an_ollama_log() {
    // Ollama's "starting llama server" line (llm/server.go) with its runner's ggml messages;
    // the KV rule's llama.cpp flags come out as Ollama's options and variables
    let d = diagnose(
        r#"time=2024-05-01T10:00:00Z level=INFO source=server.go:320 msg="starting llama server" cmd="/usr/lib/ollama/runners/cuda_v12/ollama_llama_server --model /root/.ollama/models/blobs/sha256-x --ctx-size 32768 --batch-size 512 --n-gpu-layers 33 --parallel 4 --port 40000"
ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4096.00 MiB on device 0: cudaMalloc failed: out of memory
llama_kv_cache_init: failed to allocate buffer for kv cache"#,
    );
    assert_eq!(d.cause, Cause::KvCache, "{}", d.summary);
    let flags: Vec<&str> = d.fixes.iter().map(|f| f.flag.as_str()).collect();
    assert!(flags.contains(&"num_ctx"), "{flags:?}");
    assert!(flags.contains(&"OLLAMA_KV_CACHE_TYPE"), "{flags:?}");
    assert!(flags.iter().all(|f| !f.starts_with('-')), "{flags:?}");
}
