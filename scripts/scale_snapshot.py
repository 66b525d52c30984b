#!/usr/bin/env python3
"""Writes a large PyTorch memory snapshot by scaling up a real one, with the standard library.

Usage: python3 scripts/scale_snapshot.py REAL.pickle OUT.pickle --mb 600

The segments and the device traces of REAL are repeated until the file reaches about --mb
megabytes. Every repetition is a fresh copy (pickled and unpickled again), so the output shares
objects the way a long real recording does: within one copy frames are shared through the pickle
memo, across copies nothing is. The result is written with pickle protocol 4, as
torch.cuda.memory._dump_snapshot() does on Python 3.8-3.13. Other top-level keys are kept once.

Generating a 600 MB file needs about 4 GB of memory and a minute; write it outside the repository.
"""

import argparse
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_reference  # noqa: E402  (its restricted unpickler: no class is imported)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("real")
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, required=True, help="target size in megabytes (10^6 bytes)")
    a = ap.parse_args()
    snap = snapshot_reference.load(a.real)
    if not isinstance(snap, dict) or "segments" not in snap:
        sys.exit("%s: not a torch >= 2.1 snapshot dict" % a.real)
    one = pickle.dumps((snap["segments"], snap.get("device_traces") or []), 4)
    # a copy costs more than the real file: its memo keys pass 255 and take 4 bytes, not 1
    per_copy = len(pickle.dumps([pickle.loads(one), pickle.loads(one)], 4)) - len(one)
    reps = max(1, round(a.mb * 1e6 / per_copy))
    segments, traces = [], []
    for _ in range(reps):
        segs, trs = pickle.loads(one)  # a fresh copy: no object shared with other repetitions
        segments.extend(segs)
        for d, t in enumerate(trs):
            if d == len(traces):
                traces.append([])
            traces[d].extend(t)
    out = dict(snap)
    out["segments"] = segments
    out["device_traces"] = traces
    with open(a.out, "wb") as f:
        pickle.dump(out, f, protocol=4)
    print("%s: %d copies, %d bytes" % (a.out, reps, os.path.getsize(a.out)))


if __name__ == "__main__":
    main()
