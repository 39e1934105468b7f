#!/usr/bin/env python3
"""The soak: the differential fuzzer's programs through the C API from many threads in several
processes sharing one disk cache, for minutes, with cancellations, cache clears and verifies
between; every answer checked; memory, descriptors, threads and the cache sampled, and growth
after the warm-up is a failure. See bench/soak/README.md.

    python3 bench/soak/soak.py                       # 20 minutes, 4 processes x 8 threads
    python3 bench/soak/soak.py --seconds 60          # the CI mode
    python3 bench/soak/soak.py --seconds 300 --processes 2 --threads 4 --seed 7

Exit status 0 when every answer was right, no process died and nothing grew; 1 otherwise; 2 for
bad usage or a missing build.
"""
import argparse
import collections
import contextlib
import faulthandler
import json
import os
import pickle
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "fuzz", "differential"))

import numpy as np  # noqa: E402

import capi  # noqa: E402
import fuzz_numpy as fz  # noqa: E402  (the differential fuzzer's generator and judge)
from drivers import BF16, DriverError  # noqa: E402

# Shapes of the large cases: the fuzzer's generator with these base shapes instead of its own
# small ones, so that a call runs many blocks and a cancellation can land in the middle of one.
LARGE_SHAPES = [(70000,), (300, 240), (20, 50, 70), (1, 65536), (90000,)]

# --- the cases -------------------------------------------------------------------------------


@contextlib.contextmanager
def base_shapes(shapes):
    saved = fz.SHAPES
    if shapes is not None:
        fz.SHAPES = shapes
    try:
        yield
    finally:
        fz.SHAPES = saved


class _GenDriver:
    """What the fuzzer's generator asks of a driver: host scalars and strided views, both of
    which the C API takes."""

    host_scalars = True
    strided = True


def indices(cases, large):
    """The fuzzer's cases 0 .. cases-1, then candidates for the large ones from 1,000,000 on."""
    yield from range(cases)
    yield from range(1_000_000, 1_000_000 + 100 * large)


def generate(seed, index):
    """The fuzzer's case `index` of `seed` (a large one from 1,000,000 on): (tree, names used)."""
    large = index >= 1_000_000
    with base_shapes(LARGE_SHAPES if large else None):
        rng = fz.case_rng(seed, index)
        g = fz.Generator(rng, _GenDriver())
        names = g.inputs()
        tree = g.program(names, int(rng.integers(1, 5)))
    used = fz.used_names(tree)
    return tree, {k: v for k, v in names.items() if k in used}


def freeze(v):
    """An input for the pool file with its layout: a pickle would copy a strided, reversed or
    transposed view into a contiguous array, so the bytes its elements span are kept with its
    offset and strides."""
    bf16 = isinstance(v, BF16)
    arr = v.bits if bf16 else v
    if not isinstance(arr, np.ndarray):
        return v
    raw, off = capi.span(arr)
    span = np.frombuffer(raw, np.uint8).copy()
    return ("frozen", bf16, arr.dtype.str, arr.shape, arr.strides, off, span)


def thaw(v):
    if not (isinstance(v, tuple) and v and v[0] == "frozen"):
        return v
    _, bf16, dtype, shape, strides, off, span = v
    arr = np.ndarray(shape, np.dtype(dtype), buffer=span, offset=off, strides=strides)
    return BF16(arr) if bf16 else arr


def c_values(names):
    """BF16 -> ('bfloat16', bits), the form capi.Bound takes."""
    return {k: (("bfloat16", v.bits) if isinstance(v, BF16) else v) for k, v in names.items()}


class CapiDriver:
    """The fuzzer's driver interface over the C API (for fz.judge): run(text, names) ->
    (dtype, array), bfloat16 as its uint16 bits."""

    name = "capi"
    host_scalars = True
    strided = True

    def __init__(self, rt):
        self.rt = rt

    def run(self, text, names):
        ans = self.rt.eval(text, capi.Bound(c_values(names)))
        if ans[0] == "error":
            raise DriverError(self.rt.L.status_name(ans[1]), ans[2])
        if ans[0] == "none":
            raise DriverError("none", "the program gave no value")
        return answer_array(ans)


