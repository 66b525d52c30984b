"""Catalog entries, part 2: Gemma, Phi, DeepSeek, gpt-oss, Cohere, Falcon, GLM, hybrids, others."""

from models_src import (BF16, add, dense, deepseek_v3, gemma2, gemma3_mm, gemma3_text, gpt_oss,
                        llama, llama3_rope, qwen2)

B = 1_000_000_000

# ---- Gemma --------------------------------------------------------------------------------
add("google/gemma-2b", ["gemma-2b-it", "gemma:2b"], "Gemma 2B",
    dense("GemmaForCausalLM", "gemma", 2048, 16384, 18, 8, 1, 256000, 8192, tie=True,
          rope_theta=10000.0, head_dim=256),
    2_500_000_000, None, "Gemma report (2B: 2.5B with embeddings)", "Multi-query attention (1 KV head).")
add("google/gemma-7b", ["gemma-7b-it", "gemma:7b", "gemma"], "Gemma 7B",
    dense("GemmaForCausalLM", "gemma", 3072, 24576, 28, 16, 16, 256000, 8192, tie=True,
          rope_theta=10000.0, head_dim=256),
    8_500_000_000, None, "Gemma report (7B: 8.5B with embeddings)",
    "16 heads x 256 = 4096 != hidden 3072: head_dim must be read.")
G2 = "Gemma 2 report (2B 2.6B, 9B 9.2B, 27B 27.2B)"
add("google/gemma-2-2b-it", ["gemma-2-2b", "gemma2:2b"], "Gemma 2 2B IT",
    gemma2(2304, 9216, 26, 8, 4, 256, 256), 2_600_000_000, None, G2,
    "Alternating layers: even layers sliding 4096, odd layers global. The -it config says bfloat16 "
    "(the base gemma-2-2b repo ships float32).")
add("google/gemma-2-9b-it", ["gemma-2-9b", "gemma2:9b", "gemma2"], "Gemma 2 9B IT",
    gemma2(3584, 14336, 42, 16, 8, 256, 256), 9_200_000_000, None, G2,
    "Alternating sliding 4096 / global layers.")
add("google/gemma-2-27b-it", ["gemma-2-27b", "gemma2:27b"], "Gemma 2 27B IT",
    gemma2(4608, 36864, 46, 32, 16, 128, 144), 27_200_000_000, None, G2,
    "Alternating sliding 4096 / global layers. head_dim 128 with query_pre_attn_scalar 144.")
G3 = "Gemma 3 report / model card (totals include the 0.4B SigLIP vision encoder for 4B/12B/27B)"
g1 = gemma3_text(1152, 6912, 26, 4, 1, 256, 256, vocab=262144, max_pos=32768, sliding_window=512)
g1 = {"architectures": ["Gemma3ForCausalLM"], **g1, "tie_word_embeddings": True}
add("google/gemma-3-1b-it", ["gemma-3-1b-pt", "gemma-3-1b", "gemma3:1b", "gemma-3-1b-it-qat-q4_0-unquantized", "gemma-3-1b-it-qat-q4_0", "gemma3:1b-it-qat"], "Gemma 3 1B IT", g1,
    1 * B, None, G3, "Text only. 5 sliding (512) : 1 global layer; layer i is global iff (i+1) % 6 == 0.")
lin8 = {"factor": 8.0, "rope_type": "linear"}
add("google/gemma-3-4b-it", ["gemma-3-4b-pt", "gemma-3-4b", "gemma3:4b", "gemma-3-4b-it-qat-q4_0-unquantized", "gemma-3-4b-it-qat-q4_0", "gemma3:4b-it-qat", "gemma3"], "Gemma 3 4B IT",
    gemma3_mm(gemma3_text(2560, 10240, 34, 8, 4, 256, 256, rope_scaling=lin8)),
    4_300_000_000, None, G3,
    "Multimodal; text keys under text_config. The real file omits vocab_size/max_position_embeddings/"
    "head_dim there (Gemma3TextConfig defaults 262208/131072/256, written out here). 5 sliding (1024) : 1 global.")
