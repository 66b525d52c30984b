//! The embedded catalogs: model architectures (real HF `config.json` content) and GPUs.
//!
//! Both are JSON files compiled into the binary (`crates/vramfit-model/catalog/`), parsed once
//! on first use. Every entry carries its sources; `scripts/catalog/` rebuilds and cross-checks
//! the model file.
//!
//! ```
//! use vramfit_model::catalog::{find_gpu, find_model};
//! let m = find_model("unsloth/Llama-3.1-8B-Instruct-GGUF:Q4_K_M").unwrap();
//! assert_eq!(m.id, "meta-llama/Llama-3.1-8B-Instruct");
//! assert_eq!(m.config["num_key_value_heads"], 8);
//! let g = find_gpu("4090").unwrap();
//! assert_eq!(g.name, "NVIDIA GeForce RTX 4090");
//! ```
//!
//! A release whose `config.json` differs (a longer context, another rope base, other widths) is
//! its own entry — `Qwen/Qwen3-4B-Instruct-2507` (262144 tokens) is not `Qwen/Qwen3-4B` (40960)
//! — and an alias only ever names a checkpoint with the same config (`tests/catalog_identity.rs`
//! checks both). A name that finds nothing gets the closest repo ids from [`suggest`].
//!
//! Lookup rules are in [`lookup`]: models by repo id, then name across organisations, then alias;
//! GPUs by loose token matching. Pre-quantized checkpoints of catalog models (AWQ, GPTQ, FP8
//! repos) are in [`quantized`], found by their repo id (or their name when unique).

pub mod gguf_repos;
pub mod lookup;
pub mod quantized;
pub mod suggest;

use serde::Deserialize;
use serde_json::Value;
use std::sync::OnceLock;

pub use lookup::{find_gpu, find_model, GpuLookupError};
pub use quantized::{find_variant, quantized_variants, variants, variants_of_checkpoint, Variant};
pub use suggest::suggest_models;

const MODELS_JSON: &str = include_str!("../../catalog/models.json");
const GPUS_JSON: &str = include_str!("../../catalog/gpus.json");

/// One model architecture of the catalog.
#[derive(Debug, Clone)]
pub struct CatalogModel {
    /// Hugging Face repo id, e.g. `meta-llama/Llama-3.1-8B-Instruct`.
    pub id: String,
    /// Other names that share this architecture (base/instruct repos, Ollama tags, renames).
    pub aliases: Vec<String>,
    pub display_name: String,
    /// The memory-relevant keys of the repo's real `config.json`, nested as the file nests them.
    pub config: Value,
    /// Total parameters as the model card states them (often rounded), when known.
    pub params_official_total: Option<u64>,
    /// Active parameters per token (MoE), as the model card states them.
    pub params_official_active: Option<u64>,
    /// Where the figure for `params_official_*` comes from.
    pub params_official_source: String,
    pub sources: Vec<String>,
    /// Facts of this entry no public copy confirmed (kept from model cards or the family pattern).
    pub unverified: Vec<String>,
    pub notes: String,
}

impl CatalogModel {
    /// The repo name without the organisation: `Llama-3.1-8B-Instruct`.
    pub fn name(&self) -> &str {
        self.id.rsplit('/').next().unwrap_or(&self.id)
    }

    /// `config["model_type"]`; for multimodal wrappers the wrapper's (`gemma3`, `llama4`).
    pub fn model_type(&self) -> &str {
        self.config["model_type"].as_str().unwrap_or("")
    }

    /// The decoder's layer count, wherever the config keeps it (`text_config`, `num_layers`).
    pub fn num_layers(&self) -> Option<u64> {
        let text = self.config.get("text_config").unwrap_or(&self.config);
        text.get("num_hidden_layers")
            .or_else(|| text.get("num_layers"))
            .and_then(Value::as_u64)
    }
}

/// One GPU (or unified-memory SoC) of the catalog.
#[derive(Debug, Clone, Deserialize)]
pub struct CatalogGpu {
    /// Stable short id, e.g. `rtx-4090`, `a100-sxm4-80gb`.
    pub id: String,
    /// The name as the driver prints it (`nvidia-smi`, `rocm-smi`, Metal).
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// `NVIDIA`, `AMD`, `Apple`, `Intel`.
    pub vendor: String,
    /// Total memory as engines see it (cudaMemGetInfo total / nvidia-smi memory.total); for
    /// unified-memory parts the system memory of the named configuration.
    pub memory_bytes: u64,
    /// True when `memory_bytes` is derived from the marketing size by the documented rule
    /// instead of read from a real device.
    #[serde(default)]
    pub memory_estimated: bool,
    /// The size on the box, in GB as marketed.
    pub memory_marketing_gb: f64,
    /// Peak memory bandwidth, GB/s.
    pub bandwidth_gbps: f64,
    /// CUDA compute capability (`8.9`); AMD gfx target (`gfx942`); `None` for others.
    pub compute_capability: Option<String>,
    /// CPU and GPU share one memory (Apple silicon, GH200's Grace side excluded, Jetson, GB10).
    #[serde(default)]
    pub unified_memory: bool,
    pub bf16: bool,
    pub fp8: bool,
    pub fp4: bool,
    #[serde(default)]
    pub sources: Vec<String>,
    #[serde(default)]
    pub notes: String,
}

#[derive(Deserialize)]
struct RawModel {
    id: String,
    #[serde(default)]
    aliases: Vec<String>,
    display_name: String,
    config: Value,
    params_official: RawParams,
    #[serde(default)]
    sources: Vec<String>,
    #[serde(default)]
    unverified: Vec<String>,
    #[serde(default)]
    notes: String,
}

#[derive(Deserialize)]
struct RawParams {
    total: Option<u64>,
    active: Option<u64>,
    #[serde(default)]
    source: String,
}

/// Parses a model catalog file (the embedded one, or a test's).
pub fn parse_models(json: &str) -> Result<Vec<CatalogModel>, serde_json::Error> {
    let raw: Vec<RawModel> = serde_json::from_str(json)?;
    Ok(raw
        .into_iter()
        .map(|r| CatalogModel {
            id: r.id,
            aliases: r.aliases,
            display_name: r.display_name,
            config: r.config,
            params_official_total: r.params_official.total,
            params_official_active: r.params_official.active,
            params_official_source: r.params_official.source,
            sources: r.sources,
            unverified: r.unverified,
            notes: r.notes,
        })
        .collect())
}

/// Parses a GPU catalog file (the embedded one, or a test's).
pub fn parse_gpus(json: &str) -> Result<Vec<CatalogGpu>, serde_json::Error> {
    serde_json::from_str(json)
}

/// Every model of the embedded catalog, in file order.
pub fn models() -> &'static [CatalogModel] {
    static MODELS: OnceLock<Vec<CatalogModel>> = OnceLock::new();
    // The embedded file is checked by the crate's tests; a parse failure is a build defect.
    MODELS.get_or_init(|| parse_models(MODELS_JSON).expect("embedded catalog/models.json parses"))
}

/// Every GPU of the embedded catalog, in file order.
pub fn gpus() -> &'static [CatalogGpu] {
    static GPUS: OnceLock<Vec<CatalogGpu>> = OnceLock::new();
    GPUS.get_or_init(|| parse_gpus(GPUS_JSON).expect("embedded catalog/gpus.json parses"))
}
