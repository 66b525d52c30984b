//! Which GPU model runner vLLM picks, and what that changes in start-up profiling.
//!
//! Model Runner V2 (`vllm/v1/worker/gpu/model_runner.py`) replaced the V1 runner
//! (`gpu_model_runner.py`) architecture by architecture. `VllmConfig.use_v2_model_runner`
//! (vllm/config/vllm.py) decides, by release:
//! - `VLLM_USE_V2_MODEL_RUNNER` set: it decides;
//! - from PR #39337 ("Oracle for model runner v2 - qwen3 dense model by default", merged
//!   2026-04): `DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = {Qwen3ForCausalLM}`, only for models that
//!   are not MoE, not quantized and not hybrid/mamba; the first release taken as v0.21.0 (the
//!   v0.19.1 Qwen3-8B log in the public fixtures profiles the V1 sampler);
//! - v0.23.0: the set grows to Llama, Mistral, Qwen3, DeepseekV2 and Qwen2Moe (the set as
//!   printed in v0.23.0's config/vllm.py), still unquantized only;
//! - v0.25.1: every dense (non-MoE) model, quantized ones included (PR #44443 "Enable by
//!   default for all dense models"; vllm#49224: "Model Runner V2 became the default for dense
//!   models in 0.25.1 ... before 0.25.1 dense FP8 models used the legacy runner");
//! - v0.30.0: every model (PR #53183).
//!
//! What the profile sees under V2 (where [`lean_profile`] holds):
//! - the sampler run gets a dummy batch with no sampling parameters, so the sampler takes its
//!   early exit: no fp32 upcast, no top-k/top-p, no logprobs — only the logits the LM head writes
//!   (`_dummy_sampler_run`, NOTE(woosuk) "the sampler may skip top_k, top_p, and logprobs";
//!   vllm PR #57926 describes the gap and is not merged);
//! - `profile_cudagraph_memory()` is a placeholder returning 0 (PR #36520; vllm#49224), so no
//!   CUDA-graph estimate is taken out of the budget (a v0.26.0 log prints 0.48 GiB of graphs
//!   that the available KV does not subtract; a v0.27.1 log prints the pool without one).

use super::args::VllmConfig;
use super::profile::Sampler;
use super::Version;
use vramfit_model::{AttentionKind, ModelSpec};

/// Whether V2's profile at this release is the lean one described above (logits only, no
/// CUDA-graph estimate). Bounded by the logs, not by a PR read: v0.22.1 (KAITO's Qwen3 auto-fit
/// rows), v0.26.0 (Qwen3-0.6B on an RTX 3050: 0.23 GiB of everything besides weights and KV;
/// Qwen2.5-7B-AWQ on an RTX 4080: graphs not subtracted) and v0.27.1 (Qwen2.5-0.5B: "0.31 GiB for
/// peak activation, and 0.0 GiB for CUDAGraph memory") profile lean; v0.24.0 (Qwen3-8B on an RTX
/// 5090, dev record vllm-log-006) and v0.28.0 (Qwen3-14B on an L40S and an L4, vllm-log-012/-017)
/// charge what V1 charges (sampler with its top-k/top-p temporaries, the graph estimate). The
/// change that ended the lean profile by v0.28.0 (a fix like PR #57926) and why the v0.24.0 log
/// differs were not found in the sources read.
pub fn lean_profile(version: Version) -> bool {
    (version >= Version::new(0, 21, 0) && version < Version::new(0, 23, 0))
        || (version >= Version::new(0, 25, 1) && version < Version::new(0, 28, 0))
}

/// The two runners.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    V1,
    V2,
}

/// The architectures V2 takes by default before v0.25.1, by release.
fn default_architectures(version: Version) -> &'static [&'static str] {
    if version >= Version::new(0, 23, 0) {
        &[
            "LlamaForCausalLM",
            "MistralForCausalLM",
            "Qwen3ForCausalLM",
            "DeepseekV2ForCausalLM",
            "Qwen2MoeForCausalLM",
        ]
    } else if version >= Version::new(0, 21, 0) {
        &["Qwen3ForCausalLM"]
    } else {
        &[]
    }
}

/// The runner `vllm serve` uses for this model and command.
pub fn runner(spec: &ModelSpec, cfg: &VllmConfig) -> Runner {
    if let Some(v2) = cfg.use_v2_model_runner {
        return if v2 { Runner::V2 } else { Runner::V1 };
    }
    let v = cfg.version;
    if v >= Version::new(0, 30, 0) {
        return Runner::V2;
    }
    let hybrid = spec
        .layers
        .iter()
        .any(|l| matches!(l.attention, AttentionKind::Recurrent(_)));
    let listed = default_architectures(v).contains(&spec.architecture.as_str());
    let quantized = spec.quant.is_some() || cfg.quantization.is_some();
    let moe = spec.moe.is_some();
    let v2 = if v >= Version::new(0, 25, 1) {
        !hybrid && (listed || !moe)
    } else {
        listed && !quantized && !hybrid && (!moe || spec.architecture.contains("Moe"))
    };
    if v2 {
        Runner::V2
    } else {
        Runner::V1
    }
}

