#!/usr/bin/env python3
"""Write small GGUF models with real llama.cpp architectures and random weights, for the tests
that launch a real llama-server (crates/vramfit/tests/llamacpp_live*.rs).

Usage: make_llama_models.py OUT_DIR [NAME ...]

Models (NAME.gguf), all F16 matrices and F32 norms, an SPM ("llama") vocabulary with the 256
byte tokens llama.cpp looks up:
  llama-32k     llama, 4 layers, GQA 8/2 heads, a 32000-token vocabulary, separate output
  qwen3-152k    qwen3 (q/k norms), 4 layers, the real 151936-token vocabulary (big logits)
  gemma3-swa    gemma3, 6 layers: 5 sliding-window (512) + 1 global, tied output
  qwen3moe      qwen3moe, 4 layers, 8 experts of which 2 are used
Prints one JSON line per model: name, path, bytes.

Needs: pip install gguf numpy   (exit code 3 when they are missing)
"""

import json
import os
import sys

try:
    import numpy as np
    import gguf
except ImportError as e:  # the Rust tests skip on exit code 3
    print(f"gguf-py missing ({e}); install it with: pip install gguf numpy", file=sys.stderr)
    sys.exit(3)

RNG = np.random.default_rng(14)


def mat(w, name, ne):
    """An F16 tensor of ggml-order shape `ne` (numpy takes it reversed)."""
    a = (RNG.standard_normal(tuple(reversed(ne)), dtype=np.float32) * 0.02).astype(np.float16)
    w.add_tensor(name, a)


def norm(w, name, n):
    w.add_tensor(name, np.ones((n,), dtype=np.float32))


def vocab(w, n_vocab):
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    types = [2, 3, 3] + [6] * 256
    i = 0
    while len(toks) < n_vocab:
        toks.append(f"\u2581t{i}")
        types.append(1)
        i += 1
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_token_list(toks)
    w.add_token_scores([0.0] * len(toks))
    w.add_token_types(types)
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.add_bool("tokenizer.ggml.add_bos_token", True)


def common(w, arch, h):
    w.add_string("general.name", f"vramfit test {arch}")
    w.add_uint32("general.file_type", 1)  # MOSTLY_F16
    w.add_uint32(f"{arch}.context_length", h["ctx"])
    w.add_uint32(f"{arch}.embedding_length", h["embd"])
    w.add_uint32(f"{arch}.block_count", h["layers"])
    w.add_uint32(f"{arch}.attention.head_count", h["heads"])
    w.add_uint32(f"{arch}.attention.head_count_kv", h["kv_heads"])
    w.add_uint32(f"{arch}.attention.key_length", h["hd"])
    w.add_uint32(f"{arch}.attention.value_length", h["hd"])
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_float32(f"{arch}.rope.freq_base", 10000.0)
    if "ff" in h:
        w.add_uint32(f"{arch}.feed_forward_length", h["ff"])
    vocab(w, h["vocab"])


def attn(w, il, h, qk_norm=False):
    e, hd = h["embd"], h["hd"]
    norm(w, f"blk.{il}.attn_norm.weight", e)
    mat(w, f"blk.{il}.attn_q.weight", [e, h["heads"] * hd])
    mat(w, f"blk.{il}.attn_k.weight", [e, h["kv_heads"] * hd])
    mat(w, f"blk.{il}.attn_v.weight", [e, h["kv_heads"] * hd])
    mat(w, f"blk.{il}.attn_output.weight", [h["heads"] * hd, e])
    if qk_norm:
        norm(w, f"blk.{il}.attn_q_norm.weight", hd)
        norm(w, f"blk.{il}.attn_k_norm.weight", hd)


def ffn(w, il, e, ff):
    norm(w, f"blk.{il}.ffn_norm.weight", e)
    mat(w, f"blk.{il}.ffn_gate.weight", [e, ff])
    mat(w, f"blk.{il}.ffn_up.weight", [e, ff])
    mat(w, f"blk.{il}.ffn_down.weight", [ff, e])


