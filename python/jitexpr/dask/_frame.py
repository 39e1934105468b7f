"""jitexpr over dask.dataframe: derived columns and boolean masks, partition by partition.

The program's names are the frame's columns (and scalars from keywords, ``local_dict`` or the
caller's frame). Each statement is checked on the client against the columns' dtypes, which
gives the result's meta without running anything; on the workers each partition's columns go
to jitexpr without copies: NumPy-backed columns as arrays, Arrow-backed (``double[pyarrow]``)
and pandas' nullable columns (``Float64``, ``Int64``, ``boolean``) through Arrow, their nulls
propagated (a row is null where any input is).
"""

from __future__ import annotations

import builtins
import numbers

import numpy as np

from .. import _api
from .._check import check_specs, outline, raise_at, spec_of
from .._errors import ArgumentError
from .._errors import TypeError as JxTypeError

_ROWS = 7919  # the length the checker is told for a partition (any length gives the same dtypes)


def _arrow_string(dtype):
    """'string' or 'large_string' for a column of Arrow strings (pandas' pyarrow-backed string
    dtype, or pd.ArrowDtype of a string type), else None."""
    import pandas as pd
    if type(dtype).__name__ == "StringDtype" and getattr(dtype, "storage", "") == "pyarrow":
        return "large_string"
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa
        t = dtype.pyarrow_dtype
        if pa.types.is_string(t):
            return "string"
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return "large_string"
    return None


def _kind(dtype):
    """'numpy', 'arrow' (pd.ArrowDtype, pandas' pyarrow strings) or 'masked' (pandas' nullable dtypes)."""
    import pandas as pd
    if isinstance(dtype, pd.ArrowDtype) or _arrow_string(dtype):
        return "arrow"
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and hasattr(dtype, "numpy_dtype") and \
            type(dtype).__name__ in ("Float64Dtype", "Float32Dtype", "Int8Dtype", "Int16Dtype", "Int32Dtype",
                                     "Int64Dtype", "UInt8Dtype", "UInt16Dtype", "UInt32Dtype", "UInt64Dtype",
                                     "BooleanDtype"):
        return "masked"
    return "numpy"


def _spec_dtype(name, dtype):
    """The dtype name the checker is told for a column: NumPy's, or 'string' / 'large_string' for
    a column of Arrow strings (each partition's column is read whole, its own offsets)."""
    return _arrow_string(dtype) or _numpy_dtype(name, dtype).name


def _numpy_dtype(name, dtype):
    kind = _kind(dtype)
    try:
        if kind == "arrow":
            return np.dtype(dtype.numpy_dtype)
        if kind == "masked":
            return np.dtype(dtype.numpy_dtype)
        d = np.dtype(dtype)
    except TypeError:
        d = None
    if d is None or d.kind not in "biufc":
        raise JxTypeError(f"column '{name}' has dtype {dtype}, which jitexpr does not take")
    return d


def _result_dtype(np_dtype, kinds):
    """A derived column's pandas dtype: Arrow if any input column is Arrow-backed, pandas'
    nullable dtype if any is nullable, else the NumPy dtype."""
    import pandas as pd
    if "arrow" in kinds:
        import pyarrow as pa
        return pd.ArrowDtype(pa.from_numpy_dtype(np_dtype))
    if "masked" in kinds:
        name = {"b": "boolean"}.get(np_dtype.kind, np_dtype.name.capitalize().replace("Uint", "UInt"))
        try:
            return pd.api.types.pandas_dtype(name)
        except TypeError:
            return np_dtype
    return np_dtype


