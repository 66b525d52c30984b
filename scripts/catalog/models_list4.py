"""Catalog entries, part 4: the distinct 2025-26 releases (Qwen3 2507 and Coder, Qwen3 235B 2507,
GLM-4.6, DeepSeek V3.1 / V3.2, Kimi K2 0905, Mistral Small 3.2).

Each is its own entry because its config.json differs from the earlier release of the same name
(context length, rope base, expert count, attention) or because no copy shows that it does not;
an alias only ever names a checkpoint whose config.json is the same. Sources: SOURCES below.
"""

import copy

from models_list import qwen3_moe
from models_list2 import glm4_moe
from models_src import M, add, deepseek_v3, qwen3

B = 1_000_000_000


def entry(id):
    return next(e for e in M if e["id"] == id)


def with_keys(config, **keys):
    c = copy.deepcopy(config)
    c.update(keys)
    return c


# ---- Qwen3 2507 and Coder -----------------------------------------------------------------
add("Qwen/Qwen3-4B-Instruct-2507", ["Qwen3-4B-Thinking-2507"], "Qwen3 4B Instruct 2507",
    with_keys(qwen3(2560, 9728, 36, 32, 8, tie=True), max_position_embeddings=262144,
              rope_theta=5000000.0),
    4_000_000_000, None, "Qwen3-4B-Instruct-2507 model card (4.0B)",
    "Same widths as Qwen3-4B; the context is 262144 (not 40960) and rope_theta 5e6.")
add("Qwen/Qwen3-Coder-30B-A3B-Instruct", [], "Qwen3-Coder 30B-A3B Instruct",
    with_keys(qwen3_moe(2048, 5472, 48, 32, 4, 768, max_pos=262144), rope_theta=10000000.0),
    30_500_000_000, 3_300_000_000, "Qwen3-Coder-30B-A3B-Instruct model card (30.5B, 3.3B active)",
    "Qwen3-30B-A3B widths with a 262144 context; intermediate_size 5472 (unused: every layer MoE).")
add("Qwen/Qwen3-Coder-480B-A35B-Instruct", [], "Qwen3-Coder 480B-A35B Instruct",
    with_keys(qwen3_moe(6144, 8192, 62, 96, 8, 2560, max_pos=262144), num_experts=160,
              rope_theta=10000000.0),
    480 * B, 35 * B, "Qwen3-Coder-480B-A35B-Instruct model card (480B, 35B active)",
    "62 MoE layers of 160 experts (top-8, 2560 wide); 96 heads over 8 KV heads.")
add("Qwen/Qwen3-235B-A22B-Instruct-2507", ["Qwen3-235B-A22B-Thinking-2507"],
    "Qwen3 235B-A22B Instruct 2507",
    with_keys(qwen3_moe(4096, 12288, 94, 64, 4, 1536, max_pos=262144), rope_theta=5000000.0),
    235 * B, 22 * B, "Qwen3-235B-A22B-Instruct-2507 model card (235B, 22B active)",
    "Qwen3-235B-A22B widths with a 262144 context (the original release has 40960).")

# ---- GLM, DeepSeek, Kimi ------------------------------------------------------------------
add("zai-org/GLM-4.6", ["GLM-4.6"], "GLM-4.6",
    with_keys(glm4_moe(5120, 12288, 1536, 92, 160, 3, True), max_position_embeddings=202752),
    355 * B, 32 * B, "GLM-4.6 model card (355B total, 32B active, 200K context)",
    "GLM-4.5's architecture with a 202752-token context (GLM-4.5: 131072).")
add("deepseek-ai/DeepSeek-V3.1", ["DeepSeek-V3.1-Terminus", "DeepSeek-V3.1-Base"], "DeepSeek-V3.1 671B",
    deepseek_v3(), 671 * B, 37 * B, "DeepSeek-V3.1 model card (671B total, 37B activated)",
    "DeepSeek-V3's architecture and FP8 block-128 checkpoint; a hybrid thinking/non-thinking release.")
