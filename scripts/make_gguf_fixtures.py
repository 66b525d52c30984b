#!/usr/bin/env python3
"""Write real GGUF files with gguf-py's GGUFWriter for vramfit's GGUF reader tests.

Usage: make_gguf_fixtures.py OUT_DIR

Writes into OUT_DIR:
  mixed.gguf              v3, every metadata value type, nested arrays, a 2000-token vocabulary,
                          tensors of many ggml types (raw quantized bytes)
  aligned64.gguf          general.alignment = 64, odd tensor sizes (padding matters)
  bigendian.gguf          written big-endian
  split-0000N-of-00003.gguf  one model split into 3 shards (split_max_tensors = 2)
and prints a JSON manifest on stdout: for every file, what gguf-py's GGUFReader reads back
(tensor name, type id, ggml-order shape, n_bytes, absolute data offset; data section offset;
file size) plus the metadata values written.

Needs: pip install gguf numpy   (exit code 3 when they are missing)
"""

import json
import os
import sys

try:
    import numpy as np
    import gguf
    from gguf import GGMLQuantizationType as Q, GGUFValueType as V
except ImportError as e:  # the Rust tests skip on exit code 3
    print(f"gguf-py missing ({e}); install it with: pip install gguf numpy", file=sys.stderr)
    sys.exit(3)

RNG = np.random.default_rng(1234)
ARCH = "llama"
N_LAYER = 4


def raw_tensor(w, name, qtype, ne):
    """Add a tensor of ggml-order shape `ne` and type `qtype` as raw random bytes."""
    block, type_size = gguf.GGML_QUANT_SIZES[qtype]
    assert ne[0] % block == 0, (name, ne, block)
    row_bytes = ne[0] // block * type_size
    byte_shape = tuple(reversed(ne[1:])) + (row_bytes,)
    data = RNG.integers(0, 256, size=byte_shape, dtype=np.uint8)
    w.add_tensor(name, data, raw_dtype=qtype)


def arch_metadata(w):
    w.add_string("general.name", "Fixture Llama")
    w.add_string("general.basename", "fixture")
    w.add_string("general.size_label", "1M")
    w.add_uint32("general.file_type", 15)
    w.add_uint32("general.quantization_version", 2)
    w.add_uint32(f"{ARCH}.context_length", 8192)
    w.add_uint32(f"{ARCH}.embedding_length", 256)
    w.add_uint32(f"{ARCH}.block_count", N_LAYER)
    w.add_uint32(f"{ARCH}.feed_forward_length", 512)
    w.add_uint32(f"{ARCH}.attention.head_count", 8)
    w.add_array(f"{ARCH}.attention.head_count_kv", [2, 2, 4, 4])
    w.add_uint32(f"{ARCH}.attention.key_length", 32)
    w.add_uint32(f"{ARCH}.attention.value_length", 32)
    w.add_uint32(f"{ARCH}.rope.dimension_count", 32)
    w.add_uint32(f"{ARCH}.attention.sliding_window", 1024)
    w.add_array(f"{ARCH}.attention.sliding_window_pattern", [True, True, True, False])
    w.add_float32(f"{ARCH}.rope.freq_base", 500000.0)


def every_type_metadata(w):
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_float32("test.f32", 0.5)
    w.add_bool("test.bool", True)
    w.add_string("test.string", "héllo wörld")
    w.add_uint64("test.u64", 2**63 + 5)
    w.add_int64("test.i64", -(2**62))
    w.add_float64("test.f64", 1e-300)
    w.add_array("test.array_u32", [1, 2, 3])
    w.add_key_value("test.array_u8", [7, 8], V.ARRAY, sub_type=V.UINT8)
    w.add_key_value("test.array_i16", [-1, 1], V.ARRAY, sub_type=V.INT16)
    w.add_array("test.array_f32", [0.25, 0.5])
    w.add_array("test.array_str", ["a", "bc", ""])
    w.add_array("test.nested", [[1, 2], [3]])
    w.add_array("test.nested_str", [["x", "y"], ["z"]])
    w.add_array("test.nested3", [[[1], [2, 3]], [[4]]])
    # a vocabulary long enough to be skipped by default (> 1024 entries), with scores and types
    tokens = [f"tok{i}" for i in range(1999)] + ["\u00e9\u00e9"]
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_token_list(tokens)
    w.add_token_scores([float(i) for i in range(len(tokens))])
    w.add_token_types([1] * len(tokens))


