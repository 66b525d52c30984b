"""Sources found while verifying the catalog (copies of HF config.json files in public code).

Keys: catalog id. "code-index id N" names a file of the public-code search index (find_string /
read_file), as the team's data files do; what the copy confirms is in parentheses.
"""

EXTRA = {
    "Qwen/Qwen3-235B-A22B": [
        "code-index id 22176531064 (Qwen3MoeForCausalLM config, transformers 4.51.0: 4096/12288/moe 1536/94 layers/"
        "64 heads/4 KV/head 128/128 experts top-8/max_position_embeddings 40960/rope 1e6)",
        "code-index id 9990193600 (Qwen3-235B-A22B: 94/64/4/128/4096/40960)"],
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": [
        "code-index id 115210306 (TensorRT-LLM test LLAMA_4_MAVERICK_TWO_LAYER_CONFIG, a trimmed real config: "
        "5120/8192/mlp 16384/40 heads/8 KV/head 128/128 experts top-1/interleave 2/max_position_embeddings "
        "1048576/chunk 8192; vision 1408/5632/16 heads/336/14/projector 4096)"],
    "meta-llama/Meta-Llama-3-8B-Instruct": [
        "team model facts, Llama-3.1-8B note: 'Llama 3 (non-3.1) 8B: max_position_embeddings 8192, rope_scaling "
        "null' (../shared/data/catalog/model_catalog.jsonl)"],
    "meta-llama/Meta-Llama-3-70B-Instruct": ["same widths as the Llama-3.1-70B entry with Llama 3's 8192 context"],
    "mistralai/Mistral-7B-Instruct-v0.2": [
        "team model facts, Mistral-7B-v0.1 note: 'v0.2 dropped sliding window and used rope_theta 1e6' "
        "(../shared/data/catalog/model_catalog.jsonl)"],
    "nvidia/Nemotron-H-8B-Base-8K": [
        "code-index id 65729193996 (NemotronH config beside ai21labs/Jamba-v0.1: 52 layers, 32 heads, 8 KV, "
        "ssm_state_size 128, mamba_num_heads 128, mamba_head_dim 64, n_groups 8, conv 4, expand 2, vocab 131072, "
        "8192)"],
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": [
        "code-index id 70166759091 and 38724182599 (Scout text config: rope_scaling llama3 factor 16, low/high "
        "freq 1.0, original 8192; max_position_embeddings 10485760; chunk 8192; qk-norm)",
        "code-index id 67089035748 (no_rope_layers [1,1,1,0] x 12: every 4th layer global NoPE)"],
    "google/gemma-2b": [
        "github:UbiquitousLearning/mllm/src/models/gemma/README.md (Gemma 2B: vocab 256000, 8192, 18 layers, "
        "8 heads, 1 KV head, 2048, 16384, head 256)"],
    "mistralai/Ministral-8B-Instruct-2410": [
        "github:huggingface/transformers/docs/source/en/model_doc/ministral.md (8B, interleaved sliding-window "
        "attention, 128k context, 32k on vLLM)",
        "no verbatim config.json copy found; widths consistent with the 8.02B parameter total (catalog_specs test)"],
    "Qwen/Qwen2.5-Coder-7B-Instruct": [
        "derived from the Qwen/Qwen2.5-7B-Instruct entry (same architecture; Qwen2.5-Coder card: 7.61B)"],
    "Qwen/Qwen3-30B-A3B-Instruct-2507": [
        "derived from the Qwen/Qwen3-30B-A3B entry with the 2507 release's 262144-token context "
        "(Qwen3-30B-A3B-Instruct-2507 model card)"],
    "CohereForAI/c4ai-command-r-plus": [
        "code-index id 55805448694 (c4ai-command-r-plus: vocab 256000, 12288, 64 layers, 96 heads, 8 KV, "
        "mlp 33792, rope 7.5e7, logit_scale 0.8333, tied; that copy says use_qk_norm false, kept true here)"],
    "microsoft/Phi-3.5-mini-instruct": [
        "code-index id 25096887737 and 11216240129 (Phi3 longrope config: 3072/8192/32/32/32, sliding 262144, "
        "vocab 32064, untied, transformers 4.46.3)"],
    "zai-org/GLM-4.5": [
        "code-index id 60918936965 (zai-org/GLM-4.5: 5120 hidden, 96 heads, 92 layers, 8 KV, head 128; "
        "zai-org/GLM-4.5-Air: 4096, 96, 46, 8, 128)",
        "code-index id 66506276105 (glm4_moe config of the same family: 12288/moe 1536/160 routed + 1 shared/"
        "top-8/first_k_dense 3/qk-norm/vocab 151552; its max_position_embeddings 202752 is GLM-4.6's)"],
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503": [
        "code-index id 5155030191 (Mistral3ForConditionalGeneration config.json, transformers 4.57.1: text "
        "5120/32768/40/32/8 KV/head 128/131072/rope 1e9/vocab 131072; pixtral vision 1024/4096/24 layers/16 heads/"
        "head 64/image 1540/patch 14; spatial_merge_size 2)",
        "code-index id 56153331831 (Mistral Small 3 text_config nesting, same widths)"],
    "deepseek-ai/DeepSeek-V2-Chat": [
        "code-index id 1252603174 (DeepseekV2ForCausalLM config.json copy: 5120/12288/moe 1536/60 layers/"
        "128 heads/160 routed + 2 shared top-6/MLA 512+64/q_lora 1536/yarn 40 mscale 1.0/163840)",
        "code-index id 51975172658 (same values, group_limited_greedy 8/3)"],
    "deepseek-ai/DeepSeek-V2.5": ["code-index id 1252603174 (the DeepSeek-V2 236B config; V2.5 shares it)"],
    "google/gemma-7b": [
        "code-index id 19965181827 (GemmaForCausalLM config: 3072/24576/28 layers/16 heads/16 KV/head 256/8192)",
        "code-index id 11884956280 (GemmaConfig defaults = gemma-7b, vocab 256000)"],
    "EleutherAI/gpt-neox-20b": [
        "code-index id 7806064252 (GPTNeoXForCausalLM 6144/24576/64 heads/44 layers)"],
    "microsoft/Phi-3.5-MoE-instruct": [
        "code-index id 54525692000 (mlx-community Phi-3.5-MoE-instruct config: 4096/6400/32 layers/32 heads/"
        "8 KV/16 experts top-2/vocab 32064)",
        "code-index id 7043489506 (PhiMoEConfig: same, 131072, original 4096)"],
    "ai21labs/AI21-Jamba-1.5-Mini": [
        "code-index id 32223319525 and 32332034728 (copies of ai21labs/AI21-Jamba-1.5-Mini/config.json: "
        "attn period 8 offset 4, expert period 2 offset 1, mamba d_state 16 d_conv 4 expand 2 dt_rank 256, "
        "262144)"],
    "ai21labs/Jamba-v0.1": [
        "code-index id 60797780217 (real Jamba-v0.1 config: 4096/14336/32/32/8/16 experts top-2/262144)"],
    "THUDM/GLM-4-9B-0414": [
        "code-index id 56014767049 (Glm4ForCausalLM config: 4096/13696/40/32/2 KV/head 128/151552/"
        "partial_rotary 0.5)"],
    "THUDM/GLM-Z1-32B-0414": [
        "../shared/research/llamacpp_memory.md (GLM-Z1-32B KV: 61 layers x 2 KV heads x 128; llama.cpp log)"],
    "google/gemma-2-2b-it": [
        "code-index id 4570259524 (verbatim copy of google/gemma-2-2b-it config.json, transformers 4.42.4: "
        "torch_dtype bfloat16, cache_implementation hybrid, sliding 4096, query_pre_attn_scalar 256)",
        "code-index id 56014767049 (Gemma2 config: 2304/9216/26/8/4/head 256/256000/softcaps 50 and 30)"],
    "EleutherAI/pythia-2.8b": [
        "computed from this config: 2,775,208,960 parameters, the Pythia paper's total (catalog_specs test)"],
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": [
        "code-index id 54203898792 (full config.json copy: 2688/1856/52 layers/32 heads/2 KV/pattern/"
        "mamba 64x64/ssm 128/n_groups 8/128 experts top-6/moe 1856/shared 3712/vocab 131072/262144)",
        "code-index id 55856016467 (same values, rope_theta 10000)"],
    "tiiuae/Falcon-H1-7B-Instruct": [
        "code-index id 65865534003 (FALCON_H1_7B_HF: 3072/44/12/2/128/12288/130048/mamba d_ssm 3072, "
        "24 heads x 128, d_state 256, n_groups 1, d_conv 4, expand 2, chunk 128, 262144)",
        "code-index id 70958236989 (mlx-community Falcon-H1-7B-Instruct-4bit config: same values)"],
    "CohereForAI/c4ai-command-r7b-12-2024": [
        "code-index id 55948871020 (_COMMAND_R7B: vocab 256000, 4096, 32 layers, 32 heads, 8 KV, head 128, "
        "mlp 14336, sliding 4096 pattern 4, rope_theta 50000, logit_scale 0.25, tied)"],
    "zai-org/GLM-4.5-Air": [
        "code-index id 54377337437 (Glm4MoeForCausalLM config: 4096/10944/moe 1408/46 layers/96 heads/"
        "8 KV/head 128/128 routed + 1 shared/top-8/first_k_dense 1/131072/partial_rotary 0.5/attention_bias)"],
    "Qwen/Qwen2-57B-A14B": [
        "code-index id 634555490 (QWEN2_57B_A14B_CONFIG: 3584/18944/28 layers/28 heads/4 KV/64 experts "
        "top-8/moe 2560/shared 20480/131072/sliding 131072)"],
    "Qwen/Qwen1.5-MoE-A2.7B-Chat": [
        "code-index id 71463455676 (Qwen1.5-MoE-A2.7B-Chat config: 2048/5632/24/16/16/60 experts top-4/"
        "moe 1408/shared 5632/32768)",
        "code-index id 56718850834 (qwen2_moe test config, same widths)"],
    "ibm-granite/granite-3.1-3b-a800m-instruct": [
        "code-index id 71463455676 (config: 1536/512/131072/24 heads/8 KV/32 layers/40 experts top-8/"
        "rope 1e7/tied/vocab 49155)",
        "code-index id 70988719928 (same geometry)"],
    "ibm-granite/granite-3.1-8b-instruct": [
        "code-index id 59383598976 (granite-3.1-8b-base test config: 4096/12800/40 layers/32 heads/8 KV/131072/"
        "rope 1e7)",
        "code-index id 61558565367 (GraniteForCausalLM config.json: multipliers 0.0078125/12.0/0.22/16.0, tied)",
        "code-index id 68624493177 (granite-3.1-8b-instruct: 40 layers, 4096, 12800, vocab 49155, "
        "8,170,864,640 parameters)"],
    "microsoft/Phi-4-mini-instruct": [
        "code-index id 67658155331 (config.json values at a pinned revision: 3,836,021,760 parameters)",
        "code-index id 71463455676 (config: 3072/8192/131072/24 heads/32 layers/8 KV/partial_rotary 0.75/"
        "sliding 262144/tied/vocab 200064)"],
    "moonshotai/Kimi-K2-Instruct": [
        "code-index id 55329353243 and 4289690615 (Kimi K2.x text_config: 7168/18432/moe 2048/61 layers/"
        "64 heads/MLA 512+64/384 routed + 1 shared/top-8/first_k_dense 1/vocab 163840)"],
    "deepseek-ai/DeepSeek-V2-Lite": [
        "code-index id 62526029280 (DeepSeek-V2-Lite config.json: yarn factor 40, mscale 0.707)",
        "code-index id 71463455676 (DeepSeek-V2-Lite-Chat config)"],
    "Qwen/Qwen2.5-1.5B-Instruct": ["code-index id 71463455676 (config: sliding_window 32768, tied)"],
    "Qwen/Qwen2.5-7B-Instruct": ["code-index id 71463455676 (config: sliding_window 131072)"],
    "Qwen/Qwen3-30B-A3B": ["code-index id 71463455676 (config copy)"],
    "Qwen/Qwen3-14B": ["code-index id 71463455676 (config copy)"],
    "Qwen/Qwen3-32B": ["code-index id 71463455676 (config copy)"],
    "Qwen/Qwen3-4B": ["code-index id 71463455676 (config copy)"],
    "Qwen/Qwen3-1.7B": ["code-index id 71463455676 (config copy)"],
}

