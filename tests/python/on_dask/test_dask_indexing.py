"""Indexing in jitexpr.dask programs against NumPy (issue 34): slices, integer indices, None and
`...` go through Dask's own slicing of the whole value they index, mask selections through
Dask's boolean indexing (unknown chunk sizes, as Dask makes them), before and after the
blockwise layers; what Dask cannot do is refused when the graph is made, with the caret.
Computed on the synchronous scheduler (the graph is the same on a cluster)."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import jitexpr as jx  # noqa: E402
import jitexpr.dask as jxd  # noqa: E402

RNG = np.random.default_rng(34)
AN = RNG.standard_normal(10)
BN = RNG.standard_normal(10)
MN = RNG.standard_normal((6, 8))
VN = RNG.standard_normal(8)

# NumPy's meaning of each form (the program text is also NumPy's, with these functions).
NP = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "std": np.std, "prod": np.prod,
      "exp": np.exp, "argmax": np.argmax, "abs": np.abs}

LAYOUTS_1D = {"two": 5, "uneven": (3, 7), "one": 10, "many": (2, 3, 1, 4)}
LAYOUTS_2D = {"blocks": (3, 4), "two_column_blocks": (6, 4), "uneven": ((2, 4), (3, 5)), "one": (6, 8)}


def compute(x):
    return x.compute(scheduler="synchronous")


def numpy_of(text, **arrays):
    return np.asarray(eval(text, dict(NP), arrays))  # noqa: S307 - the tests' own texts


FORMS_1D = [
    "a[::-1]", "a[2:]", "a[:-3]", "a[-4:-1]", "a[::2]", "a[1::3]", "a[::-2]", "a[8:1:-3]", "a[100:]", "a[5:2]",
    "a[0]", "a[-1]", "a[3] * a", "a[1:] - a[:-1]", "a[::-1] * a", "(a * 2)[::-1]", "exp(a)[2:7]", "a[None, :] * b",
    "a[..., 1:]", "a[2*3:]", "a[1:][::-1][1]",
    "a[a > 0]", "a[a > 0] * 2", "b[a > 0] - a[a > 0]", "(a * b)[a > 0]", "a[::-1][b > 0]", "a[1:][a[1:] > 0]",
    "sum(a[::-1] * a)", "sum(a[a > 0])", "mean(a[a > 0])", "max(a[2:])", "a - mean(a[1:])", "std(a[::2])",
    "sum(a)[None]", "a[3:] + sum(a[:3])", "prod(a[:4] + 1)", "argmax(a[::-1])", "min(b[a > 0])", "max(a[a > 0.5])",
    "std(b[a > 0])", "a[::-1][a > 0] * b[a > 0]", "a[a > mean(a)]", "sum(a[a > mean(a)] - mean(a))",
]


@pytest.mark.parametrize("layout", list(LAYOUTS_1D))
@pytest.mark.parametrize("text", FORMS_1D)
def test_1d_forms_equal_numpy(text, layout):
    ch = LAYOUTS_1D[layout]
    a, b = da.from_array(AN, chunks=ch), da.from_array(BN, chunks=ch)
    got = compute(jxd.evaluate(text, a=a, b=b))
    want = numpy_of(text, a=AN, b=BN)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


FORMS_2D = [
    "m[:, ::-1]", "m[::-1, 1:]", "m[1]", "m[:, 0]", "m[2, 3]", "m[..., -1]", "m[:, None, :]", "m[None]",
    "m[-2:, 1::3]", "m[:, 1:] - m[:, :-1]", "m[1:] * v", "m[:, ::-1] * v[::-1]", "m[4:1:-1, ::-2] + 1",
    "m[m > 0]", "m[m[:, 0] > 0]", "m[m[:, 0] > 0][:, 1:]", "(m * 2)[m > 0] - m[m > 0]", "m[:, 2:][m[:, 2:] > 0]",
    "sum(m[:, ::-1], axis=0)", "sum(m, axis=1)[1:]", "mean(m[::2], axis=1)", "max(m[m > 0])",
    "sum(m[m[:, 0] > 0], axis=0)", "m - mean(m[:, ::-1], axis=0)", "min(m[m[:, 0] > 0], axis=0)",
    "max(m[m[:, 0] > 0], axis=1)", "std(m[m > 0])",
]


@pytest.mark.parametrize("layout", list(LAYOUTS_2D))
@pytest.mark.parametrize("text", FORMS_2D)
def test_2d_forms_equal_numpy(text, layout):
    m = da.from_array(MN, chunks=LAYOUTS_2D[layout])
    v = da.from_array(VN, chunks=3)
    got = compute(jxd.evaluate(text, m=m, v=v))
    want = numpy_of(text, m=MN, v=VN)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_the_issues_reversed_sum_is_120():
    a = da.arange(10.0, chunks=5)
    assert compute(jxd.evaluate("a[::-1]", a=a)).tolist() == list(range(9, -1, -1))
    assert compute(jxd.evaluate("sum(a[::-1] * a)", a=a)) == 120.0


def test_the_shape_is_known_when_the_graph_is_made():
    a = da.arange(10.0, chunks=5)
    assert jxd.evaluate("a[2:]", a=a).shape == (8,)
    assert jxd.evaluate("a[::2]", a=a).shape == (5,)
    assert jxd.evaluate("a[0]", a=a).shape == ()


def test_a_mask_selection_has_unknown_chunk_sizes_as_in_dask():
    a = da.from_array(AN, chunks=5)
    r = jxd.evaluate("a[a > 0] * 2", a=a)
    assert np.isnan(r.shape[0])
    np.testing.assert_array_equal(compute(r), AN[AN > 0] * 2)


def test_two_selections_by_one_mask_line_up_over_different_chunkings():
    a, b = da.from_array(AN, chunks=(3, 7)), da.from_array(BN, chunks=(6, 4))
    m = da.from_array(AN > 0, chunks=(2, 8))
    np.testing.assert_array_equal(compute(jxd.evaluate("a[m] - b[m]", a=a, b=b, m=m)), AN[AN > 0] - BN[AN > 0])


def test_numpy_arrays_are_indexed_with_dask_arrays():
    a = da.from_array(AN, chunks=(3, 7))
    got = compute(jxd.evaluate("w[::-1] * a + sum(w[a > 0])", a=a, w=BN))
    np.testing.assert_allclose(got, BN[::-1] * AN + np.sum(BN[AN > 0]), rtol=1e-13)


def test_two_result_statement_over_a_selection():
    a = da.from_array(AN, chunks=(3, 7))
    r = jxd.run("m, e2 = frexp(a[a > 0])", a=a)
    m, e = np.frexp(AN[AN > 0])
    np.testing.assert_array_equal(compute(r["m"]), m)
    np.testing.assert_array_equal(compute(r["e2"]), e)


def test_two_result_statement_over_a_reversed_slice():
    a = da.from_array(AN, chunks=(3, 7))
    r = jxd.run("q, r = divmod(a[::-1], 0.5)", a=a)
    q, rr = np.divmod(AN[::-1], 0.5)
    np.testing.assert_array_equal(compute(r["q"]), q)
    np.testing.assert_array_equal(compute(r["r"]), rr)


def test_a_program_of_statements_over_slices_and_selections():
    a = da.from_array(AN, chunks=(4, 6))
    r = jxd.run("t = a[::-1]; u = t * a; s = sum(t[a > 0]); d = u[1:] - u[:-1]", a=a)
    t = AN[::-1]
    u = t * AN
    np.testing.assert_allclose(compute(r["t"]), t, rtol=0)
    np.testing.assert_allclose(compute(r["u"]), u, rtol=1e-15)
    np.testing.assert_allclose(compute(r["s"]), np.sum(t[AN > 0]), rtol=1e-12)
    np.testing.assert_allclose(compute(r["d"]), u[1:] - u[:-1], rtol=1e-15)


def test_reduction_calls_take_an_indexed_operand():
    a = da.from_array(AN, chunks=(3, 7))
    np.testing.assert_allclose(compute(jxd.sum("a[::-1] * a", a=a)), np.sum(AN[::-1] * AN), rtol=1e-12)
    np.testing.assert_allclose(compute(jxd.std("a[a > 0]", a=a, ddof=1)), np.std(AN[AN > 0], ddof=1), rtol=1e-12)
    m = da.from_array(MN, chunks=(3, 4))
    np.testing.assert_allclose(compute(jxd.mean("m[:, ::-1]", m=m, axis=0)), MN[:, ::-1].mean(axis=0), rtol=1e-12)


@pytest.mark.parametrize("fn", ["min", "max", "std", "var", "sum", "mean"])
def test_a_block_that_selects_nothing_does_not_count(fn):
    a = da.arange(10.0, chunks=5)  # a > 6 selects nothing of the first block
    got = compute(jxd.evaluate(f"{fn}(a[a > 6])", a=a))
    np.testing.assert_allclose(got, getattr(np, fn)(np.arange(10.0)[np.arange(10.0) > 6]), rtol=1e-12)


@pytest.mark.parametrize("fn", ["min", "max", "std", "var"])
def test_a_combine_group_whose_blocks_all_select_nothing_does_not_count(fn):
    # 32 blocks of 2 combined 4 at a time: whole groups select nothing. std/var were NaN (0/0 in
    # the group's mean) and min/max raised "max() of an empty array".
    an = np.arange(64.0)
    a = da.from_array(an, chunks=2)
    np.testing.assert_allclose(compute(jxd.evaluate(f"{fn}(a[a > 61])", a=a)), getattr(np, fn)(an[an > 61]),
                               rtol=1e-12)
    x = da.from_array(np.array([1.0, 2.0, 4.0]), chunks=((0, 0, 3),))  # empty blocks, split_every=2
    np.testing.assert_allclose(compute(getattr(jxd, fn)("x", x=x, split_every=2)),
                               getattr(np, fn)(np.array([1.0, 2.0, 4.0])), rtol=1e-12)


@pytest.mark.parametrize("fn", ["min", "max", "argmin", "argmax"])
def test_an_extreme_over_every_axis_beside_an_empty_block_equals_numpy(fn):
    # An empty block's partial (0, 0) beside its neighbours' (1, 1) failed NumPy's concatenate.
    mn = np.arange(12.0).reshape(4, 3)
    m0 = da.from_array(mn, chunks=((4,), (1, 0, 2)))
    assert compute(jxd.evaluate(f"{fn}(m0)", m0=m0)) == getattr(np, fn)(mn)
    m = da.from_array(mn, chunks=((2, 2), (1, 2)))
    k = da.from_array(np.array([False, False, True, True]), chunks=2)
    if fn in ("min", "max"):
        assert compute(jxd.evaluate(f"{fn}(m[k])", m=m, k=k)) == getattr(np, fn)(mn[2:])


def test_a_reduction_along_an_axis_of_an_array_with_no_rows_is_numpys_empty_result():
    z = da.from_array(np.zeros((0, 5)), chunks=((0,), (2, 3)))
    for fn in ("max", "argmax", "std"):
        got = compute(jxd.evaluate(f"{fn}(z, axis=1)", z=z))
        want = getattr(np, fn)(np.zeros((0, 5)), axis=1)
        assert got.shape == want.shape == (0,) and got.dtype == want.dtype


def test_the_extreme_of_an_empty_selection_is_numpys_error_when_computed():
    a = da.arange(10.0, chunks=5)
    r = jxd.evaluate("max(a[a > 60])", a=a)
    with pytest.raises(jx.ValueError, match="empty"):
        compute(r)


@pytest.mark.parametrize("fn", ["min", "max", "var", "std"])
def test_a_reduction_of_a_dask_selection_with_an_empty_block_equals_numpy(fn):
    x = da.arange(10.0, chunks=5)
    s = x[x > 6]  # Dask's own selection: its first block is empty
    np.testing.assert_allclose(compute(getattr(jxd, fn)("s", s=s)), getattr(np, fn)(np.arange(7.0, 10.0)), rtol=1e-12)


def test_an_input_of_unknown_length_can_be_selected_and_reduced():
    a = da.from_array(AN, chunks=5)
    x = a[a > 0]  # Dask's own selection: unknown chunk sizes
    np.testing.assert_allclose(compute(jxd.evaluate("sum(x[x > 1])", x=x)), np.sum(AN[AN > 1]), rtol=1e-12)


# ------------------------------------------------------------------------------------ refused

def refused(call, text, under, cls=jx.ValueError):
    with pytest.raises(cls) as e:
        call()
    assert isinstance(e.value, jx.Error)
    assert e.value.source == text
    b = text.index(under)
    assert e.value.span == (b, b + len(under))
    assert "^" * len(under) in str(e.value)
    return e.value


def test_argmin_of_a_selection_is_refused_with_the_caret_under_the_call():
    a = da.from_array(AN, chunks=5)
    e = refused(lambda: jxd.evaluate("1 + argmin(a[a > 0])", a=a), "1 + argmin(a[a > 0])", "argmin(a[a > 0])")
    assert "compute_chunk_sizes" in str(e)
    refused(lambda: jxd.argmax("a[a > 0]", a=a), "a[a > 0]", "a[a > 0]")


def test_a_slice_along_an_axis_of_unknown_length_is_refused():
    a = da.from_array(AN, chunks=5)
    x = a[a > 0]
    refused(lambda: jxd.evaluate("x[1:] * 2", x=x), "x[1:] * 2", "[1:]")


def test_the_caret_is_under_the_index_after_a_comment_of_non_ascii_text():
    a = da.from_array(AN, chunks=5)
    x = a[a > 0]
    with pytest.raises(jx.ValueError) as e:
        jxd.evaluate("# é\nx[1:]", x=x)
    assert "line 2: x[1:]\n         ^^^^" in str(e.value)


def test_slices_and_selections_compute_on_a_cluster(compute):
    a = da.from_array(AN, chunks=(3, 7))
    s, sel = compute(jxd.evaluate("sum(a[::-1] * a)", a=a), jxd.evaluate("min(a[a > 0]) + a[a > 0]", a=a))
    np.testing.assert_allclose(s, np.sum(AN[::-1] * AN), rtol=1e-12)
    np.testing.assert_array_equal(sel, AN[AN > 0].min() + AN[AN > 0])


def test_the_checkers_index_errors_come_first():
    a = da.from_array(AN, chunks=5)
    with pytest.raises(jx.IndexError):
        jxd.evaluate("a[10]", a=a)
    with pytest.raises(jx.ValueError):
        jxd.evaluate("a[a > 0][1:]", a=a)


def test_an_index_in_eval_frame_is_refused():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    df = dd.from_pandas(pd.DataFrame({"a": np.arange(6.0)}), npartitions=2)
    refused(lambda: jxd.eval_frame(df, "c = a[::-1]"), "c = a[::-1]", "[::-1]")
