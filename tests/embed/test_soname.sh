#!/usr/bin/env bash
# A shared library's soname is the one expected (docs/compatibility.md: the C ABI's versioning).
#   test_soname.sh READELF LIBRARY EXPECTED_SONAME
set -euo pipefail
readelf=$1 lib=$2 want=$3
got=$("$readelf" -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$got" != "$want" ]; then
  echo "$lib: soname '${got:-none}', expected '$want'"
  exit 1
fi
echo "$lib: soname $got"
