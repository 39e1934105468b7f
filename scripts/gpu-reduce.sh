#!/usr/bin/env bash
# The reductions and statistics on one GPU (a few minutes on an H200): a Release build of what
# they need, the CUDA differential suite against NumPy 2 (every case of tests/diff, the
# reductions' included, contiguous and strided), the CPU-against-CUDA reduction test (bits
# where the operation is exact, run-to-run bits) and the kernels' NVRTC compile tests, with the
# time each took. Writes logs and a summary to $OUT (default ./gpu-out).
#
#   OUT=/some/dir scripts/gpu-reduce.sh
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
build=${BUILD_DIR:-build-gpu}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/reduce-cmake.log" 2>&1
targets="test_diff_cuda test_diff_cpu test_reductions_gpu test_reductions test_layouts_gpu test_codegen_nvrtc test_codegen_statistics"
timeout 420 cmake --build "$build" -j"$(nproc)" --target $targets > "$out/reduce-build.log" 2>&1 \
  || { echo "build failed, see reduce-build.log"; tail -30 "$out/reduce-build.log"; }
summary="$out/reduce-summary.txt"
: > "$summary"
for t in diff/test_diff_cuda api/test_reductions_gpu api/test_layouts_gpu codegen/test_codegen_nvrtc \
         codegen/test_codegen_statistics diff/test_diff_cpu dsl/test_reductions; do
  name=$(basename "$t")
  start=$(date +%s.%N)
  timeout 300 "$build/tests/$t" > "$out/reduce-$name.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  printf '%-24s rc=%d %6.1fs  %s\n' "$name" "$rc" "$(awk "BEGIN{print $end - $start}")" \
    "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/reduce-$name.log" | tr '\n' ' ' | cut -c1-120)" | tee -a "$summary"
done
# The first failures of the differential suites, if any, for the report.
grep -h -A1 "Failure" "$out/reduce-test_diff_cuda.log" 2>/dev/null | grep -v -E "Failure|^--" | head -60 \
  > "$out/reduce-diff-cuda-failures.txt"
echo "failures listed: $(wc -l < "$out/reduce-diff-cuda-failures.txt")" | tee -a "$summary"