def answer_array(ans):
    _, dtype, shape, data = ans
    np_dtype = np.uint16 if dtype == "bfloat16" else np.dtype(dtype)
    return dtype, np.frombuffer(data, dtype=np_dtype).reshape(shape).copy()


def build_pool(a, lib):
    """Every case with the answer of a CPU runtime of one thread, without the disk cache (made by
    the caller), and the fuzzer's verdict on that answer against NumPy."""
    rt = capi.Runtime(lib, capi.BACKEND_CPU)
    driver = CapiDriver(rt)
    pool = []
    verdicts = collections.Counter()
    findings = []
    try:
        large = 0
        for index in indices(a.cases, a.large):
            if index >= 1_000_000 and large >= a.large:
                break
            tree, names = generate(a.seed, index)
            text = fz.text(tree)
            expected = rt.eval(text, capi.Bound(c_values(names)))
            if index >= 1_000_000:
                # A large case only where it computes over a large input: a value, from at least
                # 2^16 elements of one (most of the generator's programs end in an error or a
                # constant, which no cancellation can cut short).
                if expected[0] != "ok" or not any(np.size(getattr(v, "bits", v)) >= 1 << 16 for v in names.values()):
                    continue
                large += 1
            why = fz.judge(driver, tree, names)
            verdicts["agree" if why == "" else "not judged" if why == "skip" else "finding"] += 1
            if why not in ("", "skip"):
                findings.append(f"case {index}: {text}\n    {why}")
            entry = {"index": index, "text": text, "expected": expected,
                     "names": {k: freeze(v) for k, v in names.items()}}
            if a.backend != "cpu":
                # The NumPy reference, for answers of another backend (not bit for bit the CPU's).
                entry["reference"] = fz.reference(tree, names)
                entry["inexact"] = fz.inexact_ops(tree)
                entry["signed_zeros"] = not fz.zero_sign_free(tree)
            pool.append(entry)
    finally:
        rt.close()
    return pool, verdicts, findings


# --- a worker process ------------------------------------------------------------------------


