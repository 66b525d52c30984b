#!/usr/bin/env python3
"""Write small GGUF files with gguf-py's GGUFWriter whose metadata no model can have, for
vramfit's hostile-input tests (crates/vramfit/tests/hostile.rs).

Usage: make_hostile_ggufs.py OUT_DIR

Writes into OUT_DIR (a 2-layer llama with real tensors, then one broken key each):
  valid.gguf       the model as it should be
  block0.gguf      llama.block_count = 0
  kv0.gguf         llama.attention.head_count_kv = 0
  kvhigh.gguf      llama.attention.head_count_kv = 16 with head_count = 8
  ctx2p63.gguf     llama.context_length = 2^63 (a uint64)
  heads0.gguf      llama.attention.head_count = 0

Needs: pip install gguf numpy   (exit code 3 when they are missing)
"""

import os
import sys

try:
    import numpy as np
    import gguf
except ImportError as e:  # the Rust tests skip on exit code 3
    print(f"gguf-py missing ({e}); install it with: pip install gguf numpy", file=sys.stderr)
    sys.exit(3)

ARCH = "llama"
N_EMBD, N_FF, N_VOCAB, N_LAYER = 256, 512, 256, 2


def write(path, overrides):
    w = gguf.GGUFWriter(path, ARCH)
    keys = {
        "context_length": ("u32", 4096),
        "embedding_length": ("u32", N_EMBD),
        "block_count": ("u32", N_LAYER),
        "feed_forward_length": ("u32", N_FF),
        "attention.head_count": ("u32", 8),
        "attention.head_count_kv": ("u32", 2),
        "rope.dimension_count": ("u32", 32),
    }
    keys.update(overrides)
    for k, (kind, v) in keys.items():
        name = f"{ARCH}.{k}"
        if kind == "u32":
            w.add_uint32(name, v)
        else:
            w.add_uint64(name, v)
    w.add_float32(f"{ARCH}.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_uint32("general.file_type", 1)
    f16 = np.float16
    w.add_tensor("token_embd.weight", np.zeros((N_VOCAB, N_EMBD), dtype=f16))
    w.add_tensor("output_norm.weight", np.ones((N_EMBD,), dtype=np.float32))
    w.add_tensor("output.weight", np.zeros((N_VOCAB, N_EMBD), dtype=f16))
    for i in range(N_LAYER):
        p = f"blk.{i}"
        w.add_tensor(f"{p}.attn_norm.weight", np.ones((N_EMBD,), dtype=np.float32))
        w.add_tensor(f"{p}.attn_q.weight", np.zeros((N_EMBD, N_EMBD), dtype=f16))
        w.add_tensor(f"{p}.attn_k.weight", np.zeros((64, N_EMBD), dtype=f16))
        w.add_tensor(f"{p}.attn_v.weight", np.zeros((64, N_EMBD), dtype=f16))
        w.add_tensor(f"{p}.attn_output.weight", np.zeros((N_EMBD, N_EMBD), dtype=f16))
        w.add_tensor(f"{p}.ffn_norm.weight", np.ones((N_EMBD,), dtype=np.float32))
        w.add_tensor(f"{p}.ffn_gate.weight", np.zeros((N_FF, N_EMBD), dtype=f16))
        w.add_tensor(f"{p}.ffn_up.weight", np.zeros((N_FF, N_EMBD), dtype=f16))
        w.add_tensor(f"{p}.ffn_down.weight", np.zeros((N_EMBD, N_FF), dtype=f16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cases = {
        "valid": {},
        "block0": {"block_count": ("u32", 0)},
        "kv0": {"attention.head_count_kv": ("u32", 0)},
        "kvhigh": {"attention.head_count_kv": ("u32", 16)},
        "ctx2p63": {"context_length": ("u64", 2**63)},
        "heads0": {"attention.head_count": ("u32", 0)},
    }
    for name, overrides in cases.items():
        write(os.path.join(out, f"{name}.gguf"), overrides)
    print("\n".join(sorted(cases)))


if __name__ == "__main__":
    main()