/// The sampler path of the start-up profile's dummy sampling run, by runner and release.
pub fn sampler(spec: &ModelSpec, cfg: &VllmConfig) -> Sampler {
    if cfg.runs_v0() {
        return Sampler::Sorting;
    }
    match runner(spec, cfg) {
        Runner::V2 if lean_profile(cfg.version) => Sampler::LogitsOnly,
        Runner::V2 => Sampler::Sorting,
        // the Triton top-k/top-p kernels (PR #33538) arrive in v0.17.0: absent from v0.16.0's
        // v1/sample/ops/topk_topp_sampler.py, used from 8 rows in v0.17.0's
        Runner::V1 if cfg.version >= Version::new(0, 17, 0) => Sampler::SortFree,
        Runner::V1 => Sampler::Sorting,
    }
}

/// Whether NCCL all-reduces this start's tensor-parallel group through NVLink SHARP, whose
/// buffers profiling counts as non-torch memory ([`super::profile::NVLS_NON_TORCH_BYTES`]): TP > 1
/// from v0.10.2 (vLLM stopped exporting `NCCL_CUMEM_ENABLE=0`, vllm/env_override.py) on GPUs that
/// sit on an NVSwitch with NVLS (H100/H200/H20 SXM, B200/B300/GB200/GB300; not the PCIe or NVL
/// cards, whose NVLink is a bridge between pairs), unless the command sets `NCCL_NVLS_ENABLE=0`
/// or `NCCL_CUMEM_ENABLE=0`.
pub fn nccl_nvls(cfg: &VllmConfig, gpu_name: &str) -> bool {
    if cfg.tensor_parallel_size < 2 || cfg.version < Version::new(0, 10, 2) || cfg.nvls_disabled {
        return false;
    }
    let n = gpu_name.to_ascii_lowercase();
    let switched = [
        "h100", "h200", "h20", "h800", "b200", "b300", "gb200", "gb300",
    ]
    .iter()
    .any(|m| n.contains(m));
    switched && !n.contains("pcie") && !n.contains("nvl")
}

