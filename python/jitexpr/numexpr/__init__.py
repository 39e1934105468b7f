"""numexpr's public API over jitexpr: change ``import numexpr as ne`` to
``import jitexpr.numexpr as ne`` and the code keeps working.

Signatures, syntax and exceptions are numexpr 2.14's: ``evaluate(ex, local_dict=None,
global_dict=None, out=None, order='K', casting='same_kind', sanitize=None, ...)`` takes the names
from the caller's frame when no dict is given, ``re_evaluate`` and ``validate`` keep the last
expression per thread; ``E``, ``NumExpr`` and ``disassemble`` (the :mod:`.expressions` and
:mod:`.necompiler` modules) and :mod:`.utils` (threads, read from ``NUMEXPR_MAX_THREADS``,
``NUMEXPR_NUM_THREADS`` and ``OMP_NUM_THREADS`` as numexpr reads them) are here too. A missing
variable is a ``KeyError``, bad syntax a ``SyntaxError``, an operation a dtype lacks a
``NotImplementedError``, a wrong number of arguments a ``TypeError``, an object array a
``ValueError``, an integer out of its dtype's range an ``OverflowError``, shapes that do not
broadcast a ``ValueError``. numexpr's own test suite passes but for byte strings
(tests/python/run_numexpr_suite.py).

Where numexpr departs from NumPy and its suite asserts nothing, this module follows NumPy 2 (the
list is in docs/python.md, "Coming from numexpr", and tests/python/numexpr_differences.py):
integer literals with arrays are weak (``where(a > 1, 2, -1)`` is int64, ``int8_array + 1``
stays int8), ``pi``/``e``/``inf``/``nan`` are constants unless a variable of that name exists, ...

For libraries that import numexpr themselves (pandas picks it as its ``eval``/``query`` engine
and for the arithmetic of big frames)::

    import jitexpr.numexpr
    jitexpr.numexpr.install()          # `import numexpr` now gives this module, at any time

or set ``JITEXPR_NUMEXPR=1`` in the environment (the package's .pth file installs it at start).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from .. import _api
from .. import _jitexpr as _core  # noqa: F401
from . import version
from . import utils
from . import expressions
from . import necompiler
from .expressions import E
from .necompiler import NumExpr, disassemble, evaluate, re_evaluate, validate
from .utils import (MAX_THREADS, _init_num_threads, detect_number_of_cores, detect_number_of_threads, get_num_threads,
                    get_vml_num_threads, get_vml_version, set_num_threads, set_vml_accuracy_mode, set_vml_num_threads,
                    use_vml)

__all__ = [
    "evaluate", "re_evaluate", "validate", "E", "NumExpr", "disassemble", "set_num_threads", "get_num_threads",
    "detect_number_of_cores", "detect_number_of_threads", "ncores", "nthreads", "use_vml", "get_vml_version",
    "set_vml_accuracy_mode", "set_vml_num_threads", "get_vml_num_threads", "MAX_THREADS", "print_versions", "install",
    "uninstall", "__version__",
]

# The numexpr release whose API and behaviour this module follows.
__version__ = version.version
__BLOCK_SIZE1__ = 1024


def _sync_nthreads():
    global nthreads
    nthreads = get_num_threads()


def print_versions():
    """Prints the versions of jitexpr, this API level, NumPy and what was found of CUDA."""
    info = _api.info()
    print(f"jitexpr.numexpr {__version__} (jitexpr {info['version']})")
    print(f"NumPy {np.__version__}, Python {sys.version.split()[0]}")
    print(f"threads: {get_num_threads()} of {detect_number_of_cores()} cores (MAX_THREADS {MAX_THREADS})")
    cuda = info["cuda"]
    print(f"CUDA: {'available' if cuda['available'] else 'not available: ' + cuda['reason']}")


# The names `import numexpr` and its submodules give once installed.
_SUBMODULES = ("expressions", "necompiler", "utils", "version")
_NAMES = ("numexpr",) + tuple(f"numexpr.{m}" for m in _SUBMODULES)
# What those names were before install(), for uninstall() to put back.
_before_install: dict = {}


def _installed() -> bool:
    return sys.modules.get("numexpr") is sys.modules[__name__]


def install() -> None:
    """Makes ``import numexpr`` (and numexpr.expressions, .necompiler, .utils, .version) give
    this package, for libraries that import numexpr themselves. Works at any time: a pandas
    imported before is pointed at the drop-in too (its pandas.core.computation modules hold
    the numexpr they found at import, or none). Idempotent."""
    me = sys.modules[__name__]
    if not _installed():
        _before_install.clear()
        _before_install.update({n: sys.modules[n] for n in _NAMES if n in sys.modules})
    sys.modules["numexpr"] = me
    for name in _SUBMODULES:
        sys.modules[f"numexpr.{name}"] = getattr(me, name)
    _repoint_pandas(me)


def uninstall() -> None:
    """Undoes :func:`install`: ``numexpr`` and its submodules are what they were before (a later
    ``import numexpr`` finds the real one, if installed), and a pandas imported meanwhile is
    pointed back at that numexpr, or at none."""
    if not _installed():
        return
    for n in _NAMES:
        sys.modules.pop(n, None)
    sys.modules.update(_before_install)
    real = _before_install.get("numexpr")
    _before_install.clear()
    if real is None and "pandas.core.computation.check" in sys.modules:
        try:
            import numexpr as real
        except ImportError:
            real = None
    _repoint_pandas(real)


def _repoint_pandas(ne) -> None:
    """pandas reads numexpr when pandas.core.computation is imported (check.ne,
    NUMEXPR_INSTALLED, expressions.ne, USE_NUMEXPR, the evaluate function it picked); the
    eval engine imports numexpr at each call. Points what was imported at `ne` (None: no
    numexpr), keeping the user's compute.use_numexpr option."""
    check = sys.modules.get("pandas.core.computation.check")
    exprs = sys.modules.get("pandas.core.computation.expressions")
    if check is None and exprs is None:
        return
    try:
        blocked = None
        if ne is not None and ne is not sys.modules[__name__]:
            # A real numexpr that pandas refuses (BLOCKED_NUMEXPR_VERSIONS) stays refused.
            version = str(getattr(ne, "__version__", "")).split("+")[0]
            if check is not None and version in getattr(check, "BLOCKED_NUMEXPR_VERSIONS", ()):
                blocked, ne = version, None
        installed = ne is not None
        for mod in (check, exprs):
            if mod is None:
                continue
            mod.ne = ne
            mod.NUMEXPR_INSTALLED = installed
            if hasattr(mod, "NUMEXPR_BLOCKED_VERSION"):
                mod.NUMEXPR_BLOCKED_VERSION = blocked
        if exprs is not None:
            exprs.USE_NUMEXPR = installed
            import pandas
            exprs.set_use_numexpr(bool(pandas.get_option("compute.use_numexpr")))
    except Exception as e:  # noqa: BLE001 - a pandas whose layout is not the one known here
        warnings.warn(f"jitexpr.numexpr.install(): pandas was imported before and could not be pointed at the "
                      f"drop-in ({type(e).__name__}: {e}); call install() before importing pandas",
                      RuntimeWarning, stacklevel=3)


ncores = detect_number_of_cores()
try:
    nthreads = _init_num_threads()
except ValueError as _e:  # a thread variable that is not a number: numexpr fails its import
    warnings.warn(f"jitexpr.numexpr: {_e} (NUMEXPR_NUM_THREADS / OMP_NUM_THREADS); using the default thread count",
                  RuntimeWarning, stacklevel=2)
    nthreads = get_num_threads()
