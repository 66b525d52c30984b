"""Catalog entries, family by family (see models_src.py for the helpers)."""

from models_src import (BF16, M, add, dense, deepseek_v3, gemma2, gemma3_mm, gemma3_text,
                        gpt_oss, llama, llama3_rope, mistral, qwen2, qwen3)

B = 1_000_000_000

# ---- Llama 2 / 3 / 4 ----------------------------------------------------------------------
L2 = "Llama 2 model card (meta-llama/llama-models models/llama2/MODEL_CARD.md)"
add("meta-llama/Llama-2-7b-hf", ["Llama-2-7b", "Llama-2-7b-chat-hf", "Llama-2-7B-Chat", "llama2-7b"],
    "Llama 2 7B", llama(4096, 11008, 32, 32, 32, 32000, 4096, dtype="float16", rms_norm_eps=1e-5),
    7 * B, None, L2, "The real config.json has no rope_theta (LlamaConfig default 10000). Chat variant identical.")
add("meta-llama/Llama-2-13b-hf", ["Llama-2-13b", "Llama-2-13b-chat-hf", "Llama-2-13B-Chat", "llama2-13b"],
    "Llama 2 13B", llama(5120, 13824, 40, 40, 40, 32000, 4096, dtype="float16", rms_norm_eps=1e-5),
    13 * B, None, L2, "Chat variant identical.")
add("meta-llama/Llama-2-70b-hf", ["Llama-2-70b", "Llama-2-70b-chat-hf", "Llama-2-70B-Chat", "llama2-70b"],
    "Llama 2 70B", llama(8192, 28672, 80, 64, 8, 32000, 4096, dtype="float16", rms_norm_eps=1e-5),
    70 * B, None, L2, "GQA with 8 KV heads (7B/13B are MHA).")
L31 = "Llama 3.1 model card (meta-llama/llama-models models/llama3_1/MODEL_CARD.md)"
L3 = "Llama 3 model card (meta-llama/llama-models models/llama3/MODEL_CARD.md)"
add("meta-llama/Meta-Llama-3-8B-Instruct", ["Meta-Llama-3-8B", "Llama-3-8B-Instruct", "Llama-3-8B", "llama3:8b", "llama3"],
    "Llama 3 8B Instruct",
    llama(4096, 14336, 32, 32, 8, 128256, 8192, rope_theta=500000.0), 8 * B, None, L3,
    "Llama 3 (not 3.1): 8192-token context, no rope_scaling.")
add("meta-llama/Meta-Llama-3-70B-Instruct", ["Meta-Llama-3-70B", "Llama-3-70B-Instruct", "Llama-3-70B", "llama3:70b"],
    "Llama 3 70B Instruct",
    llama(8192, 28672, 80, 64, 8, 128256, 8192, rope_theta=500000.0), 70 * B, None, L3,
    "Llama 3 (not 3.1): 8192-token context, no rope_scaling.")
add("meta-llama/Llama-3.1-8B-Instruct",
    ["Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B", "Meta-Llama-3.1-8B", "llama3.1-8b", "llama3.1:8b"],
    "Llama 3.1 8B Instruct",
    llama(4096, 14336, 32, 32, 8, 128256, 131072, rope_theta=500000.0, head_dim=128,
          rope_scaling=llama3_rope(8.0)),
    8030261248, None, "safetensors total of the HF checkpoint (card: 8B)", "Base and Instruct share the architecture.")
add("meta-llama/Llama-3.1-70B-Instruct",
    ["Meta-Llama-3.1-70B-Instruct", "Llama-3.1-70B", "Meta-Llama-3.1-70B", "llama3.1-70b", "llama3.1:70b"],
    "Llama 3.1 70B Instruct",
    llama(8192, 28672, 80, 64, 8, 128256, 131072, rope_theta=500000.0, head_dim=128,
          rope_scaling=llama3_rope(8.0)), 70 * B, None, L31)
