"""jitexpr.dask on dask-cuda: CuPy chunks on the worker's GPU, and a new worker that compiles
nothing because WarmCache installed the bundle. Skips without a GPU, CuPy or dask_cuda (run on
the H200: see docs/distributed.md, "On the GPU machine")."""
import logging

import numpy as np
import pytest

import jitexpr as jx

if not jx.cuda_available():
    pytest.skip("no CUDA device: " + jx.info()["cuda"]["reason"], allow_module_level=True)
cupy = pytest.importorskip("cupy")
dask_cuda = pytest.importorskip("dask_cuda")
da = pytest.importorskip("dask.array")
import jitexpr.dask as jxd  # noqa: E402
from jitexpr.dask import bundle  # noqa: E402

PROGRAMS = ["a * 2 + b", "((.25*a + .75)*a - 1.5)*a - 2", "where(a > 0.5, sin(a) * b + exp(-b), a * a - b)"]


def cuda_cluster(**kw):
    from distributed import Client
    cluster = dask_cuda.LocalCUDACluster(n_workers=1, host="127.0.0.1", dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, protocol="tcp",
                                         silence_logs=logging.ERROR, **kw)
    return cluster, Client(cluster, timeout=120, set_as_default=False)


@pytest.fixture
def disk_cache_on(monkeypatch):
    monkeypatch.setenv("JITEXPR_DISK_CACHE", "1")  # inherited by the workers started in the test


def inputs(n=1 << 22, chunk=1 << 20):
    rng = da.random.default_rng(cupy.random.default_rng(5))
    return rng.random(n, chunks=chunk), rng.random(n, chunks=chunk)


def test_cupy_chunks_run_on_the_gpu_and_come_back_as_cupy():
    cluster, client = cuda_cluster()
    try:
        a, b = inputs()
        assert type(a._meta).__module__.startswith("cupy")
        c = jxd.evaluate("a * 2 + b", a=a, b=b)
        assert type(c._meta).__module__.startswith("cupy")
        s = jxd.sum("a * b", a=a, b=b)
        sd = jxd.std("a - b", a=a, b=b)
        am = jxd.argmax("a", a=a)
        cv, av, bv, sv, sdv, amv = client.compute([c, a, b, s, sd, am])
        cv, av, bv = cv.result(timeout=120), av.result(timeout=120), bv.result(timeout=120)
        assert isinstance(cv, cupy.ndarray)
        cupy.testing.assert_allclose(cv, av * 2 + bv, rtol=1e-15)
        np.testing.assert_allclose(float(sv.result(timeout=120)), float(cupy.sum(av * bv)), rtol=1e-12)
        np.testing.assert_allclose(float(sdv.result(timeout=120)), float(cupy.std(av - bv)), rtol=1e-12)
        assert int(amv.result(timeout=120)) == int(cupy.argmax(av))
    finally:
        client.close()
        cluster.close()


def _workload(a, b):
    """What the bundle is made for: the benchmark's programs and a few reductions."""
    return ([jxd.evaluate(p, a=a, b=b).sum() for p in PROGRAMS] +
            [jxd.sum("a * b", a=a, b=b), jxd.mean("a - b", a=a, b=b), jxd.std("a - b", a=a, b=b),
             jxd.argmax("a", a=a)])


def _compiler_state():
    """In a worker: the CUDA runtime's statistics after every background compile has ended, and
    whether jitexpr has loaded NVRTC or nvJitLink in this process (it loads them only to
    compile)."""
    rt = jx._jitexpr.default_runtime("cuda")
    rt.wait_for_compiles()
    c = jx.info()["cuda"]
    return {**jx.stats("cuda"), "nvrtc_loaded": c["nvrtc"]["loaded"], "nvjitlink_loaded": c["nvjitlink"]["loaded"]}


