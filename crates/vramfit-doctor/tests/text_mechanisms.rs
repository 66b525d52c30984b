//! The mechanisms read from first-sight misses whose text held the evidence (session 6): each
//! on the real report it came from (tests/fixtures, by id) and on a variant that must not
//! trigger it. docs/accuracy-doctor.md lists every first-sight miss and the kind of miss.

use serde_json::Value;
use vramfit_doctor::{diagnose, render, Cause, Diagnosis};

const FIXTURES: &[&str] = &[
    include_str!("fixtures/oom_gathered3.jsonl"),
    include_str!("fixtures/oom_gathered4.jsonl"),
];

fn excerpt(id: &str) -> String {
    for text in FIXTURES {
        for l in text.lines().filter(|l| !l.trim().is_empty()) {
            let r: Value = serde_json::from_str(l).expect("valid JSONL");
            if r["id"] == id {
                return r["error_excerpt"].as_str().unwrap_or("").to_string();
            }
        }
    }
    panic!("no fixture {id}");
}

fn flags(d: &Diagnosis) -> Vec<String> {
    d.fixes
        .iter()
        .map(|f| format!("{} {}", f.flag, f.value))
        .collect()
}

#[test]
fn nccl_shared_memory_segment_is_host_memory() {
    for id in ["torchtitan-853", "video-diffusion-speedrun-2"] {
        let d = diagnose(&excerpt(id));
        assert_eq!(d.cause, Cause::HostMemory, "{id}: {}", d.summary);
        assert!(d.fixes.iter().any(|f| f.why.contains("--shm-size")), "{id}");
    }
}

#[test]
fn graph_capture_from_sentences_and_frames() {
    for id in ["parallax-188", "transformerengine-2543", "pytorch-83490"] {
        assert_eq!(diagnose(&excerpt(id)).cause, Cause::CudaGraphs, "{id}");
    }
    // a sentence about the graphs that says no OOM is no capture failure
    let d = diagnose("we run with cudagraph enabled and it is fast");
    assert_ne!(d.cause, Cause::CudaGraphs);
}

#[test]
fn restated_torch_fields_give_the_fragmentation_arithmetic() {
    // vllm-project/vllm#37428: free 329.87 MiB + reserved-unallocated 402.27 MiB >= 384 MiB
    let d = diagnose(&excerpt("vllm-37428"));
    assert_eq!(d.cause, Cause::Fragmentation, "{}", d.summary);
    // the same restated message where the cache does not cover the request is not fragmentation
    let d = diagnose("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.\nGPU has 19.53 GiB total, 329.87 MiB free.\nPyTorch allocated: 18.40 GiB\nReserved but unallocated: 40.27 MiB");
    assert_ne!(d.cause, Cause::Fragmentation, "{}", d.summary);
}

#[test]
fn mamba_state_blocks_limit_the_sequences() {
    let d = diagnose(&excerpt("recipes-551"));
    assert_eq!(d.cause, Cause::Concurrency);
    assert!(
        flags(&d).contains(&"--max-num-seqs 512".to_string()),
        "{:?}",
        flags(&d)
    );
}

#[test]
fn prefill_and_kv_and_tenants_named_in_sentences() {
    for (id, cause) in [
        ("mlxcel-672", Cause::ActivationPeak),
        ("tt-metal-19890", Cause::ActivationPeak),
        ("llama.cpp-8817", Cause::KvCache),
        ("mlx-lm-1390", Cause::KvCache),
        ("ollama-3765", Cause::OtherProcesses),
        ("autoresearch-588", Cause::Fragmentation),
        ("transformers-10240", Cause::Concurrency),
    ] {
        let d = diagnose(&excerpt(id));
        assert_eq!(d.cause, cause, "{id}: {}", d.summary);
    }
    // a command line naming prefill is no phase
    let d = diagnose("vllm serve m --enable-chunked-prefill\nCUDA error: out of memory");
    assert_ne!(d.cause, Cause::ActivationPeak);
}

#[test]
fn llama_context_creation_failure_is_the_kv_cache() {
    let d = diagnose(&excerpt("eullm-302"));
    assert_eq!(d.cause, Cause::KvCache);
    // a line naming the compute buffers outranks it
    let d = diagnose("llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers\ncommon_init_from_params: failed to create context with model 'm.gguf'");
    assert_eq!(d.cause, Cause::ActivationPeak, "{}", d.summary);
}

#[test]
fn mlx_server_after_requests_is_kv() {
    let d = diagnose(&excerpt("mlx-lm-854"));
    assert_eq!(d.cause, Cause::KvCache, "{}", d.summary);
}

#[test]
fn sleeping_vllm_is_a_tenant() {
    let d = diagnose(&excerpt("nemo-rl-2619"));
    assert_eq!(d.cause, Cause::OtherProcesses, "{}", d.summary);
}

#[test]
fn sycl_oom_with_free_memory_stated_is_the_allocation_cap() {
    let d = diagnose(&excerpt("llama.cpp-25502"));
    assert_eq!(d.cause, Cause::NotOom, "{}", d.summary);
    let d =
        diagnose("error 39 UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, Error OP MUL_MAT with 2GB free");
    assert_ne!(d.cause, Cause::NotOom, "{}", d.summary);
}

#[test]
fn metal_total_past_the_working_set_and_full_vllm_share_are_weights() {
    assert_eq!(
        diagnose(&excerpt("ollama-434")).cause,
        Cause::WeightsDoNotFit
    );
    let d = diagnose(&excerpt("qwen-12"));
    assert_eq!(d.cause, Cause::WeightsDoNotFit, "{}", d.summary);
    // at 0.90 the message's own advice (a larger share) still applies: the budget
    let d = diagnose("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n--gpu-memory-utilization 0.90");
    assert_eq!(d.cause, Cause::OtherProcesses);
    assert_eq!(
        d.fixes.first().map(|f| (f.flag.as_str(), f.value.as_str())),
        Some(("--gpu-memory-utilization", "0.95"))
    );
}

#[test]
fn ollama_runner_with_a_short_context_overcommitted_layers() {
    let d = diagnose(&excerpt("ollama-3711"));
    assert_eq!(d.cause, Cause::WeightsDoNotFit, "{}", d.summary);
    assert!(
        flags(&d).contains(&"num_gpu 45".to_string()),
        "{:?}",
        flags(&d)
    );
    // a long context keeps the KV reading (ollama#1952: the estimate ignored num_ctx)
    let d = diagnose("ollama_llama_server --model m --ctx-size 131072 --n-gpu-layers 51\nCUDA error: out of memory");
    assert_eq!(d.cause, Cause::KvCache, "{}", d.summary);
}

#[test]
fn a_fallback_says_low() {
    let d = diagnose("RuntimeError: CUDA error: out of memory");
    assert!(d.basis.fallback);
    assert!(render::human(&d).contains("low: no fact in the log decided it"));
    assert_eq!(render::json(&d)["basis"]["fallback"], true);
    let d = diagnose(&excerpt("recipes-551"));
    assert!(!render::human(&d).contains("low:"));
}
