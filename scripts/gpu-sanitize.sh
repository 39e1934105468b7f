#!/usr/bin/env bash
# Runs the GPU test suites under NVIDIA compute-sanitizer: memcheck over every GPU suite (one
# process per test, so that a report names its test and the runs spread over several
# processes), racecheck and synccheck over the kernels that use shared memory and barriers
# (reductions, transposed-input tiles, graphs). Any report, failure or time-out fails the run.
#
#   scripts/gpu-sanitize.sh [BUILD_DIR [PART...]]       (default build-gpu, every part; needs a GPU)
#
# Parts, in the order they are run:
#   race      racecheck and synccheck over the reductions, tiles, graphs, scans, mask selections
#             and order statistics (racecheck of those on their few-row tests, one process per
#             test); initcheck over the reductions
#   memcheck  memcheck over every test of every gpu-labelled binary of BUILD_DIR (from ctest, so a
#             new GPU suite is covered without editing this), one process per test, except the
#             two below that have parts of their own
#   faults    memcheck over test_gpu_faults, one test per run; the full-disk death test with
#             --target-processes application-only (see below)
#   diff      memcheck over DIFF_SHARDS sixteenths of the NumPy differential cases (default 2)
#   python    memcheck over the Python package's GPU tests (tests/python/test_gpu.py), when the
#             venv of scripts/test-python.sh is there (VENV_DIR, default build-venv)
#   long      the cases left out of the parts above for time: the 2^28-element cases, the
#             100,000-term sum, and racecheck over the order statistics' 700-row and 3-million
#             element tests, one run per test (the 3-million one took 337 s on an H200; RUN_LIMIT
#             500 is advised); not in the default set
#   all       race memcheck faults diff python
#
# Settings (environment):
#   JOBS       runs at once (default 1; the GPU machine's 16 cores and one GPU take 6 well)
#   RUN_LIMIT  seconds per run (default 200)
#   BUDGET     seconds for the whole script (default: none): runs that would start after it get
#              "not run (budget)" in the summary, so one call ends in time and says what it skipped
#   OUT        when set, the summary goes to $OUT/sanitize-summary.txt too (with the first lines of
#              each failing run's report); the full logs stay in a temporary folder (printed)
# The one-call form (scripts/gpu-session.sh, step sanitize-all):
#   OUT=$OUT JOBS=6 RUN_LIMIT=240 BUDGET=450 scripts/gpu-sanitize.sh build-gpu all
# Exit status 77 of a run (a suite that skipped itself) counts as skipped. Before anything else
# one probe run checks that compute-sanitizer supports this device (it refuses some virtual
# machines' GPUs: "Device not supported"); if not, the summary says so and the script exits 3.
#
# Left out on purpose: CudaFault.* (they provoke an illegal address: memcheck reports it, as it
# should), and the tests that assert wall-clock bounds (stopping a program within one kernel's
# time, the 16 GiB and 4 GiB host-data runs), which measure the sanitizer, not jitexpr; their
# code paths run under memcheck in the other tests of their suites.
set -u
build=${1:-build-gpu}
shift || true
parts=${*:-all}
[ "$parts" = all ] && parts="race memcheck faults diff python"
root=$(cd "$(dirname "$0")/.." && pwd)
cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
limit=${RUN_LIMIT:-200}
par=${JOBS:-1}
budget=${BUDGET:-0}
out=${OUT:-}
if [ ! -x "$cs" ]; then echo "gpu-sanitize: compute-sanitizer not found" >&2; exit 2; fi
long='*TwoToThe28*:*HundredThousand*'
# The order statistics' tests whose racecheck takes minutes (their few-row twins run in race).
quantile_long='*.EveryOperandAndAxisGivesTheCpuBackendsBits/*:*.ARowLongerThanABlockAndEveryElementAtOnce'
timed='CancelGpu.ProgramOfManyKernels*:CancelGpu.ProgramWritingInPlace*:StreamGpu.SixteenGiB*:StreamGpu.AStopDuringTheWholeCopy*'
exclude="CudaFault.*:$long:$timed"
logs=$(mktemp -d /tmp/gpu-sanitize.XXXXXX)
start=$(date +%s)
echo "gpu-sanitize: parts '$parts', $par at once, ${limit} s a run${budget:+, budget ${budget} s}; logs in $logs"

