//! The one margin policy of `vramfit check` and `vramfit fit`: the memory a plan keeps free on
//! each GPU beyond what the engine model predicts. It is the larger of
//!
//! - the engine model's measured error (the p90 under-prediction on real logs, computed by the
//!   caller: `vramfit_plan::headroom`), and
//! - what the engine keeps free itself when it sizes the launch, so that a plan that pins every
//!   knob (and turns the engine's own fitting off) is never tighter than the engine would be:
//!   llama.cpp's `--fit-target`, 1024 MiB per device by default (common/fit.cpp, #16653; the
//!   engine crate's `llamacpp::fit` mirrors it); Ollama runs llama-server and keeps the same.
//!   vLLM and SGLang keep their margin inside their own budget (`1 − --gpu-memory-utilization`,
//!   `1 − --mem-fraction-static` of the memory), so their floor here is 0.

use vramfit_model::units::{fmt_bytes, MIB};

/// llama.cpp's default `--fit-target` (common/fit.cpp, #16653), per device.
pub const LLAMACPP_FIT_TARGET_BYTES: u64 = 1024 * MIB;

/// The floor of the margin for an engine (`llama.cpp`, `ollama`, `vllm`, `sglang`,
/// `transformers`), per GPU.
pub fn engine_floor(engine: &str) -> u64 {
    match engine {
        "llama.cpp" | "llamacpp" | "llama-server" | "ollama" => LLAMACPP_FIT_TARGET_BYTES,
        _ => 0,
    }
}

/// The margin per GPU: the larger of the measured error and the engine's own floor.
pub fn margin(engine: &str, measured: u64) -> u64 {
    measured.max(engine_floor(engine))
}

/// One line for a report: what is kept free and why.
pub fn describe(engine: &str, measured: u64) -> String {
    let floor = engine_floor(engine);
    if floor >= measured && floor > 0 {
        format!(
            "{} kept free per GPU: llama.cpp's own --fit-target default (common/fit.cpp), larger than the model's measured error ({})",
            fmt_bytes(floor),
            fmt_bytes(measured)
        )
    } else {
        format!(
            "{} kept free per GPU: the engine model's p90 under-prediction on real logs",
            fmt_bytes(measured)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_below_the_engine_floor() {
        assert_eq!(margin("llama.cpp", 48 * MIB), 1024 * MIB);
        assert_eq!(margin("ollama", 2048 * MIB), 2048 * MIB);
        assert_eq!(margin("vllm", 207 * MIB), 207 * MIB);
    }
}
