"""jitexpr.dask.WarmCache: a worker plugin that gets jitexpr ready on every worker."""

from __future__ import annotations

import os
import threading

from distributed.diagnostics.plugin import WorkerPlugin

from . import bundle as _bundle

_lock = threading.Lock()
_reports = []


def installed():
    """The InstallReports of the WarmCache plugins set up in this worker process (for tests and
    for ``client.run(jitexpr.dask._plugin.installed)``)."""
    with _lock:
        return list(_reports)


class WarmCache(WorkerPlugin):
    """Installs a precompiled bundle into each worker's jitexpr cache directory, so that a new
    worker starts with its kernels on disk and compiles nothing::

        client.register_plugin(jitexpr.dask.WarmCache("kernels.jxb"))

    ``bundle``: an archive file (``python -m jitexpr.dask.bundle pack``), a cache directory made
    by ``jitexpr precompile --cache-dir``, or an archive's bytes. A path is read on the client
    and its bytes travel with the plugin (every entry checked there and again on each worker),
    unless ``ship=False``: then each worker reads the path itself (a shared file system).
    ``cache_dir``: the cache directory for the workers (sets ``JITEXPR_CACHE_DIR`` in each
    worker process; default: the one each worker's jitexpr already uses). Workers on one host
    may share it. ``cpu_threads``: the number of CPU threads each worker's jitexpr uses (by
    default every core, which oversubscribes a host running several workers).

    Registered on a running cluster, it runs on every worker and on each worker that joins
    later. What was installed: ``client.run(jitexpr.dask._plugin.installed)``.
    """

    name = "jitexpr-warm-cache"
    idempotent = False

    def __init__(self, bundle=None, *, cache_dir=None, cpu_threads=None, ship=True):
        if bundle is not None and ship and not isinstance(bundle, (bytes, bytearray, memoryview)):
            path = os.fspath(bundle)
            entries = _bundle.read(path)  # checked on the client: a bad bundle fails here
            bundle = _bundle.to_bytes(entries, _bundle.describe(path))
        elif isinstance(bundle, (bytes, bytearray, memoryview)):
            bundle = bytes(bundle)
            _bundle.read(bundle)
        self.bundle = bundle
        self.cache_dir = None if cache_dir is None else os.fspath(cache_dir)
        self.cpu_threads = cpu_threads

    def setup(self, worker=None):
        from .. import _api
        if self.cache_dir is not None:
            # Read by jitexpr's CUDA runtime when it is made, on the worker's first CUDA task:
            # register the plugin before computing (a runtime made earlier keeps its folder).
            os.environ["JITEXPR_CACHE_DIR"] = self.cache_dir
        if self.cpu_threads is not None:
            _api.set_num_threads(self.cpu_threads)
        if self.bundle is not None:
            report = _bundle.install(self.bundle, self.cache_dir)
            with _lock:
                _reports.append(report)

