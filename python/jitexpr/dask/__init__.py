"""jitexpr inside Dask: expressions over dask.array and dask.dataframe, on any cluster.

    import dask.array as da, jitexpr.dask as jxd
    a = da.random.random(2**28, chunks=2**24); b = da.ones_like(a)
    c = jxd.evaluate("a * 2 + b")                  # one blockwise layer, dtype and shape known now
    s = jxd.evaluate("sum(a * b)")                 # fused chunk kernel, jitexpr combine steps
    sd = jxd.std("a - b", axis=0, ddof=1)          # every reduction, with axes and keepdims
    r = jxd.run("t = a * 2; u = t + b; v = t > b") # several outputs
    df2 = jxd.eval_frame(df, "c = a * 2 + b")      # dask.dataframe, nulls through Arrow

Programs are checked when the graph is made (a bad expression raises here, with the caret,
before anything reaches a scheduler), and the result's dtype and shape come from jitexpr's own
checker: nothing is computed or compiled to find them. Tasks carry the program text and the
dtypes it was checked with; each worker prepares a program once through its jitexpr caches.
NumPy blocks run on the CPU, CuPy blocks on the worker's GPU on CuPy's current stream.
``WarmCache`` installs a precompiled bundle of CUDA kernels on every worker. See
docs/distributed.md.
"""

from __future__ import annotations

from .._api import _bind
from . import _array
from ._array import _text_of

__all__ = [
    "evaluate", "run", "reduce",
    "sum", "prod", "mean", "min", "max", "any", "all", "std", "var", "argmin", "argmax",
    "eval_frame", "WarmCache", "bundle",
]


def _values(text, names, local_dict, depth):
    bound = _bind(text, names, local_dict, depth + 2)
    return _array._bound_values(text, bound)


def evaluate(ex, /, local_dict=None, *, _frame_depth=1, **names):
    """The value of ``ex`` (an expression or a program; a str or a ``jitexpr.Kernel``) over Dask
    arrays, NumPy arrays and scalars, as a Dask array.

    Names are bound as in :func:`jitexpr.evaluate`: keywords, then ``local_dict``, then the
    caller's frame. Arrays of different shapes and chunks broadcast as in ``da.blockwise``
    (NumPy's rules; chunks unified as Dask does). A program without reductions or indices is one
    blockwise layer; reductions (``sum(a*b)``, ``a - mean(a, axis=0)``) go through
    ``dask.array.reduction`` with jitexpr chunk and combine kernels, indices (``a[::-1]``,
    ``m[:, 0]``, ``a[a > 0]``) through Dask's own slicing and boolean indexing of the whole array.
    """
    text, signature = _text_of(ex)
    values = _values(text, names, local_dict, _frame_depth)
    _array._check_kernel_signature(text, signature, values)
    return _array.program(text, values)


def run(program, /, local_dict=None, *, _frame_depth=1, **names):
    """Runs a program of statements over Dask arrays and returns ``{name: dask array}`` for
    every name it assigns. Without reductions the whole program is one blockwise layer (each
    output is then picked from its blocks); Dask arrays are never written in place: assigning a
    value of an input's own dtype and shape to its name is a ReadOnlyError, while a value of
    another dtype or shape rebinds the name (``a = a + 1.5`` on an int ``a``)."""
    text, signature = _text_of(program)
    values = _values(text, names, local_dict, _frame_depth)
    _array._check_kernel_signature(text, signature, values)
    from .._check import check_specs
    params = _array._params_in(text, values)
    info = check_specs(text, _array._specs({n: values[n] for n in params}))
    return _array.program(text, values, outputs=list(info.assigned))


