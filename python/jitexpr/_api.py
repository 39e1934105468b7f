"""jitexpr's own Python API: evaluate, run, compile (Kernel), precompile, info, threads.

Variables are always bound **by name** — from keywords, from ``local_dict``, from the caller's
frame — never by position, so ``evaluate("b*2 + a")`` means what it says whatever the order.
"""

from __future__ import annotations

import os
import re
import sys
import threading

from typing import TYPE_CHECKING, Any, Mapping, Optional

import numpy as np

from . import _jitexpr as _core
from ._errors import ArgumentError, ParseError as JxParseError, TypeError as JxTypeError

__all__ = [
    "evaluate", "run", "compile", "Kernel", "precompile", "info", "cuda_available", "stats",
    "set_num_threads", "get_num_threads", "Runtime", "Tensor", "parameters",
]

Runtime = _core.Runtime
Tensor = _core.Tensor

# The named constants a variable of the same name shadows (when bound by name).
_CONSTANTS = ("pi", "e", "inf", "nan")
_CONSTANT_RE = re.compile(r"(?<![\w.])(pi|e|inf|nan)(?![\w.])")

# text -> (names the program reads, named constants it mentions); bounded.
_names_cache: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
_names_lock = threading.Lock()


def _check_text(text):
    """A program's text must be a str that UTF-8 can hold: a lone surrogate (``"\\ud800"``) is a
    ParseError pointing at it, as any other character no program may hold."""
    if not isinstance(text, str):
        raise JxTypeError(f"the expression must be a str, not {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        err = JxParseError(f"syntax error: the text holds a lone surrogate (U+{ord(text[e.start]):04X}) at character "
                           f"{e.start}, which is no Unicode character (UTF-8 cannot hold it)")
        err.message = f"the text holds a lone surrogate (U+{ord(text[e.start]):04X}) at character {e.start}"
        err.source = text.encode("utf-8", "replace").decode("utf-8")
        head = len(text[:e.start].encode("utf-8", "replace"))
        err.span = (head, head + 1)
        err.kind = "syntax error"
        raise err from None


