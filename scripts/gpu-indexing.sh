#!/usr/bin/env bash
# Slicing and simple indexing on the GPU: a Release build of the suites that cover them, then the
# CUDA NumPy differential suite (every indexing form x dtype, contiguous and strided) and the
# layout tests that compare CUDA with the CPU bit for bit (slices of every kernel kind, a
# reversed slice written into its own array). Logs and a summary land in $OUT (default gpu-out).
#
#   OUT=results/ scripts/gpu-indexing.sh
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/indexing-cmake.log" 2>&1
timeout 420 cmake --build build-gpu -j"$(nproc)" --target test_diff_cuda test_layouts_gpu > "$out/indexing-build.log" 2>&1 ||
  { echo "build failed, see indexing-build.log"; tail -20 "$out/indexing-build.log"; exit 1; }
start=$(date +%s)
timeout 240 build-gpu/tests/diff/test_diff_cuda > "$out/indexing-diff-cuda.log" 2>&1
diff_rc=$?
timeout 120 build-gpu/tests/api/test_layouts_gpu --gtest_filter='GpuLayouts.Slices*:GpuLayouts.WritingAReversed*' \
  > "$out/indexing-layouts.log" 2>&1
layout_rc=$?
end=$(date +%s)
{
  echo "test_diff_cuda rc=$diff_rc; test_layouts_gpu (slices) rc=$layout_rc; $((end - start)) s"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$out/indexing-diff-cuda.log" "$out/indexing-layouts.log"
} | tee "$out/indexing-summary.txt"
[ "$diff_rc" -eq 0 ] && [ "$layout_rc" -eq 0 ]
