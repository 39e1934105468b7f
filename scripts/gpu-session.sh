#!/usr/bin/env bash
# One call on the GPU machine that does what a session needs, writing logs and results to $OUT
# (the device tool's output folder; default ./gpu-out): a Release build, the GPU tests, the
# benchmarks, the peers script when given, the compile benchmark, then compute-sanitizer with the
# time left. Each step has a time limit so that one slow step cannot cost the others.
#
#   scripts/gpu-session.sh [PEERS_SCRIPT]      e.g. .carry/peers_h200.py (copied from ../shared/anchors)
#   STEPS="build tests bench stream interleaved peers compile python dask cancel sanitize sanitize-faults [sanitize-long] [ufuncs] [strings] [ab] [layouts] [profile]"
#   (or STEPS="build sanitize-all": compute-sanitizer over everything within ~8 minutes)
#   ufuncs: issue 16's ufuncs on CUDA on their own (the CUDA differential suite, which holds every
#   new function x dtype, timed; every op compiled for sm_90 by NVRTC); `tests` runs both among
#   the other GPU tests.
#   ab: issue 33's sum(a*b) with two steps a turn (-DJX_REDUCE_TWO_STEPS) against one, interleaved.
#   layouts: issue 33's broadcast, transposed and sum(a*b) against torch.compile, medians of five
#   interleaved rounds (bench/layouts_compare.py).
#   strings: issue 32's string kernels against the CPU (three times: the second with contains()'s
#   warp search, -DJX_CONTAINS_WARP, the third with its edges loaded whole) and bench_strings
#   (GPU predicates against a device copy of the bytes they read).
#   python and dask need the wheels of .whl/ (carried; see docs/python.md) for what the machine lacks.
#   BENCH_FILTER=... as named
#   BUILD_TARGETS=... builds only those targets (STEPS="build strings" with
#   BUILD_TARGETS="bench_strings test_strings_gpu" is the string kernels and their benchmark in about 2 minutes)
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
peers=${1:-}
steps=${STEPS:-build tests bench stream interleaved peers compile python dask cancel sanitize sanitize-faults}
filter=${BENCH_FILTER:-(/268435456/|/16384/|Host|Block)}
has() { case " $steps " in *" $1 "*) return 0;; esac; return 1; }
if has build; then
  # BUILD_TARGETS="bench_strings test_strings_gpu": only those (a short call on a fresh machine,
  # e.g. STEPS="build strings" when machines are scarce); everything otherwise.
  # The lent machine has no xxhash.h, so its builds checksum disk-cache entries with SHA-256
  # (0.2 ms more a disk hit than the wheels' XXH3): a copy carried in .carry/xxh/ is used.
  xxh=()
  [ -f .carry/xxh/xxhash.h ] && xxh=("-DJITEXPR_XXHASH_INCLUDE_DIR=$PWD/.carry/xxh")  # cp /usr/include/xxhash.h .carry/xxh/
  # PYTHON_MODULE=1: the extension module too (build-gpu/python), for scripts/gpu-profile.sh's
  # steps after this script without a build of their own.
  py=()
  [ "${PYTHON_MODULE:-0}" = 1 ] && py=(-DJITEXPR_BUILD_PYTHON=ON "-Dnanobind_DIR=$(python3 -m nanobind --cmake_dir)")
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release ${xxh[@]+"${xxh[@]}"} ${py[@]+"${py[@]}"} \
    > "$out/cmake.log" 2>&1
  grep "disk-cache checksum" "$out/cmake.log"
  # shellcheck disable=SC2086
  cmake --build build-gpu -j"$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} -- -k 0 > "$out/build.log" 2>&1 \
    || echo "build: failures, see build.log"
  tail -1 "$out/build.log"
fi
if has tests; then
  # The longest GPU test (2-3 minutes on a slow host) runs beside the others from the start, so
  # that the step's time is the longer of the two, not their sum.
  diff_test=DifferentialNumPy.CudaBackendAgrees
  timeout 280 build-gpu/tests/diff/test_diff_cuda --gtest_filter="$diff_test" > "$out/gpu-diff-test.log" 2>&1 &
  diff_pid=$!
  timeout 270 ctest --test-dir build-gpu -L gpu -E "^$diff_test\$" -j8 --timeout 200 --output-on-failure \
    > "$out/gpu-tests.log" 2>&1
  grep -E "tests passed|\*\*\*Failed|Timeout" "$out/gpu-tests.log"
  wait "$diff_pid"; echo "$diff_test: exit $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)" "$out/gpu-diff-test.log"
