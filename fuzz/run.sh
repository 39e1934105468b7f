#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan + coverage on every library) and runs them.
#   fuzz/run.sh                       each target for 10 minutes
#   fuzz/run.sh fuzz_npy 3600         one target for an hour
#   SECONDS_EACH=60 fuzz/run.sh       each target for a minute
#   RUNS=10000000 fuzz/run.sh fuzz_npy 86400     stop after 10 M executions (or a day)
#   BUILD_DIR=... JOBS=... WORKERS=... as named (defaults: build-fuzz, nproc, 1)
# New inputs accumulate in $BUILD_DIR/fuzz/corpus/<name>/ (kept between runs; the committed seeds
# in fuzz/corpus/ are only read); crashes are written to $BUILD_DIR/fuzz/artifacts/. Reproduce
# one with: $BUILD_DIR/fuzz/fuzz_npy $BUILD_DIR/fuzz/artifacts/crash-...
# Needs clang and libFuzzer (Debian/Ubuntu: apt-get install clang libclang-rt-14-dev, or the
# libclang-rt-dev of your clang version).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-fuzz}
jobs=${JOBS:-$(nproc)}
workers=${WORKERS:-1}
targets=(fuzz_pipeline fuzz_npy fuzz_ptx)
seconds=${SECONDS_EACH:-600}
if [ $# -ge 1 ]; then targets=("$1"); fi
if [ $# -ge 2 ]; then seconds=$2; fi

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
      -DCMAKE_CXX_COMPILER=clang++ -DJITEXPR_FUZZ=ON -DJITEXPR_BUILD_BENCH=OFF \
      -DJITEXPR_BUILD_EXAMPLES=OFF -DJITEXPR_BUILD_TOOLS=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target "${targets[@]}"

status=0
for t in "${targets[@]}"; do
  name=${t#fuzz_}
  work="$build/fuzz/corpus/$name"
  mkdir -p "$work" "$build/fuzz/artifacts"
  seeds=$name
  [ "$name" = ptx ] && seeds=pipeline  # fuzz_ptx reads the texts fuzz_pipeline does
  extra=()
  [ -f "fuzz/$seeds.dict" ] && extra+=(-dict="fuzz/$seeds.dict")
  [ "$workers" -gt 1 ] && extra+=(-workers="$workers" -jobs="$workers")
  [ -n "${RUNS:-}" ] && extra+=(-runs="$RUNS")
  echo "== $t for ${seconds}s (corpus $work)"
  "$build/fuzz/$t" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 "${extra[@]}" \
      -artifact_prefix="$build/fuzz/artifacts/" "$work" "fuzz/corpus/$seeds" || status=1
done
exit $status
