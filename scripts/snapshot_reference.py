#!/usr/bin/env python3
"""Reference analysis of a PyTorch memory snapshot, standard library only.

Usage: python3 scripts/snapshot_reference.py SNAPSHOT.pickle   (prints JSON)

It computes, with the definitions of crates/vramfit-doctor/src/snapshot/analysis.rs, the totals
that `vramfit snapshot --json` reports, so a test can compare the two on real files:

  reserved   = sum of segment total_size
  allocated  = sum of size of 'active_allocated' blocks; requested = sum of their requested size
  active     = sum of size of blocks that are not 'inactive'
  inactive   = sum of size of 'inactive' blocks; largest free block = the largest of them
  rounding waste = sum of max(0, size - requested) over allocated blocks

Requested size of a block: 'requested_size', else history[0]['real_size'] (torch 2.0 blocks,
as torch/cuda/_memory_viz.py _block_extra_legacy reads them), else 'size'.
The file is unpickled with a restricted Unpickler: no class is ever imported.
"""

import collections
import json
import pickle
import sys


class _Opaque:
    """Stands in for any class a snapshot might name; keeps what the pickle gives it."""

    def __init__(self, *args, **kwargs):
        self.args = args

    def __setstate__(self, state):
        self.state = state


def _first(obj, *_rest):
    return obj


# torch.jit._pickle helpers wrap a container and return it (torch/csrc/jit/serialization/pickler.cpp);
# OrderedDict receives its items through SETITEMS.
_WRAPPERS = {
    ("torch.jit._pickle", "restore_type_tag"): _first,
    ("torch.jit._pickle", "build_intlist"): _first,
    ("torch.jit._pickle", "build_doublelist"): _first,
    ("torch.jit._pickle", "build_boollist"): _first,
    ("torch.jit._pickle", "build_tensorlist"): _first,
    ("collections", "OrderedDict"): collections.OrderedDict,
}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        return _WRAPPERS.get((module, name), _Opaque)


def load(path):
    with open(path, "rb") as f:
        return _SafeUnpickler(f).load()


def _requested(block):
    if "requested_size" in block:
        return block["requested_size"]
    history = block.get("history") or []
    if history and "real_size" in history[0]:
        return history[0]["real_size"]
    return block["size"]


def _frames(block):
    if "frames" in block:
        return block["frames"]
    history = block.get("history") or []
    if history:
        return history[0].get("frames")
    return None