class Worker:
    def __init__(self, a):
        self.a = a
        self.lib = capi.Library(a.library)
        with open(a.pool, "rb") as f:
            self.pool = pickle.load(f)
        backend = {"auto": capi.BACKEND_AUTO, "cpu": capi.BACKEND_CPU, "cuda": capi.BACKEND_CUDA}[a.backend]
        self.backend = backend
        self.rt = capi.Runtime(self.lib, backend)
        self.exact = self.rt.backend() == capi.BACKEND_CPU
        # A CUDA runtime takes device memory only: the inputs are copied there once.
        self.cuda = None if self.exact else capi.Cuda()
        self.rt.cuda = self.cuda
        self.bound = [capi.Bound(c_values({k: thaw(v) for k, v in e["names"].items()}), self.cuda)
                      for e in self.pool]
        self.large = [i for i, e in enumerate(self.pool) if e["index"] >= 1_000_000]
        self.slots = [None] * a.threads  # each thread's token while a call of it may be cancelled
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.stats = collections.Counter()
        self.reports = []
        self.judged = {}  # non-CPU backends: (case, answer digest) -> verdict

    def prime(self, t):
        """Thread t's share of the warm-up: every large case three times (so that each thread's
        allocator arena has held their arrays) and a slice of the others, by value and by kernel."""
        local = collections.Counter()
        for i in self.large * 3 + list(range(t, len(self.pool), self.a.threads)):
            for use_kernel in (False, True):
                kernels = {}
                self.check(i, self.call(i, use_kernel, kernels, None, local), local)
                for k in kernels.values():
                    self.rt.free_kernel(k)
        local["warm-up calls"] = local.pop("calls")
        with self.lock:
            self.stats.update(local)

    def run(self):
        threads = [threading.Thread(target=self.prime, args=(t,)) for t in range(self.a.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # Ready; the controller starts every worker's clock at once.
        print("SOAK-READY", flush=True)
        if sys.stdin.readline().strip() != "go":
            return
        deadline = time.monotonic() + self.a.seconds
        threads = [threading.Thread(target=self.thread, args=(t, deadline)) for t in range(self.a.threads)]
        canceller = threading.Thread(target=self.canceller)
        for t in threads:
            t.start()
        canceller.start()
        for t in threads:
            t.join()
        self.done.set()
        canceller.join()
        st = self.rt.stats()
        self.rt.close()
        out = dict(self.stats)
        out["programs held"] = st["entries"]
        out["mismatch_reports"] = self.reports[:20]
        print("SOAK-RESULT " + json.dumps(out), flush=True)

    def canceller(self):
        rng = random.Random(f"{self.a.seed}/{self.a.worker}/cancel")
        while not self.done.wait(rng.uniform(0.0005, 0.02)):
            if rng.random() < 0.1:
                self.rt.cancel()
                self.count("runtime cancels")
            else:
                tok = self.slots[rng.randrange(len(self.slots))]
                if tok:
                    self.lib.lib.jitexpr_cancel_token_cancel(tok)
                    self.count("token cancels")

    def count(self, key, n=1):
        with self.lock:
            self.stats[key] += n

    def thread(self, t, deadline):
        rng = random.Random(f"{self.a.seed}/{self.a.worker}/{t}")
        lib = self.lib.lib
        token = lib.jitexpr_cancel_token_create(None, None)
        kernels = collections.OrderedDict()  # case -> kernel on the shared runtime, LRU
        local = collections.Counter()
        try:
            while time.monotonic() < deadline:
                if rng.random() < 0.002:
                    self.private_runtime(rng, local)
                i = rng.choice(self.large) if self.large and rng.random() < 0.1 else rng.randrange(len(self.pool))
                r = rng.random()
                use_kernel = rng.random() < 0.25
                if r < 0.04:
                    # A token cancelled before the call: the call must not answer.
                    lib.jitexpr_cancel_token_reset(token)
                    lib.jitexpr_cancel_token_cancel(token)
                    ans = self.call(i, use_kernel, kernels, token, local)
                    local["pre-cancelled calls"] += 1
                    exp = self.pool[i]["expected"]
                    if ans[0] == "error" and ans[1] == capi.CANCELLED:
                        local["cancelled"] += 1
                    elif exp[0] == "error" and ans[0] == "error" and ans[1] == exp[1]:
                        local["answers"] += 1  # the program's own error came first
                    else:
                        self.mismatch(i, ans, "a call with a cancelled token answered", local)
                    ans = self.call(i, use_kernel, kernels, None, local)
                elif r < 0.3:
                    lib.jitexpr_cancel_token_reset(token)
                    self.slots[t] = token
                    ans = self.call(i, use_kernel, kernels, token, local)
                    self.slots[t] = None
                else:
                    ans = self.call(i, use_kernel, kernels, None, local)
                tries = 0
                while ans[0] == "error" and ans[1] == capi.CANCELLED and tries < 20:
                    # Cancelled (by a token or the runtime-wide cancel): the same call again must
                    # give the right answer.
                    local["cancelled"] += 1
                    tries += 1
                    ans = self.call(i, use_kernel, kernels, None, local)
                if ans[0] == "error" and ans[1] == capi.CANCELLED:
                    continue
                self.check(i, ans, local)
        finally:
            for k in kernels.values():
                if k:
                    self.rt.free_kernel(k)
            lib.jitexpr_cancel_token_destroy(token)
            with self.lock:
                self.stats.update(local)

    def call(self, i, use_kernel, kernels, token, local, rt=None):
        rt = rt or self.rt
        local["calls"] += 1
        if not use_kernel:
            return rt.eval(self.pool[i]["text"], self.bound[i], token)
        local["kernel calls"] += 1
        if i in kernels:
            kernels.move_to_end(i)
            k = kernels[i]
        else:
            k, err = rt.compile(self.pool[i]["text"])
            local["kernels compiled"] += 1
            if not k:
                return err
            kernels[i] = k
            if len(kernels) > 16:
                _, old = kernels.popitem(last=False)
                rt.free_kernel(old)
        return rt.call_kernel(k, self.bound[i], token)

    def private_runtime(self, rng, local):
        """A runtime of the thread's own for a few calls, then destroyed: what an embedding
        application that opens and closes runtimes does."""
        rt = capi.Runtime(self.lib, self.backend, self.cuda)
        local["private runtimes"] += 1
        try:
            for _ in range(8):
                i = rng.randrange(len(self.pool))
                self.check(i, self.call(i, False, None, None, local, rt=rt), local)
        finally:
            rt.close()

    def check(self, i, ans, local):
        e = self.pool[i]
        exp = e["expected"]
        if self.exact:
            ok = ans == exp
        else:
            ok = self.judge(i, ans)
        if ok:
            local["answers"] += 1
            local["error answers" if ans[0] == "error" else "value answers"] += 1
        else:
            self.mismatch(i, ans, "the answer differs from the CPU reference's", local)

    def judge(self, i, ans):
        """Another backend's answer against NumPy as the fuzzer judges it (each distinct
        answer once)."""
        e = self.pool[i]
        key = (i, ans[0], ans[1], ans[2] if ans[0] != "ok" else (ans[2], hash(ans[3])))
        with self.lock:
            if key in self.judged:
                return self.judged[key]
        kind, lo, hi = e["reference"]
        if kind == "skip":
            verdict = True  # not judged by the fuzzer either
        elif ans[0] == "error":
            name = self.lib.status_name(ans[1])
            verdict = kind != "ok" and (name == kind or "value" in (name, kind))
        elif ans[0] == "ok" and kind == "ok":
            verdict = fz.compare(answer_array(ans), lo, hi, e["inexact"], signed_zeros=e["signed_zeros"]) == ""
        else:
            verdict = False
        with self.lock:
            self.judged[key] = verdict
        return verdict

    def mismatch(self, i, ans, what, local):
        local["mismatches"] += 1
        e = self.pool[i]
        with self.lock:
            if len(self.reports) >= 20:
                return
            self.reports.append(f"{what}: case {e['index']} (seed {self.a.seed}): {e['text']}\n"
                                f"      got      {summary(ans)}\n      expected {summary(e['expected'])}"
                                + first_difference(ans, e["expected"]))
            print(f"soak worker {self.a.worker}: MISMATCH {self.reports[-1]}", file=sys.stderr, flush=True)


def first_difference(got, want):
    """Where two values of one dtype and shape first differ, each element's bits in hex."""
    if got[0] != "ok" or want[0] != "ok" or got[1:3] != want[1:3]:
        return ""
    g, w = answer_array(got)[1].ravel(), answer_array(want)[1].ravel()
    k = next((j for j in range(g.size) if g[j:j + 1].tobytes() != w[j:j + 1].tobytes()), None)
    if k is None:
        return ""
    return (f"\n      element {k} (flat) differs: {g[k:k + 1].tobytes().hex()} ({g[k]!r}) against "
            f"{w[k:k + 1].tobytes().hex()} ({w[k]!r})")


def summary(ans):
    if ans[0] == "error":
        return f"error {ans[1]}: {ans[2].splitlines()[0] if ans[2] else ''}"
    if ans[0] == "none":
        return "no value"
    _, dtype, shape, data = ans
    text = np.array2string(answer_array(ans)[1].ravel()[:8], threshold=8)
    return f"{dtype}{list(shape)} {len(data)} bytes, first elements {text}"


# --- the controller --------------------------------------------------------------------------


def proc_sample(pid):
    """(RSS in KiB, open descriptors, threads) of a process, or None once it has gone."""
    try:
        rss = threads = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return rss, fds, threads
    except (FileNotFoundError, ProcessLookupError):
        return None


def cache_size(path):
    files = size = 0
    for dirpath, _, names in os.walk(path):
        for n in names:
            try:
                size += os.lstat(os.path.join(dirpath, n)).st_size
                files += 1
            except FileNotFoundError:
                pass  # removed by a clear meanwhile
    return files, size


def cache_command(cli, what, env):
    p = subprocess.run([cli, "cache", what], env=env, capture_output=True, text=True, timeout=300)
    return p.returncode, (p.stdout + p.stderr).strip()


def declaration(name, v):
    """`name: dtype[shape]` or `name: float` for a precompile file; None for an input it cannot
    declare (an empty extent)."""
    if isinstance(v, BF16) or isinstance(v, np.ndarray):
        shape = v.bits.shape if isinstance(v, BF16) else v.shape
        if any(n == 0 for n in shape):
            return None
        dtype = "bfloat16" if isinstance(v, BF16) else v.dtype.name
        return f"{name}: {dtype}[{', '.join(str(n) for n in shape)}]"
    kind = {bool: "bool", int: "int", float: "float", complex: "complex"}[type(v)]
    return f"{name}: {kind}"


class Precompiles:
    """A writer of the shared cache in every run, GPU or not: `jitexpr precompile --arch`
    (NVRTC, no device needed) of some of the pool's programs, started again whenever the last
    one has finished, while the cache is verified and cleared."""

    def __init__(self, a, pool, cache_dir, env, tmp):
        self.a, self.env, self.cache_dir = a, env, cache_dir
        self.path = os.path.join(tmp, "precompile.txt")
        self.log = os.path.join(tmp, "precompile.log")
        self.proc = None
        self.runs = self.compiled = self.cached = 0
        self.problems = []
        self.lines = []
        for e in pool:
            if len(self.lines) >= a.precompile or e["expected"][0] != "ok" or e["index"] >= 1_000_000:
                continue
            decls = [declaration(k, thaw(v)) for k, v in e["names"].items()]
            if all(decls):
                self.lines.append(f"_r = {e['text']}" + (" ; " + ", ".join(decls) if decls else ""))

    def command(self):
        return [self.a.cli, "precompile", self.path, "--arch", self.a.precompile_arch, "--cache-dir", self.cache_dir]

    def prepare(self):
        """Drops the lines the precompiler refuses (it checks every line before it compiles
        any), then runs it once: the cache holds kernels before the workers start. Returns ''
        or why it could not run (a machine without NVRTC: the soak goes on without it)."""
        self.dropped = []
        while True:
            self.write()
            p = subprocess.run(self.command(), env=self.env, capture_output=True, text=True, timeout=900)
            out = (p.stdout + p.stderr).strip()
            if p.returncode < 0:
                self.problems.append(f"jitexpr precompile died ({signal.Signals(-p.returncode).name}): {out}")
                return "it died"
            if p.returncode == 0:
                self.account(0, out)
                return ""
            # "jitexpr: FILE:LINE: why"
            bad = [ln.split(self.path + ":", 1)[1] for ln in out.splitlines() if self.path + ":" in ln]
            if not bad or not self.lines:
                self.lines = []
                return out.splitlines()[0] if out else f"exit status {p.returncode}"
            k = int(bad[0].split(":")[0]) - 1
            self.dropped.append(f"{self.lines[k]}: {bad[0].split(': ', 1)[-1]}")
            del self.lines[k]

    def write(self):
        with open(self.path, "w") as f:
            f.write("\n".join(self.lines) + "\n")

    def account(self, rc, out):
        self.runs += 1
        last = out.strip().splitlines()[-1] if out.strip() else ""
        # "N programs: K kernels compiled (T ms), C already cached, in DIR"
        try:
            self.compiled += int(last.split(": ", 1)[1].split(" kernels compiled")[0])
            self.cached += int(last.split("), ", 1)[1].split(" already cached")[0])
        except (IndexError, ValueError):
            pass
        if rc != 0:
            self.problems.append(f"jitexpr precompile during the soak (exit {rc}): {out.strip()}")

    def tick(self):
        if not self.lines:
            return
        if self.proc and self.proc.poll() is not None:
            self.finish()
        if self.proc is None:
            self.out = open(self.log, "w")
            self.proc = subprocess.Popen(self.command(), env=self.env, stdout=self.out, stderr=subprocess.STDOUT)

    def finish(self):
        if self.proc is None:
            return
        self.proc.wait()
        self.out.close()
        with open(self.log) as f:
            self.account(self.proc.returncode, f.read())
        self.proc = None


def grown(values, baseline_index, rel, floor):
    """(median of the samples after the baseline, allowed growth, whether it grew more)."""
    base = values[baseline_index]
    later = values[baseline_index + 1:]
    med = statistics.median(later)
    allowed = max(rel * base, floor)
    return med, allowed, med - base > allowed


def controller(a):
    for path, what in ((a.library, "the C library (cmake --build build --target jitexpr_c)"),
                       (a.cli, "the CLI (cmake --build build --target jitexpr_tool)")):
        if not os.path.exists(path):
            print(f"soak: {path} not found: build {what}, or give its path", file=sys.stderr)
            return 2
    interval = a.sample_every or (60.0 if a.seconds >= 600 else a.seconds / 20.0)
    # Minute 3 of 20; a third of a short run, where the allocators' arenas fill for longer than
    # 3/20 of it (about 20-30 s of 4 x 8 threads on a loaded 2-core machine).
    warmup = a.warmup if a.warmup is not None else a.seconds * (3 / 20.0 if a.seconds >= 600 else 1 / 3.0)
    maint = a.maintenance_every or a.seconds / 24.0
    if a.seconds - warmup < 3 * interval:
        print("soak: too short to judge growth: fewer than 3 samples after the warm-up", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="jitexpr_soak_")
    cache_dir = a.cache_dir or os.path.join(tmp, "cache")
    worker_env = dict(os.environ, JITEXPR_CACHE_DIR=cache_dir)
    worker_env.pop("JITEXPR_DISK_CACHE", None)
    # glibc's mmap threshold fixed (it otherwise rises to 32 MiB once a large block is freed, and
    # every thread's arena then keeps the blocks of the large cases' arrays for reuse): freed
    # large blocks go back to the system, and RSS follows what is live. An explicit setting wins.
    worker_env.setdefault("MALLOC_MMAP_THRESHOLD_", str(128 * 1024))
    cli_env = dict(worker_env)
    try:
        t0 = time.monotonic()
        # The reference: a CPU runtime of one thread without the disk cache (options read from
        # the environment when the runtime is made).
        os.environ["JITEXPR_THREADS"] = "1"
        os.environ["JITEXPR_DISK_CACHE"] = "0"
        lib = capi.Library(a.library)
        pool, verdicts, findings = build_pool(a, lib)
        pool_path = os.path.join(tmp, "pool.pickle")
        with open(pool_path, "wb") as f:
            pickle.dump(pool, f)
        errors = sum(1 for e in pool if e["expected"][0] == "error")
        n_large = sum(1 for e in pool if e["index"] >= 1_000_000)
        print(f"soak: {len(pool)} cases ({n_large} large) of seed {a.seed} in {time.monotonic() - t0:.1f} s: "
              f"{len(pool) - errors} values, {errors} errors; the CPU reference against NumPy: "
              f"{verdicts['agree']} agree, {verdicts['not judged']} not judged, {verdicts['finding']} findings",
              flush=True)
        for line in findings:
            print("  REFERENCE FINDING " + line)
        print(f"soak: {a.processes} processes x {a.threads} threads for {a.seconds:g} s, backend {a.backend}, "
              f"cache {cache_dir}; samples every {interval:g} s, warm-up {warmup:g} s, cache clear/verify every "
              f"{maint:g} s", flush=True)

        pre = Precompiles(a, pool, cache_dir, cli_env, tmp)
        if a.precompile:
            t1 = time.monotonic()
            why = pre.prepare()
            if why:
                pre.lines = []
                print(f"soak: no precompiling into the cache: {why}", flush=True)
            else:
                print(f"soak: precompiling {len(pre.lines)} of the programs for {a.precompile_arch} into the cache: "
                      f"{pre.compiled} kernels in {time.monotonic() - t1:.1f} s"
                      + "".join(f"\n  left out: {d}" for d in pre.dropped), flush=True)

        procs = []
        for w in range(a.processes):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", str(w), "--pool", pool_path,
                   "--seconds", str(a.seconds), "--threads", str(a.threads), "--seed", str(a.seed),
                   "--library", a.library, "--backend", a.backend]
            procs.append(subprocess.Popen(cmd, env=worker_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          text=True))
        for w, p in enumerate(procs):
            if p.stdout.readline().strip() != "SOAK-READY":
                p.wait()
                print(f"soak: worker {w} did not start (status {p.returncode})", file=sys.stderr)
                for q in procs:
                    q.kill()
                return 1
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.close()
        start = time.monotonic()
        samples = []  # (t, [(rss, fds, threads) per worker], cache files, cache bytes)
        maint_log = collections.Counter()
        maint_problems = []
        next_sample, next_maint, verify_next = start, start + maint, True
        while True:
            now = time.monotonic()
            if now >= next_sample:
                per = [proc_sample(p.pid) for p in procs]
                if any(s is None for s in per) or any(p.poll() is not None for p in procs):
                    break
                files, size = cache_size(cache_dir)
                samples.append((now - start, per, files, size))
                next_sample += interval
            if now >= next_maint:
                what = "verify" if verify_next else "clear"
                rc, out = cache_command(a.cli, what, cli_env)
                maint_log[what] += 1
                # While every writer is alive, verify finds nothing damaged or stale and neither
                # finds a file that is not jitexpr's.
                lines = out.splitlines()
                bad = rc != 0 or any(x.startswith("left ") for x in lines)
                if what == "verify":
                    bad = bad or any(x.startswith("removed ") for x in lines) or ", 0 removed" not in out
                if bad:
                    maint_problems.append(f"jitexpr cache {what} (exit {rc}): {out}")
                verify_next = not verify_next
                next_maint += maint
                pre.tick()
            if all(p.poll() is not None for p in procs):
                break
            time.sleep(min(0.2, max(0.01, min(next_sample, next_maint) - time.monotonic())))
        pre.finish()
        results, failures = [], []
        # A worker stops by itself at its deadline (its calls are short); one still running long
        # after is hung: its Python stacks are printed (faulthandler, SIGUSR1), then it is killed.
        limit = start + a.seconds + max(120.0, a.seconds / 2)
        while any(p.poll() is None for p in procs) and time.monotonic() < limit:
            time.sleep(0.2)
        for w, p in enumerate(procs):
            if p.poll() is None:
                failures.append(f"worker {w} did not stop {limit - start - a.seconds:.0f} s after its deadline")
                p.send_signal(signal.SIGUSR1)
                time.sleep(2)
                p.kill()
                p.wait()
            out = p.stdout.read()
            line = [x for x in (out or "").splitlines() if x.startswith("SOAK-RESULT ")]
            if p.returncode != 0:
                sig = -p.returncode if p.returncode < 0 else None
                failures.append(f"worker {w} exited with status {p.returncode}"
                                + (f" ({signal.Signals(sig).name})" if sig and sig != signal.SIGKILL else ""))
            if line:
                results.append(json.loads(line[-1][len("SOAK-RESULT "):]))
        pre_line = (f"precompile runs {pre.runs} ({len(pre.lines)} programs): {pre.compiled} kernels compiled, "
                    f"{pre.cached} found already cached")
        return report(a, samples, results, failures + pre.problems, maint_log, maint_problems, findings, warmup,
                      pre_line)
    finally:
        if a.keep:
            print(f"soak: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def report(a, samples, results, failures, maint_log, maint_problems, findings, warmup, pre_line):
    total = collections.Counter()
    for r in results:
        total.update({k: v for k, v in r.items() if isinstance(v, int)})
    print("\n  time    RSS MiB per process          fds per process   threads per process   cache files  bytes")
    for t, per, files, size in samples:
        rss = " ".join(f"{s[0] / 1024:6.1f}" for s in per)
        fds = " ".join(f"{s[1]:3d}" for s in per)
        thr = " ".join(f"{s[2]:3d}" for s in per)
        print(f"{t:7.1f}s  {rss:28s}  {fds:16s}  {thr:20s}  {files:5d}  {size:9d}")
    keys = ["warm-up calls", "calls", "answers", "value answers", "error answers", "kernel calls", "kernels compiled",
            "cancelled", "pre-cancelled calls", "token cancels", "runtime cancels", "private runtimes", "mismatches"]
    print("\nsoak: " + ", ".join(f"{total[k]} {k}" for k in keys))
    print("soak: programs held by each worker's runtime at the end: "
          + ", ".join(str(r.get("programs held", "?")) for r in results))
    print(f"soak: cache verifies {maint_log['verify']}, clears {maint_log['clear']}; " + pre_line)
    for r in results:
        for m in r.get("mismatch_reports", []):
            failures.append("MISMATCH " + m)
    if total["mismatches"]:
        failures.append(f"{total['mismatches']} answers differ")
    failures += maint_problems
    failures += [f"the CPU reference disagrees with NumPy: {f}" for f in findings]
    if len(results) != a.processes:
        failures.append(f"{a.processes - len(results)} workers gave no result")
    if total["answers"] == 0:
        failures.append("no call answered")
    base = next((k for k, s in enumerate(samples) if s[0] >= warmup), None)
    if base is None or len(samples) - base - 1 < 3:
        failures.append(f"only {len(samples)} samples, too few after the warm-up ({warmup:g} s) to judge growth")
    else:
        print(f"soak: growth from the sample at {samples[base][0]:.1f} s to the median of the "
              f"{len(samples) - base - 1} after it:")
        for w in range(a.processes):
            for col, name, rel, floor, unit in ((0, "RSS", 0.05, 16 * 1024, 1 / 1024), (1, "fds", 0.05, 4, 1),
                                                (2, "threads", 0.05, 2 * a.threads + 8, 1)):
                vals = [s[1][w][col] for s in samples]
                med, allowed, bad = grown(vals, base, rel, floor)
                print(f"  worker {w} {name}: {vals[base] * unit:.1f} -> {med * unit:.1f} "
                      f"(allowed +{allowed * unit:.1f}){'  GREW' if bad else ''}")
                if bad:
                    failures.append(f"worker {w}: {name} grew from {vals[base] * unit:.1f} to a median of "
                                    f"{med * unit:.1f} after the warm-up (allowed +{allowed * unit:.1f})")
        sizes = [s[3] for s in samples]
        ceiling = max(sizes[:base + 1])
        med = statistics.median(sizes[base + 1:])
        allowed = max(0.05 * ceiling, 1 << 20)
        print(f"  cache bytes: largest until the warm-up {ceiling}, median after {med:.0f} (allowed +{allowed:.0f})")
        if med - ceiling > allowed:
            failures.append(f"the cache grew from {ceiling} bytes to a median of {med:.0f} after the warm-up")
    if failures:
        print("\nsoak: FAILED")
        for f in failures:
            print("  " + f)
        return 1
    print("\nsoak: passed")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=1200, help="how long the workers run (default 20 minutes)")
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--threads", type=int, default=8, help="threads per process")
    ap.add_argument("--cases", type=int, default=600, help="the fuzzer's cases in the pool")
    ap.add_argument("--large", type=int, default=12, help="cases with large inputs (that cancellations cut short)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backend", choices=["auto", "cpu", "cuda"], default="auto",
                    help="the workers' runtimes (the reference is always the CPU)")
    ap.add_argument("--library", default=os.path.join(ROOT, "build", "api", "libjitexpr_c.so"))
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "tools", "jitexpr"))
    ap.add_argument("--cache-dir", help="the shared disk cache (default: a new temporary directory)")
    ap.add_argument("--sample-every", type=float, help="seconds between samples (default: 60, or seconds/20 "
                    "for runs under 10 minutes)")
    ap.add_argument("--warmup", type=float, help="seconds before the baseline sample (default: 3/20 of the run)")
    ap.add_argument("--maintenance-every", type=float, help="seconds between cache verifies and clears "
                    "(default: seconds/24)")
    ap.add_argument("--precompile", type=int, default=16, help="programs `jitexpr precompile` writes into the "
                    "cache again and again while it is cleared and verified (0: none)")
    ap.add_argument("--precompile-arch", default="sm_90")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--pool", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.library, a.cli = os.path.abspath(a.library), os.path.abspath(a.cli)
    if a.worker is not None:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        Worker(a).run()
        return 0
    return controller(a)


if __name__ == "__main__":
    sys.exit(main())
