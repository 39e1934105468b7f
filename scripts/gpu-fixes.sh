#!/usr/bin/env bash
# On the GPU machine: the checks of branch gpu-fixes (issues 23, 19 and 17), results to $OUT
# (default ./gpu-out), a few small files. Two calls, each well under 10 minutes:
#
#   STEPS="build cancel imports" scripts/gpu-fixes.sh     (~6 min: build with the Python extension,
#                                                          the stop tests, bench_cancel, the import orders)
#   STEPS="sanitize" scripts/gpu-fixes.sh                 (~8 min: compute-sanitizer, BUDGET 450 s)
#
# Steps:
#   build     Release build in build-gpu with -DJITEXPR_BUILD_PYTHON=ON (the extension lands in
#             build-gpu/python, PYTHONPATH-ready: no second build of the library for pip)
#   cancel    test_cancel_gpu and test_stream_gpu's stop tests (a program of many kernels, in
#             place and not; a stop during the copies of a program copied whole), bench_cancel
#   imports   the extension's exported symbols and NEEDED libraries, the toolchain's libstdc++,
#             the import orders that aborted, tests/python/test_imports.py and test_no_cuda.py,
#             bench/python_gpu.py (it imports torch after jitexpr and CuPy)
#   pip       the same extension as `pip install --no-build-isolation --target` builds it (as
#             gpu-session.sh's python step does: a second build of the library, ~3 min), checked
#             the same way
#   sanitize  scripts/gpu-sanitize.sh build-gpu all: memcheck over every GPU test, racecheck and
#             synccheck, 6 at once, within 450 s; summary in $OUT/sanitize-summary.txt
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
steps=${STEPS:-build cancel imports}
has() { case " $steps " in *" $1 "*) return 0;; esac; return 1; }
if has build; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DJITEXPR_BUILD_PYTHON=ON > /tmp/gpu-fixes-cmake.log 2>&1
  grep -E "jitexpr: .*(libstdc|static)" /tmp/gpu-fixes-cmake.log
  timeout 300 cmake --build build-gpu -j"$(nproc)" -- -k 0 > /tmp/gpu-fixes-build.log 2>&1 \
    || { echo "build: failures"; grep -E "error|FAILED" /tmp/gpu-fixes-build.log | head -20 | tee "$out/build-errors.txt"; }
  tail -1 /tmp/gpu-fixes-build.log
fi
if has cancel; then
  {
    echo "# test_cancel_gpu"
    timeout 150 build-gpu/tests/api/test_cancel_gpu 2>&1 | grep -E "whole program|after cancel|OK \]|FAILED|Failure|Expected|Which is|ran to its end|PASSED|SKIPPED|error"
    echo "# test_stream_gpu (stops, copied whole)"
    timeout 150 build-gpu/tests/api/test_stream_gpu --gtest_filter='*Stop*:*CopiedWhole*' 2>&1 \
      | grep -E "OK \]|FAILED|Failure|Expected|Which is|PASSED|SKIPPED|error"
    echo "# bench_cancel --gpu-only"
    timeout 120 build-gpu/bench/bench_cancel --gpu-only --trials 9 2>&1
  } > "$out/cancel.txt" 2>&1
  cat "$out/cancel.txt"
