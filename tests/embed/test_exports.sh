#!/usr/bin/env bash
# The shared C library exports exactly the functions that include/jit/c_api.h declares: no C++
# symbol of jitexpr or of the static libraries linked into it.
#   test_exports.sh NM LIBRARY HEADER
set -euo pipefail
nm=$1 lib=$2 header=$3
exported=$("$nm" -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u)
# Declarations: lines that start with a type (not comments, not continuation lines).
declared=$(grep -E '^[a-z]' "$header" | grep -oE '\bjitexpr_[a-z_]+\(' | tr -d '(' | sort -u)
if [ -z "$declared" ]; then
  echo "no declarations found in $header"
  exit 1
fi
if [ "$exported" != "$declared" ]; then
  echo "exported (>) and declared (<) differ:"
  diff <(echo "$declared") <(echo "$exported") || true
  exit 1
fi
echo "$(basename "$lib") exports the $(echo "$declared" | wc -l) functions of $(basename "$header") and nothing else"
