"""numexpr's public API over jitexpr: change ``import numexpr as ne`` to
``import jitexpr.numexpr as ne`` and the code keeps working.

Signatures and behaviour are numexpr 2.14's: ``evaluate(ex, local_dict=None, global_dict=None,
out=None, order='K', casting='same_kind', sanitize=None, ...)`` takes the names from the
caller's frame when no dict is given, ``re_evaluate`` and ``validate`` keep the last expression
per thread, ``set_num_threads`` returns the previous count, ``NUMEXPR_NUM_THREADS`` is read at
import, a missing variable is a ``KeyError``, bad syntax a ``SyntaxError``, a dtype an operation
does not take a ``TypeError``, shapes that do not broadcast a ``ValueError``.

Where numexpr departs from NumPy, this module follows NumPy 2 (the list is in docs/python.md,
"Coming from numexpr", and tests/python/numexpr_differences.py): integer literals are weak
(``where(a > 1, 2, -1)`` is int64, ``int8_array + 1`` stays int8), ``pi``/``e``/``inf``/``nan``
are constants unless a variable of that name exists, ``a & b`` on floats is a TypeError, ...

For libraries that import numexpr themselves (pandas picks it as its ``eval``/``query`` engine)::

    import jitexpr.numexpr
    jitexpr.numexpr.install()          # `import numexpr` now gives this module

or set ``JITEXPR_NUMEXPR=1`` in the environment (the package's .pth file installs it at start).
"""

from __future__ import annotations

import os
import sys
import numpy as np

from . import _api
from . import _jitexpr as _core
from ._errors import ArgumentError

__all__ = [
    "evaluate", "re_evaluate", "validate", "set_num_threads", "get_num_threads", "detect_number_of_cores",
    "detect_number_of_threads", "ncores", "nthreads", "use_vml", "get_vml_version", "set_vml_accuracy_mode",
    "set_vml_num_threads", "MAX_THREADS", "print_versions", "install", "uninstall", "__version__",
]

# The numexpr release whose API and behaviour this module follows.
__version__ = "2.14.0"
version = type(sys)("jitexpr.numexpr.version")
version.version = __version__

MAX_THREADS = 64
__BLOCK_SIZE1__ = 1024
use_vml = False

def detect_number_of_cores() -> int:
    """The number of cores of this machine (numexpr.detect_number_of_cores)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def detect_number_of_threads() -> int:
    """The thread count numexpr would choose at start: NUMEXPR_NUM_THREADS, else
    OMP_NUM_THREADS, else the number of cores (at most MAX_THREADS)."""
    for var in ("NUMEXPR_NUM_THREADS", "OMP_NUM_THREADS"):
        v = os.environ.get(var)
        if v:
            try:
                return max(1, min(int(v), MAX_THREADS))
            except ValueError:
                pass
    return max(1, min(detect_number_of_cores(), MAX_THREADS))


def set_num_threads(nthreads: int) -> int:
    """Sets the number of threads for later evaluations; returns the previous number."""
    old = _api.set_num_threads(nthreads)
    _sync_nthreads()
    return old


def get_num_threads() -> int:
    """The number of threads evaluations use."""
    return _api.get_num_threads()


def _sync_nthreads():
    global nthreads
    nthreads = get_num_threads()


def get_vml_version():
    """None: jitexpr does not use Intel's VML (its own vectorised CPU kernels instead)."""
    return None


def set_vml_accuracy_mode(mode):
    """Accepted and ignored (no VML); returns None as numexpr does without VML."""
    return None


def set_vml_num_threads(nthreads):
    """Accepted and ignored (no VML)."""
    return None


def print_versions():
    """Prints the versions of jitexpr, this API level, NumPy and what was found of CUDA."""
    info = _api.info()
    print(f"jitexpr.numexpr {__version__} (jitexpr {info['version']})")
    print(f"NumPy {np.__version__}, Python {sys.version.split()[0]}")
    print(f"threads: {get_num_threads()} of {detect_number_of_cores()} cores")
    cuda = info["cuda"]
    print(f"CUDA: {'available' if cuda['available'] else 'not available: ' + cuda['reason']}")


# evaluate is the extension's own function (python/src/module.cpp, py_numexpr_evaluate), as
# jitexpr.evaluate is: numexpr's arguments read from the call, the names bound by the extension's
# one binding (bind_names) under numexpr's rules — local_dict, else the caller's locals, then
# global_dict, else the caller's globals; a name in neither is numexpr's KeyError — and the
# thread's last expression kept there for re_evaluate. Its docstring is there.
evaluate = _core.numexpr_evaluate


def validate(ex: str, local_dict=None, global_dict=None, out=None, order: str = "K", casting: str = "safe",
             _frame_depth: int = 2, sanitize=None, **kwargs):
    """Checks ``ex`` against the given (or the caller's) variables: syntax, names and dtypes
    (on one-element arrays of the same dtypes and dimensions). Returns None on success (and
    keeps the expression for :func:`re_evaluate`), else the exception."""
    try:
        _core.numexpr_check(ex, kwargs)
        # _frame_depth as numexpr counts it (2: validate's caller); the extension's function
        # has no frame, so validate's own is the innermost.
        bound = _core.numexpr_bind(ex, local_dict, global_dict, _frame_depth - 1)
        probe = {}
        for n, v in bound.items():
            a = v if isinstance(v, (bool, int, float, complex)) else np.asarray(v)
            probe[n] = a if not isinstance(a, np.ndarray) else np.ones((1,) * a.ndim, dtype=a.dtype)
        _core.evaluate(ex, probe, None, "cpu", None, None)
        _core.numexpr_keep_last(ex, out, order, casting)
    except Exception as e:  # numexpr returns the exception
        return e
    return None


def re_evaluate(local_dict=None, global_dict=None, _frame_depth: int = 2):
    """Evaluates the last expression of :func:`evaluate` or :func:`validate` on this thread
    again, with the variables of now (numexpr.re_evaluate)."""
    last = _core.numexpr_last()
    if last is None:
        raise RuntimeError("A previous evaluate() execution was not found, please call `validate` or `evaluate` "
                           "once before `re_evaluate`")
    ex, out, order, casting = last
    # evaluate's _frame_depth 3 is its caller; from here, re_evaluate's caller is one more.
    return evaluate(ex, local_dict, global_dict, out, order, casting, None, _frame_depth + 2)


def install() -> None:
    """Makes ``import numexpr`` give this module, for libraries that import numexpr themselves
    (pandas' ``DataFrame.eval``/``query`` engine). Idempotent."""
    sys.modules["numexpr"] = sys.modules[__name__]


def uninstall() -> None:
    """Undoes :func:`install` (a later ``import numexpr`` finds the real one, if installed)."""
    if sys.modules.get("numexpr") is sys.modules[__name__]:
        del sys.modules["numexpr"]


ncores = detect_number_of_cores()
if os.environ.get("NUMEXPR_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS"):
    try:
        _api.set_num_threads(detect_number_of_threads())
    except ArgumentError:
        pass
nthreads = get_num_threads()