add("google/gemma-3-12b-it", ["gemma-3-12b-pt", "gemma-3-12b", "gemma3:12b", "gemma-3-12b-it-qat-q4_0-unquantized", "gemma-3-12b-it-qat-q4_0", "gemma3:12b-it-qat"], "Gemma 3 12B IT",
    gemma3_mm(gemma3_text(3840, 15360, 48, 16, 8, 256, 256, rope_scaling=lin8)),
    12_200_000_000, None, G3, "Multimodal; 5 sliding (1024) : 1 global.")
add("google/gemma-3-27b-it", ["gemma-3-27b-pt", "gemma-3-27b", "gemma3:27b", "gemma-3-27b-it-qat-q4_0-unquantized", "gemma-3-27b-it-qat-q4_0", "gemma3:27b-it-qat"], "Gemma 3 27B IT",
    gemma3_mm(gemma3_text(5376, 21504, 62, 32, 16, 128, 168, rope_scaling=lin8)),
    27_400_000_000, None, G3, "Multimodal; 5 sliding (1024) : 1 global. query_pre_attn_scalar 168.")

# ---- Phi ----------------------------------------------------------------------------------
add("microsoft/Phi-3-mini-4k-instruct", ["Phi-3-mini-4k", "phi3:mini", "phi3"], "Phi-3 mini 4k Instruct",
    dense("Phi3ForCausalLM", "phi3", 3072, 8192, 32, 32, 32, 32064, 4096, rope_theta=10000.0,
          sliding_window=2047),
    3_800_000_000, None, "Phi-3 model card (3.8B)", "Fused qkv_proj and gate_up_proj in the checkpoint.")
add("microsoft/Phi-3-medium-4k-instruct", ["Phi-3-medium-4k", "phi3:medium", "phi3:14b"], "Phi-3 medium 4k Instruct",
    dense("Phi3ForCausalLM", "phi3", 5120, 17920, 40, 40, 10, 32064, 4096, rope_theta=10000.0,
          sliding_window=2047),
    14 * B, None, "Phi-3 model card (14B)")
longrope = {"type": "longrope"}
add("microsoft/Phi-3.5-mini-instruct", ["Phi-3.5-mini", "phi3.5"], "Phi-3.5 mini Instruct",
    dense("Phi3ForCausalLM", "phi3", 3072, 8192, 32, 32, 32, 32064, 131072, rope_theta=10000.0,
          original_max_position_embeddings=4096, sliding_window=262144, rope_scaling=longrope),
    3_800_000_000, None, "Phi-3.5-mini model card (3.8B)",
    "rope_scaling's long_factor/short_factor lists are left out (no memory effect).")
add("microsoft/Phi-3.5-MoE-instruct", ["Phi-3.5-MoE"], "Phi-3.5 MoE Instruct",
    dense("PhiMoEForCausalLM", "phimoe", 4096, 6400, 32, 32, 8, 32064, 131072, rope_theta=10000.0,
          original_max_position_embeddings=4096, sliding_window=131072, rope_scaling=longrope,
          num_local_experts=16, num_experts_per_tok=2),
    41_900_000_000, 6_600_000_000, "Phi-3.5-MoE model card (16x3.8B, 6.6B active, 42B total)",
    "rope_scaling's factor lists are left out.")
add("microsoft/phi-4", ["phi-4", "phi4", "phi4:14b"], "Phi-4 14B",
    dense("Phi3ForCausalLM", "phi3", 5120, 17920, 40, 40, 10, 100352, 16384, rope_theta=250000.0,
          sliding_window=None),
    14_700_000_000, None, "Phi-4 model card (14B); KAITO BF16 file 27.31 GiB", "")
add("microsoft/Phi-4-mini-instruct", ["Phi-4-mini", "phi4-mini"], "Phi-4 mini Instruct",
    dense("Phi3ForCausalLM", "phi3", 3072, 8192, 32, 24, 8, 200064, 131072, tie=True,
          rope_theta=10000.0, original_max_position_embeddings=4096, partial_rotary_factor=0.75,
          sliding_window=262144, rope_scaling=longrope),
    3_836_021_760, None, "parameter count at a pinned revision (code-index id 67658155331)",
    "Tied embeddings; 200k vocabulary.")

