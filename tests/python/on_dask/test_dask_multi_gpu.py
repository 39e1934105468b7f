"""jitexpr.dask across GPUs: dask-cuda's LocalCUDACluster with one worker per GPU (two here).
Each worker sees its own GPU as device 0 (dask-cuda sets CUDA_VISIBLE_DEVICES per worker), so
jitexpr on a worker needs no device choice; the chunks are spread over both workers and the
results equal CuPy's. Skips with a message unless two CUDA devices, CuPy and dask_cuda are here."""
import logging

import numpy as np
import pytest

import jitexpr as jx

if not jx.cuda_available():
    pytest.skip("no CUDA device: " + jx.info()["cuda"]["reason"], allow_module_level=True)
if len(jx.info()["cuda"]["devices"]) < 2:
    pytest.skip("needs 2 CUDA devices, this machine has %d" % len(jx.info()["cuda"]["devices"]),
                allow_module_level=True)
cupy = pytest.importorskip("cupy")
dask_cuda = pytest.importorskip("dask_cuda")
da = pytest.importorskip("dask.array")
import jitexpr.dask as jxd  # noqa: E402


@pytest.fixture(scope="module")
def two_gpus():
    from distributed import Client
    cluster = dask_cuda.LocalCUDACluster(CUDA_VISIBLE_DEVICES="0,1", n_workers=2, host="127.0.0.1",
                                         dashboard_address=None, protocol="tcp", silence_logs=logging.ERROR,
                                         scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
    client = Client(cluster, timeout=120, set_as_default=False)
    try:
        client.wait_for_workers(2, timeout=120)
        yield client
    finally:
        client.close()
        cluster.close()


def test_each_worker_has_its_own_gpu(two_gpus):
    seen = two_gpus.run(lambda: __import__("os").environ["CUDA_VISIBLE_DEVICES"].split(",")[0])
    assert sorted(seen.values()) == ["0", "1"]


def test_expressions_and_reductions_over_chunks_on_both_gpus(two_gpus):
    rng = da.random.default_rng(cupy.random.default_rng(3))
    a = rng.random(1 << 24, chunks=1 << 21).persist()
    b = rng.random(1 << 24, chunks=1 << 21).persist()
    two_gpus.wait_for_workers(2)
    holders = {w for ws in two_gpus.who_has(a).values() for w in ws}
    assert len(holders) == 2, "the chunks are on both workers"
    c = jxd.evaluate("a * 2 + b", a=a, b=b)
    s = jxd.sum("a * b", a=a, b=b)
    cv, sv, av, bv = [f.result(timeout=120) for f in two_gpus.compute([c, s, a, b])]
    assert isinstance(cv, cupy.ndarray)
    cupy.testing.assert_allclose(cv, av * 2 + bv, rtol=1e-15)
    np.testing.assert_allclose(float(sv), float(cupy.sum(av * bv)), rtol=1e-12)