add("meta-llama/Llama-3.1-405B-Instruct",
    ["Meta-Llama-3.1-405B-Instruct", "Llama-3.1-405B", "Meta-Llama-3.1-405B", "llama3.1:405b"],
    "Llama 3.1 405B Instruct",
    llama(16384, 53248, 126, 128, 8, 128256, 131072, rope_theta=500000.0, head_dim=128,
          rope_scaling=llama3_rope(8.0)), 405 * B, None, L31,
    "Meta also ships an FP8 checkpoint (Llama-3.1-405B-Instruct-FP8, fbgemm_fp8); this entry is the BF16 one.")
L32 = "Llama 3.2 model card (meta-llama/llama-models models/llama3_2/MODEL_CARD.md)"
add("meta-llama/Llama-3.2-1B-Instruct", ["Llama-3.2-1B", "llama3.2:1b", "Llama-3.2-1B-Instruct"],
    "Llama 3.2 1B Instruct",
    llama(2048, 8192, 16, 32, 8, 128256, 131072, tie=True, rope_theta=500000.0, head_dim=64,
          rope_scaling=llama3_rope(32.0)), 1_230_000_000, None, L32, "Tied embeddings.")
add("meta-llama/Llama-3.2-3B-Instruct", ["Llama-3.2-3B", "llama3.2:3b", "llama3.2"],
    "Llama 3.2 3B Instruct",
    llama(3072, 8192, 28, 24, 8, 128256, 131072, tie=True, rope_theta=500000.0, head_dim=128,
          rope_scaling=llama3_rope(32.0)), 3_210_000_000, None, L32, "Tied embeddings.")
add("meta-llama/Llama-3.3-70B-Instruct", ["Llama-3.3-70B", "llama3.3:70b", "llama3.3"],
    "Llama 3.3 70B Instruct",
    llama(8192, 28672, 80, 64, 8, 128256, 131072, rope_theta=500000.0, head_dim=128,
          rope_scaling=llama3_rope(8.0)), 70 * B, None,
    "Llama 3.3 model card (meta-llama/llama-models models/llama3_3/MODEL_CARD.md)",
    "Same architecture as Llama 3.1 70B.")


def llama4(experts, step, max_pos, rope_scaling):
    return {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
            "text_config": {"model_type": "llama4_text", "hidden_size": 5120,
                            "intermediate_size": 8192, "intermediate_size_mlp": 16384,
                            "num_hidden_layers": 48, "num_attention_heads": 40,
                            "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 202048,
                            "max_position_embeddings": max_pos, "num_local_experts": experts,
                            "num_experts_per_tok": 1, "interleave_moe_layer_step": step,
                            "attention_chunk_size": 8192, "use_qk_norm": step == 1,
                            "rope_theta": 500000.0, "rope_scaling": rope_scaling,
                            "tie_word_embeddings": False, "torch_dtype": BF16},
            "vision_config": {"model_type": "llama4_vision_model", "hidden_size": 1408,
                              "intermediate_size": 5632, "num_hidden_layers": 34,
                              "num_attention_heads": 16, "image_size": 336, "patch_size": 14,
                              "vision_output_dim": 4096, "projector_input_dim": 4096,
                              "projector_output_dim": 4096},
            "tie_word_embeddings": False, "torch_dtype": BF16}


L4 = "Llama 4 model card (meta-llama/llama-models models/llama4/MODEL_CARD.md; totals include the vision encoder)"
add("meta-llama/Llama-4-Scout-17B-16E-Instruct", ["Llama-4-Scout-17B-16E", "Llama-4-Scout", "llama4:scout"],
    "Llama 4 Scout 17B-16E Instruct",
    llama4(16, 1, 10485760, {"factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
                             "original_max_position_embeddings": 8192, "rope_type": "llama3"}),
    109 * B, 17 * B, L4,
    "Every layer MoE (16 routed + 1 shared expert, 8192 wide). 3 of 4 layers use chunked attention "
    "(chunk 8192, RoPE); every 4th layer is global NoPE (no_rope_layers default).")
