#!/usr/bin/env bash
# Issue 33 item 4 on the GPU machine: what a one-line program costs a fresh process, ten runs in a
# row each on a warm disk cache. Writes startup.txt (and the runs' stderr) to $OUT (default
# ./gpu-out); prints the summary.
#
#   scripts/gpu-startup.sh [BUILD_DIR]      default build-gpu (a Release build with tools/jitexpr)
#
#   auto      jitexpr -e 'c = arange(4.0) * 2'            placed on the CPU: starts no CUDA
#   cpu       the same with --backend cpu                   the floor (goal: auto <= cpu + 5 ms)
#   cuda      the same with --backend cuda                  a statement on the GPU, its kernel from
#                                                           the disk cache (goal: <= context + 30 ms)
#   context   a bare process: dlopen libcuda.so.1, cuInit, cuDevicePrimaryCtxRetain (C, built here)
#
# Then, from the dynamic loader's log of one run each (LD_DEBUG=files): whether auto loaded
# libcuda at all, and whether the cuda run loaded NVRTC or nvJitLink (a disk-cache hit needs
# neither); and -v / --time of one run each (where the statement ran, and why).
set -u
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
out=${OUT:-gpu-out}
mkdir -p "$out"
cli=$build/tools/jitexpr
[ -x "$cli" ] || { echo "gpu-startup: no $cli (build first: cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release)"; exit 2; }
runs=${RUNS:-10}
program='c = arange(4.0) * 2'
# A disk cache of these runs' own, warmed by one untimed run of each command.
export JITEXPR_CACHE_DIR
JITEXPR_CACHE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/jitexpr-startup-cache.XXXXXX")
unset JITEXPR_BACKEND JITEXPR_DISK_CACHE
summary=$out/startup.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

# The bare reference: the driver's start as any CUDA program pays it, in a process of its own.
ref_src=$out/context_ref.c
cat > "$ref_src" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
typedef int (*init_t)(unsigned);
typedef int (*get_t)(int*, int);
typedef int (*retain_t)(void**, int);
int main(void) {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stderr, "no libcuda.so.1: %s\n", dlerror()); return 1; }
    init_t init = (init_t)dlsym(lib, "cuInit");
    get_t get = (get_t)dlsym(lib, "cuDeviceGet");
    retain_t retain = (retain_t)dlsym(lib, "cuDevicePrimaryCtxRetain");
    int dev = 0;
    void* ctx = 0;
    if (!init || !get || !retain || init(0) || get(&dev, 0) || retain(&ctx, dev)) { fprintf(stderr, "no context\n"); return 1; }
    return 0;
}
EOF
ref=$out/context_ref
cc -O2 -o "$ref" "$ref_src" -ldl 2> "$out/context_ref.build.log" || ref=""

# Runs a command `runs` times in a row; prints "LABEL: min / median / max ms (all: ...)".
time_runs() {
  local label=$1; shift
  local ms=() t0 t1 rc=0
  "$@" > /dev/null 2>> "$out/$label.stderr" || rc=$?  # the warm-up run (fills the disk cache)
  for _ in $(seq "$runs"); do
    t0=$(date +%s%N)
    "$@" > /dev/null 2>> "$out/$label.stderr" || rc=$?
    t1=$(date +%s%N)
    ms+=("$(( (t1 - t0) / 1000 ))")
  done
  printf '%s\n' "${ms[@]}" | sort -n | awk -v label="$label" -v rc="$rc" '
    { v[NR] = $1 / 1000; all = all sprintf("%s%.1f", NR > 1 ? " " : "", $1 / 1000) }
    END { printf "%-8s min %7.1f  median %7.1f  max %7.1f ms  (sorted: %s)%s\n", label ":", v[1],
          (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR], all,
          rc ? "  FAILED (exit " rc ", see " label ".stderr)" : "" }' | tee -a "$summary"
}

say "machine: $(uname -r); $(nvidia-smi -L 2>/dev/null | head -1)"
say "$runs runs in a row of: jitexpr -e '$program' (disk cache $JITEXPR_CACHE_DIR, warmed first)"
time_runs auto "$cli" -e "$program"
time_runs cpu "$cli" --backend cpu -e "$program"
time_runs cuda "$cli" --backend cuda -e "$program"
if [ -n "$ref" ]; then time_runs context "$ref"; else say "context: the C reference did not build (see context_ref.build.log)"; fi

# What each run loaded (the dynamic loader's own log), and what -v and --time say.
loaded() { LD_DEBUG=files "$@" 2>&1 >/dev/null | grep -o 'file=[^ ]*\(libcuda\|libnvrtc\|libnvJitLink\)[^ ]*' | sort -u | tr '\n' ' '; }
say "auto loaded: $(loaded "$cli" -e "$program")(nothing: no CUDA started)"
say "cuda loaded: $(loaded "$cli" --backend cuda -e "$program")(a disk-cache hit: libcuda only)"
say "auto -v: $("$cli" -v -e "$program" 2>&1 >/dev/null | tr '\n' ' ')"
say "cuda --time: $("$cli" --backend cuda --time -e "$program" 2>&1 >/dev/null | tr '\n' ' ')"
rm -rf "$JITEXPR_CACHE_DIR"
