#!/usr/bin/env bash
# Formats jitexpr's C and C++ files with the house style (.clang-format).
#   scripts/format.sh            rewrite the files in place
#   scripts/format.sh --check    change nothing; list the files that are not formatted, exit 1 if any
#                                (ctest's `format` test; it skips, exit 77, without clang-format 14+)
# Left as written: dsl/semantics.h (its bytes are embedded in every generated kernel, so
# reformatting it would change the golden kernels and every disk-cache key) and golden files
# (tests/*/golden/: generated output the tests compare byte for byte).
set -euo pipefail
cd "$(dirname "$0")/.."
cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null; then
  echo "format.sh: $cf is not installed; skipping" >&2
  exit 77
fi
major=$("$cf" --version | sed -n 's/.*version \([0-9][0-9]*\).*/\1/p')
if [ -z "$major" ] || [ "$major" -lt 14 ]; then
  echo "format.sh: $cf is version ${major:-unknown}; the house style needs 14 or newer; skipping" >&2
  exit 77
fi
mapfile -t files < <(git ls-files -- '*.c' '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh' | grep -v -e '^dsl/semantics\.h$' -e '/golden/')
if [ "${1:-}" = --check ]; then
  # One process for every file (a process per file took minutes on a loaded 2-core machine).
  if ! out=$("$cf" --style=file --dry-run --Werror "${files[@]}" 2>&1); then
    printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/not formatted: \1 (scripts\/format.sh rewrites it)/p' | sort -u
    exit 1
  fi
  exit 0
fi
"$cf" -i --style=file "${files[@]}"
