#!/usr/bin/env bash
# Runs the GPU test suites under NVIDIA compute-sanitizer: memcheck over every GPU suite,
# racecheck and synccheck over the kernels that use shared memory and barriers (reductions,
# transposed-input tiles). Any report, failure or time-out fails the run (--error-exitcode=1).
#
#   scripts/gpu-sanitize.sh [BUILD_DIR [PART...]]       (default build-gpu, every part; needs a GPU)
#
# Parts, each a list of runs with a time limit of its own (RUN_LIMIT seconds, default 200), so
# one slow suite cannot cut the others short; every run prints how long it took:
#   race      racecheck and synccheck over the reduction, tile and graph cases
#   memcheck  memcheck over the layout, executor, pipeline, DLPack, Arrow, module-cache, driver
#             and hybrid suites
#   faults    memcheck over test_gpu_faults, one test per run (a full disk under the runtime's
#             disk cache, split programs)
#   diff      memcheck over a sixteenth of the NumPy differential cases (JITEXPR_DIFF_SHARD)
#   python    memcheck over the Python package's GPU tests (tests/python/test_gpu.py), when the
#             venv of scripts/test-python.sh is there (VENV_DIR, default build-venv)
#   long      the cases left out of the parts above for time: the 2^28-element cases and the
#             100,000-term sum (RUN_LIMIT 500 each is advised); not in the default set
# scripts/gpu-session.sh runs "race memcheck" as its step `sanitize` and "faults diff python" as
# its step `sanitize-faults`, each within its own limit.
# Exit status 77 of a run (a suite that skipped itself) counts as skipped.
#
# Left out on purpose: CudaFault.* (they provoke an illegal address: memcheck reports it, as it
# should).
set -u
build=${1:-build-gpu}
shift || true
parts=${*:-race memcheck faults diff python}
root=$(cd "$(dirname "$0")/.." && pwd)
cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
limit=${RUN_LIMIT:-200}
if [ ! -x "$cs" ]; then echo "gpu-sanitize: compute-sanitizer not found" >&2; exit 2; fi
long='*TwoToThe28*:*HundredThousand*'
status=0
# API errors are not memory errors: the driver tests provoke them on purpose, and jitexpr
# turns every one into a typed exception that the tests check.
sanitize() {  # TOOL LABEL COMMAND...
  local tool=$1 label=$2 t0 rc
  shift 2
  echo "== $tool $label"
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$cs" --tool "$tool" --report-api-errors no --error-exitcode=1 --print-limit 20 "$@"
  rc=$?
  echo "   $tool $label: rc $rc in $(( $(date +%s) - t0 )) s"
  if [ $rc = 77 ]; then
    echo "   $label skipped itself (exit 77)"
  elif [ $rc = 124 ] || [ $rc = 137 ]; then
    echo "!! $tool timed out in $label after $limit s (raise RUN_LIMIT or split the suite)"; status=1
  elif [ $rc != 0 ]; then
    echo "!! $tool reported errors in $label"; status=1
  fi
}
gtest() {  # TOOL BINARY [FILTER] [EXCLUDE]
  local tool=$1 bin=$2 filter=${3:-*} exclude=${4:-"-CudaFault.*:$long"}
  [ -x "$build/$bin" ] || { echo "!! $build/$bin is not built"; status=1; return; }
  sanitize "$tool" "$bin ($filter)" "$build/$bin" --gtest_filter="$filter:$exclude" --gtest_brief=1
}
for part in $parts; do
  case $part in
    race)
      for tool in racecheck synccheck; do
        gtest "$tool" tests/codegen/test_cuda_exec '*Sum*:*Max*:*Mean*'
        gtest "$tool" tests/api/test_layouts_gpu '*Transposed*'
        gtest "$tool" tests/api/test_pipeline_gpu '*Reduction*:*Graph*'
      done ;;
    memcheck)
      for t in tests/api/test_layouts_gpu tests/codegen/test_cuda_exec tests/api/test_pipeline_gpu \
               tests/embed/test_dlpack_gpu tests/embed/test_arrow_gpu tests/cache/test_module_cache_gpu \
               tests/cuda/test_cuda_driver tests/cuda/test_cuda_hybrid; do
        gtest memcheck "$t"
      done ;;
    faults)
      # One test per run: each compiles its own kernels, and the full-disk test runs a child.
      gtest memcheck tests/hardening/test_gpu_faults 'CudaFullDisk.*'
      gtest memcheck tests/hardening/test_gpu_faults 'CudaSplit.SplitReductionsBroadcastsAndSharedOutputsEqualCpu' ;;
    diff)
      JITEXPR_DIFF_SHARD=0/16 gtest memcheck tests/diff/test_diff_cuda ;;
    python)
      # The package's GPU tests, from the venv scripts/test-python.sh makes (VENV_DIR).
      venv=${VENV_DIR:-$root/build-venv}
      if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import jitexpr" 2>/dev/null; then
        sanitize memcheck "tests/python/test_gpu.py" "$venv/bin/python" -m pytest -q -p no:cacheprovider \
          "$root/tests/python/test_gpu.py"
      else
        echo "   python: skipped (no venv with jitexpr at $venv: scripts/test-python.sh makes one)"
      fi ;;
    long)
      gtest memcheck tests/hardening/test_gpu_faults 'CudaSplit.HundredThousandTermSumEqualsCpu' '-CudaFault.*'
      gtest memcheck tests/api/test_pipeline_gpu '*TwoToThe28*' '-CudaFault.*' ;;
    *) echo "gpu-sanitize: unknown part '$part' (race memcheck faults diff python long)" >&2; exit 2 ;;
  esac
done
[ $status = 0 ] && echo "gpu-sanitize: no errors ($parts)"
exit $status
