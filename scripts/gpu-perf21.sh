#!/usr/bin/env bash
# Issue 21's fixed costs on the GPU machine (perf21's part), results in $OUT (default ./gpu-out):
#  - whether this machine has xxhash.h (the disk cache's XXH3-128; else SHA-256 with a message)
#  - the GPU tests of the disk cache, the module cache and the toolkit (no NVRTC on a disk hit)
#  - host cost per call, n = 1024: bench_gpu's BM_Host* (batched as bench/host_cost.hpp, and the
#    old unsynchronised loop as BM_HostSustained*) and bench_compile's memory-hit lines, same call
#  - bench_disk_hit (SHA-256 against XXH3-128 entries) and the fresh-process disk hit
#  - `jitexpr -e` wall time in a fresh process with a warm disk cache, 5 times
# Then perf21b's part (below). About 4 + 4 minutes on one H200.   OUT=... scripts/gpu-perf21.sh
# (PERF21B_ONLY=1 runs only the second part.)
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/cmake.log" 2>&1
grep "jitexpr: disk-cache checksum\|xxhash" "$out/cmake.log"
# PERF21B_ONLY=1: only perf21b's part below (the configure above is shared).
if [ -z "${PERF21B_ONLY:-}" ]; then
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
fi

# ---- perf21b: explain on the GPU, the CLI's streamed host data, fresh-process start-up.
#  - test_explain (CPU golden tests; on a GPU machine the auto-without-CUDA test skips) and the
#    streamed pipeline's GPU tests, through the CLI's Runtime path
#  - `jitexpr explain` of device-free and host-data programs under auto and cuda, with and
#    without --device-memory (explain.txt: look at "placement:", the chunk plan, the cache column)
#  - the CLI streaming host data: c = a*2+b over 2 x 1 GiB of .npy inputs with --backend cuda and
#    --device-memory 512MiB (out-of-core) and under auto (cli_stream.txt: --time's placement)
#  - fresh-process wall: libcuda init + primary context alone (ctypes), `jitexpr -e` tiny eval
#    under auto (host data: stays on the CPU, no context) and under --backend cuda (startup.txt)
cmake --build build-gpu -j"$(nproc)" --target jitexpr_tool test_explain test_stream_gpu example_analytics -- -k 0 >> "$out/build.log" 2>&1 ||
  echo "build (perf21b): failures, see build.log"
