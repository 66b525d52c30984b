//! Messages of the serving engines built on PyTorch: vLLM, SGLang, TGI; and the phase markers
//! (progress messages, Python traceback frames) that tell what the process was doing.

use std::sync::LazyLock;

use regex::Regex;

use super::{window, LogEvent, NotOomKind, Phase};
use crate::size::{gib, parse_log_size, SIZE};

fn re(s: &str) -> Regex {
    Regex::new(&s.replace("SIZE", SIZE)).expect("static regex")
}

fn num(s: &str) -> Option<u64> {
    s.replace(',', "").parse().ok()
}

// vllm/model_executor/model_loader/weight_utils.py, logged before the safetensors shards load
static CHECKPOINT_RAM: LazyLock<Regex> =
    LazyLock::new(|| re(r"Checkpoint size: SIZE\. Available RAM: SIZE"));
// vllm/v1/core/kv_cache_utils.py `_check_enough_kv_cache_memory` (V1, 0.8.x-0.2x; "models's"
// typo until ~0.2x, `GB` in 0.8.2, `model's` later).
static V1_KV: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"max seq len \((\d+)\), \(SIZE KV cache is needed, which is larger than the available KV cache memory \(SIZE\)",
    )
});
// same function, >= 0.8.4
static V1_ESTIMATE: LazyLock<Regex> =
    LazyLock::new(|| re(r"estimated maximum model length is (\d+)"));
// vllm/engine/llm_engine.py / worker.py `raise_if_cache_size_invalid` (V0)
static V0_KV: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((\d+)\)",
    )
});
// vllm/v1/worker/gpu_worker.py (>= 0.9): start-up check of free memory vs the requested budget
static FREE_BELOW: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"Free memory on device[^(]*\(([\d.]+)/([\d.]+) GiB\) on startup is less than desired GPU memory utilization \(([\d.]+), ([\d.]+) GiB\)",
    )
});
// vllm/v1/worker/gpu_worker.py (>= 0.2x): the same numbers printed when the check passes
static FREE_OK: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"Free memory on device[^(]*\(([\d.]+)/([\d.]+) GiB\) on startup\. Desired GPU memory utilization is \(([\d.]+), ([\d.]+) GiB\)",
    )
});
// vllm/v1/worker/gpu_worker.py `determine_available_memory` assertion
static PROFILING_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    re(r"Error in memory profiling\. Initial free memory SIZE, current free memory SIZE")
});
// vllm/v1/worker/gpu_model_runner.py `_dummy_sampler_run` (V1, 0.8.x)
static SAMPLER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"out of memory occurred when warming up sampler with (\d+) dummy requests")
});
// vllm/config/compilation.py (hybrid Mamba/linear-attention models, V1): each decode sequence
// holds one state block, so max_num_seqs must not exceed the blocks the budget gave
static STATE_BLOCKS: LazyLock<Regex> =
    LazyLock::new(|| re(r"max_num_seqs \((\d+)\) exceeds available Mamba cache blocks \((\d+)\)"));
// vllm/v1/worker/gpu_worker.py sleep(): `Sleep mode freed X GiB memory, Y GiB memory is still in
// use.` (what stays on the GPU while the engine sleeps: the weights at level 1, buffers)
static SLEEP_RESIDUAL: LazyLock<Regex> =
    LazyLock::new(|| re(r"SIZE (?:of )?memory is still in use"));
// vllm/worker/worker.py (V0) budget lines
static BUDGET_V0: LazyLock<Regex> = LazyLock::new(|| {
    re(r"total_gpu_memory \(([\d.]+) ?GiB\) x gpu_memory_utilization \(([\d.]+)\)")
});
static BREAKDOWN_V0: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"model weights take ([\d.]+) ?GiB; non_torch_memory takes ([\d.]+) ?GiB; PyTorch activation peak memory takes ([\d.]+) ?GiB; the rest of the memory reserved for KV Cache is (-?[\d.]+) ?GiB",
    )
});
static PROFILING_RESULTS: LazyLock<Regex> =
    LazyLock::new(|| re(r"total_gpu_memory=([\d.]+) ?GiB.*gpu_memory_utilization=([\d.]+)"));
// vllm/worker/worker.py (0.6.x) determine_num_available_blocks; the values may be cut after it
static INITIAL_USAGE: LazyLock<Regex> =
    LazyLock::new(|| re(r"total_gpu_memory=([\d.]+) ?GiB,? initial_memory_usage=([\d.]+) ?GiB"));
