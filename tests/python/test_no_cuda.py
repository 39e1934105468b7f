"""The package on a machine without CUDA: import works, evaluation runs on the CPU, and info()
says what is missing. Run in fresh interpreters with the toolkit hidden (JITEXPR_NVRTC and
JITEXPR_NVJITLINK pointing nowhere); where the machine has no driver (CI), that too."""
import json
import os
import subprocess
import sys

PROBE = r"""
import json, numpy as np, jitexpr as jx
a = np.arange(5.0)
r = jx.evaluate("sin(a) * 2 + a")
maps = open("/proc/self/maps").read()
print(json.dumps({
    "ok": bool(np.allclose(r, np.sin(a) * 2 + a)),
    "info": jx.info(),
    "available": jx.cuda_available(),
    "mapped": [lib for lib in ("libnvrtc", "libnvJitLink", "libcudart") if lib in maps],
}))
"""


def probe(env_extra):
    env = dict(os.environ, **env_extra)
    for k in ("PYTHONPATH",):
        if k in os.environ:
            env[k] = os.environ[k]
    r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_import_and_cpu_evaluation_with_the_toolkit_hidden():
    out = probe({"JITEXPR_NVRTC": "/nonexistent/libnvrtc.so", "JITEXPR_NVJITLINK": "/nonexistent/nvjitlink"})
    assert out["ok"]
    nvrtc = out["info"]["cuda"]["nvrtc"]
    assert not nvrtc["found"]
    assert "JITEXPR_NVRTC=/nonexistent/libnvrtc.so" in nvrtc["error"]
    assert not out["info"]["cuda"]["nvjitlink"]["found"]
    assert out["mapped"] == []


def test_a_cpu_evaluation_maps_no_cuda_library():
    out = probe({})
    assert out["ok"]
    assert out["mapped"] == []


def test_without_a_driver_info_says_why_cuda_is_off():
    out = probe({})
    cuda = out["info"]["cuda"]
    if cuda["available"]:
        import pytest
        pytest.skip("this machine has a CUDA driver and device")
    assert not out["available"]
    assert "driver" in cuda["reason"].lower()
    assert cuda["devices"] == []


def test_the_extension_links_nothing_of_cuda():
    import jitexpr._jitexpr as core
    r = subprocess.run(["readelf", "-d", core.__file__], capture_output=True, text=True)
    if r.returncode != 0:
        import pytest
        pytest.skip("readelf is not available")
    needed = [line for line in r.stdout.splitlines() if "NEEDED" in line]
    assert needed
    assert not [n for n in needed if any(lib in n for lib in ("libcuda", "libnvrtc", "libnvJitLink", "libcudart"))]
