//! `transformers MODEL [flags]` → [`TransformersConfig`]: a `from_pretrained` + `generate` run
//! written as a command line (there is no transformers serving CLI to paste):
//!
//! ```text
//! transformers MODEL --dtype bf16 [--load-in-4bit [--bnb-4bit-use-double-quant] | --load-in-8bit]
//!     --batch-size N --prompt-tokens N --max-new-tokens N [--num-beams N]
//!     [--device-map auto|sequential|balanced|cuda:0] [--max-memory 0:20GiB,1:20GiB,cpu:64GiB]
//!     [--attn-implementation sdpa|eager|flash_attention_2] [--cache-implementation dynamic|static]
//! ```
//!
//! Names follow the Python keywords (`torch_dtype`/`dtype`, `load_in_4bit`, `max_memory`, ...),
//! with dashes or underscores.

use crate::cmdline::{Command, EngineKind, Flag, FlagReader};
use crate::error::EngineError;
use vramfit_model::units::parse_size;

/// bitsandbytes quantization of the linear layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bnb {
    None,
    /// `load_in_4bit` (nf4 or fp4: same storage), with or without double quantization
    FourBit {
        double_quant: bool,
    },
    /// `load_in_8bit` (LLM.int8)
    EightBit,
}

/// `device_map`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceMap {
    /// `auto` / `balanced`: accelerate `get_balanced_memory`, then `infer_auto_device_map`
    Balanced,
    /// `sequential`: fill GPU 0, then GPU 1, ...
    Sequential,
    /// everything on one device (`cuda:1`, `0`, none given)
    Single(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct TransformersConfig {
    pub model: String,
    /// `auto` (the checkpoint's), `bfloat16`, `float16`, `float32`
    pub dtype: String,
    pub bnb: Bnb,
    pub batch_size: u64,
    pub prompt_tokens: u64,
    pub max_new_tokens: u64,
    pub num_beams: u64,
    pub device_map: DeviceMap,
    /// `max_memory`: (device, bytes); device `0`, `1`, ... or `cpu`
    pub max_memory: Option<Vec<(String, u64)>>,
    pub attn_implementation: String,
    pub static_cache: bool,
    pub use_cache: bool,
    /// `--logits-to-keep all`: the whole prompt's logits (transformers before 4.45, or a model
    /// without `logits_to_keep`)
    pub full_prefill_logits: bool,
    /// `PYTORCH_CUDA_ALLOC_CONF` asks for `expandable_segments:True`
    pub expandable_segments: bool,
    pub notes: Vec<String>,
}

const FLAGS: &[Flag] = &[
    Flag::value(
        "--model",
        &["--model-name-or-path", "--pretrained-model-name-or-path"],
    ),
    Flag::value("--dtype", &["--torch-dtype"]),
    Flag::boolean("--load-in-4bit", &[]),
    Flag::boolean("--load-in-8bit", &[]),
    Flag::boolean("--bnb-4bit-use-double-quant", &["--double-quant"]),
    Flag::value("--bnb-4bit-quant-type", &[]),
    Flag::value("--bnb-4bit-compute-dtype", &[]),
    Flag::value("--batch-size", &["--bs"]),
    Flag::value("--prompt-tokens", &["--input-tokens", "--prompt-len"]),
    Flag::value("--max-new-tokens", &[]),
    Flag::value("--num-beams", &[]),
    Flag::value("--device-map", &[]),
    Flag::value("--max-memory", &[]),
    Flag::value("--attn-implementation", &[]),
    Flag::value("--cache-implementation", &[]),
    Flag::boolean("--use-cache", &[]),
    Flag::value("--logits-to-keep", &["--num-logits-to-keep"]),
    Flag::boolean("--trust-remote-code", &[]),
    Flag::boolean("--low-cpu-mem-usage", &[]),
];

fn count(flag: &str, v: &str) -> Result<u64, EngineError> {
    // batches and beams past 2^16, or 2^24 tokens in one generate() call, are typos, and would
    // overflow the byte counts (2^16 rows × 2^25 tokens × 2^17 bytes per token fits in u64)
    let max: u64 = if matches!(flag, "--batch-size" | "--num-beams") {
        1 << 16
    } else {
        1 << 24
    };
    vramfit_model::units::parse_context(v)
        .ok()
        .or_else(|| v.trim().parse().ok())
        .filter(|n| *n <= max)
        .ok_or_else(|| {
            EngineError::bad_value(flag, v, format!("a count such as 8 or 4k, at most {max}"))
        })
}

/// `0:20GiB,1:20GiB,cpu:64GiB` (also `cuda:0=20GiB`).
pub fn parse_max_memory(v: &str) -> Result<Vec<(String, u64)>, EngineError> {
    let bad = || {
        EngineError::bad_value(
            "--max-memory",
            v,
            "DEVICE:SIZE pairs such as 0:20GiB,1:20GiB,cpu:64GiB",
        )
    };
    v.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (d, s) = p.rsplit_once([':', '=']).ok_or_else(bad)?;
            let d = d.trim().trim_start_matches("cuda:").to_ascii_lowercase();
            let d = d.trim_matches(|c| c == '\'' || c == '"').to_string();
            if d != "cpu" && d != "disk" && d.parse::<usize>().is_err() {
                return Err(bad());
            }
            Ok((d, parse_size(s.trim()).map_err(|_| bad())?))
        })
        .collect()
}

