//! Pre-quantized checkpoints as plan options: for a model the catalog knows AWQ, GPTQ or FP8
//! repos of (`catalog/quantized.json`: `Qwen/Qwen3-8B` → `Qwen/Qwen3-8B-AWQ`,
//! `Qwen/Qwen3-8B-FP8`), the vLLM and SGLang planners also plan serving those repos.
//!
//! A variant is loaded exactly as `vramfit check` loads the repo its command names
//! ([`crate::model::load`]: local path, HF cache, then the embedded catalog), so the plan's
//! command fed back to `check` gives the same numbers.
//!
//! Whether an engine can run a checkpoint on a GPU is decided by the quantization method's
//! minimum compute capability, as the engine checks it (`get_min_capability` of each
//! `QuantizationConfig`, compared with the device's in vLLM's `get_quant_config` and SGLang's
//! `ModelConfig`): [`min_capability`]. Tensor-parallel sizes must split the quantized
//! weights into whole groups or blocks ([`tp_ok`]).

use crate::model;
use crate::model::Model;
pub use vramfit_engine::tp_split::tp_ok;
use vramfit_engine::tp_split::{kind, Kind};
use vramfit_engine::Hardware;
use vramfit_model::catalog::{variants_of_checkpoint, Variant};
use vramfit_model::resolve::Resolved;
use vramfit_model::ModelSpec;

/// The engines that serve safetensors checkpoints by repo id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Vllm,
    Sglang,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM",
            Engine::Sglang => "SGLang",
        }
    }
}

/// A variant of the planned checkpoint, resolved as `check` would resolve its repo.
pub struct Offer {
    pub variant: &'static Variant,
    pub resolved: Resolved,
}

/// The pre-quantized checkpoints of the model being planned: none for a checkpoint that is
/// already quantized or a GGUF file; otherwise the catalog's variants quantized from this very
/// checkpoint (a repo of the same architecture but other weights gets none).
pub fn offers(m: &Model) -> Vec<Offer> {
    if m.spec().quant.is_some() || m.gguf_file() {
        return Vec::new();
    }
    variants_of_checkpoint(&m.repo())
        .into_iter()
        .filter_map(|v| {
            let resolved = model::load(&v.repo).ok()?;
            resolved.spec.quant.is_some().then_some(Offer {
                variant: v,
                resolved,
            })
        })
        .collect()
}

/// The lowest compute capability at which `engine` loads this checkpoint's quantization, with
/// where that number comes from; None when no rule applies (unquantized, or a method the
/// planner does not offer).
///
/// vLLM (vllm/model_executor/layers/quantization/ as on main in 2025–26; awq_marlin.py and
/// fp8.py read at commits 0322f292 and 0071b24b):
/// - AWQ: `awq.py` `AWQConfig.get_min_capability` 75; `awq_marlin.py` 80, chosen on its own
///   where the GPU allows (`override_quantization_method`);
/// - GPTQ: `gptq.py` 60 (exllama kernels), `gptq_marlin.py` 80; MoE layers go through
///   `moe_wna16.py` below Marlin, `MoeWNA16Config.get_min_capability` 70;
/// - FP8 checkpoints: `fp8.py` `Fp8Config.get_min_capability` 80: from 8.9 FP8 GEMMs, on
///   8.0–8.6 the Marlin W8A16 kernel (`Fp8LinearMethod.use_marlin`);
/// - compressed-tensors FP8: `CompressedTensorsW8A8Fp8` needs 89, below it
///   `compressed_tensors.py` picks `CompressedTensorsW8A16Fp8` (Marlin), 80.
///
/// SGLang (python/sglang/srt/layers/quantization/, v0.5.x; awq.py and gptq.py read at commits
/// 0149944f and 006d0961): the same numbers for AWQ (`awq.py`
/// 75 / `AWQMarlinConfig` 80), GPTQ (`gptq.py` 60 / `GPTQMarlinConfig` 80), FP8 (`fp8.py` 80)
/// and compressed-tensors FP8 (W8A16 Marlin fallback, 80); but its plain AWQ and GPTQ configs
/// give MoE layers no method (only the Marlin configs do: `GPTQMarlinMoEMethod`,
/// `AWQMoEMethod`), so an int4 MoE checkpoint needs 80.
pub fn min_capability(engine: Engine, spec: &ModelSpec) -> Option<(f64, &'static str)> {
    let moe = spec.is_moe();
    let method = spec.quant.as_ref().map(|q| q.method.as_str()).unwrap_or("");
    Some(match (engine, kind(spec)) {
        (Engine::Vllm, Kind::Int { .. }) if method.starts_with("awq") => {
            (7.5, "vllm awq.py AWQConfig.get_min_capability 75")
        }
        (Engine::Vllm, Kind::Int { .. }) if moe => (
            7.0,
            "vllm moe_wna16.py MoeWNA16Config.get_min_capability 70",
        ),
        (Engine::Vllm, Kind::Int { .. }) => (6.0, "vllm gptq.py GPTQConfig.get_min_capability 60"),
        (Engine::Vllm, Kind::Fp8Block { .. } | Kind::Fp8) => (
            8.0,
            "vllm fp8.py Fp8Config.get_min_capability 80; Marlin W8A16 below 8.9",
        ),
        (Engine::Sglang, Kind::Int { .. }) if moe => (
            8.0,
            "sglang awq.py/gptq.py: only the Marlin configs (80) quantize MoE layers",
        ),
        (Engine::Sglang, Kind::Int { .. }) if method.starts_with("awq") => {
            (7.5, "sglang awq.py AWQConfig.get_min_capability 75")
        }
        (Engine::Sglang, Kind::Int { .. }) => {
            (6.0, "sglang gptq.py GPTQConfig.get_min_capability 60")
        }
        (Engine::Sglang, Kind::Fp8Block { .. } | Kind::Fp8) => {
            (8.0, "sglang fp8.py Fp8Config.get_min_capability 80")
        }
        (_, Kind::Other) => return None,
    })
}

