//! The mechanisms of session 9, read from holdout8's misses, each on the real reports it was
//! read from (tests/fixtures, by id) and on a variant that must not trigger it.
//! docs/accuracy-doctor.md lists, for each, the reports it changed in every set.

#[path = "support/cases.rs"]
mod cases;

use cases::{cause, excerpt};
use vramfit_doctor::{diagnose, Cause};

#[test]
fn vllm_kv_check_frame_after_a_positive_budget_is_the_context() {
    let log = excerpt("vllm-27508");
    assert_eq!(cause(&log), Cause::KvCache);
    // with no KV budget printed, the frame alone may be the zero-budget raise: not decided here
    let no_budget = log.replace("Available KV cache memory: 1.71 GiB", "Model loaded");
    assert_ne!(cause(&no_budget), Cause::KvCache);
}

#[test]
fn vmm_handles_at_the_descriptor_limit_are_lookalikes() {
    for id in ["rocm-6661", "rocm-systems-10604"] {
        assert_eq!(cause(&excerpt(id)), Cause::NotOom, "{id}");
    }
    // the same call failing with no descriptor limit named is an OOM
    assert_ne!(cause("hipMemCreate: out of memory"), Cause::NotOom);
}

#[test]
fn a_servers_size_check_is_the_weights() {
    let log = excerpt("omlx-378");
    assert_eq!(cause(&log), Cause::WeightsDoNotFit);
    let smaller = log.replace("(218.08GB)", "(18.08GB)");
    assert_ne!(cause(&smaller), Cause::WeightsDoNotFit);
}

#[test]
fn vulkan_result_codes() {
    let log = excerpt("zimage-ncnn-vulkan-24");
    assert_eq!(cause(&log), Cause::WeightsDoNotFit);
    // -1 is VK_ERROR_OUT_OF_HOST_MEMORY
    assert_eq!(
        cause(&log.replace("failed -2", "failed -1")),
        Cause::HostMemory
    );
    // without ncnn's weight allocator nothing tells the phase
    let bare = log.replace("weight allocator fallback to device memory\n", "");
    assert_ne!(cause(&bare), Cause::WeightsDoNotFit);
}

#[test]
fn a_kv_cache_allocation_failure_is_the_kv_cache() {
    assert_eq!(cause(&excerpt("xinfer-195")), Cause::KvCache);
    assert_ne!(
        cause("ERROR engine: allocation failed: Insufficient GPU memory for the activations"),
        Cause::KvCache
    );
}

#[test]
fn cuda_argument_errors_are_lookalikes_and_a_negated_oom_is_none() {
    let log = excerpt("llamacpp-pr-27752");
    assert_eq!(cause(&log), Cause::NotOom);
    let oom = log.replace("CUDA error: invalid argument", "CUDA error: out of memory");
    assert_ne!(cause(&oom), Cause::NotOom);
}

#[test]
fn a_reporters_cuda_graph_experiment_is_the_capture() {
    let log = excerpt("sglang-pr-2863");
    assert_eq!(cause(&log), Cause::CudaGraphs);
    let without = log.replace("When enable cuda graph got OOM error", "got OOM error");
    assert_ne!(cause(&without), Cause::CudaGraphs);
}

#[test]
fn fragmentation_named_beside_the_quoted_error() {
    let log = excerpt("castwright-pr-354");
    assert_eq!(cause(&log), Cause::Fragmentation);
    let unnamed = log.replace(
        "the signature of CUDA allocator fragmentation",
        "the signature of a problem",
    );
    assert_ne!(cause(&unnamed), Cause::Fragmentation);
}

#[test]
fn activations_named_as_what_had_no_room() {
    for id in ["trtllm-1187", "exllama-98"] {
        assert_eq!(cause(&excerpt(id)), Cause::ActivationPeak, "{id}");
    }
    let cache = excerpt("exllama-98").replace("for activations", "for the cache");
    assert_ne!(cause(&cache), Cause::ActivationPeak);
}

#[test]
fn exllamav2_cache_allocation_is_the_kv_cache() {
    let log = excerpt("exllamav2-677");
    assert_eq!(cause(&log), Cause::KvCache);
    let forward = log.replace("in create_state_tensors", "in forward_chunk");
    assert_ne!(cause(&forward), Cause::KvCache);
}

#[test]
fn turbomind_api_names_lmdeploy() {
    let log = excerpt("internvl-342");
    let d = diagnose(&log);
    assert_eq!(d.cause, Cause::KvCache, "{}", d.summary);
    assert_eq!(d.engine.as_str(), "lmdeploy");
    let unnamed = log.replace("TurbomindEngineConfig", "EngineConfig");
    assert_ne!(cause(&unnamed), Cause::KvCache);
}

#[test]
fn a_kill_on_a_unified_memory_device_is_the_weights() {
    for id in ["jetson-containers-372", "mlc-llm-1678"] {
        assert_eq!(cause(&excerpt(id)), Cause::WeightsDoNotFit, "{id}");
    }
    let pc = excerpt("jetson-containers-372")
        .replace("tegra-ubuntu", "workstation")
        .replace("jetson kit", "PC");
    assert_eq!(cause(&pc), Cause::HostMemory);
}

#[test]
fn a_large_run_time_request_in_vllm_is_an_activation() {
    let log = excerpt("lm-eval-2779");
    assert_eq!(cause(&log), Cause::ActivationPeak);
    let small = log.replace("Tried to allocate 7.04 GiB", "Tried to allocate 704.00 MiB");
    assert_ne!(cause(&small), Cause::ActivationPeak);
}

#[test]
fn vllm_startup_check_wrapped_names_the_tenant() {
    let log = excerpt("granite-switch-123");
    assert_eq!(cause(&log), Cause::OtherProcesses);
    let alone = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.13 GiB\nvllm serve m --gpu-memory-utilization 0.7";
    assert_ne!(cause(alone), Cause::OtherProcesses);
}

#[test]
fn an_earlier_model_still_loaded_is_a_tenant() {
    // holdout8 (Ollama) and holdout7 (LocalAI's llama.cpp backend)
    for id in ["ollama-12580", "localai-1729"] {
        assert_eq!(cause(&excerpt(id)), Cause::OtherProcesses, "{id}");
    }
    let fresh = excerpt("localai-1729").replace(
        "doing them separately after `docker restart localai` always works",
        "the same happens on a fresh start",
    );
    assert_ne!(cause(&fresh), Cause::OtherProcesses);
}

#[test]
fn a_pod_past_its_memory_quantity_is_host_memory() {
    let log = excerpt("home-ops-9818");
    assert_eq!(cause(&log), Cause::HostMemory);
    let gpu = log.replace("the pod past its new 16Gi cap", "the GPU past its 16 GB");
    assert_ne!(cause(&gpu), Cause::HostMemory);
}

#[test]
fn a_device_smaller_than_the_drivers_vram_is_a_pool_lookalike() {
    let log = excerpt("therock-1054");
    assert_eq!(cause(&log), Cause::NotOom);
    let same = log
        .replace("VRAM: 98304M", "VRAM: 16384M")
        .replace("98304M of VRAM", "16384M of VRAM");
    assert_ne!(cause(&same), Cause::NotOom);
}

#[test]
fn a_smaller_prompt_batch_as_the_fix_is_the_activation() {
    let log = excerpt("ollama-1800");
    assert_eq!(cause(&log), Cause::ActivationPeak);
    // a larger batch asked for is no such statement
    let raised = log.replace(
        "reducing 'num_batch' down from",
        "raising 'num_batch' up from",
    );
    assert_ne!(cause(&raised), Cause::ActivationPeak);
}
