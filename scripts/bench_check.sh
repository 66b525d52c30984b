#!/usr/bin/env bash
# bench_check.sh: wall time and peak RSS of `vramfit check` (and of `llmfit plan` when given).
#
#   scripts/bench_check.sh [VRAMFIT_BINARY] [RUNS] [LLMFIT_BINARY]
#
# Defaults: target/release/vramfit, 50 runs, no llmfit. Each command runs RUNS times in a fresh
# offline environment (HF_HUB_OFFLINE=1, an empty HF cache, so catalog models resolve from the
# embedded catalog, not the network); the median and p90 wall times come from the shell's
# nanosecond clock around each run, the peak RSS from /usr/bin/time -v (Debian package `time`) on
# one extra run. Exit status of the measured commands is ignored (1 = does not fit is fine).
set -euo pipefail

BIN=${1:-target/release/vramfit}
RUNS=${2:-50}
LLMFIT=${3:-}
TIME=/usr/bin/time
[ -x "$BIN" ] || { echo "no vramfit binary at $BIN: build with cargo build --release -p vramfit" >&2; exit 2; }
[ -x "$TIME" ] || { echo "/usr/bin/time missing: apt-get install time" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export HF_HUB_OFFLINE=1 HF_HOME="$TMP/hf" HF_HUB_CACHE="$TMP/hf/hub" NO_COLOR=1

# shellcheck source=scripts/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"

bench() {
    local label=$1; shift
    bench_stats "$@" | awk -v label="$label" -v n="$RUNS" \
        '{ printf "| %s | %d | %.1f | %.1f | %.1f |\n", label, n, $1 / 1000, $2 / 1000, $4 / 1024 }'
}

echo "machine: $(nproc) cores, $(uname -sr); vramfit: $BIN"
echo "| command | runs | median ms | p90 ms | peak RSS MiB |"
echo "|---|---|---|---|---|"
bench 'vramfit check --gpu "RTX 4090" -- vllm serve Qwen/Qwen3-8B --max-model-len 32768' \
    "$BIN" check --gpu "RTX 4090" -- vllm serve Qwen/Qwen3-8B --max-model-len 32768
bench 'vramfit check --gpu "RTX 4090" -- llama-server -hf unsloth/Qwen3-8B-GGUF:Q4_K_M -c 32768' \
    "$BIN" check --gpu "RTX 4090" -- llama-server -hf unsloth/Qwen3-8B-GGUF:Q4_K_M -c 32768
bench 'vramfit check --gpu "RTX 4090" -- ollama run qwen3:8b' \
    "$BIN" check --gpu "RTX 4090" -- ollama run qwen3:8b
bench 'vramfit check --gpu "RTX 3060" -- llama-server -hf unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF:Q4_K_M --jinja (--fit mirrored)' \
    "$BIN" check --gpu "RTX 3060" -- llama-server -hf unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF:Q4_K_M --jinja
LOGS=$(dirname "$0")/../crates/vramfit/tests/fixtures/logs
bench 'vramfit check --from-log llamacpp-b5274-...log -- docker run ghcr.io/ggml-org/llama.cpp:server-cuda-b6000 -hf ... (release from the log)' \
    "$BIN" check --from-log "$LOGS/llamacpp-b5274-glm-z1-32b-iq4xs-3090ti.log" -- docker run ghcr.io/ggml-org/llama.cpp:server-cuda-b6000 -hf bartowski/THUDM_GLM-Z1-32B-0414-GGUF:IQ4_XS -c 32768 -fa -ngl 99
bench 'vramfit check --gpu "RTX 4090" --json -- vllm serve ... (JSON)' \
    "$BIN" check --gpu "RTX 4090" --json -- vllm serve Qwen/Qwen3-8B --max-model-len 32768
if [ -n "$LLMFIT" ]; then
    bench "llmfit plan Qwen/Qwen3-8B --context 32768 --quant Q4_K_M --json" \
        "$LLMFIT" plan Qwen/Qwen3-8B --context 32768 --quant Q4_K_M --json
    bench "llmfit --memory 24G plan Qwen/Qwen3-8B --context 32768 (table)" \
        "$LLMFIT" --memory 24G plan Qwen/Qwen3-8B --context 32768
fi
