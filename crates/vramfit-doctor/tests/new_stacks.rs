//! The stacks and the arithmetic added for reports nobody tuned the first rules to, each on the
//! real report it was written from (fixtures, with their source URLs) and the fix it must give.

use serde_json::Value;
use vramfit_doctor::{diagnose, Cause, Diagnosis};

const FIXTURES: [&str; 2] = [
    include_str!("fixtures/oom_gathered.jsonl"),
    include_str!("fixtures/oom_gathered2.jsonl"),
];

fn report(id: &str) -> Diagnosis {
    let r: Value = FIXTURES
        .iter()
        .flat_map(|f| f.lines())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no report {id}"));
    diagnose(r["error_excerpt"].as_str().unwrap())
}

fn fix<'a>(d: &'a Diagnosis, flag: &str) -> Option<&'a str> {
    d.fixes
        .iter()
        .find(|f| f.flag == flag)
        .map(|f| f.value.as_str())
}

#[test]
fn tenstorrent_buffer_of_most_of_the_device_is_an_activation() {
    let d = report("tt-metal-40108");
    assert_eq!(d.cause, Cause::ActivationPeak);
    assert!(d.evidence.iter().any(|e| e.contains(">= 1/8 of device")));
}

#[test]
fn onnx_runtime_with_an_attention_mask_named() {
    let d = report("semantic-router-1431");
    assert_eq!(d.cause, Cause::ActivationPeak);
    assert!(
        d.confidence <= 0.5,
        "a description decides at low confidence"
    );
}

#[test]
fn sglang_static_fraction_lowered_by_what_was_missing() {
    // 4.00 GiB requested, 2.21 GiB free of 184 GiB: 1.0% missing + 1% margin from 0.95
    let d = report("srt-slurm-172");
    assert_eq!(d.cause, Cause::OtherProcesses);
    assert_eq!(fix(&d, "--mem-fraction-static"), Some("0.93"));
}

#[test]
fn vllm_initial_usage_is_another_tenant() {
    let d = report("vllm-10533");
    assert_eq!(d.cause, Cause::OtherProcesses);
}

#[test]
fn vllm_graph_estimate_before_no_cache_blocks() {
    let d = report("vllm-53013");
    assert_eq!(d.cause, Cause::CudaGraphs);
    assert_eq!(
        fix(&d, "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"),
        Some("0")
    );
}

#[test]
fn llama_server_kv_cells_full() {
    let d = report("llama.cpp-6603");
    assert_eq!(d.cause, Cause::KvCache);
}

#[test]
fn llama_metal_weights_over_the_working_set() {
    assert_eq!(report("llamafile-42").cause, Cause::WeightsDoNotFit);
    // weights 3.7 GiB of a 48 GiB working set at n_ctx 131072: the context's KV
    let d = report("llama.cpp-9112");
    assert_eq!(d.cause, Cause::KvCache);
    assert_eq!(fix(&d, "-c"), Some("65536"));
}

#[test]
fn a_petabyte_request_is_a_corrupted_size() {
    assert_eq!(report("nccl-1284").cause, Cause::NotOom);
}

#[test]
fn prose_phases_decide_prose_reports() {
    // "grows ... over time and eventually aborts with kIOGPU...": KV growth in MLX
    assert_eq!(report("vllm-mlx-442").cause, Cause::KvCache);
    // "MLX/Metal OOM during long-context prefill"
    assert_eq!(report("mlx-lm-1480").cause, Cause::ActivationPeak);
    // "OOM during TransformerEngine's deferred CUDA-graph capture"
    assert_eq!(report("transformerengine-3427").cause, Cause::CudaGraphs);
}

#[test]
fn shells_and_ray_report_host_kills() {
    assert_eq!(report("chatglm-webui-3").cause, Cause::HostMemory);
    assert_eq!(report("vllm-1160").cause, Cause::HostMemory);
}