/// The weakest compute capability of the GPUs; None when any is unknown.
fn weakest(hw: &Hardware) -> Option<f64> {
    hw.gpus
        .iter()
        .map(|g| g.compute_capability)
        .try_fold(f64::INFINITY, |m, c| c.map(|c| m.min(c)))
        .filter(|c| c.is_finite())
}

/// Ok when `engine` loads this checkpoint on every GPU of `hw` (a GPU of unknown compute
/// capability gets the benefit of the doubt, as the planners' other checks do); otherwise the
/// reason, one line.
pub fn supported(engine: Engine, spec: &ModelSpec, hw: &Hardware) -> Result<(), String> {
    let Some((min, source)) = min_capability(engine, spec) else {
        return Err(format!(
            "{}: {} quantization is not planned for {}",
            spec.id,
            spec.quant
                .as_ref()
                .map(|q| q.method.as_str())
                .unwrap_or("this"),
            engine.name()
        ));
    };
    match weakest(hw) {
        Some(cc) if cc + 1e-9 < min => Err(format!(
            "{} not planned for {}: it needs compute capability {min:.1} ({source}), the GPU has {cc:.1}",
            spec.id,
            engine.name()
        )),
        _ => Ok(()),
    }
}

/// The kernel the engine runs these weights with on `hw`, in its own words.
fn kernel(engine: Engine, spec: &ModelSpec, hw: &Hardware) -> &'static str {
    let cc = weakest(hw);
    let at_least = |c: f64| cc.is_none_or(|x| x + 1e-9 >= c);
    let method = spec.quant.as_ref().map(|q| q.method.as_str()).unwrap_or("");
    match kind(spec) {
        Kind::Int { .. } if at_least(8.0) => {
            if method.starts_with("awq") {
                "awq_marlin (picked by the engine itself from 8.0)"
            } else {
                "gptq_marlin (picked by the engine itself from 8.0)"
            }
        }
        Kind::Int { .. } if method.starts_with("awq") => {
            "the plain AWQ kernels (no Marlin below 8.0)"
        }
        Kind::Int { .. } => "the exllama GPTQ kernels (no Marlin below 8.0)",
        Kind::Fp8Block { .. } | Kind::Fp8 if at_least(8.9) => "native FP8 GEMMs (8.9 and up)",
        Kind::Fp8Block { .. } | Kind::Fp8 => {
            "the Marlin W8A16 kernel (weights stay FP8, math in 16-bit: no FP8 GEMMs below 8.9)"
        }
        Kind::Other => match engine {
            Engine::Vllm | Engine::Sglang => "the checkpoint's own quantization method",
        },
    }
}

/// The settings line of a variant plan: the repo, its format, where it comes from, the kernel.
pub fn why(engine: Engine, repo: &str, spec: &ModelSpec, hw: &Hardware, bits: f64) -> String {
    let v = vramfit_model::catalog::find_variant(repo);
    let format = v.map(|v| v.format_name()).unwrap_or_else(|| {
        spec.quant
            .as_ref()
            .map(|q| q.method.clone())
            .unwrap_or_default()
    });
    let from = v.map(|v| format!(" of {}", v.source())).unwrap_or_default();
    let caveat = v
        .and_then(|v| v.caveat.as_deref())
        .map(|c| format!("; caveat: {c}"))
        .unwrap_or_default();
    format!(
        "serves the pre-quantized {repo} ({format} checkpoint{from}), {bits:.1} bits per weight as loaded; {} reads the quantization from its config.json (no --quantization flag) and runs it with {}{caveat}",
        engine.name(),
        kernel(engine, spec, hw)
    )
}

