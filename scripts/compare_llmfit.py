#!/usr/bin/env python3
"""compare_llmfit: vramfit and llmfit side by side on the dev cases, per memory component.

Usage, from the project root (a release build and an llmfit binary at hand):

    scripts/compare_llmfit.py target/release/vramfit [--llmfit PATH] [--cases FILE] [--markdown]

llmfit is the PyPI package `llmfit` (a wheel carrying one Rust binary, `llmfit`; version printed in
the output). For each case of ../shared/data/dev/cases_check.dev.jsonl:

  vramfit  runs exactly as ../shared/bin/eval-check runs it (that script is imported: same fresh
           offline HF cache holding the case's config.json, same command, same comparison code).
  llmfit   runs `llmfit plan HF_ID --context N --quant Q --json` with N the command's context
           (-c for llama.cpp, --max-model-len for vLLM, else the config's max_position_embeddings)
           and Q the GGUF quant of `-hf ORG/NAME-GGUF:Q` (vLLM cases: BF16 for unquantized
           checkpoints). Its answer is read as components:
             weights  = disk_size_gb x 1e9   (params x bytes-per-param; GB = 1e9 in its formula)
             KV       = kv_alternatives[kv_quant].kv_cache_gb x 2^30   (its KV formula divides by 2^30)
             compute  = memory_required_gb - disk_size_gb - kv_cache_gb (its flat runtime overhead,
                        the only non-weight, non-KV term it has) x 1e9
           llmfit has no per-device split: a measured per-device weight (vLLM TP) is compared with
           its total / tensor-parallel size, llama.cpp GPU weights (all devices summed) with its
           total. It has no KV-pool model for vLLM (available KV, tokens, concurrency): not compared.
  A case is skipped for llmfit when llmfit does not know the model or the quant; it is counted.

Errors are (predicted - measured) / measured. The tables print, per component, the cases both
tools answered: count, median |error|, p90, and how many fall within eval-check's tolerance.
"""

import argparse
import importlib.machinery
import importlib.util
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared"
EVAL = SHARED / "bin" / "eval-check"


