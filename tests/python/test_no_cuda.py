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


def test_an_nvidia_wheel_of_a_cuda_major_jitexpr_does_not_use_is_skipped_and_info_says_why(tmp_path):
    # The package copied into a site folder of its own, beside a CUDA 11 NVRTC wheel's layout.
    import shutil

    import pytest

    site = tmp_path / "site"
    import jitexpr

    here = os.path.dirname(jitexpr.__file__)
    shutil.copytree(here, site / "jitexpr")
    if os.path.isdir(here + ".libs"):  # a wheel's: the libraries auditwheel copied in (libfmt)
        shutil.copytree(here + ".libs", site / "jitexpr.libs")
    lib = site / "nvidia" / "cuda_nvrtc" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnvrtc.so.11.2").write_text("not a library")
    (lib / "libnvrtc-builtins.so.11.8").write_text("not a library")
    env = {k: v for k, v in os.environ.items() if k not in ("JITEXPR_NVRTC", "PYTHONPATH")}
    env["PYTHONPATH"] = str(site)
    code = "import json, jitexpr; print(json.dumps(jitexpr.info()['cuda']['nvrtc']))"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    nvrtc = json.loads(r.stdout)
    if nvrtc["source"] == "the system toolkit":
        pytest.skip("this machine's CUDA toolkit comes before NVIDIA's wheels (scripts/test-wheel.sh hides it)")
    assert [s["path"] for s in nvrtc["skipped"]] == [os.path.realpath(lib / "libnvrtc.so.11.2")]
    assert "CUDA 11's NVRTC, and jitexpr uses CUDA 12's or 13's" in nvrtc["skipped"][0]["reason"]
    if not nvrtc["found"]:
        assert "libnvrtc.so.11.2 was skipped" in nvrtc["error"]


def test_the_extension_links_nothing_of_cuda():
    import jitexpr._jitexpr as core
    r = subprocess.run(["readelf", "-d", core.__file__], capture_output=True, text=True)
    if r.returncode != 0:
        import pytest
        pytest.skip("readelf is not available")
    needed = [line for line in r.stdout.splitlines() if "NEEDED" in line]
    assert needed
    assert not [n for n in needed if any(lib in n for lib in ("libcuda", "libnvrtc", "libnvJitLink", "libcudart"))]
