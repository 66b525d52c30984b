"""Build crates/vramfit-model/catalog/gpus.json from the team's GPU facts plus corrections/additions.

    python3 scripts/catalog/build_gpus.py

memory_bytes is what engines see as the device total, chosen in this order:
1. a total printed by an engine on a real device (vLLM `total_gpu_memory`, PyTorch `total
   capacity`, llama.cpp memory breakdown), cited in `memory_source`;
2. nvidia-smi `memory.total` seen in real output (the team's collected copies);
3. an estimate from the marketing size (memory_estimated = true), by the rule of its class:
   - NVIDIA GDDR, ECC off by default (GeForce, RTX workstation): GiB x 1024 - 12 MiB
     (seen: RTX 4090 / A5000 24564, A6000 / RTX 6000 Ada 49140 MiB);
   - NVIDIA GDDR, ECC on by default (datacenter T4/A10/A16/A40/L4/L20/L40): GiB x 1024 x 15/16
     - 12 MiB (seen: A10 23028, A40 / L40S 46068 MiB; ECC takes 1/16);
   - NVIDIA HBM: GiB x 1024 x 0.9955 (seen: H100 81559, H100 NVL 95830, H200 143771 MiB);
   - AMD, Apple and other unified memory: the full size in GiB.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpus_src import ADDED, DEV, FIX  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
TEAM = os.path.join(ROOT, "..", "shared", "data", "catalog", "gpu_catalog.jsonl")
OUT = os.path.join(ROOT, "crates", "vramfit-model", "catalog", "gpus.json")
MIB = 1 << 20
GIB = 1 << 30


def team_sources(t):
    out = []
    for s in t.get("sources", []):
        if s.get("repo"):
            ref = f"github:{s['repo']}/{s.get('path', '')}"
        elif s.get("url"):
            ref = s["url"]
        else:
            ref = "public-code copies"
        note = s.get("note") or ""
        out.append(f"{ref} ({note})" if note else ref)
    return out


def estimate(vendor, klass, gb):
    """Returns (MiB, rule) for the class rules in the module docstring."""
    if vendor != "NVIDIA" or klass == "unified":
        return gb * 1024, "estimated: full marketing size in GiB"
    if klass == "gddr":
        return gb * 1024 - 12, "estimated: GDDR, ECC off: GiB x 1024 - 12 MiB"
    if klass == "gddr_ecc":
        return gb * 1024 * 15 // 16 - 12, "estimated: GDDR, ECC on: GiB x 1024 x 15/16 - 12 MiB"
    if klass == "hbm":
        return round(gb * 1024 * 0.9955), "estimated: HBM: GiB x 1024 x 0.9955"
    raise ValueError(klass)


def from_team(t):
    cc = t.get("compute_capability")
    cc = f"{cc:.1f}" if isinstance(cc, float) else t.get("amd_gfx_target")
    return {
        "id": t["id"], "name": t["name"], "aliases": [], "vendor": t["vendor"],
        "memory_marketing_gb": t["memory_gb_marketing"],
        "bandwidth_gbps": t["memory_bandwidth_gbps"], "compute_capability": cc,
        "unified_memory": t["vendor"] == "Apple", "bf16": t["bf16_support"],
        "fp8": t["fp8_support"], "fp4": t["fp4_support"],
        "nvidia_smi_total_mib": t.get("nvidia_smi_total_mib"),
        "sources": team_sources(t), "notes": t.get("notes") or "",
    }


def klass_of(g):
    seg = g.pop("_class", None)
    if seg:
        return seg
    if g["vendor"] == "Apple" or g["unified_memory"]:
        return "unified"
    name = g["name"]
    if any(x in name for x in ("GeForce", "RTX")):
        return "gddr"
    return "gddr_ecc"


def finish(g):
    klass = klass_of(g)
    dev = DEV.get(g["id"])
    smi = g.get("nvidia_smi_total_mib")
    est = g.pop("_mem_est", None)
    measured = g.pop("_mem_measured", False)
    if est:
        value, unit, src = est
        g["memory_bytes"] = round(value * (GIB if unit == "GiB" else MIB) / MIB) * MIB
        g["memory_estimated"] = not measured
        g["memory_source"] = src
    elif dev:
        value, unit, src = dev
        g["memory_bytes"] = round(value * (GIB if unit == "GiB" else MIB) / MIB) * MIB
        g["memory_estimated"] = False
        g["memory_source"] = src
    elif smi:
        g["memory_bytes"] = smi * MIB
        g["memory_estimated"] = False
        g["memory_source"] = f"nvidia-smi memory.total {smi} MiB (real output, see sources)"
    else:
        mib, rule = estimate(g["vendor"], klass, g["memory_marketing_gb"])
        g["memory_bytes"] = int(mib) * MIB
        g["memory_estimated"] = True
        g["memory_source"] = rule
    if g.get("nvidia_smi_total_mib") is None:
        g.pop("nvidia_smi_total_mib", None)
    order = ["id", "name", "aliases", "vendor", "memory_bytes", "memory_estimated", "memory_source",
             "nvidia_smi_total_mib", "memory_marketing_gb", "bandwidth_gbps", "compute_capability",
             "unified_memory", "bf16", "fp8", "fp4", "sources", "notes"]
    return {k: g[k] for k in order if k in g}


def main():
    team = [json.loads(line) for line in open(TEAM)]
    out = []
    for t in team:
        g = from_team(t)
        fix = FIX.get(t["id"], {})
        if fix.get("drop"):
            continue
        for k, v in fix.items():
            if k == "sources_add":
                g["sources"] += v
            else:
                g[k] = v
        out.append(g)
    for a in ADDED:
        after = a.pop("_after", None)
        g = {"aliases": [], "unified_memory": False, "sources": [], "notes": "", **a}
        idx = 0 if after is None else next(i for i, x in enumerate(out) if x["id"] == after) + 1
        out.insert(idx, g)
    # The driver prints one name for both RTX 4060 Ti cards; the 16 GB one (the LLM buy) goes first.
    i8 = next(i for i, g in enumerate(out) if g["id"] == "rtx-4060-ti-8gb")
    out.insert(i8, out.pop(next(i for i, g in enumerate(out) if g["id"] == "rtx-4060-ti-16gb")))
    out = [finish(g) for g in out]
    ids = [g["id"] for g in out]
    assert len(set(ids)) == len(ids), "duplicate ids"
    with open(OUT, "w") as f:
        f.write("[\n")
        for i, g in enumerate(out):
            f.write(json.dumps(g, ensure_ascii=False))
            f.write(",\n" if i + 1 < len(out) else "\n")
        f.write("]\n")
    print(f"wrote {len(out)} GPUs to {OUT}")


if __name__ == "__main__":
    main()
