#!/usr/bin/env bash
# The soak (bench/soak/README.md) over a Release build: the C library and the CLI are built if
# they are not, then bench/soak/soak.py runs. CI runs the 60-second mode:
#   scripts/soak.sh                      60 s, 4 processes x 8 threads, seed 1
#   SOAK_SECONDS=1200 scripts/soak.sh    the full 20 minutes
#   BUILD_DIR=build-x scripts/soak.sh --seed 7 --processes 2     (extra arguments go to soak.py)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
cmake --build "$build" --target jitexpr_c jitexpr_tool >/dev/null
exec python3 bench/soak/soak.py --seconds "${SOAK_SECONDS:-60}" --library "$build/api/libjitexpr_c.so" \
  --cli "$build/tools/jitexpr" "$@"