# Frames of the traceback recorder and the allocator itself: they name no caller.
MACHINERY = ("unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "CachingAllocator")


def site_label(frames):
    """First Python frame outside torch's package, else first Python frame, else first named
    C++ frame that is not in MACHINERY."""
    if frames is None:
        return None
    parts = [(f.get("filename", ""), f.get("line", 0), f.get("name", "")) for f in frames]
    is_py = lambda fn: fn.lower().endswith(".py")
    in_torch = lambda fn: "/torch/" in fn or "\\torch\\" in fn
    machinery = lambda name: any(m in name for m in MACHINERY)
    for pick in (
        lambda p: is_py(p[0]) and not in_torch(p[0]),
        lambda p: is_py(p[0]),
        lambda p: p[2] != "" and not machinery(p[2]),
    ):
        for p in parts:
            if pick(p):
                return "%s:%d (%s)" % p
    return None


def _empty_totals():
    return dict(
        reserved_bytes=0,
        allocated_bytes=0,
        active_bytes=0,
        requested_bytes=0,
        inactive_bytes=0,
        pending_free_bytes=0,
        rounding_waste_bytes=0,
        segments=0,
        blocks=0,
        largest_free_block_bytes=0,
    )


def _add_segment(t, seg):
    t["segments"] += 1
    t["reserved_bytes"] += seg["total_size"]
    for b in seg["blocks"]:
        t["blocks"] += 1
        state, size = b["state"], b["size"]
        if state == "inactive":
            t["inactive_bytes"] += size
            t["largest_free_block_bytes"] = max(t["largest_free_block_bytes"], size)
        elif state == "active_allocated":
            req = _requested(b)
            t["allocated_bytes"] += size
            t["active_bytes"] += size
            t["requested_bytes"] += req
            t["rounding_waste_bytes"] += max(0, size - req)
        elif state in ("active_pending_free", "active_awaiting_free"):
            t["pending_free_bytes"] += size
            t["active_bytes"] += size
        else:
            t["active_bytes"] += size


def _stream(value):
    return (value or 0) & 0xFFFFFFFFFFFFFFFF


def _peaks(segments, device, trace):
    """Replays the trace, anchored at the snapshot's own end state (see timeline.rs)."""
    end_alloc = sum(
        b["size"] for s in segments if s.get("device", 0) == device for b in s["blocks"]
        if b["state"] == "active_allocated"
    )
    end_res = sum(s["total_size"] for s in segments if s.get("device", 0) == device)
    a = r = 0
    running = []
    for e in trace:
        act, size = e["action"], e.get("size", 0)
        if act == "alloc":
            a += size
        elif act == "free_requested":
            a -= size
        elif act in ("segment_alloc", "segment_map"):
            r += size
        elif act in ("segment_free", "segment_unmap"):
            r -= size
        running.append((a, r))
    off_a, off_r = end_alloc - a, end_res - r
    return (
        max(max(0, x + off_a) for x, _ in running),
        max(max(0, y + off_r) for _, y in running),
    )


def analyze(data):
    if isinstance(data, list):
        fmt, segments, traces = "segment_list", data, []
    else:
        segments, traces = data["segments"], data.get("device_traces") or []
        legacy = any("history" in b and "frames" not in b for s in segments for b in s["blocks"])
        fmt = "legacy" if legacy else "current"
    totals = _empty_totals()
    devices = {}
    sites = collections.Counter()
    site_blocks = collections.Counter()
    for seg in segments:
        _add_segment(totals, seg)
        dev = devices.setdefault(seg.get("device", 0), (_empty_totals(), {}))
        _add_segment(dev[0], seg)
        _add_segment(dev[1].setdefault(_stream(seg.get("stream")), _empty_totals()), seg)
        for b in seg["blocks"]:
            if b["state"] == "active_allocated":
                label = site_label(_frames(b)) or "(no stack recorded)"
                sites[label] += b["size"]
                site_blocks[label] += 1
    for d, trace in enumerate(traces):
        if trace:
            devices.setdefault(d, (_empty_totals(), {}))
    device_reports = []
    for d in sorted(devices):
        t, streams = devices[d]
        trace = traces[d] if 0 <= d < len(traces) else []
        peaks = _peaks(segments, d, trace) if trace else (None, None)
        device_reports.append(
            dict(
                device=d,
                **t,
                streams=[dict(stream=k, **v) for k, v in sorted(streams.items())],
                trace_entries=len(trace),
                trace_peak_allocated_bytes=peaks[0],
                trace_peak_reserved_bytes=peaks[1],
            )
        )
    ooms = []
    for d, trace in enumerate(traces):
        for i, e in enumerate(trace):
            if e["action"] == "oom":
                ooms.append(
                    dict(
                        device=d,
                        trace_index=i,
                        requested_bytes=e["size"],
                        device_free_bytes=e["device_free"],
                        stream=_stream(e.get("stream")),
                        time_us=e.get("time_us"),
                    )
                )
    if ooms and all(o["time_us"] is not None for o in ooms):
        latest = max(enumerate(ooms), key=lambda io: (io[1]["time_us"], io[0]))[1]
    else:
        latest = ooms[-1] if ooms else None
    top = sorted(sites.items(), key=lambda kv: (-kv[1], kv[0]))[:15]
    return dict(
        format=fmt,
        **totals,
        oom=latest,
        oom_events=len(ooms),
        devices=device_reports,
        top_sites=[dict(site=k, bytes=v, blocks=site_blocks[k]) for k, v in top],
        trace_entries=sum(len(t) for t in traces),
    )


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: snapshot_reference.py SNAPSHOT.pickle")
    print(json.dumps(analyze(load(sys.argv[1])), indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