/// The variants of the planned model that `engine` cannot run here, as notes for `fit`.
pub fn skipped(offers: &[Offer], engine: Engine, hw: &Hardware) -> Vec<String> {
    offers
        .iter()
        .filter_map(|o| supported(engine, &o.resolved.spec, hw).err())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use vramfit_engine::Gpu;
    use vramfit_model::catalog::find_variant;
    use vramfit_model::hf_config::spec_from_config;

    fn spec(repo: &str) -> ModelSpec {
        let v = find_variant(repo).unwrap();
        spec_from_config(&v.repo, &v.config().unwrap()).unwrap()
    }

    fn hw(cc: Option<f64>) -> Hardware {
        Hardware {
            gpus: vec![Gpu {
                name: "gpu".into(),
                total_bytes: 16 << 30,
                free_bytes: 16 << 30,
                bandwidth_gbps: None,
                compute_capability: cc,
                unified: false,
            }],
            host_ram_bytes: None,
        }
    }

    #[test]
    fn kernel_support_follows_the_engines_minimum_capabilities() {
        let awq = spec("Qwen/Qwen3-8B-AWQ");
        let fp8 = spec("Qwen/Qwen3-8B-FP8");
        let gptq = spec("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4");
        let ct = spec("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic");
        let moe_int4 = spec("Qwen/Qwen3-30B-A3B-GPTQ-Int4");
        for e in [Engine::Vllm, Engine::Sglang] {
            // T4 / RTX 20xx (7.5): AWQ yes, FP8 no
            assert!(supported(e, &awq, &hw(Some(7.5))).is_ok());
            assert!(supported(e, &fp8, &hw(Some(7.5))).is_err());
            assert!(supported(e, &ct, &hw(Some(7.5))).is_err());
            // V100 (7.0): AWQ no, GPTQ yes
            assert!(supported(e, &awq, &hw(Some(7.0))).is_err());
            assert!(supported(e, &gptq, &hw(Some(7.0))).is_ok());
            // Ampere: everything, FP8 through Marlin
            for s in [&awq, &fp8, &gptq, &ct, &moe_int4] {
                assert!(supported(e, s, &hw(Some(8.0))).is_ok(), "{}", s.id);
                assert!(supported(e, s, &hw(None)).is_ok(), "{}", s.id);
            }
        }
        // int4 MoE: vLLM's MoE WNA16 kernels from 7.0, SGLang only through Marlin
        assert!(supported(Engine::Vllm, &moe_int4, &hw(Some(7.5))).is_ok());
        assert!(supported(Engine::Sglang, &moe_int4, &hw(Some(7.5))).is_err());
        let msg = supported(Engine::Vllm, &fp8, &hw(Some(7.5))).unwrap_err();
        assert!(
            msg.contains("8.0") && msg.contains("7.5") && !msg.contains('\n'),
            "{msg}"
        );
        assert!(kernel(Engine::Vllm, &fp8, &hw(Some(8.6))).contains("Marlin"));
        assert!(kernel(Engine::Vllm, &fp8, &hw(Some(8.9))).contains("native"));
        assert!(kernel(Engine::Vllm, &awq, &hw(Some(8.6))).contains("awq_marlin"));
        assert!(kernel(Engine::Vllm, &awq, &hw(Some(7.5))).contains("plain AWQ"));
    }

    #[test]
    fn tensor_parallel_keeps_whole_groups_and_blocks() {
        // Qwen3-235B-A22B-FP8: experts of 1536 split 8 ways are 192, not whole 128-blocks
        let big = spec("Qwen/Qwen3-235B-A22B-FP8");
        assert!(tp_ok(&big, 4) && !tp_ok(&big, 8));
        let big_int4 = spec("Qwen/Qwen3-235B-A22B-GPTQ-Int4");
        assert!(tp_ok(&big_int4, 4) && !tp_ok(&big_int4, 8));
        // Qwen3-30B-A3B experts of 768: 2 ranks hold 384 (3 groups), 4 ranks 192
        let small_moe = spec("Qwen/Qwen3-30B-A3B-GPTQ-Int4");
        assert!(tp_ok(&small_moe, 2) && !tp_ok(&small_moe, 4));
        // the 72B AWQ is padded to 29696 so that 8 ranks hold whole groups
        assert!(tp_ok(&spec("Qwen/Qwen2.5-72B-Instruct-AWQ"), 8));
        // Qwen2.5-7B: 18944 / 8 = 2368, not whole 128-groups
        let q7 = spec("Qwen/Qwen2.5-7B-Instruct-AWQ");
        assert!(tp_ok(&q7, 4) && !tp_ok(&q7, 8));
        // unquantized and per-channel FP8 checkpoints split freely
        let plain = spec_from_config(
            "Qwen/Qwen2.5-7B-Instruct",
            &vramfit_model::catalog::find_model("Qwen/Qwen2.5-7B-Instruct")
                .unwrap()
                .config,
        )
        .unwrap();
        assert!(tp_ok(&plain, 8));
        assert!(tp_ok(
            &spec("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"),
            8
        ));
    }

    #[test]
    fn the_why_line_names_the_repo_and_its_format() {
        let s = spec("Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4");
        let w = why(Engine::Vllm, &s.id, &s, &hw(Some(8.9)), 4.6);
        assert!(w.contains("Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4"), "{w}");
        assert!(
            w.contains("GPTQ 4-bit g128") && w.contains("gptq_marlin"),
            "{w}"
        );
        assert!(w.contains("caveat") && !w.contains('\n'), "{w}");
    }
}
