#!/usr/bin/env bash
# One device call that checks a change on the GPU machine within its 10 minutes: a Release build
# with the Python extension in the build tree (no second build by pip), the gpu-labelled tests,
# the package's GPU-facing tests from the build tree, then compute-sanitizer's race part
# (gpu-sanitize.sh part `race`: racecheck, synccheck and initcheck of the kernels that share
# memory) within SANITIZE_BUDGET seconds (default 200). Logs go to $OUT.
#   scripts/gpu-verify.sh            (the wheels of .whl/, carried, supply dask/distributed/numexpr)
#   PY_TESTS="test_gpu.py ..."       the Python test files (relative to tests/python)
#   SANITIZE=0                       leave the sanitizer runs out
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
uname -r > "$out/uname.txt"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DJITEXPR_BUILD_PYTHON=ON \
  -Dnanobind_DIR="$(python3 -m nanobind --cmake_dir)" > "$out/cmake.log" 2>&1
cmake --build build-gpu -j"$(nproc)" -- -k 0 > "$out/build.log" 2>&1 || echo "build: failures, see build.log"
tail -1 "$out/build.log"
timeout 240 ctest --test-dir build-gpu -L gpu -j8 --timeout 200 --output-on-failure > "$out/gpu-tests.log" 2>&1
grep -E "tests passed|\*\*\*Failed|Timeout|Not Run" "$out/gpu-tests.log"
py_tests=${PY_TESTS:-test_gpu.py test_dlpack.py test_read_only.py test_lying_producers.py test_api.py test_no_cuda.py test_imports.py on_dask/test_dask_gpu.py}
(cd tests/python && PYTHONPATH=$PWD/../../build-gpu/python${PYTHONPATH:+:$PYTHONPATH} JITEXPR_DISK_CACHE=0 \
   timeout 200 python3 -m pytest -q -rs -p no:cacheprovider $py_tests) > "$out/python-tests.log" 2>&1
tail -12 "$out/python-tests.log"
if [ "${SANITIZE:-1}" = 1 ]; then
  # The budget ends the runs that would start late; the summary says which did not run.
  OUT=$out/sanitize JOBS=6 BUDGET=${SANITIZE_BUDGET:-200} RUN_LIMIT=${SANITIZE_BUDGET:-200} \
    timeout $(( ${SANITIZE_BUDGET:-200} + 60 )) scripts/gpu-sanitize.sh build-gpu race > "$out/sanitize.log" 2>&1
  [ -f "$out/sanitize/sanitize-summary.txt" ] && cat "$out/sanitize/sanitize-summary.txt"
fi
exit 0
