#!/usr/bin/env bash
# Issue 30 on the GPU machine, into $OUT (default ./gpu-out): the release's wheel for this
# machine's Python (dist/, from scripts/build-wheels.sh: pass `carry: ["dist"]` to the run, since
# dist/ is not in git) installed beside NVIDIA's NVRTC and nvJitLink wheels, the CUDA toolkit
# hidden, then jitexpr.info() (NVRTC and nvJitLink must come from "an NVIDIA wheel") and the
# package's GPU tests. No network: nothing but the wheel is installed. About 2 minutes; root.
#   OUT=... scripts/gpu-wheel.sh
set -u
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-gpu-out}
mkdir -p "$out"
if [ -z "${JITEXPR_GPU_WHEEL_NS:-}" ]; then
  exec unshare -m --propagation private env JITEXPR_GPU_WHEEL_NS=1 "$0" "$@"
fi
ver=$(python3 -c 'import sys; print("%d%d" % sys.version_info[:2])')
wheel=$(ls dist/jitexpr-*-cp"$ver"-cp"$ver"-*manylinux*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "gpu-wheel: no wheel for CPython $ver in dist/ (carry dist)"; exit 1; }
# Where NVIDIA's wheels are.
site=$(python3 -c 'import nvidia, os; print(os.path.dirname(sorted(nvidia.__path__)[0]))' 2>/dev/null)
[ -n "$site" ] || { echo "gpu-wheel: no NVIDIA wheels (nvidia-cuda-nvrtc, nvidia-nvjitlink) for python3"; exit 1; }
ls -d "$site"/nvidia/*/lib > "$out/nvidia-wheels.txt"
# The toolkit hidden: jitexpr must find NVRTC and nvJitLink in the wheels alone.
empty=$(mktemp -d)
for d in /usr/local/cuda*; do [ -d "$d" ] && mount --bind "$empty" "$(readlink -f "$d")"; done
unset CUDA_HOME CUDA_PATH JITEXPR_NVRTC JITEXPR_NVJITLINK
export LD_LIBRARY_PATH=
[ ! -e /usr/local/cuda/include/cuda.h ] || { echo "gpu-wheel: the toolkit is still visible"; exit 1; }
target=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --target "$target" "$wheel" > "$out/pip.log" 2>&1 ||
  { cat "$out/pip.log"; exit 1; }
# The package beside the nvidia/ namespace, as in one site-packages: jitexpr looks for
# nvidia/*/lib next to its own folder.
ln -s "$site/nvidia" "$target/nvidia"
export PYTHONPATH=$target
python3 - > "$out/info.txt" 2>&1 <<'EOF'
import json, jitexpr
i = jitexpr.info(load_compilers=True)
print(json.dumps(i, indent=1))
c = i["cuda"]
import os
assert os.environ["PYTHONPATH"] in jitexpr.__file__, jitexpr.__file__
assert c["available"], c["reason"]
for lib in ("nvrtc", "nvjitlink"):
    assert c[lib]["source"] == "an NVIDIA wheel" and c[lib]["loaded"], (lib, c[lib])
print("gpu-wheel: NVRTC", c["nvrtc"]["version"], "and nvJitLink from NVIDIA's wheels; driver", c["driver_version"])
EOF
rc=$?
tail -1 "$out/info.txt"
[ $rc = 0 ] || { cat "$out/info.txt"; exit 1; }
(cd tests/python && JITEXPR_DISK_CACHE=0 timeout 300 python3 -m pytest -q -rs -p no:cacheprovider \
   test_gpu.py test_dlpack.py test_devices.py test_api.py test_version.py test_imports.py) > "$out/python-tests.log" 2>&1
rc=$?
tail -15 "$out/python-tests.log"
exit $rc
