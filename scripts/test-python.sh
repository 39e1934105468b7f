#!/usr/bin/env bash
# The Python package as a user gets it, then the pytest suite (tests/python) and the Python
# examples (examples/python) against it. Called by scripts/test.sh (CI), so the extension is
# built once, as the release's wheel, and that is what is tested.
#   scripts/test-python.sh            as root (CI): the manylinux wheel for this Python
#                                     (scripts/build-wheels.sh; build folder build-whl-cpXY/, kept,
#                                     so ccache and CMake make a second run incremental) installed
#                                     into a fresh venv in build-venv/ where no compiler, Boost or
#                                     CUDA toolkit can be seen (scripts/test-wheel.sh: a private
#                                     mount namespace, hence root). Otherwise the source route.
#   PACKAGE=source scripts/test-python.sh   `pip install .` of the checkout into a fresh venv in
#                                     build-venv/ (build folder build-py/, kept), tested there
#   PACKAGE=wheel                     the wheel route, failing when it cannot run (not root)
#   TESTS="test_api.py test_no_cuda.py"   only those files of tests/python (either route)
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
venv=$(realpath -m "${VENV_DIR:-build-venv}")
py=${PYTHON:-python3}
package=${PACKAGE:-}
if [ -z "$package" ]; then
  if [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
    package=wheel
  else
    package=source
    echo "test-python: not root (or no mount namespace here): testing \`pip install .\` of the checkout," \
      "not the built wheel in a clean environment (scripts/test-wheel.sh needs root)"
  fi
fi
if [ "$package" = wheel ]; then
  exe=$("$py" -c 'import sys; print(sys.executable)')
  start=$(date +%s)
  PYTHONS=$exe SDIST=0 scripts/build-wheels.sh
  echo "test-python: the wheel took $(( $(date +%s) - start )) s to build"
  ver=$("$exe" -c 'import sys; print("%d%d" % sys.version_info[:2])')
  # build-wheels.sh has just written it: the newest of this version in dist/.
  wheel=$(ls -t dist/jitexpr-*-cp"$ver"-cp"$ver"-*manylinux*_x86_64.whl | head -1)
  rm -rf "$venv"
  rc=0
  env PYTHON="$exe" VENV_DIR="$venv" scripts/test-wheel.sh "$wheel" || rc=$?
  # The one test that needs the build machine, which the clean environment hides: the build tree's
  # CLI precompiling with the system's NVRTC, its cache bundled by the wheel's jitexpr.dask.
  bundle=on_dask/test_bundle.py::test_real_precompiled_entries_round_trip
  if [ -z "${TESTS:-}" ] && [ -x build/tools/jitexpr ]; then
    (cd tests/python && JITEXPR_REQUIRE_DASK=1 "$venv/bin/python" -m pytest -q -p no:cacheprovider "$bundle") || rc=$?
  fi
  exit $rc
fi
[ "$package" = source ] || { echo "test-python: PACKAGE is wheel or source, not '$package'"; exit 2; }
rm -rf "$venv"
"$py" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
# The compilers scripts/test.sh's build uses (see scripts/build-wheels.sh), so ccache shares objects.
if [ -z "${CC:-}" ] && command -v cc >/dev/null; then export CC=cc; fi
if [ -z "${CXX:-}" ] && command -v c++ >/dev/null; then export CXX=c++; fi
# The package build reuses the Release build's objects through ccache (CMake picks ccache up
# when it is installed: JITEXPR_CCACHE); `pip install .` builds the library and the extension only.
# Warnings are errors here as in scripts/test.sh (WERROR, default 1), which also keeps the compile
# flags, and so ccache's keys, the same as the Release build's; a user's `pip install .` keeps
# JITEXPR_WERROR off.
# The build runs in the fresh venv holding exactly pyproject.toml's [build-system] requires
# (nothing else is installed yet, so a missing requirement still fails here), without pip's
# isolated build environment: that one lives under a random /tmp path, so ccache could never
# serve nanobind's own sources from one run to the next; under build-venv/ the path is the same.
mapfile -t build_requires < <("$venv/bin/python" -c \
  'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')
"${pip[@]}" install "${build_requires[@]}"
werror=$( [ "${WERROR:-1}" = 1 ] && echo ON || echo OFF )
start=$(date +%s)
"${pip[@]}" install --no-build-isolation . --config-settings=cmake.define.JITEXPR_WERROR="$werror"
echo "test-python: pip install . took $(( $(date +%s) - start )) s"
# The test peers: NumPy 2 (the reference), numexpr 2.14 (the API the drop-in follows), pandas
# (eval/query through the drop-in), pyarrow, Polars and DuckDB (Arrow round trips), pytest.
# dask and distributed for jitexpr.dask (tests/python/on_dask), pinned to the versions dask-cuda 26.10
# needs on the GPU machine, so that CI tests what runs there.
"${pip[@]}" install "numpy>=2" "numexpr>=2.14,<2.15" pandas pyarrow polars duckdb pytest ml_dtypes \
  dask==2026.7.1 distributed==2026.7.1
# From another folder, so that the installed package is imported, not the source tree.
cd tests/python
rc=0
# The Dask suite must run here, not skip (it skips on machines without dask).
export JITEXPR_REQUIRE_DASK=1
if [ -n "${TESTS:-}" ]; then
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pytest -q -p no:cacheprovider $TESTS || rc=$?
else
  "$venv/bin/python" -m pytest -q -p no:cacheprovider . ../../examples/python || rc=$?
fi
exit $rc
