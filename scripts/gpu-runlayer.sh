#!/usr/bin/env bash
# Issue 29's GPU check of the run/ layer, in two calls (results to $OUT; STEP=b alone builds what it needs):
#   STEP=a  a Release build of this tree with the Python module, the GPU tests, the package's
#           GPU-facing tests, the differential CUDA suite and the fuzzer on CUDA;
#   STEP=b  the benchmarks of the tree before the run/ layer (.trees/before.tar, a `git archive`
#           of 8e568c1 in a git-ignored folder) built next to this one (this one's benchmarks too,
#           when STEP=a has not built them), then both timed in turn, ROUNDS rounds (default 5,
#           about 90 s each on an H100; none starts after STOP_AFTER seconds, default 480), so
#           that each figure is a median taken from the same minutes; then, with COMPILE=1,
#           bench_compile of each (the host cost of a memory hit).
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
uname -r > "$out/uname.txt"; nvidia-smi -L >> "$out/uname.txt" 2>&1
case ${STEP:-a} in
a)
  t0=$SECONDS
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DJITEXPR_BUILD_PYTHON=ON \
    -Dnanobind_DIR="$(python3 -m nanobind --cmake_dir)" > "$out/cmake.log" 2>&1
  cmake --build build-gpu -j"$(nproc)" -- -k 0 > "$out/build.log" 2>&1 || echo "build: failures, see build.log"
  echo "build: $((SECONDS - t0)) s"; tail -1 "$out/build.log"
  t0=$SECONDS
  timeout 240 ctest --test-dir build-gpu -L gpu -j8 --timeout 200 --output-on-failure > "$out/gpu-tests.log" 2>&1
  echo "ctest -L gpu: $((SECONDS - t0)) s"
  grep -E "tests passed|\*\*\*Failed|Timeout|Not Run" "$out/gpu-tests.log"
  t0=$SECONDS
  (cd tests/python && PYTHONPATH=$PWD/../../build-gpu/python JITEXPR_DISK_CACHE=0 timeout 200 python3 -m pytest -q -rs \
     -p no:cacheprovider test_gpu.py test_dlpack.py test_read_only.py test_lying_producers.py test_api.py \
     test_no_cuda.py test_imports.py test_dates.py test_explain.py test_multi_gpu.py test_devices.py) > "$out/python-tests.log" 2>&1
  echo "python: $((SECONDS - t0)) s"; tail -12 "$out/python-tests.log"
  t0=$SECONDS
  PYTHONPATH=$PWD/build-gpu/python timeout 60 python3 fuzz/differential/fuzz_numpy.py --backend cuda \
    --seed 5 --minutes 0.8 > "$out/fuzz-cuda.log" 2>&1; echo "fuzz cuda: exit $? in $((SECONDS - t0)) s"; tail -5 "$out/fuzz-cuda.log"
  ;;
b)
  t0=$SECONDS
  rm -rf /tmp/runlayer-runs /tmp/before && mkdir -p /tmp/before && tar -xf .trees/before.tar -C /tmp/before
  cmake -S /tmp/before -B /tmp/before/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DJITEXPR_BUILD_TESTS=OFF \
    -DJITEXPR_BUILD_EXAMPLES=OFF > "$out/before-cmake.log" 2>&1
  cmake --build /tmp/before/build -j8 --target bench_gpu bench_stream bench_compile bench_hit \
    > "$out/before-build.log" 2>&1 || { echo "before: build failed"; tail -20 "$out/before-build.log"; } &
  if [ ! -x build-gpu/bench/bench_stream ]; then
    cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DJITEXPR_BUILD_TESTS=OFF \
      -DJITEXPR_BUILD_EXAMPLES=OFF > "$out/cmake.log" 2>&1
    cmake --build build-gpu -j8 --target bench_gpu bench_stream bench_compile bench_hit > "$out/build.log" 2>&1 ||
      echo "after: build failed"
  fi
  wait
  echo "builds: $((SECONDS - t0)) s"
  for ((r = 1; r <= ${ROUNDS:-5}; r++)); do
    for t in before after; do
      if [ $t = before ]; then b=/tmp/before/build; else b=build-gpu; fi
      d=/tmp/runlayer-runs/$t; mkdir -p "$d"
      timeout 40 $b/bench/bench_gpu --benchmark_min_time=0.05 \
        --benchmark_filter='^BM_Axpb/float32/(268435456|16384)/|^BM_HostToDevice/268435456' \
        --benchmark_format=json > "$d/bench_gpu.$r.json" 2> /dev/null
      timeout 30 $b/bench/bench_hit --benchmark_min_time=0.05 --benchmark_filter='EvalHit/real_time/threads:1|RunHit/0' --benchmark_format=json > "$d/bench_hit.$r.json" 2> /dev/null
      timeout 40 $b/bench/bench_stream --gib 2 --reps 1 --json "$d/bench_stream.$r.json" > /dev/null 2>&1
    done
    echo "round $r done at $((SECONDS - t0)) s"
    tar -czf "$out/runs.tgz" -C /tmp/runlayer-runs before after  # (the device returns 8 files: one archive)
    [ $((SECONDS - t0)) -gt "${STOP_AFTER:-480}" ] && { echo "no round after $r: STOP_AFTER"; break; }
  done
  if [ "${COMPILE:-0}" = 1 ]; then
    timeout 100 build-gpu/bench/bench_compile --count 30 --reps 1 --skip-options > "$out/compile-after.txt" 2>&1
    timeout 100 /tmp/before/build/bench/bench_compile --count 30 --reps 1 --skip-options > "$out/compile-before.txt" 2>&1
    grep -E "memory hit|disk hit" "$out/compile-before.txt" "$out/compile-after.txt"
  fi
  python3 scripts/bench-medians.py /tmp/runlayer-runs/before /tmp/runlayer-runs/after | tee "$out/medians.txt"
  ;;
esac
