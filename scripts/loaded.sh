#!/usr/bin/env bash
# Issue 34 item 9: the suites N times in a row on a loaded machine, stress-ng burning the CPUs
# beside them, to find tests that depend on timing. Uses built trees (it builds nothing):
#   scripts/loaded.sh [N]          N rounds (default 5) of the Release ctest (build/) and the
#                                  Python suite (build/python), stress-ng --cpu 4 beside them
#   SUITES="asan" scripts/loaded.sh 2   which suites a round runs (default "ctest python"; asan: the
#                                  ASan ctest of $ASAN_BUILD, default build-asan/)
#   BUILD=... ASAN_BUILD=...       other build trees; STRESS=8: stress-ng's CPU workers
# Stops at the first failing run and prints its log; the logs are kept in $LOG_DIR (/tmp/loaded).
set -u
cd "$(dirname "$0")/.."
n=${1:-5}
logs=${LOG_DIR:-/tmp/loaded}
mkdir -p "$logs"
command -v stress-ng > /dev/null || { echo "loaded.sh: stress-ng is not installed (apt-get install stress-ng)"; exit 1; }
stress-ng --cpu "${STRESS:-4}" --timeout 0 --quiet &
stress=$!
trap 'kill $stress 2> /dev/null; wait $stress 2> /dev/null' EXIT
sleep 1
fail() {
  echo "loaded.sh: $1 failed in round $2 (load $(cut -d' ' -f1 /proc/loadavg)); the log: $3"
  grep -E "Failed|FAILED|Error|\*\*\*" "$3" | head -20
  exit 1
}
suites=" ${SUITES:-ctest python} "
build=${BUILD:-build}
asan_build=${ASAN_BUILD:-build-asan}
for ((i = 1; i <= n; i++)); do
  line="round $i:"
  if [[ $suites == *" ctest "* ]]; then
    t0=$SECONDS
    ctest --test-dir "$build" -j2 --timeout 600 > "$logs/ctest-$i.log" 2>&1 || fail "the Release ctest" "$i" "$logs/ctest-$i.log"
    line+=" ctest $(grep -E 'tests passed' "$logs/ctest-$i.log") in $((SECONDS - t0)) s;"
  fi
  if [[ $suites == *" python "* ]]; then
    t0=$SECONDS
    (cd tests/python && PYTHONPATH=$(cd ../.. && realpath "$build")/python${PYTHONPATH:+:$PYTHONPATH} \
       python3 -m pytest -q -p no:cacheprovider .) > "$logs/pytest-$i.log" 2>&1 || fail "the Python suite" "$i" "$logs/pytest-$i.log"
    line+=" Python $(tail -1 "$logs/pytest-$i.log" | sed 's/=//g; s/^ *//') in $((SECONDS - t0)) s;"
  fi
  if [[ $suites == *" asan "* ]]; then
    t0=$SECONDS
    ctest --test-dir "$asan_build" -j2 --timeout 900 -LE gpu > "$logs/asan-$i.log" 2>&1 || fail "the ASan ctest" "$i" "$logs/asan-$i.log"
    line+=" ASan $(grep -E 'tests passed' "$logs/asan-$i.log") in $((SECONDS - t0)) s;"
  fi
  echo "$line load $(cut -d' ' -f1 /proc/loadavg)"
done
echo "loaded.sh: $n rounds passed"
