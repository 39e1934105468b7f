#!/usr/bin/env bash
# The .deb as a C or C++ user gets it: `dpkg -i`, then the CLI runs, the man page is installed,
# an outside CMake project (tests/embed/consumer) finds the package with
# find_package(jitexpr CONFIG REQUIRED) and no hints, builds and runs (C++, C, and C against the
# shared libjitexpr_c.so), a C program builds with pkg-config's flags; then `dpkg -r`, after which
# nothing of the package is left.
#   scripts/test-deb.sh [DEB]     default: dist/'s newest jitexpr_*_amd64.deb (scripts/build-deb.sh)
# Run as root. The machine is not changed: a private mount namespace (unshare -m) lays overlays
# over /usr, /etc and /var, so dpkg writes into a temporary folder that only this script sees.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${JITEXPR_TEST_DEB_NS:-}" ]; then
  [ "$(id -u)" = 0 ] || { echo "test-deb: needs root (unshare -m, mount, dpkg)"; exit 1; }
  exec unshare -m --propagation private env JITEXPR_TEST_DEB_NS=1 "$0" "$@"
fi
deb=${1:-$(ls -t dist/jitexpr_*_amd64.deb 2>/dev/null | head -1 || true)}
[ -n "$deb" ] || { echo "test-deb: no dist/jitexpr_*_amd64.deb (scripts/build-deb.sh)"; exit 1; }
deb=$(readlink -f "$deb")
version=$(dpkg-deb --field "$deb" Version)
src=$PWD
tmp=$(mktemp -d /tmp/jitexpr-test-deb.XXXXXX)
trap 'cd /; rm -rf "$tmp"' EXIT
# The folders of the package that exist before: dpkg -r must leave those and only those.
dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|; s|/$||' | grep '^/usr/' | while read -r p; do
  if [ -d "$p" ] && [ ! -L "$p" ]; then echo "$p"; fi
done | sort -u >"$tmp/dirs-before"
for d in usr etc var; do
  mkdir -p "$tmp/$d.up" "$tmp/$d.work"
  mount -t overlay overlay -o "lowerdir=/$d,upperdir=$tmp/$d.up,workdir=$tmp/$d.work" "/$d"
done
export CCACHE_DISABLE=1   # the consumer's objects stay out of the shared cache

dpkg -i "$deb" >"$tmp/dpkg-i.log" 2>&1 || { cat "$tmp/dpkg-i.log"; exit 1; }
echo "test-deb: installed $(basename "$deb"): $(dpkg -L jitexpr | grep -c .) paths"

out=$(/usr/bin/jitexpr --version)
case $out in *"$version"*) echo "test-deb: $out" ;; *) echo "test-deb: jitexpr --version printed $out, not $version"; exit 1 ;; esac
out=$(JITEXPR_DISK_CACHE=0 jitexpr --backend cpu -e '1 + 2')
case $out in *3*) ;; *) echo "test-deb: jitexpr -e '1 + 2' printed $out"; exit 1 ;; esac
[ -f /usr/share/man/man1/jitexpr.1 ] || { echo "test-deb: no man page"; exit 1; }

# The consumer with nothing but the package: no CMAKE_PREFIX_PATH, no jitexpr_DIR.
cmake -S "$src/tests/embed/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
grep -q "jitexpr_DIR:PATH=/usr/lib/" "$tmp/consumer/CMakeCache.txt" || {
  grep jitexpr_DIR "$tmp/consumer/CMakeCache.txt"; echo "test-deb: jitexpr found elsewhere than /usr/lib"; exit 1; }
cmake --build "$tmp/consumer" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
for p in consumer_cpp consumer_c consumer_c_shared; do
  echo -n "test-deb: $p: "
  "$tmp/consumer/$p"
done
ldd "$tmp/consumer/consumer_c_shared" | grep -Eq "libjitexpr_c.so.* => /(usr/)?lib/" || {
  ldd "$tmp/consumer/consumer_c_shared"; echo "test-deb: libjitexpr_c.so not taken from /usr/lib"; exit 1; }
# shellcheck disable=SC2046
cc -o "$tmp/consumer_pc" "$src/tests/embed/consumer/main.c" $(pkg-config --cflags --libs jitexpr)
echo -n "test-deb: pkg-config build: "
"$tmp/consumer_pc"

dpkg -r jitexpr >"$tmp/dpkg-r.log" 2>&1 || { cat "$tmp/dpkg-r.log"; exit 1; }
# Nothing left under /usr: no file of the package (nor a whiteout), no folder it made.
left=$(cd "$tmp/usr.up" && find . -mindepth 1 -print | while read -r p; do
  abs=/usr/${p#./}
  if [ -d "$p" ] && [ ! -L "$p" ] && grep -qxF "$abs" "$tmp/dirs-before"; then continue; fi
  echo "$abs"
done)
if [ -n "$left" ]; then echo "test-deb: dpkg -r left:"; echo "$left" | head -20; exit 1; fi
if dpkg -s jitexpr >/dev/null 2>&1 && ! dpkg -s jitexpr | grep -q "Status: deinstall ok config-files"; then
  dpkg -s jitexpr | head -3; echo "test-deb: still installed"; exit 1
fi
echo "test-deb: removed; nothing of it is left under /usr"
echo "test-deb: ok"
