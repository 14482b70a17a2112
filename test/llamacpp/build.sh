#!/usr/bin/env bash
# Builds llama.cpp's llama-server (b4750, from the team's shared source tarball) and a tiny
# random-weight GGUF model for the real-engine tests, into a cache directory, and prints the
# two environment variables the tests read:
#
#   eval "$(test/llamacpp/build.sh)"      # PEL_LLAMA_SERVER=... PEL_LLAMA_MODEL=...
#   go test ./test/llamacpp -v
#
# Needs cmake, g++ and python3-numpy (Debian: apt-get install -y cmake g++ python3-numpy).
# Takes 2-4 minutes on 2 cores the first time; later calls reuse the cache
# (PEL_LLAMA_CACHE, default ~/.cache/pel-llamacpp).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shared="${PEL_SHARED:-$here/../../../shared}"
tarball="$shared/llamacpp/llama.cpp-b4750-c392e50.tar.gz"
maker="$shared/llamacpp/make_tiny_gguf.py"
cache="${PEL_LLAMA_CACHE:-$HOME/.cache/pel-llamacpp}"
src="$cache/src"
bin="$src/build/bin/llama-server"
model="$cache/tiny.gguf"

if [ ! -f "$tarball" ]; then
  echo "build.sh: $tarball not found (set PEL_SHARED to the team's shared folder)" >&2
  exit 1
fi
mkdir -p "$cache"
if [ ! -x "$bin" ]; then
  rm -rf "$src" && mkdir -p "$src"
  tar -xzf "$tarball" -C "$src"
  echo "build.sh: building llama-server (2-4 min)" >&2
  (cd "$src" && cmake -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
      -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=ON >"$cache/cmake.log" 2>&1 &&
    cmake --build build --target llama-server -j"$(nproc)" >"$cache/build.log" 2>&1) || {
    echo "build.sh: build failed; see $cache/cmake.log and $cache/build.log" >&2
    exit 1
  }
fi
if [ ! -f "$model" ]; then
  stub="$(mktemp -d)"
  # gguf-py imports sentencepiece at load time without using it for this.
  echo 'class SentencePieceProcessor: pass' >"$stub/sentencepiece.py"
  PYTHONPATH="$src/gguf-py:$stub" /usr/bin/python3 "$maker" \
    --vocab "$src/models/ggml-vocab-llama-spm.gguf" --out "$model" >&2
  rm -rf "$stub"
fi
echo "export PEL_LLAMA_SERVER=$bin"
echo "export PEL_LLAMA_MODEL=$model"
