#!/usr/bin/env bash
# Peak memory (max RSS) and time of every command on endless and huge inputs: devices that never
# end (/dev/zero, /dev/urandom, `yes`), 8 GiB sparse files under every model/log/snapshot name,
# and a 1 GiB text stream. Each run must end (60 s limit) with exit 0, 1 or 2 and stay under
# 200 MiB of RSS.
#
# Usage: scripts/bench_hostile_memory.sh [target/release/vramfit]
# Prints one line per case: exit code, max RSS (MiB), wall seconds, case; exits 1 if any case
# exceeds the limits. Needs GNU time (/usr/bin/time).
set -u
BIN=${1:-target/release/vramfit}
BIN=$(realpath "$BIN")
LIMIT_MIB=200
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export HF_HUB_OFFLINE=1 HF_HOME="$TMP/hf" HF_HUB_CACHE="$TMP/hf/hub" NO_COLOR=1
mkdir -p "$HF_HUB_CACHE"

sparse() { # NAME TAIL: an 8 GiB file of NUL bytes ending in TAIL
    truncate -s 8G "$TMP/$1"
    printf '%s' "$2" >>"$TMP/$1"
    echo "$TMP/$1"
}
LOG=$(sparse server.log "")
{ echo; yes 'INFO 12-01 10:00:00 [core.py:1] step' | head -c 9000000
  echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.'; } >>"$LOG"
GGUF=$(sparse model.gguf "")
mkdir -p "$TMP/cfgdir"
CFG=$(sparse cfgdir/config.json "{}")
SNAP=$(sparse snap.pickle "")
mkdir -p "$TMP/stdir"
cp "$(dirname "$0")/../crates/vramfit-model/tests/safetensors_fixtures/single/model.safetensors" "$TMP/stdir/" 2>/dev/null
printf '{"model_type":"llama","hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,"vocab_size":128256}' >"$TMP/stdir/config.json"
truncate -s 8G "$TMP/stdir/model.safetensors"

fail=0
bench() { # NAME STDIN ARGS...
    local name=$1 input=$2
    shift 2
    local t0 t1 rc rss
    t0=$(date +%s.%N)
    if [ "$input" = "-" ]; then
        timeout 60 /usr/bin/time -f '%M' -o "$TMP/time" "$BIN" "$@" </dev/null >/dev/null 2>"$TMP/err"
        rc=$?
    else
        eval "$input" | timeout 60 /usr/bin/time -f '%M' -o "$TMP/time" "$BIN" "$@" >/dev/null 2>"$TMP/err"
        rc=${PIPESTATUS[1]}
    fi
    t1=$(date +%s.%N)
    rss=$(( $(tail -1 "$TMP/time" 2>/dev/null || echo 0) / 1024 ))
    printf '%-4s %5s MiB %6.2f s  %s\n' "$rc" "$rss" "$(echo "$t1 - $t0" | bc)" "$name"
    err1=$(head -c 110 "$TMP/err" | head -1)
    printf '           %s\n' "$err1"
    if [ "$rc" -gt 2 ] || [ "$rss" -ge "$LIMIT_MIB" ]; then
        fail=1
        sed 's/^/      /' "$TMP/err" | head -3
    fi
}

echo "rc   max RSS    wall   case ($BIN)"
bench "doctor /dev/zero"                          - doctor /dev/zero
bench "doctor - < /dev/zero (1 GiB cap)"          "cat /dev/zero" doctor -
bench "doctor - < /dev/urandom"                   "cat /dev/urandom" doctor -
bench "yes | doctor - (endless text)"             "yes 'INFO 12-01 10:00:00 [core.py:1] step'" doctor -
bench "doctor 8 GiB sparse log"                   - doctor "$LOG"
bench "doctor --json 8 GiB sparse log"            - doctor --json "$LOG"
bench "snapshot /dev/zero"                        - snapshot /dev/zero
bench "snapshot 8 GiB file"                       - snapshot "$SNAP"
bench "snapshot - < /dev/zero"                    "cat /dev/zero" snapshot /dev/stdin
bench "inspect /dev/zero"                         - inspect /dev/zero
bench "inspect /dev/stdin < /dev/zero"            "cat /dev/zero" inspect /dev/stdin
bench "inspect 8 GiB sparse .gguf"                - inspect "$GGUF"
bench "inspect 8 GiB sparse config.json"          - inspect "$CFG"
bench "inspect dir with 8 GiB model.safetensors"  - inspect "$TMP/stdir"
bench "check llama-server -m /dev/zero"           - check --gpu 24GiB -- llama-server -m /dev/zero
bench "check llama-server -m 8 GiB sparse gguf"   - check --gpu 24GiB -- llama-server -m "$GGUF"
bench "check vllm serve /dev/zero"                - check --gpu 24GiB -- vllm serve /dev/zero
bench "check vllm serve 8 GiB config dir"         - check --gpu 24GiB -- vllm serve "$TMP/cfgdir"
bench "check sglang 8 GiB safetensors dir"        - check --gpu 80GiB -- python -m sglang.launch_server --model-path "$TMP/stdir"
bench "check ollama /dev/zero"                    - check --gpu 24GiB -- ollama run /dev/zero
bench "fit /dev/zero"                             - fit /dev/zero --gpu 24GiB
bench "fit 8 GiB sparse gguf"                     - fit "$GGUF" --gpu 24GiB
bench "table /dev/zero"                           - table /dev/zero --gpus "RTX 4090"
bench "catalog models (whole catalog)"            - catalog models --json
bench "watch --replay /dev/zero"                  - watch --replay /dev/zero --json
bench "watch --replay 8 GiB sparse file"          - watch --replay "$SNAP" --json
exit $fail