fi
if has profile; then
  # Where a memory hit's host time goes (issue 33, item 2): bench_gpu's per-call rows under
  # gperftools' sampling profiler, the eval beside the bare launch. The lent machine has no
  # gperftools: carry it (mkdir -p .carry/prof && cp /usr/lib/x86_64-linux-gnu/libprofiler.so.0
  # /lib/x86_64-linux-gnu/libunwind.so.8 /usr/bin/google-pprof .carry/prof/).
  if [ -f .carry/prof/libprofiler.so.0 ]; then
    for b in HostOverheadPerEval HostBareLaunch; do
      timeout 90 env CPUPROFILE="$out/$b.prof" CPUPROFILE_FREQUENCY=4000 LD_PRELOAD="$PWD/.carry/prof/libprofiler.so.0" \
        LD_LIBRARY_PATH="$PWD/.carry/prof" build-gpu/bench/bench_gpu --benchmark_filter="^BM_$b/" \
        --benchmark_repetitions=12 > "$out/profile-$b.txt" 2>&1
      perl .carry/prof/google-pprof --text build-gpu/bench/bench_gpu "$out/$b.prof" > "$out/profile-$b-self.txt" 2>&1
      perl .carry/prof/google-pprof --text --cum build-gpu/bench/bench_gpu "$out/$b.prof" > "$out/profile-$b-cum.txt" 2>&1
      echo "## $b"; grep median "$out/profile-$b.txt" | cut -c1-110
      head -28 "$out/profile-$b-self.txt" | cut -c1-150
      echo "## $b, inclusive"
      grep -E "jit::|cuLaunchKernel|::BM_|malloc|free|mutex" "$out/profile-$b-cum.txt" | head -40 | cut -c1-150
    done
  else
    echo "profile: no .carry/prof/libprofiler.so.0 (see the comment above)"
  fi
fi
if has ufuncs; then
  t0=$SECONDS
  timeout 300 build-gpu/tests/diff/test_diff_cuda > "$out/diff-cuda.log" 2>&1
  rc=$?
  echo "test_diff_cuda: exit $rc in $((SECONDS - t0)) s"; tail -3 "$out/diff-cuda.log"
  timeout 200 build-gpu/tests/cpu/test_semantics_nvrtc > "$out/semantics-nvrtc.log" 2>&1; echo "test_semantics_nvrtc: exit $?"
  tail -3 "$out/semantics-nvrtc.log"
fi
if has strings; then
  # Issue 32: the string kernels against the CPU (test_strings_gpu, also in `tests`), then the
  # string predicates against a device copy of the bytes they read (goal: half its GB/s or more).
  timeout 200 build-gpu/tests/api/test_strings_gpu > "$out/strings-gpu-tests.log" 2>&1; echo "test_strings_gpu: exit $?"
  tail -3 "$out/strings-gpu-tests.log"
  # The whole suite again with contains()'s warp search (dsl/semantics.h, an option until measured
  # faster: bench_strings times both in one process).
  JITEXPR_NVRTC_OPTIONS=-DJX_CONTAINS_WARP timeout 200 build-gpu/tests/api/test_strings_gpu \
    > "$out/strings-gpu-tests-warp.log" 2>&1; echo "test_strings_gpu -DJX_CONTAINS_WARP: exit $?"
  tail -3 "$out/strings-gpu-tests-warp.log"
  # And with its edge blocks loaded whole (-DJX_CONTAINS_WHOLE_BLOCKS, the second experiment).
  JITEXPR_NVRTC_OPTIONS="-DJX_CONTAINS_WARP -DJX_CONTAINS_WHOLE_BLOCKS" timeout 200 build-gpu/tests/api/test_strings_gpu \
    > "$out/strings-gpu-tests-whole.log" 2>&1; echo "test_strings_gpu, whole blocks: exit $?"
  tail -3 "$out/strings-gpu-tests-whole.log"
  timeout 300 build-gpu/bench/bench_strings --rows 100000000 --reps 15 > "$out/bench-strings.txt" 2>&1
  cat "$out/bench-strings.txt"
