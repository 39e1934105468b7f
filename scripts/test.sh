#!/usr/bin/env bash
# Builds jitexpr and runs every test. GPU tests (label `gpu`) skip, saying so, without a device.
#   scripts/test.sh                 Release build in build/
#   BUILD_DIR=build-asan SANITIZE=1 scripts/test.sh     AddressSanitizer + UBSan build
#   WERROR=0 scripts/test.sh        warnings in jitexpr's code stay warnings (by default they are
#                                   errors here and in CI: JITEXPR_WERROR; a plain CMake build and
#                                   `pip install .` keep it off)
#   GPU_TESTS=0 BENCH=0             build neither the gpu-labelled tests nor the benchmarks (CI's
#                                   sanitizer pass, which runs `ctest -LE gpu`)
# The Release run also tests the Python package (scripts/test-python.sh; PYTHON_TESTS=0 skips it):
# as root (CI) the release's manylinux wheel, built once, installed into a fresh venv where no
# compiler or CUDA toolkit can be seen; otherwise `pip install .` of the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# ccache keys on paths relative to the checkout, so that another clone (CI's) finds the objects.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
build=${BUILD_DIR:-build}
type=${BUILD_TYPE:-Release}
sanitize=${SANITIZE:-0}
export WERROR=${WERROR:-1}
on_off() { [ "$1" = 1 ] && echo ON || echo OFF; }
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DJITEXPR_SANITIZE="$(on_off "$sanitize")" \
  -DJITEXPR_WERROR="$(on_off "$WERROR")" -DJITEXPR_GPU_TESTS="$(on_off "${GPU_TESTS:-1}")" \
  -DJITEXPR_BUILD_BENCH="$(on_off "${BENCH:-1}")" >/dev/null
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" ${CTEST_ARGS:-}
if [ "$sanitize" != 1 ] && [ "${PYTHON_TESTS:-1}" = 1 ]; then
  scripts/test-python.sh
fi
