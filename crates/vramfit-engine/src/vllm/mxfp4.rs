//! What vLLM keeps resident for MXFP4 experts (gpt-oss) beyond the checkpoint's tensors: the
//! MoE kernel chosen for the GPU and release pads the expert shapes, and some kernels keep
//! extra copies (vllm model_executor/layers/quantization/mxfp4.py, `create_weights` and
//! `process_weights_after_loading`).

use super::args::VllmConfig;
use super::rocm::moe_layers_in;
use super::version::Version;
use std::ops::Range;
use vramfit_model::ModelSpec;

/// vLLM's MXFP4 MoE backend (mxfp4.py `get_mxfp4_backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mxfp4Backend {
    /// the Marlin MoE kernel, weight-only: intermediate padded to 128, hidden to 256
    Marlin,
    /// OpenAI's `triton_kernels` (`matmul_ogs`) on Hopper: intermediate padded to 64; the
    /// swizzled weights and scales live beside the checkpoint's scale parameters, which stay
    /// registered (only `w13_weight` / `w2_weight` are deleted), and the biases become fp32
    Triton,
    /// FlashInfer on SM100 (TRT-LLM / BF16 paths): both sizes padded to 256, fp32 biases
    FlashInferSm100,
    /// ROCm's `triton_kernels` path: both sizes padded to 128 (`get_padding_alignment`; 256 on
    /// gfx950, not told apart here), fp32 biases; the strided layout ROCm uses views the
    /// checkpoint's tensors rather than copying them
    Rocm,
}

/// The release that ships `triton_kernels` inside vLLM (PR #28788, "[Build] Add OpenAI
/// triton_kernels", vllm/third_party/triton_kernels, merged after v0.11.2 was cut). Before it,
/// Hopper fell back to Marlin unless the user installed the package: vllm#23278 (0.10.1, H100)
/// logs "Weight-only FP4 compression will be used leveraging the Marlin kernel" and loads
/// 65.97 GiB, the Marlin layout, as does a v0.11.2 start (h3a-huikang); v0.14.1 on an H100
/// logs the Triton backend and loads 64.38 GiB (vllm#33155).
const TRITON_SHIPPED: Version = Version::new(0, 12, 0);

/// The backend for this run. `VLLM_MXFP4_USE_MARLIN=1` forces Marlin below SM100. A GPU known
/// only by its size is taken as a pre-Blackwell CUDA card (SM 9.0): every card up to Hopper and
/// the SM120 desktop Blackwells land on Marlin or Triton alike, only SM100 differs.
pub fn backend(cfg: &VllmConfig) -> Mxfp4Backend {
    if cfg.rocm {
        return Mxfp4Backend::Rocm;
    }
    let cc = cfg.compute_capability.unwrap_or(9.0);
    if (10.0..11.0).contains(&cc) {
        return Mxfp4Backend::FlashInferSm100;
    }
    // triton_kernels run on 9.0 ≤ capability < 11.0 ("only confirmed to work on SM90 and
    // SM100"; SM110/SM120 fall back to Marlin)
    let triton = (9.0..10.0).contains(&cc) && cfg.version >= TRITON_SHIPPED;
    if triton && cfg.mxfp4_use_marlin != Some(true) {
        Mxfp4Backend::Triton
    } else {
        Mxfp4Backend::Marlin
    }
}

/// Bytes of MXFP4 data (4-bit values plus an E8M0 scale per 32) for `elems` elements.
fn mx(elems: u64) -> u64 {
    elems / 2 + elems / 32
}

/// The checkpoint's MXFP4 expert tensors of one MoE layer on one rank: w13 and w2 blocks and
/// scales, and the bf16 biases `create_weights` always registers (w13_bias, w2_bias).
pub fn checkpoint_layer_bytes(n_expert: u64, hidden: u64, ff_rank: u64, gates: u64) -> u64 {
    n_expert
        * (mx(hidden * gates * ff_rank) + mx(ff_rank * hidden) + 2 * (gates * ff_rank + hidden))
}

