"""On the workers: the warm-cache plugin, workers sharing a cache directory, and a worker killed
mid-computation."""
import os
import signal
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import jitexpr.dask as jxd  # noqa: E402
from jitexpr.dask import bundle  # noqa: E402

from test_bundle import KEYS, cache_with_entries  # noqa: E402


def _env_setter(path):
    def set_dir():
        os.environ["JITEXPR_CACHE_DIR"] = path
        os.environ["JITEXPR_DISK_CACHE"] = "1"  # the suite's conftest turns it off for its own runs
        return path
    return set_dir


def _env_reset():
    os.environ.pop("JITEXPR_CACHE_DIR", None)
    os.environ["JITEXPR_DISK_CACHE"] = "0"


def test_warm_cache_puts_the_bundle_in_each_workers_cache_directory(client, tmp_path):
    src = cache_with_entries(tmp_path / "src")
    bundle.pack(src, tmp_path / "k.jxb")
    workers = sorted(client.scheduler_info()["workers"])
    dirs = {}
    for k, w in enumerate(workers):
        dirs[w] = str(tmp_path / f"worker{k}")
        client.run(_env_setter(dirs[w]), workers=[w])
    plugin = jxd.WarmCache(tmp_path / "k.jxb")
    try:
        client.register_plugin(plugin)
        for w, d in dirs.items():
            for key in KEYS:
                f = os.path.join(d, "v3", key[:2], f"{key}.bin")
                assert open(f, "rb").read() == (src / "v3" / key[:2] / f"{key}.bin").read_bytes()
        reports = client.run(lambda: [len(r.installed) for r in __import__("jitexpr.dask._plugin").dask._plugin.installed()])
        assert all(r[-1] == len(KEYS) for r in reports.values())
    finally:
        client.unregister_worker_plugin(plugin.name)
        client.run(_env_reset)


def test_workers_sharing_one_cache_directory_install_safely(client, tmp_path):
    src = cache_with_entries(tmp_path / "src")
    shared = str(tmp_path / "shared")
    plugin = jxd.WarmCache(src, cache_dir=shared)
    try:
        client.register_plugin(plugin)  # both workers at once, into one folder
        entries = bundle.read(shared)
        assert sorted(e.key for e in entries) == sorted(KEYS)
        leftovers = [n for _, _, files in os.walk(shared) for n in files if n.endswith(".tmp")]
        assert not leftovers
    finally:
        client.unregister_worker_plugin(plugin.name)
        client.run(lambda: os.environ.pop("JITEXPR_CACHE_DIR", None))


def test_a_bad_bundle_is_refused_on_the_client(tmp_path):
    src = cache_with_entries(tmp_path / "src")
    f = src / "v3" / KEYS[0][:2] / f"{KEYS[0]}.bin"
    f.write_bytes(f.read_bytes()[:-2])
    from jitexpr import IOError as JxIOError
    with pytest.raises(JxIOError):
        jxd.WarmCache(src)


def test_a_worker_killed_mid_computation_is_rescheduled_and_the_result_is_right(client):
    n, chunk = 1 << 22, 1 << 16
    a = da.random.default_rng(3).random(n, chunks=chunk)  # made on the workers: a small graph
    an = client.compute(a).result(timeout=60)
    r = jxd.sum("sin(a) * exp(a) + sqrt(a) * cos(a)", a=a)
    pids = client.run(os.getpid)
    # Tasks of earlier tests the scheduler may still be finishing: a worker busy with those only
    # says nothing about this computation.
    earlier = {k for tasks in client.processing().values() for k in tasks}
    fut = client.compute(r)
    victim = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and victim is None:
        processing = client.processing()
        busy = [w for w, tasks in processing.items() if set(tasks) - earlier]
        if busy and not fut.done():
            victim = busy[0]
        else:
            time.sleep(0.01)
    assert victim is not None, "the computation ended before a worker could be killed"
    os.kill(pids[victim], signal.SIGKILL)
    killed_before_done = not fut.done()
    got = fut.result(timeout=240)  # generous: a restart under load
    assert killed_before_done
    ref = np.sum(np.sin(an) * np.exp(an) + np.sqrt(an) * np.cos(an))
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    client.wait_for_workers(2, timeout=60)
    assert pids[victim] not in client.run(os.getpid).values()