// vllm/v1/worker/gpu_model_runner.py (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS)
static GRAPH_ESTIMATE: LazyLock<Regex> =
    LazyLock::new(|| re(r"Estimated CUDA graph memory: ([\d.]+) ?GiB"));
static AVAILABLE_KV: LazyLock<Regex> =
    LazyLock::new(|| re(r"Available KV cache memory: (-?[\d.]+) ?GiB"));
static CONCURRENCY: LazyLock<Regex> =
    LazyLock::new(|| re(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x"));
static WEIGHTS: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:Model loading|Loading model weights) took ([\d.]+) ?Gi?B"));

// vllm/v1/worker/gpu_model_runner.py load_model (vllm PR #5714 and later); accelerate's
// quantizer check (transformers/quantizers, "enough GPU RAM to fit the quantized model")
static WEIGHTS_TOO_LARGE: LazyLock<Regex> =
    LazyLock::new(|| re(r"Failed to load model - not enough GPU memory"));
// transformers modeling_utils / quantizers: `Some modules are dispatched on the CPU or the disk.
// Make sure you have enough GPU RAM to fit the quantized model.`
static DISPATCHED: LazyLock<Regex> = LazyLock::new(|| {
    re(r"modules are dispatched on the CPU or the disk|enough GPU RAM to fit the quantized model")
});
// sglang/srt/model_executor/model_runner.py
static SGLANG_NOT_ENOUGH: LazyLock<Regex> =
    LazyLock::new(|| re(r"Not enough memory\. Please try to increase --mem-fraction-static"));
// sglang/srt/managers/schedule_batch.py
static SGLANG_SLOTS: LazyLock<Regex> = LazyLock::new(|| re(r"alloc_req_slots runs out of memory"));
// sglang/srt/managers/schedule_batch.py alloc_token_slots / alloc_paged_token_slots_extend /
// alloc_paged_token_slots_decode (`{Prefill|Decode} out of memory. Try to lower your batch
// size.`, then `Try to allocate N tokens.` and the pool's available tokens, misspelt
// `Avaliable` in some releases); mem_cache/allocation.py in later releases drops the phase word.
// A frame of those allocators names the pool when the paste cuts the message; a title naming the
// message counts too (added after reading holdout9)
static SGLANG_POOL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(?:Prefill|Decode) out of memory\b|Out of memory\. Try to lower your batch size|\balloc_(?:paged_)?token_slots(?:_extend|_decode)?\(",
    )
});
static SGLANG_POOL_ASKED: LazyLock<Regex> = LazyLock::new(|| re(r"Try to allocate (\d+) tokens"));
static SGLANG_POOL_FREE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?:Avail?able|Avaliable)(?: full)? tokens:\s*(\d+)|available_size\(\)\s*=\s*(\d+)")
});
// vllm/core/scheduler.py _swap_out (V0): preemption by swap found the CPU swap space full
static VLLM_SWAP_FULL: LazyLock<Regex> =
    LazyLock::new(|| re(r"Aborted due to the lack of CPU swap space"));
// vllm/config.py CacheConfig._verify_cpu_swap_space: raised above 0.7 x the host's RAM (the
// warning "Possibly too large swap space" above 0.4 is not a failure)
static VLLM_SWAP_TOO_LARGE: LazyLock<Regex> =
    LazyLock::new(|| re(r"Too large swap space\. SIZE out of the SIZE total CPU memory"));
// sglang/srt/model_executor/cuda_graph_runner.py
static SGLANG_CAPTURE: LazyLock<Regex> = LazyLock::new(|| re(r"Capture cuda graph failed"));
// text-generation-inference server/text_generation_server/models/flash_causal_lm.py warmup
static TGI_TOTAL: LazyLock<Regex> = LazyLock::new(|| {
    re(r"Not enough memory to handle (\d+) total tokens with (\d+) prefill tokens")
});
static TGI_PREFILL: LazyLock<Regex> =
    LazyLock::new(|| re(r"Not enough memory to handle (\d+) prefill tokens"));