def mixed_tensors(w):
    raw_tensor(w, "token_embd.weight", Q.Q4_K, [256, 2000])
    raw_tensor(w, "output_norm.weight", Q.F32, [256])
    raw_tensor(w, "output.weight", Q.Q6_K, [256, 2000])
    for il in range(N_LAYER):
        raw_tensor(w, f"blk.{il}.attn_norm.weight", Q.F32, [256])
        raw_tensor(w, f"blk.{il}.attn_q.weight", Q.Q8_0, [256, 256])
        raw_tensor(w, f"blk.{il}.attn_k.weight", Q.IQ4_XS, [256, 64])
        raw_tensor(w, f"blk.{il}.attn_v.weight", Q.BF16, [256, 64])
        raw_tensor(w, f"blk.{il}.attn_output.weight", Q.F16, [256, 256])
        # MXFP4 arrived in gguf-py 0.18 (gpt-oss); older releases get Q4_0 here
        mxfp4 = getattr(Q, "MXFP4", Q.Q4_0)
        raw_tensor(w, f"blk.{il}.ffn_gate_exps.weight", mxfp4, [256, 96, 4])
        raw_tensor(w, f"blk.{il}.ffn_down_exps.weight", Q.Q4_0, [96, 256, 4])
    raw_tensor(w, "rope_freqs.weight", Q.F32, [16])
    raw_tensor(w, "test.i32", Q.I32, [3, 5])
    raw_tensor(w, "test.4d", Q.F16, [2, 3, 4, 5])
    raw_tensor(w, "test.q5_k", Q.Q5_K, [512, 3])
    raw_tensor(w, "test.iq2_xxs", Q.IQ2_XXS, [256, 2])
    raw_tensor(w, "test.tq1_0", Q.TQ1_0, [256, 1])


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def describe(path):
    """What GGUFReader reads back from `path`."""
    r = gguf.GGUFReader(path)
    tensors = [
        {
            "name": t.name,
            "type": int(t.tensor_type),
            "dims": [int(d) for d in t.shape],
            "n_bytes": int(t.n_bytes),
            "data_offset": int(t.data_offset),
        }
        for t in r.tensors
    ]
    return {
        "path": path,
        "size": os.path.getsize(path),
        "data_offset": int(r.data_offset),
        "alignment": int(r.alignment),
        "kv_count": len(r.fields) - 3,  # GGUFReader lists magic/version/counts as fields too
        "tensors": tensors,
    }


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    from importlib.metadata import version
    manifest = {"gguf_version": version("gguf"), "files": {}}

    path = os.path.join(out, "mixed.gguf")
    w = gguf.GGUFWriter(path, ARCH)
    arch_metadata(w)
    every_type_metadata(w)
    mixed_tensors(w)
    finish(w)
    manifest["files"]["mixed"] = describe(path)

    path = os.path.join(out, "aligned64.gguf")
    w = gguf.GGUFWriter(path, ARCH)
    w.add_custom_alignment(64)
    arch_metadata(w)
    raw_tensor(w, "a", Q.F32, [3])
    raw_tensor(w, "b", Q.Q8_0, [32, 3])
    raw_tensor(w, "c", Q.F16, [5, 1])
    raw_tensor(w, "d", Q.Q4_K, [256, 1])
    finish(w)
    manifest["files"]["aligned64"] = describe(path)

    path = os.path.join(out, "bigendian.gguf")
    w = gguf.GGUFWriter(path, ARCH, endianess=gguf.GGUFEndian.BIG)
    arch_metadata(w)
    w.add_array("test.nested", [[1, 2], [3]])
    w.add_token_list([f"t{i}" for i in range(1500)])
    raw_tensor(w, "token_embd.weight", Q.Q4_K, [256, 10])
    raw_tensor(w, "output_norm.weight", Q.F32, [256])
    finish(w)
    manifest["files"]["bigendian"] = describe(path)

    base = os.path.join(out, "split")
    w = gguf.GGUFWriter(base + ".gguf", ARCH, split_max_tensors=2)
    arch_metadata(w)
    raw_tensor(w, "token_embd.weight", Q.Q4_K, [256, 100])
    for il in range(2):
        raw_tensor(w, f"blk.{il}.attn_q.weight", Q.Q8_0, [256, 256])
        raw_tensor(w, f"blk.{il}.ffn_up.weight", Q.Q6_K, [256, 512])
    finish(w)
    shards = sorted(f for f in os.listdir(out) if f.startswith("split-"))
    manifest["files"]["split"] = [describe(os.path.join(out, f)) for f in shards]

    json.dump(manifest, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
