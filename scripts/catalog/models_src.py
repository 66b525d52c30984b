"""The model catalog, written as the real HF config.json keys of each checkpoint.

Run `python3 scripts/catalog/build_models.py` to regenerate
crates/vramfit-model/catalog/models.json from this file. Only memory-relevant keys are kept.
Where the real config.json leaves a key to the transformers default (e.g. Gemma 3's text_config
omits vocab_size), the default value is written out and the note says so.
"""

BF16 = "bfloat16"


def llama3_rope(factor):
    return {"factor": factor, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192, "rope_type": "llama3"}


def dense(arch, mtype, hidden, inter, layers, heads, kv, vocab, max_pos, tie=False,
          dtype=BF16, rope_theta=None, head_dim=None, **extra):
    c = {"architectures": [arch], "model_type": mtype, "hidden_size": hidden,
         "intermediate_size": inter, "num_hidden_layers": layers,
         "num_attention_heads": heads, "num_key_value_heads": kv}
    if head_dim is not None:
        c["head_dim"] = head_dim
    c.update({"vocab_size": vocab, "max_position_embeddings": max_pos,
              "tie_word_embeddings": tie, "torch_dtype": dtype})
    if rope_theta is not None:
        c["rope_theta"] = rope_theta
    c.update(extra)
    return c


def llama(hidden, inter, layers, heads, kv, vocab, max_pos, **kw):
    return dense("LlamaForCausalLM", "llama", hidden, inter, layers, heads, kv, vocab, max_pos, **kw)


def qwen2(hidden, inter, layers, heads, kv, vocab, max_pos, tie=False, rope_theta=1000000.0,
          sliding_window=131072, **kw):
    return dense("Qwen2ForCausalLM", "qwen2", hidden, inter, layers, heads, kv, vocab, max_pos,
                 tie=tie, rope_theta=rope_theta, use_sliding_window=False,
                 sliding_window=sliding_window, **kw)


def qwen3(hidden, inter, layers, heads, kv, tie=False):
    return dense("Qwen3ForCausalLM", "qwen3", hidden, inter, layers, heads, kv, 151936, 40960,
                 tie=tie, rope_theta=1000000.0, head_dim=128, use_sliding_window=False,
                 sliding_window=None)


def mistral(hidden, inter, layers, heads, kv, vocab, max_pos, rope_theta, sliding_window=None,
            head_dim=None):
    return dense("MistralForCausalLM", "mistral", hidden, inter, layers, heads, kv, vocab, max_pos,
                 rope_theta=rope_theta, head_dim=head_dim, sliding_window=sliding_window)


def gemma2(hidden, inter, layers, heads, kv, head_dim, qpas):
    return dense("Gemma2ForCausalLM", "gemma2", hidden, inter, layers, heads, kv, 256000, 8192,
                 tie=True, rope_theta=10000.0,
                 head_dim=head_dim, sliding_window=4096, query_pre_attn_scalar=qpas,
                 attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                 cache_implementation="hybrid")


def gemma3_text(hidden, inter, layers, heads, kv, head_dim, qpas, vocab=262208, max_pos=131072,
                sliding_window=1024, rope_scaling=None):
    c = {"model_type": "gemma3_text", "hidden_size": hidden, "intermediate_size": inter,
         "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
         "head_dim": head_dim, "vocab_size": vocab, "max_position_embeddings": max_pos,
         "sliding_window": sliding_window, "sliding_window_pattern": 6,
         "query_pre_attn_scalar": qpas, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
         "rope_scaling": rope_scaling, "torch_dtype": BF16}
    return c


def gemma3_mm(text):
    return {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
            "text_config": text,
            "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152,
                              "intermediate_size": 4304, "num_hidden_layers": 27,
                              "num_attention_heads": 16, "image_size": 896, "patch_size": 14,
                              "vision_use_head": False},
            "mm_tokens_per_image": 256, "tie_word_embeddings": True, "torch_dtype": BF16}


def deepseek_v3(heads=128, experts=256, first_dense=3, vocab=129280, max_pos=163840,
                rope_theta=10000.0, rope_factor=40.0, n_group=8, topk_group=4, nextn=1):
    return {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
            "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
            "num_hidden_layers": 61, "num_attention_heads": heads, "num_key_value_heads": heads,
            "n_routed_experts": experts, "n_shared_experts": 1, "num_experts_per_tok": 8,
            "first_k_dense_replace": first_dense, "moe_layer_freq": 1, "n_group": n_group,
            "topk_group": topk_group, "topk_method": "noaux_tc", "kv_lora_rank": 512,
            "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
            "v_head_dim": 128, "num_nextn_predict_layers": nextn, "vocab_size": vocab,
            "max_position_embeddings": max_pos, "tie_word_embeddings": False,
            "torch_dtype": BF16, "rope_theta": rope_theta,
            "rope_scaling": {"type": "yarn", "factor": rope_factor,
                             "original_max_position_embeddings": 4096, "beta_fast": 32,
                             "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0},
            "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
                                    "quant_method": "fp8", "weight_block_size": [128, 128]}}


def gpt_oss(layers, experts):
    return {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880,
            "intermediate_size": 2880, "num_hidden_layers": layers, "num_attention_heads": 64,
            "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": experts,
            "num_experts_per_tok": 4, "experts_per_token": 4, "vocab_size": 201088,
            "max_position_embeddings": 131072, "initial_context_length": 4096,
            "sliding_window": 128,
            "layer_types": ["sliding_attention", "full_attention"] * (layers // 2),
            "tie_word_embeddings": False, "torch_dtype": BF16, "rope_theta": 150000,
            "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                             "beta_slow": 1.0, "truncate": False,
                             "original_max_position_embeddings": 4096},
            "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
                "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
                "lm_head"]}}


# (id, aliases, display_name, config, params(total, active, source), notes)
# Sources are attached in build_models.py (team sources + verification records).
M = []


def add(id, aliases, display, config, total=None, active=None, psrc="", notes=""):
    M.append({"id": id, "aliases": aliases, "display_name": display, "config": config,
              "params_official": {"total": total, "active": active, "source": psrc},
              "notes": notes})
