#!/usr/bin/env python3
"""Write the safetensors test fixtures of crates/vramfit-model/tests/safetensors_fixtures/.

Plain dtypes are written by the `safetensors` package itself (`safetensors.numpy.save_file`);
dtypes numpy lacks (BF16, F8_E4M3) are written with a header built here, with the layout the
format specifies: u64 little-endian header length, JSON header padded with spaces to a multiple
of 8, then the tensors' bytes back to back.

    pip install safetensors numpy
    python3 scripts/make_safetensors_fixtures.py
"""

import json
import os
import struct

import numpy as np
from safetensors.numpy import save_file

ROOT = os.path.join(os.path.dirname(__file__), "..", "crates", "vramfit-model", "tests", "safetensors_fixtures")
RNG = np.random.default_rng(7)


def out(*parts):
    path = os.path.join(ROOT, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def rand(shape, dtype):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -1000), min(info.max, 1000), size=shape, dtype=dtype)
    return RNG.standard_normal(shape).astype(dtype)


ELEM_BITS = {"BF16": 16, "F16": 16, "F32": 32, "F8_E4M3": 8, "U8": 8, "I32": 32, "I64": 64, "F4": 4}


def write_raw(path, tensors, metadata=None, corrupt=None):
    """tensors: list of (name, dtype, shape); bytes are pseudo-random. corrupt(header) may edit."""
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in tensors:
        n = int(np.prod(shape)) if shape else 1
        size = (n * ELEM_BITS[dtype] + 7) // 8
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        blobs.append(RNG.integers(0, 256, size=size, dtype=np.uint8).tobytes())
        offset += size
    if corrupt:
        corrupt(header)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def layer(prefix, i, f):
    p = f"{prefix}.layers.{i}"
    return {
        f"{p}.input_layernorm.weight": rand((64,), f),
        f"{p}.self_attn.q_proj.weight": rand((64, 64), f),
        f"{p}.self_attn.k_proj.weight": rand((16, 64), f),
        f"{p}.self_attn.v_proj.weight": rand((16, 64), f),
        f"{p}.self_attn.o_proj.weight": rand((64, 64), f),
        f"{p}.post_attention_layernorm.weight": rand((64,), f),
        f"{p}.mlp.gate_proj.weight": rand((128, 64), f),
        f"{p}.mlp.up_proj.weight": rand((128, 64), f),
        f"{p}.mlp.down_proj.weight": rand((64, 128), f),
    }


def single():
    t = {"model.embed_tokens.weight": rand((256, 64), np.float16), "model.norm.weight": rand((64,), np.float32)}
    t.update(layer("model", 0, np.float16))
    t["lm_head.weight"] = rand((256, 64), np.float16)
    t["model.rotary.inv_freq"] = rand((32,), np.float64)
    t["model.position_ids"] = np.arange(16, dtype=np.int64)
    t["model.flags"] = np.zeros((3,), dtype=np.bool_)
    save_file(t, out("single", "model.safetensors"), metadata={"format": "pt", "producer": "vramfit fixtures"})


