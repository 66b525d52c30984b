//! The mechanisms of session 8, read from holdout7's misses, each on the real reports it was
//! read from (tests/fixtures, by id) and on a variant that must not trigger it.
//! docs/accuracy-doctor.md lists, for each, the reports it changed in every set.

#[path = "support/cases.rs"]
mod cases;

use cases::{cause, excerpt, flag};
use vramfit_doctor::{diagnose, Cause};

#[test]
fn ggml_vmm_pool_failures_are_address_space() {
    // holdout7 (ggml's HIP abort) and holdout6 (a person naming the CUDA VMM build)
    for id in ["llamacpp-11405", "koboldcpp-rocm-105", "llama.cpp-4680"] {
        assert_eq!(cause(&excerpt(id)), Cause::NotOom, "{id}");
    }
    // the device line every VMM build prints at start is no failure
    let log = "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 3060, compute capability 8.6, VMM: yes\nggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000.00 MiB on device 0: cudaMalloc failed: out of memory";
    assert_ne!(cause(log), Cause::NotOom);
}

#[test]
fn on_chip_memory_and_buffer_counts_are_lookalikes() {
    for id in ["vllm-8318", "sglang-2384", "mlx-openai-server-188"] {
        assert_eq!(cause(&excerpt(id)), Cause::NotOom, "{id}");
    }
    // XLA running out of the TPU's HBM is a real OOM
    let hbm = "RuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 17.2G of 15.75G hbm. Exceeded hbm capacity by 1.45G.";
    assert_ne!(cause(hbm), Cause::NotOom);
    // MLX's byte-sized refusal is not the count
    let bytes = "RuntimeError: [metal::malloc] Attempting to allocate 40000000000 bytes which is greater than the maximum allowed buffer size of 28991029248 bytes.";
    assert_eq!(cause(bytes), Cause::NotOom);
}

#[test]
fn pytorch_hint_wrapped_is_not_a_sentence() {
    // 15.71 of 15.98 GiB allocated for a 22 MiB request: the weights, not fragmentation
    let log = excerpt("gptq-for-llama-rocm-3");
    assert_eq!(cause(&log), Cause::WeightsDoNotFit);
    // a person's own sentence about fragmentation still waives the noise floor
    let said = format!("{log}\nThe memory fragments badly after a few batches.");
    assert_eq!(cause(&said), Cause::Fragmentation);
}

#[test]
fn message_split_by_a_log_column_is_read() {
    let log = excerpt("infinity-483");
    let d = diagnose(&log);
    assert_eq!(d.cause, Cause::OtherProcesses, "{}", d.summary);
    assert!(d.summary.contains("37.5"), "{}", d.summary);
    // the same message with the other tenant gone: this process is the only one
    let alone = log.replace(
        "Process 248104 has 37.55 GiB memory in",
        "Process 248104 has 0.55 GiB memory in",
    );
    assert_ne!(cause(&alone), Cause::OtherProcesses);
}

#[test]
fn mmap_of_a_checkpoint_is_host_memory() {
    assert_eq!(cause(&excerpt("exllama-245")), Cause::HostMemory);
    assert_eq!(cause(&excerpt("vllm-759")), Cause::HostMemory);
    // a file problem (ENODEV) is not memory
    let enodev = "RuntimeError: unable to mmap 33484977464 bytes from file </models/x.safetensors>: No such device (19)";
    assert_ne!(cause(enodev), Cause::HostMemory);
}

#[test]
fn vae_decode_is_an_activation() {
    for id in ["comfyui-tangoflux-8", "comfyui-pr-5427"] {
        assert_eq!(cause(&excerpt(id)), Cause::ActivationPeak, "{id}");
    }
    // the same DirectML failure while the model is loaded onto the device
    let load = excerpt("comfyui-pr-5427")
        .replace("VAEDecode", "CheckpointLoaderSimple")
        .replace(
            "images = vae.decode(samples[\"samples\"])",
            "model = load_checkpoint(ckpt_path)",
        );
    assert_ne!(cause(&load), Cause::ActivationPeak);
}

#[test]
fn system_oom_kill_is_host_memory() {
    let log = excerpt("rwkv-runner-185");
    assert_eq!(cause(&log), Cause::HostMemory);
    // the same report whose title says the GPU ran out instead
    let gpu = log.replace(
        "the process was killed by the system OOM",
        "the GPU ran out of memory",
    );
    assert_ne!(cause(&gpu), Cause::HostMemory);
}

#[test]
fn vllm_full_share_is_the_budget() {
    for id in ["vllm-1298", "vllm-ascend-89"] {
        let d = diagnose(&excerpt(id));
        assert_eq!(d.cause, Cause::OtherProcesses, "{id}: {}", d.summary);
        assert_eq!(flag(&d, "--gpu-memory-utilization"), Some("0.90"), "{id}");
    }
    // the same report at the default share falls back to the requests in flight
    let log = excerpt("vllm-1298").replace("set to 1.0", "set to 0.85");
    assert_eq!(cause(&log), Cause::Concurrency);
}

#[test]
fn auto_device_map_without_max_memory_is_the_weights() {
    let log = excerpt("accelerate-473");
    let d = diagnose(&log);
    assert_eq!(d.cause, Cause::WeightsDoNotFit, "{}", d.summary);
    assert!(d.confidence <= 0.45);
    // with max_memory the map leaves room: the fallback again
    let capped = log.replace(
        "device_map=\"auto\",",
        "device_map=\"auto\", max_memory={0: \"60GiB\"},",
    );
    assert_ne!(cause(&capped), Cause::WeightsDoNotFit);
}

#[test]
fn vllm_start_failures_read_from_their_own_lines() {
    // the checkpoint larger than the host RAM the loader reports, then the start failure
    let log = excerpt("qwen38-27b-rtx3090-39");
    let d = diagnose(&log);
    assert_eq!(d.cause, Cause::HostMemory, "{}", d.summary);
    assert_eq!(flag(&d, "--load-format"), Some("runai_streamer"));
    // the same start with RAM to spare is no host failure
    let roomy = log.replace("Available RAM: 10.07 GiB", "Available RAM: 60.07 GiB");
    assert_ne!(cause(&roomy), Cause::HostMemory);
    // a ValueError in the engine process at start with a 131072-token context: its KV cache
    let log = excerpt("verl-5015");
    let d = diagnose(&log);
    assert_eq!(d.cause, Cause::KvCache, "{}", d.summary);
    assert_eq!(flag(&d, "--max-model-len"), Some("32768"));
    let short = log.replace("'131072'", "'4096'");
    assert_ne!(cause(&short), Cause::KvCache);
}
