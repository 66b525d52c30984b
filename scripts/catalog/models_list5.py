"""Catalog entries, part 5: the open models most served in 2026 (Qwen3.5 / Qwen3.6, MiniMax-M2.x,
GLM-4.7 / GLM-4.7-Flash / GLM-5, Kimi-K2-Thinking / Kimi-K2.5).

Every value below is read from a copy of the release's config.json named in SOURCES (code-index
ids are `find_string` hits of the public code index; each note says what the copy is). Where
two copies disagree, or where a key was taken from a sibling release, UNVERIFIED says so. Only
the memory-relevant keys are kept, nested as the file nests them.

Left out because no copy of the config.json was found, or because the architecture has a
mechanism vramfit cannot yet model (see docs/catalog.md "Not in the catalog"):
Qwen3.5-0.8B/2B/4B/9B (no copy with all widths), Qwen3.6-27B, Gemma 4,
DeepSeek-V4 (compressed sparse attention), Kimi-K2.6.
"""

import copy

from models_src import M, add, deepseek_v3

B = 1_000_000_000
BF16 = "bfloat16"


def entry(id):
    return next(e for e in M if e["id"] == id)


# ---- Qwen3.5 / Qwen3.6 ------------------------------------------------------------------------
# transformers models/qwen3_5*/configuration_qwen3_5*.py; the text model sits in text_config
# (model_type qwen3_5_text / qwen3_5_moe_text), a 27-block ViT in vision_config.

def qwen35_layer_types(n):
    return ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(n)]


def qwen35_vision(out_hidden):
    return {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16,
            "in_channels": 3, "patch_size": 16, "temporal_patch_size": 2,
            "spatial_merge_size": 2, "out_hidden_size": out_hidden,
            "num_position_embeddings": 2304, "hidden_act": "gelu_pytorch_tanh"}


def qwen35_text(mtype, hidden, layers, heads, kv, linear_v_heads, **extra):
    t = {"model_type": mtype, "hidden_size": hidden, "num_hidden_layers": layers,
         "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": 256,
         "attn_output_gate": True, "full_attention_interval": 4,
         "layer_types": qwen35_layer_types(layers), "linear_conv_kernel_dim": 4,
         "linear_key_head_dim": 128, "linear_num_key_heads": 16,
         "linear_num_value_heads": linear_v_heads, "linear_value_head_dim": 128,
         "mamba_ssm_dtype": "float32", "mtp_num_hidden_layers": 1, "vocab_size": 248320,
         "max_position_embeddings": 262144, "partial_rotary_factor": 0.25,
         "rope_parameters": {"mrope_interleaved": True, "mrope_section": [11, 11, 10],
                             "partial_rotary_factor": 0.25, "rope_theta": 10000000,
                             "rope_type": "default"},
         "tie_word_embeddings": False, "dtype": BF16}
    t.update(extra)
    return t


def qwen35_dense(hidden, inter, layers, heads, kv, linear_v_heads):
    return {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
            "tie_word_embeddings": False,
            "text_config": qwen35_text("qwen3_5_text", hidden, layers, heads, kv, linear_v_heads,
                                       intermediate_size=inter),
            "vision_config": qwen35_vision(hidden)}


def qwen35_moe(hidden, layers, heads, kv, linear_v_heads, experts, top_k, moe_inter):
    return {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
            "tie_word_embeddings": False,
            "text_config": qwen35_text("qwen3_5_moe_text", hidden, layers, heads, kv,
                                       linear_v_heads, num_experts=experts,
                                       num_experts_per_tok=top_k,
                                       moe_intermediate_size=moe_inter,
                                       shared_expert_intermediate_size=moe_inter,
                                       norm_topk_prob=True),
            "vision_config": qwen35_vision(hidden)}


QWEN35_NOTE = ("Qwen3-Next's hybrid stack: every 4th layer gated full attention (KV cache), the "
               "other three Gated DeltaNet (a fixed recurrent state per sequence); a 27-block "
               "vision tower loads unless --language-model-only; one MTP layer in the "
               "checkpoint.")

