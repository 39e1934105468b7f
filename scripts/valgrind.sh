#!/usr/bin/env bash
# Runs the non-GPU CTest suite under valgrind memcheck (no sanitizers: they and valgrind exclude
# each other). A test fails on any memcheck error or definite leak.
#   scripts/valgrind.sh                  RelWithDebInfo build in build-valgrind/, every non-GPU test
#   CTEST_ARGS="-R LoadTest" scripts/valgrind.sh     a subset (extra ctest arguments)
#   BUILD_DIR=... BUILD_TYPE=Debug JOBS=... CTEST_JOBS=... as named (defaults: build-valgrind,
#                                    RelWithDebInfo, nproc, JOBS)
#
# How: the build is configured with CMAKE_CROSSCOMPILING_EMULATOR set to the valgrind command, so
# CTest starts every test executable (GoogleTest cases, examples) under valgrind; gtest's test
# discovery at build time runs under it too. Tests whose command is a Python or shell driver,
# not a test executable, run without valgrind (embed_python_ctypes loads libjitexpr_c into
# Python; embed_c_exports lists the library's symbols) or are handled apart:
#   cli_script     is run afterwards by this script with the jitexpr binary behind a wrapper
#                  that starts it under valgrind (build-valgrind/jitexpr-valgrind);
#   cli_repl       is left out: it drives the REPL through a pseudo-terminal with timeouts that
#                  valgrind's slowdown would break; the REPL's code is covered by test_cli_unit;
#   embed_package  is left out: it configures and builds a consumer project (no jitexpr code
#                  runs that the other tests do not run).
# --soname-synonyms=somalloc=nouserintercepts: valgrind leaves allocation functions that a test
# executable defines itself to that executable (tests/support/allocation_counter.cpp, linked into
# test_cache and test_array_copies, replaces operator new/delete to count allocations). Without
# it valgrind swaps in its own operator new but not necessarily every operator delete, and
# reports the pairs as mismatched.
# Heavy tests read smaller parameters from the environment here: JITEXPR_LOAD_ROUNDS=1.
# Suppressions (scripts/valgrind.supp) cover only code that is not jitexpr's; each says why.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${BUILD_DIR:-build-valgrind}
type=${BUILD_TYPE:-RelWithDebInfo}
jobs=${JOBS:-$(nproc)}
test_jobs=${CTEST_JOBS:-$jobs}
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed" >&2; exit 2; }

vg_opts=(--error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
         --show-leak-kinds=definite --num-callers=40 --child-silent-after-fork=yes
         --soname-synonyms=somalloc=nouserintercepts
         --suppressions="$root/scripts/valgrind.supp" --quiet)
emulator=$(IFS=';'; echo "valgrind;${vg_opts[*]}")

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DJITEXPR_SANITIZE=OFF \
      -DJITEXPR_BUILD_BENCH=OFF -DCMAKE_CROSSCOMPILING_EMULATOR="$emulator" >/dev/null
cmake --build "$build" -j"$jobs"

export JITEXPR_LOAD_ROUNDS=${JITEXPR_LOAD_ROUNDS:-1}
start=$(date +%s)
status=0
# Each test under valgrind runs 20-50x slower than natively; the timeout is per test.
ctest --test-dir "$build" --output-on-failure -j"$test_jobs" --timeout 1200 -LE gpu \
      -E '^(cli_script|cli_repl|embed_package)$' ${CTEST_ARGS:-} || status=1

# The CLI's end-to-end script, with the binary started under valgrind. Errors make valgrind exit
# with 97, a status the CLI never uses, so the script's exit-status checks catch them too.
if [ -z "${CTEST_ARGS:-}" ] && [ -x "$build/tools/jitexpr" ] && command -v python3 >/dev/null; then
  wrapper="$build/jitexpr-valgrind"
  printf '#!/bin/sh\nexec valgrind %s "%s" "$@"\n' \
         "$(printf '%q ' "${vg_opts[@]/--error-exitcode=1/--error-exitcode=97}")" \
         "$(cd "$build" && pwd)/tools/jitexpr" > "$wrapper"
  chmod +x "$wrapper"
  echo "== cli_script with $wrapper"
  rc=0
  python3 tests/cli/test_cli.py "$wrapper" || rc=$?
  case $rc in 0) ;; 77) echo "cli_script skipped (no NumPy)" ;; *) status=1 ;; esac
fi
echo "valgrind.sh: $(( $(date +%s) - start ))s of tests, status $status"
exit $status
