#!/usr/bin/env bash
# bench_doctor.sh: wall time and peak RSS of `vramfit doctor` on a large log.
#
#   scripts/bench_doctor.sh [VRAMFIT_BINARY] [SIZE_MB] [RUNS]
#
# Defaults: target/release/vramfit, a 100 MB log, 5 runs. The log is ordinary vLLM INFO
# traffic (the lines doctor must skip quickly), a budget line early on, and a PyTorch OOM at
# the end, written once to a temporary file. Median wall time comes from the shell's
# nanosecond clock; peak RSS from /usr/bin/time -v (Debian package `time`). A second run
# pipes the same log through stdin (`doctor -`), the path `kubectl logs ... | vramfit doctor -`
# takes. doctor keeps only the last 8 MiB of a log (crates/vramfit-doctor/src/input.rs), so
# memory must stay flat whatever the size.
set -euo pipefail

BIN=${1:-target/release/vramfit}
SIZE_MB=${2:-100}
RUNS=${3:-5}
TIME=/usr/bin/time
[ -x "$BIN" ] || { echo "no vramfit binary at $BIN: build with cargo build --release -p vramfit" >&2; exit 2; }
[ -x "$TIME" ] || { echo "/usr/bin/time missing: apt-get install time" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
LOG="$TMP/big.log"
python3 - "$LOG" "$SIZE_MB" <<'PY'
import sys
path, mb = sys.argv[1], int(sys.argv[2])
line = "INFO 06-30 13:53:19 [loggers.py:118] Engine 000: Avg prompt throughput: 1520.3 tokens/s, Avg generation throughput: 310.7 tokens/s, Running: 48 reqs, Waiting: 0 reqs, GPU KV cache usage: 61.2%, Prefix cache hit rate: 12.5%\n"
with open(path, "w") as f:
    f.write("INFO 06-30 13:40:00 [gpu_worker.py:241] the current vLLM instance can use total_gpu_memory (79.15GiB) x gpu_memory_utilization (0.90) = 71.24GiB\n")
    n = mb * 1024 * 1024 // len(line)
    block = line * 1000
    for _ in range(n // 1000):
        f.write(block)
    f.write("ERROR 06-30 16:10:02 [core.py:515] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 79.18 GiB of which 1.08 GiB is free. Including non-PyTorch memory, this process has 78.09 GiB memory in use. Of the allocated memory 75.31 GiB is allocated by PyTorch, and 1.83 GiB is reserved by PyTorch but unallocated.\n")
PY
printf 'log: %s MB, %s lines\n' "$(( $(stat -c %s "$LOG") / 1048576 ))" "$(wc -l < "$LOG")"

# shellcheck source=scripts/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"

bench() {
    local label=$1; shift
    bench_stats "$@" | awk -v label="$label" \
        '{ printf "%-28s median %5d ms  max %5d ms  peak RSS %6.1f MiB\n", label, $1 / 1000, $3 / 1000, $4 / 1024 }'
}

bench "doctor FILE" "$BIN" doctor "$LOG"
bench "doctor - (stdin)" sh -c "\"$BIN\" doctor - < \"$LOG\""
"$BIN" doctor "$LOG" 2>/dev/null | head -1
