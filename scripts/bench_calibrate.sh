#!/usr/bin/env bash
# Time `vramfit calibrate` on a 10 MB vLLM log and `vramfit check` (plain and --from-log).
#
#   scripts/bench_calibrate.sh target/release/vramfit [RUNS]
#
# The 10 MB log is a real startup excerpt (crates/vramfit/tests/fixtures/logs/) followed by
# request-traffic lines, as a long-running server's log is; everything runs offline with an empty
# HF cache (the catalog's models) and a throw-away calibration file. Prints median and p90 ms.
set -euo pipefail
BIN=${1:?usage: bench_calibrate.sh path/to/vramfit [runs]}
RUNS=${2:-30}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export HF_HUB_OFFLINE=1 HF_HUB_CACHE="$TMP/hub" HF_HOME="$TMP/hf" VRAMFIT_CALIBRATION="$TMP/cal.json"
LOG="$TMP/big.log"
cat "$ROOT/crates/vramfit/tests/fixtures/logs/vllm-0.31.0-llama31-8b-a100.log" > "$LOG"
line='(APIServer pid=1) INFO 10-06 17:05:11 [loggers.py:123] Engine 000: Avg prompt throughput: 1520.3 tokens/s, Avg generation throughput: 2201.7 tokens/s, Running: 37 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.4%, Prefix cache hit rate: 48.1%'
python3 - "$LOG" "$line" <<'EOF'
import sys
path, line = sys.argv[1], sys.argv[2]
with open(path, "a") as f:
    n = 0
    while n < 10 * 1024 * 1024:
        f.write(line + "\n")
        n += len(line) + 1
EOF
echo "log: $(du -h "$LOG" | cut -f1)"

time_ms() { # runs a command RUNS times, prints median and p90 in ms
  local -a t=()
  for _ in $(seq "$RUNS"); do
    local s e
    s=$(date +%s%N)
    "$@" > /dev/null
    e=$(date +%s%N)
    t+=($(( (e - s) / 1000 )))
  done
  printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR]=$1} END {printf "median %.1f ms  p90 %.1f ms  (%d runs)\n", a[int((NR+1)/2)]/1000, a[int(NR*0.9+0.5)]/1000, NR}'
}

echo -n "calibrate 10 MB log (--dry-run):          "
time_ms "$BIN" calibrate "$LOG" --model meta-llama/Llama-3.1-8B-Instruct --engine-version 0.31.0 --dry-run
echo -n "check vllm (prediction):                  "
time_ms "$BIN" check --gpu "A100 80GB" -- vllm serve meta-llama/Llama-3.1-8B-Instruct
echo -n "check --from-log 10 MB log (what-if):     "
time_ms "$BIN" check --gpu "A100 80GB" --from-log "$LOG" -- vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.8