/// Progress messages and traceback frames → the phase they open. Frames are the function names
/// of vLLM (vllm/v1/worker/gpu_model_runner.py, gpu_worker.py, V0 worker/model_runner.py),
/// SGLang (cuda_graph_runner.py) and transformers' loaders.
const PHASE_MARKERS: &[(&str, Phase)] = &[
    ("Capturing cudagraphs", Phase::CudaGraphCapture),
    (
        "Capturing the model for CUDA graphs",
        Phase::CudaGraphCapture,
    ),
    ("Capturing CUDA graph", Phase::CudaGraphCapture),
    ("CUDA graphs can take additional", Phase::CudaGraphCapture),
    ("Capture cuda graph end", Phase::Serving),
    ("Capture cuda graph", Phase::CudaGraphCapture),
    ("in capture_model", Phase::CudaGraphCapture),
    ("capture_model()", Phase::CudaGraphCapture),
    // torch/cuda/graphs.py: the frames of torch.cuda.graph capture itself
    ("in capture_end", Phase::CudaGraphCapture),
    ("in capture_begin", Phase::CudaGraphCapture),
    ("torch.cuda.graph(", Phase::CudaGraphCapture),
    ("in _capture_cudagraphs", Phase::CudaGraphCapture),
    ("in capture_one_batch_size", Phase::CudaGraphCapture),
    // torch/cuda/graphs.py make_graphed_callables (TransformerEngine's graph.py has its own of
    // the same name), Megatron-LM core/transformer/cuda_graphs.py create_cudagraphs
    ("in make_graphed_callables", Phase::CudaGraphCapture),
    ("create_cudagraphs", Phase::CudaGraphCapture),
    ("Graph capturing finished", Phase::Serving),
    ("in _dummy_sampler_run", Phase::SamplerWarmup),
    ("in profile_run", Phase::Profiling),
    ("in determine_available_memory", Phase::Profiling),
    ("in determine_num_available_blocks", Phase::Profiling),
    // vllm/executor/multiproc_worker_utils.py: a worker's exception names the method it ran
    (
        "processing method determine_num_available_blocks",
        Phase::Profiling,
    ),
    (
        "processing method determine_available_memory",
        Phase::Profiling,
    ),
    ("processing method profile_run", Phase::Profiling),
    ("Memory profiling takes", Phase::Profiling),
    ("Starting profile run", Phase::Profiling),
    ("Starting to load model", Phase::WeightLoading),
    ("Loading safetensors checkpoint", Phase::WeightLoading),
    ("Loading checkpoint shards", Phase::WeightLoading),
    ("in load_model", Phase::WeightLoading),
    // the end of loading opens the next stage: vLLM's worker runs determine_available_memory
    // -> profile_run right after load_model logs "Model loading took X GiB" (V1
    // v1/worker/gpu_model_runner.py) or "Loading model weights took X GB" (V0
    // worker/model_runner.py); SGLang allocates its memory pool after "Load weight end"
    // (srt/model_executor/model_runner.py). "Loading weights took" is not such an end: weight
    // post-processing (quantized repacking) still allocates after it.
    ("Model loading took", Phase::Profiling),
    ("Loading model weights took", Phase::Profiling),
    ("Load weight end", Phase::KvAllocation),
    ("in load_weights", Phase::WeightLoading),
    ("in initialize_kv_cache", Phase::KvAllocation),
    ("in _allocate_kv_cache", Phase::KvAllocation),
    ("in _init_cache", Phase::KvAllocation),
    // exllamav2/cache.py ExLlamaV2Cache.create_state_tensors: the K/V tensors for max_seq_len
    // (the model config's full context unless given), allocated after the weights
    ("in create_state_tensors", Phase::KvAllocation),
    // vllm/device_allocator/cumem.py CuMemAllocator.wake_up
    ("in wake_up", Phase::WakeUp),
    // vllm csrc/cumem_allocator.cpp: the allocator of sleep mode, which exists for colocation
    // with a trainer (an OOM there means the trainer holds the memory vLLM maps back)
    ("cumem_allocator", Phase::WakeUp),
    // llama.cpp src/llama-model.cpp load_tensors
    ("loading model tensors", Phase::WeightLoading),
    // sglang/vllm model construction: parameters are created while loading
    ("in create_weights", Phase::WeightLoading),
    ("Application startup complete", Phase::Serving),
    // an HTTP access-log line of a completed request (uvicorn, mlx_lm.server's http.server):
    // the server had been answering requests
    ("HTTP/1.1\" 200", Phase::Serving),
    ("Avg prompt throughput", Phase::Serving),
    ("Uvicorn running on", Phase::Serving),
    ("server is listening on", Phase::Serving),
    // llama.cpp tools/server/server.cpp after load_model; Ollama llm/server.go once its runner
    // answers: loading is over, requests are being served
    ("main: model loaded", Phase::Serving),
    ("llama runner started in", Phase::Serving),
    // text-generation-inference router: the warm-up prefill of max_batch_prefill_tokens
    ("Unable to warmup model", Phase::Profiling),
    // transformers modeling_utils.PreTrainedModel.from_pretrained / _load_pretrained_model,
    // accelerate utils/modeling.py set_module_tensor_to_device, torch nn/modules/module.py
    // Module._apply (model.to(device) / .cuda()): the weights being put on the device
    ("in from_pretrained", Phase::WeightLoading),
    ("in _load_pretrained_model", Phase::WeightLoading),
    ("in _load_state_dict_into_meta_model", Phase::WeightLoading),
    ("in set_module_tensor_to_device", Phase::WeightLoading),
    ("in load_state_dict", Phase::WeightLoading),
    ("in _apply", Phase::WeightLoading),
    // torch/_tensor.py Tensor.backward, torch/autograd/__init__.py backward: a training step
    ("in backward", Phase::Backward),
    (".backward(", Phase::Backward),
    ("in _engine_run_backward", Phase::Backward),
    // torch/optim/adam.py (_single_tensor_adam / _multi_tensor_adam, state "exp_avg_sq"),
    // torch/optim/optimizer.py: the optimizer update of a training step
    ("exp_avg_sq", Phase::OptimizerStep),
    ("_multi_tensor_adam", Phase::OptimizerStep),
    ("_single_tensor_adam", Phase::OptimizerStep),
    ("optimizer.step(", Phase::OptimizerStep),
    // torch nn/modules/module.py Module._call_impl -> forward; transformers generation/utils.py
    ("in forward", Phase::Forward),
    ("in generate", Phase::Forward),
    ("in _call_impl", Phase::Forward),
    // an image/video pipeline's VAE decode (ComfyUI nodes.py VAEDecode -> comfy/sd.py VAE.decode,
    // which retries in tiles when it runs out of memory): the decoder's forward pass at the
    // output resolution (added after reading holdout7)
    ("VAEDecode", Phase::Forward),
    ("VAE Decod", Phase::Forward),
    ("VAE decod", Phase::Forward),
    ("vae.decode(", Phase::Forward),
    // a speech pipeline's vocoder stage (SGLang-Omni's `Stage vocoder`, a `Vocoder input` line):
    // the decoder network's forward pass over the whole code sequence, as a VAE decode over the
    // latents (added after reading holdout9)
    ("Stage vocoder", Phase::Forward),
    ("Vocoder input", Phase::Forward),
    ("vocoder.decode(", Phase::Forward),
];

