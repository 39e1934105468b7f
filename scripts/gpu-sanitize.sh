#!/usr/bin/env bash
# Runs the GPU test binaries under NVIDIA compute-sanitizer: memcheck over every GPU suite,
# racecheck and synccheck over the kernels that use shared memory and barriers (reductions,
# transposed-input tiles). Any report fails the run (--error-exitcode=1).
#
#   scripts/gpu-sanitize.sh [BUILD_DIR]      (default build-gpu; needs a GPU)
#
# Left out on purpose: CudaFault.* (they provoke an illegal address: memcheck reports it, as it
# should), the 2^28-element and 100,000-term cases and the NumPy differential suite (correct
# but far too slow under instrumentation; the same kernel kinds run in the suites that remain).
set -u
build=${1:-build-gpu}
cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
if [ ! -x "$cs" ]; then echo "gpu-sanitize: compute-sanitizer not found" >&2; exit 2; fi
skip='-CudaFault.*:*TwoToThe28*:*HundredThousand*'
status=0
run() {  # TOOL BINARY [FILTER]
  local tool=$1 bin=$build/$2 filter=${3:-*}
  echo "== $tool $2 ($filter)"
  # API errors are not memory errors: the driver tests provoke them on purpose, and jitexpr
  # turns every one into a typed exception that the tests check.
  if ! "$cs" --tool "$tool" --report-api-errors no --error-exitcode=1 --print-limit 20 "$bin" --gtest_filter="$filter:$skip" --gtest_brief=1; then
    echo "!! $tool reported errors in $2"; status=1
  fi
}
for tool in racecheck synccheck; do
  run "$tool" tests/codegen/test_cuda_exec '*Sum*:*Max*:*Mean*'
  run "$tool" tests/api/test_layouts_gpu '*Transposed*'
  run "$tool" tests/api/test_pipeline_gpu '*Reduction*:*Graph*'
done
for t in tests/api/test_layouts_gpu tests/codegen/test_cuda_exec tests/api/test_pipeline_gpu \
         tests/embed/test_dlpack_gpu tests/embed/test_arrow_gpu tests/hardening/test_gpu_faults \
         tests/cache/test_module_cache_gpu tests/cuda/test_cuda_driver tests/cuda/test_cuda_hybrid; do
  [ -x "$build/$t" ] && run memcheck "$t"
done
[ $status = 0 ] && echo "gpu-sanitize: no errors"
exit $status