add("meta-llama/Llama-4-Maverick-17B-128E-Instruct",
    ["Llama-4-Maverick-17B-128E", "Llama-4-Maverick", "llama4:maverick",
     "Llama-4-Maverick-17B-128E-Instruct-FP8"],
    "Llama 4 Maverick 17B-128E Instruct", llama4(128, 2, 1048576, None), 400 * B, 17 * B, L4,
    "MoE every 2nd layer (128 routed + 1 shared, 8192 wide); dense layers use intermediate_size_mlp "
    "16384. The -FP8 repo is the same architecture with FP8 weights (not modelled by this entry).")

# ---- Mistral ------------------------------------------------------------------------------
add("mistralai/Mistral-7B-v0.1", ["Mistral-7B-v0.1", "Mistral-7B-Instruct-v0.1"], "Mistral 7B v0.1",
    mistral(4096, 14336, 32, 32, 8, 32000, 32768, 10000.0, sliding_window=4096),
    7_300_000_000, None, "Mistral 7B announcement (7.3B)",
    "All layers use a 4096-token sliding window. v0.2 dropped the window and uses rope_theta 1e6.")
add("mistralai/Mistral-7B-Instruct-v0.2", ["Mistral-7B-v0.2"], "Mistral 7B Instruct v0.2",
    mistral(4096, 14336, 32, 32, 8, 32000, 32768, 1000000.0), 7_240_000_000, None, "same tensors as v0.1",
    "v0.2 dropped v0.1's 4096-token sliding window and raised rope_theta to 1e6; vocabulary still 32000.")
add("mistralai/Mistral-7B-Instruct-v0.3", ["Mistral-7B-v0.3", "Mistral-7B-Instruct", "mistral:7b", "mistral"],
    "Mistral 7B Instruct v0.3", mistral(4096, 14336, 32, 32, 8, 32768, 32768, 1000000.0),
    7_250_000_000, None, "KAITO catalog BF16 file size 13.50 GiB", "")
add("mistralai/Mistral-Nemo-Instruct-2407", ["Mistral-Nemo-Base-2407", "Mistral-Nemo", "mistral-nemo"],
    "Mistral NeMo 12B Instruct",
    mistral(5120, 14336, 40, 32, 8, 131072, 1024000, 1000000.0, head_dim=128),
    12 * B, None, "Mistral NeMo announcement (12B)",
    "head_dim 128 is explicit (hidden/heads would be 160). Advertised 128k context; config says 1024000.")
add("mistralai/Mistral-Small-24B-Instruct-2501", ["Mistral-Small-24B-Base-2501", "Mistral-Small-24B", "mistral-small:24b"],
    "Mistral Small 3 24B Instruct (2501)",
    mistral(5120, 32768, 40, 32, 8, 131072, 32768, 100000000.0, head_dim=128),
    24 * B, None, "model name", "")
add("mistralai/Mixtral-8x7B-Instruct-v0.1", ["Mixtral-8x7B-v0.1", "Mixtral-8x7B", "mixtral:8x7b"],
    "Mixtral 8x7B Instruct",
    dense("MixtralForCausalLM", "mixtral", 4096, 14336, 32, 32, 8, 32000, 32768,
          rope_theta=1000000.0, sliding_window=None, num_local_experts=8, num_experts_per_tok=2),
    46_700_000_000, 12_900_000_000, "Mistral's Mixtral announcement (46.7B total, 12.9B active)")