/// Bytes one rank of a pipeline stage holds beyond the checkpoint's MXFP4 expert tensors: the
/// backend's padding, the Triton path's second set of scales, and fp32 biases.
pub fn backend_extra_bytes(spec: &ModelSpec, cfg: &VllmConfig, layers: Range<u64>) -> u64 {
    let (Some(m), Some(q)) = (&spec.moe, &spec.quant) else {
        return 0;
    };
    if q.method != "mxfp4" {
        return 0;
    }
    let tp = cfg.tensor_parallel_size.max(1);
    let gates = if spec.arch.gated_mlp { 2 } else { 1 };
    let h = spec.n_embd;
    let ff = m.n_ff_exp.div_ceil(tp);
    let round = |x: u64, to: u64| x.div_ceil(to) * to;
    let be = backend(cfg);
    let (hp, fp) = match be {
        Mxfp4Backend::Marlin => (round(h, 256), round(ff, 128)),
        Mxfp4Backend::Triton => (h, round(ff, 64)),
        Mxfp4Backend::FlashInferSm100 => (round(h, 256), round(ff, 256)),
        Mxfp4Backend::Rocm => (round(h, 128), round(ff, 128)),
    };
    let n = m.n_expert;
    let (w13, w2) = (hp * gates * fp, fp * hp);
    let mut resident = n * (mx(w13) + mx(w2));
    let bias_elems = n * (gates * fp + hp);
    resident += match be {
        Mxfp4Backend::Marlin => 2 * bias_elems,
        // `layer.w13_bias.to(torch.float32)` replaces the bf16 parameters
        Mxfp4Backend::Triton | Mxfp4Backend::FlashInferSm100 | Mxfp4Backend::Rocm => 4 * bias_elems,
    };
    if be == Mxfp4Backend::Triton {
        // `_swizzle_mxfp4` returns new scale tensors; layer.w13_weight_scale stays
        resident += n * (w13 + w2) / 32;
    }
    let per_layer = resident.saturating_sub(checkpoint_layer_bytes(n, h, ff, gates));
    moe_layers_in(spec, layers) * per_layer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmdline::Command;

    fn cfg(argv: &str, version: &str, cc: Option<f64>) -> VllmConfig {
        let words: Vec<String> = argv.split_whitespace().map(str::to_string).collect();
        let mut c = super::super::parse(&Command::parse(&words).unwrap(), Some(version)).unwrap();
        c.compute_capability = cc;
        c
    }

    #[test]
    fn backend_by_gpu_and_release() {
        let serve = "vllm serve openai/gpt-oss-120b";
        let b = |v: &str, cc: Option<f64>| backend(&cfg(serve, v, cc));
        assert_eq!(b("0.10.1", Some(9.0)), Mxfp4Backend::Marlin);
        assert_eq!(b("0.11.2", Some(9.0)), Mxfp4Backend::Marlin);
        assert_eq!(b("0.14.1", Some(9.0)), Mxfp4Backend::Triton);
        assert_eq!(b("0.14.1", None), Mxfp4Backend::Triton);
        assert_eq!(b("0.14.1", Some(8.0)), Mxfp4Backend::Marlin);
        assert_eq!(b("0.14.1", Some(12.0)), Mxfp4Backend::Marlin);
        assert_eq!(b("0.14.1", Some(10.0)), Mxfp4Backend::FlashInferSm100);
        let forced = cfg(
            &format!("VLLM_MXFP4_USE_MARLIN=1 {serve}"),
            "0.14.1",
            Some(9.0),
        );
        assert_eq!(backend(&forced), Mxfp4Backend::Marlin);
        let mut amd = cfg(serve, "0.14.1", None);
        amd.rocm = true;
        assert_eq!(backend(&amd), Mxfp4Backend::Rocm);
    }

    /// The bytes each backend adds to gpt-oss-120b on one GPU, against the logs: Marlin on an
    /// H100 at v0.10.1 loads 65.97 GiB (vllm#23278), Triton at v0.14.1 64.38 GiB (vllm#33155),
    /// the checkpoint's tensors being about 60.7 GiB.
    #[test]
    fn gpt_oss_120b_extras_by_backend() {
        let m = vramfit_model::catalog::find_model("openai/gpt-oss-120b").unwrap();
        let spec = vramfit_model::hf_config::spec_from_config(&m.id, &m.config).unwrap();
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let serve = "vllm serve openai/gpt-oss-120b";
        let marlin = gib(backend_extra_bytes(
            &spec,
            &cfg(serve, "0.10.1", Some(9.0)),
            0..36,
        ));
        let triton = gib(backend_extra_bytes(
            &spec,
            &cfg(serve, "0.14.1", Some(9.0)),
            0..36,
        ));
        // Marlin: 2880 → 3072 hidden, 2880 → 2944 intermediate; Triton: a second set of scales
        assert!((5.0..5.3).contains(&marlin), "{marlin}");
        assert!((3.3..3.5).contains(&triton), "{triton}");
        assert_eq!(
            backend_extra_bytes(&spec, &cfg(serve, "0.14.1", Some(8.0)), 0..0),
            0
        );
    }
}
