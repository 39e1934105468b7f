#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs an out-of-tree consumer with
# find_package(jitexpr CONFIG REQUIRED), and a C program with pkg-config's flags.
#   test_package.sh CMAKE BUILD_DIR WORK_DIR CONSUMER_SOURCE GENERATOR [EXTRA_FLAGS]
set -euo pipefail
cmake=$1 build=$2 work=$3 consumer=$4 generator=$5 flags=${6:-}
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
for f in include/jit/jit.hpp include/jit/c_api.h include/jit/dlpack.h include/jit/interop.hpp \
         lib/cmake/jitexpr/jitexprConfig.cmake lib/cmake/jitexpr/jitexprConfigVersion.cmake \
         lib/pkgconfig/jitexpr.pc bin/jitexpr share/man/man1/jitexpr.1 lib/libjitexpr_c.so; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done

"$cmake" -S "$consumer" -B "$work/build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
"$cmake" --build "$work/build" -j1 >"$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/build/consumer_cpp"
"$work/build/consumer_c"
echo -n "shared C library: "
"$work/build/consumer_c_shared"

# The installed CLI starts and evaluates on the CPU.
out=$(JITEXPR_DISK_CACHE=0 "$prefix/bin/jitexpr" --backend cpu -e '1 + 2' 2>&1) || { echo "$out"; exit 1; }
case $out in *3*) echo "jitexpr CLI: $out" ;; *) echo "jitexpr CLI printed: $out"; exit 1 ;; esac

if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
  cc=${CC:-cc}
  # shellcheck disable=SC2046
  "$cc" $flags -o "$work/consumer_pc" "$consumer/main.c" $(pkg-config --cflags --libs jitexpr)
  echo -n "pkg-config build: "
  "$work/consumer_pc"
else
  echo "pkg-config not found: skipping the pkg-config build"
fi
echo "package test: ok"
rm -rf "$work"  # ~60 MB of Debug libraries; kept above when a step fails