add("mistralai/Mixtral-8x22B-Instruct-v0.1", ["Mixtral-8x22B-v0.1", "Mixtral-8x22B", "mixtral:8x22b"],
    "Mixtral 8x22B Instruct",
    dense("MixtralForCausalLM", "mixtral", 6144, 16384, 56, 48, 8, 32768, 65536,
          rope_theta=1000000.0, sliding_window=None, num_local_experts=8, num_experts_per_tok=2),
    141 * B, 39 * B, "Mistral's Mixtral 8x22B announcement (141B total, 39B active)",
    "vocab_size 32768 (mistralai repos); the mistral-community base conversion has 32000.")
add("mistralai/Ministral-8B-Instruct-2410", ["Ministral-8B", "Ministral-8B-2410"], "Ministral 8B Instruct (2410)",
    mistral(4096, 12288, 36, 32, 8, 131072, 32768, 100000000.0, head_dim=128, sliding_window=32768),
    8 * B, None, "model name",
    "Config as released (MistralForCausalLM, sliding_window 32768 on every layer, which equals the "
    "32768 context); transformers' later 'ministral' type models Mistral's interleaved pattern.")
add("mistralai/Mistral-Small-3.1-24B-Instruct-2503",
    ["Mistral-Small-3.1-24B-Base-2503", "Mistral-Small-3.1-24B", "Mistral-Small-3.1", "mistral-small3.1"],
    "Mistral Small 3.1 24B Instruct (2503)",
    {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
     "text_config": {"model_type": "mistral", "hidden_size": 5120, "intermediate_size": 32768,
                     "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
                     "head_dim": 128, "vocab_size": 131072, "max_position_embeddings": 131072,
                     "rope_theta": 1000000000.0, "sliding_window": None,
                     "tie_word_embeddings": False},
     "vision_config": {"model_type": "pixtral", "hidden_size": 1024, "intermediate_size": 4096,
                       "num_hidden_layers": 24, "num_attention_heads": 16, "head_dim": 64,
                       "image_size": 1540, "patch_size": 14},
     "spatial_merge_size": 2, "multimodal_projector_bias": False, "tie_word_embeddings": False,
     "torch_dtype": BF16},
    24 * B, None, "model name", "Same text tower as Mistral Small 3 (2501) with 128k context and a Pixtral vision encoder.")

# ---- Qwen 2.5 / QwQ -----------------------------------------------------------------------
QC = "Qwen2.5 model cards (Qwen/Qwen2.5-*-Instruct README)"
add("Qwen/Qwen2.5-0.5B-Instruct", ["Qwen2.5-0.5B", "qwen2.5:0.5b"], "Qwen2.5 0.5B Instruct",
    qwen2(896, 4864, 24, 14, 2, 151936, 32768, tie=True, sliding_window=32768),
    490_000_000, None, QC, "QKV projections carry a bias. use_sliding_window false: all layers full attention.")
add("Qwen/Qwen2.5-1.5B-Instruct", ["Qwen2.5-1.5B", "qwen2.5:1.5b"], "Qwen2.5 1.5B Instruct",
    qwen2(1536, 8960, 28, 12, 2, 151936, 32768, tie=True, sliding_window=32768),
    1_540_000_000, None, QC, "Base model config has max_position_embeddings 131072.")
add("Qwen/Qwen2.5-3B-Instruct", ["Qwen2.5-3B", "qwen2.5:3b"], "Qwen2.5 3B Instruct",
    qwen2(2048, 11008, 36, 16, 2, 151936, 32768, tie=True, sliding_window=32768),
    3_090_000_000, None, QC, "")
add("Qwen/Qwen2.5-7B-Instruct", ["Qwen2.5-7B", "qwen2.5:7b", "qwen2.5"], "Qwen2.5 7B Instruct",
    qwen2(3584, 18944, 28, 28, 4, 152064, 32768), 7_610_000_000, None, QC,
    "Base model config has max_position_embeddings 131072; 128k needs YaRN rope_scaling factor 4.")
add("Qwen/Qwen2.5-14B-Instruct", ["Qwen2.5-14B", "qwen2.5:14b"], "Qwen2.5 14B Instruct",
    qwen2(5120, 13824, 48, 40, 8, 152064, 32768), 14_700_000_000, None, QC)
