//! vLLM's KV pool arithmetic on real logs: the hybrid sliding-window grouping of Gemma-3-27B
//! (record vllm-log-037, v0.11: "Add 8 padding layers", 89,994 blocks → "GPU KV cache size:
//! 205,696 tokens", "Maximum concurrency for 4,096 tokens per request: 50.05x") and the PP2 split
//! of Qwen3-14B (record vllm-log-017: 14.04 GiB → 184,000 tokens).

use serde_json::json;
use vramfit_engine::vllm::kv::{KvKind, KvLayout, LayoutInputs};
use vramfit_engine::vllm::weights::{pp_layer_ranges, vocab_rows_per_rank};
use vramfit_model::hf_config::spec_from_config;
use vramfit_model::units::GIB;

fn gemma3_27b() -> vramfit_model::ModelSpec {
    let cfg = json!({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
        "text_config": {"model_type": "gemma3_text", "hidden_size": 5376, "intermediate_size": 21504,
            "num_hidden_layers": 62, "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128,
            "sliding_window": 1024, "sliding_window_pattern": 6, "vocab_size": 262208,
            "max_position_embeddings": 131072},
        "torch_dtype": "bfloat16"});
    spec_from_config("google/gemma-3-27b-it", &cfg).unwrap()
}

fn inputs(mnbt: u64, dtype: &str) -> LayoutInputs<'_> {
    LayoutInputs {
        tp: 1,
        kv_cache_dtype: dtype,
        model_dtype_bytes: 2,
        block_size: None,
        max_num_batched_tokens: mnbt,
        disable_hybrid: false,
        compute_capability: Some(9.4),
        mla_cache: Default::default(),
        ssm_dtype_bytes: 2,
    }
}

#[test]
fn gemma3_hybrid_groups_match_the_log() {
    let spec = gemma3_27b();
    let layout = KvLayout::new(&spec, 0..62, inputs(8192, "auto"));
    // 10 global + 52 sliding layers: groups of 10, so 1 full group + 6 sliding groups (8 padding)
    assert_eq!(layout.group_size, 10);
    assert_eq!(layout.n_groups(), 7);
    assert!(layout.groups.contains(&(KvKind::Full, 1)));
    assert!(layout
        .groups
        .contains(&(KvKind::Sliding { window: 1024 }, 6)));
    // page: 16 tokens × 16 heads × (128 + 128) × 2 bytes
    assert_eq!(layout.page_bytes, 16 * 16 * 256 * 2);
    let available = (109.86 * GIB as f64) as i64;
    let blocks = layout.num_blocks(available);
    assert!((89_900..=90_100).contains(&blocks), "{blocks}");
    // the log's own block count gives its token and concurrency lines exactly
    assert_eq!(89_994 / layout.n_groups() * layout.block_size, 205_696);
    let per_request = layout.blocks_per_request(4096);
    assert_eq!(per_request, 256 + 6 * 257);
    let conc = 89_994.0 / per_request as f64;
    assert!((conc - 50.05).abs() < 0.005, "{conc}");
}

#[test]
fn disabling_the_hybrid_manager_caches_sliding_layers_fully() {
    let spec = gemma3_27b();
    let mut inp = inputs(8192, "auto");
    inp.disable_hybrid = true;
    let layout = KvLayout::new(&spec, 0..62, inp);
    assert_eq!(layout.n_groups(), 1);
    assert_eq!(layout.group_size, 62);
    assert_eq!(layout.blocks_per_request(32768), 2048);
}

#[test]
fn fp8_kv_halves_the_page() {
    let spec = gemma3_27b();
    let a = KvLayout::new(&spec, 0..62, inputs(2048, "auto"));
    let b = KvLayout::new(&spec, 0..62, inputs(2048, "fp8_e4m3"));
    assert_eq!(a.page_bytes, 2 * b.page_bytes);
}

#[test]
fn pipeline_stages_follow_get_pp_indices() {
    let r = pp_layer_ranges(40, 2, None).unwrap();
    assert_eq!(r, vec![0..20, 20..40]);
    // remainder to the stages before the last, from the second to last backwards
    let r = pp_layer_ranges(22, 4, None).unwrap();
    assert_eq!(
        r.iter().map(|x| x.end - x.start).collect::<Vec<_>>(),
        [5, 6, 6, 5]
    );
    let r = pp_layer_ranges(61, 4, None).unwrap();
    assert_eq!(
        r.iter().map(|x| x.end - x.start).collect::<Vec<_>>(),
        [15, 15, 16, 15]
    );
    let r = pp_layer_ranges(40, 2, Some(&[16, 24])).unwrap();
    assert_eq!(r, vec![0..16, 16..40]);
    let e = pp_layer_ranges(40, 2, Some(&[16, 20])).unwrap_err();
    assert!(e.to_string().contains("VLLM_PP_LAYER_PARTITION"), "{e}");
}

