"""The exceptions jitexpr raises.

Each is a ``jitexpr.Error`` and also the built-in exception a Python or NumPy user would expect
for the same mistake, so ``except SyntaxError`` / ``except TypeError`` / ``except ValueError``
keep working when code moves from numexpr or NumPy to jitexpr.

Errors in the program text (``ParseError``, ``NameError``, ``TypeError``, ``ShapeError``,
``ValueError``, ``IndexError``) carry ``message`` (the bare sentence), ``source`` (the text), ``span`` (the byte
range ``(begin, end)`` of the cause) and ``kind``; ``str(e)`` quotes the line with a caret::

    jitexpr.TypeError: type error: operator '&' is not supported for float64
    line 1: a & b
            ^^^^^
"""

import builtins

__all__ = [
    "Error", "ParseError", "NameError", "TypeError", "ShapeError", "ValueError", "IndexError", "ReadOnlyError",
    "OutOfMemoryError", "ArgumentError", "IOError", "DeviceMismatchError", "CompileError", "CudaError",
    "NoDeviceError", "InternalError", "CancelledError", "OverflowError", "ZeroDivisionError", "NotImplementedError",
]


class Error(Exception):
    """Base of every exception jitexpr raises."""


class ParseError(Error, builtins.SyntaxError):
    """The text is not a program (a syntax error, with a caret)."""


class NameError(Error, builtins.NameError):  # noqa: A001 - the jitexpr name, on purpose
    """An unknown variable or function."""


class TypeError(Error, builtins.TypeError):  # noqa: A001
    """A dtype the operation does not take, a value that does not fit ``out``'s dtype, a wrong
    number of arguments or an unknown keyword (Python's TypeError for a call)."""


class ShapeError(Error, builtins.ValueError):
    """Shapes that do not broadcast, an axis out of range, an ``out`` of the wrong shape."""


class ValueError(Error, builtins.ValueError):  # noqa: A001
    """A literal that does not fit its dtype, an integer to a negative integer power, ..."""


class OverflowError(ValueError, builtins.OverflowError):  # noqa: A001
    """An integer its dtype cannot hold (``int32_array + 2**40``), NumPy's OverflowError."""


class ZeroDivisionError(ValueError, builtins.ZeroDivisionError):  # noqa: A001
    """Literal arithmetic Python refuses, folded as Python folds it: ``1/0``, ``5 // 0`` (arrays
    divided by zero give inf or nan, as in NumPy)."""


class NotImplementedError(Error, builtins.NotImplementedError):  # noqa: A001
    """jitexpr.numexpr's error for an operation the operands' dtype lacks (``~`` on floats,
    ``-`` on bool), where numexpr raises NotImplementedError (``jitexpr.evaluate`` raises
    TypeError, as NumPy does)."""


class IndexError(Error, builtins.IndexError):  # noqa: A001
    """An integer index past the end of its axis, or more indices than the array has axes."""


class ReadOnlyError(Error, builtins.ValueError):
    """A write into read-only memory, refused before anything runs: an assignment to a name bound
    to a read-only array (a NumPy array with ``flags.writeable`` False, ``bytes`` and other
    read-only buffers, a DLPack tensor flagged read-only, a ``__cuda_array_interface__`` whose
    ``data[1]`` is True, an Arrow column), or such an array as ``out``. A ``ValueError``, as
    NumPy's "assignment destination is read-only"."""


class ArgumentError(Error, builtins.ValueError):
    """Arguments that do not fit the program: host and device arrays mixed, a closed runtime, ..."""


class DeviceMismatchError(ArgumentError):
    """Arrays on two devices, or on the host and a device, without ``backend=``/``device=`` asking
    for the copy: jitexpr never copies between devices behind the caller's back."""


class IOError(Error, builtins.OSError):  # noqa: A001
    """A file that cannot be read or written, or is not what it claims to be."""


class CompileError(Error, builtins.RuntimeError):
    """NVRTC rejected generated code: a bug in jitexpr (please report it)."""


class CudaError(Error, builtins.RuntimeError):
    """A CUDA driver call failed."""


class NoDeviceError(Error, builtins.RuntimeError):
    """CUDA was asked for, but there is no driver, no device, or no NVRTC to compile with."""


class InternalError(Error, builtins.RuntimeError):
    """A bug in jitexpr: an invariant did not hold."""


class CancelledError(Error, builtins.RuntimeError):
    """A call stopped by ``Runtime.cancel()`` (Ctrl-C raises ``KeyboardInterrupt`` instead)."""


class OutOfMemoryError(Error, builtins.MemoryError):
    """Memory could not be had (an array, an order statistic's or a scan's own work, a thread's
    stack). ``requested`` and ``available`` are the bytes asked and available (``requested`` is 0
    only when the system did not say); ``str(e)`` says so and quotes the statement with a caret
    under what asked::

        jitexpr.OutOfMemoryError: out of memory: the copy of 20000000 float64 elements an order
        statistic sorts needs 152.6 MiB (160000000 bytes); 41.0 MiB (43003904 bytes) available
        line 1: y = median(x)
                    ^^^^^^^^^
    """
