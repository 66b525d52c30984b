#!/usr/bin/env bash
# Cost of `vramfit watch` per simulated second, measured on a long replay.
#
# Generates an uneventful 8-GPU trace (vramfit_watch::synth::long_run: vLLM under waves of load,
# one sample per GPU per second), replays it as fast as possible through the whole pipeline
# (detectors, forecast, and the exporter's page render; JSON lines in a second run), and reads
# CPU time and max RSS from /usr/bin/time -v. CPU seconds per simulated second is the share of a
# core the watch needs at 1 Hz (times 10 at 10 Hz).
#
# Usage: scripts/bench_watch.sh [SECONDS=21600] [GPUS=8] [HZ=1]
# Needs: /usr/bin/time (Debian package `time`).
set -euo pipefail
SECONDS_SIM=${1:-21600}
GPUS=${2:-8}
HZ=${3:-1}
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p vramfit --bin vramfit
cargo build --release -q -p vramfit-watch --example gen_traces
BIN="$CARGO_TARGET_DIR/release/vramfit"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$CARGO_TARGET_DIR/release/examples/gen_traces" --long "$SECONDS_SIM" "$GPUS" "$HZ" "$WORK/long.jsonl"
echo "trace: $SECONDS_SIM s x $GPUS GPUs at $HZ Hz, $(wc -l < "$WORK/long.jsonl") lines, $(du -h "$WORK/long.jsonl" | cut -f1)"

measure() { # label, then the vramfit arguments
  local label=$1; shift
  /usr/bin/time -v "$BIN" "$@" > /dev/null 2> "$WORK/time.txt" || { cat "$WORK/time.txt"; exit 1; }
  local user sys rss
  user=$(awk -F': ' '/User time/ {print $2}' "$WORK/time.txt")
  sys=$(awk -F': ' '/System time/ {print $2}' "$WORK/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/time.txt")
  awk -v l="$label" -v u="$user" -v s="$sys" -v r="$rss" -v n="$SECONDS_SIM" -v g="$GPUS" -v hz="$HZ" 'BEGIN {
    cpu = u + s;
    printf "%-26s cpu %.2f s for %d simulated s (%d GPUs at %d Hz): %.4f%% of a core; max RSS %.1f MB\n",
      l, cpu, n, g, hz, 100 * cpu / n, r / 1024 }'
}

measure "replay + exporter render" watch --replay "$WORK/long.jsonl" --speed max --prometheus 127.0.0.1:0
measure "replay + JSON lines" watch --replay "$WORK/long.jsonl" --speed max --json
