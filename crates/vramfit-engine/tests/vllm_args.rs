//! `vllm serve` command lines → VllmConfig, with the defaults of each release.

use vramfit_engine::cmdline::Command;
use vramfit_engine::error::EngineError;
use vramfit_engine::vllm::args::batch_defaults;
use vramfit_engine::vllm::{parse, MaxModelLen, Version, VllmConfig};
use vramfit_model::units::GIB;

fn cfg(words: &[&str], version: Option<&str>) -> Result<VllmConfig, EngineError> {
    parse(&Command::parse(words).unwrap(), version)
}

#[test]
fn defaults_by_release() {
    let c = cfg(&["vllm", "serve", "Qwen/Qwen3-8B"], None).unwrap();
    assert_eq!(c.model, "Qwen/Qwen3-8B");
    assert_eq!(c.version, Version::CURRENT);
    assert_eq!(c.gpu_memory_utilization, 0.92);
    assert_eq!(c.max_model_len, MaxModelLen::FromModel);
    assert_eq!((c.tensor_parallel_size, c.pipeline_parallel_size), (1, 1));
    assert_eq!(c.kv_cache_dtype, "auto");
    assert!(c.deducts_cuda_graphs());
    let old = cfg(&["vllm", "serve", "Qwen/Qwen3-8B"], Some("0.10.1")).unwrap();
    assert_eq!(old.gpu_memory_utilization, 0.9);
    assert!(!old.deducts_cuda_graphs());
}

#[test]
fn every_memory_flag() {
    let c = cfg(
        &[
            "CUDA_VISIBLE_DEVICES=2,3",
            "VLLM_PP_LAYER_PARTITION=10,30",
            "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0",
            "vllm",
            "serve",
            "m",
            "-tp",
            "2",
            "--pipeline-parallel-size=2",
            "--max-model-len",
            "32K",
            "--gpu_memory_utilization",
            "0.85",
            "--max-num-seqs",
            "64",
            "--max-num-batched-tokens",
            "16k",
            "--kv-cache-dtype",
            "fp8",
            "--block-size",
            "32",
            "--cpu-offload-gb",
            "4",
            "--enforce-eager",
            "--quantization",
            "fp8",
            "--dtype",
            "float16",
            "--enable-prefix-caching",
            "--speculative-config",
            r#"{"method": "eagle3", "model": "org/draft", "num_speculative_tokens": 3}"#,
            "--trust-remote-code",
            "--port",
            "8000",
            "--swap-space",
            "16",
            "--mystery",
            "1",
        ],
        Some("0.15.2"),
    )
    .unwrap();
    assert_eq!(c.visible_devices, Some(vec![2, 3]));
    assert_eq!(c.pp_layer_partition, Some(vec![10, 30]));
    assert_eq!(c.estimate_cudagraphs, Some(false));
    assert_eq!((c.tensor_parallel_size, c.pipeline_parallel_size), (2, 2));
    assert_eq!(c.max_model_len, MaxModelLen::Tokens(32768));
    assert_eq!(c.gpu_memory_utilization, 0.85);
    assert_eq!(c.max_num_seqs, Some(64));
    assert_eq!(c.max_num_batched_tokens, Some(16000));
    assert_eq!(c.kv_cache_dtype, "fp8");
    assert_eq!(c.block_size, Some(32));
    assert_eq!(c.cpu_offload_bytes, 4 * GIB);
    assert!(c.enforce_eager && !c.uses_cuda_graphs());
    assert_eq!(c.quantization.as_deref(), Some("fp8"));
    assert_eq!(c.dtype.as_deref(), Some("float16"));
    assert_eq!(c.enable_prefix_caching, Some(true));
    let s = c.speculative.as_ref().unwrap();
    assert_eq!((s.method.as_str(), s.num_speculative_tokens), ("eagle3", 3));
    assert_eq!(c.unknown_flags, ["--mystery 1"]);
}

#[test]
fn entrypoint_forms_and_auto_length() {
    let c = cfg(
        &[
            "python3",
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            "M",
            "--max-model-len",
            "-1",
        ],
        None,
    )
    .unwrap();
    assert_eq!(c.model, "M");
    assert_eq!(c.max_model_len, MaxModelLen::Auto);
    let c = cfg(&["vllm serve M --max-model-len auto -O0"], None).unwrap();
    assert_eq!(c.max_model_len, MaxModelLen::Auto);
    assert!(!c.uses_cuda_graphs());
    let c = cfg(
        &[
            "docker",
            "run",
            "--gpus",
            "all",
            "vllm/vllm-openai:v0.9.0",
            "--model",
            "M",
            "-tp",
            "4",
        ],
        Some("0.9.0"),
    )
    .unwrap();
    assert_eq!((c.model.as_str(), c.tensor_parallel_size), ("M", 4));
}

#[test]
fn bad_values_name_the_flag() {
    let e = cfg(
        &["vllm", "serve", "m", "--gpu-memory-utilization", "90"],
        None,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("--gpu-memory-utilization \"90\""),
        "{e}"
    );
    let e = cfg(&["vllm", "serve", "m", "-tp", "two"], None).unwrap_err();
    assert!(e.to_string().contains("--tensor-parallel-size"), "{e}");
    let e = cfg(&["vllm", "serve", "m", "--max-model-len", "lots"], None).unwrap_err();
    assert!(e.to_string().contains("--max-model-len"), "{e}");
    let e = cfg(&["vllm", "serve"], None).unwrap_err();
    assert!(matches!(e, EngineError::NoModel { .. }), "{e}");
    let e = cfg(&["llama-server", "-m", "x.gguf"], None).unwrap_err();
    assert!(matches!(e, EngineError::WrongEngine { .. }), "{e}");
    let e = cfg(&["vllm", "serve", "m"], Some("newest")).unwrap_err();
    assert!(e.to_string().contains("newest"), "{e}");
    let e = cfg(
        &["CUDA_VISIBLE_DEVICES=GPU-abc", "vllm", "serve", "m"],
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("CUDA_VISIBLE_DEVICES"), "{e}");
}

#[test]
fn batch_defaults_follow_get_batch_defaults() {
    let v = Version::CURRENT;
    assert_eq!(
        batch_defaults(v, 79 * GIB, "NVIDIA H100 80GB HBM3"),
        (8192, 1024)
    );
    assert_eq!(
        batch_defaults(v, 79 * GIB, "NVIDIA A100-SXM4-80GB"),
        (2048, 256)
    );
    assert_eq!(batch_defaults(v, 44 * GIB, "NVIDIA L40S"), (2048, 256));
    assert_eq!(
        batch_defaults(Version::new(0, 8, 5), 94 * GIB, "NVIDIA H100 NVL"),
        (8192, 1024)
    );
    assert_eq!(
        batch_defaults(Version::new(0, 8, 5), 140 * GIB, "NVIDIA B200"),
        (2048, 256)
    );
    // the default is capped at max_num_seqs × max_model_len
    let c = cfg(
        &[
            "vllm",
            "serve",
            "m",
            "--max-num-seqs",
            "2",
            "--max-model-len",
            "512",
        ],
        None,
    )
    .unwrap();
    assert_eq!(c.batch_limits(79 * GIB, "H100", 512), (1024, 2));
}