add("Qwen/Qwen2.5-32B-Instruct", ["Qwen2.5-32B", "qwen2.5:32b"], "Qwen2.5 32B Instruct",
    qwen2(5120, 27648, 64, 40, 8, 152064, 32768), 32_500_000_000, None, QC)
add("Qwen/Qwen2.5-72B-Instruct", ["Qwen2.5-72B", "qwen2.5:72b"], "Qwen2.5 72B Instruct",
    qwen2(8192, 29568, 80, 64, 8, 152064, 32768), 72_700_000_000, None, QC)
add("Qwen/Qwen2.5-Coder-7B-Instruct", ["Qwen2.5-Coder-7B", "qwen2.5-coder:7b"], "Qwen2.5-Coder 7B Instruct",
    qwen2(3584, 18944, 28, 28, 4, 152064, 32768), 7_610_000_000, None, "Qwen2.5-Coder model card (7.61B)",
    "Same architecture as Qwen2.5-7B.")
add("Qwen/Qwen2.5-Coder-32B-Instruct", ["Qwen2.5-Coder-32B", "qwen2.5-coder:32b"], "Qwen2.5-Coder 32B Instruct",
    qwen2(5120, 27648, 64, 40, 8, 152064, 32768), 32_500_000_000, None,
    "Qwen2.5-Coder model card (32.5B)", "Same architecture as Qwen2.5-32B.")
add("Qwen/QwQ-32B", ["QwQ-32B", "qwq:32b", "qwq"], "QwQ 32B",
    qwen2(5120, 27648, 64, 40, 8, 152064, 40960, sliding_window=32768),
    32_500_000_000, None, "QwQ-32B model card (32.5B)", "Qwen2.5-32B architecture.")

# ---- Qwen MoE (1.5 / 2) -------------------------------------------------------------------
add("Qwen/Qwen1.5-MoE-A2.7B-Chat", ["Qwen1.5-MoE-A2.7B", "Qwen1.5-MoE"], "Qwen1.5-MoE A2.7B Chat",
    dense("Qwen2MoeForCausalLM", "qwen2_moe", 2048, 5632, 24, 16, 16, 151936, 32768,
          rope_theta=1000000.0, use_sliding_window=False, sliding_window=32768,
          num_experts=60, num_experts_per_tok=4,
          moe_intermediate_size=1408, shared_expert_intermediate_size=5632,
          decoder_sparse_step=1, norm_topk_prob=False),
    14_300_000_000, 2_700_000_000, "Qwen1.5-MoE model card (14.3B total, 2.7B activated)",
    "60 routed experts (top-4) + one shared expert of 5632.")
add("Qwen/Qwen2-57B-A14B", ["Qwen2-57B-A14B-Instruct", "qwen2:57b"], "Qwen2 57B-A14B",
    dense("Qwen2MoeForCausalLM", "qwen2_moe", 3584, 18944, 28, 28, 4, 151936, 131072,
          rope_theta=1000000.0, use_sliding_window=False, sliding_window=131072,
          num_experts=64, num_experts_per_tok=8,
          moe_intermediate_size=2560, shared_expert_intermediate_size=20480,
          decoder_sparse_step=1, norm_topk_prob=False),
    57 * B, 14 * B, "model name",
    "64 routed experts (top-8) + one shared expert of 20480. The Instruct repo shares the architecture.")

# ---- Qwen 3 -------------------------------------------------------------------------------
Q3 = "Qwen3 model cards (Qwen/Qwen3-* README)"
add("Qwen/Qwen3-0.6B", ["qwen3:0.6b"], "Qwen3 0.6B", qwen3(1024, 3072, 28, 16, 8, tie=True),
    600_000_000, None, Q3, "Explicit head_dim 128. QK-norm, no QKV bias.")
