"""String columns (issue 32) in the Python package: NumPy S and U arrays against NumPy 2 (its
comparison ufuncs and np.strings, on random data with NULs, non-ASCII text and prefixes of one
another), byte strings through jitexpr.numexpr against real numexpr, Arrow string and
large_string columns from pyarrow, Polars (string_view) and DuckDB with their nulls, pandas
through the drop-in, and the refusals (string-valued results, bytes against str)."""
import numpy as np
import pytest

import jitexpr as jx

# ------------------------------------------------------------------ data

ALPHABET = ["a", "b", "ab", "ba", "\u00e9", "\u20ac", "\U0001F600", "x", "\0"]


def words(n, seed, max_pieces=6, alphabet=ALPHABET):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(0, max_pieces + 1))
        out.append("".join(alphabet[int(i)] for i in rng.integers(0, len(alphabet), k)))
    return out


def u_array(n, seed):
    return np.array(words(n, seed), dtype="U8")  # NumPy cuts each at 8 code points and drops NULs at the end


def s_array(n, seed, alphabet=("a", "b", "ab", "x", "\0", "\xff")):
    ascii_words = words(n, seed, alphabet=list(alphabet))
    return np.array([w.encode("latin-1") for w in ascii_words], dtype="S9")


NEEDLES_U = ["", "a", "ab", "\u00e9", "\U0001F600a", "ba\u20ac", "zz", "a\0", "\0"]
NEEDLES_S = [b"", b"a", b"ab", b"\xff", b"xa", b"zz", b"a\0", b"\0", b"bab"]


def lit(v):
    """A literal of the language for v (Python's repr is one)."""
    return repr(v)


# ------------------------------------------------------------------ NumPy 2

@pytest.mark.parametrize("kind", ["U", "S"])
def test_comparisons_against_literals_are_numpys(kind):
    a = u_array(3000, 1) if kind == "U" else s_array(3000, 1)
    needles = NEEDLES_U if kind == "U" else NEEDLES_S
    for n in needles:
        for op, f in [("==", np.equal), ("!=", np.not_equal), ("<", np.less), ("<=", np.less_equal),
                      (">", np.greater), (">=", np.greater_equal)]:
            got = jx.evaluate(f"a {op} {lit(n)}", a=a)
            np.testing.assert_array_equal(got, f(a, n), err_msg=f"a {op} {n!r}")
            got = jx.evaluate(f"{lit(n)} {op} a", a=a)
            np.testing.assert_array_equal(got, f(n, a), err_msg=f"{n!r} {op} a")


@pytest.mark.parametrize("kind", ["U", "S"])
def test_functions_are_np_strings(kind):
    a = u_array(3000, 2) if kind == "U" else s_array(3000, 2)
    for n in NEEDLES_U if kind == "U" else NEEDLES_S:
        np.testing.assert_array_equal(jx.evaluate(f"contains(a, {lit(n)})", a=a), np.strings.find(a, n) >= 0)
        np.testing.assert_array_equal(jx.evaluate(f"startswith(a, {lit(n)})", a=a), np.strings.startswith(a, n))
        np.testing.assert_array_equal(jx.evaluate(f"endswith(a, {lit(n)})", a=a), np.strings.endswith(a, n))
        got = jx.evaluate(f"find(a, {lit(n)})", a=a)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, np.strings.find(a, n))
    got = jx.evaluate("str_len(a)", a=a)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.strings.str_len(a))


@pytest.mark.parametrize("kind", ["U", "S"])
def test_column_against_column_with_broadcasting(kind):
    a = u_array(400, 3) if kind == "U" else s_array(400, 3)
    b = (u_array(400, 4) if kind == "U" else s_array(400, 4)).astype(a.dtype.kind + "3")  # another width
    m = a.reshape(20, 20)
    row = b[:20]
    for text, want in [("a == b", a == b), ("a < b", a < b), ("contains(a, b)", np.strings.find(a, b) >= 0),
                       ("find(b, a)", np.strings.find(b, a)), ("startswith(m, row)", np.strings.startswith(m, row)),
                       ("endswith(m, row[:, None])", np.strings.endswith(m, row[:, None]))]:
        got = jx.evaluate(text, a=a, b=b, m=m, row=row)
        np.testing.assert_array_equal(got, want, err_msg=text)