add("Qwen/Qwen3.5-27B", ["qwen3.5:27b"], "Qwen3.5 27B",
    qwen35_dense(5120, 17408, 64, 24, 4, 48), 27 * B, None, "Qwen3.5-27B model card (27B)",
    "Dense: 16 full-attention layers (24 heads, 4 KV heads of 256) and 48 Gated DeltaNet layers "
    "(16 key / 48 value heads of 128). " + QWEN35_NOTE)
add("Qwen/Qwen3.5-35B-A3B", [], "Qwen3.5 35B-A3B",
    qwen35_moe(2048, 40, 16, 2, 32, 256, 8, 512), 35 * B, 3 * B,
    "Qwen3.5-35B-A3B model card (35B total, 3B active)",
    "40 MoE layers (256 experts top-8 + 1 gated shared expert, 512 wide); 10 full-attention "
    "layers with 2 KV heads of 256. " + QWEN35_NOTE)
add("Qwen/Qwen3.5-122B-A10B", [], "Qwen3.5 122B-A10B",
    qwen35_moe(3072, 48, 32, 2, 64, 256, 8, 1024), 122 * B, 10 * B,
    "Qwen3.5-122B-A10B model card (122B total, 10B active)",
    "48 MoE layers (256 experts top-8 + shared, 1024 wide); 12 full-attention layers with 2 KV "
    "heads of 256. " + QWEN35_NOTE)
add("Qwen/Qwen3.5-397B-A17B", [], "Qwen3.5 397B-A17B",
    qwen35_moe(4096, 60, 32, 2, 64, 512, 10, 1024), 397 * B, 17 * B,
    "Qwen3.5-397B-A17B model card (397B total, 17B active)",
    "60 MoE layers (512 experts top-10 + shared, 1024 wide); 15 full-attention layers with 2 KV "
    "heads of 256. " + QWEN35_NOTE)
add("Qwen/Qwen3.6-35B-A3B", [], "Qwen3.6 35B-A3B",
    qwen35_moe(2048, 40, 16, 2, 32, 256, 8, 512), 35 * B, 3 * B,
    "Qwen3.6-35B-A3B model card (35B total, 3B active)",
    "Qwen3.5-35B-A3B's architecture (Qwen3_5MoeForConditionalGeneration). " + QWEN35_NOTE)

# ---- MiniMax-M2 family ------------------------------------------------------------------------
# vLLM model_executor/models/minimax_m2.py: every layer GQA + MoE (no shared expert),
# intermediate_size is the expert width, q/k RMSNorm over all heads, FP8 block-128 checkpoint.


def minimax_m2():
    return {"architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2",
            "hidden_size": 3072, "intermediate_size": 1536, "num_hidden_layers": 62,
            "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128,
            "rotary_dim": 64, "num_local_experts": 256, "num_experts_per_tok": 8,
            "shared_intermediate_size": 0, "scoring_func": "sigmoid", "use_routing_bias": True,
            "use_qk_norm": True, "qk_norm_type": "per_layer", "use_mtp": True,
            "num_mtp_modules": 3, "mtp_transformer_layers": 1, "vocab_size": 200064,
            "max_position_embeddings": 196608, "rope_theta": 5000000,
            "tie_word_embeddings": False, "torch_dtype": BF16,
            "quantization_config": {"activation_scheme": "dynamic", "fmt": "float8_e4m3fn",
                                    "quant_method": "fp8", "weight_block_size": [128, 128],
                                    "modules_to_not_convert": ["gate", "e_score_correction_bias",
                                                               "lm_head"]}}


MINIMAX_NOTE = ("62 layers of GQA (48 heads, 8 KV heads of 128) and 256 sigmoid-routed experts "
                "(top-8, 1536 wide, no shared expert); FP8 block-128 weights as released. The 3 "
                "MTP modules named in the config are not in vLLM's model.")
add("MiniMaxAI/MiniMax-M2", ["MiniMax-M2"], "MiniMax-M2", minimax_m2(), 230 * B, 10 * B,
    "MiniMax-M2 model card (230B total, 10B active)", MINIMAX_NOTE)
add("MiniMaxAI/MiniMax-M2.1", ["MiniMax-M2.1"], "MiniMax-M2.1", minimax_m2(), 229 * B, 10 * B,
    "MiniMax-M2.1: same architecture as M2.5 (code-index id 4289690615)", MINIMAX_NOTE)
