#!/usr/bin/env bash
# jitexpr built inside another project's build (tests/embed/vendor: FetchContent of this checkout,
# as add_subdirectory would): configures, builds and runs its programs (C++, C, and C against the
# shared libjitexpr_c.so).
#   scripts/test-vendored.sh       build in build-vendored/ (kept: a second run is incremental)
#   JOBS=N                         compile jobs (default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
build="build-vendored"
mkdir -p "$build"
cmake -S tests/embed/vendor -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DJITEXPR_SOURCE_DIR="$PWD" >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j"${JOBS:-$(nproc)}"
for p in vendored_cpp vendored_c vendored_c_shared; do
  echo -n "test-vendored: $p: "
  "$build/$p"
done
echo "test-vendored: ok"
