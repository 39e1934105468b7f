"""On a GPU (skipped without a device or without CuPy/PyTorch): CuPy and PyTorch arrays are
evaluated where they live without copies — results are arrays of the caller's library, the
input pointers are read in place, out= is written in place — on the producer's current stream."""
import numpy as np
import pytest

from support import gpu_or_skip, need

import jitexpr as jx


@pytest.fixture
def cupy():
    gpu_or_skip()
    return need("cupy")


@pytest.fixture
def torch():
    gpu_or_skip()
    t = need("torch")
    if not t.cuda.is_available():
        pytest.skip("PyTorch has no CUDA device")
    return t


def test_cupy_in_cupy_out(cupy):
    a = cupy.arange(1 << 20, dtype=cupy.float32)
    b = cupy.ones(1 << 20, dtype=cupy.float32)
    r = jx.evaluate("a * 2 + b", a=a, b=b)
    assert isinstance(r, cupy.ndarray)
    assert r.dtype == cupy.float32
    cupy.testing.assert_array_equal(r, a * 2 + b)


def test_cupy_out_is_written_in_place(cupy):
    a = cupy.arange(4096, dtype=cupy.float64)
    out = cupy.empty_like(a)
    ptr = out.data.ptr
    r = jx.evaluate("sin(a) + 1", a=a, out=out)
    assert r is out and out.data.ptr == ptr
    cupy.testing.assert_allclose(out, cupy.sin(a) + 1, rtol=1e-12)


def test_cupy_inputs_are_read_in_place_not_copied(cupy):
    a = cupy.arange(1000, dtype=cupy.float32)
    view = a[::2]
    r = jx.evaluate("v * 3", v=view)
    cupy.testing.assert_array_equal(r, view * 3)
    # A result that shares no memory with the input, and DLPack back into CuPy without a copy.
    t = jx._jitexpr.evaluate("v * 3", {"v": view}, None, None, None, None, True)
    assert cupy.from_dlpack(t).data.ptr == t.__cuda_array_interface__["data"][0]


def test_cupy_current_stream_is_honoured(cupy):
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        a = cupy.arange(1 << 22, dtype=cupy.float32)
        r = jx.evaluate("a * 2", a=a)
        t = jx._jitexpr.evaluate("a * 2", {"a": a}, None, None, None, None, True)  # as a jitexpr Tensor
        assert t.stream == s.ptr
        s.synchronize()
    cupy.testing.assert_array_equal(r, a * 2)


def test_cupy_current_stream_is_read_on_every_call(cupy):
    a = cupy.arange(16, dtype=cupy.float32)
    s = cupy.cuda.Stream(non_blocking=True)

    def stream_of_a_call():
        return jx._jitexpr.evaluate("a * 2", {"a": a}, None, None, None, None, True).stream

    before = stream_of_a_call()
    with s:
        inside = stream_of_a_call()
    after = stream_of_a_call()
    s.synchronize()
    assert inside == s.ptr
    assert before == after == cupy.cuda.get_current_stream().ptr


def test_a_cupy_result_is_made_over_jitexpr_memory_and_freed_with_it(cupy):
    import gc
    a = cupy.arange(1000, dtype=cupy.float32)
    gc.collect()  # results of earlier tests gone first
    before = jx._jitexpr.live_results()
    r = jx.evaluate("a * 2", a=a)
    assert type(r) is cupy.ndarray and r.shape == (1000,) and r.dtype == cupy.float32
    assert r.device.id == a.device.id
    assert jx._jitexpr.live_results() == before + 1
    cupy.testing.assert_array_equal(r, a * 2)
    del r
    gc.collect()
    assert jx._jitexpr.live_results() == before