add("Qwen/Qwen3-1.7B", ["qwen3:1.7b"], "Qwen3 1.7B", qwen3(2048, 6144, 28, 16, 8, tie=True),
    1_700_000_000, None, Q3)
add("Qwen/Qwen3-4B", ["qwen3:4b"], "Qwen3 4B",
    qwen3(2560, 9728, 36, 32, 8, tie=True), 4_000_000_000, None, Q3,
    "The 2507 releases (262144 context, rope_theta 5e6) are their own entry, Qwen/Qwen3-4B-Instruct-2507.")
add("Qwen/Qwen3-8B", ["qwen3:8b", "qwen3"], "Qwen3 8B", qwen3(4096, 12288, 36, 32, 8),
    8_200_000_000, None, Q3)
add("Qwen/Qwen3-14B", ["qwen3:14b"], "Qwen3 14B", qwen3(5120, 17408, 40, 40, 8),
    14_800_000_000, None, Q3)
add("Qwen/Qwen3-32B", ["qwen3:32b"], "Qwen3 32B", qwen3(5120, 25600, 64, 64, 8), 32_800_000_000, None, Q3,
    "64 heads x 128 = 8192 != hidden 5120: head_dim must be read, not derived.")


def qwen3_moe(hidden, inter, layers, heads, kv, moe_inter, max_pos=40960):
    return dense("Qwen3MoeForCausalLM", "qwen3_moe", hidden, inter, layers, heads, kv, 151936, max_pos,
                 rope_theta=1000000.0, head_dim=128, use_sliding_window=False, sliding_window=None,
                 num_experts=128, num_experts_per_tok=8, moe_intermediate_size=moe_inter,
                 decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True)


add("Qwen/Qwen3-30B-A3B", ["qwen3:30b", "qwen3:30b-a3b"], "Qwen3 30B-A3B",
    qwen3_moe(2048, 6144, 48, 32, 4, 768), 30_500_000_000, 3_300_000_000, Q3,
    "All 48 layers MoE (128 experts, top-8, 768 wide); intermediate_size 6144 unused.")
add("Qwen/Qwen3-30B-A3B-Instruct-2507", ["Qwen3-30B-A3B-Thinking-2507"],
    "Qwen3 30B-A3B Instruct 2507", qwen3_moe(2048, 6144, 48, 32, 4, 768, max_pos=262144),
    30_500_000_000, 3_300_000_000, "Qwen3-30B-A3B-Instruct-2507 model card",
    "Same architecture as Qwen3-30B-A3B with a 262144 native context.")
add("Qwen/Qwen3-235B-A22B", ["qwen3:235b", "Qwen3-235B-A22B-FP8"], "Qwen3 235B-A22B",
    qwen3_moe(4096, 12288, 94, 64, 4, 1536), 235 * B, 22 * B, Q3,
    "The -FP8 repo is the same architecture with FP8 weights (not modelled by this entry).")
add("Qwen/Qwen3-Next-80B-A3B-Instruct", ["Qwen3-Next-80B-A3B-Thinking", "Qwen3-Next-80B-A3B", "qwen3-next"],
    "Qwen3-Next 80B-A3B Instruct",
    dense("Qwen3NextForCausalLM", "qwen3_next", 2048, 5120, 48, 16, 2, 151936, 262144,
          rope_theta=10000000.0, head_dim=256, partial_rotary_factor=0.25,
          full_attention_interval=4, linear_num_key_heads=16, linear_num_value_heads=32,
          linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4,
          num_experts=512, num_experts_per_tok=10, moe_intermediate_size=512,
          shared_expert_intermediate_size=512, decoder_sparse_step=1, mlp_only_layers=[],
          norm_topk_prob=True),
    80 * B, 3 * B, "model name",
    "Every 4th layer is gated full attention (12 layers); the other 36 are Gated DeltaNet with a "
    "fixed recurrent state per sequence.")