def reduce(kind, ex, /, local_dict=None, *, axis=None, keepdims=False, ddof=0, split_every=None, _frame_depth=1,
           **names):
    """``kind`` (sum, prod, mean, min, max, any, all, std, var, argmin, argmax) of the expression
    ``ex`` over ``axis`` (an int, a tuple of ints, or None for every axis; argmin/argmax: one
    axis, or None for the index into the flattened array), as a Dask array. The expression is
    fused into the chunk kernel: ``jxd.sum("a * b")`` reads each block of ``a`` and ``b`` once.
    ``ddof`` for std and var; ``split_every`` as in ``dask.array.reduction``."""
    text, signature = _text_of(ex)
    values = _values(text, names, local_dict, _frame_depth)
    _array._check_kernel_signature(text, signature, values)
    from .._check import check_specs
    params = _array._params_in(text, values)
    info = check_specs(text, _array._specs({n: values[n] for n in params}))
    if info.scans:
        from .._errors import ArgumentError
        raise ArgumentError(f"{kind}() of a scan (cumsum, ...): jitexpr.dask evaluates one block at a time, and a "
                            f"scan runs across blocks; scan with dask.array.cumsum instead")
    if _array.row_split(text, info) == "staged":
        # The operand reads across blocks (std("a - mean(a)"), sum("a[::-1] * a")): that first.
        staged = _array.program(text, values)
        return _array.reduce(kind, "jx_x_", {"jx_x_": staged}, axis=axis, keepdims=keepdims, ddof=ddof,
                             split_every=split_every, where=(text, (0, len(text))))
    if len(info.assigned) or (info.result is not None and info.result.name):
        from .._errors import ArgumentError
        raise ArgumentError(f"{kind}() takes an expression, not a program with assignments")
    return _array.reduce(kind, text, values, axis=axis, keepdims=keepdims, ddof=ddof, split_every=split_every)


def _reduction(kind, doc):
    def f(ex, /, local_dict=None, *, axis=None, keepdims=False, split_every=None, _frame_depth=1, **names):
        return reduce(kind, ex, local_dict, axis=axis, keepdims=keepdims, split_every=split_every,
                      _frame_depth=_frame_depth + 1, **names)
    f.__name__ = f.__qualname__ = kind
    f.__doc__ = f"""{doc} of the expression ``ex`` over ``axis`` (int, tuple, None), as a Dask array;
    ``keepdims`` keeps the reduced axes at extent 1. See :func:`reduce`."""
    return f


def _moment(kind, doc):
    def f(ex, /, local_dict=None, *, axis=None, keepdims=False, ddof=0, split_every=None, _frame_depth=1, **names):
        return reduce(kind, ex, local_dict, axis=axis, keepdims=keepdims, ddof=ddof, split_every=split_every,
                      _frame_depth=_frame_depth + 1, **names)
    f.__name__ = f.__qualname__ = kind
    f.__doc__ = f"""{doc} of the expression ``ex`` over ``axis``, with ``ddof`` as in NumPy
    (one pass per block for the mean, one for the squared deviations; blocks combined exactly as
    Chan, Golub and LeVeque's pairwise update). See :func:`reduce`."""
    return f


sum = _reduction("sum", "The sum")  # noqa: A001 - NumPy's names, on purpose
prod = _reduction("prod", "The product")
mean = _reduction("mean", "The arithmetic mean")
min = _reduction("min", "The smallest element (NaN propagates)")  # noqa: A001
max = _reduction("max", "The largest element (NaN propagates)")  # noqa: A001
any = _reduction("any", "Whether any element is true")  # noqa: A001
all = _reduction("all", "Whether every element is true")  # noqa: A001
argmin = _reduction("argmin", "The index of the first smallest element (of the first NaN, if any)")
argmax = _reduction("argmax", "The index of the first largest element (of the first NaN, if any)")
std = _moment("std", "The standard deviation")
var = _moment("var", "The variance")


def __getattr__(name):
    # The dataframe part and the worker plugin import dask.dataframe / distributed: on first use.
    if name == "eval_frame":
        from ._frame import eval_frame
        return eval_frame
    if name == "WarmCache":
        from ._plugin import WarmCache
        return WarmCache
    if name == "bundle":
        import importlib
        return importlib.import_module(".bundle", __name__)
    raise AttributeError(f"module 'jitexpr.dask' has no attribute {name!r}")
