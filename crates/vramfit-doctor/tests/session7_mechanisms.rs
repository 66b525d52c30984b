//! The mechanisms of session 7, each on the real reports it was read from (tests/fixtures, by
//! id) and on a variant that must not trigger it. docs/accuracy-doctor.md lists, for each, the
//! reports it changed in every set.

#[path = "support/cases.rs"]
mod cases;

use cases::{cause, excerpt, flag};
use vramfit_doctor::{diagnose, Cause};

#[test]
fn vllm_no_cache_blocks_is_the_budget() {
    for id in ["vllm-14376", "vllm-ascend-9099"] {
        let d = diagnose(&excerpt(id));
        assert_eq!(d.cause, Cause::OtherProcesses, "{id}: {}", d.summary);
        assert!(d.basis.fallback && d.confidence <= 0.45, "{id}");
    }
    // the budget split printed: 0.90 x 8 GiB - 6.65 GiB leaves 0.55 GiB, 0.70 was set
    let log = excerpt("vllm-13882");
    let d = diagnose(&log);
    assert_eq!(d.cause, Cause::OtherProcesses, "{}", d.summary);
    assert!(!d.basis.fallback);
    assert_eq!(flag(&d, "--gpu-memory-utilization"), Some("0.95"));
    // at the default share the same split is the model's: no smaller share to blame
    let at_default = log
        .replace(
            "gpu_memory_utilization (0.70) = 5.60GiB",
            "gpu_memory_utilization (0.90) = 7.20GiB",
        )
        .replace("weights take 5.20GiB", "weights take 6.80GiB");
    assert_eq!(cause(&at_default), Cause::KvCache);
}

#[test]
fn host_memory_named_in_sentences() {
    for id in ["vllm-28923", "OpenRLHF-1013", "vllm-44430"] {
        let d = diagnose(&excerpt(id));
        assert_eq!(d.cause, Cause::HostMemory, "{id}: {}", d.summary);
    }
    assert_ne!(
        cause("CPU memory usage is fine.\ntorch.OutOfMemoryError: CUDA out of memory."),
        Cause::HostMemory
    );
}

#[test]
fn a_smaller_context_named_as_the_fix_is_the_kv_cache() {
    for id in ["GLM-4-47", "ollama-14073"] {
        let d = diagnose(&excerpt(id));
        assert_eq!(d.cause, Cause::KvCache, "{id}: {}", d.summary);
    }
    let glm: String = excerpt("GLM-4-47")
        .lines()
        .filter(|l| !l.contains("成功") && !l.contains("解决"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(cause(&glm), Cause::KvCache);
}

#[test]
fn a_load_failure_at_a_long_context_is_the_kv_cache() {
    for id in ["lmstudio-bug-tracker-14", "lmengine-3"] {
        let d = diagnose(&excerpt(id));
        assert_eq!(d.cause, Cause::KvCache, "{id}: {}", d.summary);
    }
    let short = excerpt("lmstudio-bug-tracker-14").replace("1048576", "4096");
    assert_ne!(cause(&short), Cause::KvCache);
}

#[test]
fn a_pooled_engines_oom_in_a_forward_frame_is_the_activation() {
    for id in ["vllm-22173", "vllm-5550"] {
        let d = diagnose(&excerpt(id));
        assert_eq!(d.cause, Cause::ActivationPeak, "{id}: {}", d.summary);
    }
    let no_frames: String = excerpt("vllm-5550")
        .lines()
        .filter(|l| !l.contains("File "))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(cause(&no_frames), Cause::Concurrency);
}

#[test]
fn adams_step_is_the_model_states() {
    let log = excerpt("LlamaFactory-1221");
    assert_eq!(cause(&log), Cause::WeightsDoNotFit);
    let no_frame: String = log
        .lines()
        .filter(|l| !l.contains("exp_avg"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(cause(&no_frame), Cause::ActivationPeak);
}

#[test]
fn phases_and_tenants_in_sentences() {
    assert_eq!(cause(&excerpt("vllm-54418")), Cause::CudaGraphs);
    for id in ["vllm-omni-2738", "transformers-43032"] {
        assert_eq!(cause(&excerpt(id)), Cause::WeightsDoNotFit, "{id}");
    }
    assert_eq!(cause(&excerpt("Cool_Demos-4")), Cause::OtherProcesses);
    // a person's "fragments" with 92 MiB reserved-unallocated (1.5% of the GPU) for 20 MiB
    let log = excerpt("stable-diffusion-webui-4442");
    assert_eq!(cause(&log), Cause::Fragmentation);
    let unsaid: String = log
        .lines()
        .filter(|l| !l.contains("fragments my memory"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(cause(&unsaid), Cause::Fragmentation);
    // "the OOM kills EngineCore" next to a GPU OutOfMemoryError is not the kernel's killer
    assert_ne!(cause(&excerpt("vllm-53413")), Cause::HostMemory);
}