# ---- the runs: one line each in $logs/jobs (tool, label, command as a shell-quoted string)
n=0
add() {  # TOOL LABEL COMMAND...   (RUN_MIN=N before it: this run's limit is at least N s)
  local tool=$1 label=$2 q
  shift 2
  printf -v q '%q ' "$@"
  printf '%s\t%s\t%s\t%s\n' "$tool" "$label" "$q" "${RUN_MIN:-0}" >> "$logs/jobs"
  n=$((n + 1))
}
gtest() {  # TOOL BINARY FILTER [EXCLUDE]  (one run)
  local tool=$1 bin=$2 filter=$3 ex=${4:-$exclude}
  if [ ! -x "$build/$bin" ]; then echo "!! $build/$bin is not built"; printf 'missing\t%s\t-\n' "$bin" >> "$logs/jobs"; return; fi
  add "$tool" "$bin $filter" "$build/$bin" "--gtest_filter=$filter:-$ex" --gtest_brief=1
}
each_test() {  # TOOL BINARY [EXCLUDE [FILTER]]  (one run per test of FILTER, default every test)
  local tool=$1 bin=$2 ex=${3:-$exclude} only=${4:-*} suite="" line
  if [ ! -x "$build/$bin" ]; then echo "!! $build/$bin is not built"; printf 'missing\t%s\t-\n' "$bin" >> "$logs/jobs"; return; fi
  while IFS= read -r line; do
    case $line in
      "  "*) add "$tool" "$bin $suite${line#  }" "$build/$bin" "--gtest_filter=$suite${line#  }:-$ex" --gtest_brief=1 ;;
      *.) suite=$line ;;
    esac
  done < <("$build/$bin" --gtest_list_tests "--gtest_filter=$only:-$ex" 2>/dev/null | sed 's/  *#.*//')
}
# Every GoogleTest executable ctest runs with the label gpu, relative to the build folder.
gpu_binaries() {
  ctest --test-dir "$build" -L gpu --show-only=json-v1 2>/dev/null | python3 -c '
import json, os, sys
b = os.path.realpath(sys.argv[1])
seen = []
for t in json.load(sys.stdin).get("tests", []):
    c = t.get("command") or []
    if c and os.path.realpath(c[0]).startswith(b + "/"):
        p = os.path.relpath(os.path.realpath(c[0]), b)
        if p.startswith("tests/") and p not in seen:  # GoogleTest binaries (not examples, not scripts)
            seen.append(p)
print("\n".join(seen))' "$build"
}
: > "$logs/jobs"
for part in $parts; do
  case $part in
    race)
      # Every kernel kind that shares memory or synchronises a block: reductions, transposed
      # tiles, graphs, scans (block-combined prefixes), mask selection (select + compact) and the
      # order statistics; initcheck over the reductions (a partial read before it is written).
      for tool in racecheck synccheck; do
        gtest "$tool" tests/codegen/test_cuda_exec '*Sum*:*Max*:*Mean*'
        gtest "$tool" tests/api/test_layouts_gpu '*Transposed*'
        gtest "$tool" tests/api/test_pipeline_gpu '*Reduction*:*Graph*'
        gtest "$tool" tests/api/test_mask_gpu '*'
      done
      # The scans under racecheck took over 110 s as one run (H200, 2026-12-06): one run per test.
      each_test racecheck tests/api/test_scans_gpu
      gtest synccheck tests/api/test_scans_gpu '*'
      gtest synccheck tests/api/test_quantile_gpu '*'
      each_test racecheck tests/api/test_quantile_gpu "$exclude:$quantile_long"
      gtest initcheck tests/codegen/test_cuda_exec '*Sum*:*Max*:*Mean*'
      gtest initcheck tests/api/test_reductions_gpu '*'
      gtest initcheck tests/api/test_pipeline_gpu '*Reduction*' ;;
    memcheck)
      bins=$(gpu_binaries)
      [ -n "$bins" ] || bins="tests/api/test_layouts_gpu tests/codegen/test_cuda_exec tests/api/test_pipeline_gpu
        tests/embed/test_dlpack_gpu tests/embed/test_arrow_gpu tests/cache/test_module_cache_gpu tests/cuda/test_cuda_driver
        tests/cuda/test_cuda_hybrid tests/api/test_cancel_gpu tests/api/test_multi_gpu tests/api/test_stream_gpu
        tests/cuda/test_toolkit_gpu"
      for b in $bins; do
        case $b in */test_gpu_faults|*/test_diff_cuda) continue ;; esac
        each_test memcheck "$b"
      done ;;
    faults)
      # One test per run: each compiles its own kernels. The full-disk test's work runs in a
      # death-test child under a 256-byte file-size limit, which binds compute-sanitizer's own
      # files in that process too: followed into the child, memcheck never finished (over 330 s
      # on an H100, 2026-12-06). So memcheck watches the parent only there; the child's kernel
      # (c = a * 3 + 1) is the same code as the memcheck runs of the other suites check.
      each_test memcheck tests/hardening/test_gpu_faults "$exclude:CudaFullDisk.*"
      gtest "memcheck --target-processes application-only" tests/hardening/test_gpu_faults 'CudaFullDisk.*' ;;
    diff)
      for ((k = 0; k < ${DIFF_SHARDS:-2}; k++)); do
        if [ -x "$build/tests/diff/test_diff_cuda" ]; then
          add memcheck "tests/diff/test_diff_cuda shard $k/16" env "JITEXPR_DIFF_SHARD=$k/16" \
            "$build/tests/diff/test_diff_cuda" "--gtest_filter=*:-$exclude" --gtest_brief=1
        fi
      done ;;
    python)
      # The venv of scripts/test-python.sh, else python3 when it imports the package (the GPU
      # session installs it with --target and PYTHONPATH).
      venv=${VENV_DIR:-$root/build-venv}
      py=python3
      [ -x "$venv/bin/python" ] && py=$venv/bin/python
      if "$py" -c "import jitexpr" 2>/dev/null; then
        add memcheck "tests/python/test_gpu.py" "$py" -m pytest -q -p no:cacheprovider "$root/tests/python/test_gpu.py"
      else
        echo "   python: skipped (neither $venv nor python3 imports jitexpr: scripts/test-python.sh makes a venv)"
      fi ;;
    long)
      gtest memcheck tests/hardening/test_gpu_faults 'CudaSplit.HundredThousandTermSumEqualsCpu' 'CudaFault.*'
      gtest memcheck tests/api/test_pipeline_gpu '*TwoToThe28*' 'CudaFault.*'
      # One run per test: the eight 700-row tests as one run passed 490 s (H200, 2026-12-06).
      each_test racecheck tests/api/test_quantile_gpu 'CudaFault.*' "$quantile_long" ;;
    *) echo "gpu-sanitize: unknown part '$part' (race memcheck faults diff python long all)" >&2; exit 2 ;;
  esac