def test_strided_views_and_subscripts():
    a = u_array(1000, 5).reshape(25, 40)
    np.testing.assert_array_equal(jx.evaluate("a == 'ab'", a=a.T), a.T == "ab")
    np.testing.assert_array_equal(jx.evaluate("contains(a[::2, 5:], 'b')", a=a), np.strings.find(a[::2, 5:], "b") >= 0)
    np.testing.assert_array_equal(jx.evaluate("str_len(a[::-1])", a=a), np.strings.str_len(a[::-1]))


def test_results_are_bools_and_ints_anywhere():
    u = u_array(5000, 6)
    x = np.linspace(0, 1, 5000)
    np.testing.assert_array_equal(jx.evaluate("x[startswith(u, 'a')]", u=u, x=x), x[np.strings.startswith(u, "a")])
    np.testing.assert_allclose(jx.evaluate("sum(where(contains(u, 'b'), x, 0))", u=u, x=x),
                               np.sum(np.where(np.strings.find(u, "b") >= 0, x, 0)))
    assert jx.evaluate("sum(u == 'ab')", u=u) == np.sum(u == "ab")
    assert jx.evaluate("count_nonzero(contains(u, '\u00e9'))", u=u) == np.count_nonzero(np.strings.find(u, "\u00e9") >= 0)
    np.testing.assert_array_equal(jx.evaluate("str_len(u) * 2 + (u > 'b')", u=u), np.strings.str_len(u) * 2 + (u > "b"))
    # A name bound to a str value is a 0-d U array.
    np.testing.assert_array_equal(jx.evaluate("u == name", u=u, name="ab"), u == "ab")
    np.testing.assert_array_equal(jx.evaluate("contains(u, name)", u=u, name=np.str_("b")), np.strings.find(u, "b") >= 0)


def test_literals_alone_are_numpys():
    assert jx.evaluate("'abc' < 'abd'") == np.less("abc", "abd")
    assert jx.evaluate("find('h\u00e9llo', 'l')") == np.strings.find("h\u00e9llo", "l")
    assert jx.evaluate("str_len(b'ab\\x00')") == np.strings.str_len(b"ab\0")
    assert jx.evaluate("contains(b'xay', b'a')")


def test_refusals_are_type_errors_with_numpys_reason():
    s = s_array(10, 7)
    u = u_array(10, 7)
    x = np.arange(10.0)
    for text, words_ in [("s == 'a'", "does not mix bytes and str"), ("contains(u, b'a')", "does not mix bytes and str"),
                         ("s + s", "not supported for strings"), ("u", "the program's value would be strings"),
                         ("where(x > 1, u, u)", "where() is not supported for strings"),
                         ("float64(u)", "do not convert to float64"), ("sum(u)", "not supported for strings"),
                         ("u == 1", "takes strings on both sides"), ("contains(x, 1.0)", "takes strings")]:
        with pytest.raises(TypeError) as e:
            jx.evaluate(text, s=s, u=u, x=x)
        assert words_ in str(e.value), text
        assert isinstance(e.value, jx.Error)


@pytest.mark.parametrize("kind", ["S", "U"])
def test_a_string_array_is_never_written_as_out_or_in_place(kind):
    # NumPy's same-kind cast writes a number's text into a string array; jitexpr refuses (it
    # stored raw result bytes there, corrupting the strings), the array left as it was.
    s = s_array(10, 7) if kind == "S" else u_array(10, 7)
    before = s.copy()
    lit = "b'a'" if kind == "S" else "'a'"
    calls = [lambda: jx.evaluate(f"s == {lit}", s=s, out=s),
             lambda: jx.evaluate("x * 2.5", x=np.arange(10.0), out=s),
             lambda: jx.evaluate("str_len(s)", s=s, out=s),
             lambda: jx.run(f"s = s == {lit}", s=s, strict_in_place=True)]
    if kind == "S":  # (the drop-in refuses U arrays, as numexpr does)
        calls.append(lambda: jitexpr_numexpr().evaluate(f"s == {lit}", local_dict={"s": s}, out=s))
    for call in calls:
        with pytest.raises(jx.TypeError) as e:
            call()
        assert "does not write into string arrays" in str(e.value)
        assert isinstance(e.value, TypeError)
        np.testing.assert_array_equal(s, before)


