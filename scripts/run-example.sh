#!/usr/bin/env bash
# Builds the jitexpr CLI and runs it on the shipped example script, on the GPU when a CUDA
# driver and device are present, else on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target jitexpr_tool
exec build/tools/jitexpr -v examples/scripts/demo.jx "$@"