#[test]
fn qwen3_14b_pp2_stage_tokens() {
    let cfg = json!({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 5120,
        "intermediate_size": 17408, "num_hidden_layers": 40, "num_attention_heads": 40,
        "num_key_value_heads": 8, "vocab_size": 151936, "max_position_embeddings": 40960,
        "torch_dtype": "float16", "head_dim": 128});
    let spec = spec_from_config("Qwen/Qwen3-14B-AWQ", &cfg).unwrap();
    let layout = KvLayout::new(&spec, 20..40, inputs(2048, "auto"));
    assert_eq!(layout.bytes_per_token(), 80 * 1024);
    let blocks = layout.num_blocks((14.04 * GIB as f64) as i64);
    assert_eq!(blocks * 16 / 1000, 184); // the log: 184,000 tokens
                                         // the largest max_model_len whose request fits is a whole number of blocks' worth
    let est = layout.estimate_max_model_len((1.0 * GIB as f64) as i64, 40960);
    assert_eq!(est % 16, 0);
    assert_eq!(est, (GIB / (80 * 1024 * 16)) * 16);
}

#[test]
fn tensor_parallel_replicates_kv_heads_past_their_count() {
    assert_eq!(vramfit_engine::vllm::kv::kv_heads_per_rank(8, 2), 4);
    assert_eq!(vramfit_engine::vllm::kv::kv_heads_per_rank(8, 8), 1);
    assert_eq!(vramfit_engine::vllm::kv::kv_heads_per_rank(8, 16), 1);
    assert_eq!(vramfit_engine::vllm::kv::kv_heads_per_rank(4, 8), 1);
    // vocab padded to 64 per rank
    assert_eq!(vocab_rows_per_rank(151936, 1), 151936);
    assert_eq!(vocab_rows_per_rank(151937, 1), 152000);
    assert_eq!(vocab_rows_per_rank(128256, 3), 42752);
}

/// Qwen3-Next (Gated DeltaNet + attention, 3:1): vLLM raises the attention block so one
/// attention page covers one GDN state page (HybridAttentionMambaModelConfig:
/// `16 * cdiv(mamba_page, 16 * attn_page_per_token)`): a 1,097,728-byte state page (conv
/// 3 × 8,192 + 32 × 128 × 128 recurrent, bf16) over 2,048 bytes per token gives 544 tokens.
#[test]
fn qwen3_next_attention_block_covers_the_state_page() {
    let cfg = json!({"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next",
        "hidden_size": 2048, "intermediate_size": 5120, "num_hidden_layers": 48,
        "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
        "full_attention_interval": 4, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
        "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
        "num_experts": 512, "num_experts_per_tok": 10, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "vocab_size": 151936,
        "max_position_embeddings": 262144, "torch_dtype": "bfloat16"});
    let spec = spec_from_config("Qwen/Qwen3-Next-80B-A3B-Instruct", &cfg).unwrap();
    let layout = KvLayout::new(&spec, 0..48, inputs(8192, "auto"));
    assert_eq!(layout.block_size, 544);
    // 12 attention + 36 GDN layers: groups of 12, one attention group and three state groups
    assert_eq!(layout.group_size, 12);
    assert!(layout.groups.contains(&(KvKind::Full, 1)));
    assert!(layout.groups.contains(&(KvKind::State, 3)));
    // one request: its attention blocks plus one state page per state group
    assert_eq!(layout.blocks_per_request(32768), 32768u64.div_ceil(544) + 3);
}

/// Qwen3.5-27B keeps its DeltaNet SSM state in float32 (config.json `mamba_ssm_dtype`): real
/// v0.19 logs print "Setting attention block size to 784 tokens" and "Padding mamba page size
/// by 0.13%" (code-index ids 52533291234, 70961817511); with the state in bf16 it would be 400.
#[test]
fn qwen35_ssm_state_is_float32() {
    use vramfit_engine::vllm::kv::ssm_state_bytes;
    use vramfit_engine::vllm::Version;
    let m = vramfit_model::catalog::find_model("Qwen/Qwen3.5-27B").unwrap();
    let spec = spec_from_config(&m.id, &m.config).unwrap();
    let v = Version::new(0, 19, 0);
    let layout_with = |ssm: u64| {
        let mut inp = inputs(8192, "auto");
        inp.ssm_dtype_bytes = ssm;
        KvLayout::new(&spec, 0..spec.n_layer(), inp)
    };
    assert_eq!(ssm_state_bytes(&spec, None, v, 2), 4);
    assert_eq!(
        layout_with(ssm_state_bytes(&spec, None, v, 2)).block_size,
        784
    );
    // `--mamba-ssm-cache-dtype bfloat16` overrides the config
    assert_eq!(ssm_state_bytes(&spec, Some("bfloat16"), v, 2), 2);
    assert_eq!(layout_with(2).block_size, 400);
    // Qwen3-Next keeps the model dtype unless told otherwise (PR #34489)
    let n = vramfit_model::catalog::find_model("Qwen/Qwen3-Next-80B-A3B-Instruct").unwrap();
    let next = spec_from_config(&n.id, &n.config).unwrap();
    assert_eq!(ssm_state_bytes(&next, None, v, 2), 2);
    assert_eq!(ssm_state_bytes(&next, Some("float32"), v, 2), 4);
}