def test_cupy_inputs_of_any_layout_are_read_through_their_attributes(cupy):
    m = cupy.arange(24, dtype=cupy.float64).reshape(4, 6)
    for x in (m, m.T, m[::2, ::-3], m[1:, 2:5], m[:0], cupy.float32(3) * cupy.ones(()), m[0]):
        cupy.testing.assert_array_equal(jx.evaluate("x + 1", x=x), x + 1)
    # Reductions give 0-d CuPy arrays; an int8 or a bool input keeps its kind.
    r = jx.evaluate("sum(x)", x=m)
    assert type(r) is cupy.ndarray and r.shape == () and float(r) == float(m.sum())
    cupy.testing.assert_array_equal(jx.evaluate("x > 3", x=cupy.arange(6, dtype=cupy.int8)),
                                    cupy.arange(6) > 3)


def test_a_cupy_array_read_again_after_its_shape_is_set_is_read_with_the_new_shape(cupy):
    a = cupy.arange(12, dtype=cupy.float32)
    cupy.testing.assert_array_equal(jx.evaluate("a * 2", a=a), a * 2)  # read, and kept
    a.shape = (3, 4)  # a reshape in place: the same memory, another shape
    r = jx.evaluate("a * 2", a=a)
    assert r.shape == (3, 4)
    cupy.testing.assert_array_equal(r, a * 2)
    t = a.T  # a new array over the same memory, not C-contiguous: its own strides
    cupy.testing.assert_array_equal(jx.evaluate("t + 1", t=t), t + 1)
    cupy.testing.assert_array_equal(jx.evaluate("t + 1", t=t), t + 1)


def test_many_cupy_arrays_in_turn_are_each_read_as_they_are(cupy):
    arrays = [cupy.full((5,), float(i), dtype=cupy.float64) for i in range(40)]
    for _ in range(2):
        for i, a in enumerate(arrays):
            assert float(jx.evaluate("sum(a)", a=a)) == 5.0 * i
    del arrays  # the kept entries go with their arrays
    b = cupy.full((5,), 7.0)
    assert float(jx.evaluate("sum(b)", b=b)) == 35.0


def test_a_cupy_subclass_goes_the_interface_way(cupy):
    class Sub(cupy.ndarray):
        pass
    a = Sub((8,), cupy.float64)
    a[...] = cupy.arange(8.0)
    cupy.testing.assert_array_equal(jx.evaluate("a * 2", a=a), cupy.arange(8.0) * 2)


def test_a_cupy_result_on_a_stream_of_the_callers_is_waited_for_on_cupys(cupy):
    s = cupy.cuda.Stream(non_blocking=True)
    a = cupy.arange(1 << 22, dtype=cupy.float32)
    r = jx.evaluate("a * 2", a=a, stream=s.ptr)  # queued on s; CuPy reads it on its own stream
    cupy.testing.assert_array_equal(r, a * 2)


def test_cupy_out_is_bound_once_and_written_in_place(cupy):
    a = cupy.arange(64, dtype=cupy.float32)
    out = cupy.empty_like(a)
    for _ in range(3):
        assert jx.evaluate("a + 1", a=a, out=out) is out
    cupy.testing.assert_array_equal(out, a + 1)


def test_torch_in_torch_out(torch):
    a = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
    r = jx.evaluate("a * 2 + 1", a=a)
    assert isinstance(r, torch.Tensor) and r.is_cuda
    assert torch.equal(r, a * 2 + 1)


def test_torch_out_and_stream(torch):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a = torch.rand(1 << 20, device="cuda", dtype=torch.float64)
        out = torch.empty_like(a)
        ptr = out.data_ptr()
        jx.evaluate("exp(-a) * a", a=a, out=out)
        t = jx._jitexpr.evaluate("a + 1", {"a": a}, None, None, None, None, True)
        assert t.stream == s.cuda_stream
    s.synchronize()
    assert out.data_ptr() == ptr
    assert torch.allclose(out, torch.exp(-a) * a)


def test_a_torch_result_is_a_plain_cuda_tensor_of_the_inputs_device(torch):
    a = torch.arange(1000, device="cuda", dtype=torch.float32)
    r = jx.evaluate("a * 2", a=a)
    assert type(r) is torch.Tensor and r.device == a.device and r.shape == (1000,)
    assert torch.equal(r, a * 2)
    r2 = jx.evaluate("sum(a)", a=a)
    assert r2.shape == () and float(r2) == float(a.sum())