/// Read a transformers command line.
pub fn parse(cmd: &Command) -> Result<TransformersConfig, EngineError> {
    if cmd.engine != Some(EngineKind::Transformers) {
        return Err(EngineError::WrongEngine {
            program: cmd.program.clone(),
            engine: "transformers",
            example: "transformers Qwen/Qwen3-8B --dtype bf16 --batch-size 4 --prompt-tokens 2048 --max-new-tokens 512",
        });
    }
    let flags = FlagReader::new(FLAGS)
        .underscores_as_dashes()
        .read(&cmd.args)?;
    let mut pos: Vec<&str> = flags.positionals.iter().map(String::as_str).collect();
    if matches!(pos.first(), Some(&("generate" | "run" | "chat" | "serve"))) {
        pos.remove(0);
    }
    let model = flags
        .get("--model")
        .or(pos.first().copied())
        .map(str::to_string)
        .ok_or(EngineError::NoModel {
            engine: "transformers",
            example: "transformers ORG/MODEL --dtype bf16",
        })?;
    let mut notes = Vec::new();
    let dtype = match flags.get("--dtype").map(|d| d.to_ascii_lowercase()) {
        None => "auto".to_string(),
        Some(d) => match d.trim_start_matches("torch.") {
            "auto" => "auto".into(),
            "bf16" | "bfloat16" => "bfloat16".into(),
            "fp16" | "float16" | "half" => "float16".into(),
            "fp32" | "float32" | "float" => "float32".into(),
            _ => {
                return Err(EngineError::bad_value(
                    "--dtype",
                    &d,
                    "auto, bf16, fp16 or fp32",
                ))
            }
        },
    };
    let four = flags.bool("--load-in-4bit").unwrap_or(false);
    let eight = flags.bool("--load-in-8bit").unwrap_or(false);
    if four && eight {
        return Err(EngineError::bad_value(
            "--load-in-8bit",
            "with --load-in-4bit",
            "choose one of --load-in-4bit and --load-in-8bit",
        ));
    }
    let bnb = if four {
        // BitsAndBytesConfig: bnb_4bit_use_double_quant defaults to False
        Bnb::FourBit {
            double_quant: flags.bool("--bnb-4bit-use-double-quant").unwrap_or(false),
        }
    } else if eight {
        Bnb::EightBit
    } else {
        Bnb::None
    };
    let device_map = match flags.get("--device-map").map(str::to_ascii_lowercase) {
        None => DeviceMap::Single(0),
        Some(d) => match d.as_str() {
            "auto" | "balanced" | "balanced_low_0" | "balanced-low-0" => DeviceMap::Balanced,
            "sequential" => DeviceMap::Sequential,
            "cuda" | "gpu" => DeviceMap::Single(0),
            other => match other.trim_start_matches("cuda:").parse::<usize>() {
                Ok(i) => DeviceMap::Single(i),
                Err(_) => {
                    return Err(EngineError::bad_value(
                        "--device-map",
                        &d,
                        "auto, sequential, balanced or a GPU such as cuda:0",
                    ))
                }
            },
        },
    };
    let max_memory = flags
        .get("--max-memory")
        .map(parse_max_memory)
        .transpose()?;
    let static_cache = match flags
        .get("--cache-implementation")
        .map(str::to_ascii_lowercase)
    {
        None => false,
        Some(c) if c == "dynamic" => false,
        Some(c) if c == "static" || c == "offloaded_static" => true,
        Some(c) => {
            notes.push(format!(
                "--cache-implementation {c}: planned as the dynamic cache"
            ));
            false
        }
    };
    let full_prefill_logits = match flags.get("--logits-to-keep") {
        None | Some("1") => false,
        Some("0" | "all") => true,
        Some(v) => {
            return Err(EngineError::bad_value(
                "--logits-to-keep",
                v,
                "1 (generate's default) or all",
            ))
        }
    };
    for u in &flags.unknown {
        notes.push(format!("{u}: not a memory flag vramfit knows; ignored"));
    }
    if let Some(t) = flags.get("--bnb-4bit-compute-dtype") {
        notes.push(format!(
            "--bnb-4bit-compute-dtype {t}: activations planned in the model dtype"
        ));
    }
    Ok(TransformersConfig {
        model,
        dtype,
        bnb,
        batch_size: flags
            .get("--batch-size")
            .map(|v| count("--batch-size", v))
            .transpose()?
            .unwrap_or(1)
            .max(1),
        prompt_tokens: flags
            .get("--prompt-tokens")
            .map(|v| count("--prompt-tokens", v))
            .transpose()?
            .unwrap_or(512),
        // GenerationConfig default max_length 20 means ~20 new tokens; a real run sets it
        max_new_tokens: flags
            .get("--max-new-tokens")
            .map(|v| count("--max-new-tokens", v))
            .transpose()?
            .unwrap_or(256),
        num_beams: flags
            .get("--num-beams")
            .map(|v| count("--num-beams", v))
            .transpose()?
            .unwrap_or(1)
            .max(1),
        device_map,
        max_memory,
        attn_implementation: flags
            .get("--attn-implementation")
            .unwrap_or("sdpa")
            .to_ascii_lowercase(),
        static_cache,
        use_cache: flags.bool("--use-cache").unwrap_or(true),
        full_prefill_logits,
        expandable_segments: cmd.env.iter().any(|(k, v)| {
            k == "PYTORCH_CUDA_ALLOC_CONF"
                && v.replace(' ', "")
                    .to_ascii_lowercase()
                    .contains("expandable_segments:true")
        }),
        notes,
    })
}