# ---- DeepSeek -----------------------------------------------------------------------------
add("deepseek-ai/DeepSeek-V3", ["DeepSeek-V3-0324", "DeepSeek-V3-Base", "deepseek-v3"], "DeepSeek-V3 671B",
    deepseek_v3(), 671 * B, 37 * B, "deepseek-ai/DeepSeek-V3 README (671B + 14B MTP = 685B on HF, 37B active)",
    "Ships FP8 e4m3 with 128x128 block scales. MLA: the cache holds kv_lora_rank + qk_rope_head_dim "
    "= 576 values per token per layer. First 3 layers dense, 58 MoE (256 routed + 1 shared, top-8).")
add("deepseek-ai/DeepSeek-R1", ["DeepSeek-R1-0528", "DeepSeek-R1-Zero", "deepseek-r1:671b"], "DeepSeek-R1 671B",
    deepseek_v3(), 671 * B, 37 * B, "DeepSeek-R1 README (671B total, 37B activated)",
    "Same architecture and FP8 checkpoint format as DeepSeek-V3.")
add("moonshotai/Kimi-K2-Instruct", ["Kimi-K2-Base", "Kimi-K2"], "Kimi K2 Instruct",
    deepseek_v3(heads=64, experts=384, first_dense=1, vocab=163840, max_pos=131072,
                rope_theta=50000.0, rope_factor=32.0, n_group=1, topk_group=1, nextn=0),
    1_000 * B, 32 * B, "Kimi K2 README (1T total, 32B activated)",
    "DeepSeek-V3 architecture with 64 heads, 384 experts and 1 dense layer; FP8 block-128 checkpoint. "
    "The 0905 release (262144 context) is its own entry.")


def deepseek_v2(hidden, inter, moe_inter, layers, heads, experts, q_lora, n_group, topk_group, method,
                mscale=0.707):
    return {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
            "hidden_size": hidden, "intermediate_size": inter, "moe_intermediate_size": moe_inter,
            "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": heads,
            "n_routed_experts": experts, "n_shared_experts": 2, "num_experts_per_tok": 6,
            "first_k_dense_replace": 1, "moe_layer_freq": 1, "n_group": n_group,
            "topk_group": topk_group, "topk_method": method, "kv_lora_rank": 512,
            "q_lora_rank": q_lora, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
            "v_head_dim": 128, "vocab_size": 102400, "max_position_embeddings": 163840,
            "tie_word_embeddings": False, "torch_dtype": BF16, "rope_theta": 10000,
            "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                             "beta_fast": 32, "beta_slow": 1, "mscale": mscale,
                             "mscale_all_dim": mscale}}


V2 = "DeepSeek-V2 README (236B total / 21B active; Lite 15.7B / 2.4B)"
add("deepseek-ai/DeepSeek-V2-Lite", ["DeepSeek-V2-Lite-Chat"], "DeepSeek-V2-Lite 16B",
    deepseek_v2(2048, 10944, 1408, 27, 16, 64, None, 1, 1, "greedy"), 15_700_000_000, 2_400_000_000, V2,
    "q_lora_rank null: direct q_proj. MLA cache 576 values per token per layer.")
add("deepseek-ai/DeepSeek-V2-Chat", ["DeepSeek-V2", "DeepSeek-V2-Chat-0628"], "DeepSeek-V2 Chat 236B",
    deepseek_v2(5120, 12288, 1536, 60, 128, 160, 1536, 8, 3, "group_limited_greedy", mscale=1.0),
    236 * B, 21 * B, V2, "First layer dense, 59 MoE (160 routed + 2 shared, top-6).")
add("deepseek-ai/DeepSeek-V2.5", ["DeepSeek-V2.5-1210"], "DeepSeek-V2.5 236B",
    deepseek_v2(5120, 12288, 1536, 60, 128, 160, 1536, 8, 3, "group_limited_greedy", mscale=1.0),
    236 * B, 21 * B, V2, "Same architecture as DeepSeek-V2-Chat.")
