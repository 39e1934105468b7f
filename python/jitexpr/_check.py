"""jitexpr.check: what a program gives — dtypes and shapes — from dtypes and shapes alone.

Nothing is compiled or run and no data is read: the program goes through jitexpr's parser and
checker (the ones ``evaluate`` uses, with the same errors and carets), stopped before any kernel
exists. Graph builders (``jitexpr.dask``) use it to set a result's dtype and shape when the graph
is made.
"""

from __future__ import annotations

import builtins
from typing import NamedTuple

import numpy as np

from . import _jitexpr as _core
from ._api import _bind, _check_text
from ._errors import ArgumentError

__all__ = ["check", "ValueInfo", "ProgramInfo", "spec_of"]


class ValueInfo(NamedTuple):
    """A value's name (empty for a last statement that assigns nothing), dtype and shape."""
    name: str
    dtype: np.dtype
    shape: tuple


class ProgramInfo(NamedTuple):
    """What :func:`check` found: ``parameters`` (names read before assigned, in order),
    ``assigned`` ({name: ValueInfo} of every assigned name's last value, in order), ``result``
    (the last statement's value; None for an empty program), ``reduces`` (any reduction),
    ``scans`` (any scan: cumsum, cumprod, nancumsum, nancumprod), ``rows`` (how the program
    splits into row blocks along axis 0, as jitexpr streams and shards it: ``{"splits": bool,
    "why_not": str, "inputs": [(name, "rows" | "whole", row_bytes)], "outputs": [(name, "rows" |
    "combine" | "refused", the reduction or why)]}``)."""
    parameters: list
    assigned: dict
    result: ValueInfo | None
    reduces: bool
    scans: bool = False
    rows: dict | None = None


_SCALAR_TYPES = {builtins.bool: "bool", builtins.int: "int64", builtins.float: "float64", builtins.complex: "complex128"}


def _dtype_name(d) -> str:
    s = str(d)
    if s.startswith("torch."):
        s = s[len("torch."):]
    try:
        return np.dtype(d).name
    except TypeError:
        return s


def spec_of(name, value):
    """The spec the checker takes for ``value``: ``("scalar", dtype)`` for a Python scalar (or
    the types ``bool``, ``int``, ``float``, ``complex``), ``("array", dtype, shape)`` for anything
    with ``dtype`` and ``shape`` (NumPy, CuPy, PyTorch, Dask arrays: nothing is read), a NumPy
    scalar (a 0-d array: strongly typed) or a ``(dtype, shape)`` pair."""
    if isinstance(value, type) and value in _SCALAR_TYPES:
        return ("scalar", _SCALAR_TYPES[value])
    if isinstance(value, np.generic):  # before the Python types: numpy.float64 is a float
        return ("array", value.dtype.name, ())
    for t in (builtins.bool, builtins.int, builtins.float, builtins.complex):  # bool before int
        if isinstance(value, t):
            return ("scalar", _SCALAR_TYPES[t])
    if isinstance(value, tuple) and len(value) == 2 and not hasattr(value, "dtype"):
        dt, shape = value
        return ("array", _dtype_name(dt), _shape_of(name, shape))
    dtype = getattr(value, "dtype", None)
    shape = getattr(value, "shape", None)
    if dtype is None or shape is None:
        value = np.asarray(value)
        dtype, shape = value.dtype, value.shape
    return ("array", _dtype_name(dtype), _shape_of(name, shape))


def _shape_of(name, shape):
    out = []
    for e in tuple(shape):
        try:
            if e != e:  # NaN: Dask's unknown extent
                raise ValueError
            out.append(int(e))
        except (ValueError, TypeError):
            raise ArgumentError(f"'{name}' has an unknown extent in its shape {tuple(shape)}; "
                                "its dtype and shape must be known to check the program") from None
    return tuple(out)


def _info(t):
    name, dtype, shape = t
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = dtype  # bfloat16 without ml_dtypes: its name
    return ValueInfo(name, dt, tuple(shape))


def check_specs(text, specs) -> ProgramInfo:
    """:func:`check` for names already turned into specs (``{name: spec_of(...)}``)."""
    if not isinstance(text, str):
        raise ArgumentError(f"the program must be a str, not {type(text).__name__}")
    _check_text(text)
    r = _core.check(text, specs)
    return ProgramInfo(list(r["parameters"]), {t[0]: _info(t) for t in r["assigned"]},
                       None if r["result"] is None else _info(r["result"]), bool(r["reduces"]),
                       bool(r["scans"]), _rows(r["rows"]))


