#!/usr/bin/env bash
# Issue 19's GPU speed figures in one call on the GPU machine, into $OUT (default ./gpu-out):
# bench_gpu (Release, for the same-run C++ eval figure), the package from this tree, the Python
# GPU tests (CuPy, PyTorch, DLPack), then bench/python_gpu.py: host cost per call at n = 1024
# against CuPy's ElementwiseKernel with CuPy and torch inputs, and bandwidth at 2^28 against the
# C++ eval, with the verdicts. About 5 minutes on one H200 (at most 570 s: each step has a limit);
# no network.
#
#   OUT=... scripts/gpu-py-fast.sh
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/cmake.log" 2>&1
timeout 180 cmake --build build-gpu -j"$(nproc)" --target bench_gpu > "$out/build.log" 2>&1 \
  || { echo "bench_gpu: build failed, see build.log"; tail -20 "$out/build.log"; }
rm -rf /tmp/jx-site
timeout 180 python3 -m pip install -q --no-index --no-build-isolation --no-deps --target /tmp/jx-site . > "$out/pip.log" 2>&1 \
  || { echo "python: pip install . failed:"; tail -20 "$out/pip.log"; }
export PYTHONPATH=/tmp/jx-site${PYTHONPATH:+:$PYTHONPATH}
(cd tests/python && JITEXPR_DISK_CACHE=0 timeout 80 python3 -m pytest -q -rs -p no:cacheprovider \
   test_gpu.py test_dlpack.py test_api.py) > "$out/python-tests.log" 2>&1
tail -8 "$out/python-tests.log"
timeout 130 python3 bench/python_gpu.py --bench-gpu build-gpu/bench/bench_gpu --json "$out/python-gpu.json" \
  > "$out/python-gpu.txt" 2>&1
cat "$out/python-gpu.txt"
