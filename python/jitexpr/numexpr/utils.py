"""numexpr.utils over jitexpr: the thread count and the (absent) VML settings.

The environment is read as numexpr 2.14 reads it. ``NUMEXPR_MAX_THREADS`` (read once, at import)
is the most threads :func:`set_num_threads` accepts (``MAX_THREADS``, 64 when unset, empty or not
a positive number). :func:`_init_num_threads`, run at import, picks the starting count:
``NUMEXPR_NUM_THREADS``, else ``OMP_NUM_THREADS``, else — when ``NUMEXPR_MAX_THREADS`` or
``OMP_NUM_THREADS`` is set — ``MAX_THREADS``, else the number of cores, at most 16. A variable set
to the empty string counts as unset (the usual way of unsetting it in a shell script).

The threads are jitexpr's CPU threads (the calling one included): ``jitexpr.set_num_threads``
and this module's are the same setting.
"""

from __future__ import annotations

import operator
import os

from .. import _api
from .._errors import ArgumentError

__all__ = [
    "MAX_THREADS", "set_num_threads", "get_num_threads", "detect_number_of_cores", "detect_number_of_threads",
    "get_vml_version", "set_vml_accuracy_mode", "set_vml_num_threads", "get_vml_num_threads",
]

use_vml = False

# The default thread count without configuration never exceeds this (numexpr's "safe limit").
_UNCONFIGURED_LIMIT = 16
_DEFAULT_MAX_THREADS = 64


def _positive_int(text):
    try:
        n = int(text)
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


def _env_set(name: str) -> bool:
    return os.environ.get(name, "") != ""


MAX_THREADS = _positive_int(os.environ.get("NUMEXPR_MAX_THREADS")) or _DEFAULT_MAX_THREADS


def detect_number_of_cores() -> int:
    """The number of cores this process may run on (its CPU affinity, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def set_num_threads(nthreads: int) -> int:
    """Sets the number of threads later evaluations use; returns the previous number. More
    than ``MAX_THREADS`` (``NUMEXPR_MAX_THREADS``) or fewer than 1 is a ValueError."""
    n = operator.index(nthreads)  # an int (a bool too), as numexpr takes it: 2.0 and "2" are TypeErrors
    if n > MAX_THREADS:
        raise ArgumentError(f"the number of threads ({n}) cannot be larger than MAX_THREADS ({MAX_THREADS}, "
                            "the environment variable NUMEXPR_MAX_THREADS)")
    old = _api.set_num_threads(n)
    from . import _sync_nthreads  # the package's `nthreads` follows the setting, as numexpr's does not
    _sync_nthreads()
    return old


def get_num_threads() -> int:
    """The number of threads evaluations use."""
    return _api.get_num_threads()


def _init_num_threads() -> int:
    """Sets the thread count from the environment as numexpr does at import, and returns it:
    ``NUMEXPR_NUM_THREADS``, else ``OMP_NUM_THREADS``, else ``MAX_THREADS`` when
    ``NUMEXPR_MAX_THREADS`` or ``OMP_NUM_THREADS`` is set, else the number of cores (at most 16).
    A value that is not an integer is numexpr's ValueError."""
    if _env_set("NUMEXPR_MAX_THREADS") or _env_set("OMP_NUM_THREADS"):
        default = MAX_THREADS
    else:
        default = min(detect_number_of_cores(), _UNCONFIGURED_LIMIT)
    if _env_set("NUMEXPR_NUM_THREADS"):
        requested = int(os.environ["NUMEXPR_NUM_THREADS"])
    elif _env_set("OMP_NUM_THREADS"):
        requested = int(os.environ["OMP_NUM_THREADS"])
    else:
        requested = default
    set_num_threads(requested)
    return requested


def detect_number_of_threads() -> int:
    """The thread count :func:`_init_num_threads` would choose, without setting it (numexpr
    keeps this deprecated function; it reads the same variables)."""
    for var in ("NUMEXPR_NUM_THREADS", "OMP_NUM_THREADS"):
        n = _positive_int(os.environ.get(var))
        if n is not None:
            return min(n, MAX_THREADS)
    if _env_set("NUMEXPR_MAX_THREADS"):
        return MAX_THREADS
    return min(detect_number_of_cores(), _UNCONFIGURED_LIMIT, MAX_THREADS)


def get_vml_version():
    """None: jitexpr does not use Intel's VML (its own vectorised kernels instead)."""
    return None


def set_vml_accuracy_mode(mode):
    """None, as numexpr without VML: there is no VML accuracy to set."""
    return None


def set_vml_num_threads(nthreads):
    """None, as numexpr without VML."""
    return None


def get_vml_num_threads():
    """None, as numexpr without VML."""
    return None
