"""The Dask suite: a LocalCluster of 2 worker processes on the loopback interface (no dashboard),
started once for the session by the tests themselves and always closed. Without dask and
distributed installed these tests skip, except when JITEXPR_REQUIRE_DASK=1 (CI: a missing
install must fail, not skip)."""
import logging
import os

import pytest

if os.environ.get("JITEXPR_REQUIRE_DASK") != "1":
    pytest.importorskip("dask")
    pytest.importorskip("distributed")

# Bounded: a cluster that does not come up, or a computation that hangs, fails the test. The
# computations take well under a second and the cluster seconds; the bounds are for a loaded
# 2-core machine (CI's, beside another suite), where two worker processes importing NumPy, dask
# and jitexpr at once take tens of seconds.
START_TIMEOUT = 120
RESULT_TIMEOUT = 120


@pytest.fixture(scope="session")
def cluster():
    from distributed import LocalCluster
    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                     dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, worker_dashboard_address=None, silence_logs=logging.ERROR,
                     death_timeout=START_TIMEOUT)
    try:
        yield c
    finally:
        c.close(timeout=START_TIMEOUT)


@pytest.fixture(scope="session")
def client(cluster):
    from distributed import Client
    cl = Client(cluster, timeout=START_TIMEOUT, set_as_default=False)
    try:
        cl.wait_for_workers(2, timeout=START_TIMEOUT)
        yield cl
    finally:
        cl.close(timeout=START_TIMEOUT)


@pytest.fixture
def compute(client):
    """Computes dask collections on the cluster (not in this process), with a time bound."""
    def run(*xs):
        futs = client.compute(list(xs))
        out = [f.result(timeout=RESULT_TIMEOUT) for f in futs]
        for f in futs:
            f.release()
        return out[0] if len(xs) == 1 else out
    return run