add("deepseek-ai/DeepSeek-V3.2-Exp", ["DeepSeek-V3.2", "DeepSeek-V3.2-Exp-Base"], "DeepSeek-V3.2-Exp 685B",
    with_keys(deepseek_v3(), architectures=["DeepseekV32ForCausalLM"], model_type="deepseek_v32",
              index_topk=2048, index_n_heads=64, index_head_dim=128),
    671 * B, 37 * B, "DeepSeek-V3.2-Exp model card (V3.1-Terminus architecture plus DeepSeek Sparse Attention)",
    "DeepSeek-V3 MLA/MoE plus the lightning indexer (64 heads of 128, top-2048 tokens); the indexer "
    "keeps its own per-token key cache (index_head_dim values per layer), not yet counted here.")
add("moonshotai/Kimi-K2-Instruct-0905", [], "Kimi K2 Instruct 0905",
    deepseek_v3(heads=64, experts=384, first_dense=1, vocab=163840, max_pos=262144,
                rope_theta=50000.0, rope_factor=64.0, n_group=1, topk_group=1, nextn=0),
    1_000 * B, 32 * B, "Kimi K2 README (1T total, 32B activated)",
    "Kimi-K2-Instruct's architecture with a 262144-token context.")

# ---- Mistral Small 3.2 --------------------------------------------------------------------
add("mistralai/Mistral-Small-3.2-24B-Instruct-2506", ["Mistral-Small-3.2-24B", "Mistral-Small-3.2",
                                                      "mistral-small3.2"],
    "Mistral Small 3.2 24B Instruct (2506)",
    copy.deepcopy(entry("mistralai/Mistral-Small-3.1-24B-Instruct-2503")["config"]),
    24 * B, None, "Mistral-Small-3.2-24B-Instruct-2506 model card (24B; update of 3.1)",
    "Mistral Small 3.1's architecture (Mistral3ForConditionalGeneration, 131072 context).")

SOURCES = {
    "Qwen/Qwen3-4B-Instruct-2507": [
        "code-index id 66802379896 (EAGLE3 plan's exact target contract for Qwen/Qwen3-4B-Instruct-2507: "
        "2560/9728/36 layers/32 heads/8 KV/head 128/vocab 151936/max_position_embeddings 262144/rope_theta "
        "5000000/tie_word_embeddings true/bfloat16)",
        "code-index id 54521862117 (shape profile read from Qwen3-4B-Instruct-2507/config.json: 2560/32/8/128/"
        "9728/36/151936)"],
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": [
        "github:lucienhuangfu/eLLM/models/Qwen3-Coder-30B-A3B-Instruct/config.json@0720b34d88f2 (verbatim: "
        "2048/5472/moe 768/48 layers/32 heads/4 KV/head 128/128 experts top-8/max_position_embeddings 262144/"
        "rope_theta 10000000/untied)"],
    "Qwen/Qwen3-Coder-480B-A35B-Instruct": [
        "code-index id 54993165207 (model registry entry Qwen/Qwen3-Coder-480B-A35B-Instruct: qwen3_moe 6144/"
        "8192/moe 2560/62 layers/96 heads/8 KV/160 experts top-8/vocab 151936/max_position_embeddings 262144/"
        "head 128/bfloat16)"],
    "Qwen/Qwen3-235B-A22B-Instruct-2507": [
        "code-index id 62836009775 (verbatim Qwen3-235B-A22B-Instruct-2507/config.json: 4096/12288/moe 1536/"
        "94 layers/64 heads/4 KV/head 128/128 experts top-8/max_position_embeddings 262144/rope_theta 5000000)"],
    "zai-org/GLM-4.6": [
        "code-index id 61106028606 (GLM-4.6 FULL_CFG: Glm4MoeForCausalLM 5120/12288/moe 1536/92 layers/96 heads/"
        "8 KV/head 128/160 routed + 1 shared top-8/first_k_dense_replace 3/max_position_embeddings 202752/"
        "partial_rotary_factor 0.5/1 MTP layer/vocab 151552/untied)",
        "code-index id 2748342403 (GLM-4.6 architecture notes: 92/5120/96/8/202752/rope 1e6)"],
    "deepseek-ai/DeepSeek-V3.1": [
        "derived from the deepseek-ai/DeepSeek-V3 entry: the V3.1 card states the V3 architecture (671B total, "
        "37B active) and the same FP8 UE8M0-scaled block-128 weights"],
    "deepseek-ai/DeepSeek-V3.2-Exp": [
        "code-index id 54492754204 (DeepseekV32ForCausalLM test config: 7168/18432/moe 2048/128 heads/q_lora "
        "1536/kv_lora 512/rope 64/nope 128/v 128/256 experts top-8/first 3 dense/index_topk 2048/index_n_heads "
        "64/index_head_dim 128/vocab 129280)",
        "code-index id 58447926695 (DSA_MODEL_DIMS DeepseekV32ForCausalLM: the same MLA and indexer widths)"],
    "moonshotai/Kimi-K2-Instruct-0905": [
        "code-index id 55660625837 (provider model table: moonshotai/Kimi-K2-Instruct-0905 contextWindow 262144)",
        "code-index id 206209997 (kimi-k2-instruct-0905: 262K context)",
        "architecture from the moonshotai/Kimi-K2-Instruct entry (same 1T/32B model card)"],
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506": [
        "derived from the mistralai/Mistral-Small-3.1-24B-Instruct-2503 entry (the 3.2 card: a minor update of "
        "3.1, same 24B Mistral3ForConditionalGeneration)"],
}

