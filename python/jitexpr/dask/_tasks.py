"""What a Dask task runs on a worker: jitexpr programs over one block (or a few partials).

Every callable here pickles as plain data — program text, the names it binds, the dtypes it
was checked with — never a compiled module or a device pointer. On the worker the text goes
through ``jitexpr.evaluate`` / ``jitexpr.run``: the runtime of that process prepares it once
(memory cache; CUDA kernels also through the disk cache) and every later block is a cache hit.
NumPy blocks run on the CPU backend, CuPy blocks on the worker's GPU on CuPy's current stream.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _api
from .. import _jitexpr as _core
from .._errors import TypeError as JxTypeError

# The largest int64: the "no index" of arg reductions (every real index is smaller).
NO_INDEX = 9223372036854775807


def _xp(block):
    """numpy or cupy, whichever ``block`` belongs to."""
    mod = type(block).__module__
    if mod.startswith("cupy"):
        import cupy
        return cupy
    return np


def _is_cupy(block):
    return type(block).__module__.startswith("cupy")


# dtype name -> the NumPy dtype (or the name, where NumPy does not know it): task objects are
# unpickled for every task, so this is looked up rather than made again each time.
_DTYPES: dict = {}


def _dtype_of_name(name):
    d = _DTYPES.get(name)
    if d is None:
        try:
            d = np.dtype(name)
        except TypeError:
            d = name
        _DTYPES[name] = d
    return d


def _wanted_dtypes(names, signature):
    """The dtype each positional block must have (a NumPy dtype, or its name where NumPy does not
    know it), None where nothing is checked."""
    return tuple(None if signature.get(n) is None else _dtype_of_name(signature[n]) for n in names)


def _check_dtypes(names, wanted, blocks):
    """The dtypes the graph was checked with must be the blocks' (a Dask meta that lied, or a
    chunk function elsewhere that changed a dtype, would otherwise give silently other types).
    Python scalars have no dtype and are not checked (their spec is their Python type)."""
    for n, want, b in zip(names, wanted, blocks):
        if want is None:
            continue
        got = getattr(b, "dtype", None)
        if got is None or got == want:
            continue
        got_name = np.dtype(got).name
        want_name = want.name if isinstance(want, np.dtype) else want
        if got_name != want_name:
            raise JxTypeError(f"a block of '{n}' has dtype {got_name}, but the graph was built for {want_name}")


def _block_shape(blocks, ndim):
    """The shape of the output block of ``blocks`` (Dask's blockwise: their broadcast, aligned by
    trailing dimensions, padded to ``ndim``)."""
    shapes = [b.shape for b in blocks if getattr(b, "ndim", 0)]
    if not shapes:
        return (1,) * ndim if ndim else ()
    first = shapes[0]
    if all(sh == first for sh in shapes):
        full = tuple(first)
    else:
        full = tuple(np.broadcast_shapes(*shapes))
    return (1,) * (ndim - len(full)) + full


class Program:
    """``block -> jitexpr.evaluate(text)`` (``outputs`` None) or a tuple of the named outputs of
    ``jitexpr.run(text)``. ``names``: the parameter bound to each positional block; ``signature``:
    {name: dtype name} the graph was checked with; ``result``: (dtype name, ndim) of the value,
    from the checker, when the graph knows it.

    With CuPy blocks and a known ``result``, the value is written into an array from CuPy's
    allocator (``cupy.empty``: CuPy's memory pool, or RMM where dask-cuda set it up), on CuPy's
    current stream, so that a worker's results all come from the one pool the worker manages
    (and reuse its freed blocks) rather than from a second pool of jitexpr's. Nothing here waits
    for the device: the kernels are queued on that stream and later work on it is ordered after
    them."""

    __slots__ = ("text", "names", "signature", "outputs", "result", "_wanted")

    def __init__(self, text, names, signature, outputs=None, result=None):
        self.text = text
        self.names = tuple(names)
        self.signature = dict(signature)
        self.outputs = None if outputs is None else tuple(outputs)
        self.result = None if result is None else (str(result[0]), int(result[1]))
        self._wanted = _wanted_dtypes(self.names, self.signature)

    def __reduce__(self):
        return (Program, (self.text, self.names, self.signature, self.outputs, self.result))

    def __repr__(self):
        return f"jitexpr.dask.Program({self.text!r})"

    def __call__(self, *blocks):
        _check_dtypes(self.names, self._wanted, blocks)
        # The names are exactly the program's parameters (and the constants it shadows), so the
        # blocks are its environment as they are: no lookup in any frame.
        env = dict(zip(self.names, blocks))
        if self.outputs is None:
            if self.result is not None and self.result[0] != "bfloat16":  # a dtype CuPy has
                for b in blocks:
                    if _is_cupy(b):
                        import cupy
                        dtype, ndim = self.result
                        out = cupy.empty(_block_shape(blocks, ndim), dtype=dtype)
                        _core.evaluate(self.text, env, out, None, None, None, False, None)
                        return out
            return _api._to_library(_core.evaluate(self.text, env, None, None, None, None, False, None))
        r = _api.run(self.text, env)
        return tuple(r[o] for o in self.outputs)


def select(t, k):
    """Output ``k`` of a :class:`Program` with several outputs."""
    return t[k]


# ---------------------------------------------------------------------------------------- reductions

def reduce_text(fn, operand, axes, ndim):
    """jitexpr text reducing ``operand`` (of ``ndim`` dimensions) over ``axes`` with ``fn``:
    ``fn(x)`` over every axis, else one reduction per axis, the highest first (so the lower
    axis numbers still hold)."""
    if len(axes) == ndim:
        return f"{fn}({operand})"
    t = operand
    for a in sorted(axes, reverse=True):
        t = f"{fn}({t}, axis={a})"
    return t


def kept_shape(shape, axes):
    return tuple(1 if i in axes else e for i, e in enumerate(shape))


def _keep(x, shape, axes):
    """A reduction's result with the reduced axes back as extent 1 (a view)."""
    return x.reshape(kept_shape(shape, axes))


def _count(shape, axes):
    return math.prod(shape[a] for a in axes)


def _real_dtype(d):
    return np.empty(0, dtype=d).real.dtype


class Chunk:
    """The first step of a reduction, on one block of each input: the fused program ``text``
    (an elementwise expression over ``names``) reduced over ``axes``, as a dict of partials of
    the block's shape with the reduced axes kept at extent 1.

    kinds: ``sum prod min max any all`` ({"v"}), ``mean`` ({"s", "n"}), ``var``/``std``
    ({"n", "m", "m2"}: count, mean and sum of squared deviations, combined as Chan et al.),
    ``argmin``/``argmax`` ({"v", "i"}: the extreme and the smallest global index holding it;
    ``index`` is how the global index is spelled over the extra index blocks)."""

    __slots__ = ("kind", "text", "names", "signature", "axes", "ndim", "acc", "index", "nan", "_wanted")

    def __init__(self, kind, text, names, signature, axes, ndim, acc=None, index=None, nan=False):
        self.kind, self.text, self.names, self.signature = kind, text, tuple(names), dict(signature)
        self.axes, self.ndim, self.acc, self.index, self.nan = tuple(axes), ndim, acc, index, nan
        self._wanted = _wanted_dtypes(self.names, self.signature)

    def __reduce__(self):
        return (Chunk, (self.kind, self.text, self.names, self.signature, self.axes, self.ndim, self.acc,
                        self.index, self.nan))

    def __repr__(self):
        return f"jitexpr.dask.Chunk({self.kind}, {self.text!r}, axes={self.axes})"

    def __call__(self, *blocks):
        nblocks = len(self.names)
        values, extra = blocks[:nblocks], blocks[nblocks:]
        _check_dtypes(self.names, self._wanted, values)
        env = dict(zip(self.names, values))
        # Every input may lack trailing-aligned leading dimensions: the block's shape is the
        # broadcast of the inputs', padded to the operand's dimensions.
        shape = _block_shape(values, self.ndim)
        axes, kind, x = self.axes, self.kind, f"({self.text})"
        if axes and _count(shape, axes) == 0 and kind in ("min", "max", "argmin", "argmax", "var", "std"):
            return _empty_partials(self, shape, env, values)
        if kind in ("sum", "prod", "min", "max", "any", "all"):
            v = _api.evaluate(reduce_text(kind, x, axes, self.ndim), env)
            return {"v": _keep(v, shape, axes)}
        xp = next((_xp(b) for b in values if _is_cupy(b)), np)
        ones = (1,) * self.ndim
        if kind == "mean":
            src = x if self.acc is None else f"{self.acc}{x}"
            s = _api.evaluate(reduce_text("sum", src, axes, self.ndim), env)
            return {"s": _keep(s, shape, axes), "n": xp.full(ones, _count(shape, axes), dtype=np.float64)}
        if kind in ("var", "std"):
            src = f"{self.acc}{x}"
            m = _keep(_api.evaluate(reduce_text("mean", src, axes, self.ndim), env), shape, axes)
            env["jx_m_"] = m
            d = f"({src} - jx_m_)"
            sq = f"real({d} * conj({d}))" if np.dtype(m.dtype).kind == "c" else f"{d} * {d}"
            m2 = _api.evaluate(reduce_text("sum", sq, axes, self.ndim), env)
            return {"n": xp.full(ones, _count(shape, axes), dtype=np.float64), "m": m, "m2": _keep(m2, shape, axes)}
        if kind in ("argmin", "argmax"):
            fn = kind[3:]
            for k, b in enumerate(extra):
                # index block k: the global indices along the dimension it stands for, as a view
                # that broadcasts along the others.
                dim = self.index[1][k]
                # Made by the graph on the host: moved to where the data is (CuPy chunks on a GPU
                # worker), since jitexpr never copies between host and device behind a call.
                env[f"jx_i{k}_"] = xp.asarray(b).reshape(tuple(-1 if d == dim else 1 for d in range(self.ndim)))
            v = _keep(_api.evaluate(reduce_text(fn, x, axes, self.ndim), env), shape, axes)
            env["jx_v_"] = v
            hit = f"where(isnan(jx_v_), isnan{x}, {x} == jx_v_)" if self.nan else f"{x} == jx_v_"
            i = _api.evaluate(reduce_text("min", f"where({hit}, {self.index[0]}, {NO_INDEX})", axes, self.ndim), env)
            return {"v": v, "i": _keep(i, shape, axes)}
        raise ValueError(f"unknown reduction {kind!r}")


def _empty_partials(chunk, shape, env, values):
    """The partials of a block with no element along the reduced axes (a block of a mask
    selection that selected nothing, say), which must not count: for the extrema, empty partials
    (the combine step's concatenation drops them, as Dask's own chunk_min does; if every block is
    empty the combine step raises NumPy's error for an empty array), for var/std a count of 0."""
    xp = next((_xp(b) for b in values if _is_cupy(b)), np)
    axes, nd = chunk.axes, chunk.ndim
    if chunk.kind in ("var", "std"):
        kept = kept_shape(shape, axes)
        return {"n": xp.zeros((1,) * nd, dtype=np.float64), "m": xp.zeros(kept, dtype=chunk.acc),
                "m2": xp.zeros(kept, dtype=_real_dtype(chunk.acc))}
    none = tuple(0 if d in axes else e for d, e in enumerate(shape))
    dtype = _api.evaluate(f"({chunk.text})", env).dtype  # the operand's, over this empty block
    if chunk.kind in ("min", "max"):
        return {"v": xp.empty(none, dtype=dtype)}
    return {"v": xp.empty(none, dtype=dtype), "i": xp.empty(none, dtype=np.int64)}


def _concat(nested, axes, field):
    """Partials nested as Dask hands them (one list level per reduced axis, in axis order)
    joined into one array of ``field``."""
    if not isinstance(nested, list):
        return nested[field]
    if not axes:
        raise ValueError("more list levels than reduced axes")
    parts = [_concat(p, axes[1:], field) for p in nested]
    # An empty partial (a block, or a group of them, that selected nothing) adds nothing, and
    # its other extents need not match its neighbours' (a (0, 0) beside (1, 1)): left out.
    # When all are empty, any one stands for them.
    full = [q for q in parts if q.size]
    if not full:
        return parts[0]
    if len(full) == 1:
        return full[0]
    return _xp(full[0]).concatenate(full, axis=axes[0])


class Combine:
    """The combine (``final`` False) and aggregate (``final`` True) steps of a reduction: jitexpr
    kernels over the partials of several blocks, joined along the reduced axes. The order of the
    partials is the graph's, so a fixed chunking gives the same result every time."""

    __slots__ = ("kind", "axes", "ndim", "final", "dtype", "ddof")

    def __init__(self, kind, axes, ndim, final, dtype, ddof=0):
        self.kind, self.axes, self.ndim, self.final, self.dtype, self.ddof = kind, tuple(axes), ndim, final, dtype, ddof

    def __reduce__(self):
        return (Combine, (self.kind, self.axes, self.ndim, self.final, self.dtype, self.ddof))

    def __repr__(self):
        return f"jitexpr.dask.Combine({self.kind}, axes={self.axes}, final={self.final})"

    def __call__(self, nested, axis=None, keepdims=True, **_):
        axes, kind, nd = tuple(sorted(self.axes)), self.kind, self.ndim
        first = nested
        while isinstance(first, list):
            first = first[0]
        fields = list(first.keys())
        p = {f: _concat(nested, list(axes), f) for f in fields}
        shape = tuple(np.broadcast_shapes(*[tuple(p[f].shape) for f in fields]))
        out_shape = kept_shape(shape, axes)
        if kind in ("min", "max", "argmin", "argmax") and not self.final and \
                any(p["v"].shape[a] == 0 for a in axes):
            return p  # every block of the group selected nothing: an empty partial, passed on
        if kind in ("sum", "prod", "min", "max", "any", "all"):
            fn = "sum" if kind == "sum" else kind
            r = {"v": _keep(_api.evaluate(reduce_text(fn, "v", axes, nd), {"v": p["v"]}), shape, axes)}
            return self._finish(r["v"], keepdims) if self.final else r
        if kind == "mean":
            s = _keep(_api.evaluate(reduce_text("sum", "s", axes, nd), {"s": p["s"]}), shape, axes)
            n = _keep(_api.evaluate(reduce_text("sum", "n", axes, nd), {"n": p["n"]}), p["n"].shape, axes)
            if not self.final:
                return {"s": s, "n": n}
            if np.dtype(self.dtype).kind == "m":  # a duration: the sum over the count, towards zero (NumPy's)
                return self._finish(_api.evaluate("s / int64(n)", {"s": s, "n": n}), keepdims)
            wide = "complex128" if np.dtype(s.dtype).kind == "c" else "float64"
            return self._finish(_api.evaluate(f"{self.dtype}({wide}(s) / n)", {"s": s, "n": n}), keepdims)
        if kind in ("var", "std"):
            env = dict(p)
            # (A group of blocks that selected nothing has N = 0 and adds nothing: its mean is
            # taken as 0, not 0 / 0, whose NaN would reach the result.)
            r = _api.run(f"N = {reduce_text('sum', 'n', axes, nd)}; "
                         f"M = {reduce_text('sum', 'n * m', axes, nd)} / maximum(N, 1)", env)
            N, M = _keep(r["N"], p["n"].shape, axes), _keep(r["M"], out_shape, axes)
            env["M"] = M
            sq = "real((m - M) * conj(m - M))" if np.dtype(M.dtype).kind == "c" else "(m - M) * (m - M)"
            m2 = _keep(_api.evaluate(reduce_text("sum", f"m2 + n * {sq}", axes, nd), env), out_shape, axes)
            if not self.final:
                return {"n": N, "m": M, "m2": m2}
            ddof = self.ddof
            f = f"{self.dtype}(m2 / maximum(N - {ddof!r}, 0))"
            if kind == "std":
                f = f"{self.dtype}(sqrt(m2 / maximum(N - {ddof!r}, 0)))"
            return self._finish(_api.evaluate(f, {"m2": m2, "N": N}), keepdims)
        if kind in ("argmin", "argmax"):
            fn = kind[3:]
            v = _keep(_api.evaluate(reduce_text(fn, "v", axes, nd), {"v": p["v"]}), shape, axes)
            nan = np.dtype(v.dtype).kind in "fc"
            hit = "where(isnan(V), isnan(v), v == V)" if nan else "v == V"
            i = _api.evaluate(reduce_text("min", f"where({hit}, i, {NO_INDEX})", axes, nd), {"v": p["v"], "i": p["i"], "V": v})
            i = _keep(i, shape, axes)
            return self._finish(i, keepdims) if self.final else {"v": v, "i": i}
        raise ValueError(f"unknown reduction {kind!r}")

    def _finish(self, r, keepdims):
        shape = tuple(r.shape)
        if len(shape) < self.ndim:  # a 0-d result of a reduction over every axis
            shape = (1,) * self.ndim
            r = r.reshape(shape)
        if keepdims:
            return r
        return r.reshape(tuple(e for i, e in enumerate(shape) if i not in self.axes))


class Whole:
    """A whole reduction in one task, for an output block made from one block of each input
    (every reduced axis has one block): the :class:`Chunk` step, then the final :class:`Combine`
    of its one partial. Dask hands an input that spans a dropped (reduced, not kept) dimension
    as a list of its blocks along it: here always one."""

    __slots__ = ("chunk", "combine", "keepdims")

    def __init__(self, chunk, combine, keepdims):
        self.chunk, self.combine, self.keepdims = chunk, combine, bool(keepdims)

    def __reduce__(self):
        return (Whole, (self.chunk, self.combine, self.keepdims))

    def __repr__(self):
        return f"jitexpr.dask.Whole({self.chunk!r})"

    def __call__(self, *blocks):
        one = []
        for b in blocks:
            while isinstance(b, list):
                if len(b) != 1:
                    raise ValueError(f"a whole reduction got {len(b)} blocks along a reduced axis, not 1")
                b = b[0]
            one.append(b)
        return self.combine(self.chunk(*one), keepdims=self.keepdims)


class Keep:
    """The chunk step handed to ``dask.array.reduction``: the partials are already made by the
    fused jitexpr chunk layer before it, so this passes them on (and Dask fuses the two)."""

    def __call__(self, x, axis=None, keepdims=True, **_):
        return x

    def __reduce__(self):
        return (Keep, ())

    def __repr__(self):
        return "jitexpr.dask.Keep()"
