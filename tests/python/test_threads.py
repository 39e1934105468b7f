"""Many Python threads on one runtime, the GIL released while evaluating, and a runtime closed
while other threads are inside evaluate (issue 17 item 4): no deadlock, no crash, every call
either completes with the right answer or fails cleanly."""
import threading
import time

import numpy as np

import jitexpr as jx
from jitexpr import _jitexpr as core


def test_sixteen_threads_share_one_runtime():
    errors = []
    results = {}

    def work(t):
        try:
            a = np.full(50_000 + t, float(t))
            b = np.arange(50_000 + t, dtype=np.float64)
            for i in range(20):
                r = jx.evaluate("a * 2 + b - i", a=a, b=b, i=i)
                if not np.array_equal(r, a * 2 + b - i):
                    raise AssertionError(f"thread {t}, round {i}: wrong values")
            results[t] = jx.evaluate("sum(a)", a=a)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
        assert not th.is_alive(), "a thread did not finish"
    assert not errors, errors
    assert all(results[t] == t * (50_000 + t) for t in range(16))


def test_the_gil_is_released_while_evaluating():
    # A thread evaluating a long expression must leave the interpreter to the others.
    a = np.random.default_rng(0).random(4_000_000)
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    calls = []
    try:
        for _ in range(5):
            start = time.perf_counter()
            jx.evaluate("sin(a) * cos(a) + exp(-a) * sqrt(a)", a=a)
            calls.append((start, time.perf_counter()))
    finally:
        done.set()
        t.join()
    # With the GIL held from before `start` to after the call's end, no tick could be taken
    # inside a call; with it released the ticker runs there, at whatever pace a loaded machine
    # leaves it (a count of ticks per second of the calls, as this test had, depends on the load).
    during = [x for x in ticks if any(s < x < e for s, e in calls)]
    elapsed = sum(e - s for s, e in calls)
    assert len(during) >= 5, (len(during), elapsed)


def close_while_evaluating(workers=8):
    rt = jx.Runtime("cpu", threads=2)
    a = np.ones(200_000)
    started = threading.Barrier(workers + 1)
    outcomes = []

    def work():
        started.wait()
        n = 0
        while True:
            try:
                r = core.evaluate("a * 2 + 1", {"a": a}, None, None, None, rt)
            except jx.ArgumentError as e:
                assert "closed" in str(e)
                outcomes.append(("closed", n))
                return
            assert r[0] == 3.0 and r[-1] == 3.0
            n += 1

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for th in threads:
        th.start()
    started.wait()
    time.sleep(0.005)
    rt.close()
    for th in threads:
        th.join(60)
        assert not th.is_alive(), "a worker is stuck after close()"
    assert len(outcomes) == workers


def test_closing_a_runtime_while_threads_evaluate_never_hangs_or_crashes():
    for _ in range(40):
        close_while_evaluating()


def test_closing_twice_is_harmless():
    rt = jx.Runtime("cpu")
    rt.close()
    rt.close()
    assert rt.closed
