"""Several GPUs from Python: device= names the GPU, results stay on the inputs' GPU, inputs on
two GPUs are a DeviceMismatchError unless device= asks for the copy. Skips with a message unless
CUDA, CuPy and (for most tests) two devices are present."""
import numpy as np
import pytest

import jitexpr as jx

if not jx.cuda_available():
    pytest.skip("no CUDA device: " + jx.info()["cuda"]["reason"], allow_module_level=True)
cupy = pytest.importorskip("cupy")
DEVICES = len(jx.info()["cuda"]["devices"])
two = pytest.mark.skipif(DEVICES < 2, reason="needs 2 CUDA devices, this machine has %d" % DEVICES)


def test_device_zero_explicit():
    a = cupy.arange(8, dtype=cupy.float32)
    r = jx.evaluate("a * 2 + 1", a=a, device=0)
    assert isinstance(r, cupy.ndarray) and r.device.id == 0
    cupy.testing.assert_array_equal(r, a * 2 + 1)


def test_a_device_the_machine_lacks_is_an_argument_error():
    with pytest.raises(jx.ArgumentError, match="no CUDA device %d" % DEVICES):
        jx.evaluate("a + 1", a=np.arange(3.0), device=DEVICES)


def test_host_inputs_go_to_the_named_device_only_when_asked():
    r = jx.evaluate("a + 1", a=np.arange(3.0), device=0)
    assert r.__dlpack_device__() == (2, 0)


@two
def test_results_stay_on_the_inputs_device():
    with cupy.cuda.Device(1):
        a = cupy.arange(16, dtype=cupy.float64)
    r = jx.evaluate("a * 3", a=a)
    assert isinstance(r, cupy.ndarray) and r.device.id == 1
    with cupy.cuda.Device(1):
        cupy.testing.assert_array_equal(r, a * 3)


@two
def test_inputs_on_two_gpus_are_a_mismatch_until_device_asks_for_the_copy():
    a = cupy.arange(16, dtype=cupy.float32)
    with cupy.cuda.Device(1):
        b = cupy.ones(16, dtype=cupy.float32)
    with pytest.raises(jx.DeviceMismatchError, match="cuda:0.*cuda:1|cuda:1.*cuda:0"):
        jx.evaluate("a + b", a=a, b=b)
    r = jx.evaluate("a + b", a=a, b=b, device=1)
    assert r.device.id == 1
    with cupy.cuda.Device(1):
        cupy.testing.assert_array_equal(r, cupy.asarray(a.get() + 1))


@two
def test_the_current_cupy_device_is_the_default_for_host_inputs_with_backend_cuda():
    with cupy.cuda.Device(1):
        r = jx.evaluate("a + 1", a=np.arange(3.0), backend="cuda")
    assert r.__dlpack_device__() == (2, 1)
