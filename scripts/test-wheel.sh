#!/usr/bin/env bash
# The built wheel as a user without a build machine gets it: installed into a fresh venv where no
# compiler, no CMake, no Boost, no fmt and no CUDA toolkit can be seen, then the package's tests
# (tests/python: the CPU ones run, the GPU ones skip without a device) and the Python examples.
#   scripts/test-wheel.sh [WHEEL]   default: dist/'s manylinux wheel for python3's version
#   PYTHON=python3.12 ...           the interpreter that makes the venv (its version picks the wheel)
#   TESTS="test_api.py test_imports.py"   only those test files (default: all, and the examples)
#   VENV_DIR=build-venv             the venv's folder (made afresh; default: a new temporary one)
#   EXTRA=cuda13 (or cuda12)        also install that extra (NVIDIA's NVRTC and nvJitLink wheels) and
#                                   check that jitexpr finds and loads both from them (no GPU needed)
# Run as root: a private mount namespace (unshare -m) hides those files from this script and its
# children only, nothing else on the machine sees a change. It hides: /usr/local/cuda*, Boost's,
# fmt's and xxhash's headers, libfmt itself (the wheel carries its own copy), the C/C++
# compilers, CMake, ninja and ccache (each found on PATH is replaced by an empty, unrunnable file),
# and the checkout's build of the jitexpr CLI.
# The venv is made by PYTHON (python3) and gets the wheel and NumPy from pip, then the test peers.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}

if [ -z "${JITEXPR_TEST_WHEEL_NS:-}" ]; then
  [ "$(id -u)" = 0 ] || { echo "test-wheel: needs root (unshare -m, mount)"; exit 1; }
  exec unshare -m --propagation private env JITEXPR_TEST_WHEEL_NS=1 "$0" "$@"
fi

ver=$("$py" -c 'import sys; print("%d%d" % sys.version_info[:2])')
wheel=${1:-}
if [ -z "$wheel" ]; then
  wheel=$(ls -t dist/jitexpr-*-cp"$ver"-cp"$ver"-*manylinux*_x86_64.whl 2>/dev/null | head -1 || true)
  [ -n "$wheel" ] || { echo "test-wheel: no wheel for CPython $ver in dist/ (scripts/build-wheels.sh)"; exit 1; }
fi
wheel=$(readlink -f "$wheel")
echo "test-wheel: $wheel"

# --- hide the build machine ---------------------------------------------------------------------
empty=$(mktemp -d)
hide_dir() { [ -d "$1" ] && mount --bind "$empty" "$1"; return 0; }
hide_file() { [ -e "$1" ] && mount --bind /dev/null "$1"; return 0; }
for d in /usr/local/cuda*; do
  [ -e "$d" ] || continue
  hide_dir "$(readlink -f "$d")"
done
hide_dir /usr/include/boost
hide_dir /usr/include/fmt
hide_file /usr/include/xxhash.h
for f in /usr/lib/x86_64-linux-gnu/libfmt.so*; do hide_file "$(readlink -f "$f")"; done
hide_dir /usr/lib/gcc                  # cc1, cc1plus, the compilers' own libraries
# The checkout's own build of the CLI (it needs the hidden libfmt, and NVRTC): the test that runs it
# skips (scripts/test-python.sh runs that one outside, against the same venv).
for f in build*/tools/jitexpr; do [ -f "$f" ] && hide_file "$(readlink -f "$f")"; done
for d in /usr/lib/llvm-*; do hide_dir "$d"; done
tools=(cc c++ gcc g++ cpp clang clang++ nvcc cmake ninja ccache)
for t in "${tools[@]}"; do
  while read -r p; do
    [ -n "$p" ] && hide_file "$(readlink -f "$p")"
  done < <(type -ap "$t" || true)
done
# What a build would need is gone.
for t in "${tools[@]}"; do
  if "$t" --version >/dev/null 2>&1; then echo "test-wheel: $t still runs"; exit 1; fi
done
for f in /usr/local/cuda/include/cuda.h /usr/include/boost/version.hpp /usr/include/fmt/format.h; do
  if [ -e "$f" ]; then echo "test-wheel: $f is still there"; exit 1; fi
done
echo "test-wheel: hidden: CUDA toolkit, Boost, fmt, xxhash, ${tools[*]}, the build tree's CLI"

# --- a fresh venv and the wheel -----------------------------------------------------------------
if [ -n "${VENV_DIR:-}" ]; then
  venv=$(realpath -m "$VENV_DIR")
  rm -rf "$venv"
else
  venv=$(mktemp -d)/venv
fi
"$py" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
start=$(date +%s%N)
# --only-binary: nothing may be built from source here (there is no compiler to build it).
"${pip[@]}" install --only-binary=:all: "$wheel"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
printf 'test-wheel: installed the wheel and its dependencies (NumPy) in %d.%01d s\n' $((ms / 1000)) $((ms % 1000 / 100))
"$venv/bin/python" -c 'import jitexpr, numpy as np; print("test-wheel: jitexpr", jitexpr.__version__, "from", jitexpr.__file__); assert jitexpr.evaluate("a * 2 + 1", a=np.arange(3.0)).tolist() == [1.0, 3.0, 5.0]'

if [ -n "${EXTRA:-}" ]; then
  "${pip[@]}" install --only-binary=:all: "${wheel}[${EXTRA}]"
  "$venv/bin/python" - "$EXTRA" <<'EOF'
import sys, jitexpr
c = jitexpr.info(load_compilers=True)["cuda"]
major = {"cuda12": "12.", "cuda13": "13."}[sys.argv[1]]
for lib in ("nvrtc", "nvjitlink"):
    i = c[lib]
    assert i["source"] == "an NVIDIA wheel" and i["loaded"], (lib, i)
    assert "/site-packages/nvidia/" in i["path"], (lib, i)
    assert lib == "nvjitlink" or i["version"].startswith(major), (lib, i)
    print(f"test-wheel: {lib} {i['version'] or '(version not in its file name)'} loaded from {i['path']}")
EOF
fi
# The test peers, as in scripts/test-python.sh.
"${pip[@]}" install --only-binary=:all: "numpy>=2" "numexpr>=2.14,<2.15" pandas pyarrow polars duckdb pytest ml_dtypes \
  dask==2026.7.1 distributed==2026.7.1
# Import time against numexpr's, best of 5 fresh interpreters each.
best_import_ms() {
  local best=999999 t0 t
  for _ in 1 2 3 4 5; do
    t0=$(date +%s%N); "$venv/bin/python" -c "import $1"; t=$(( ($(date +%s%N) - t0) / 1000000 ))
    (( t < best )) && best=$t
  done
  echo "$best"
}
echo "test-wheel: python -c 'import jitexpr' $(best_import_ms jitexpr) ms, 'import numexpr' $(best_import_ms numexpr) ms (best of 5)"
cd tests/python   # so that the installed package is imported, not the source tree
export JITEXPR_REQUIRE_DASK=1
if [ -n "${TESTS:-}" ]; then
  # shellcheck disable=SC2086
  exec "$venv/bin/python" -m pytest -q -p no:cacheprovider $TESTS
fi
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider . ../../examples/python