RD = "fine-tune of its base model; architecture identical to the base"
add("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", ["deepseek-r1:1.5b"], "DeepSeek-R1-Distill-Qwen-1.5B",
    qwen2(1536, 8960, 28, 12, 2, 151936, 131072, rope_theta=10000.0, sliding_window=4096),
    1_780_000_000, None, "Hugging Face model page (1.78B)",
    "Base Qwen2.5-Math-1.5B; embeddings untied here (unlike Qwen2.5-1.5B).")
add("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", ["deepseek-r1:7b"], "DeepSeek-R1-Distill-Qwen-7B",
    qwen2(3584, 18944, 28, 28, 4, 152064, 131072, rope_theta=10000.0, sliding_window=4096),
    7_620_000_000, None, "Hugging Face model page (7.62B)", "Base Qwen2.5-Math-7B.")
add("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", ["deepseek-r1:14b"], "DeepSeek-R1-Distill-Qwen-14B",
    qwen2(5120, 13824, 48, 40, 8, 152064, 131072, sliding_window=131072),
    14_800_000_000, None, "Hugging Face model page (14.8B)", "Base Qwen2.5-14B.")
add("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", ["deepseek-r1:32b"], "DeepSeek-R1-Distill-Qwen-32B",
    qwen2(5120, 27648, 64, 40, 8, 152064, 131072, sliding_window=131072),
    32_800_000_000, None, "Hugging Face model page (32.8B)", "Base Qwen2.5-32B.")
add("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", ["deepseek-r1:8b"], "DeepSeek-R1-Distill-Llama-8B",
    llama(4096, 14336, 32, 32, 8, 128256, 131072, rope_theta=500000.0, rope_scaling=llama3_rope(8.0)),
    8_030_261_248, None, "same tensors as Llama-3.1-8B", RD + " (Llama-3.1-8B).")
add("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", ["deepseek-r1:70b"], "DeepSeek-R1-Distill-Llama-70B",
    llama(8192, 28672, 80, 64, 8, 128256, 131072, rope_theta=500000.0, rope_scaling=llama3_rope(8.0)),
    70_600_000_000, None, "Hugging Face model page (70.6B)", RD + " (Llama-3.3-70B-Instruct).")

# ---- gpt-oss ------------------------------------------------------------------------------
GO = "openai/gpt-oss README (20b: 21B total, 3.6B active; 120b: 117B total, 5.1B active)"
add("openai/gpt-oss-20b", ["gpt-oss:20b", "gpt-oss"], "gpt-oss-20b", gpt_oss(24, 32), 21 * B, 3_600_000_000, GO,
    "MoE expert weights ship as MXFP4 (4-bit + one e8m0 scale per 32); the rest BF16. Even layers "
    "sliding window 128, odd layers full; attention sinks.")
add("openai/gpt-oss-120b", ["gpt-oss:120b"], "gpt-oss-120b", gpt_oss(36, 128), 117 * B, 5_100_000_000, GO,
    "MXFP4 experts; alternating sliding-128 / full layers.")

# ---- Cohere -------------------------------------------------------------------------------
add("CohereForAI/c4ai-command-r-v01", ["c4ai-command-r-v01", "command-r-v01", "command-r:35b-v0.1"],
    "Command R 35B (v01)",
    dense("CohereForCausalLM", "cohere", 8192, 22528, 40, 64, 64, 256000, 8192, tie=True,
          dtype="float16", rope_theta=8000000.0, logit_scale=0.0625, use_qk_norm=False),
    35 * B, None, "model card (35B)", "Multi-head attention (64 KV heads): about 1 MiB of f16 KV per token.")
add("CohereForAI/c4ai-command-r-plus", ["c4ai-command-r-plus", "command-r-plus"], "Command R+ 104B",
    dense("CohereForCausalLM", "cohere", 12288, 33792, 64, 96, 8, 256000, 8192, tie=True,
          dtype="float16", rope_theta=75000000.0, logit_scale=0.8333333333333334, use_qk_norm=True),
    104 * B, None, "model card (104B)",
    "GQA with 8 KV heads; QK layer norm (one public copy of the config says use_qk_norm false).")