add("MiniMaxAI/MiniMax-M2.5", ["MiniMax-M2.5"], "MiniMax-M2.5", minimax_m2(), 228_703_644_928,
    10 * B, "safetensors parameter total from the HF API as quoted in code-index id 4289690615 "
            "(228,703,644,928; card: 229B, 10B active)", MINIMAX_NOTE)
_m27 = minimax_m2()
_m27["max_position_embeddings"] = 204800
_m27["dtype"] = _m27.pop("torch_dtype")
add("MiniMaxAI/MiniMax-M2.7", ["MiniMax-M2.7"], "MiniMax-M2.7", _m27, 228_703_644_928, 10 * B,
    "parameter total of the released safetensors as listed in code-index id 62693775865 "
    "(228,703,644,928; card: 229B, 10B active)",
    MINIMAX_NOTE + " The context is 204800 tokens (M2/M2.5: 196608).")

# ---- GLM-4.7, GLM-4.7-Flash, GLM-5 -------------------------------------------------------------
glm47 = copy.deepcopy(entry("zai-org/GLM-4.6")["config"])
add("zai-org/GLM-4.7", ["GLM-4.7"], "GLM-4.7", glm47, 355 * B, 32 * B,
    "GLM-4.7 model card (355B total, 32B active)",
    "GLM-4.5/4.6's glm4_moe architecture (92 layers, 160 routed + 1 shared experts top-8) with a "
    "202752-token context.")

add("zai-org/GLM-4.7-Flash", ["GLM-4.7-Flash"], "GLM-4.7-Flash 30B-A3B",
    {"architectures": ["Glm4MoeLiteForCausalLM"], "model_type": "glm4_moe_lite",
     "vocab_size": 154880, "hidden_size": 2048, "intermediate_size": 10240,
     "moe_intermediate_size": 1536, "num_hidden_layers": 47, "num_attention_heads": 20,
     "num_key_value_heads": 20, "max_position_embeddings": 202752, "rope_theta": 1000000.0,
     "partial_rotary_factor": 1.0, "q_lora_rank": 768, "kv_lora_rank": 512,
     "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "v_head_dim": 256,
     "n_routed_experts": 64, "n_shared_experts": 1, "num_experts_per_tok": 4,
     "first_k_dense_replace": 1, "moe_layer_freq": 1, "n_group": 1, "topk_group": 1,
     "topk_method": "noaux_tc", "norm_topk_prob": True, "routed_scaling_factor": 1.8,
     "num_nextn_predict_layers": 1, "tie_word_embeddings": False, "torch_dtype": BF16},
    30 * B, None, "GLM-4.7-Flash model card (30B-A3B MoE; the 3B active leaves out the two "
                  "317M-parameter embedding matrices, so it is not compared here)",
    "DeepSeek-style MLA (kv_lora_rank 512 + 64 rope dims cached per token and layer) on 47 "
    "layers: 1 dense, 46 MoE (64 routed experts top-4 + 1 shared, 1536 wide).")

add("zai-org/GLM-5", ["GLM-5"], "GLM-5 744B-A40B",
    {"architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa",
     "vocab_size": 154880, "hidden_size": 6144, "intermediate_size": 12288,
     "moe_intermediate_size": 2048, "num_hidden_layers": 78, "num_attention_heads": 64,
     "num_key_value_heads": 64, "head_dim": 192, "q_lora_rank": 2048, "kv_lora_rank": 512,
     "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "v_head_dim": 256,
     "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
     "first_k_dense_replace": 3, "moe_layer_freq": 1, "n_group": 1, "topk_group": 1,
     "topk_method": "noaux_tc", "scoring_func": "sigmoid", "norm_topk_prob": True,
     "routed_scaling_factor": 2.5, "index_topk": 2048, "index_n_heads": 32,
     "index_head_dim": 128, "num_nextn_predict_layers": 1, "max_position_embeddings": 202752,
     "rope_parameters": {"rope_theta": 8000000, "rope_type": "default"},
     "tie_word_embeddings": False, "torch_dtype": BF16},
    744 * B, 40 * B, "GLM-5 model card (744B total, 40B active)",
    "DeepSeek-V3.2-style MLA with the lightning indexer (DSA) on 78 layers: 3 dense, 75 MoE (256 "
    "routed top-8 + 1 shared, 2048 wide). The indexer's own per-token key cache is not yet "
    "counted (as for DeepSeek-V3.2).")