def _names_of(text: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(names read before assigned, named constants mentioned, names only assigned)."""
    try:
        return _names_cache[text]
    except KeyError:
        pass
    _check_text(text)
    params = tuple(_core.parameters(text))
    consts = tuple(sorted(set(_CONSTANT_RE.findall(text)))) if any(c in text for c in ("pi", "e", "inf", "nan")) else ()
    targets = tuple(n for n in _core.targets(text) if n not in params)
    with _names_lock:
        if len(_names_cache) >= 4096:
            _names_cache.clear()
        _names_cache[text] = (params, consts, targets)
    return params, consts, targets


# evaluate and Kernel calls bind names in the extension (_core.evaluate_named, the same rules as
# _bind below, without building a dict per call); it asks _names_of about each new text.
_core.set_names_of(_names_of)


def parameters(text: str) -> list[str]:
    """The names ``text`` reads before assigning them, in order of first appearance."""
    return list(_names_of(text)[0])


def _bind(text, names, local_dict, depth):
    """{name: value} for every name `text` reads that is bound somewhere, for the named
    constants it mentions that a variable shadows, and for the names it only assigns that the
    keywords or ``local_dict`` give (an assignment writes into such an array in place; the
    caller's frame is not asked for those). Unbound names are left out: the checker then
    reports them with a caret and a suggestion. The caller's frame is looked at only for names
    that the keywords and ``local_dict`` do not give."""
    params, consts, targets = _names_of(text)
    bound = {}
    missing = []
    for n in targets:
        if names and n in names:
            bound[n] = names[n]
        elif local_dict is not None and n in local_dict:
            bound[n] = local_dict[n]
    for n in params:
        if names and n in names:
            bound[n] = names[n]
        elif local_dict is not None and n in local_dict:
            bound[n] = local_dict[n]
        else:
            missing.append(n)
    for n in consts:
        if names and n in names:
            bound[n] = names[n]
        elif local_dict is not None and n in local_dict:
            bound[n] = local_dict[n]
        else:
            missing.append(n)
    if not missing:
        return bound
    frame = sys._getframe(depth)
    frame_globals = frame.f_globals
    frame_locals = frame.f_locals if local_dict is None else None
    try:
        for n in missing:
            if frame_locals is not None and n in frame_locals:
                v = frame_locals[n]
            elif n in frame_globals:
                v = frame_globals[n]
            else:
                continue
            # A constant's name that a module or function happens to have is not a variable.
            if n in _CONSTANTS and (callable(v) or isinstance(v, type(sys))):
                continue
            bound[n] = v
    finally:
        # Before Python 3.13 f_locals is a snapshot dict holding references to the caller's
        # variables: let go of them (numexpr does the same), except at module level, where it is
        # the globals themselves. From 3.13 it is a write-through proxy, which must be left alone.
        if type(frame_locals) is dict and frame_locals is not frame_globals:
            frame_locals.clear()
        del frame
    return bound


def _torch_from(torch, result):
    """torch.from_dlpack(result), without its Python-level stream lookup (a torch.cuda.Stream
    built from a "cuda:N" string per call): the capsule is asked for on torch's current raw
    stream of the result's device (1 for the legacy default stream, as torch.from_dlpack asks),
    so that the result is waited for there when it was written on another stream."""
    c = torch._C
    from_capsule = getattr(c, "_from_dlpack", None)
    raw_stream = getattr(c, "_cuda_getCurrentRawStream", None)
    if from_capsule is None or raw_stream is None:
        return torch.from_dlpack(result)
    kind, dev = result.__dlpack_device__()
    if kind != 2:
        return torch.from_dlpack(result)
    s = raw_stream(dev)
    return from_capsule(result.__dlpack__(stream=1 if s == 0 else s))


def _to_library(result):
    """A Tensor result into the library its inputs came from (CuPy in, CuPy out)."""
    if type(result) is not Tensor:
        return result
    lib = getattr(result, "library", "")
    if result.shape == () and lib in ("pyarrow", "polars", "duckdb", "pandas"):
        # A reduction over Arrow columns: a Python scalar, None when no row was valid.
        v = result.validity()
        if v is not None and not bool(v):
            return None
        a = result.numpy()
        x = a.item()
        # A date or duration finer than us has no Python type (item() is a bare int): NumPy's
        # scalar keeps its unit (datetime64('...05', 'ns')).
        return a[()] if a.dtype.kind in "mM" and isinstance(x, int) else x
    try:
        if lib == "cupy":
            import cupy
            return cupy.from_dlpack(result)
        if lib == "torch":
            import torch
            return _torch_from(torch, result)
        if lib in ("pyarrow", "duckdb"):
            import pyarrow
            return pyarrow.array(result)
        if lib == "polars":
            import polars
            return polars.Series(result)
        if lib == "pandas":  # a pandas string column came in as Arrow: a pandas Arrow array out
            import pandas
            import pyarrow
            return pandas.arrays.ArrowExtensionArray(pyarrow.array(result))
    except ImportError:
        pass
    return result


# jitexpr.evaluate is the extension's own function (python/src/evaluate.cpp, py_evaluate: the
# keywords are read from the call itself, with no Python frame in between; its docstring is
# there); a Tensor result goes through _to_library, as here.
_core.set_to_library(_to_library)
evaluate = _core.evaluate_fast


def run(program: str, /, local_dict: Optional[Mapping[str, Any]] = None, *, backend: Optional[str] = None,
        stream: Optional[int] = None, device: Optional[int] = None, strict_in_place: bool = False,
        _frame_depth: int = 1, **names: Any) -> dict[str, Any]:
    """Runs a program of statements and returns ``{name: value}`` for every name it assigns.

    Names are bound as for :func:`evaluate`. An assignment to a variable bound to an array of
    the value's dtype and shape writes into that array in place (it is returned as that same
    object); a value of another dtype or shape (``x = sum(x)``, ``x = x[1:]``) is returned as a
    new array under the name, the caller's array untouched; other assignments make new arrays::

        r = jitexpr.run("t = a * 2; c = t + b; s = sum(c)", a=a, b=b)   # {'t': ..., 'c': ..., 's': ...}

    ``strict_in_place=True`` writes every assignment to a bound array into it (cast as NumPy's
    same-kind casting, broadcast): a value that cannot be is a TypeError / ShapeError. A
    read-only array that would be written (``flags.writeable`` False, ``bytes``, a read-only
    DLPack or CUDA array interface producer, Arrow) is a :class:`ReadOnlyError` before anything
    runs.
    """
    bound = _bind(program, names, local_dict, _frame_depth + 1)
    result = _core.run(program, bound, backend, stream, None, device, bool(strict_in_place))
    return {k: _to_library(v) for k, v in result.items()}


def explain(program: str, /, local_dict: Optional[Mapping[str, Any]] = None, *, backend: Optional[str] = None,
            device: Optional[int] = None, bandwidth: float = 0.0, _frame_depth: int = 1, **names: Any) -> str:
    """What a program becomes over the given arrays, without running it, as text: every name with
    its dtype and shape, the backend and why, the stages and kernels of its plan (kind, fusion,
    index and vector width, tier), the bytes each moves and the time that takes, each kernel's
    cache state, and where host data would run. Names are bound as for :func:`evaluate`;
    ``bandwidth`` (GB/s) replaces the backend's own figure::

        print(jitexpr.explain("c = a * 2 + b", a=a, b=b))
    """
    bound = _bind(program, names, local_dict, _frame_depth + 1)
    return _core.explain(program, bound, backend, device, float(bandwidth))


def _dtype_name(d):
    # A signature's dtype as the calls' dtypes are compared with it: NumPy's name; a string
    # dtype's str ('<U6', '|S4': its width too), or "str" / "bytes" for one of no width (any).
    if isinstance(d, str) and d in ("float", "int", "bool", "complex"):
        return d
    if d in (float, int, bool, complex):
        return d.__name__
    try:
        t = np.dtype(d)
    except (TypeError, ValueError) as e:
        raise JxTypeError(f"the signature's {d!r} is not a dtype: {e}") from None
    if t.kind in "SU":
        return ("bytes" if t.kind == "S" else "str") if t.itemsize == 0 else str(t)
    return t.name


class Kernel(_core.KernelBase):
    """A program parsed once and evaluated many times (:func:`compile`).

    ``k(**names)``, ``k(local_dict)``, with ``out=``, ``backend=``, ``stream=`` as in
    :func:`evaluate`. With a signature (names to dtypes) the program is fully checked when the
    kernel is made, and calls with other dtypes are refused; without one each combination of
    dtypes and shapes is prepared on its first call and kept. A kernel pickles as its text and
    signature (what a Dask task carries): unpickled on a worker, it compiles there, through that
    worker's memory and disk cache.
    """

    __slots__ = ("_text", "_signature", "_params", "__weakref__")

    def __init__(self, text: str, signature: Optional[Mapping[str, Any]] = None) -> None:
        if not isinstance(text, str):
            raise JxTypeError(f"the program must be a str, not {type(text).__name__}")
        self._text = text
        self._params = tuple(_names_of(text)[0])
        self._signature = None
        if signature is not None:
            sig = {str(k): _dtype_name(v) for k, v in dict(signature).items()}
            missing = [p for p in self._params if p not in sig]
            if missing:
                raise ArgumentError(f"the signature gives no dtype for {', '.join(missing)}")
            self._signature = sig
            # Checked now: every name bound to a 1-element array (or scalar) of its dtype.
            _core.evaluate(text, {k: _probe(v) for k, v in sig.items()}, None, "cpu", None, None)

    @property
    def text(self):
        return self._text

    @property
    def signature(self):
        return dict(self._signature) if self._signature is not None else None

    @property
    def parameters(self):
        return list(self._params)

    # __call__(local_dict=None, /, *, out=None, backend=None, stream=None, **names) is the
    # extension's (python/src/evaluate.cpp, py_kernel_call), from the base class: names bound as
    # evaluate binds them; with a signature, a value of another dtype is a jitexpr.TypeError
    # ("'a' has dtype float64 but the kernel's signature says float32").
    if TYPE_CHECKING:
        def __call__(self, local_dict: Optional[Mapping[str, Any]] = None, /, *, out: Any = None,
                     backend: Optional[str] = None, stream: Optional[int] = None, **names: Any) -> Any: ...

    def __reduce__(self):
        return (Kernel, (self._text, self._signature))

    def __repr__(self):
        sig = "" if self._signature is None else f", signature={self._signature!r}"
        return f"jitexpr.Kernel({self._text!r}{sig})"


_core.call_by_vectorcall(Kernel)  # (3.10, 3.11: a class statement's subclass is not, by itself)



def _probe(dtype_name):
    if dtype_name in ("float", "int", "bool", "complex"):
        return {"float": 1.0, "int": 1, "bool": True, "complex": 1j}[dtype_name]
    if dtype_name in ("str", "bytes"):  # a string of any width
        return np.array(["a"] if dtype_name == "str" else [b"a"])
    return np.ones((1,), dtype=dtype_name)


def compile(text: str, signature: Optional[Mapping[str, Any]] = None) -> "Kernel":  # noqa: A001
    """A reusable :class:`Kernel` for ``text``; syntax errors are raised now.

    ``signature`` maps each variable to a dtype (``{"a": "float32", "x": float}``; the Python
    types ``float``/``int``/``bool``/``complex`` stand for scalars): the program is then checked
    for names and dtypes at once.
    """
    return Kernel(text, signature)


def precompile(text: str, signature: Mapping[str, Any], backend: str = "cuda") -> dict:
    """Prepares ``text`` for the dtypes of ``signature`` on ``backend`` now (CUDA: compiles its
    kernels into the memory and disk cache), by evaluating it once on one-element arrays, so the
    first real call does not wait for a compile. Returns the runtime's cache statistics."""
    rt = _core.default_runtime(backend)
    _core.evaluate(text, {k: _probe(_dtype_name(v)) for k, v in dict(signature).items()}, None, backend, None, None)
    rt.wait_for_compiles()
    return rt.stats()


def stats(backend: str = "cpu") -> dict:
    """Cache statistics of the default runtime of ``backend``: hits, misses, compiles,
    compile_ms, disk_hits, entries."""
    return _core.default_runtime(backend).stats()


def cuda_available() -> bool:
    """True when a CUDA driver and a device are present (arrays on the device run there)."""
    return bool(_core.cuda_info(False)["available"])


def info(load_compilers: bool = False) -> dict:
    """What jitexpr found on this machine and why CUDA is or is not in use.

    ``{'version', 'cuda': {'available', 'reason', 'driver_version', 'devices', 'nvrtc': {...},
    'nvjitlink': {...}}, 'cpu_threads'}``; each compiler entry says ``found``, ``loaded``,
    ``path``, ``source`` (``"the system toolkit"``, ``"an NVIDIA wheel"``, ``"JITEXPR_NVRTC"``),
    ``version``, ``error`` and ``skipped`` (NVIDIA wheels' copies passed over for their CUDA
    major, each ``{'path', 'reason'}``). NVRTC and nvJitLink are loaded only when a kernel is compiled;
    ``load_compilers=True`` loads them now to say whether they work.
    """
    return {
        "version": _core.__version__,
        "cuda": _core.cuda_info(load_compilers),
        "cpu_threads": get_num_threads(),
    }


def set_num_threads(n: int) -> int:
    """Sets the number of CPU threads (the calling one included) used by later evaluations on
    the CPU; returns the previous number. Calls in flight finish with their threads."""
    n = int(n)
    if n < 1:
        raise ArgumentError(f"the number of threads must be at least 1, not {n}")
    old = get_num_threads()
    _core.set_cpu_threads(n)
    return old


def get_num_threads() -> int:
    """The number of CPU threads evaluations use."""
    n = _core.cpu_threads()
    if n > 0:
        return n
    env = os.environ.get("JITEXPR_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return os.cpu_count() or 1
