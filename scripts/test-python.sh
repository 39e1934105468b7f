#!/usr/bin/env bash
# The Python package as a user gets it: a fresh venv, `pip install .`, then the pytest suite
# (tests/python) and the Python examples (examples/python). Called by scripts/test.sh.
#   scripts/test-python.sh            venv in build-venv/, package build in build-py/ (kept:
#                                     ccache and CMake make a second run incremental)
#   PACKAGE=wheel scripts/test-python.sh   the release's way instead: the manylinux wheel for this
#                                     Python (scripts/build-wheels.sh, build-whl-cpXY/), installed
#                                     and tested where no compiler or CUDA toolkit can be seen
#                                     (scripts/test-wheel.sh; root)
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
venv=${VENV_DIR:-build-venv}
py=${PYTHON:-python3}
if [ "${PACKAGE:-source}" = wheel ]; then
  exe=$("$py" -c 'import sys; print(sys.executable)')
  PYTHONS=$exe SDIST=0 scripts/build-wheels.sh
  exec env PYTHON="$exe" scripts/test-wheel.sh
fi
rm -rf "$venv"
"$py" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
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
"../../$venv/bin/python" -m pytest -q -p no:cacheprovider . ../../examples/python || rc=$?
exit $rc