add("CohereForAI/c4ai-command-r7b-12-2024", ["c4ai-command-r7b-12-2024", "command-r7b"], "Command R7B (12-2024)",
    dense("Cohere2ForCausalLM", "cohere2", 4096, 14336, 32, 32, 8, 256000, 8192, tie=True,
          rope_theta=50000.0, logit_scale=0.25, sliding_window=4096, sliding_window_pattern=4),
    8 * B, None, "model card (8B)", "3 sliding-window (4096) layers then 1 global layer, repeating.")

# ---- Falcon -------------------------------------------------------------------------------
add("tiiuae/falcon-7b", ["falcon-7b-instruct", "falcon:7b"], "Falcon 7B",
    {"architectures": ["FalconForCausalLM"], "model_type": "falcon", "hidden_size": 4544,
     "num_hidden_layers": 32, "num_attention_heads": 71, "multi_query": True,
     "new_decoder_architecture": False, "parallel_attn": True, "bias": False, "alibi": False,
     "vocab_size": 65024, "max_position_embeddings": 2048, "tie_word_embeddings": True,
     "torch_dtype": BF16},
    7 * B, None, "model name",
    "Real keys: multi_query true means 1 KV head; MLP is 4 x hidden (no intermediate_size key). "
    "max_position_embeddings is absent from the real file (FalconConfig default 2048, written out).")
add("tiiuae/falcon-40b", ["falcon-40b-instruct", "falcon:40b"], "Falcon 40B",
    {"architectures": ["FalconForCausalLM"], "model_type": "falcon", "hidden_size": 8192,
     "num_hidden_layers": 60, "num_attention_heads": 128, "num_kv_heads": 8,
     "new_decoder_architecture": True, "parallel_attn": True, "bias": False, "alibi": False,
     "vocab_size": 65024, "max_position_embeddings": 2048, "tie_word_embeddings": True,
     "torch_dtype": BF16},
    40 * B, None, "model name", "Real key num_kv_heads 8 (new_decoder_architecture). MLP 4 x hidden.")
add("tiiuae/Falcon3-7B-Instruct", ["Falcon3-7B-Base", "Falcon3-7B", "falcon3:7b"], "Falcon3 7B Instruct",
    llama(3072, 23040, 28, 12, 4, 131072, 32768, rope_theta=1000042.0, head_dim=256),
    7_460_000_000, None, "model card (7B)", "Llama architecture; head_dim 256.")
add("tiiuae/Falcon-H1-7B-Instruct", ["Falcon-H1-7B-Base", "Falcon-H1-7B"], "Falcon-H1 7B Instruct",
    dense("FalconH1ForCausalLM", "falcon_h1", 3072, 12288, 44, 12, 2, 130048, 262144, head_dim=128,
          mamba_d_ssm=3072, mamba_n_heads=24, mamba_d_head=128, mamba_d_state=256,
          mamba_n_groups=1, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=128),
    7 * B, None, "model name",
    "Every layer runs attention and a Mamba2 mixer in parallel: full KV in all 44 layers plus SSM state.")

# ---- Others -------------------------------------------------------------------------------
add("01-ai/Yi-34B", ["Yi-34B-Chat", "yi:34b"], "Yi 34B",
    llama(7168, 20480, 60, 56, 8, 64000, 4096, rope_theta=5000000.0), 34 * B, None, "model name",
    "Yi-34B-200K: max_position_embeddings 200000.")
add("HuggingFaceTB/SmolLM2-135M-Instruct", ["SmolLM2-135M", "smollm2:135m"], "SmolLM2 135M Instruct",
    llama(576, 1536, 30, 9, 3, 49152, 8192, tie=True, rope_theta=100000), 135_000_000, None, "model name")
add("HuggingFaceTB/SmolLM2-360M-Instruct", ["SmolLM2-360M", "smollm2:360m"], "SmolLM2 360M Instruct",
    llama(960, 2560, 32, 15, 5, 49152, 8192, tie=True, rope_theta=100000), 360_000_000, None, "model name")