done

# ---- a probe: does compute-sanitizer run on this device at all?
probe_bin=$build/tests/cuda/test_cuda_driver
if [ -x "$probe_bin" ]; then
  first=$("$probe_bin" --gtest_list_tests 2>/dev/null | awk '/^[^ ]/ { s = $1 } /^  / { print s $1; exit }')
  timeout 120 "$cs" --tool memcheck --error-exitcode=1 "$probe_bin" "--gtest_filter=${first:-*}" --gtest_brief=1 \
    > "$logs/probe.log" 2>&1
  if grep -qiE "device not supported|not supported on this|Unable to find injection" "$logs/probe.log"; then
    msg="gpu-sanitize: compute-sanitizer does not support this machine's device: $(grep -iE 'not supported|injection' "$logs/probe.log" | head -2 | tr '\n' ' ')"
    echo "$msg"
    [ -n "$out" ] && mkdir -p "$out" && echo "$msg" > "$out/sanitize-summary.txt"
    exit 3
  fi
fi

# ---- running them, JOBS at once, each within RUN_LIMIT and the budget
# API errors are not memory errors: the driver tests provoke them on purpose, and jitexpr
# turns every one into a typed exception that the tests check.
run_one() {  # INDEX TOOL LABEL COMMAND LIMIT
  local i=$1 tool=$2 label=$3 cmd=$4 lim=$5 t0 rc verdict
  t0=$(date +%s)
  eval "timeout --kill-after=10 $lim $(printf '%q' "$cs") --tool $tool --report-api-errors no --error-exitcode=1 \
    --print-limit 20 $cmd" > "$logs/$i.log" 2>&1
  rc=$?
  case $rc in
    0) verdict=clean ;;
    77) verdict="skipped itself" ;;
    124|137) verdict="TIMED OUT after $lim s" ;;
    *) verdict="ERRORS (rc $rc)" ;;
  esac
  # A suite whose every test skipped (no device, no second GPU) is not "clean".
  if [ $rc = 0 ] && grep -q "SKIPPED" "$logs/$i.log" && ! grep -q "PASSED.*[1-9]" "$logs/$i.log"; then verdict="skipped"; fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$i" "$tool" "$(( $(date +%s) - t0 ))" "$verdict" "$label" > "$logs/$i.result"
}
# Runs with a longer limit of their own start first, so that the others overlap them.
awk -F'\t' '$4 > 0' "$logs/jobs" > "$logs/jobs.sorted"
awk -F'\t' '!($4 > 0)' "$logs/jobs" >> "$logs/jobs.sorted"
i=0
while IFS=$'\t' read -r tool label cmd run_min; do
  i=$((i + 1))
  if [ "$tool" = missing ]; then printf '%s\tmemcheck\t0\tNOT BUILT\t%s\n' "$i" "$label" > "$logs/$i.result"; continue; fi
  while [ "$(jobs -rp | wc -l)" -ge "$par" ]; do wait -n 2>/dev/null || sleep 1; done
  lim=$limit
  [ "${run_min:-0}" -gt "$lim" ] && lim=$run_min
  if [ "$budget" -gt 0 ]; then
    left=$(( start + budget - $(date +%s) ))
    if [ "$left" -lt 30 ]; then printf '%s\t%s\t0\tnot run (budget)\t%s\n' "$i" "$tool" "$label" > "$logs/$i.result"; continue; fi
    [ "$left" -lt "$lim" ] && lim=$left
  fi
  run_one "$i" "$tool" "$label" "$cmd" "$lim" &
