"""The extension shares the process with the other libraries of a Python session (issue 19): it
exports nothing but its init function, uses the process's libstdc++ rather than a copy of its own,
and PyTorch and CuPy import after it. Each import order runs in a fresh interpreter; the peers
skip where they are not installed."""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest


def extension_path():
    import jitexpr._jitexpr as core
    return core.__file__


def run_python(code):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-X", "faulthandler", "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)


def need(*modules):
    for m in modules:
        if importlib.util.find_spec(m) is None:
            pytest.skip(f"{m} is not installed")


def test_the_extension_exports_only_its_init_function():
    nm = shutil.which("nm")
    if not nm:
        pytest.skip("nm (binutils) is not available")
    r = subprocess.run([nm, "-D", "--defined-only", extension_path()], capture_output=True, text=True, check=True)
    names = sorted(line.split()[-1] for line in r.stdout.splitlines() if line.strip())
    assert names == ["PyInit__jitexpr"], f"{len(names)} exported symbols, e.g. {names[:20]}"


def test_the_extension_uses_the_shared_libstdcxx_of_the_process():
    readelf = shutil.which("readelf")
    if not readelf:
        pytest.skip("readelf (binutils) is not available")
    import jitexpr._jitexpr as ext
    if not ext._BUILT_WITH_SHARED_LIBSTDCXX:
        pytest.skip("the compiler that built the module has no shared libstdc++ (CMake warned at configure "
                    "time); its static copy is hidden, which test_the_extension_exports_only_its_init_function checks")
    r = subprocess.run([readelf, "-d", extension_path()], capture_output=True, text=True, check=True)
    needed = [line.split("[")[-1].rstrip("]") for line in r.stdout.splitlines() if "(NEEDED)" in line]
    assert any(n.startswith("libstdc++.so") for n in needed), f"no libstdc++ among NEEDED {needed}: linked in statically"


def test_torch_imports_after_jitexpr():
    need("torch")
    r = run_python("import jitexpr, numpy as np\n"
                   "jitexpr.evaluate('a * 2', a=np.arange(3.0))\n"
                   "import torch\n"
                   "print(torch.arange(3) * 2)")
    assert r.returncode == 0, r.stderr[-3000:]


def test_torch_imports_after_jitexpr_and_cupy():
    need("torch", "cupy")
    r = run_python("import jitexpr\n"
                   "import cupy\n"
                   "if jitexpr.cuda_available():\n"
                   "    a = cupy.arange(3.0)\n"
                   "    assert (jitexpr.evaluate('a * 2', a=a) == a * 2).all()\n"
                   "import torch\n"
                   "print(torch.arange(3) * 2)")
    assert r.returncode == 0, r.stderr[-3000:]


def test_jitexpr_imports_after_torch():
    need("torch")
    r = run_python("import torch\n"
                   "import jitexpr, numpy as np\n"
                   "print(jitexpr.evaluate('a * 2', a=np.arange(3.0)))")
    assert r.returncode == 0, r.stderr[-3000:]