# ---- Kimi-K2-Thinking, Kimi-K2.5 ---------------------------------------------------------------
# INT4 QAT of the routed experts only (compressed-tensors pack-quantized, group 32, symmetric);
# attention, shared experts, the dense first layer and lm_head stay BF16.
KIMI_INT4 = {"quant_method": "compressed-tensors", "format": "pack-quantized",
             "quantization_status": "compressed",
             "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                 "num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                 "group_size": 32, "dynamic": False, "observer": "minmax"}}},
             "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*",
                        "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"]}


def kimi_text(model_type="kimi_k2"):
    t = deepseek_v3(heads=64, experts=384, first_dense=1, vocab=163840, max_pos=262144,
                    rope_theta=50000.0, rope_factor=64.0, n_group=1, topk_group=1, nextn=0)
    t["model_type"] = model_type
    t["quantization_config"] = copy.deepcopy(KIMI_INT4)
    return t


add("moonshotai/Kimi-K2-Thinking", [], "Kimi K2 Thinking", kimi_text(), 1_000 * B, 32 * B,
    "Kimi-K2-Thinking README (1T total, 32B activated)",
    "Kimi K2's DeepSeek-V3 MLA/MoE (61 layers, 384 experts top-8 + 1 shared) with INT4 routed "
    "experts (QAT) and a 262144-token context.")
_k25_text = kimi_text("deepseek_v3")
_k25_text["architectures"] = ["DeepseekV3ForCausalLM"]
_k25_text["quantization_config"]["ignore"] += ["re:.*vision_tower.*", "re:.*mm_projector.*"]
add("moonshotai/Kimi-K2.5", [], "Kimi K2.5",
    {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
     "tie_word_embeddings": False, "text_config": _k25_text},
    1_000 * B, 32 * B, "Kimi-K2.5 model card (1T total, 32B activated)",
    "Kimi-K2-Thinking's text model (INT4 routed experts) under a vision wrapper; the MoonViT "
    "vision tower's weights are not counted (its config keys are not read).")