class Partition:
    """What runs on one partition: each statement of the program over the partition's columns.
    Pickles as the statements' text and what the graph was checked with."""

    __slots__ = ("statements", "scalars", "columns", "result_dtypes", "series")

    def __init__(self, statements, scalars, columns, result_dtypes, series):
        # (target or "", expression text, names read); a statement of several targets
        # (m, e = frexp(a)): (the targets as a tuple, the whole statement's text, names read)
        self.statements = tuple(statements)
        self.scalars = dict(scalars)          # names bound to scalars from outside the frame
        self.columns = dict(columns)          # column -> dtype name it was checked with
        self.result_dtypes = dict(result_dtypes)  # target (or "") -> pandas dtype of the result
        self.series = series                  # the last statement is an expression: return it

    def __reduce__(self):
        return (Partition, (self.statements, self.scalars, self.columns, self.result_dtypes, self.series))

    def __call__(self, part):
        env = {}       # name -> what jitexpr reads: a NumPy array, or an Arrow array with nulls
        derived = {}   # target -> its pandas Series

        def value_of(name):
            if name in env:
                return env[name]
            if name in self.scalars:
                return self.scalars[name]
            col = part[name]
            want = self.columns.get(name)
            if want is not None and _spec_dtype(name, col.dtype) != want:
                raise JxTypeError(f"a partition's column '{name}' has dtype {col.dtype}, but the graph was "
                                  f"built for {want}")
            env[name] = _reader(col)
            return env[name]

        out = None
        for target, text, reads in self.statements:
            bound = {n: value_of(n) for n in reads}
            if isinstance(target, tuple):
                for t, r in zip(target, _several(text, target, bound)):
                    out = _to_series(r, self.result_dtypes[t], part.index)
                    derived[t] = out
                    env[t] = _reader(out)
                continue
            r = _api.evaluate(text, bound)
            out = _to_series(r, self.result_dtypes[target or ""], part.index)
            if target:
                derived[target] = out
                env[target] = _reader(out)
        if self.series:
            return out
        return part.assign(**derived)


def _several(text, targets, bound):
    """The values of a statement of several targets (``m, e = frexp(a)``), in their order: one
    kernel computing all of them (jitexpr.run) over NumPy columns; over columns with nulls, which
    jitexpr.run does not take, each target through the Arrow path (nulls propagated), the
    function then computed once per target."""
    if not builtins.any(hasattr(v, "__arrow_c_array__") or hasattr(v, "__arrow_c_stream__") for v in bound.values()):
        # A column assigned here is rebound, never written: a target that is also read
        # (``a, e = frexp(a)``) is bound to a copy, which the assignment may write into.
        bound = {n: (np.array(v) if n in targets and isinstance(v, np.ndarray) else v) for n, v in bound.items()}
        r = _api.run(text, bound)
        return [r[t] for t in targets]
    return [_api.evaluate(f"{text}; {t}", bound) for t in targets]


def _reader(col):
    """A column as jitexpr reads it, without a copy: its NumPy values, or an Arrow array (with
    its validity) for Arrow-backed and nullable columns."""
    k = _kind(col.dtype)
    if k == "numpy":
        return col.to_numpy()
    import pyarrow as pa
    return pa.array(col.array) if k == "masked" else col.array.__arrow_array__()


def _to_series(r, dtype, index):
    import pandas as pd
    n = len(index)
    if hasattr(r, "__arrow_c_array__") or hasattr(r, "__arrow_c_stream__") and not isinstance(r, np.ndarray):
        import pyarrow as pa
        arr = r if isinstance(r, (pa.Array, pa.ChunkedArray)) else pa.array(r)
        if isinstance(dtype, pd.ArrowDtype):
            return pd.Series(pd.arrays.ArrowExtensionArray(arr), index=index)
        if hasattr(dtype, "__from_arrow__"):
            return pd.Series(dtype.__from_arrow__(arr), index=index)
        return pd.Series(arr.to_numpy(zero_copy_only=False), index=index, dtype=dtype)
    r = np.asarray(r)
    if r.ndim == 0:
        r = np.full(n, r[()], dtype=r.dtype)
    if isinstance(dtype, np.dtype):
        return pd.Series(r, index=index, copy=False)
    return pd.Series(pd.array(r, dtype=dtype), index=index)


