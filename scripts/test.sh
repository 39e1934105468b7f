#!/usr/bin/env bash
# Builds jitexpr and runs every test. GPU tests (label `gpu`) skip, saying so, without a device.
#   scripts/test.sh                 Release build in build/
#   BUILD_DIR=build-asan SANITIZE=1 scripts/test.sh     AddressSanitizer + UBSan build
#   WERROR=1 scripts/test.sh        warnings in jitexpr's code are errors (JITEXPR_WERROR; off by
#                                   default until the code merged since the clean-up is warning-free)
# The Release run also tests the Python package in a fresh venv (scripts/test-python.sh;
# PYTHON_TESTS=0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# ccache keys on paths relative to the checkout, so that another clone (CI's) finds the objects.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
build=${BUILD_DIR:-build}
type=${BUILD_TYPE:-Release}
sanitize=${SANITIZE:-0}
export WERROR=${WERROR:-0}
on_off() { [ "$1" = 1 ] && echo ON || echo OFF; }
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DJITEXPR_SANITIZE="$(on_off "$sanitize")" \
  -DJITEXPR_WERROR="$(on_off "$WERROR")" >/dev/null
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" ${CTEST_ARGS:-}
if [ "$sanitize" != 1 ] && [ "${PYTHON_TESTS:-1}" = 1 ]; then
  scripts/test-python.sh
fi
