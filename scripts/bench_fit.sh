#!/usr/bin/env bash
# Whole-process timings of `vramfit fit` and `vramfit table` (release build), offline.
# Budgets (issue): fit < 300 ms; table over 10 GPUs x 12 quants < 1 s.
# Usage: scripts/bench_fit.sh [path/to/vramfit]   (default: target/release/vramfit)
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
  "$BIN fit Qwen/Qwen3-235B-A22B --gpu '4x A100-80G'"
  "$BIN table Qwen/Qwen3-30B-A3B --quants $QUANTS"
  "$BIN table meta-llama/Llama-3.3-70B-Instruct --quants $QUANTS"
  "$BIN table Qwen/Qwen3-8B --engine vllm"
)
if command -v hyperfine >/dev/null; then
  hyperfine -N --warmup 2 --runs 10 --export-markdown /dev/stdout "${CMDS[@]}" 2>/dev/null \
    || hyperfine --warmup 2 --runs 10 "${CMDS[@]}"
else
  for c in "${CMDS[@]}"; do
    echo "== $c"
    time (for _ in 1 2 3 4 5; do eval "$c" >/dev/null; done)
  done
fi
