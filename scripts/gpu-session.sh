#!/usr/bin/env bash
# One call on the GPU machine that does what a session needs, writing logs and results to $OUT
# (the device tool's output folder; default ./gpu-out): a Release build, the GPU tests, the
# benchmarks, the peers script when given, the compile benchmark, then compute-sanitizer with the
# time left. Each step has a time limit so that one slow step cannot cost the others.
#
#   scripts/gpu-session.sh [PEERS_SCRIPT]      e.g. .carry/peers_h200.py (copied from ../shared/anchors)
#   STEPS="build tests bench interleaved peers compile sanitize sanitize-faults [sanitize-long]"
#   BENCH_FILTER=... as named
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
peers=${1:-}
steps=${STEPS:-build tests bench interleaved peers compile sanitize sanitize-faults}
filter=${BENCH_FILTER:-(/268435456/|/16384/|Host|Block)}
has() { case " $steps " in *" $1 "*) return 0;; esac; return 1; }
if has build; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/cmake.log" 2>&1
  cmake --build build-gpu -j"$(nproc)" -- -k 0 > "$out/build.log" 2>&1 || echo "build: failures, see build.log"
  tail -1 "$out/build.log"
fi
if has tests; then
  timeout 240 ctest --test-dir build-gpu -L gpu -j8 --timeout 200 --output-on-failure > "$out/gpu-tests.log" 2>&1
  grep -E "tests passed|\*\*\*Failed|Timeout" "$out/gpu-tests.log"
fi
if has bench; then
  timeout 150 build-gpu/bench/bench_gpu --benchmark_min_time=0.1s --benchmark_filter="$filter" \
    --benchmark_out="$out/bench_gpu.json" --benchmark_out_format=json > "$out/bench_gpu.txt" 2>&1
  JITEXPR_STAGING=direct timeout 60 build-gpu/bench/bench_gpu --benchmark_filter='HostToDevice|DeviceToHost' \
    > "$out/bench_transfers_direct.txt" 2>&1
  grep -E "^BM" "$out/bench_gpu.txt" "$out/bench_transfers_direct.txt" | grep -v "/16384/manual_time.*G/s=[0-9.]*G" | cut -c1-150
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
if has peers && [ -n "$peers" ]; then
  timeout 150 python3 "$peers" > "$out/peers.txt" 2>&1
  cat "$out/peers.txt"
fi
if has compile; then
  timeout 120 build-gpu/bench/bench_compile --count 50 --reps 1 --skip-options > "$out/compile.txt" 2>&1
  cat "$out/compile.txt"
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
if has sanitize-long; then
  RUN_LIMIT=280 timeout 580 scripts/gpu-sanitize.sh build-gpu long > "$out/sanitize-long.log" 2>&1
  grep -E "^==|^   |^!!|ERROR SUMMARY|no errors" "$out/sanitize-long.log"
fi