def eval_frame(df, program, /, local_dict=None, *, _frame_depth=1, **names):
    """Evaluates ``program`` row by row over the columns of the Dask DataFrame ``df``.

    ``"c = a * 2 + b"`` (statements that assign) gives ``df`` with the assigned columns added or
    replaced, as pandas' ``DataFrame.eval`` does; a program whose last statement is an
    expression (``"a > 2 * b"``) gives that value as a Dask Series, e.g. a boolean mask for
    ``df[mask]``. Names are the frame's columns first, then scalars from the keywords,
    ``local_dict`` or the caller's frame. Assigning a column rebinds it (a new column, possibly
    of another dtype), it is never written in place. Reductions are not row-wise and are refused.

    Nulls: columns backed by Arrow (``pd.ArrowDtype``) or pandas' nullable dtypes go through
    Arrow with their validity; a result row is null where any input row is. The result's meta
    (dtypes) comes from jitexpr's checker: nothing is computed to find it.
    """
    import pandas as pd
    if not isinstance(program, str):
        raise JxTypeError(f"the program must be a str, not {type(program).__name__}")
    meta = df._meta
    columns = list(meta.columns)
    ol = outline(program)
    if not ol["statements"]:
        raise ArgumentError("the program is empty")
    for f, st, (b, e), _, _ in ol["reductions"]:
        raise ArgumentError(f"eval_frame is row by row: '{program[b:e]}' reduces over rows; reduce the "
                            f"result with Dask (.sum(), .mean(), ...) or use jitexpr.dask.{f} on arrays")
    for _, _, _, index, _ in ol["subscripts"][:1]:
        raise_at(program, index, "eval_frame is row by row, and an index reads across rows and partitions; "
                 "select rows with Dask (df[mask], df.loc[...]) instead")
    params, consts, _ = _api._names_of(program)
    outside_names = [n for n in list(params) + list(consts) if n not in columns]
    bound = _api._bind(program, names, local_dict, _frame_depth + 1) if outside_names else {}
    scalars = {}
    for n in outside_names:
        if n not in bound:
            continue
        v = bound[n]
        if not isinstance(v, (numbers.Number, np.generic)) or (isinstance(v, np.ndarray) and v.ndim):
            raise ArgumentError(f"'{n}' is not a column of the frame, and only scalars may come from outside it "
                                f"(an array would not follow the partitions)")
        scalars[n] = v
    specs, kinds_of = {}, {}
    for c in columns:
        if not isinstance(c, str):
            continue
        try:
            d = _spec_dtype(c, meta[c].dtype)
        except JxTypeError:
            continue  # a column of objects, say: fine as long as the program does not read it
        specs[c] = ("array", d, (_ROWS,))
        kinds_of[c] = _kind(meta[c].dtype)
    for n, v in scalars.items():
        specs[n] = spec_of(n, v)
    statements, result_dtypes = [], {}
    checked_columns = {}
    for target, span, tspan, (vb, ve), more in ol["statements"]:
        text = program[vb:ve]
        reads = [n for n in _api._names_of(text)[0]] + [c for c in _api._names_of(text)[1] if c in specs]
        for n in reads:
            if n not in specs and n in columns:
                raise JxTypeError(f"column '{n}' has dtype {meta[n].dtype}, which jitexpr does not take")
        targets = [target] + list(more) if more else [target]
        if more:
            # Several targets (m, e = frexp(a)): the statement checked whole, each target's dtype.
            text = f"{', '.join(targets)} = {text}"
            checked = check_specs(text, dict(specs))  # errors with the caret under the statement
            results = [checked.assigned[t] for t in targets]
        else:
            # Every column is bound (did-you-mean sees them); the statement's value is checked
            # alone, so an assignment rebinds a column rather than writing into it.
            checked = check_specs(text, dict(specs))  # errors with the caret under the statement
            results = [checked.result]
        if checked.scans:
            raise ArgumentError(f"eval_frame is row by row: '{text}' has a scan (cumsum, ...), which runs across "
                                f"rows and partitions; scan the result with Dask (.cumsum()) instead")
        kinds = {kinds_of.get(n, "numpy") for n in reads}
        for n in reads:
            if n in columns and n not in checked_columns and n not in result_dtypes:
                checked_columns[n] = specs[n][1]
        for t, res in zip(targets, results):
            if res.shape not in ((_ROWS,), ()):
                raise ArgumentError(f"'{text}' does not give one value per row (shape {res.shape})")
            result_dtypes[t or ""] = _result_dtype(np.dtype(res.dtype), kinds)
            if t:
                specs[t] = ("array", np.dtype(res.dtype).name, (_ROWS,))
                kinds_of[t] = "arrow" if "arrow" in kinds else "masked" if "masked" in kinds else "numpy"
        statements.append((tuple(targets) if more else target, text, tuple(dict.fromkeys(reads))))
    series = not ol["statements"][-1][0]
    fn = Partition(statements, scalars, checked_columns, result_dtypes, series)
    if series:
        out_meta = pd.Series([], dtype=result_dtypes[""], index=meta.index[:0])
    else:
        assigned = [t for ts, _, _ in statements for t in (ts if isinstance(ts, tuple) else (ts,)) if t]
        out_meta = meta.assign(**{t: pd.Series([], dtype=result_dtypes[t], index=meta.index[:0]) for t in assigned})
    return df.map_partitions(fn, meta=out_meta, token="jitexpr-frame")