def test_a_kernel_signature_takes_string_dtypes_with_or_without_a_width():
    # 'U6' in a signature raised NumPy's own TypeError ("data type 'str192' not understood").
    u6, u2, s3 = np.array(["ab", "c"], "U6"), np.array(["ab", "c"]), np.array([b"ab", b"cde"])
    assert list(jx.compile("str_len(u)", signature={"u": "U6"})(u=u6)) == [2, 1]
    assert list(jx.compile("str_len(u)", signature={"u": np.dtype("U6")})(u=u6)) == [2, 1]
    assert list(jx.compile("str_len(u)", signature={"u": "str"})(u=u2)) == [2, 1]
    assert list(jx.compile("str_len(u)", signature={"u": "bytes"})(u=s3)) == [2, 3]
    for sig, arg in [({"u": "U6"}, u2), ({"u": "str"}, s3), ({"u": "S4"}, s3)]:
        with pytest.raises(jx.TypeError, match="signature says"):
            jx.compile("str_len(u)", signature=sig)(u=arg)
    with pytest.raises(jx.TypeError, match="is not a dtype"):
        jx.compile("str_len(u)", signature={"u": "nonsense"})


def jitexpr_numexpr():
    import jitexpr.numexpr
    return jitexpr.numexpr


def test_zero_itemsize_and_byte_order():
    z = np.zeros(3, dtype=[("a", "S0")])["a"]  # a view of itemsize 0
    assert z.dtype.itemsize == 0
    with pytest.raises(TypeError, match="itemsize 0"):
        jx.evaluate("z == b''", z=z)
    big = u_array(10, 8).astype(">U8")
    with pytest.raises(TypeError, match="byte order"):
        jx.evaluate("b == 'a'", b=big)


# ------------------------------------------------------------------ numexpr (bytes)

def test_bytes_through_the_drop_in_are_numexprs():
    ne = pytest.importorskip("numexpr")
    import jitexpr.numexpr as jne
    # ASCII bytes without inner NULs: numexpr orders bytes above 0x7f by signed char, and its
    # contains() stops at a NUL (numexpr_differences.py lists both).
    a = s_array(2000, 9, alphabet=("a", "b", "ab", "x", "y"))
    b = s_array(2000, 10, alphabet=("a", "b", "ab", "x", "y"))
    for text in ["a == b'ab'", "a == 'ab'", "a < 'b'", "b'ab' >= a", "a == b", "a < b", "contains(a, 'ab')",
                 "contains(a, b)", "contains(b'xxabyy', a)", "(a == '') | (b != a)", "where(contains(a, b'x'), 1.5, 2.5)",
                 "a", "contains(a, '')"]:
        want = ne.evaluate(text, local_dict={"a": a, "b": b})
        got = jne.evaluate(text, local_dict={"a": a, "b": b})
        assert got.dtype == want.dtype, text
        np.testing.assert_array_equal(got, want, err_msg=text)
    for text in ["a + b", "a >= 1"]:
        with pytest.raises(NotImplementedError) as real:
            ne.evaluate(text, local_dict={"a": a, "b": b})
        with pytest.raises(NotImplementedError) as ours:
            jne.evaluate(text, local_dict={"a": a, "b": b})
        assert str(ours.value) == str(real.value)
    with pytest.raises(ValueError, match="Unicode"):
        jne.evaluate("a == b", local_dict={"a": a, "b": "x"})
    with pytest.raises(ValueError, match="Unicode"):
        jne.evaluate("a == 'x'", local_dict={"a": u_array(3, 1)})


# ------------------------------------------------------------------ Arrow producers

def arrow_words(n, seed):
    w = words(n, seed, alphabet=[p for p in ALPHABET if p != "\0"])
    rng = np.random.default_rng(seed)
    return [None if rng.random() < 0.1 else x for x in w]


def expected_with_nulls(values, f):
    return [None if v is None else bool(f(v)) if isinstance(f(v), (bool, np.bool_)) else int(f(v)) for v in values]


CASES = [
    ("s == 'ab'", lambda v: v == "ab"),
    ("s < 'b'", lambda v: v < "b"),
    ("contains(s, '\u00e9')", lambda v: "\u00e9" in v),
    ("startswith(s, 'a')", lambda v: v.startswith("a")),
    ("endswith(s, '\U0001F600')", lambda v: v.endswith("\U0001F600")),
    ("find(s, 'b')", lambda v: v.find("b")),
    ("str_len(s)", lambda v: len(v)),
]