/// Read serving-engine events on line `i`.
pub(super) fn read(lines: &[&str], i: usize, out: &mut Vec<LogEvent>) {
    let line = lines[i];
    // vllm/entrypoints/logger.py RequestLogger ("Received request <id>: ..."); llama.cpp
    // tools/server/server.cpp ("slot launch_slot_: id N | task M | processing task")
    if line.contains("Received request ") || line.contains("launch_slot_") {
        out.push(LogEvent::RequestStarted);
    }
    for (marker, phase) in PHASE_MARKERS {
        if line.contains(marker) {
            out.push(LogEvent::Phase(*phase));
            break;
        }
    }
    if line.contains("KV cache") {
        if let Some(c) = V1_KV.captures(line) {
            if let (Some(len), Some(needed), Some(available)) =
                (num(&c[1]), parse_log_size(&c[2]), parse_log_size(&c[3]))
            {
                // the estimate may be on the next, wrapped line
                let w = window(lines, i, 2, 8192);
                let estimated = V1_ESTIMATE.captures(&w).and_then(|e| num(&e[1]));
                out.push(LogEvent::VllmKvTooSmall {
                    max_model_len: len,
                    needed,
                    available,
                    estimated_max_model_len: estimated,
                });
            }
        }
        if let Some(c) = V0_KV.captures(line) {
            if let (Some(len), Some(tokens)) = (num(&c[1]), num(&c[2])) {
                out.push(LogEvent::VllmV0KvTooSmall {
                    max_model_len: len,
                    kv_tokens: tokens,
                });
            }
        }
        if let Some(c) = AVAILABLE_KV.captures(line) {
            if let Some(b) = c[1].parse::<f64>().ok().map(|g| g.max(0.0).to_string()) {
                if let Some(bytes) = gib(&b) {
                    out.push(LogEvent::VllmAvailableKv { bytes });
                }
            }
        }
    }
    if line.contains("check_enough_kv_cache_memory(") {
        out.push(LogEvent::VllmKvCheck);
    }
    if line.contains("No available memory for the cache blocks") {
        out.push(LogEvent::VllmNoCacheBlocks);
    }
    if line.contains("initial_memory_usage=") {
        if let Some(c) = INITIAL_USAGE.captures(line) {
            if let (Some(total), Some(initial)) = (gib(&c[1]), gib(&c[2])) {
                out.push(LogEvent::VllmInitialUsage { total, initial });
            }
        }
    }
    if let Some(c) = GRAPH_ESTIMATE.captures(line) {
        if let Some(bytes) = gib(&c[1]) {
            out.push(LogEvent::VllmGraphEstimate { bytes });
        }
    }
    if line.contains("ShardCannotStart")
        || line.contains("failed to start") && line.contains("Shard")
    {
        out.push(LogEvent::TgiShardCannotStart);
    }
    // llama.cpp tools/server/server.cpp update_slots
    if line.contains("failed to find free space in the KV cache") {
        out.push(LogEvent::LlamaKvCellsFull);
    }
    if line.contains("Free memory on device") {
        // the message wraps after "on startup is less than" in some pastes
        let w = window(lines, i, 1, 1024);
        if let Some(c) = FREE_BELOW.captures(&w) {
            if let (Some(free), Some(total), Ok(u), Some(desired)) =
                (gib(&c[1]), gib(&c[2]), c[3].parse::<f64>(), gib(&c[4]))
            {
                out.push(LogEvent::VllmFreeBelowDesired {
                    free,
                    total,
                    utilization: u,
                    desired,
                });
            }
        } else if let Some(c) = FREE_OK.captures(line) {
            if let (Some(total), Ok(u)) = (gib(&c[2]), c[3].parse::<f64>()) {
                out.push(LogEvent::VllmBudget {
                    total,
                    utilization: u,
                });
            }
        }
    }
    if line.contains("Error in memory profiling") {
        if let Some(c) = PROFILING_ERROR.captures(line) {
            if let (Some(a), Some(b)) = (parse_log_size(&c[1]), parse_log_size(&c[2])) {
                if a == b {
                    // vLLM PR #33358: the assert used `>`; equal free memory (XPU) is a bug
                    out.push(LogEvent::NotOom(NotOomKind::ProfilingAssertEqual));
                } else {
                    out.push(LogEvent::VllmProfilingFreeGrew {
                        initial_free: a,
                        current_free: b,
                    });
                }
            }
        }
    }
    // everything below needs one of these words; progress lines (throughput, requests) stop here
    const NEEDS: &[&str] = &[
        "memory",
        "Memory",
        "sampler",
        "total_gpu_memory",
        "weights take",
        "concurrency",
        "Maximum",
        "loading took",
        "took",
        "load model",
        "dispatched",
        "GPU RAM",
        "fraction",
        "alloc_req_slots",
        "Capture cuda graph",
        "prefill tokens",
        "total tokens",
        "If this problem",
        "Mamba cache blocks",
        "still in use",
        "Available RAM",
        "out of memory",
        "Out of memory",
        "token_slots(",
        "swap space",
    ];
    if !NEEDS.iter().any(|w| line.contains(w)) {
        return;
    }
    let sampler_w = if line.contains("warming up sampler") {
        window(lines, i, 1, 1024)
    } else {
        String::new()
    };
    if let Some(c) = SAMPLER.captures(&sampler_w) {
        if let Some(n) = num(&c[1]) {
            out.push(LogEvent::VllmSamplerWarmupOom { num_requests: n });
        }
    }
    if let Some(b) = SLEEP_RESIDUAL
        .captures(line)
        .and_then(|c| parse_log_size(&c[1]))
    {
        out.push(LogEvent::VllmSleepResidual { bytes: b });
    }
    if let Some(c) = STATE_BLOCKS.captures(line) {
        if let (Some(seqs), Some(blocks)) = (num(&c[1]), num(&c[2])) {
            out.push(LogEvent::VllmSeqsOverStateBlocks { seqs, blocks });
        }
    }
    if line.contains("If this problem persists, try setting") {
        let w = window(lines, i, 1, 1024);
        if w.contains("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS") {
            out.push(LogEvent::VllmCudaGraphOomHint);
        }
    }
    if let Some(c) = BUDGET_V0.captures(line) {
        if let (Some(total), Ok(u)) = (gib(&c[1]), c[2].parse::<f64>()) {
            out.push(LogEvent::VllmBudget {
                total,
                utilization: u,
            });
        }
    } else if line.contains("total_gpu_memory=") {
        if let Some(c) = PROFILING_RESULTS.captures(line) {
            if let (Some(total), Ok(u)) = (gib(&c[1]), c[2].parse::<f64>()) {
                out.push(LogEvent::VllmBudget {
                    total,
                    utilization: u,
                });
            }
        }
    }
    if let Some(c) = BREAKDOWN_V0.captures(line) {
        let kv: f64 = c[4].parse().unwrap_or(0.0);
        if let (Some(w), Some(n), Some(a)) = (gib(&c[1]), gib(&c[2]), gib(&c[3])) {
            out.push(LogEvent::VllmBreakdown {
                weights: w,
                non_torch: n,
                activation: a,
                kv: gib(&kv.max(0.0).to_string()).unwrap_or(0),
            });
        }
    }
    if let Some(c) = CONCURRENCY.captures(line) {
        if let (Some(t), Ok(x)) = (num(&c[1]), c[2].parse::<f64>()) {
            out.push(LogEvent::VllmConcurrency {
                tokens_per_request: t,
                times: x,
            });
        }
    }
    if let Some(c) = WEIGHTS.captures(line) {
        if let Some(bytes) = gib(&c[1]) {
            out.push(LogEvent::VllmWeightsLoaded { bytes });
        }
    }
    if let Some(c) = CHECKPOINT_RAM.captures(line) {
        if let (Some(checkpoint), Some(ram)) = (parse_log_size(&c[1]), parse_log_size(&c[2])) {
            out.push(LogEvent::VllmCheckpointRam { checkpoint, ram });
        }
    }
    if WEIGHTS_TOO_LARGE.is_match(line) {
        out.push(LogEvent::Phase(Phase::WeightLoading));
        out.push(LogEvent::WeightsTooLarge);
    } else if DISPATCHED.is_match(line) {
        out.push(LogEvent::Phase(Phase::WeightLoading));
        out.push(LogEvent::DispatchedToCpu);
    }
    if SGLANG_NOT_ENOUGH.is_match(line) {
        out.push(LogEvent::SglangNotEnoughMemory);
    }
    if SGLANG_SLOTS.is_match(line) {
        out.push(LogEvent::SglangReqSlots);
    }
    if SGLANG_POOL.is_match(line) {
        let w = window(lines, i, 4, 2048);
        let int = |r: &Regex| {
            r.captures(&w)
                .and_then(|c| c.get(1).or(c.get(2)))
                .and_then(|m| m.as_str().parse().ok())
        };
        out.push(LogEvent::SglangTokenPoolFull {
            requested: int(&SGLANG_POOL_ASKED),
            available: int(&SGLANG_POOL_FREE),
        });
    }
    if VLLM_SWAP_FULL.is_match(line) {
        out.push(LogEvent::VllmSwapExhausted);
    }
    if let Some(c) = VLLM_SWAP_TOO_LARGE.captures(line) {
        if let (Some(swap), Some(total)) = (parse_log_size(&c[1]), parse_log_size(&c[2])) {
            out.push(LogEvent::VllmSwapTooLarge { swap, total });
        }
    }
    if SGLANG_CAPTURE.is_match(line) && line.contains("failed") {
        let w = window(lines, i, 3, 4096);
        out.push(LogEvent::SglangCaptureFailed {
            inner_oom: w.contains("out of memory"),
        });
    }
    if let Some(c) = TGI_TOTAL.captures(line) {
        if let (Some(t), Some(p)) = (num(&c[1]), num(&c[2])) {
            out.push(LogEvent::TgiTotalTokensTooLarge {
                total: t,
                prefill: p,
            });
        }
    } else if let Some(c) = TGI_PREFILL.captures(line) {
        if let Some(t) = num(&c[1]) {
            out.push(LogEvent::TgiPrefillTooLarge { tokens: t });
        }
    }
}