SOURCES = {
    "Qwen/Qwen3.5-27B": [
        "code-index id 67487971817 (converter test asserting the exported config.json: text_config "
        "qwen3_5_text 5120/17408/64 layers/24 heads/4 KV/head 256/linear 16 key + 48 value heads of "
        "128/full_attention_interval 4/max_position_embeddings 262144/vocab 248320/untied/"
        "mtp_num_hidden_layers 1; vision depth 27/1152/4304)",
        "code-index id 68414741640 (Qwen3_5Config test: the same text_config widths and vision "
        "tower, out_hidden_size 5120)",
        "github:THUDM/slime/scripts/models/qwen3.5-27B.sh (Megatron args: 24 heads/4 query groups/"
        "kv-channels 256/64 layers/5120/ffn 17408/vocab 248320/untied)"],
    "Qwen/Qwen3.5-35B-A3B": [
        "code-index id 70689913155 (repack-plan fixture of the real config: qwen3_5_moe_text 2048/40 "
        "layers/16 heads/2 KV/head 256/linear 16+32 heads/256 experts top-8/moe 512/shared 512/"
        "vocab 248320/max_position_embeddings 262144/mtp 1; vision depth 27/1152/4304/"
        "out_hidden_size 2048)",
        "code-index id 57982277923 (KNOWN_MODEL_METADATA Qwen/Qwen3.5-35B-A3B: the same widths)",
        "code-index id 53168988717 (table read from Qwen3.5-35B-A3B/config.json: 2048/moe 512/256 "
        "experts/top-8/shared 512/40 layers/mtp 1)"],
    "Qwen/Qwen3.5-122B-A10B": [
        "code-index id 55675911288 (launch config for Qwen3.5-122B-A10B: dim 3072/head 256/moe 1024/"
        "shared 1024/256 experts top-8/48 layers/32 heads/2 KV/linear 16+64 heads/vocab 248320)",
        "code-index id 66841050899 (table from Qwen/Qwen3.5-122B-A10B/config.json: 48 layers/32 "
        "heads/2 KV/head 256/3072/256 experts top-8/full attention at layers 3, 7, ... 47)"],
    "Qwen/Qwen3.5-397B-A17B": [
        "code-index id 57982277923 (KNOWN_MODEL_METADATA Qwen/Qwen3.5-397B-A17B: 512 experts top-10/"
        "60 layers/4096/moe 1024/shared 1024/32 heads/2 KV/head 256/linear 16+64/vocab 248320)",
        "code-index id 53168988717 (table read from Qwen3.5-397B-A17B/config.json: 4096/moe 1024/"
        "512 experts/top-10/shared 1024/60 layers/mtp 1)",
        "code-index id 52187504714 (model_config() for the 397B: the same widths, 60 layer_types)"],
    "Qwen/Qwen3.6-35B-A3B": [
        "code-index id 57982277923 (KNOWN_MODEL_METADATA Qwen/Qwen3.6-35B-A3B: identical widths to "
        "Qwen3.5-35B-A3B)",
        "code-index id 66795227241 (the real Qwen3.6 config.json: Qwen3_5MoeForConditionalGeneration, "
        "qwen3_5_moe, vision depth 27)"],
    "MiniMaxAI/MiniMax-M2": [
        "code-index id 62596936354 (MiniMaxM2 fixture config: 3072/1536/62 layers/48 heads/8 KV/head "
        "128/256 experts top-8/vocab 200064/max_position_embeddings 196608/rotary_dim 64/rope 5e6/"
        "use_qk_norm/3 MTP modules)",
        "code-index id 66857997877 (vLLM-side test config: the same widths, FP8 block 128x128 with "
        "modules_to_not_convert gate/e_score_correction_bias/lm_head)",
        "code-index id 66796494000 (M2 and M2.5 config.json compared: every topology scalar equal)"],
    "MiniMaxAI/MiniMax-M2.1": [
        "code-index id 4289690615 (param-counter test: 'M2.1 has identical architecture to M2.5', "
        "MINIMAX_M21_CONFIG = MINIMAX_M25_CONFIG)"],
    "MiniMaxAI/MiniMax-M2.5": [
        "code-index id 66796494000 (architecture note transcribed from MiniMax-M2.5/config.json: 62 "
        "layers/3072/vocab 200064/max_position_embeddings 196608/48 heads/8 KV/head 128/256 "
        "experts top-8/intermediate 1536/no shared expert/FP8 block 128)",
        "code-index id 4289690615 (MINIMAX_M25_CONFIG and safetensors total 228,703,644,928)",
        "code-index id 54885962974 (test model dir for M2.5: 48 heads/8 KV/head 128/62 layers/256 "
        "experts top-8/1536/vocab 200064/196608)"],
    "MiniMaxAI/MiniMax-M2.7": [
        "code-index id 62693775865 (model report printing MiniMax-M2.7/config.json verbatim: "
        "MiniMaxM2ForCausalLM 3072/1536/62 layers/48 heads/8 KV/head 128/256 experts top-8/vocab "
        "200064/max_position_embeddings 204800/rotary_dim 64/FP8 block 128 not converting gate, "
        "e_score_correction_bias, lm_head; 125 safetensors files, 214.33 GiB, 228,703,644,928 "
        "parameters)",
        "code-index id 67104252410 (test on models/MiniMaxAI/MiniMax-M2.7/config.json: minimax_m2, "
        "rotary_dim 64, qk_norm_type per_layer)"],
    "zai-org/GLM-4.7": [
        "code-index id 53168988717 (table read from zai-org/GLM-4.7/config.json: 5120/moe 1536/160 "
        "routed + 1 shared/top-8/first_k_dense_replace 3/92 layers/1 MTP layer/"
        "max_position_embeddings 202752; 'same glm4_moe architecture as GLM-4.5')",
        "code-index id 4289690615 (GLM_47_CONFIG: 5120/12288/92 layers/96 heads/8 KV/head 128/"
        "vocab 151552/160 experts top-8/1 shared/moe 1536/first 3 dense/1 MTP/untied)",
        "code-index id 67104252410 (test on models/zai-org/GLM-4.7/config.json: attention_bias true, "
        "use_qk_norm true, partial_rotary_factor 0.5, 1 shared expert of 1536)"],
    "zai-org/GLM-4.7-Flash": [
        "code-index id 3227613672 (vLLM tests: Glm4MoeLiteConfig fixture: vocab 154880/2048/10240/"
        "moe 1536/47 layers/20 heads/max_position_embeddings 202752/q_lora 768/kv_lora 512/nope "
        "192/rope 64/v 256/64 routed + 1 shared/top-4/routed_scaling_factor 1.8)",
        "code-index id 55665026553 (metadata test with the same config: first_k_dense_replace 1, "
        "num_nextn_predict_layers 1, rope_theta 1e6)",
        "code-index id 70875116695 (GLM-4.7-Flash as mlx-lm caches it: 47 x 576 latent values per "
        "token)"],
    "zai-org/GLM-5": [
        "code-index id 53168988717 (table read from zai-org/GLM-5/config.json: 6144/moe 2048/256 "
        "routed + 1 shared/top-8/sigmoid noaux_tc/routed_scaling_factor 2.5/first 3 dense/78 "
        "layers/1 MTP layer/GlmMoeDsaForCausalLM)",
        "code-index id 71268393385 (verbatim glm_moe_dsa config.json head of a GLM-5-series "
        "checkpoint: 6144/12288/78 layers/64 heads/q_lora 2048/kv_lora 512/nope 192/rope 64/v 256/"
        "index 32 heads x 128/index_topk 2048/vocab 154880/rope_theta 8e6/untied)",
        "code-index id 70338295989 (glm_moe_dsa config, trimmed: q_lora 2048/kv_lora 512/64 heads/"
        "256 experts top-8/1 MTP/rope_theta 8e6)"],
    "moonshotai/Kimi-K2-Thinking": [
        "code-index id 4289690615 (KIMI_K2_THINKING_CONFIG: 7168/18432/61 layers/64 heads/vocab "
        "163840/kv_lora 512/q_lora 1536/nope 128/rope 64/v 128/384 experts top-8/1 shared/moe "
        "2048/first 1 dense/0 MTP/compressed-tensors int4 ignoring lm_head, self_attn, "
        "shared_experts)",
        "code-index id 61948142695 (Kimi INT4 QAT recipe: routed experts only, pack-quantized, "
        "group_size 32, symmetric, strategy group; ignore adds mlp.(gate|up|gate_up|down)_proj)",
        "code-index id 54964062461 (the Kimi-K2-Thinking ignore list as read from its config)"],
    "moonshotai/Kimi-K2.5": [
        "code-index id 4289690615 (KIMI_K25_CONFIG: kimi_k25 wrapper, text_config as Kimi-K2-Thinking "
        "with max_position_embeddings 262144 and the int4 quantization_config)",
        "code-index id 53168988717 (table read from moonshotai/Kimi-K2.5/config.json text_config: "
        "7168/moe 2048/384 experts/1 shared/top-8/first 1 dense/61 layers/0 MTP/"
        "DeepseekV3ForCausalLM)",
        "code-index id 57041073935 (real K2.5 text_config values: 64 heads/nope 128/rope 64/v 128/"
        "kv_lora 512/q_lora 1536/rope_theta 50000/yarn factor 64 from 4096)",
        "code-index id 61948142695 (K2.5's ignore list adds re:vision_tower.* and re:mm_projector.*)"],
}

UNVERIFIED = {
    "Qwen/Qwen3.5-122B-A10B": ["vision_config (the 27-block 1152-wide tower of the 27B/35B copies)",
                               "max_position_embeddings 262144 (the family's)"],
    "Qwen/Qwen3.5-397B-A17B": ["vision_config (the 27-block 1152-wide tower of the 27B/35B copies)"],
    "Qwen/Qwen3.6-35B-A3B": ["max_position_embeddings, MTP layer and vision widths (Qwen3.5-35B-A3B's)"],
    "MiniMaxAI/MiniMax-M2.1": ["every key: copied from MiniMax-M2.5 on the strength of the test's "
                               "statement"],
    "zai-org/GLM-4.7": ["keys not in the three copies (rope_theta, partial_rotary_factor) are "
                        "GLM-4.6's"],
    "zai-org/GLM-5": ["max_position_embeddings 202752 (the GLM-4.7 context; the GLM-5-series copy "
                      "with index 32 x 128 says 1048576 and may be a later release)"],
    "moonshotai/Kimi-K2-Thinking": ["max_position_embeddings 262144 and rope_scaling (Kimi K2 0905's)"],
}
