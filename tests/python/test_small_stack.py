"""The nesting limit holds on a Python thread with a small stack (issue 17 item 7): a program
nested as deeply as the parser allows (200 levels) evaluates on a thread made after
threading.stack_size(256 * 1024); the parser and the lowering move to a stack of jitexpr's own."""
import threading

import numpy as np

import jitexpr as jx

DEPTH = 200  # syntax::kMaxNesting


def on_small_thread(fn):
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 (handed back to the test)
            out["error"] = e

    old = threading.stack_size(256 * 1024)
    try:
        t = threading.Thread(target=body)
        t.start()
    finally:
        threading.stack_size(old)
    t.join(120)
    assert not t.is_alive(), "the thread did not finish"
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_nesting_limit_evaluates_on_a_256_kib_thread():
    a = np.arange(4, dtype=np.float64)
    text = "(" * DEPTH + "a + 1" + ")" * DEPTH
    np.testing.assert_array_equal(on_small_thread(lambda: jx.evaluate(text, a=a)), a + 1)


def test_nesting_past_the_limit_is_a_syntax_error_on_a_256_kib_thread():
    a = np.arange(4, dtype=np.float64)
    text = "(" * (DEPTH + 1) + "a" + ")" * (DEPTH + 1)
    try:
        on_small_thread(lambda: jx.evaluate(text, a=a))
    except jx.ParseError as e:
        assert "nested too deeply" in str(e)
    else:
        raise AssertionError("no error past the nesting limit")


# Issue 34, item 2: every walk of the text (evaluate, run, check, parameters) runs on a stack of
# jitexpr's own when the caller's is short, and trees are freed without recursion: the deepest
# text of each kind of nesting on a thread with the smallest stack Python allows.
DEEPEST = [
    "sin(" * DEPTH + "a" + ")" * DEPTH,
    "abs(" * DEPTH + "a" + ")" * DEPTH,
    "cumsum(" * DEPTH + "a" + ")" * DEPTH,
    "float32(" * DEPTH + "a" + ")" * DEPTH,
    "where(a > 0, " * DEPTH + "a" + ", a)" * DEPTH,
    "-" * DEPTH + "a",
]


def on_tiny_thread(fn):
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            out["error"] = e

    old = threading.stack_size(32 * 1024)
    try:
        t = threading.Thread(target=body)
        t.start()
    finally:
        threading.stack_size(old)
    t.join(120)
    assert not t.is_alive(), "the thread did not finish"
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_deepest_texts_evaluate_run_and_check_on_a_32_kib_thread():
    a = np.arange(1, 4, dtype=np.float64)
    for text in DEEPEST:
        def work(text=text):
            jx.evaluate(text, a=a)
            env = {"a": a}
            jx.run("c = " + text, env)
            assert jx.parameters(text) == ["a"]
            return jx.check("c = " + text, a=a)
        assert on_tiny_thread(work) is not None, text[:20]