done < "$logs/jobs.sorted"
wait

# ---- the summary
summary=$logs/summary.txt
{
  echo "# compute-sanitizer over the GPU suites: $(date -u +%Y-%m-%dT%H:%MZ), $("$cs" --version 2>/dev/null | tail -1)"
  echo "# parts: $parts; $i runs, $par at once, ${limit} s a run${budget:+, budget ${budget} s}; $(( $(date +%s) - start )) s in all"
  for ((k = 1; k <= i; k++)); do
    [ -f "$logs/$k.result" ] && cut -f2- "$logs/$k.result" | awk -F'\t' '{ printf "%-10s %4s s  %-18s %s\n", $1, $2, $3, $4 }'
  done
  for v in clean skipped "skipped itself" ERRORS "TIMED OUT" "not run" "NOT BUILT"; do
    c=$(cat "$logs"/*.result 2>/dev/null | cut -f4 | grep -c "^$v")
    [ "$c" -gt 0 ] && echo "# $v: $c"
  done
  for ((k = 1; k <= i; k++)); do
    [ -f "$logs/$k.result" ] || continue
    case $(cut -f4 "$logs/$k.result") in
      ERRORS*|TIMED*)
        echo "## $(cut -f2 "$logs/$k.result") $(cut -f5 "$logs/$k.result")"
        grep -E "^========|FAILED|Failure|error" "$logs/$k.log" | head -40 ;;
    esac
  done
} > "$summary"
cat "$summary"
if [ -n "$out" ]; then mkdir -p "$out" && cp "$summary" "$out/sanitize-summary.txt"; fi
if cut -f4 "$logs"/*.result 2>/dev/null | grep -qE "^(ERRORS|TIMED OUT|NOT BUILT)"; then
  echo "gpu-sanitize: errors, time-outs or missing suites (see above; logs in $logs)"
  exit 1
fi
if cut -f4 "$logs"/*.result 2>/dev/null | grep -q "^not run"; then
  echo "gpu-sanitize: no errors in what ran; some runs did not fit the budget (see above)"
  exit 4
fi
echo "gpu-sanitize: no errors ($parts)"
exit 0