fi
if has ab; then
  # Issue 33 item 1: sum(a*b) with two steps a turn (-DJX_REDUCE_TWO_STEPS, codegen/emit_reduce.cpp)
  # against one, four interleaved rounds in one process each, then the reduction tests with it.
  for r in 1 2 3 4; do
    for opt in "" -DJX_REDUCE_TWO_STEPS; do
      JITEXPR_NVRTC_OPTIONS="$opt" timeout 40 build-gpu/bench/bench_gpu --benchmark_filter='^BM_SumOfProduct/268435456' \
        --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>/dev/null | grep median |
        sed "s/^/round $r [${opt:-one step}] /"
    done
  done | tee "$out/sum-two-steps.txt"
  JITEXPR_NVRTC_OPTIONS=-DJX_REDUCE_TWO_STEPS timeout 150 build-gpu/tests/api/test_reductions_gpu \
    > "$out/reductions-two-steps.log" 2>&1; echo "test_reductions_gpu -DJX_REDUCE_TWO_STEPS: exit $?"
  tail -1 "$out/reductions-two-steps.log"
fi
if has bench; then
  timeout 150 build-gpu/bench/bench_gpu --benchmark_min_time=0.1s --benchmark_filter="$filter" \
    --benchmark_out="$out/bench_gpu.json" --benchmark_out_format=json > "$out/bench_gpu.txt" 2>&1
  JITEXPR_STAGING=direct timeout 60 build-gpu/bench/bench_gpu --benchmark_filter='HostToDevice|DeviceToHost' \
    > "$out/bench_transfers_direct.txt" 2>&1
  grep -E "^BM" "$out/bench_gpu.txt" "$out/bench_transfers_direct.txt" | grep -v "/16384/manual_time.*G/s=[0-9.]*G" | cut -c1-150
fi
if has stream; then
  # Host data through the GPU: the streaming benchmark (its tests ran with the gpu label above).
  timeout 240 build-gpu/bench/bench_stream --gib 8 --reps 3 --json "$out/bench_stream.json" > "$out/bench_stream.txt" 2>&1
  cat "$out/bench_stream.txt"
fi
if has interleaved; then
  # The transcendental benchmarks next to their reference, five repetitions each in random order:
  # single passes at boost clocks move by several percent, so ratios come from these medians.
  timeout 90 build-gpu/bench/bench_gpu --benchmark_min_time=0.2s --benchmark_repetitions=5 \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
    --benchmark_filter='ReferenceTranscendental|^BM_Transcendental/|TranscendentalInto|ReferenceAxpbFloat4/268435456|^BM_Axpb/float32/268435456' \
    --benchmark_out="$out/interleaved.json" --benchmark_out_format=json > "$out/interleaved.txt" 2>&1
  grep median "$out/interleaved.txt" | cut -c1-120
fi
if has layouts; then
  timeout 240 python3 bench/layouts_compare.py build-gpu/bench/bench_gpu "$out/layouts.json" > "$out/layouts.txt" 2>&1
  cat "$out/layouts.txt"
fi
if has peers && [ -n "$peers" ]; then
  timeout 150 python3 "$peers" > "$out/peers.txt" 2>&1
  cat "$out/peers.txt"
fi
if has compile; then
  timeout 120 build-gpu/bench/bench_compile --count 50 --reps 1 --skip-options > "$out/compile.txt" 2>&1
  cat "$out/compile.txt"
fi
if has python || has dask; then
  # The package from this tree into a venv that sees the machine's NumPy/CuPy/PyTorch, the wheels
  # of .whl/ (dask, distributed, numexpr, ...) on PYTHONPATH.
  if ls .whl/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  fi
  # Into a folder of its own on PYTHONPATH (the machine's Python is not a venv; its NumPy, CuPy,
  # PyTorch, nanobind and scikit-build-core are used as they are).
  rm -rf /tmp/jx-site
  timeout 300 python3 -m pip install -q --no-index --no-build-isolation --no-deps --target /tmp/jx-site . > "$out/pip.log" 2>&1 \
    || { echo "python: pip install . failed:"; tail -20 "$out/pip.log"; }
  export PYTHONPATH=/tmp/jx-site${PYTHONPATH:+:$PYTHONPATH}
fi
if has python; then
  (cd tests/python && JITEXPR_DISK_CACHE=0 timeout 240 python3 -m pytest -q -rs -p no:cacheprovider \
     test_gpu.py test_dlpack.py test_api.py test_no_cuda.py test_imports.py) > "$out/python-tests.log" 2>&1
  tail -15 "$out/python-tests.log"
  timeout 120 python3 bench/python_gpu.py --bench-gpu build-gpu/bench/bench_gpu --json "$out/python-gpu.json" \
    > "$out/python-gpu.txt" 2>&1
  cat "$out/python-gpu.txt"
  # A fresh process on a warm disk cache: the wall time of a tiny eval (issue 21's first row).
  d=$(mktemp -d); JITEXPR_CACHE_DIR=$d build-gpu/tools/jitexpr -e 'c = arange(4.0) * 2' > /dev/null 2>&1
  for i in 1 2 3 4 5; do /usr/bin/time -f "jitexpr -e warm-cache wall %e s" env JITEXPR_CACHE_DIR=$d build-gpu/tools/jitexpr \
    -e 'c = arange(4.0) * 2' > /dev/null; done 2>&1 | tee "$out/fresh-wall.txt"
