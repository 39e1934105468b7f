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

PROGRAMS = ["a * 2 + b", "where(a > 0.5, sin(a) * b + exp(-b), a * a - b)"]


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


def test_a_new_worker_with_the_bundle_compiles_nothing(tmp_path, disk_cache_on):
    first = str(tmp_path / "first")
    cluster, client = cuda_cluster()
    try:
        client.register_plugin(jxd.WarmCache(cache_dir=first))
        a, b = inputs()
        client.compute([jxd.evaluate(p, a=a, b=b).sum() for p in PROGRAMS] + [jxd.sum("a * b", a=a, b=b)], sync=True)
        # the full kernels of a tiered compile reach the disk before the worker goes
        client.run(lambda: __import__("jitexpr")._jitexpr.default_runtime("cuda").wait_for_compiles())
        compiled = client.run(lambda: jx.stats("cuda")["compiles"])
        assert all(v > 0 for v in compiled.values())
    finally:
        client.close()
        cluster.close()
    bundle.pack(first, tmp_path / "kernels.jxb")
    cluster, client = cuda_cluster()
    try:
        client.register_plugin(jxd.WarmCache(tmp_path / "kernels.jxb", cache_dir=str(tmp_path / "second")))
        a, b = inputs()
        client.compute([jxd.evaluate(p, a=a, b=b).sum() for p in PROGRAMS] + [jxd.sum("a * b", a=a, b=b)], sync=True)
        stats = client.run(lambda: jx.stats("cuda"))
        for s in stats.values():
            assert s["compiles"] == 0, s
            assert s["disk_hits"] > 0, s
        assert any((tmp_path / "second").rglob("*.bin"))
    finally:
        client.close()
        cluster.close()