UNVERIFIED = {
    "Qwen/Qwen3-4B-Instruct-2507": ["Qwen3-4B-Thinking-2507 shares this config (same model card table)"],
    "Qwen/Qwen3-Coder-480B-A35B-Instruct": ["rope_theta 10000000 (from the 30B Coder's config)"],
    "Qwen/Qwen3-235B-A22B-Instruct-2507": ["Qwen3-235B-A22B-Thinking-2507 shares this config"],
    "deepseek-ai/DeepSeek-V3.1": ["every key: no verbatim copy of the V3.1 config.json was found"],
    "deepseek-ai/DeepSeek-V3.2-Exp": ["num_hidden_layers 61 and max_position_embeddings 163840 (V3's)",
                                      "DeepSeek-V3.2 (final) shares the Exp config"],
    "moonshotai/Kimi-K2-Instruct-0905": ["rope_scaling factor 64 (262144 / 4096)"],
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506": ["every key: no verbatim copy of the 3.2 config.json "
                                                      "was found"],
}

# ---- Qwen3 base checkpoints: pretrained at 32768 tokens, their config.json says so ----------
for _size in ["0.6B", "1.7B", "4B", "8B", "14B", "30B-A3B"]:
    _tuned = entry(f"Qwen/Qwen3-{_size}")
    add(f"Qwen/Qwen3-{_size}-Base", [], f"Qwen3 {_size} Base",
        with_keys(_tuned["config"], max_position_embeddings=32768),
        _tuned["params_official"]["total"], _tuned["params_official"]["active"],
        _tuned["params_official"]["source"],
        f"Qwen/Qwen3-{_size}'s architecture with the base model's 32768-token context (the tuned "
        "release has 40960).")
    SOURCES[f"Qwen/Qwen3-{_size}-Base"] = [
        "code-index id 63540049767 (models/Qwen3-8B/config.json max_position_embeddings=40960, "
        "models/Qwen3-8B-Base/config.json max_position_embeddings=32768)",
        "github:AI-Hypercomputer/maxtext/src/maxtext/checkpoint_conversion/utils/hf_model_configs.py@e591f30cbbf2 "
        "(qwen3_30b_a3b_base_config, 'Matches Qwen/Qwen3-30B-A3B-Base': max_position_embeddings 32768)",
        f"widths from the Qwen/Qwen3-{_size} entry"]
    if _size not in ("8B", "30B-A3B"):
        UNVERIFIED[f"Qwen/Qwen3-{_size}-Base"] = [
            "max_position_embeddings 32768 (read for the 8B and 30B-A3B base configs; the family shares it)"]
