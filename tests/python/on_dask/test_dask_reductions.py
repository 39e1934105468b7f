"""Reductions through dask.array.reduction with jitexpr chunk and combine kernels, against
NumPy 2: every kind, every axis, keepdims; fixed chunking gives identical bits."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import jitexpr.dask as jxd  # noqa: E402

RNG = np.random.default_rng(7)
XN = RNG.standard_normal((24, 18, 10))
YN = RNG.standard_normal((18, 1))

# Tolerance documented in docs/distributed.md: float64 results within 1e-12 relative of NumPy's
# (a tree of partial sums adds in another order than NumPy's pairwise sums).
RTOL = 1e-12

KINDS = ["sum", "prod", "mean", "min", "max", "std", "var", "any", "all"]
# Every axis, a pair, all; keepdims both ways (each case a separate result in one compute).
CASES = [(None, False), (0, False), (1, True), (2, False), (-1, True), ((0, 2), False), ((1, 2), True)]


def _x():
    return da.from_array(XN, chunks=(12, 9, 5)), da.from_array(YN, chunks=(9, 1))


@pytest.mark.parametrize("kind", KINDS)
def test_every_reduction_over_every_axis_equals_numpy(kind, compute):
    x, y = _x()
    expr, ref_in = ("x * y + 0.5 > 0", XN * YN + 0.5 > 0) if kind in ("any", "all") else ("x * y + 0.5", XN * YN + 0.5)
    if kind == "prod":
        expr, ref_in = "1 + x * y / 100", 1 + XN * YN / 100
    results, refs = [], []
    for axis, keepdims in CASES:
        results.append(getattr(jxd, kind)(expr, x=x, y=y, axis=axis, keepdims=keepdims))
        refs.append(getattr(np, kind)(ref_in, axis=axis, keepdims=keepdims))
    for r in results:
        assert r.dtype is not None
    got = compute(*results)
    for r, g, ref, i in zip(results, got, refs, range(len(refs))):
        assert r.shape == ref.shape and g.shape == ref.shape, (kind, i)
        assert g.dtype == ref.dtype and r.dtype == ref.dtype, (kind, i, g.dtype, ref.dtype)
        np.testing.assert_allclose(g, ref, rtol=RTOL, atol=0, err_msg=f"{kind} case {i}")


@pytest.mark.parametrize("kind", ["argmin", "argmax"])
def test_arg_reductions_give_numpys_first_index(kind, compute):
    x, y = _x()
    vals = np.round(XN * 2) / 2  # many ties: the first index must win, as in NumPy
    xv = da.from_array(vals, chunks=(12, 9, 5))
    cases = [(None, False), (0, True), (1, False), (-1, False), (None, True)]
    got = compute(*[getattr(jxd, kind)("v", v=xv, axis=a, keepdims=kd) for a, kd in cases])
    for (a, kd), g in zip(cases, got):
        ref = getattr(np, kind)(vals, axis=a, keepdims=kd)
        assert g.dtype == np.int64 and g.shape == ref.shape
        np.testing.assert_array_equal(g, ref)


def test_uneven_chunks_reduce_alike(compute):
    x = da.from_array(XN, chunks=(7, 5, 4))
    s, d, a = compute(jxd.sum("x", x=x, axis=(0, 2)), jxd.std("x", x=x, axis=1, ddof=1), jxd.argmax("x", x=x))
    np.testing.assert_allclose(s, XN.sum(axis=(0, 2)), rtol=RTOL)
    np.testing.assert_allclose(d, XN.std(axis=1, ddof=1), rtol=RTOL)
    assert a == np.argmax(XN)


def test_arg_reductions_find_the_first_nan(compute):
    v = np.arange(40.0)
    v[[13, 27]] = np.nan
    x = da.from_array(v, chunks=9)
    assert compute(jxd.argmax("x", x=x)) == 13 == np.argmax(v)
    assert compute(jxd.argmin("x", x=x)) == 13 == np.argmin(v)


def test_reductions_in_the_text_fuse_and_combine(compute):
    x, y = _x()
    s = jxd.evaluate("sum(x * y)", x=x, y=y)
    m = jxd.evaluate("x - mean(x, axis=0)", x=x)
    t = jxd.evaluate("sum(min(x, axis=2) * 2) / max(x)", x=x)
    sr, mr, tr = compute(s, m, t)
    np.testing.assert_allclose(sr, np.sum(XN * YN), rtol=RTOL)
    np.testing.assert_allclose(mr, XN - XN.mean(axis=0), rtol=RTOL, atol=1e-15)
    np.testing.assert_allclose(tr, np.sum(XN.min(axis=2) * 2) / XN.max(), rtol=RTOL)


def test_integer_and_bool_reductions_take_numpys_dtypes(compute):
    i = da.from_array(np.arange(100, dtype=np.int16).reshape(10, 10), chunks=3)
    s, m, v = compute(jxd.sum("i", i=i), jxd.mean("i", i=i, axis=1), jxd.var("i", i=i, ddof=1))
    ref = np.arange(100, dtype=np.int16).reshape(10, 10)
    assert s.dtype == np.sum(ref).dtype and s == np.sum(ref)
    np.testing.assert_allclose(m, ref.mean(axis=1))
    np.testing.assert_allclose(v, ref.var(ddof=1), rtol=RTOL)


def test_fixed_chunking_gives_identical_bits(compute):
    x, y = _x()
    exprs = [jxd.sum("x * y", x=x, y=y), jxd.std("x", x=x, axis=1), jxd.mean("x * 3", x=x, axis=(0, 2))]
    first = compute(*exprs)
    again = compute(*[jxd.sum("x * y", x=x, y=y), jxd.std("x", x=x, axis=1), jxd.mean("x * 3", x=x, axis=(0, 2))])
    for f, g in zip(first, again):
        assert f.tobytes() == g.tobytes()


def test_split_every_builds_combine_levels(compute):
    x = da.from_array(np.arange(160.0), chunks=10)
    r = jxd.sum("x * 2", x=x, split_every=2)
    assert len([k for k in r.dask.layers if "partial" in k]) == 3  # 16 blocks: 8, 4, 2, then the aggregate
    assert compute(r) == np.sum(np.arange(160.0) * 2)


def test_axis_out_of_bounds_is_a_shape_error():
    import jitexpr as jx
    x, _ = _x()
    with pytest.raises(jx.ShapeError, match="out of bounds"):
        jxd.sum("x", x=x, axis=3)
    with pytest.raises(jx.ShapeError, match=r"axis 5 is out of bounds[^\n]*\nline 1: sum\(x, axis=5\)"):
        jxd.evaluate("sum(x, axis=5)", x=x)


# Chunked (24, 18, 10) as (12, 18, 10): axes 1 and 2 have one block each, axis 0 two.
ONE_BLOCK_CASES = [(1, False), (2, True), ((1, 2), False), ((1, 2), True)]


@pytest.mark.parametrize("kind", ["sum", "mean", "std", "min", "argmax"])
def test_a_reduction_over_axes_of_one_block_is_one_task_per_output_block(kind, compute):
    x = da.from_array(XN, chunks=(12, 18, 10))
    y = da.from_array(YN, chunks=(18, 1))
    cases = [(1, False), (2, False)] if kind == "argmax" else ONE_BLOCK_CASES
    results, refs = [], []
    for axis, keepdims in cases:
        kw = {} if kind == "argmax" else {"keepdims": keepdims}
        r = getattr(jxd, kind)("x * y + 0.5", x=x, y=y, axis=axis, **kw)
        # one blockwise layer over the inputs (no partials, no aggregate layer, no alias key;
        # argmax also reads the global indices along the axis, a da.arange block)
        (opt,) = __import__("dask").optimize(r)
        tasks = [k for k in dict(opt.__dask_graph__()) if k[0] not in x.dask.layers and k[0] not in y.dask.layers
                 and not k[0].startswith("arange-")]
        assert len(tasks) == r.npartitions == 2 and {k[0] for k in tasks} == {r.name}, (axis, keepdims, tasks)
        results.append(r)
        refs.append(getattr(np, kind)(XN * YN + 0.5, axis=axis, **kw))
    got = compute(*results)
    for r, g, ref in zip(results, got, refs):
        assert r.shape == ref.shape == g.shape
        if kind == "argmax":
            np.testing.assert_array_equal(g, ref)
        else:
            np.testing.assert_allclose(g, ref, rtol=RTOL)


def test_statistics_in_the_text_keep_their_arguments(compute):
    # The language's var/std/argmin with a positional axis, an axis tuple, ddof and keepdims:
    # the chunk and combine steps must get every argument the text gives (ddof dropped would be
    # a silent wrong answer).
    x, _ = _x()
    v = jxd.evaluate("var(x * 2, 1, ddof=1)", x=x)
    c = jxd.evaluate("x - mean(x, axis=(0, 2), keepdims=True)", x=x)
    s = jxd.evaluate("std(x, axis=None, keepdims=True) + 1", x=x)
    a = jxd.evaluate("argmin(x, 2)", x=x)
    vr, cr, sr, ar = compute(v, c, s, a)
    np.testing.assert_allclose(vr, np.var(XN * 2, 1, ddof=1), rtol=RTOL)
    np.testing.assert_allclose(cr, XN - XN.mean(axis=(0, 2), keepdims=True), rtol=RTOL, atol=1e-15)
    np.testing.assert_allclose(sr, np.std(XN, keepdims=True) + 1, rtol=RTOL)
    np.testing.assert_array_equal(ar, np.argmin(XN, 2))


def test_statistics_the_layer_does_not_split_are_refused_by_name():
    import jitexpr as jx
    x, _ = _x()
    with pytest.raises(jx.ArgumentError, match="nansum"):
        jxd.evaluate("nansum(x, axis=0)", x=x)
