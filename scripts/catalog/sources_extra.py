"""Sources found while verifying the catalog (copies of HF config.json files in public code).

Keys: catalog id. "code-index id N" names a file of the public-code search index (find_string /
read_file), as the team's data files do; what the copy confirms is in parentheses.
"""

EXTRA = {
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
        "code-index id 68624493177 (granite-3.1-8b-instruct: 40 layers, 4096, 12800, vocab 49155, "
        "8,170,864,640 parameters)"],
    "microsoft/Phi-4-mini-instruct": [
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
