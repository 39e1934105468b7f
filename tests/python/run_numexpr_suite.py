"""Runs numexpr's own test suite — the test_numexpr.py of the installed numexpr package,
unmodified — against the drop-in jitexpr.numexpr, and prints the counts and every failing test.

    PYTHONPATH=build/python python3 tests/python/run_numexpr_suite.py          # the drop-in
    PYTHONPATH=build/python python3 tests/python/run_numexpr_suite.py --real   # real numexpr
    ... run_numexpr_suite.py -k test_axis                                     # a subset (pytest -k)

How: `jitexpr.numexpr.install()` makes `import numexpr` (and numexpr.expressions, .necompiler,
.utils, .version) give the drop-in; the installed test package's folder is registered as
`numexpr.tests`, so pytest imports the file from there as it would for real numexpr; the suite's
own subprocesses (`python -c "import numexpr ..."`) find the drop-in through a one-file shim
package put first on their PYTHONPATH. Nothing is written into the installed package (no
bytecode, no pytest cache).

Every test passes (6042 of 6042 with numexpr 2.14.2, since the strings issue brought byte
strings: 6011 before). A test expected to fail would be named in EXPECTED_FAILURES with its
reason; any other failure makes the exit status 1, and an expected failure that passes is
reported (the list is then out of date).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
import types

# Tests expected to fail, each with its reason (substrings of pytest node ids). None now: the byte
# string tests (test_strings, test_str_contains_*, test_sanitize's last line) pass since issue 32.
EXPECTED_FAILURES: tuple[str, ...] = ()


def is_expected_failure(nodeid: str) -> bool:
    return any(s in nodeid for s in EXPECTED_FAILURES)


class Collector:
    """A pytest plugin that keeps each test's outcome."""

    def __init__(self):
        self.outcomes: dict[str, str] = {}
        self.messages: dict[str, str] = {}

    def pytest_runtest_logreport(self, report):
        nodeid = report.nodeid.split("test_numexpr.py::", 1)[-1]
        if report.when == "call" or report.outcome != "passed":
            prev = self.outcomes.get(nodeid)
            if prev in (None, "passed"):
                self.outcomes[nodeid] = report.outcome
                if report.outcome == "failed":
                    line = str(report.longrepr).strip().splitlines()
                    self.messages[nodeid] = line[-1] if line else ""


def installed_tests_dir() -> str:
    spec = importlib.util.find_spec("numexpr")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("run_numexpr_suite: numexpr is not installed (pip install numexpr==2.14.2)")
    folder = os.path.join(list(spec.submodule_search_locations)[0], "tests")
    if not os.path.exists(os.path.join(folder, "test_numexpr.py")):
        sys.exit(f"run_numexpr_suite: {folder} has no test_numexpr.py")
    return folder


def use_drop_in(tests_dir: str, shim_root: str) -> None:
    import jitexpr.numexpr as jne
    jne.install()
    # numexpr.tests: the installed package's folder, under the drop-in.
    spec = importlib.util.spec_from_file_location("numexpr.tests", os.path.join(tests_dir, "__init__.py"),
                                                  submodule_search_locations=[tests_dir])
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["numexpr.tests"] = pkg
    jne.tests = pkg
    spec.loader.exec_module(pkg)
    # The suite's subprocesses: a package `numexpr` that hands itself over to the drop-in.
    shim = os.path.join(shim_root, "numexpr")
    os.makedirs(shim)
    with open(os.path.join(shim, "__init__.py"), "w") as f:
        f.write("import jitexpr.numexpr\njitexpr.numexpr.install()\n")
    here = [shim_root] + [p for p in sys.path if p and os.path.isdir(os.path.join(p, "jitexpr"))]
    os.environ["PYTHONPATH"] = os.pathsep.join(here + [os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--real", action="store_true", help="run against the installed numexpr itself")
    ap.add_argument("-k", default=None, help="only the tests pytest's -k selects")
    ap.add_argument("-v", action="store_true", help="pytest's own output too")
    args = ap.parse_args(argv)

    import pytest

    tests_dir = installed_tests_dir()
    sys.dont_write_bytecode = True
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory(prefix="numexpr-suite-") as tmp:
        if not args.real:
            use_drop_in(tests_dir, tmp)
        import numexpr
        which = f"{numexpr.__name__} {numexpr.__version__}"
        collector = Collector()
        pargs = [os.path.join(tests_dir, "test_numexpr.py"), "-p", "no:cacheprovider", "--rootdir", tmp,
                 "-c", os.devnull, "-W", "ignore"]
        # pytest's own report with -v; otherwise only this script's (no terminal reporter).
        pargs += ["-q", "--no-header", "-rN", "--tb=short"] if args.v else ["-p", "no:terminal"]
        if args.k:
            pargs += ["-k", args.k]
        t0 = time.perf_counter()
        rc = pytest.main(pargs, plugins=[collector])
        took = time.perf_counter() - t0
    if rc not in (0, 1):  # collection or usage errors
        print(f"run_numexpr_suite: pytest ended with status {rc}", file=sys.stderr)
        return int(rc)

    out = collector.outcomes
    total = len(out)
    passed = sum(1 for v in out.values() if v == "passed")
    skipped = sum(1 for v in out.values() if v == "skipped")
    failed = sorted(k for k, v in out.items() if v == "failed")
    expected = [k for k in failed if is_expected_failure(k)]
    unexpected = [k for k in failed if not is_expected_failure(k)]
    print()
    print(f"numexpr's test_numexpr.py ({tests_dir}) against {which}, {took:.0f} s:")
    print(f"  {passed + skipped} of {total} pass ({passed} passed, {skipped} skipped by the suite's own "
          f"pytest.skip), {len(failed)} fail")
    if expected:
        print(f"  expected failures (EXPECTED_FAILURES): {len(expected)}")
        for k in expected:
            print(f"    {k}")
    if unexpected:
        print(f"  FAILURES: {len(unexpected)}")
        for k in unexpected:
            print(f"    {k}: {collector.messages.get(k, '')[:200]}")
    if not args.real:
        stale = [k for k, v in out.items() if v == "passed" and is_expected_failure(k)]
        for k in stale:
            print(f"  passes now, still listed in EXPECTED_FAILURES: {k}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
