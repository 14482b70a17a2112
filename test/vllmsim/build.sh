#!/usr/bin/env bash
# Builds llm-d-inference-sim (a Go emulator of vLLM's API and /metrics) for the live cases
# in test/vllmsim, into a cache directory, and prints the environment variable they read:
#
#   eval "$(test/vllmsim/build.sh)"      # PEL_VLLM_SIM=...
#   go test ./test/vllmsim -v
#
# The emulator's go.mod needs github.com/llm-d/llm-d-router v0.10.0, which the public Go
# module proxy does not serve; the script builds against a source copy of it instead.
# Sources: PEL_VLLM_SIM_SRC and PEL_LLMD_ROUTER_SRC (git checkouts or plain copies), else
# shallow git clones from GitHub (needs network). Pure Go; about two minutes on 2 cores
# the first time; later calls reuse the cache (PEL_VLLM_SIM_CACHE, default
# ~/.cache/pel-vllmsim).
set -euo pipefail
cache="${PEL_VLLM_SIM_CACHE:-$HOME/.cache/pel-vllmsim}"
bin="$cache/llm-d-inference-sim"
mkdir -p "$cache"
if [ ! -x "$bin" ]; then
  sim="${PEL_VLLM_SIM_SRC:-$cache/sim-src}"
  router="${PEL_LLMD_ROUTER_SRC:-$cache/router-src}"
  # Pinned: which clock the emulator's TTFT histogram keeps is its implementation's
  # choice, and the cases were written against this one.
  fetch() { # dir url commit
    mkdir -p "$1" && git -C "$1" init -q && git -C "$1" fetch -q --depth 1 "$2" "$3" &&
      git -C "$1" checkout -q FETCH_HEAD
  }
  if [ ! -d "$sim" ]; then
    fetch "$sim" https://github.com/llm-d/llm-d-inference-sim eec055a39e6bbc1adbcb54f88f24f36b7f94e781 >&2
  fi
  if [ ! -d "$router" ]; then
    fetch "$router" https://github.com/llm-d/llm-d-router v0.10.0 >&2
  fi
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  cp -r "$sim"/. "$work"
  echo "build.sh: building llm-d-inference-sim (about 2 min)" >&2
  (cd "$work" && go mod edit -replace "github.com/llm-d/llm-d-router=$(cd "$router" && pwd)" &&
    go build -o "$bin" ./cmd/llm-d-inference-sim) >"$cache/build.log" 2>&1 || {
    echo "build.sh: build failed; see $cache/build.log" >&2
    exit 1
  }
fi
echo "export PEL_VLLM_SIM=$bin"
