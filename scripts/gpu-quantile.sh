#!/usr/bin/env bash
# The order statistics (median, percentile, quantile, nan*) on one GPU (a few minutes on an
# H200): a Release build of what they need; the CPU-against-CUDA bits test (every function x
# dtype x axis form, strided views, a 3,000,001-element row, run-to-run bits); the CUDA
# differential suite against NumPy 2 (tests/diff: the order statistics' cases with every other
# case, contiguous and strided); the Select kernels' NVRTC compile and golden tests; and the time
# of a few large selections on each backend. Writes logs and a summary to $OUT (default ./gpu-out).
#
#   OUT=/some/dir scripts/gpu-quantile.sh
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
build=${BUILD_DIR:-build-gpu}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/quantile-cmake.log" 2>&1
targets="test_quantile_gpu test_diff_cuda test_diff_cpu test_codegen_select jitexpr_tool"
timeout 420 cmake --build "$build" -j"$(nproc)" --target $targets > "$out/quantile-build.log" 2>&1 \
  || { echo "build failed, see quantile-build.log"; tail -30 "$out/quantile-build.log"; }
summary="$out/quantile-summary.txt"
: > "$summary"
for t in api/test_quantile_gpu diff/test_diff_cuda codegen/test_codegen_select diff/test_diff_cpu; do
  name=$(basename "$t")
  start=$(date +%s.%N)
  timeout 300 "$build/tests/$t" > "$out/quantile-$name.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  printf '%-22s rc=%d %6.1fs  %s\n' "$name" "$rc" "$(awk "BEGIN{print $end - $start}")" \
    "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/quantile-$name.log" | tr '\n' ' ' | cut -c1-120)" | tee -a "$summary"
done
grep -h -A1 "Failure" "$out/quantile-test_diff_cuda.log" 2>/dev/null | grep -E "median|percentile|quantile|fmax|fmin" \
  | head -60 > "$out/quantile-diff-cuda-failures.txt"
echo "order-statistic failures listed: $(wc -l < "$out/quantile-diff-cuda-failures.txt")" | tee -a "$summary"
# Time of large selections (the CLI's --time of the second of two equal statements: a cache hit).
for backend in cuda cpu; do
  for expr in "median(a, axis=1)" "percentile(a * 2 + 1, (1, 50, 99), axis=1)" "median(a)" "nanquantile(a, 0.3, axis=0)"; do
    line=$(timeout 120 "$build/tools/jitexpr" --backend "$backend" -e "a = randn((4096, 4096), seed=1)" \
      -e "r = $expr" -e "r = $expr" --time 2>&1 | grep -E "run" | tail -1 | tr '\n' ' ')
    echo "$backend  $expr  $line" | tee -a "$summary"
  done
done
