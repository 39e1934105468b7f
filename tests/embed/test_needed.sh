#!/usr/bin/env bash
# No binary, library or Python module of jitexpr links anything of CUDA: libcuda, NVRTC and
# nvJitLink are opened at run time, so each starts on a machine with no driver and no toolkit.
#   test_needed.sh READELF FILE...
set -euo pipefail
readelf=$1
shift
bad=0
for f in "$@"; do
  needed=$("$readelf" -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  if echo "$needed" | grep -Eq '^lib(cuda|nvrtc|nvrtc-builtins|nvJitLink|cudart)\.'; then
    echo "$f links: $(echo "$needed" | grep -E '^lib(cuda|nvrtc|nvJitLink|cudart)' | tr '\n' ' ')"
    bad=1
  fi
done
[ "$bad" = 0 ] && echo "none of the $# files links libcuda, libnvrtc, libnvJitLink or libcudart"
exit $bad
