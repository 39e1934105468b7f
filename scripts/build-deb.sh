#!/usr/bin/env bash
# The Debian package for C and C++ users: dist/jitexpr_<version>_amd64.deb (cmake/JitexprPackage.cmake)
# with the CLI, its man page, libjitexpr_c.so, the C++ library, the headers, the CMake package and
# the pkg-config file, installed under /usr. scripts/test-deb.sh installs and removes it.
#   scripts/build-deb.sh          Release build in build-deb/ (the library's objects come from the
#                                 Release build's through ccache: same flags, folder one level down)
#   JOBS=N  WERROR=0              compile jobs (default nproc); warnings stay warnings
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
build="build-deb"
werror=$( [ "${WERROR:-1}" = 1 ] && echo ON || echo OFF )
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DJITEXPR_WERROR="$werror" -DJITEXPR_BUILD_TESTS=OFF -DJITEXPR_BUILD_BENCH=OFF \
  -DJITEXPR_BUILD_EXAMPLES=OFF -DJITEXPR_BUILD_TOOLS=ON -DJITEXPR_BUILD_PYTHON=OFF >/dev/null
cmake --build "$build" -j"${JOBS:-$(nproc)}"
rm -rf "$build/cpack"
(cd "$build" && cpack -G DEB -B "$PWD/cpack" >cpack.log) || { cat "$build/cpack.log"; exit 1; }
mkdir -p dist
deb=$(ls "$build"/cpack/jitexpr_*_amd64.deb)
cp "$deb" dist/
echo "build-deb: dist/$(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
dpkg-deb --info "dist/$(basename "$deb")" | sed -n '/Package:/,$p'