timeout 300 ctest --test-dir build-gpu -R 'Explain|Stream' -j4 --timeout 240 --output-on-failure > "$out/tests_perf21b.log" 2>&1
grep -E "tests passed|\*\*\*Failed|Timeout|Skipped" "$out/tests_perf21b.log"
J=build-gpu/tools/jitexpr
cache=$(mktemp -d)
data=$(mktemp -d)
{
  echo "== explain, device-free program, backend cuda, cold then after a run"
  JITEXPR_CACHE_DIR=$cache $J explain --backend cuda -e 'x = 2.5' 'x * 2 + 1'
  JITEXPR_CACHE_DIR=$cache $J --backend cuda -e 'x = 2.5' -e 'x * 2 + 1' > /dev/null
  sleep 2
  JITEXPR_CACHE_DIR=$cache $J explain --backend cuda -e 'x = 2.5' 'x * 2 + 1'
  echo "== explain, 1 MiB of host data, auto"
  JITEXPR_CACHE_DIR=$cache $J explain -e 'a = arange(131072.0)' 'a * 2 + 1'
  echo "== explain, 3 x 512 MiB of host data, auto, then cuda with --device-memory 512MiB"
  JITEXPR_CACHE_DIR=$cache $J explain -e 'a = zeros(134217728, dtype=float32)' -e 'b = zeros(134217728, dtype=float32)' 'c = a * 2 + b'
  JITEXPR_CACHE_DIR=$cache $J explain --backend cuda --device-memory 512MiB -e 'a = zeros(134217728, dtype=float32)' \
    -e 'b = zeros(134217728, dtype=float32)' 'c = a * 2 + b'
  echo "== explain, a reduction along an axis (not streamable), cuda"
  JITEXPR_CACHE_DIR=$cache $J explain --backend cuda -e 'm = zeros((4096, 4096), dtype=float32)' 'mean(m, axis=1)'
} > "$out/explain.txt" 2>&1
cat "$out/explain.txt" | head -120
{
  $J -e 'a = rand(268435456, dtype=float32); b = rand(268435456, dtype=float32)' --save a=$data/a.npy --save b=$data/b.npy
  for mode in "--backend cuda --device-memory 512MiB" "--backend cuda" "--backend auto" "--backend cpu"; do
    echo "== $mode: c = a*2+b over 2 x 1 GiB of .npy inputs, result saved"
    s=$(date +%s%N)
    JITEXPR_CACHE_DIR=$cache $J $mode --time --load a=$data/a.npy --load b=$data/b.npy -e 'c = a*2+b' --save c=$data/c.npy
    echo "wall: $(( ($(date +%s%N) - s) / 1000000 )) ms"
  done
  python3 -c "import numpy as np; a=np.load('$data/a.npy'); b=np.load('$data/b.npy'); c=np.load('$data/c.npy'); print('c == a*2+b:', bool((c == a*np.float32(2)+b).all()))"
} > "$out/cli_stream.txt" 2>&1
cat "$out/cli_stream.txt"
{
  for i in 1 2 3 4 5; do
    s=$(date +%s%N)
    python3 -c "
import ctypes, time
t0 = time.perf_counter()
c = ctypes.CDLL('libcuda.so.1'); assert c.cuInit(0) == 0
t1 = time.perf_counter()
d = ctypes.c_int(); assert c.cuDeviceGet(ctypes.byref(d), 0) == 0
x = ctypes.c_void_p(); assert c.cuDevicePrimaryCtxRetain(ctypes.byref(x), d) == 0
assert c.cuCtxSetCurrent(x) == 0
t2 = time.perf_counter()
print('dlopen + cuInit %.1f ms, primary context %.1f ms' % ((t1 - t0) * 1e3, (t2 - t1) * 1e3))"
    ctx=$(( ($(date +%s%N) - s) / 1000000 ))
    s=$(date +%s%N); python3 -c "pass"; py=$(( ($(date +%s%N) - s) / 1000000 ))
    echo "libcuda init + primary context (python3 with ctypes, less python3 alone ${py} ms): $((ctx - py)) ms"
  done
  JITEXPR_CACHE_DIR=$cache $J --backend cuda -e 'a = arange(1024.0); a * 2 + 1' > /dev/null 2>&1
  sleep 2
  for b in auto cuda; do
    for i in 1 2 3 4 5; do
      s=$(date +%s%N)
      JITEXPR_CACHE_DIR=$cache $J --backend $b -e 'a = arange(1024.0); a * 2 + 1' > /dev/null
      echo "jitexpr --backend $b -e tiny eval, warm disk cache, wall: $(( ($(date +%s%N) - s) / 1000000 )) ms"
    done
  done
  echo "== strace -c of the cuda run"
  JITEXPR_CACHE_DIR=$cache strace -f -c -o "$out/strace_cuda.txt" $J --backend cuda -e 'a = arange(1024.0); a * 2 + 1' > /dev/null 2>&1 &&
    head -25 "$out/strace_cuda.txt"
  echo "== perf stat of both"
  for b in auto cuda; do
    JITEXPR_CACHE_DIR=$cache perf stat -r 5 -e task-clock,page-faults $J --backend $b -e 'a = arange(1024.0); a * 2 + 1' 2>&1 >/dev/null |
      grep -E "task-clock|page-faults|elapsed" | sed "s/^/$b: /"
  done
} > "$out/startup.txt" 2>&1
cat "$out/startup.txt"
timeout 120 build-gpu/examples/example_analytics > "$out/analytics_gpu.txt" 2>&1
timeout 120 env JITEXPR_BACKEND=cpu build-gpu/examples/example_analytics > "$out/analytics_cpu.txt" 2>&1
cat "$out/analytics_gpu.txt" "$out/analytics_cpu.txt"
rm -rf "$cache" "$data"
