#!/usr/bin/env bash
# Installs what jitexpr needs to build and test on a fresh Debian/Ubuntu machine (run as root,
# or with sudo available). Skips what is already there, so it is cheap to run every time.
set -euo pipefail

# ccache: the Release build and the Python package build (pip install .) share compiled objects.
# python3-dev: Python.h, for the extension when it is built with Debian's own python3.
# libxxhash-dev: the header of XXH3-128, the disk cache's entry checksum (header-only use: nothing
# to link or ship; without it the build falls back to the slower hand-written SHA-256).
debs=(cmake ninja-build g++ pkg-config libboost-dev libfmt-dev libgtest-dev libgmock-dev
      libbenchmark-dev libreadline-dev libxxhash-dev python3 python3-dev python3-pip python3-venv tmux ccache)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The CUDA toolkit (NVRTC and cuda.h) is not a Debian package of the right version: it must be
# installed already (a GPU is not needed).
if ! [ -e /usr/local/cuda/include/nvrtc.h ] && ! command -v nvcc >/dev/null; then
  echo "install-deps: the CUDA toolkit (12.x or 13.x, for NVRTC) is missing: install it from NVIDIA" >&2
  exit 1
fi

# Python test tools: NumPy 2 (NEP 50 semantics), numexpr (benchmark peer), pexpect (REPL tests).
py=python3
if ! $py -c 'import numpy, numexpr, pexpect, sys; sys.exit(0 if int(numpy.__version__.split(".")[0]) >= 2 else 1)' 2>/dev/null; then
  echo "install-deps: pip installing numpy>=2 numexpr pexpect"
  $py -m pip install -q --disable-pip-version-check "numpy>=2" numexpr pexpect 2>/dev/null ||
    $py -m pip install -q --disable-pip-version-check --break-system-packages "numpy>=2" numexpr pexpect
fi
