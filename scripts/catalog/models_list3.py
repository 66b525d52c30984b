"""Catalog entries, part 3: state-space hybrids, Granite, GPT-NeoX."""

from models_src import BF16, add, dense

B = 1_000_000_000


def jamba(max_pos):
    return dense("JambaForCausalLM", "jamba", 4096, 14336, 32, 32, 8, 65536, max_pos,
                 num_experts=16, num_experts_per_tok=2, expert_layer_period=2,
                 expert_layer_offset=1, attn_layer_period=8, attn_layer_offset=4,
                 mamba_d_state=16, mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=256,
                 use_mamba_kernels=True)


JN = ("Attention only in layers 4, 12, 20, 28 (attn_layer_period 8, offset 4); the other 28 are "
      "Mamba with a fixed state per sequence. MoE (16 experts, top-2) in every odd layer.")
add("ai21labs/Jamba-v0.1", ["Jamba-v0.1"], "Jamba v0.1 (52B)", jamba(262144), 52 * B, 12 * B,
    "AI21 Jamba model card (52B total, 12B active)", JN)
add("ai21labs/AI21-Jamba-1.5-Mini", ["Jamba-1.5-Mini", "AI21-Jamba-Mini-1.5"], "Jamba 1.5 Mini (52B)",
    jamba(262144), 52 * B, 12 * B, "AI21 Jamba 1.5 model card (52B total, 12B active)",
    JN + " Same architecture as Jamba v0.1.")
add("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", ["NVIDIA-Nemotron-3-Nano-30B-A3B", "Nemotron-3-Nano-30B-A3B"],
    "Nemotron 3 Nano 30B-A3B",
    dense("NemotronHForCausalLM", "nemotron_h", 2688, 1856, 52, 32, 2, 131072, 262144,
          head_dim=128, rope_theta=10000,
          hybrid_override_pattern="MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
          mamba_num_heads=64, mamba_head_dim=64, ssm_state_size=128, n_groups=8, conv_kernel=4,
          expand=2, chunk_size=128, mamba_ssm_cache_dtype="float32", n_routed_experts=128,
          n_shared_experts=1, num_experts_per_tok=6, moe_intermediate_size=1856,
          moe_shared_expert_intermediate_size=3712, n_group=1, topk_group=1,
          routed_scaling_factor=2.5, norm_topk_prob=True),
    31_600_000_000, 3_500_000_000, "model card (31.6B total, about 3.5B active)",
    "One pattern character per layer: M = Mamba2, E = MoE FFN, * = attention (6 attention layers). "
    "SSM cache kept in float32.")
add("nvidia/Nemotron-H-8B-Base-8K", ["Nemotron-H-8B-Base-8K", "Nemotron-H-8B"], "Nemotron-H 8B Base 8K",
    dense("NemotronHForCausalLM", "nemotron_h", 4096, 21504, 52, 32, 8, 131072, 8192,
          head_dim=128,
          hybrid_override_pattern="M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
          mamba_num_heads=128, mamba_head_dim=64, ssm_state_size=128, n_groups=8, conv_kernel=4,
          expand=2, chunk_size=128),
    8 * B, None, "model name",
    "M = Mamba2, - = squared-ReLU MLP, * = attention: 4 attention layers of 52.")
GR = "IBM Granite 3.1 model cards"
add("ibm-granite/granite-3.1-8b-instruct", ["granite-3.1-8b-instruct", "granite-3.1-8b-base", "granite3.1-dense:8b"],
    "Granite 3.1 8B Instruct",
    dense("GraniteForCausalLM", "granite", 4096, 12800, 40, 32, 8, 49155, 131072, tie=True,
          rope_theta=10000000.0, embedding_multiplier=12.0, attention_multiplier=0.0078125,
          residual_multiplier=0.22, logits_scaling=16.0),
    8 * B, None, "model name (the 8,170,864,640 count seen in code-index id 68624493177 fits vocab 49159, "
    "i.e. Granite 3.2/3.3; this config gives 8,170,848,256)",
    "Granite 3.0 8B: same widths, max_position_embeddings 4096.")
add("ibm-granite/granite-3.1-3b-a800m-instruct",
    ["granite-3.1-3b-a800m-instruct", "granite-3.1-3b-a800m-base", "granite3.1-moe:3b"],
    "Granite 3.1 3B-A800M Instruct",
    dense("GraniteMoeForCausalLM", "granitemoe", 1536, 512, 32, 24, 8, 49155, 131072, tie=True,
          rope_theta=10000000.0, num_local_experts=40, num_experts_per_tok=8,
          embedding_multiplier=12.0, attention_multiplier=0.015625, residual_multiplier=0.22,
          logits_scaling=6.0),
    3_300_000_000, 800_000_000, GR + " (3.3B total, 800M active)",
    "intermediate_size 512 is the per-expert width (40 experts, top-8, every layer).")
add("EleutherAI/pythia-2.8b", ["pythia-2.8b", "pythia-2.8b-deduped"], "Pythia 2.8B",
    {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": 2560,
     "intermediate_size": 10240, "num_hidden_layers": 32, "num_attention_heads": 32,
     "vocab_size": 50304, "max_position_embeddings": 2048, "rotary_pct": 0.25,
     "rotary_emb_base": 10000, "use_parallel_residual": True, "tie_word_embeddings": False,
     "torch_dtype": "float16"},
    2_775_208_960, None, "Pythia paper table (2,775,208,960 total)", "MHA; rotary on 25% of head_dim.")
add("EleutherAI/gpt-neox-20b", ["gpt-neox-20b"], "GPT-NeoX 20B",
    {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": 6144,
     "intermediate_size": 24576, "num_hidden_layers": 44, "num_attention_heads": 64,
     "vocab_size": 50432, "max_position_embeddings": 2048, "rotary_pct": 0.25,
     "rotary_emb_base": 10000, "use_parallel_residual": True, "tie_word_embeddings": False,
     "torch_dtype": "float16"},
    20 * B, None, "model name (GPT-NeoX-20B paper: 20.6B)", "MHA, 64 heads of 96.")
