"""Out of memory in a kernel's own work is a jitexpr.OutOfMemoryError (a MemoryError) with the
bytes asked and available and a caret under the call (issue 34, item 4), not
``MemoryError: std::bad_alloc``. The program runs in a child process under an address-space
limit set after its imports: the limit leaves room for the input, not for median's copy of it."""
import os
import subprocess
import sys
import textwrap

import pytest

import jitexpr as jx

CHILD = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import jitexpr as jx
    x = np.random.default_rng(0).random(20_000_000)  # 160 MB
    jx.evaluate("sum(x)", x=x)  # everything the runtime loads, loaded
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) for line in f if line.startswith("VmSize:")) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (vm + (64 << 20), resource.RLIM_INFINITY))
    try:
        jx.evaluate(sys.argv[1], x=x)
    except jx.OutOfMemoryError as e:
        assert isinstance(e, MemoryError) and isinstance(e, jx.Error)
        print(e.requested, e.available)
        print(str(e))
        sys.exit(0)
    sys.exit("no OutOfMemoryError")
""")


def sanitized():
    import jitexpr._jitexpr as ext
    with open(ext.__file__, "rb") as f:
        return b"__asan_init" in f.read()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and RLIMIT_AS")
@pytest.mark.parametrize("call, column", [("median(x)", 8), ("1 + quantile(x, 0.5)", 12)])
def test_an_order_statistic_out_of_memory_says_how_much_and_where(call, column):
    if sanitized():
        pytest.skip("an AddressSanitizer build cannot run under an address-space limit")
    r = subprocess.run([sys.executable, "-c", CHILD, call], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, JITEXPR_DISK_CACHE="0", JITEXPR_BACKEND="cpu", JITEXPR_THREADS="1"))
    assert r.returncode == 0, r.stderr[-2000:]
    figures, message = r.stdout.split("\n", 1)
    requested, available = map(int, figures.split())
    assert requested == 160_000_000
    assert 0 <= available < requested
    assert "out of memory: the copy of 20000000 float64 elements an order statistic sorts needs 152.6 MiB " \
           "(160000000 bytes); " in message
    name = call[call.index("q"):] if "quantile" in call else call
    assert f"line 1: {call}\n" + " " * column + "^" * len(name) + "\n" in message, message


def test_out_of_memory_error_is_a_memory_error():
    assert issubclass(jx.OutOfMemoryError, MemoryError)
    assert issubclass(jx.OutOfMemoryError, jx.Error)


THREADS_CHILD = textwrap.dedent("""
    import resource
    import numpy as np
    import jitexpr as jx
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) for line in f if line.startswith("VmSize:")) * 1024
    # Room for the runtime, not for a second thread's stack (8 MiB by default).
    resource.setrlimit(resource.RLIMIT_AS, (vm + (4 << 20), resource.RLIM_INFINITY))
    rt = jx.Runtime(backend="cpu", threads=2)
    print(rt.setup_note)
    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert jx.Runtime(backend="cpu", threads=2).setup_note == ""
""")


def test_a_cpu_thread_that_cannot_start_leaves_the_runtime_on_fewer():
    if sanitized():
        pytest.skip("an AddressSanitizer build cannot run under an address-space limit")
    r = subprocess.run([sys.executable, "-c", THREADS_CHILD], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, JITEXPR_DISK_CACHE="0"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("the CPU backend runs on 1 of the 2 threads asked for: thread 2 could not start ("), \
        r.stdout
