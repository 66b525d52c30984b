#!/usr/bin/env python3
"""Writes a PyTorch memory snapshot that ends in an out-of-memory error, with the standard library.

Usage: python3 scripts/make_oom_snapshot.py OUT.pickle [--protocol N]
Prints a JSON summary of what it wrote (the OOM's numbers and the totals) on stdout.

No GPU was available to record a real one, so this script replays a small caching-allocator
scenario and writes exactly what `torch.cuda.memory._dump_snapshot()` would write for it:

  _dump_snapshot(path)  ==  pickle.dump(torch.cuda.memory._snapshot(), f)     (torch/cuda/memory.py)

with the dict layout built by THCPModule_memorySnapshot (torch/csrc/cuda/Module.cpp, torch 2.6):
segments (device, address, total_size, allocated_size, active_size, requested_size, stream,
segment_type, segment_pool_id, is_expandable, frames, blocks[address, size, requested_size, state,
frames]) and device_traces (action, addr, size, stream, time_us, frames, compile_context,
user_metadata); the 'oom' entry carries 'device_free' in place of 'addr'. Allocator rules
followed (c10/cuda/CUDACachingAllocator.cpp): requests round up to 512 bytes (kMinBlockSize);
a request over 1 MiB (kSmallSize) goes to the large pool, whose new segments are 20 MiB
(kLargeBuffer) below 10 MiB (kMinLargeAlloc) and otherwise the request rounded up to 2 MiB
(kRoundLarge); small requests get 2 MiB segments (kSmallBuffer); a cached block is split when the
remainder exceeds 1 MiB (large pool) or 512 bytes (small pool); when no cached block fits and
cudaMalloc fails, release_cached_blocks() frees every wholly free segment (segment_free entries)
and retries; if that fails too, an 'oom' entry (size = the rounded request, device_free from
cudaMemGetInfo) is recorded and OutOfMemoryError raised. The snapshot is taken in the except
handler, so it shows the state right after the OOM.

Scenario (device 0, a 24 GiB card, 600 MiB of non-PyTorch memory): 30 weight tensors of 400 MiB;
eight 1 GiB activations allocated, then freed; eight 600 MiB tensors reuse (and split) those eight
segments, leaving eight 424 MiB free fragments; a 512 MiB temporary (too big for a fragment, so
its own segment) allocated and freed; a 64 MiB
buffer freed while another stream still uses it (record_stream: active_pending_free); a few small
tensors in the small pool; then a 4 GiB request: no cached block fits, the 512 MiB segment is
released, cudaMalloc still fails -> OOM. Free bytes (device free + cached fragments) exceed the
request, but no single block does: fragmentation.
"""

import json
import pickle
import sys

MiB = 1 << 20
GiB = 1 << 30
K_MIN_BLOCK = 512
K_SMALL_SIZE = 1 * MiB
K_SMALL_BUFFER = 2 * MiB
K_LARGE_BUFFER = 20 * MiB
K_MIN_LARGE_ALLOC = 10 * MiB
K_ROUND_LARGE = 2 * MiB
DEVICE_TOTAL = 24 * GiB
NON_TORCH = 600 * MiB
SIDE_STREAM = 0x55D0C0FFEE00


def round_up(n, m):
    return (n + m - 1) // m * m


