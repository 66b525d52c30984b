//! Weight bytes per vLLM worker: quantized storage, tensor-parallel shards, pipeline stages, and
//! the checkpoint's own tensors when they are known.

use serde_json::json;
use vramfit_engine::cmdline::Command;
use vramfit_engine::vllm::quant::LinearStorage;
use vramfit_engine::vllm::weights::{exact_stage_bytes, pp_layer_ranges, predicted_stage_bytes};
use vramfit_engine::vllm::{self, VllmConfig};
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::{catalog, ModelSpec, Tensor, TensorDtype, WeightSet};

fn cfg(words: &str) -> VllmConfig {
    vllm::parse(&Command::parse(&[words]).unwrap(), None).unwrap()
}

fn catalog_spec(id: &str) -> ModelSpec {
    let m = catalog::models().iter().find(|m| m.id == id).unwrap();
    spec_from_config(&m.id, &m.config).unwrap()
}

fn stages(spec: &ModelSpec, c: &VllmConfig) -> Vec<u64> {
    let r = pp_layer_ranges(spec.n_layer(), c.pipeline_parallel_size, None).unwrap();
    predicted_stage_bytes(spec, c, &r)
}

#[test]
fn storage_formulas_match_checkpoint_layouts() {
    // AWQ 4-bit, group 128: qweight in×out/2, fp16 scales and packed zeros per group
    let awq = LinearStorage::IntGroup {
        bits: 4,
        group: 128,
        zeros: true,
    };
    assert_eq!(
        awq.bytes(5120, 34816),
        5120 * 34816 / 2 + 40 * 34816 * 2 + 40 * 34816 / 2
    );
    // NVFP4: 4-bit values, one fp8 scale per 16 values, two fp32 global scales
    assert_eq!(
        LinearStorage::Nvfp4.bytes(5120, 1024),
        5120 * 1024 / 2 + 5120 * 1024 / 16 + 8
    );
    // FP8 with 128×128 block scales in fp32
    assert_eq!(
        LinearStorage::Fp8Block { block: 128 }.bytes(7168, 2048),
        7168 * 2048 + 56 * 16 * 4
    );
    assert_eq!(
        LinearStorage::Mxfp4.bytes(2880, 5760),
        2880 * 5760 / 2 + 2880 * 5760 / 32
    );
}

#[test]
fn quantized_checkpoints_against_their_published_sizes() {
    let c = cfg("vllm serve m");
    // DeepSeek-V3 (FP8 block 128): 671 B parameters at one byte, embeddings and norms in bf16
    let v3 = stages(&catalog_spec("deepseek-ai/DeepSeek-V3"), &c)[0] as f64 / 1e9;
    assert!((665.0..680.0).contains(&v3), "{v3}");
    // gpt-oss-20b (MXFP4 experts, the rest bf16): 13.8 GB of safetensors
    let oss = stages(&catalog_spec("openai/gpt-oss-20b"), &c)[0] as f64 / 1e9;
    assert!((13.4..14.1).contains(&oss), "{oss}");
}

#[test]
fn tensor_parallel_splits_all_but_replicated_parts() {
    let spec = catalog_spec("meta-llama/Llama-3.1-8B-Instruct");
    let one = stages(&spec, &cfg("vllm serve m"))[0];
    let tp4 = stages(&spec, &cfg("vllm serve m -tp 4"))[0];
    // norms (65 × 4096 × 2 bytes) stay whole on every rank; KV heads 8 → 2 per rank
    let replicated = 65 * 4096 * 2;
    assert_eq!(tp4, (one - replicated) / 4 + replicated);
    // past the KV head count, K/V projections replicate: TP16 keeps one KV head per rank
    let tp16 = stages(&spec, &cfg("vllm serve m -tp 16"))[0];
    let kv_per_rank = 32 * 4096 * 128 * 2 * 2; // 32 layers × (k + v) × one head × bf16
    assert!(tp16 > (one - replicated) / 16 + replicated);
    assert!(tp16 - ((one - replicated) / 16 + replicated) <= kv_per_rank);
}

