#!/usr/bin/env bash
# On the GPU machine: the checks of branch gpu-fixes (issues 23, 19 and 17), results to $OUT
# (default ./gpu-out), at most a handful of small files. Two calls, each under 10 minutes:
#
#   STEPS="build cancel imports" scripts/gpu-fixes.sh     (~5 min: build, stop tests, bench_cancel,
#                                                          the package and the import-order tests)
#   STEPS="sanitize" scripts/gpu-fixes.sh                 (~8 min: compute-sanitizer, BUDGET 450 s)
#
# Steps:
#   build     Release build in build-gpu (kept between calls where the machine is warm)
#   cancel    test_cancel_gpu and test_stream_gpu's stop tests (a program of many kernels, in
#             place and not; a stop during the copies of a program copied whole), bench_cancel
#   imports   the Python package (pip install --target, as gpu-session.sh does), its exported
#             symbols and NEEDED libraries, the toolchain's libstdc++, and tests/python/test_imports.py
#             (jitexpr before PyTorch, with CuPy, and after)
#   sanitize  scripts/gpu-sanitize.sh build-gpu all: memcheck over every GPU test, racecheck and
#             synccheck, 6 at once, within 450 s; summary in $OUT/sanitize-summary.txt
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
steps=${STEPS:-build cancel imports}
has() { case " $steps " in *" $1 "*) return 0;; esac; return 1; }
if has build; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > /tmp/gpu-fixes-cmake.log 2>&1
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
if has imports; then
  {
    echo "# toolchain: $(c++ --version | head -1); libstdc++.so: $(c++ -print-file-name=libstdc++.so); libstdc++.a: $(c++ -print-file-name=libstdc++.a)"
    echo "# LDFLAGS='${LDFLAGS:-}' CXXFLAGS='${CXXFLAGS:-}'"
    c++ -dumpspecs 2>/dev/null | grep -n "static-libstdc\|static-libgcc" | head -5
    echo "# c++ is $(command -v c++) -> $(readlink -f "$(command -v c++)"); $(file -b "$(readlink -f "$(command -v c++)")" | cut -c1-60)"
    c++ -v 2>&1 | grep -o "\-\-with[^ ]*static[^ ]*\|--enable-default-pie\|--prefix=[^ ]*" | head -5
    echo "# NEEDED of a C++ test binary of build-gpu: $(readelf -d build-gpu/tests/api/test_runtime 2>/dev/null | grep NEEDED | grep -o '\[.*\]' | tr '\n' ' ')"
    rm -rf /tmp/jx-site
    timeout 400 python3 -m pip install -q --no-index --no-build-isolation --no-deps --target /tmp/jx-site . > /tmp/gpu-fixes-pip.log 2>&1 \
      || { echo "pip install . failed:"; tail -30 /tmp/gpu-fixes-pip.log; }
    grep -rh "static-libstdc\|version-script=.*_jitexpr" build-py/*/build.ninja 2>/dev/null | grep -o "LINK_FLAGS = .*\|[^ ]*static-libstdc[^ ]*\|[^ ]*version-script=[^ ]*" | sort -u | head -5
    grep -h "removed from\|no shared libstdc" /tmp/gpu-fixes-pip.log build-py/*/CMakeFiles/CMakeOutput.log 2>/dev/null | head -3
    ext=$(ls /tmp/jx-site/jitexpr/_jitexpr*.so 2>/dev/null | head -1)
    echo "# extension: $ext"
    if [ -n "$ext" ]; then
      echo "exported defined dynamic symbols: $(nm -D --defined-only "$ext" | wc -l) (want 1: PyInit__jitexpr)"
      nm -D --defined-only "$ext" | head -5
      readelf -d "$ext" | grep -E "NEEDED|RUNPATH"
    fi
    echo "# import orders (fresh interpreters)"
    for combo in "import jitexpr; import torch" "import jitexpr, cupy; import torch" \
                 "import jitexpr; import cupy; cupy.zeros(3); import torch" "import torch, jitexpr, cupy"; do
      PYTHONPATH=/tmp/jx-site timeout 120 python3 -X faulthandler -c "$combo; print('ok')" > /tmp/gpu-fixes-t.log 2>&1
      echo "[$combo] rc=$? $(tail -1 /tmp/gpu-fixes-t.log | cut -c1-200)"
    done
    echo "# tests/python/test_imports.py test_no_cuda.py"
    (cd tests/python && PYTHONPATH=/tmp/jx-site JITEXPR_DISK_CACHE=0 timeout 200 python3 -m pytest -q -rs -p no:cacheprovider \
       test_imports.py test_no_cuda.py 2>&1 | tail -15)
    echo "# bench/python_gpu.py (imports torch after jitexpr and CuPy)"
    PYTHONPATH=/tmp/jx-site timeout 120 python3 bench/python_gpu.py 2>&1 | tail -30
  } > "$out/imports.txt" 2>&1
  cat "$out/imports.txt"
fi
if has sanitize; then
  OUT=$out JOBS=${JOBS:-6} RUN_LIMIT=${RUN_LIMIT:-240} BUDGET=${BUDGET:-450} \
    timeout 560 scripts/gpu-sanitize.sh build-gpu all > /tmp/gpu-fixes-sanitize.log 2>&1
  echo "gpu-sanitize: rc $?"
  tail -4 /tmp/gpu-fixes-sanitize.log
fi