def load_eval():
    loader = importlib.machinery.SourceFileLoader("eval_check", str(EVAL))
    spec = importlib.util.spec_from_loader("eval_check", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def flag(argv, *names):
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


def llmfit_inputs(case):
    """-> (context, quant, kv_quant, tp) or a reason to skip."""
    argv = case["argv"]
    cfg = case["config"]
    if case["engine"] == "llama.cpp":
        hf = flag(argv, "-hf", "--hf-repo") or ""
        quant = hf.split(":", 1)[1] if ":" in hf else "Q4_K_M"
        ctx = flag(argv, "-c", "--ctx-size")
        ctk = (flag(argv, "-ctk", "--cache-type-k") or "f16").lower()
        kvq = {"f16": "fp16", "q8_0": "q8_0", "q4_0": "q4_0"}.get(ctk)
        tp = 1
    else:
        q = (cfg.get("quantization_config") or {}).get("quant_method")
        if q:
            return f"{q} checkpoint (llmfit has no such quant)"
        quant = "BF16"
        ctx = flag(argv, "--max-model-len")
        kvq = "fp16"
        tp = int(flag(argv, "-tp", "--tensor-parallel-size") or 1)
    if kvq is None:
        return f"KV type {ctk}"
    ctx = int(str(ctx).lower().replace("k", "000")) if ctx else int(cfg.get("max_position_embeddings", 4096))
    if ctx <= 0:
        ctx = int(cfg.get("max_position_embeddings", 4096))
    return ctx, quant, kvq, tp


def run_llmfit(binary, case):
    inp = llmfit_inputs(case)
    if isinstance(inp, str):
        return None, inp
    ctx, quant, kvq, tp = inp
    cmd = [binary, "plan", case["hf_id"], "--context", str(ctx), "--quant", quant, "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        said = [l for l in r.stderr.splitlines() if "GLIBC" not in l]
        return None, (said[-1] if said else f"exit {r.returncode}")[:120]
    d = json.loads(r.stdout)
    alt = next((a for a in d.get("kv_alternatives", []) if a.get("kv_quant") == kvq), None)
    if alt is None:
        return None, f"no {kvq} KV estimate"
    weights = d["disk_size_gb"] * 1e9
    kv = alt["kv_cache_gb"] * 2**30
    overhead = (alt["memory_required_gb"] - d["disk_size_gb"] - alt["kv_cache_gb"]) * 1e9
    return {"weights": weights, "kv": kv, "compute": overhead, "tp": tp, "model": d.get("model_name")}, None


# component name per expect key; how llmfit answers it
COMPONENTS = {
    "kv_total_bytes": "llama.cpp KV",
    "gpu_model_bytes": "llama.cpp GPU weights",
    "gpu_compute_bytes": "llama.cpp compute",
    "weights_bytes": "vLLM weights / GPU",
    "available_kv_bytes": "vLLM KV pool",
    "kv_tokens": "vLLM KV tokens",
    "max_concurrency": "vLLM concurrency",
}


def llmfit_value(key, item, lf, case):
    if key == "kv_total_bytes":
        return lf["kv"]
    if key == "gpu_model_bytes":
        # all of the model when every layer is on the GPU; llmfit has no placement
        return lf["weights"] / max(1, len(case["expect"]["gpu_model_bytes"]))
    if key == "gpu_compute_bytes":
        return lf["compute"] / max(1, len(case["expect"]["gpu_compute_bytes"]))
    if key == "weights_bytes":
        return lf["weights"] / lf["tp"]
    return None


def stats(errs):
    a = sorted(abs(e) for e in errs)
    if not a:
        return "-", "-"
    return f"{statistics.median(a):.1f}", f"{a[min(len(a) - 1, int(round(0.9 * (len(a) - 1))))]:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--llmfit", default="llmfit")
    ap.add_argument("--cases", default=str(SHARED / "data" / "dev" / "cases_check.dev.jsonl"))
    ap.add_argument("--markdown", action="store_true", help="print markdown tables")
    args = ap.parse_args()
    ev = load_eval()
    cases = [json.loads(l) for l in open(args.cases) if l.strip()]
    rows = {}  # component -> list of (case id, vramfit err, vramfit ok, llmfit err or None, llmfit ok)
    skipped = []
    for case in cases:
        res, err, _ = ev.run_case(args.binary, case, 30)
        lf, why = run_llmfit(args.llmfit, case)
        if lf is None:
            skipped.append((case["id"], why))
        for key, item in ev.expectations(case):
            if key not in COMPONENTS:
                continue
            cls = item.get("class")
            measured = item["value"]
            v_err = v_ok = None
            if res is not None:
                pred, prob = ev.predicted(res["json"], key, item)
                if pred is not None:
                    v_ok, v_err = ev.judge(cls, measured, pred)
            l_err = l_ok = None
            if lf is not None:
                lv = llmfit_value(key, item, lf, case)
                if lv is not None:
                    l_ok, l_err = ev.judge(cls, measured, lv)
            rows.setdefault(COMPONENTS[key], []).append((case["id"], v_err, v_ok, l_err, l_ok))
    ver = subprocess.run([args.llmfit, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"llmfit: {ver or args.llmfit}; cases: {args.cases}")
    head = "| component | n (both) | vramfit median abs err % | vramfit p90 | vramfit in tol | llmfit median abs err % | llmfit p90 | llmfit in tol | vramfit alone: n, median % |"
    print(head)
    print("|" + "---|" * 9)
    all_v, all_l = [], []
    for comp, rs in rows.items():
        both = [r for r in rs if r[1] is not None and r[3] is not None]
        alone = [r for r in rs if r[1] is not None]
        ve = [r[1] for r in both]
        le = [r[3] for r in both]
        all_v += ve
        all_l += le
        vm, vp = stats(ve)
        lm, lp = stats(le)
        am, _ = stats([r[1] for r in alone])
        print(f"| {comp} | {len(both)} | {vm} | {vp} | {sum(1 for r in both if r[2])}/{len(both)} | {lm} | {lp} | "
              f"{sum(1 for r in both if r[4])}/{len(both)} | {len(alone)}, {am} |")
    vm, _ = stats(all_v)
    lm, _ = stats(all_l)
    print(f"\nall components both tools answered: n={len(all_v)}, median |error| vramfit {vm} %, llmfit {lm} %")
    print("\nper comparison (signed error %, vramfit / llmfit):")
    for comp, rs in rows.items():
        for cid, ve, _, le, _ in rs:
            f = lambda e: "-" if e is None else f"{e:+.1f}"
            print(f"  {comp:24s} {cid[:60]:60s} {f(ve):>8s} / {f(le):>8s}")
    print("\nllmfit skipped:")
    for cid, why in skipped:
        print(f"  {cid}: {why}")


if __name__ == "__main__":
    sys.exit(main())
