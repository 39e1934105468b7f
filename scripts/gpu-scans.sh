#!/usr/bin/env bash
# The scans (cumsum, cumprod, nancumsum, nancumprod) on one GPU (a few minutes on an H200): a
# Release build of what they need, the CPU-against-CUDA scan test (integer bits, float
# tolerance, run-to-run bits), the CUDA differential suite against NumPy 2 (whole: the scans'
# cases, tests/diff/gen_scan_cases.py, are among its cases), the kernels' NVRTC compile tests, and a timing of the two scan
# kernels on large arrays, with the time each step took. Writes logs and a summary to $OUT
# (default ./gpu-out).
#
#   OUT=/some/dir scripts/gpu-scans.sh
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
build=${BUILD_DIR:-build-gpu}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/scans-cmake.log" 2>&1
targets="test_scans_gpu test_scans_cpu test_scans test_diff_cuda test_codegen_scans test_codegen_nvrtc jitexpr_tool"
timeout 420 cmake --build "$build" -j"$(nproc)" --target $targets > "$out/scans-build.log" 2>&1 \
  || { echo "build failed, see scans-build.log"; tail -30 "$out/scans-build.log"; }
summary="$out/scans-summary.txt"
: > "$summary"
step() {  # name, command...
  local name=$1
  shift
  local start end rc
  start=$(date +%s.%N)
  timeout 300 "$@" > "$out/scans-$name.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  printf '%-28s rc=%d %6.1fs  %s\n' "$name" "$rc" "$(awk "BEGIN{print $end - $start}")" \
    "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/scans-$name.log" | tr '\n' ' ' | cut -c1-120)" | tee -a "$summary"
}
step test_scans_gpu "$build/tests/api/test_scans_gpu"
step test_scans_cpu "$build/tests/api/test_scans_cpu"
step test_codegen_scans "$build/tests/codegen/test_codegen_scans"
step diff_cuda_all "$build/tests/diff/test_diff_cuda"
# Large scans timed by the CLI (--time prints the run's wall time; the first run compiles).
for e in "x = cumsum(a * 2 + 1)" "x = cumsum(m, axis=1)" "x = cumsum(m, axis=0)"; do
  {
    echo "== $e"
    "$build/tools/jitexpr" --backend cuda -e "a = ones(268435456, dtype=float32)" -e "m = ones((16384, 16384), dtype=float32)" \
      -e "$e" -e "$e" --time 2>&1 | tail -4
  } >> "$out/scans-timing.log"
done
tail -20 "$out/scans-timing.log" >> "$summary"
grep -h -A1 "Failure" "$out/scans-diff_cuda_all.log" 2>/dev/null | grep -v -E "Failure|^--" | head -60 \
  > "$out/scans-diff-cuda-failures.txt"
echo "failures listed: $(wc -l < "$out/scans-diff-cuda-failures.txt")" | tee -a "$summary"
