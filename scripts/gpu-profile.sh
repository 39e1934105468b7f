#!/usr/bin/env bash
# Issue 31 item 5 on the GPU machine, one device call: where a Python call's host time goes.
# A Release build of the extension with symbols (-g, frame pointers), then into $OUT:
#   parts.txt        bench/python_gpu_profile.py parts (each step of a call timed on its own)
#   python-gpu.json  bench/python_gpu.py --bench-gpu (the figures the issue is judged by)
# and, when STEPS names them, the soak's CUDA mode (soak) and the Dask-on-GPU tests (dask).
# Needs the wheels of .whl/ (carried): dask, distributed, dask-cuda. (py-spy --native was tried
# there on 2026-12-04: its unwinding through libcuda fell 20-30 s behind and wrote nothing in 60 s,
# so the steps are timed apart instead.)
#   STEPS="build pytests parts bench pprof soak dask"  (default: all but pprof; pytests: the GPU-facing
#   Python tests; pprof: each loop case under gperftools, PPROF_CASES="cupy-out cupy-new")
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
steps=${STEPS:-build pytests parts bench soak dask}
has() { case " $steps " in *" $1 "*) return 0;; esac; return 1; }
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
fi
export PYTHONUNBUFFERED=1 JITEXPR_DISK_CACHE=0
uname -r > "$out/uname.txt"
build=build-gpu
if has build; then
  t0=$SECONDS
  cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DJITEXPR_BUILD_PYTHON=ON -DJITEXPR_PYTHON_NOSTRIP=ON \
    -DCMAKE_CXX_FLAGS="-g -fno-omit-frame-pointer" -Dnanobind_DIR="$(python3 -m nanobind --cmake_dir)" > "$out/build.log" 2>&1
  cmake --build $build -j"$(nproc)" --target _jitexpr bench_gpu jitexpr_c jitexpr_tool >> "$out/build.log" 2>&1 ||
    { echo "build failed"; tail -30 "$out/build.log"; exit 1; }
  echo "build: $((SECONDS - t0)) s"
fi
export PYTHONPATH=$PWD/$build/python${PYTHONPATH:+:$PYTHONPATH}
if has pytests; then
  (cd tests/python && timeout 120 python3 -m pytest -q -rs -p no:cacheprovider test_gpu.py test_dlpack.py test_read_only.py \
     test_lying_producers.py test_devices.py) > "$out/python-tests.txt" 2>&1
  tail -6 "$out/python-tests.txt"
fi
if has parts; then
  timeout 120 python3 bench/python_gpu_profile.py parts > "$out/parts.txt" 2>&1
  cat "$out/parts.txt"
fi
if has bench; then
  timeout 300 python3 bench/python_gpu.py --bench-gpu $build/bench/bench_gpu --json "$out/python-gpu.json" > "$out/python-gpu.txt" 2>&1
  tail -25 "$out/python-gpu.txt"
fi
if has pprof; then
  # The loop of each case under gperftools' sampling profiler (carried in .carry/prof, as for
  # gpu-session.sh's profile step): where a call's host time goes, the extension's functions
  # beside the interpreter's, CuPy's and the driver's.
  if [ -f .carry/prof/libprofiler.so.0 ]; then
    py=$(python3 -c 'import sys; print(sys.executable)')
    for c in ${PPROF_CASES:-cupy-out cupy-new}; do
      timeout 60 env CPUPROFILE="$out/py-$c.prof" CPUPROFILE_FREQUENCY=4000 LD_PRELOAD="$PWD/.carry/prof/libprofiler.so.0" \
        LD_LIBRARY_PATH="$PWD/.carry/prof" python3 bench/python_gpu_profile.py loop "$c" 6 > "$out/py-$c.txt" 2>&1
      perl .carry/prof/google-pprof --text "$py" "$out/py-$c.prof" > "$out/py-$c-self.txt" 2>/dev/null
      perl .carry/prof/google-pprof --text --cum "$py" "$out/py-$c.prof" > "$out/py-$c-cum.txt" 2>/dev/null
      echo "## $c"; cat "$out/py-$c.txt"; head -45 "$out/py-$c-self.txt" | cut -c1-150
      echo "## $c, inclusive"; grep -E "jit|nb::|py_|cupy|cuLaunch|Cy|PyObject_Vectorcall" "$out/py-$c-cum.txt" | head -60 | cut -c1-150
    done
  else
    echo "pprof: no .carry/prof/libprofiler.so.0"
  fi
fi
if has soak; then
  timeout 200 python3 bench/soak/soak.py --seconds "${SOAK_SECONDS:-120}" --backend cuda \
    --library $build/api/libjitexpr_c.so --cli $build/tools/jitexpr > "$out/soak-cuda.txt" 2>&1
  echo "soak cuda: exit $?"; tail -15 "$out/soak-cuda.txt"
fi
if has dask; then
  (cd tests/python && timeout 150 python3 -m pytest -q -rs -p no:cacheprovider on_dask/test_dask_gpu.py) > "$out/dask-gpu.txt" 2>&1
  tail -8 "$out/dask-gpu.txt"
fi
exit 0
