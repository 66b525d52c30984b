//! The command line itself: arbitrary words as the serving command pasted after `--`, through
//! the reader, every engine's flag parser and its memory plan (on catalog models and a few
//! GPUs), plus the flag values the binary parses (sizes, contexts, GPU names, engine versions).
//! None of it may panic (overflow included: fuzz builds check arithmetic), hang or allocate
//! without bound. Input: words separated by NUL bytes; the first word is the hardware and
//! `--engine-version` value, the rest the command.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use vramfit_engine::cmdline::{Command, EngineKind};
use vramfit_engine::{llamacpp, ollama, sglang, transformers, vllm, Gpu, Hardware};
use vramfit_model::{GgmlType, ModelSpec, WeightSet};

/// Dense GQA, sliding-window, MoE and MLA models from the embedded catalog.
fn models() -> &'static [(ModelSpec, WeightSet)] {
    static CELL: OnceLock<Vec<(ModelSpec, WeightSet)>> = OnceLock::new();
    CELL.get_or_init(|| {
        ["Qwen/Qwen3-8B", "google/gemma-3-12b-it", "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V2-Lite"]
            .iter()
            .filter_map(|id| vramfit_model::catalog::find_model(id))
            .filter_map(|m| vramfit_model::hf_config::spec_from_config(&m.id, &m.config).ok())
            .map(|s| {
                let w = vramfit_model::layout::synthesize(&s, GgmlType::BF16);
                (s, w)
            })
            .collect()
    })
}

fn gpu(total: u64) -> Gpu {
    Gpu {
        name: "fuzz".into(),
        total_bytes: total,
        free_bytes: total,
        bandwidth_gbps: Some(1000.0),
        compute_capability: Some(8.9),
        unified: false,
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut words = text.split('\0');
    let head = words.next().unwrap_or("");
    let argv: Vec<String> = words.take(64).map(str::to_string).collect();
    // flag values the binary reads
    let _ = vramfit_model::units::parse_size(head);
    let _ = vramfit_model::units::parse_context(head);
    let _ = vramfit_model::catalog::find_gpu(head);
    let _ = vllm::version::Version::parse(head);
    let _ = llamacpp::version::Build::parse(head);
    let version = (!head.is_empty()).then_some(head);
    let n_gpu = 1 + head.len() % 4;
    let total = [8u64 << 30, 24 << 30, 80 << 30, 141 << 30][head.len() / 4 % 4];
    let hw = Hardware {
        gpus: vec![gpu(total); n_gpu],
        host_ram_bytes: Some(64 << 30),
    };
    let Ok(cmd) = Command::parse(&argv) else { return };
    let ms = models();
    if ms.is_empty() {
        return;
    }
    let (spec, weights) = &ms[data.len() % ms.len()];
    match cmd.engine {
        Some(EngineKind::Vllm) => {
            if let Ok(cfg) = vllm::parse(&cmd, version) {
                let _ = vllm::plan(spec, Some(weights), &cfg, &hw);
            }
        }
        Some(EngineKind::LlamaCpp) => {
            let build = version.and_then(llamacpp::version::Build::parse);
            if let Ok(cfg) = llamacpp::parse(&cmd.program, &cmd.args, &cmd.env, build) {
                let _ = llamacpp::plan(spec, weights, &cfg, &hw);
            }
        }
        Some(EngineKind::Ollama) => {
            let read = |_: &str| Err::<String, String>("no files while fuzzing".into());
            if let Ok(cfg) = ollama::parse(&cmd, version, &read) {
                let _ = ollama::plan(spec, weights, &cfg, &hw);
            }
        }
        Some(EngineKind::Sglang) => {
            if let Ok(cfg) = sglang::parse(&cmd) {
                let _ = sglang::plan(spec, Some(weights), &cfg, &hw);
            }
        }
        Some(EngineKind::Transformers) => {
            if let Ok(cfg) = transformers::parse(&cmd) {
                let _ = transformers::plan(spec, &cfg, &hw);
            }
        }
        None => {}
    }
});