def test_a_new_worker_with_the_bundle_compiles_nothing(tmp_path, disk_cache_on):
    first = str(tmp_path / "first")
    cluster, client = cuda_cluster()
    try:
        client.register_plugin(jxd.WarmCache(cache_dir=first))
        a, b = inputs()
        client.compute(_workload(a, b), sync=True)
        # the full kernels of a tiered compile reach the disk before the worker goes
        made = client.run(_compiler_state)
        assert all(v["compiles"] > 0 and v["nvrtc_loaded"] for v in made.values()), made
    finally:
        client.close()
        cluster.close()
    n = bundle.pack(first, tmp_path / "kernels.jxb")
    assert n > 0
    cluster, client = cuda_cluster()
    try:
        second = tmp_path / "second"
        client.register_plugin(jxd.WarmCache(tmp_path / "kernels.jxb", cache_dir=str(second)))
        reports = client.run(jxd._plugin.installed)
        assert all(len(r[-1].installed) == n for r in reports.values()), reports
        a, b = inputs()
        got = client.compute(_workload(a, b), sync=True)
        state = client.run(_compiler_state)
        for s in state.values():
            # every kernel came from the bundle on disk: no image was built (NVRTC or nvJitLink,
            # first tier or full), and neither compiler was ever loaded in the worker
            assert s["compiles"] == 0, s
            assert s["disk_hits"] > 0, s
            assert not s["nvrtc_loaded"] and not s["nvjitlink_loaded"], s
        # and it wrote no entry of its own next to the bundle's
        assert {p.name for p in second.rglob("*.bin")} <= {p.name for p in (tmp_path / "first").rglob("*.bin")}
        av, bv = client.compute([a, b], sync=True)
        cupy.testing.assert_allclose(got[0], float(cupy.sum(av * 2 + bv)), rtol=1e-12)
    finally:
        client.close()
        cluster.close()


def test_a_cupy_block_result_comes_from_cupys_allocator_on_its_stream():
    from jitexpr.dask import _tasks
    p = _tasks.Program("a * 2 + b", ("a", "b"), {"a": "float64", "b": "float64"}, result=("float64", 2))
    a = cupy.random.default_rng(1).random((256, 1))
    b = cupy.random.default_rng(2).random(64)
    pool = cupy.get_default_memory_pool()
    cupy.cuda.Device().synchronize()  # the inputs are ready before another stream reads them
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        before = pool.used_bytes()
        r = p(a, b)
        assert isinstance(r, cupy.ndarray) and r.shape == (256, 64) and r.dtype == np.float64
        assert isinstance(r.data.mem, cupy.cuda.memory.PooledMemory)  # CuPy's pool, not jitexpr's
        assert pool.used_bytes() - before >= r.nbytes
        want = a * 2 + b  # on the same stream: ordered after the task's kernel, no wait needed
        cupy.testing.assert_array_equal(r, want)
    stream.synchronize()


def test_cupy_chunks_broadcast_and_integer_programs_give_cupys_results():
    a = cupy.arange(48, dtype=cupy.int32).reshape(48, 1)
    b = cupy.arange(20, dtype=cupy.int32)
    da_a = da.from_array(a, chunks=(16, 1), asarray=False)
    da_b = da.from_array(b, chunks=(8,), asarray=False)
    x = jxd.evaluate("t = a * 3; t - b", a=da_a, b=da_b)
    assert x.dtype == np.int32 and type(x._meta).__module__.startswith("cupy")
    r = x.compute(scheduler="sync")
    assert isinstance(r, cupy.ndarray)
    cupy.testing.assert_array_equal(r, a * 3 - b)


def test_slices_and_selections_of_cupy_chunks_equal_cupy():
    # In this process (the synchronous scheduler): Dask's slicing and boolean indexing of CuPy
    # chunks, then jitexpr's kernels on the GPU; a block that selects nothing does not count.
    x = cupy.arange(10.0)
    a = da.from_array(x, chunks=5, asarray=False)
    run = lambda t: jxd.evaluate(t, a=a).compute(scheduler="synchronous")  # noqa: E731
    rev = run("a[::-1] * a")
    assert isinstance(rev, cupy.ndarray)
    cupy.testing.assert_array_equal(rev, x[::-1] * x)
    cupy.testing.assert_array_equal(run("a[a > 6] * 2"), x[x > 6] * 2)
    assert float(run("min(a[a > 6])")) == 7.0
    np.testing.assert_allclose(float(run("std(a[a > 6])")), float(cupy.std(x[x > 6])), rtol=1e-12)
