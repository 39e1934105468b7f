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
import threading
import weakref

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

_last = threading.local()


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


def _names_for(ex, local_dict, global_dict, depth):
    """numexpr's getArguments: each name from local_dict (the caller's locals without one),
    else global_dict (the caller's globals without one); KeyError when in neither."""
    if not isinstance(ex, str):
        raise ValueError("must specify expression as a string")
    params, consts = _api._names_of(ex)
    frame = sys._getframe(depth)
    clear = False
    if local_dict is None:
        local_dict = frame.f_locals
        clear = type(local_dict) is dict and local_dict is not frame.f_globals
    if global_dict is None:
        global_dict = frame.f_globals
    del frame
    try:
        bound = {}
        for n in params:
            try:
                bound[n] = local_dict[n]
            except KeyError:
                bound[n] = global_dict[n]
        for n in consts:  # a variable named pi, e, inf or nan shadows the constant
            if n in local_dict:
                bound[n] = local_dict[n]
            elif n in global_dict and not callable(global_dict[n]) and not isinstance(global_dict[n], type(sys)):
                bound[n] = global_dict[n]
        return bound
    finally:
        if clear:  # the snapshot of the caller's locals (before Python 3.13): no references kept
            local_dict.clear()


_checked = set()


def _check_expression(ex):
    if ex in _checked:
        return
    if not isinstance(ex, str):
        raise ValueError("must specify expression as a string")
    # numexpr refuses these before parsing (they would let Python's eval do more than compute);
    # so does the drop-in, with numexpr's ValueError.
    if ";" in ex or "[" in ex:
        raise ValueError(f"Expression {ex} has forbidden control characters.")
    if _core.targets(ex):
        raise SyntaxError(f"invalid syntax: numexpr evaluates an expression, not an assignment: {ex!r}")
    if len(_checked) > 4096:
        _checked.clear()
    _checked.add(ex)


def _run(ex, bound, out, order, casting):
    if out is not None and casting != "same_kind":
        # Other casting rules: evaluated apart, then cast into out as NumPy's copyto casts.
        r = _core.evaluate(ex, bound, None, None, None, None)
        if not isinstance(r, np.ndarray):
            r = np.asarray(r)
        if r.shape != out.shape and np.broadcast_shapes(r.shape, out.shape) != out.shape:
            raise ValueError(f"operands could not be broadcast together with shapes {out.shape} {r.shape}")
        np.copyto(out, r, casting=casting)
        return out
    r = _api._to_library(_core.evaluate(ex, bound, out, None, None, None))
    if order in ("F",) and isinstance(r, np.ndarray) and r.ndim > 1 and out is None:
        r = np.asfortranarray(r)
    return r


def validate(ex: str, local_dict=None, global_dict=None, out=None, order: str = "K", casting: str = "safe",
             _frame_depth: int = 2, sanitize=None, **kwargs):
    """Checks ``ex`` against the given (or the caller's) variables: syntax, names and dtypes
    (on one-element arrays of the same dtypes and dimensions). Returns None on success (and
    keeps the expression for :func:`re_evaluate`), else the exception."""
    try:
        _check_expression(ex)
        bound = _names_for(ex, local_dict, global_dict, _frame_depth)
        probe = {}
        for n, v in bound.items():
            a = v if isinstance(v, (bool, int, float, complex)) else np.asarray(v)
            probe[n] = a if not isinstance(a, np.ndarray) else np.ones((1,) * a.ndim, dtype=a.dtype)
        _core.evaluate(ex, probe, None, "cpu", None, None)
        _last.ex = ex
        _last.kwargs = {"out": None if out is None else weakref.ref(out), "order": order, "casting": casting}
    except Exception as e:  # numexpr returns the exception
        return e
    return None


def evaluate(ex: str, local_dict=None, global_dict=None, out=None, order: str = "K", casting: str = "same_kind",
             sanitize=None, _frame_depth: int = 3, disable_cache: bool = False, **kwargs):
    """Evaluates the array expression ``ex`` (numexpr.evaluate).

    ex: an expression such as ``"2*a + 3*b"``; its variables come from ``local_dict`` (else the
        caller's locals), then ``global_dict`` (else the caller's globals).
    out: an existing array to write the result into (same-kind casting under the default
        ``casting``; its shape must hold the result).
    order: 'K' (and 'C', 'A'): results are C-contiguous; 'F' gives a Fortran-ordered copy.
    casting: for ``out``: 'same_kind' (default), or 'no', 'equiv', 'safe', 'unsafe' as NumPy.
    sanitize: accepted for compatibility; jitexpr never hands the text to Python's eval (it has
        its own parser), so there is nothing to sanitize.
    disable_cache: accepted; jitexpr's caches hold no references to your arrays.

    Returns a NumPy array (0-d for a reduction), or ``out``.
    """
    _check_expression(ex)
    bound = _names_for(ex, local_dict, global_dict, _frame_depth - 1)
    r = _run(ex, bound, out, order, casting)
    _last.ex = ex
    _last.kwargs = {"out": None if out is None else weakref.ref(out), "order": order, "casting": casting}
    return r


def re_evaluate(local_dict=None, global_dict=None, _frame_depth: int = 2):
    """Evaluates the last expression of :func:`evaluate` or :func:`validate` on this thread
    again, with the variables of now (numexpr.re_evaluate)."""
    ex = getattr(_last, "ex", None)
    if ex is None:
        raise RuntimeError("A previous evaluate() execution was not found, please call `validate` or `evaluate` "
                           "once before `re_evaluate`")
    kw = dict(_last.kwargs)
    out = kw["out"]() if kw["out"] is not None else None
    bound = _names_for(ex, local_dict, global_dict, _frame_depth)
    return _run(ex, bound, out, kw["order"], kw["casting"])


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