/// The largest CUDA-graph capture size when the release does not derive it from `max_num_seqs`
/// (`None`: `min(2 · max_num_seqs, 512)`, vllm/config/vllm.py). The V1 runner before v0.10.0
/// captured up to 512 tokens whatever `max_num_seqs` was: `SchedulerConfig.cuda_graph_sizes`
/// defaulted to `[512]` until PR #20628 (first in v0.10.0) made it `[min(2 · max_num_seqs,
/// 512)]`. gpt-oss sets its own capture list up to 1024 (`GptOssForCausalLMConfig` in
/// vllm/model_executor/models/config.py, "Increase the max capture size from 512 ... for
/// performance"), lowered to 992 by PR #25508 (v0.11.0, FA3's full-graph limit) and set back to
/// 1024 by PR #28345 (v0.11.1); the first release taken as v0.10.1 (gpt-oss support). The
/// llm-d-planner v0.19.0 H100 logs agree: gpt-oss-20b's graph pool is 1.84 GiB (TP1) where
/// capture to 512 predicts 0.98.
pub fn fixed_capture_size(spec: &ModelSpec, cfg: &VllmConfig) -> Option<u64> {
    if cfg.runs_v0() {
        return None;
    }
    let v = cfg.version;
    if spec.architecture == "GptOssForCausalLM" && v >= Version::new(0, 10, 1) {
        let fa3_cap = v >= Version::new(0, 11, 0) && v < Version::new(0, 11, 1);
        return Some(if fa3_cap { 992 } else { 1024 });
    }
    (v < Version::new(0, 10, 0)).then_some(512)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmdline::Command;

    fn cfg(argv: &[&str], version: &str) -> VllmConfig {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        super::super::parse(&Command::parse(&argv).unwrap(), Some(version)).unwrap()
    }

    fn spec(arch: &str) -> ModelSpec {
        let m = vramfit_model::catalog::find_model("Qwen/Qwen3-8B").unwrap();
        let mut s = vramfit_model::hf_config::spec_from_config(&m.id, &m.config).unwrap();
        s.architecture = arch.to_string();
        s
    }

    #[test]
    fn by_release_and_architecture() {
        let qwen3 = spec("Qwen3ForCausalLM");
        let qwen2 = spec("Qwen2ForCausalLM");
        let argv = ["vllm", "serve", "m"];
        assert_eq!(runner(&qwen3, &cfg(&argv, "0.19.1")), Runner::V1);
        assert_eq!(runner(&qwen3, &cfg(&argv, "0.22.1")), Runner::V2);
        assert_eq!(runner(&qwen2, &cfg(&argv, "0.22.0")), Runner::V1);
        assert_eq!(runner(&qwen2, &cfg(&argv, "0.25.1")), Runner::V2);
        let env = ["VLLM_USE_V2_MODEL_RUNNER=0", "vllm", "serve", "m"];
        assert_eq!(runner(&qwen3, &cfg(&env, "0.22.1")), Runner::V1);
        let env = ["VLLM_USE_V2_MODEL_RUNNER=1", "vllm", "serve", "m"];
        assert_eq!(runner(&qwen2, &cfg(&env, "0.22.0")), Runner::V2);
        assert!(lean_profile(Version::new(0, 22, 1)));
        assert!(!lean_profile(Version::new(0, 24, 0)));
        assert!(lean_profile(Version::new(0, 27, 1)));
        assert!(!lean_profile(Version::new(0, 28, 0)));
    }

    #[test]
    fn sampler_by_release() {
        // Qwen2 is not on V2's early lists: the V1 runner until v0.25.1
        let qwen2 = spec("Qwen2ForCausalLM");
        let argv = ["vllm", "serve", "m"];
        assert_eq!(sampler(&qwen2, &cfg(&argv, "0.16.0")), Sampler::Sorting);
        assert_eq!(sampler(&qwen2, &cfg(&argv, "0.17.0")), Sampler::SortFree);
        assert_eq!(sampler(&qwen2, &cfg(&argv, "0.19.0")), Sampler::SortFree);
        assert_eq!(sampler(&qwen2, &cfg(&argv, "0.7.3")), Sampler::Sorting);
        let qwen3 = spec("Qwen3ForCausalLM");
        assert_eq!(sampler(&qwen3, &cfg(&argv, "0.22.1")), Sampler::LogitsOnly);
    }

    #[test]
    fn capture_sizes_fixed_before_0_10_and_for_gpt_oss() {
        let argv = ["vllm", "serve", "m", "--max-num-seqs", "1"];
        let qwen3 = spec("Qwen3ForCausalLM");
        assert_eq!(fixed_capture_size(&qwen3, &cfg(&argv, "0.8.5")), Some(512));
        assert_eq!(fixed_capture_size(&qwen3, &cfg(&argv, "0.10.0")), None);
        let oss = spec("GptOssForCausalLM");
        assert_eq!(fixed_capture_size(&oss, &cfg(&argv, "0.11.0")), Some(992));
        assert_eq!(fixed_capture_size(&oss, &cfg(&argv, "0.19.0")), Some(1024));
        // the graph pool follows: capture to 1024 is twice capture to 512
        let s = vramfit_model::catalog::find_model("Qwen/Qwen3-8B").unwrap();
        let s = vramfit_model::hf_config::spec_from_config(&s.id, &s.config).unwrap();
        let n = s.layers.len() as u64;
        let mut p = crate::vllm::profile::ProfileInputs {
            max_num_batched_tokens: 8192,
            max_num_seqs: 1024,
            tp: 1,
            is_last_stage: true,
            cuda_graphs: true,
            act_bytes: 2,
            expert_parallel: false,
            sampler: Sampler::SortFree,
            nvls: false,
            device_wide: None,
            fixed_capture: None,
        };
        let g512 = crate::vllm::profile::profile(&s, 0..n, p).cuda_graph_bytes;
        p.fixed_capture = Some(1024);
        let g1024 = crate::vllm::profile::profile(&s, 0..n, p).cuda_graph_bytes;
        assert!((g1024 as f64 / g512 as f64 - 2.0).abs() < 0.01);
    }

    #[test]
    fn nvls_on_switched_hopper_from_0_10_2() {
        let tp2 = ["vllm", "serve", "m", "--tensor-parallel-size", "2"];
        let h100 = "NVIDIA H100 80GB HBM3";
        assert!(nccl_nvls(&cfg(&tp2, "0.19.0"), h100));
        assert!(nccl_nvls(&cfg(&tp2, "0.10.2"), "NVIDIA H200"));
        assert!(!nccl_nvls(&cfg(&tp2, "0.10.1"), h100));
        assert!(!nccl_nvls(&cfg(&tp2, "0.19.0"), "NVIDIA H100 PCIe"));
        assert!(!nccl_nvls(&cfg(&tp2, "0.19.0"), "NVIDIA H100 NVL"));
        assert!(!nccl_nvls(&cfg(&tp2, "0.19.0"), "NVIDIA L40S"));
        assert!(!nccl_nvls(&cfg(&["vllm", "serve", "m"], "0.19.0"), h100));
        let off = ["NCCL_NVLS_ENABLE=0", "vllm", "serve", "m", "-tp", "4"];
        assert!(!nccl_nvls(&cfg(&off, "0.19.0"), h100));
    }
}
