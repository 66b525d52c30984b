#!/usr/bin/env bash
# Speed and memory of `vramfit snapshot` on large snapshots, and its numbers against the
# standard-library reference.
#
# Scales a real snapshot up (scripts/scale_snapshot.py: its segments and traces repeated as fresh
# objects, pickle protocol 4) to about 150 MB and 600 MB, analyses each REPEAT times with
# /usr/bin/time (wall seconds, user+sys CPU seconds, max RSS), and prints the median of each, the
# machine's load average, and the time ratio next to the size ratio. Then it compares the JSON with
# scripts/snapshot_reference.py (every total, per device and stream, the top sites, OOM count and
# trace length) and, when BEFORE names another vramfit binary, byte for byte with that one.
#
# Usage: scripts/bench_snapshot.sh REAL_SNAPSHOT.pickle [OUT_DIR=/tmp/vramfit-snapshot-bench]
# Env:   REPEAT (default 5), SIZES_MB (default "150 600"), BEFORE (an older binary to compare),
#        NO_REFERENCE=1 skips the Python reference (it needs ~4 GB of memory on the 600 MB file).
# Needs: python3, /usr/bin/time (Debian package `time`). The files go to OUT_DIR, not the repo.
set -euo pipefail
REAL=${1:?usage: scripts/bench_snapshot.sh REAL_SNAPSHOT.pickle [OUT_DIR]}
OUT=${2:-/tmp/vramfit-snapshot-bench}
REPEAT=${REPEAT:-5}
SIZES_MB=${SIZES_MB:-"150 600"}
REAL=$(realpath "$REAL")
cd "$(dirname "$0")/.."
ROOT=$PWD
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p vramfit --bin vramfit
BIN="$ROOT/$CARGO_TARGET_DIR/release/vramfit"
mkdir -p "$OUT"

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A WALL SIZE
for mb in $SIZES_MB; do
  f="$OUT/scaled_${mb}mb.pickle"
  [ -s "$f" ] || python3 scripts/scale_snapshot.py "$REAL" "$f" --mb "$mb"
  SIZE[$mb]=$(stat -L -c %s "$f")
  : > "$OUT/runs_${mb}.txt"
  for _ in $(seq "$REPEAT"); do
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "$BIN" snapshot --json --quiet "$f" > "$OUT/scaled_${mb}mb.json"
    cat "$OUT/time.txt" >> "$OUT/runs_${mb}.txt"
  done
  wall=$(awk '{ print $1 }' "$OUT/runs_${mb}.txt" | median)
  cpu=$(awk '{ print $2 + $3 }' "$OUT/runs_${mb}.txt" | median)
  rss=$(awk '{ print $4 / 1024 }' "$OUT/runs_${mb}.txt" | median)
  WALL[$mb]=$wall
  printf "%-22s %7.1f MB  wall %6.2f s  cpu %6.2f s  max RSS %7.1f MB  (median of %d; walls: %s)  load %s\n" \
    "scaled_${mb}mb.pickle" "$(echo "${SIZE[$mb]} / 1000000" | bc -l)" "$wall" "$cpu" "$rss" "$REPEAT" \
    "$(awk '{ printf "%s ", $1 }' "$OUT/runs_${mb}.txt")" "$(cut -d' ' -f1-3 /proc/loadavg)"
done

set -- $SIZES_MB
if [ $# -ge 2 ]; then
  small=$1; big=${!#}
  awk -v ts="${WALL[$small]}" -v tb="${WALL[$big]}" -v ss="${SIZE[$small]}" -v sb="${SIZE[$big]}" 'BEGIN {
    printf "size ratio %.2f, time ratio %.2f (linear: the two agree)\n", sb / ss, tb / ts }'
fi

for mb in $SIZES_MB; do
  f="$OUT/scaled_${mb}mb.pickle"
  if [ -n "${BEFORE:-}" ]; then
    "$BEFORE" snapshot --json "$f" > "$OUT/before_${mb}mb.json"
    cmp -s "$OUT/before_${mb}mb.json" "$OUT/scaled_${mb}mb.json" \
      && echo "scaled_${mb}mb: JSON identical to $BEFORE" \
      || { echo "scaled_${mb}mb: JSON differs from $BEFORE"; exit 1; }
  fi
  if [ -z "${NO_REFERENCE:-}" ]; then
    python3 scripts/snapshot_reference.py "$f" > "$OUT/reference_${mb}mb.json"
    python3 - "$OUT/scaled_${mb}mb.json" "$OUT/reference_${mb}mb.json" <<'PY'
import json, sys
rust, ref = (json.load(open(p)) for p in sys.argv[1:3])
TOTALS = ["reserved_bytes", "allocated_bytes", "active_bytes", "requested_bytes", "inactive_bytes",
          "pending_free_bytes", "rounding_waste_bytes", "segments", "blocks", "largest_free_block_bytes"]
bad = [k for k in TOTALS + ["format", "oom_events", "top_sites"] if rust[k] != ref[k]]
bad += ["trace entries"] if rust["trace"]["entries"] != ref["trace_entries"] else []
for r, p in zip(rust["devices"], ref["devices"]):
    keys = TOTALS + ["device", "trace_entries", "trace_peak_allocated_bytes", "trace_peak_reserved_bytes"]
    bad += ["device %s %s" % (p["device"], k) for k in keys if r[k] != p[k]]
    for rs, ps in zip(r["streams"], p["streams"]):
        bad += ["stream %s %s" % (ps["stream"], k) for k in TOTALS + ["stream"] if rs[k] != ps[k]]
    bad += ["stream count"] if len(r["streams"]) != len(p["streams"]) else []
bad += ["device count"] if len(rust["devices"]) != len(ref["devices"]) else []
name = sys.argv[1].rsplit("/", 1)[-1]
print("%s: %s" % (name, "every number identical to scripts/snapshot_reference.py" if not bad
                  else "DIFFERS from the reference: " + ", ".join(bad)))
sys.exit(1 if bad else 0)
PY
  fi
done
