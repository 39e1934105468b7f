"""device= in jitexpr.evaluate / jitexpr.run: checked on any machine; evaluation on a chosen GPU,
and arrays on two GPUs, where the devices exist (test_multi_gpu.py)."""
import numpy as np
import pytest

import jitexpr as jx


def test_device_mismatch_error_is_an_argument_error():
    assert issubclass(jx.DeviceMismatchError, jx.ArgumentError)
    assert "DeviceMismatchError" in jx.__all__


@pytest.mark.parametrize("bad", [-1, "0", 1.0, True])
def test_device_must_be_an_ordinal(bad):
    with pytest.raises(jx.ArgumentError, match="device"):
        jx.evaluate("a + 1", a=np.arange(3.0), device=bad)


def test_device_with_the_cpu_backend_is_refused():
    with pytest.raises(jx.ArgumentError, match="backend='cpu'"):
        jx.evaluate("a + 1", a=np.arange(3.0), backend="cpu", device=0)


def test_device_on_a_machine_without_cuda_is_no_device_error():
    if jx.cuda_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(jx.NoDeviceError):
        jx.evaluate("a + 1", a=np.arange(3.0), device=0)
    with pytest.raises(jx.NoDeviceError):
        jx.run("c = a + 1", a=np.arange(3.0), device=0)


def test_host_inputs_without_device_stay_on_the_host():
    r = jx.evaluate("a * 2", a=np.arange(4.0))
    assert isinstance(r, np.ndarray)
    np.testing.assert_array_equal(r, np.arange(4.0) * 2)