add("HuggingFaceTB/SmolLM2-1.7B-Instruct", ["SmolLM2-1.7B", "smollm2:1.7b", "smollm2"], "SmolLM2 1.7B Instruct",
    llama(2048, 8192, 24, 32, 32, 49152, 8192, tie=True, rope_theta=130000), 1_700_000_000, None, "model name")
add("TinyLlama/TinyLlama-1.1B-Chat-v1.0", ["TinyLlama-1.1B", "tinyllama"], "TinyLlama 1.1B Chat",
    llama(2048, 5632, 22, 32, 4, 32000, 2048), 1_100_000_000, None, "model name")
add("THUDM/glm-4-9b-chat", ["glm-4-9b", "glm4:9b"], "GLM-4 9B Chat",
    {"architectures": ["ChatGLMModel"], "model_type": "chatglm", "hidden_size": 4096,
     "ffn_hidden_size": 13696, "num_layers": 40, "num_attention_heads": 32,
     "multi_query_attention": True, "multi_query_group_num": 2, "kv_channels": 128,
     "padded_vocab_size": 151552, "seq_length": 131072, "rope_ratio": 500, "add_qkv_bias": True,
     "torch_dtype": BF16},
    9_400_000_000, None, "model card (9B; 9.4B by count)",
    "Remote-code config: num_layers, ffn_hidden_size, multi_query_group_num (KV heads), kv_channels "
    "(head_dim), padded_vocab_size, seq_length. The 0414 releases use standard glm4 keys.")
GLM = "GLM-4-0414 model cards"
add("THUDM/GLM-4-9B-0414", ["GLM-4-9B-0414", "zai-org/GLM-4-9B-0414"], "GLM-4 9B 0414",
    dense("Glm4ForCausalLM", "glm4", 4096, 13696, 40, 32, 2, 151552, 32768, head_dim=128,
          rope_theta=10000.0, partial_rotary_factor=0.5),
    9 * B, None, GLM, "2 KV heads of 128.")
add("THUDM/GLM-Z1-32B-0414", ["GLM-Z1-32B-0414", "GLM-4-32B-0414", "zai-org/GLM-Z1-32B-0414"], "GLM-Z1 32B 0414",
    dense("Glm4ForCausalLM", "glm4", 6144, 23040, 61, 48, 2, 151552, 32768, head_dim=128,
          rope_theta=10000.0, partial_rotary_factor=0.5),
    32 * B, None, GLM, "61 layers, 2 KV heads of 128 (llama.cpp logs: 61 x 512 values per token).")


def glm4_moe(hidden, inter, moe_inter, layers, experts, first_dense, qk_norm):
    return dense("Glm4MoeForCausalLM", "glm4_moe", hidden, inter, layers, 96, 8, 151552, 131072,
                 head_dim=128, rope_theta=1000000, partial_rotary_factor=0.5,
                 moe_intermediate_size=moe_inter, n_routed_experts=experts, n_shared_experts=1,
                 num_experts_per_tok=8, first_k_dense_replace=first_dense,
                 num_nextn_predict_layers=1, use_qk_norm=qk_norm, norm_topk_prob=True,
                 attention_bias=True)


add("zai-org/GLM-4.5-Air", ["GLM-4.5-Air", "THUDM/GLM-4.5-Air"], "GLM-4.5-Air",
    glm4_moe(4096, 10944, 1408, 46, 128, 1, False), 106 * B, 12 * B, "GLM-4.5 README (106B total, 12B active)",
    "1 dense + 45 MoE layers (128 routed + 1 shared, top-8); 96 heads, 8 KV heads of 128. "
    "One extra MTP layer (num_nextn_predict_layers) is in the checkpoint.")
add("zai-org/GLM-4.5", ["GLM-4.5", "THUDM/GLM-4.5"], "GLM-4.5",
    glm4_moe(5120, 12288, 1536, 92, 160, 3, True), 355 * B, 32 * B, "GLM-4.5 README (355B total, 32B active)",
    "3 dense + 89 MoE layers (160 routed + 1 shared, top-8).")
