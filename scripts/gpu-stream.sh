#!/usr/bin/env bash
# Host data through the GPU on the H200, in one call: a Release build of what it needs, the
# streamed pipeline's GPU tests (test_stream_gpu, its 16 GiB out-of-core case included when the
# host has the memory) and the chunk-plan tests, then the streaming benchmark (link references
# and c = a*2+b on 8 GiB of host inputs from pinned and pageable memory, and out-of-core).
# Writes small text/JSON results to $OUT (default ./gpu-out). About 3-5 minutes.
#
#   OUT=/path scripts/gpu-stream.sh [BUILD_DIR (default build-gpu)]
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
build=${1:-build-gpu}
mkdir -p "$out"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/stream-cmake.log" 2>&1
fi
timeout 300 cmake --build "$build" -j"$(nproc)" --target test_stream_gpu test_chunks bench_stream \
  > "$out/stream-build.log" 2>&1 || { echo "stream: build failed, see stream-build.log"; tail -20 "$out/stream-build.log"; }
{
  echo "== test_chunks"; timeout 60 "$build/tests/run/test_chunks" 2>&1 | tail -3
  echo "== test_stream_gpu"; timeout 240 "$build/tests/api/test_stream_gpu" 2>&1
} > "$out/stream-tests.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^16 GiB|Failure" "$out/stream-tests.log"
timeout 240 "$build/bench/bench_stream" --gib 8 --reps 3 --json "$out/bench_stream.json" > "$out/bench_stream.txt" 2>&1
cat "$out/bench_stream.txt"
