#!/usr/bin/env bash
# Boolean-mask selection on the GPU: a Release build of the suites that cover it, then the CUDA
# compaction against the CPU backend bit for bit (test_mask_gpu: sizes from 1 to 4e7 elements,
# past the grid cap of 1024 blocks, every dtype class, strided and 2-d inputs, masks of the leading
# axes, empty and full selections, two selections by one mask, the masked reductions and the
# empty min's ValueError) and the compaction kernels' NVRTC compile.
# Logs and a summary land in $OUT (default gpu-out).
#
#   OUT=results/ scripts/gpu-mask.sh
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/mask-cmake.log" 2>&1
timeout 420 cmake --build build-gpu -j"$(nproc)" --target test_mask_gpu test_codegen_compact \
  > "$out/mask-build.log" 2>&1 ||
  { echo "build failed, see mask-build.log"; tail -20 "$out/mask-build.log"; exit 1; }
start=$(date +%s)
timeout 240 build-gpu/tests/api/test_mask_gpu > "$out/mask-gpu.log" 2>&1
gpu_rc=$?
timeout 120 build-gpu/tests/codegen/test_codegen_compact > "$out/mask-codegen.log" 2>&1
codegen_rc=$?
end=$(date +%s)
{
  echo "test_mask_gpu rc=$gpu_rc; test_codegen_compact rc=$codegen_rc; $((end - start)) s"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]" "$out/mask-gpu.log" "$out/mask-codegen.log"
} | tee "$out/mask-summary.txt"
[ "$gpu_rc" -eq 0 ] && [ "$codegen_rc" -eq 0 ]
