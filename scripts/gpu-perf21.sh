#!/usr/bin/env bash
# Issue 21's fixed costs on the GPU machine (perf21's part), results in $OUT (default ./gpu-out):
#  - whether this machine has xxhash.h (the disk cache's XXH3-128; else SHA-256 with a message)
#  - the GPU tests of the disk cache, the module cache and the toolkit (no NVRTC on a disk hit)
#  - host cost per call, n = 1024: bench_gpu's BM_Host* (batched as bench/host_cost.hpp, and the
#    old unsynchronised loop as BM_HostSustained*) and bench_compile's memory-hit lines, same call
#  - bench_disk_hit (SHA-256 against XXH3-128 entries) and the fresh-process disk hit
#  - `jitexpr -e` wall time in a fresh process with a warm disk cache, 5 times
# About 4 minutes on one H200.   OUT=... scripts/gpu-perf21.sh
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/cmake.log" 2>&1
grep "jitexpr: disk-cache checksum\|xxhash" "$out/cmake.log"
cmake --build build-gpu -j"$(nproc)" --target test_cache test_module_cache_gpu test_toolkit_gpu test_toolkit \
  bench_gpu bench_compile bench_disk_hit jitexpr_tool -- -k 0 > "$out/build.log" 2>&1 || echo "build: failures, see build.log"
tail -1 "$out/build.log"
timeout 200 ctest --test-dir build-gpu -R 'CacheSafety|DiskCache|GpuModuleCache|ModuleCache|GpuToolkit|ToolkitLoad' \
  -j8 --timeout 120 --output-on-failure > "$out/tests.log" 2>&1
grep -E "tests passed|\*\*\*Failed|Timeout" "$out/tests.log"
timeout 120 build-gpu/bench/bench_gpu --benchmark_min_time=0.2s --benchmark_repetitions=3 \
  --benchmark_filter='Host(Overhead|BareLaunch|Sustained)' --benchmark_out="$out/bench_gpu_host.json" \
  --benchmark_out_format=json > "$out/bench_gpu_host.txt" 2>&1
grep -E "^BM" "$out/bench_gpu_host.txt" | cut -c1-120
timeout 200 build-gpu/bench/bench_compile --count 10 --reps 1 --skip-options > "$out/bench_compile.txt" 2>&1
grep -E "memory hit|disk hit" "$out/bench_compile.txt"
timeout 60 build-gpu/bench/bench_disk_hit > "$out/bench_disk_hit.txt" 2>&1
cat "$out/bench_disk_hit.txt"
# Fresh processes, warm disk cache: the first run fills it, the next five are timed.
cache=$(mktemp -d)
{
  JITEXPR_CACHE_DIR=$cache build-gpu/tools/jitexpr --backend cuda -e 'a = arange(1024.0); a * 2 + 1' > /dev/null 2>&1
  sleep 2  # the first run's background compiles reached the disk
  for i in 1 2 3 4 5; do
    s=$(date +%s%N)
    JITEXPR_CACHE_DIR=$cache build-gpu/tools/jitexpr --backend cuda -e 'a = arange(1024.0); a * 2 + 1' > /dev/null
    echo "jitexpr -e, warm disk cache, wall: $(( ($(date +%s%N) - s) / 1000000 )) ms"
  done
} > "$out/cli_wall.txt" 2>&1
cat "$out/cli_wall.txt"
rm -rf "$cache"
