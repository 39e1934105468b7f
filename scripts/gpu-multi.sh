#!/usr/bin/env bash
# Issue 22 on the GPU machine, in one call: a Release build of what it needs, the multi-GPU
# tests (those that need two devices skip with a message on one GPU), the C++ and Python device
# tests, and the sharded-throughput benchmark. Results under $OUT (default ./gpu-out).
#
#   scripts/gpu-multi.sh            one H200: device 0 explicit, bad ordinals, shards over {0, 0}
#   on nvidia-h200-x2 the same command runs the two-device tests and shards over {0, 1}
#                                   (the benchmark's ratio: one GPU / both, target >= 1.9)
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
b=build-gpu
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/multi-cmake.log" 2>&1
timeout 300 cmake --build $b -j"$(nproc)" --target test_multi_gpu test_devices test_sharded test_c_api \
  test_dlpack_gpu test_layouts_gpu bench_multi_gpu > "$out/multi-build.log" 2>&1 || { echo "build failed"; tail -30 "$out/multi-build.log"; }
for t in tests/api/test_multi_gpu tests/api/test_devices tests/api/test_sharded tests/embed/test_c_api \
         tests/embed/test_dlpack_gpu tests/api/test_layouts_gpu; do
  timeout 120 $b/$t --gtest_brief=1 > "$out/$(basename $t).log" 2>&1
  echo "$(basename $t): rc=$? $(grep -E 'PASSED|FAILED|SKIPPED' "$out/$(basename $t).log" | tr '\n' ' ')"
done
n=$(nvidia-smi -L 2>/dev/null | wc -l)
devs=0,0
[ "$n" -ge 2 ] && devs=0,1
timeout 120 $b/bench/bench_multi_gpu --devices $devs --json "$out/bench_multi_gpu.json" | tee "$out/bench_multi_gpu.txt"
[ "$n" -ge 2 ] && timeout 60 $b/bench/bench_multi_gpu --devices 0,0 --reps 5 | tee "$out/bench_multi_gpu_one.txt"
# Python: the package built without network (nanobind and scikit-build-core are installed there).
if [ "${PYTHON_TESTS:-1}" = 1 ]; then
  venv=build-gpu-venv
  python3 -m venv --system-site-packages $venv > /dev/null 2>&1
  timeout 300 $venv/bin/python -m pip install -q --no-build-isolation --no-deps . > "$out/multi-pip.log" 2>&1 || echo "pip install failed (see multi-pip.log)"
  (cd tests/python && timeout 240 ../../$venv/bin/python -m pytest -q -p no:cacheprovider test_devices.py \
     test_multi_gpu.py on_dask/test_dask_multi_gpu.py > "../../$out/multi-pytest.log" 2>&1; tail -3 "../../$out/multi-pytest.log")
fi