fi
if has dask; then
  # jitexpr.dask on dask-cuda (issue 20): the GPU tests (a new worker with the bundle compiles
  # nothing; CuPy results from CuPy's allocator), then the benchmark at 2^30 float64 in one chunk
  # and in 8, each compute split into phases next to an empty compute of the same shape.
  (cd tests/python && timeout 300 python3 -m pytest -q -rs -p no:cacheprovider \
     on_dask/test_dask_gpu.py on_dask/test_dask_tasks.py on_dask/test_dask_array.py) > "$out/dask-tests.log" 2>&1
  tail -8 "$out/dask-tests.log"
  for c in 30 27; do
    timeout 200 python3 bench/dask_compare.py --gpu --log2n 30 --log2chunk $c --dtype float64 \
      --out "$out/dask-gpu-chunk$c.txt" --json "$out/dask-gpu-chunk$c.json" > "$out/dask-gpu-chunk$c.log" 2>&1 \
      || { echo "dask_compare chunk 2^$c failed:"; tail -20 "$out/dask-gpu-chunk$c.log"; }
    cat "$out/dask-gpu-chunk$c.txt" 2>/dev/null
  done
  # 8 chunks with 4 worker threads: how much of the per-task cost overlaps
  timeout 120 python3 bench/dask_compare.py --gpu --log2n 30 --log2chunk 27 --threads 4 --dtype float64 \
    --out "$out/dask-gpu-chunk27-threads4.txt" > "$out/dask-gpu-chunk27-threads4.log" 2>&1 \
    || { echo "dask_compare --threads 4 failed:"; tail -20 "$out/dask-gpu-chunk27-threads4.log"; }
  cat "$out/dask-gpu-chunk27-threads4.txt" 2>/dev/null
fi
if has cancel; then
  timeout 120 build-gpu/tests/api/test_cancel_gpu > "$out/cancel-gpu.log" 2>&1; grep -E "after cancel|PASSED|FAILED|SKIPPED" "$out/cancel-gpu.log"
  timeout 120 build-gpu/bench/bench_cancel --gpu-only --trials 9 > "$out/bench-cancel-gpu.txt" 2>&1; cat "$out/bench-cancel-gpu.txt"
fi
# compute-sanitizer in two steps of their own (each run inside has its own limit and prints its
# time): the race/sync checks and the quick suites, then the fault suite, a sample of the
# differential cases and the Python binding. STEPS=sanitize-long adds the 2^28 and 100,000-term cases.
if has sanitize; then
  RUN_LIMIT=120 timeout 280 scripts/gpu-sanitize.sh build-gpu race memcheck > "$out/sanitize.log" 2>&1
  grep -E "^==|^   |^!!|ERROR SUMMARY|RACECHECK SUMMARY|no errors" "$out/sanitize.log"
fi
if has sanitize-faults; then
  RUN_LIMIT=150 timeout 280 scripts/gpu-sanitize.sh build-gpu faults diff python > "$out/sanitize-faults.log" 2>&1
  grep -E "^==|^   |^!!|ERROR SUMMARY|no errors" "$out/sanitize-faults.log"
fi
# Everything under compute-sanitizer in one step of about 8 minutes (memcheck over every GPU
# test, one process per test, 6 at once; racecheck and synccheck; the faults, a differential
# sample and the Python tests), whatever fits the budget, summarised in $out/sanitize-summary.txt.
if has sanitize-all; then
  OUT=$out JOBS=6 RUN_LIMIT=240 BUDGET=450 timeout 560 scripts/gpu-sanitize.sh build-gpu all > "$out/sanitize-all.log" 2>&1
  echo "sanitize-all: rc $? (0 clean, 1 errors, 3 device not supported, 4 budget short)"
  grep -E "^# |ERRORS|TIMED|NOT BUILT|not run" "$out/sanitize-summary.txt" | head -40
fi
if has sanitize-long; then
  RUN_LIMIT=280 timeout 580 scripts/gpu-sanitize.sh build-gpu long > "$out/sanitize-long.log" 2>&1
  grep -E "^==|^   |^!!|ERROR SUMMARY|no errors" "$out/sanitize-long.log"
fi