class Allocator:
    """Just enough of the caching allocator to produce a consistent state and trace."""

    def __init__(self):
        self.segments = []  # dicts: address, total_size, stream, segment_type, frames, blocks
        self.trace = []
        self.next_address = 0x7F3A00000000
        self.time_us = 1_760_000_000_000_000

    def record(self, action, addr, size, stream, frames, addr_key="addr"):
        self.time_us += 1_500
        self.trace.append(
            {
                "action": action,
                addr_key: addr,
                "size": size,
                "stream": stream,
                "time_us": self.time_us,
                "frames": frames,
                "compile_context": "N/A",
                "user_metadata": "",
            }
        )

    def reserved(self):
        return sum(s["total_size"] for s in self.segments)

    def device_free(self):
        return DEVICE_TOTAL - NON_TORCH - self.reserved()

    def malloc(self, requested, frames, stream=0):
        size = round_up(max(requested, 1), K_MIN_BLOCK)
        small = size <= K_SMALL_SIZE
        kind = "small" if small else "large"
        candidates = [
            (b["size"], s["address"], s, i)
            for s in self.segments
            if s["segment_type"] == kind and s["stream"] == stream
            for i, b in enumerate(s["blocks"])
            if b["state"] == "inactive" and b["size"] >= size
        ]
        if not candidates:
            if small:
                seg_size = K_SMALL_BUFFER
            elif size < K_MIN_LARGE_ALLOC:
                seg_size = K_LARGE_BUFFER
            else:
                seg_size = round_up(size, K_ROUND_LARGE)
            if seg_size > self.device_free():
                self.release_cached_blocks(frames)
            if seg_size > self.device_free():
                self.record("oom", self.device_free(), size, stream, frames, addr_key="device_free")
                raise MemoryError(size)
            seg = {
                "address": self.next_address,
                "total_size": seg_size,
                "stream": stream,
                "segment_type": kind,
                "frames": frames,
                "blocks": [self.block(self.next_address, seg_size, 0, "inactive", [])],
            }
            self.next_address = round_up(self.next_address + seg_size + 1, K_ROUND_LARGE)
            self.segments.append(seg)
            self.record("segment_alloc", seg["address"], seg_size, stream, frames)
            candidates = [(seg_size, seg["address"], seg, 0)]
        _, _, seg, i = min(candidates, key=lambda c: (c[0], c[1]))
        free = seg["blocks"][i]
        remaining = free["size"] - size
        split_over = K_MIN_BLOCK if small else K_SMALL_SIZE
        if remaining > split_over:
            rest = self.block(free["address"] + size, remaining, 0, "inactive", [])
            seg["blocks"].insert(i + 1, rest)
            free["size"] = size
        free.update(state="active_allocated", requested_size=requested, frames=frames)
        self.record("alloc", free["address"], free["size"], stream, frames)
        return free["address"]

    @staticmethod
    def block(address, size, requested, state, frames):
        return {"address": address, "size": size, "requested_size": requested, "state": state, "frames": frames}

    def find(self, address):
        for s in self.segments:
            for i, b in enumerate(s["blocks"]):
                if b["address"] == address:
                    return s, i
        raise KeyError(address)

    def free(self, address, frames, pending=False):
        seg, i = self.find(address)
        b = seg["blocks"][i]
        self.record("free_requested", address, b["size"], seg["stream"], frames)
        if pending:
            b["state"] = "active_pending_free"
            return
        self.record("free_completed", address, b["size"], seg["stream"], frames)
        b.update(state="inactive", requested_size=0, frames=[])
        # merge with free neighbours
        blocks = seg["blocks"]
        j = 0
        while j + 1 < len(blocks):
            if blocks[j]["state"] == "inactive" and blocks[j + 1]["state"] == "inactive":
                blocks[j]["size"] += blocks[j + 1]["size"]
                del blocks[j + 1]
            else:
                j += 1

    def release_cached_blocks(self, frames):
        for seg in list(self.segments):
            if all(b["state"] == "inactive" for b in seg["blocks"]):
                self.record("segment_free", seg["address"], seg["total_size"], seg["stream"], frames)
                self.segments.remove(seg)

    def snapshot(self):
        segments = []
        for s in sorted(self.segments, key=lambda s: s["address"]):
            allocated = [b for b in s["blocks"] if b["state"] == "active_allocated"]
            segments.append(
                {
                    "device": 0,
                    "address": s["address"],
                    "total_size": s["total_size"],
                    "allocated_size": sum(b["size"] for b in allocated),
                    "active_size": sum(b["size"] for b in s["blocks"] if b["state"] != "inactive"),
                    "requested_size": sum(b["requested_size"] for b in allocated),
                    "stream": s["stream"],
                    "segment_type": s["segment_type"],
                    "segment_pool_id": (0, 0),
                    "is_expandable": False,
                    "frames": s["frames"],
                    "blocks": s["blocks"],
                }
            )
        return {
            "segments": segments,
            "device_traces": [self.trace],
            "allocator_settings": {
                "PYTORCH_CUDA_ALLOC_CONF": "",
                "max_split_size": -1,
                "garbage_collection_threshold": 0.0,
                "expandable_segments": False,
                "pinned_num_register_threads": 1,
                "release_lock_on_cudamalloc": False,
                "pinned_use_cuda_host_register": False,
                "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)},
            },
            "external_annotations": [],
        }


def frames_for(line, name):
    # Shared frame objects, as torch dedups tracebacks: pickle writes them once and memo-refs them.
    torch_frame = {"filename": "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", "line": 1750, "name": "_call_impl"}
    return [torch_frame, {"filename": "/app/serve.py", "line": line, "name": name}]


def build():
    a = Allocator()
    weights_frames = frames_for(41, "load_weights")
    act_frames = frames_for(77, "prefill")
    kv_frames = frames_for(93, "grow_kv")
    for _ in range(30):
        a.malloc(400 * MiB, weights_frames)
    acts = [a.malloc(1 * GiB, act_frames) for _ in range(8)]
    for p in acts:
        a.free(p, act_frames)
    for _ in range(8):
        a.malloc(600 * MiB, kv_frames)
    tmp = a.malloc(512 * MiB, act_frames)
    a.free(tmp, act_frames)
    side = a.malloc(64 * MiB, act_frames, stream=SIDE_STREAM)
    a.free(side, act_frames, pending=True)
    small_frames = frames_for(120, "sample")
    for n in (4000, 70_000, 300_000):
        a.malloc(n, small_frames)
    request = 4 * GiB
    try:
        a.malloc(request, frames_for(131, "decode_step"))
        raise SystemExit("scenario error: the request did not fail")
    except MemoryError:
        pass
    return a, round_up(request, K_MIN_BLOCK)


def main():
    args = sys.argv[1:]
    protocol = pickle.DEFAULT_PROTOCOL
    if "--protocol" in args:
        k = args.index("--protocol")
        protocol = int(args[k + 1])
        del args[k : k + 2]
    if len(args) != 1:
        sys.exit("usage: make_oom_snapshot.py OUT.pickle [--protocol N]")
    alloc, requested = build()
    snap = alloc.snapshot()
    with open(args[0], "wb") as f:
        pickle.dump(snap, f, protocol=protocol)
    oom = [e for e in alloc.trace if e["action"] == "oom"][0]
    blocks = [b for s in snap["segments"] for b in s["blocks"]]
    summary = {
        "protocol": protocol,
        "oom_requested_bytes": oom["size"],
        "oom_device_free_bytes": oom["device_free"],
        "request_rounded_bytes": requested,
        "reserved_bytes": sum(s["total_size"] for s in snap["segments"]),
        "allocated_bytes": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
        "pending_free_bytes": sum(b["size"] for b in blocks if b["state"] == "active_pending_free"),
        "inactive_bytes": sum(b["size"] for b in blocks if b["state"] == "inactive"),
        "largest_free_block_bytes": max(b["size"] for b in blocks if b["state"] == "inactive"),
        "segments": len(snap["segments"]),
        "trace_entries": len(alloc.trace),
    }
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