def _rows(r):
    return {"splits": bool(r["splits"]), "why_not": str(r["why_not"]),
            "inputs": [tuple(t) for t in r["inputs"]], "outputs": [tuple(t) for t in r["outputs"]]}


def check(ex, /, local_dict=None, *, _frame_depth=1, **names) -> ProgramInfo:
    """Checks ``ex`` for the dtypes and shapes of its variables and says what it would give,
    without compiling or running anything::

        info = jitexpr.check("c = a * 2 + b; s = sum(c)", a=("float32", (1000,)), b=1.5)
        info.assigned["c"]   # ValueInfo(name='c', dtype=dtype('float32'), shape=(1000,))
        info.result          # ValueInfo(name='s', dtype=dtype('float32'), shape=())

    Names are bound as for :func:`jitexpr.evaluate` (keywords, ``local_dict``, the caller's
    frame). A value may be an array of any library (only its ``dtype`` and ``shape`` are looked
    at), a ``(dtype, shape)`` pair, a NumPy scalar, a Python scalar, or one of the types
    ``bool``, ``int``, ``float``, ``complex`` (a weakly typed scalar). Raises what ``evaluate``
    would (ParseError, NameError, TypeError, ShapeError, ValueError, with the caret).
    """
    bound = _bind(ex, names, local_dict, _frame_depth + 1)
    return check_specs(ex, {n: spec_of(n, v) for n, v in bound.items()})


def outline(text: str) -> dict:
    """Statements and reduction calls of ``text`` with their character spans (parse only); a
    statement's ``target`` is its first (or only) target, ``more_targets`` the names after it
    (``m, e = frexp(x)``: target ``"m"``, more_targets ``["e"]``)::

        {"statements": [(target, span, target_span, value_span, more_targets)],
         "reductions": [(function, statement, span, operand_span, [(keyword, value_span)])]}

    and ``"subscripts"``: ``[(statement, span, base_span, index_span, items)]`` (``a[1:, 0]``:
    base ``a``, index ``[1:, 0]``), in text order, each item ``(kind, span, value, start, stop,
    step, constant)``: kind ``"integer"`` (``value`` the folded integer), ``"slice"`` (``start``,
    ``stop``, ``step`` folded, None where omitted; ``constant`` False where a part is not a
    constant integer), ``"ellipsis"``, ``"newaxis"`` (None) or ``"array"`` (another expression:
    a boolean mask, or what the checker refuses as an index).
    """
    _check_text(text)
    raw = _core.outline(text)
    # The extension speaks in UTF-8 byte offsets; Python strings index by code point.
    if text.isascii():
        conv = lambda s: (int(s[0]), int(s[1]))  # noqa: E731
    else:
        b = text.encode("utf-8")
        conv = lambda s: (len(b[:s[0]].decode("utf-8", "ignore")), len(b[:s[1]].decode("utf-8", "ignore")))  # noqa: E731
    return {
        "statements": [(t, conv(sp), conv(tsp), conv(vsp), list(more)) for t, sp, tsp, vsp, more in raw["statements"]],
        "reductions": [(f, int(st), conv(sp), conv(osp), [(k, conv(ks)) for k, ks in kw])
                       for f, st, sp, osp, kw in raw["reductions"]],
        "subscripts": [(int(st), conv(sp), conv(bsp), conv(isp),
                        [(k, conv(ks), v, a, b, c, bool(const)) for k, ks, v, a, b, c, const in items])
                       for st, sp, bsp, isp, items in raw["subscripts"]],
    }


def raise_at(text: str, span, message: str, kind: str = "value"):
    """Raises the jitexpr error of ``kind`` (``"value"``, ``"shape"``, ``"type"``, ``"index"``)
    with ``message`` and the caret under ``span`` (code points, as :func:`outline` gives) of
    ``text``, exactly as the library's own errors have it."""
    b, e = span
    if not text.isascii():
        b, e = len(text[:b].encode("utf-8")), len(text[:e].encode("utf-8"))
    _core._source_error(kind, message, text, b, e)
    raise AssertionError("unreachable: _source_error raises")  # pragma: no cover