fi
# The extension at $1 (a package folder on PYTHONPATH $2), checked: exports, NEEDED, import orders, tests.
check_extension() {
  local site=$1 ext
  ext=$(ls "$site"/jitexpr/_jitexpr*.so 2>/dev/null | head -1)
  echo "# extension: $ext"
  [ -n "$ext" ] || return
  echo "exported defined dynamic symbols: $(nm -D --defined-only "$ext" | wc -l) (want 1: PyInit__jitexpr)"
  nm -D --defined-only "$ext" | head -5
  readelf -d "$ext" | grep -E "NEEDED|RUNPATH"
  echo "# import orders (fresh interpreters)"
  for combo in "import jitexpr; import torch" "import jitexpr, cupy; import torch" \
               "import jitexpr; import cupy; cupy.zeros(3); import torch" "import torch, jitexpr, cupy"; do
    PYTHONPATH=$site timeout 120 python3 -X faulthandler -c "$combo; print('ok')" > /tmp/gpu-fixes-t.log 2>&1
    echo "[$combo] rc=$? $(tail -1 /tmp/gpu-fixes-t.log | cut -c1-200)"
  done
  echo "# tests/python/test_imports.py test_no_cuda.py"
  (cd tests/python && PYTHONPATH=$site JITEXPR_DISK_CACHE=0 timeout 200 python3 -m pytest -q -rs -p no:cacheprovider \
     test_imports.py test_no_cuda.py 2>&1 | tail -12)
}
toolchain() {
  echo "# toolchain: $(c++ --version | head -1); libstdc++.so: $(c++ -print-file-name=libstdc++.so); libstdc++.a: $(c++ -print-file-name=libstdc++.a)"
  echo "# c++ is $(command -v c++) -> $(readlink -f "$(command -v c++)")"
  c++ -v 2>&1 | grep -o -- "--with[^ ]*static[^ ]*\|--enable-default-pie\|--prefix=[^ ]*" | head -5
  c++ -dumpspecs 2>/dev/null | grep -n "static-libstdc\|static-libgcc" | head -5
  echo "# LDFLAGS='${LDFLAGS:-}' CXXFLAGS='${CXXFLAGS:-}'"
  echo "# NEEDED of a C++ test binary: $(readelf -d build-gpu/tests/api/test_runtime 2>/dev/null | grep NEEDED | grep -o '\[.*\]' | tr '\n' ' ')"
  grep -h "LINK_FLAGS\|LINK_LIBRARIES" -A0 build-gpu/build.ninja 2>/dev/null | grep -m3 "static-libstdc" | cut -c1-200
  grep -A3 "^build python/_jitexpr" build-gpu/build.ninja 2>/dev/null | grep "LINK_FLAGS" | cut -c1-300
}
if has imports; then
  {
    toolchain
    check_extension "$PWD/build-gpu/python"
    echo "# bench/python_gpu.py (imports torch after jitexpr and CuPy)"
    PYTHONPATH=$PWD/build-gpu/python timeout 150 python3 bench/python_gpu.py --bench-gpu build-gpu/bench/bench_gpu 2>&1 | tail -30
  } > "$out/imports.txt" 2>&1
  cat "$out/imports.txt"
fi
if has pip; then
  {
    rm -rf /tmp/jx-site
    timeout 400 python3 -m pip install -q --no-index --no-build-isolation --no-deps --target /tmp/jx-site . > /tmp/gpu-fixes-pip.log 2>&1 \
      || { echo "pip install . failed:"; tail -30 /tmp/gpu-fixes-pip.log; }
    grep -h "jitexpr: .*libstdc" build-py/*/CMakeFiles/CMakeConfigureLog.yaml /tmp/gpu-fixes-pip.log 2>/dev/null | head -3
    grep -A3 "^build python/_jitexpr" build-py/*/build.ninja 2>/dev/null | grep "LINK_FLAGS" | cut -c1-300
    check_extension /tmp/jx-site
  } > "$out/pip.txt" 2>&1
  cat "$out/pip.txt"
fi
if has sanitize; then
  OUT=$out JOBS=${JOBS:-6} RUN_LIMIT=${RUN_LIMIT:-240} BUDGET=${BUDGET:-450} PYTHONPATH=$PWD/build-gpu/python \
    timeout 560 scripts/gpu-sanitize.sh build-gpu all > /tmp/gpu-fixes-sanitize.log 2>&1
  echo "gpu-sanitize: rc $?"
  tail -4 /tmp/gpu-fixes-sanitize.log
fi
