#!/usr/bin/env bash
# Issue 16 on one GPU, in one call of at most ~10 minutes: the language's whole CUDA side.
#   build   a Release build with the Python extension, the GPU and NVRTC test programs first
#   gpu     every test labelled gpu (the CUDA differential suite against NumPy 2 among them:
#           DifferentialNumPy.CudaBackendAgrees, every case contiguous and strided), timed
#   nvrtc   the kernels' NVRTC compile tests (every op, statistic, scan, selection to CUBIN)
#   python  the package's GPU tests from the build tree (PYTHONPATH=build-gpu/python)
#   fuzz    the differential fuzzer on the CUDA backend through the package, seeds 16 and 301
#   rest    everything else in the tree, built and run (ctest -LE gpu) with the time left
#   build-all  (with build) every target at once; only  ONLY='ctest regex', with their output
# Each step is cut to the time left before DEADLINE seconds (default 570) and prints its time;
# logs and a summary (language-summary.txt) land in $OUT (default gpu-out).
#
#   OUT=dir STEPS="build gpu nvrtc python fuzz rest" scripts/gpu-language.sh
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
steps=${STEPS:-build gpu nvrtc python fuzz rest}
deadline=${DEADLINE:-570}
fuzz_seconds=${FUZZ_SECONDS:-90}
build=build-gpu
summary="$out/language-summary.txt"
has() { case " $steps " in *" $1 "*) return 0;; esac; return 1; }
left() { echo $((deadline - SECONDS)); }
limit() {  # the smaller of $1 and the time left, at least 1
  local l
  l=$(left)
  [ "$l" -lt "$1" ] && echo $((l > 1 ? l : 1)) || echo "$1"
}
note() { echo "$*" | tee -a "$summary"; }
timed() {  # name limit command...: runs it, notes rc and seconds
  local name=$1 lim t0 rc
  lim=$(limit "$2")
  shift 2
  t0=$SECONDS
  timeout "$lim" "$@" > "$out/$name.log" 2>&1
  rc=$?
  note "$name: rc=$rc in $((SECONDS - t0)) s (limit ${lim} s)"
  return $rc
}
: > "$summary"
note "# $(date -u +%FT%TZ) git HEAD there $(git rev-parse --short HEAD 2>/dev/null) (the device copy's .git can be older than its tree) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
gpu_targets="test_arrow_gpu test_cancel_gpu test_cuda_driver test_cuda_exec test_cuda_hybrid test_diff_cuda
  test_dlpack_gpu test_gpu_faults test_layouts_gpu test_mask_gpu test_module_cache_gpu test_multi_gpu
  test_pipeline_gpu test_quantile_gpu test_reductions_gpu test_scans_gpu test_stream_gpu test_toolkit_gpu
  example_analytics jitexpr_tool _jitexpr"
nvrtc_targets="test_codegen_nvrtc test_codegen_ptx test_semantics_nvrtc test_nvrtc test_codegen_scans
  test_codegen_compact test_codegen_select test_codegen_statistics"
if has build; then
  timed cmake 120 cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DJITEXPR_BUILD_PYTHON=ON \
    -DPython_EXECUTABLE="$(command -v python3)"
  # Targets a tree may not have are skipped (ninja would stop on an unknown one).
  have=$(cmake --build $build --target help 2>/dev/null | sed -n 's/^\([A-Za-z0-9_]*\): .*/\1/p')
  pick() { for t in "$@"; do grep -qx "$t" <<< "$have" && echo "$t"; done; }
  # shellcheck disable=SC2046,SC2086
  timed build-gpu-targets 380 cmake --build $build -j"$(nproc)" -- -k 0 $(pick $gpu_targets $nvrtc_targets)
  if has build-all; then timed build-gpu-all 300 cmake --build $build -j"$(nproc)" -- -k 0; fi
fi
if has only && [ -n "${ONLY:-}" ]; then
  # ONLY='ctest regex': those tests (any label), with their output
  timed ctest-only 300 ctest --test-dir $build -R "$ONLY" -j8 --timeout 240 --output-on-failure
  grep -E "tests passed|\*\*\*Failed|Timeout|Not Run" "$out/ctest-only.log" | tee -a "$summary"
fi
if has gpu; then
  timed ctest-gpu 260 ctest --test-dir $build -L gpu -j8 --timeout 240 --output-on-failure
  grep -E "tests passed|\*\*\*Failed|Timeout|Not Run" "$out/ctest-gpu.log" | tee -a "$summary"
  grep -E "DifferentialNumPy.CudaBackendAgrees" "$out/ctest-gpu.log" | tee -a "$summary"
fi
if has nvrtc; then
  timed ctest-nvrtc 120 ctest --test-dir $build -R 'Nvrtc|Ptx|Toolkit|Cubin' -LE gpu -j8 --timeout 110 --output-on-failure
  grep -E "tests passed|\*\*\*Failed|Timeout|Not Run" "$out/ctest-nvrtc.log" | tee -a "$summary"
fi
export PYTHONPATH=$PWD/$build/python${PYTHONPATH:+:$PYTHONPATH}
if has python; then
  (cd tests/python && JITEXPR_DISK_CACHE=0 timeout "$(limit 90)" python3 -m pytest -q -rs -p no:cacheprovider \
     test_gpu.py test_dlpack.py test_no_cuda.py) > "$out/python-gpu.log" 2>&1
  note "python GPU tests: rc=$?"
  tail -4 "$out/python-gpu.log" | tee -a "$summary"
fi
if has fuzz; then
  for seed in 16 301; do
    s=$(limit "$fuzz_seconds")
    [ "$s" -lt 20 ] && break
    timed "fuzz-cuda-$seed" $((s + 30)) python3 fuzz/differential/fuzz_numpy.py --driver python --backend cuda \
      --seed "$seed" --minutes "$(awk "BEGIN{print $s / 60}")" --max-findings 15
    tail -1 "$out/fuzz-cuda-$seed.log" | tee -a "$summary"
    grep -c "^FINDING" "$out/fuzz-cuda-$seed.log" | sed 's/^/findings: /' | tee -a "$summary"
  done
fi
if has rest && [ "$(left)" -gt 60 ]; then
  timed build-gpu-all $(($(left) - 40)) cmake --build $build -j"$(nproc)" -- -k 0
  timed ctest-rest $(($(left) - 5)) ctest --test-dir $build -LE gpu -j16 --timeout 120
  grep -E "tests passed|\*\*\*Failed|Timeout|Not Run" "$out/ctest-rest.log" | tail -30 | tee -a "$summary"
fi
note "total: $SECONDS s"