def llama_32k(path):
    h = dict(ctx=8192, embd=256, layers=4, heads=8, kv_heads=2, hd=32, ff=768, vocab=32000)
    w = gguf.GGUFWriter(path, "llama")
    common(w, "llama", h)
    w.add_uint32("llama.rope.dimension_count", h["hd"])
    w.add_uint32("llama.vocab_size", h["vocab"])
    mat(w, "token_embd.weight", [h["embd"], h["vocab"]])
    norm(w, "output_norm.weight", h["embd"])
    mat(w, "output.weight", [h["embd"], h["vocab"]])
    for il in range(h["layers"]):
        attn(w, il, h)
        ffn(w, il, h["embd"], h["ff"])
    return w


def qwen3_152k(path):
    h = dict(ctx=40960, embd=128, layers=4, heads=4, kv_heads=2, hd=64, ff=384, vocab=151936)
    w = gguf.GGUFWriter(path, "qwen3")
    common(w, "qwen3", h)
    mat(w, "token_embd.weight", [h["embd"], h["vocab"]])
    norm(w, "output_norm.weight", h["embd"])
    mat(w, "output.weight", [h["embd"], h["vocab"]])
    for il in range(h["layers"]):
        attn(w, il, h, qk_norm=True)
        ffn(w, il, h["embd"], h["ff"])
    return w


def gemma3_swa(path):
    # llama.cpp gemma3: every 6th layer global (set_swa_pattern(6)), the rest sliding-window
    h = dict(ctx=32768, embd=256, layers=6, heads=4, kv_heads=1, hd=64, ff=512, vocab=8192)
    w = gguf.GGUFWriter(path, "gemma3")
    common(w, "gemma3", h)
    w.add_uint32("gemma3.attention.sliding_window", 512)
    mat(w, "token_embd.weight", [h["embd"], h["vocab"]])
    norm(w, "output_norm.weight", h["embd"])
    for il in range(h["layers"]):
        attn(w, il, h, qk_norm=True)
        norm(w, f"blk.{il}.post_attention_norm.weight", h["embd"])
        ffn(w, il, h["embd"], h["ff"])
        norm(w, f"blk.{il}.post_ffw_norm.weight", h["embd"])
    return w


def qwen3moe(path):
    h = dict(ctx=32768, embd=128, layers=4, heads=4, kv_heads=2, hd=32, vocab=4096)
    n_exp, n_used, ff_exp = 8, 2, 256
    w = gguf.GGUFWriter(path, "qwen3moe")
    common(w, "qwen3moe", h)
    w.add_uint32("qwen3moe.feed_forward_length", 512)
    w.add_uint32("qwen3moe.expert_count", n_exp)
    w.add_uint32("qwen3moe.expert_used_count", n_used)
    w.add_uint32("qwen3moe.expert_feed_forward_length", ff_exp)
    e = h["embd"]
    mat(w, "token_embd.weight", [e, h["vocab"]])
    norm(w, "output_norm.weight", e)
    mat(w, "output.weight", [e, h["vocab"]])
    for il in range(h["layers"]):
        attn(w, il, h, qk_norm=True)
        norm(w, f"blk.{il}.ffn_norm.weight", e)
        w.add_tensor(f"blk.{il}.ffn_gate_inp.weight",
                     (RNG.standard_normal((n_exp, e), dtype=np.float32) * 0.02))
        mat(w, f"blk.{il}.ffn_gate_exps.weight", [e, ff_exp, n_exp])
        mat(w, f"blk.{il}.ffn_up_exps.weight", [e, ff_exp, n_exp])
        mat(w, f"blk.{il}.ffn_down_exps.weight", [ff_exp, e, n_exp])
    return w


MODELS = {"llama-32k": llama_32k, "qwen3-152k": qwen3_152k, "gemma3-swa": gemma3_swa,
          "qwen3moe": qwen3moe}


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out = sys.argv[1]
    names = sys.argv[2:] or list(MODELS)
    os.makedirs(out, exist_ok=True)
    for name in names:
        if name not in MODELS:
            print(f"unknown model {name}: one of {', '.join(MODELS)}", file=sys.stderr)
            sys.exit(2)
        path = os.path.join(out, f"{name}.gguf")
        if not os.path.exists(path):
            w = MODELS[name](path + ".tmp")
            w.write_header_to_file()
            w.write_kv_data_to_file()
            w.write_tensors_to_file()
            w.close()
            os.replace(path + ".tmp", path)
        print(json.dumps({"name": name, "path": path, "bytes": os.path.getsize(path)}))


if __name__ == "__main__":
    main()