@pytest.mark.parametrize("large", [False, True])
def test_pyarrow_columns_keep_their_nulls(large):
    pa = pytest.importorskip("pyarrow")
    values = arrow_words(3000, 11)
    col = pa.array(values, type=pa.large_string() if large else pa.string())
    for text, f in CASES:
        got = jx.evaluate(text, s=col)
        assert isinstance(got, pa.Array), text
        assert got.to_pylist() == expected_with_nulls(values, f), text
    # Sliced and chunked columns: offsets from the slice, chunks joined.
    part = col.slice(100, 500)
    assert jx.evaluate("s == 'ab'", s=part).to_pylist() == expected_with_nulls(values[100:600], lambda v: v == "ab")
    chunked = pa.chunked_array([col.slice(0, 1000), col.slice(1000)])
    assert jx.evaluate("contains(s, 'ba')", s=chunked).to_pylist() == expected_with_nulls(values, lambda v: "ba" in v)
    # A reduction skips the null rows.
    assert jx.evaluate("sum(str_len(s))", s=col) == sum(len(v) for v in values if v is not None)


def test_polars_string_view_columns():
    pl = pytest.importorskip("polars")
    values = arrow_words(2000, 12) + ["a string longer than twelve bytes", None]
    s = pl.Series("s", values)
    for text, f in CASES:
        got = jx.evaluate(text, s=s)
        assert got.to_list() == expected_with_nulls(values, f), text
    df = pl.DataFrame({"city": ["oslo", "bergen", None, "troms\u00f8"], "pop": [700, 280, 1, 77]})
    assert jx.evaluate("sum(where(startswith(city, 'o') | endswith(city, '\u00f8'), pop, 0))",
                       city=df["city"], pop=df["pop"]) == 777


def test_duckdb_columns():
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("pyarrow")
    con = duckdb.connect()
    t = con.sql("select * from (values ('oslo', 1), (NULL, 2), ('bergen', 3), ('os', 4)) t(city, n)").arrow()
    table = t.read_all() if hasattr(t, "read_all") else t
    got = jx.evaluate("startswith(city, 'os')", city=table.column("city"))
    assert got.to_pylist() == [True, None, False, True]


def test_malformed_arrow_is_refused():
    pa = pytest.importorskip("pyarrow")
    bad = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(np.array([0, 3, 1], dtype=np.int32).tobytes()),
                                                 pa.py_buffer(b"abc")])
    with pytest.raises(jx.Error, match="offsets decrease"):
        jx.evaluate("s == 'a'", s=bad)
    not_utf8 = pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(np.array([0, 2], dtype=np.int32).tobytes()),
                                                      pa.py_buffer(b"\xff\xfe")])
    with pytest.raises(jx.Error, match="not valid UTF-8"):
        jx.evaluate("s == 'a'", s=not_utf8)
    with pytest.raises(jx.Error, match="binary"):
        jx.evaluate("s == 'a'", s=pa.array([b"a"], type=pa.binary()))


# ------------------------------------------------------------------ pandas through the drop-in

def test_pandas_string_columns_through_the_drop_in():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("numexpr")
    import jitexpr.numexpr as jne
    df = pd.DataFrame({"city": ["oslo", "bergen", "oslo", None], "n": [1, 2, 3, 4]})
    want = df.query("city == 'oslo'", engine="python")
    jne.install()
    try:
        got = df.query("city == 'oslo'", engine="numexpr")
        pd.testing.assert_frame_equal(got, want)
        got = df.eval("n * 2 + (city == 'bergen')", engine="numexpr")
        pd.testing.assert_series_equal(got, df.eval("n * 2 + (city == 'bergen')", engine="python"))
    finally:
        jne.uninstall()


def test_a_pyarrow_column_imported_once_is_not_held_past_its_object():
    pa = pytest.importorskip("pyarrow")
    import gc
    base = pa.total_allocated_bytes()
    col = pa.array(["oslo", "bergen", None] * 100_000)
    first = jx.evaluate("s == 'oslo'", s=col).to_pylist()
    assert jx.evaluate("s == 'oslo'", s=col).to_pylist() == first  # (the second call reuses the import)
    assert jx.evaluate("contains(s, 'erg')", s=col).to_pylist()[:3] == [False, True, None]
    held = pa.total_allocated_bytes()
    assert held > base
    del col
    gc.collect()
    assert pa.total_allocated_bytes() <= base + 4096  # the kept import went with the array
