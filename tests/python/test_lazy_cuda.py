"""When the package starts the CUDA driver (issue 33 item 4): `import jitexpr` and evaluations that
run on the CPU start none; a Runtime made under backend='auto' starts it only when asked or when
work goes to the GPU, and then once. Run in fresh interpreters whose libcuda.so.1 is tests/cuda's
stand-in (the build tree's, or $JITEXPR_FAKE_CUDA_DIR's), which logs each driver call to
$JITEXPR_FAKE_CUDA_LOG and refuses all work on the device. Skipped where it is not built."""
import os
import subprocess
import sys

import pytest

FAKE_DIR = os.environ.get("JITEXPR_FAKE_CUDA_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "../../build/tests/cuda/fake_driver")

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(FAKE_DIR, "libcuda.so.1")),
                                reason="the stand-in libcuda.so.1 is not built (build/tests/cuda/fake_driver)")


def driver_calls(tmp_path, code):
    """The driver's log while `code` runs in a fresh interpreter (which must succeed)."""
    log = tmp_path / "driver.log"
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.abspath(FAKE_DIR), JITEXPR_FAKE_CUDA_LOG=str(log),
               JITEXPR_DISK_CACHE="0")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return log.read_text().splitlines() if log.exists() else []


def test_import_loads_no_driver(tmp_path):
    assert driver_calls(tmp_path, "import jitexpr") == []


def test_an_evaluation_of_host_data_loads_no_driver(tmp_path):
    code = ("import numpy as np, jitexpr as jx\n"
            "a = np.arange(4.0)\n"
            "assert (jx.evaluate('a * 2 + 1') == a * 2 + 1).all()\n"
            "assert jx.evaluate('1 + 2') == 3\n")
    assert driver_calls(tmp_path, code) == []


def test_an_auto_runtime_starts_the_driver_only_when_its_backend_is_asked(tmp_path):
    code = ("import jitexpr as jx\n"
            "rt = jx.Runtime()\n"
            "open(__import__('os').environ['JITEXPR_FAKE_CUDA_LOG'], 'a').write('made\\n')\n"
            "assert rt.backend == 'cuda', rt.backend\n"
            "assert rt.fallback_reason == ''\n")
    log = driver_calls(tmp_path, code)
    assert log[0] == "made", log
    assert log.count("cuInit") == 1, log
    assert log.count("cuDevicePrimaryCtxRetain") == 1, log


def test_an_evaluation_on_the_gpu_starts_the_driver_once(tmp_path):
    code = ("import numpy as np, jitexpr as jx\n"
            "for _ in range(2):\n"
            "    try:\n"
            "        jx.evaluate('a * 2', {'a': np.arange(4.0)}, backend='cuda')\n"
            "    except jx.CudaError:\n"
            "        pass\n")
    log = driver_calls(tmp_path, code)
    assert log.count("loaded") == 1, log
    assert log.count("cuInit") == 1, log
    assert log.count("cuDevicePrimaryCtxRetain") == 1, log


def test_the_numexpr_drop_in_loads_no_driver(tmp_path):
    code = ("import numpy as np, jitexpr.numexpr as ne\n"
            "a = np.arange(4.0)\n"
            "assert (ne.evaluate('a * 2') == a * 2).all()\n")
    assert driver_calls(tmp_path, code) == []


def test_an_arrow_evaluation_of_host_columns_loads_no_driver(tmp_path):
    pytest.importorskip("pyarrow")
    code = ("import pyarrow as pa, jitexpr as jx\n"
            "r = jx.evaluate('a * 2 + b', a=pa.array([1.0, None, 3.0]), b=pa.array([1.0, 2.0, 3.0]))\n"
            "assert r.to_pylist() == [3.0, None, 9.0], r\n")
    assert driver_calls(tmp_path, code) == []