# Team "unverified_fields" that the copies above settle (prefix match on the field text).
RESOLVED = {
    "Qwen/Qwen2.5-1.5B-Instruct": ["max_position_embeddings"],
    "Qwen/Qwen2.5-7B-Instruct": ["max_position_embeddings"],
    "Qwen/Qwen3-30B-A3B": ["max_position_embeddings"],
    "google/gemma-2-2b-it": ["torch_dtype"],
    "nvidia/Nemotron-H-8B-Base-8K": ["mamba_num_heads", "head_dim", "max_position_embeddings"],
    "tiiuae/Falcon-H1-7B-Instruct": ["all fields"],
    "tiiuae/falcon-7b": ["max_position_embeddings"],
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": ["max_position_embeddings"],
    "Qwen/Qwen3-235B-A22B": ["max_position_embeddings"],
}

# Facts of added entries not seen in a verbatim copy (kept from model cards or the family's pattern).
UNVERIFIED = {
    "mistralai/Ministral-8B-Instruct-2410": ["all widths (no verbatim config.json copy found; parameter total agrees)"],
    "Qwen/Qwen3-30B-A3B-Instruct-2507": ["max_position_embeddings 262144 (model card, not a config copy)"],
    "CohereForAI/c4ai-command-r7b-12-2024": ["max_position_embeddings 8192", "torch_dtype"],
    "CohereForAI/c4ai-command-r-plus": ["use_qk_norm (copies disagree)", "torch_dtype"],
    "ibm-granite/granite-3.1-8b-instruct": ["vocab_size: copies say 49152 (3.1 base test), 49155, 49159 (3.3)"],
    "THUDM/GLM-Z1-32B-0414": ["intermediate_size 23040", "num_attention_heads 48", "max_position_embeddings"],
    "moonshotai/Kimi-K2-Instruct": ["rope_scaling factor 32", "max_position_embeddings 131072 (0905: 262144)"],
    "tiiuae/Falcon3-7B-Instruct": ["vocab_size: two public copies say 131080 for Falcon3-7B, this entry keeps 131072"],
    "microsoft/Phi-3.5-mini-instruct": ["rope_scaling factor lists left out"],
    "google/gemma-2b": ["torch_dtype"],
    "google/gemma-7b": ["torch_dtype"],
    "EleutherAI/gpt-neox-20b": ["vocab_size 50432", "torch_dtype"],
    "Qwen/Qwen2-57B-A14B": ["which repo (base or Instruct) the 131072 copy came from"],
    "zai-org/GLM-4.5": ["max_position_embeddings 131072 (the copy seen is GLM-4.6's 202752)"],
    "deepseek-ai/DeepSeek-V2.5": ["identity with the DeepSeek-V2 config"],
    "meta-llama/Meta-Llama-3-70B-Instruct": ["all values (Llama 3.1 70B widths with Llama 3's 8192 context)"],
    "mistralai/Mistral-7B-Instruct-v0.2": ["all values (team note, not a config copy)"],
}
