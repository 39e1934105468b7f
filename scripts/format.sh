#!/usr/bin/env bash
# Formats jitexpr's C and C++ files with the house style (.clang-format).
#   scripts/format.sh            rewrite the files in place
#   scripts/format.sh --check    change nothing; list the files that are not formatted, exit 1 if any
#                                (ctest's `format` test; it skips, exit 77, without clang-format 14+)
# dsl/semantics.h is left as written: its bytes are embedded in every generated kernel, so
# reformatting it would change the golden kernels and every disk-cache key.
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
# Golden kernels (tests/*/golden/*.cu) are the code generator's output byte for byte: left as generated.
mapfile -t files < <(git ls-files -- '*.c' '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh' | grep -v -e '^dsl/semantics\.h$' -e '^tests/[^/]*/golden/')
if [ "${1:-}" = --check ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
      echo "not formatted: $f (scripts/format.sh rewrites it)"
      bad=1
    fi
  done
  exit $bad
fi
"$cf" -i --style=file "${files[@]}"