def sharded():
    shards = [
        {"model.embed_tokens.weight": rand((256, 64), np.float32), **layer("model", 0, np.float32)},
        {**layer("model", 1, np.float32), "model.norm.weight": rand((64,), np.float32)},
        {"lm_head.weight": rand((256, 64), np.float32)},
    ]
    weight_map, total = {}, 0
    for i, tensors in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(tensors, out("sharded", name), metadata={"format": "pt"})
        for k, v in tensors.items():
            weight_map[k] = name
            total += v.nbytes
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(out("sharded", "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)


def awq_and_gptq():
    # AWQ: qweight [in, out/8], qzeros [in/group, out/8], scales [in/group, out]; group 32
    awq = {"model.embed_tokens.weight": rand((256, 64), np.float16), "model.norm.weight": rand((64,), np.float16)}
    for proj, (o, i) in {"q_proj": (64, 64), "down_proj": (64, 128)}.items():
        p = f"model.layers.0.{'self_attn' if proj == 'q_proj' else 'mlp'}.{proj}"
        awq[f"{p}.qweight"] = rand((i, o // 8), np.int32)
        awq[f"{p}.qzeros"] = rand((i // 32, o // 8), np.int32)
        awq[f"{p}.scales"] = rand((i // 32, o), np.float16)
    awq["lm_head.weight"] = rand((256, 64), np.float16)
    save_file(awq, out("awq", "model.safetensors"))
    # GPTQ: qweight [in/8, out], qzeros [in/group, out/8], scales [in/group, out], g_idx [in]
    gptq = {"model.embed_tokens.weight": rand((256, 64), np.float16)}
    for proj, (o, i) in {"q_proj": (64, 64), "down_proj": (64, 128)}.items():
        p = f"model.layers.0.{'self_attn' if proj == 'q_proj' else 'mlp'}.{proj}"
        gptq[f"{p}.qweight"] = rand((i // 8, o), np.int32)
        gptq[f"{p}.qzeros"] = rand((i // 32, o // 8), np.int32)
        gptq[f"{p}.scales"] = rand((i // 32, o), np.float16)
        gptq[f"{p}.g_idx"] = (np.arange(i, dtype=np.int32) // 32)
    save_file(gptq, out("gptq", "model.safetensors"))


def fp8():
    # DeepSeek-V3 / finegrained FP8: F8_E4M3 weights, F32 block scales (128x128 -> here 1 block)
    write_raw(
        out("fp8", "model.safetensors"),
        [
            ("model.embed_tokens.weight", "BF16", (256, 64)),
            ("model.layers.0.self_attn.q_proj.weight", "F8_E4M3", (64, 64)),
            ("model.layers.0.self_attn.q_proj.weight_scale_inv", "F32", (1, 1)),
            ("model.layers.0.mlp.down_proj.weight", "F8_E4M3", (64, 128)),
            ("model.layers.0.mlp.down_proj.weight_scale_inv", "F32", (1, 1)),
            ("model.layers.0.input_layernorm.weight", "BF16", (64,)),
            ("lm_head.weight", "BF16", (256, 64)),
        ],
        metadata={"format": "pt"},
    )


def nvfp4():
    # compressed-tensors nvfp4-pack-quantized: U8 two e2m1 per byte, F8_E4M3 scale per 16 values
    tensors = [("model.embed_tokens.weight", "BF16", (256, 64))]
    for proj, (o, i) in {"q_proj": (64, 64), "down_proj": (64, 128)}.items():
        p = f"model.layers.0.{'self_attn' if proj == 'q_proj' else 'mlp'}.{proj}"
        tensors += [
            (f"{p}.weight_packed", "U8", (o, i // 2)),
            (f"{p}.weight_scale", "F8_E4M3", (o, i // 16)),
            (f"{p}.weight_global_scale", "F32", (1,)),
            (f"{p}.input_global_scale", "F32", (1,)),
        ]
    tensors.append(("model.norm.weight", "BF16", (64,)))
    write_raw(out("nvfp4", "model.safetensors"), tensors)


def mxfp4():
    # gpt-oss: *_blocks U8 [E, out, in/32, 16], *_scales U8 [E, out, in/32]; 2 experts
    e, hidden, inter = 2, 64, 64
    t = {
        "model.layers.0.mlp.experts.gate_up_proj_blocks": rand((e, 2 * inter, hidden // 32, 16), np.uint8),
        "model.layers.0.mlp.experts.gate_up_proj_scales": rand((e, 2 * inter, hidden // 32), np.uint8),
        "model.layers.0.mlp.experts.gate_up_proj_bias": rand((e, 2 * inter), np.float32),
        "model.layers.0.mlp.experts.down_proj_blocks": rand((e, hidden, inter // 32, 16), np.uint8),
        "model.layers.0.mlp.experts.down_proj_scales": rand((e, hidden, inter // 32), np.uint8),
        "model.layers.0.mlp.experts.down_proj_bias": rand((e, hidden), np.float32),
        "model.layers.0.mlp.router.weight": rand((e, hidden), np.float32),
        "model.embed_tokens.weight": rand((256, hidden), np.float32),
    }
    save_file(t, out("mxfp4", "model.safetensors"))


def bnb4():
    # bitsandbytes nf4: U8 [n/2, 1] codes; state tensors under the weight's name
    n = 64 * 128
    state = json.dumps({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [128, 64]}).encode()
    t = {
        "model.layers.0.mlp.up_proj.weight": rand((n // 2, 1), np.uint8),
        "model.layers.0.mlp.up_proj.weight.absmax": rand((n // 64,), np.uint8),
        "model.layers.0.mlp.up_proj.weight.quant_map": rand((16,), np.float32),
        "model.layers.0.mlp.up_proj.weight.nested_absmax": rand((1,), np.float32),
        "model.layers.0.mlp.up_proj.weight.nested_quant_map": rand((256,), np.float32),
        "model.layers.0.mlp.up_proj.weight.quant_state.bitsandbytes__nf4": np.frombuffer(state, dtype=np.uint8),
        "model.layers.0.post_attention_layernorm.weight": rand((64,), np.float16),
    }
    save_file(t, out("bnb4", "model.safetensors"))


def broken():
    # bytes disagree with shape x dtype, and a gap between tensors
    def corrupt(h):
        h["b"]["shape"] = [3]
    write_raw(out("broken", "mismatch.safetensors"), [("a", "F32", (4,)), ("b", "F16", (4,))], corrupt=corrupt)
    # truncated: the header promises more data than the file holds
    path = out("broken", "truncated.safetensors")
    write_raw(path, [("a", "F32", (64,)), ("b", "F32", (64,))])
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 100)


if __name__ == "__main__":
    single()
    sharded()
    awq_and_gptq()
    fp8()
    nvfp4()
    mxfp4()
    bnb4()
    broken()
    print("fixtures written under", os.path.normpath(ROOT))
