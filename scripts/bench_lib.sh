# Sourced by the bench_*.sh scripts: times a command RUNS times (the shell's nanosecond clock
# around each run, output discarded, exit status ignored) and measures its peak RSS once with
# /usr/bin/time -v ($TIME). Prints "median_us p90_us max_us peak_rss_kib".
bench_stats() {
    local times=() t0 t1 rss
    for _ in $(seq "$RUNS"); do
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1 || true
        t1=$(date +%s%N)
        times+=($(( (t1 - t0) / 1000 )))
    done
    # a command that exits non-zero (1: does not fit) must not stop the script (set -e, pipefail)
    rss=$("$TIME" -v "$@" 2>&1 >/dev/null | awk -F': ' '/Maximum resident set size/ {print $2}') || true
    printf '%s\n' "${times[@]}" | sort -n | awk -v rss="$rss" -v n="$RUNS" '
        { a[NR] = $1 }
        END {
            med = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
            p90 = a[int(0.9 * (n - 1)) + 1]
            printf "%d %d %d %d\n", med, p90, a[n], rss
        }'
}
