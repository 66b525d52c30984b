#!/usr/bin/env python3
"""Write a LoRA adapter GGUF and a vision-projector GGUF with gguf-py's GGUFWriter, laid out as
llama.cpp's convert_lora_to_gguf.py and the mmproj converters write them, for the tests of
`check`'s extras (crates/vramfit/tests/check_extras.rs).

Usage: make_extras_fixtures.py OUT_DIR
Prints {"lora.gguf": TENSOR_BYTES, "mmproj.gguf": TENSOR_BYTES} as gguf-py's GGUFReader reads
them back. Needs: pip install gguf numpy (exit code 3 when missing).
"""

import json
import os
import sys

try:
    import numpy as np
    import gguf
except ImportError as e:
    print(f"gguf-py missing ({e}); install it with: pip install gguf numpy", file=sys.stderr)
    sys.exit(3)


def lora(path):
    # Qwen3-8B shapes, rank 16: A [rank, in], B [out, rank] per adapted projection
    w = gguf.GGUFWriter(path, "qwen3")
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", 32.0)
    r, h = 16, 4096
    for i in range(36):
        for name, n_in, n_out in [("attn_q", h, 4096), ("attn_k", h, 1024), ("attn_v", h, 1024), ("attn_output", 4096, h)]:
            w.add_tensor(f"blk.{i}.{name}.weight.lora_a", np.zeros((r, n_in), dtype=np.float16))
            w.add_tensor(f"blk.{i}.{name}.weight.lora_b", np.zeros((n_out, r), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def mmproj(path):
    w = gguf.GGUFWriter(path, "clip")
    w.add_string("general.type", "mmproj")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_uint32("clip.vision.embedding_length", 1152)
    w.add_uint32("clip.vision.feed_forward_length", 4304)
    w.add_uint32("clip.vision.block_count", 4)
    for i in range(4):
        w.add_tensor(f"v.blk.{i}.attn_qkv.weight", np.zeros((3 * 1152, 1152), dtype=np.float16))
        w.add_tensor(f"v.blk.{i}.ffn_up.weight", np.zeros((4304, 1152), dtype=np.float16))
        w.add_tensor(f"v.blk.{i}.ffn_down.weight", np.zeros((1152, 4304), dtype=np.float16))
    w.add_tensor("mm.input_projection.weight", np.zeros((4096, 1152), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def mmproj_siglip(path):
    """A projector header as gemma-3's mmproj carries it (SigLIP 896/14, 1152 wide, 16 heads);
    one block of tensors, enough for clip.cpp's warm-up estimate."""
    w = gguf.GGUFWriter(path, "clip")
    w.add_string("general.type", "mmproj")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_uint32("clip.vision.image_size", 896)
    w.add_uint32("clip.vision.patch_size", 14)
    w.add_uint32("clip.vision.embedding_length", 1152)
    w.add_uint32("clip.vision.feed_forward_length", 4304)
    w.add_uint32("clip.vision.attention.head_count", 16)
    w.add_uint32("clip.vision.block_count", 1)
    w.add_tensor("v.blk.0.ffn_up.weight", np.zeros((4304, 1152), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    sizes = {}
    for name, make in [
        ("lora.gguf", lora),
        ("mmproj.gguf", mmproj),
        ("mmproj-siglip.gguf", mmproj_siglip),
    ]:
        p = os.path.join(out, name)
        make(p)
        sizes[name] = int(sum(t.n_bytes for t in gguf.GGUFReader(p).tensors))
    print(json.dumps(sizes))


if __name__ == "__main__":
    main()