def test_torch_inputs_of_any_layout_and_dtype(torch):
    m = torch.arange(24, device="cuda", dtype=torch.float64).reshape(4, 6)
    for x in (m, m.T, m[::2], m[1:, 2:5], m[:0]):
        assert torch.equal(jx.evaluate("x + 1", x=x), x + 1)
    for dt in (torch.int32, torch.int64, torch.float16, torch.uint8, torch.bool):
        x = torch.arange(5, device="cuda").to(dt)
        assert torch.equal(jx.evaluate("x == x", x=x), torch.ones(5, dtype=torch.bool, device="cuda"))


def test_host_and_device_mixed_is_an_error_unless_asked_for(cupy):
    a = cupy.ones(4)
    h = np.ones(4)
    with pytest.raises(jx.ArgumentError):
        jx.evaluate("a + h", a=a, h=h)
    r = jx.evaluate("a + h", a=a, h=h, backend="cuda")
    cupy.testing.assert_array_equal(r, cupy.full(4, 2.0))


def test_numba_cuda_array_interface(cupy):
    numba_cuda = need("numba.cuda")
    a = numba_cuda.to_device(np.arange(100, dtype=np.float32))
    r = jx.evaluate("a * 2", a=a)
    np.testing.assert_array_equal(jx.Tensor.numpy(r) if isinstance(r, jx.Tensor) and r.device == "cpu"
                                  else cupy.asarray(r).get(), np.arange(100, dtype=np.float32) * 2)


def test_torch_result_on_a_side_stream_is_ordered_on_it(torch):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a = torch.rand(1 << 20, device="cuda", dtype=torch.float32)
        r = jx.evaluate("a * 2 + 1", a=a)
        assert isinstance(r, torch.Tensor) and r.device == a.device
        assert torch.equal(r, a * 2 + 1)
    s.synchronize()


def test_a_cuda_tensor_copied_to_the_host_has_the_values_and_numpy_refuses_device_memory(cupy):
    a = np.arange(12.0).reshape(3, 4)
    t = jx.evaluate("sqrt(a) + 1", a=a, backend="cuda")
    assert isinstance(t, jx.Tensor) and t.device == "cuda"
    with pytest.raises(jx.ArgumentError, match="to\\('cpu'\\)"):
        t.numpy()
    h = t.to("cpu")
    assert h.device == "cpu"
    np.testing.assert_allclose(h.numpy(), np.sqrt(a) + 1, rtol=1e-15)
    assert t.to("cuda") is t
    back = h.to("cuda:0")
    assert back.device == "cuda"
    np.testing.assert_array_equal(back.to("cpu").numpy(), h.numpy())


class _ReadOnlyCai:
    """A CuPy array's memory behind a __cuda_array_interface__ that says read-only (data[1])."""

    def __init__(self, a):
        self._a = a
        d = dict(a.__cuda_array_interface__)
        d["data"] = (d["data"][0], True)
        self.__cuda_array_interface__ = d


def test_a_read_only_cuda_array_interface_is_never_written(cupy):
    a = cupy.arange(8, dtype=cupy.float64)
    ro = _ReadOnlyCai(a)
    with pytest.raises(jx.ReadOnlyError):
        jx.run("x = x + 1", x=ro)
    with pytest.raises(jx.ReadOnlyError):
        jx.compile("x = x * 2")(x=ro)
    with pytest.raises(jx.ReadOnlyError):
        jx.evaluate("b * 2", b=cupy.ones(8), out=ro)
    cupy.testing.assert_array_equal(a, cupy.arange(8, dtype=cupy.float64))
    cupy.testing.assert_array_equal(jx.evaluate("x * 2", x=ro), a * 2)  # read as usual


def test_a_read_only_host_array_moved_to_the_gpu_is_not_written(cupy):
    x = np.arange(4.0)
    x.flags.writeable = False
    with pytest.raises(jx.ReadOnlyError):
        jx.run("x = x + 1", x=x, backend="cuda")
    np.testing.assert_array_equal(x, np.arange(4.0))