#[test]
fn pipeline_stages_carry_embedding_and_head() {
    let spec = catalog_spec("meta-llama/Llama-3.1-8B-Instruct");
    let one = stages(&spec, &cfg("vllm serve m"))[0];
    let pp2 = stages(&spec, &cfg("vllm serve m -pp 2"));
    assert_eq!(pp2[0] + pp2[1], one);
    let embed = 128256 * 4096 * 2;
    // both stages hold 16 layers; the first adds the embedding, the last lm_head and final norm
    assert_eq!(pp2[1] - pp2[0], 4096 * 2);
    assert!(pp2[0] > embed);
    // a tied embedding is loaded again as lm_head on the last stage
    let mut tied = spec.clone();
    tied.tie_word_embeddings = true;
    let t1 = stages(&tied, &cfg("vllm serve m"))[0];
    let t2 = stages(&tied, &cfg("vllm serve m -pp 2"));
    assert_eq!(t1 + embed, t2[0] + t2[1]);
}

#[test]
fn checkpoint_tensors_go_to_their_stage() {
    let cfg_json = json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 4096,
        "torch_dtype": "bfloat16"});
    let spec = spec_from_config("tiny", &cfg_json).unwrap();
    let t = |name: &str, bytes: u64| Tensor {
        name: name.into(),
        dims: vec![bytes / 2],
        dtype: TensorDtype::Named("BF16".into()),
        bytes,
    };
    let mut tensors = vec![
        t("model.embed_tokens.weight", 128_000),
        t("lm_head.weight", 128_000),
        t("model.norm.weight", 128),
    ];
    for i in 0..4 {
        tensors.push(t(&format!("model.layers.{i}.mlp.down_proj.weight"), 16_384));
        tensors.push(t(&format!("model.layers.{i}.input_layernorm.weight"), 128));
    }
    // an MTP layer past the main stack is not loaded without MTP speculative decoding
    tensors.push(t("model.layers.4.mlp.down_proj.weight", 16_384));
    let ws = WeightSet {
        tensors,
        source: "test".into(),
    };
    let c = cfg("vllm serve m -pp 2 -tp 2");
    let r = pp_layer_ranges(4, 2, None).unwrap();
    let s = exact_stage_bytes(&ws, &spec, &c, &r);
    assert_eq!(s[0], 64_000 + 2 * (8_192 + 128));
    assert_eq!(s[1], 64_000 + 128 + 2 * (8_192 + 128));
}

/// MLA's decode-path copies by release (`weights::mla_decode_copies`): DeepSeek-R1 TP8 loads
/// 83.88 GiB per GPU on v0.7.3 (pub-20903468563's V0 log) and 79.74 GiB on v0.11.2
/// (rhaiis-deepseek-r1-0528): the absorbed W_Q_UK / W_UV_O (FP8) and W_QR of 0.7.x are the
/// difference; before 0.7.1 the MHA path keeps nothing beside the checkpoint.
#[test]
fn mla_decode_copies_by_release() {
    let spec = catalog_spec("deepseek-ai/DeepSeek-R1");
    let at = |v: &str| {
        let c = vllm::parse(
            &Command::parse(&["vllm serve deepseek-ai/DeepSeek-R1 -tp 8"]).unwrap(),
            Some(v),
        )
        .unwrap();
        let r = pp_layer_ranges(spec.n_layer(), 1, None).unwrap();
        (
            vllm::weights::stage_bytes(&spec, None, &c, &r)[0] as f64 / (1u64 << 30) as f64,
            vllm::weights::mla_decode_copies(&spec, &c, &r)[0] as f64 / (1u64 << 30) as f64,
        )
    };
    let (w073, m073) = at("0.7.3");
    let (w0112, m0112) = at("0.11.2");
    let (w066, m066) = at("0.6.6");
    // the logs: 83.88 - 79.74 = 4.14 GiB between the two releases
    assert!((3.9..4.5).contains(&(w073 - w0112)), "{w073} {w0112}");
    assert!((83.88 * 0.97..83.88 * 1.03).contains(&w073), "{w073}");
    assert!((79.74 * 0.97..79.74 * 1.03).contains(&w0112), "{w0112}");
    // v0.8+: only the dequantized kv_b_proj (bf16, 61 layers x 16 heads x 512 x 256 x 2 bytes)
    assert!((m0112 - 0.238).abs() < 0.01, "{m0112}");
    assert!(m073 > 4.0, "{m073}");
    assert_eq!(m066, 0.0);
    assert!(w066 < w0112);
}
