#!/usr/bin/env bash
# Whole-process timings of `vramfit fit` and `vramfit table` (release build), offline.
# Budgets: fit < 100 ms median for a 70B on 2 GPUs (issue 10; < 300 ms before); table over
# 10 GPUs x 12 quants < 1 s.
# Usage: [RUNS=10] scripts/bench_fit.sh [path/to/vramfit]   (default: target/release/vramfit)
# Prints a markdown table of medians (hyperfine's full report goes to stderr).
# Uses hyperfine when installed (Debian: apt-get install hyperfine), else a loop with `time`.
set -euo pipefail
BIN=${1:-${CARGO_TARGET_DIR:-target}/release/vramfit}
[ -x "$BIN" ] || { echo "build first: cargo build --release -p vramfit (or pass the binary)" >&2; exit 2; }
export HF_HUB_OFFLINE=1 HF_HUB_CACHE=$(mktemp -d)
QUANTS=BF16,Q8_0,Q6_K,Q5_K_M,Q5_K_S,Q4_K_M,Q4_K_S,IQ4_XS,Q3_K_M,Q3_K_S,IQ3_XXS,Q2_K
CMDS=(
  "$BIN fit Qwen/Qwen3-8B --gpu 'RTX 4090'"
  "$BIN fit Qwen/Qwen3-30B-A3B --gpu 'RTX 4090'"
  "$BIN fit meta-llama/Llama-3.3-70B-Instruct --gpu '2x RTX 3090' --context 32k"
  "$BIN fit meta-llama/Llama-3.3-70B-Instruct --gpu '2x RTX 3090' --ram 64GiB"
  "$BIN fit openai/gpt-oss-20b --gpu 'RTX 4090' --ram 64GiB"
  # dense 70B on one 24 GB card: the -ngl searches
  "$BIN fit meta-llama/Llama-3.1-70B-Instruct --gpu 'RTX 4090'"
  # large MoE: 9+ predicted quants, --n-cpu-moe searches, vLLM TP/offload
  "$BIN fit Qwen/Qwen3-235B-A22B --gpu '4x A100-80G'"
  "$BIN fit deepseek-ai/DeepSeek-V3 --gpu '8x H200'"
  # 10 GPUs (the default columns) x 12 quants
  "$BIN table Qwen/Qwen3-30B-A3B --quants $QUANTS"
  "$BIN table meta-llama/Llama-3.3-70B-Instruct --quants $QUANTS"
  "$BIN table Qwen/Qwen3-235B-A22B --quants $QUANTS"
  "$BIN table Qwen/Qwen3-8B --engine vllm"
)
RUNS=${RUNS:-10}
if command -v hyperfine >/dev/null; then
  OUTJ=$(mktemp)
  hyperfine -N --warmup 2 --runs "$RUNS" --style basic --export-json "$OUTJ" "${CMDS[@]}" >&2
  # medians (the mean is skewed by other load on a shared machine)
  if command -v python3 >/dev/null; then
    python3 - "$OUTJ" <<'PY'
import json, sys
print("| median ms | min ms | max ms | command |")
print("|---:|---:|---:|:---|")
for r in json.load(open(sys.argv[1]))["results"]:
    cmd = " ".join(r["command"].split()[1:])
    print(f"| {r['median']*1e3:.1f} | {r['min']*1e3:.1f} | {r['max']*1e3:.1f} | {cmd} |")
PY
  else
    cat "$OUTJ"
  fi
  rm -f "$OUTJ"
else
  for c in "${CMDS[@]}"; do
    echo "== $c"
    time (for _ in $(seq "$RUNS"); do eval "$c" >/dev/null; done)
  done
fi
