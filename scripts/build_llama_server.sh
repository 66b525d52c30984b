#!/usr/bin/env bash
# Builds a CPU-only llama-server from the llama.cpp that the llama-cpp-python source distribution
# vendors, and caches it outside the clone so a re-run is a no-op.
#
#   scripts/build_llama_server.sh            # build (or reuse) and print the binary's path
#   VRAMFIT_LLAMA_CPP_PYTHON=0.3.36 ...      # pin another sdist version
#   VRAMFIT_BUILD_JOBS=2 ...                 # parallel compile jobs (default 2)
#
# Result: $CACHE/llama-server-<version>/bin/llama-server and BUILD_INFO (sdist version, vendored
# llama.cpp commit, build seconds). Tests find it through $VRAMFIT_LLAMA_SERVER or that cache path.
set -euo pipefail

VERSION="${VRAMFIT_LLAMA_CPP_PYTHON:-0.3.36}"
JOBS="${VRAMFIT_BUILD_JOBS:-2}"
CACHE="${VRAMFIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vramfit}"
DEST="$CACHE/llama-server-$VERSION"

if [ -x "$DEST/bin/llama-server" ] && [ -f "$DEST/BUILD_INFO" ]; then
  echo "$DEST/bin/llama-server"
  exit 0
fi

command -v cmake >/dev/null 2>&1 || python3 -m pip install --quiet --disable-pip-version-check cmake
command -v cmake >/dev/null 2>&1 || { echo "build_llama_server: cmake not found; install it (pip install cmake or apt-get install cmake)" >&2; exit 2; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/vramfit-llama-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)

# The sdist's metadata step needs its build backend; with --no-build-isolation pip uses the one
# installed here instead of building a fresh environment.
python3 -m pip install --quiet --disable-pip-version-check scikit-build-core >/dev/null 2>&1 || true
(cd "$WORK" && python3 -m pip download --quiet --disable-pip-version-check --no-deps \
   --no-build-isolation --no-binary :all: "llama-cpp-python==$VERSION") >&2
tar -xzf "$WORK/llama_cpp_python-$VERSION.tar.gz" -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
[ -f "$SRC/CMakeLists.txt" ] || { echo "build_llama_server: no vendored llama.cpp in the sdist" >&2; exit 2; }

# The vendored commit: the sdist carries the submodule's git metadata.
COMMIT="$(git -C "$WORK/llama_cpp_python-$VERSION" submodule status vendor/llama.cpp 2>/dev/null \
  | awk '{print $1}' | tr -d '+-' || true)"
[ -n "$COMMIT" ] || COMMIT=unknown
# The sdist's shallow submodule cannot count commits, so the binary prints no real build number;
# the release tag that points at the vendored commit names it (github.com/ggml-org/llama.cpp
# tags: b11312 = 0c1e57098, vendored by llama-cpp-python 0.3.36).
case "$COMMIT" in
  0c1e57098bba43ac29e6e3b677cdceebdd22334f) BUILDNO=11312 ;;
  *) BUILDNO=unknown ;;
esac

cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_NATIVE=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF >&2
nice -n 10 cmake --build "$WORK/build" --target llama-server -j "$JOBS" >&2

mkdir -p "$DEST.tmp/bin"
cp "$WORK/build/bin/llama-server" "$DEST.tmp/bin/"
secs=$(( $(date +%s) - start ))
{
  echo "llama_cpp_python=$VERSION"
  echo "llama_cpp_commit=$COMMIT"
  echo "llama_cpp_build=$BUILDNO"
  echo "build_seconds=$secs"
  echo "jobs=$JOBS"
  echo "backend=cpu"
} > "$DEST.tmp/BUILD_INFO"
rm -rf "$DEST" && mv "$DEST.tmp" "$DEST"
echo "build_llama_server: built in ${secs}s (llama.cpp $COMMIT)" >&2
echo "$DEST/bin/llama-server"
