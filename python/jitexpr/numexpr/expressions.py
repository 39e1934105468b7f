"""numexpr.expressions over jitexpr: expressions built from Python objects.

``E.a`` is a variable (of numexpr's default kind, ``'double'``); the arithmetic, comparison and
bitwise operators of Python, ``.real``/``.imag`` and the functions of :data:`functions` build a
tree of nodes — :class:`VariableNode`, :class:`ConstantNode`, :class:`OpNode`,
:class:`FuncNode` — that :class:`numexpr.necompiler.NumExpr` compiles::

    from jitexpr.numexpr import E, NumExpr
    f = NumExpr(2.0 * E.a + 3.0 * E.b, signature=[("a", float), ("b", float)])

The kinds are numexpr's: ``bool``, ``int`` (int32), ``long`` (int64), ``float`` (float32),
``double`` (float64), ``complex`` (complex128). Operations on constants are folded with Python's
(or NumPy's) own arithmetic when the tree is built, as numexpr folds them.
"""

from __future__ import annotations

import operator
import threading

import numpy as np

__all__ = ["E"]

double = np.double
int_ = np.int32
long_ = np.int64

default_kind = "double"
# Narrowest first: an operation of several kinds computes in the widest.
kind_rank = ("bool", "int", "long", "float", "double", "complex", "none")
type_to_kind = {bool: "bool", int_: "int", long_: "long", float: "float", double: "double", complex: "complex",
                bytes: "bytes", str: "str"}
kind_to_type = {"bool": bool, "int": int_, "long": long_, "float": float, "double": double, "complex": complex,
                "bytes": bytes, "str": str}
scalar_constant_types = (bool, int_, int, float, double, complex, bytes, str, np.generic)

_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1


class _Context(threading.local):
    """The compile options in force while a tree is built (one set per thread)."""

    def __init__(self):
        self.options = {}

    def get(self, name, default):
        return self.options.get(name, default)

    def get_current_context(self):
        return dict(self.options)

    def set_new_context(self, options):
        self.options = dict(options)


_context = _Context()


def get_optimization() -> str:
    return _context.get("optimization", "none")


def isConstant(x) -> bool:
    """True for a scalar a constant can hold."""
    return isinstance(x, scalar_constant_types) and not isinstance(x, ExpressionNode)


def getKind(x) -> str:
    """The kind of a constant, as numexpr chooses it: bools are bool, an integer is int when it
    fits 32 bits (a NumPy int64 scalar stays long), a NumPy float32 is float, any other real is
    double, then complex."""
    if isinstance(x, (bytes, str, np.bytes_, np.str_)):
        return "bytes"
    if isinstance(x, (bool, np.bool_)):
        return "bool"
    if isinstance(x, np.int64):
        return "long"
    if isinstance(x, np.float32):
        return "float"
    if isinstance(x, (int, np.integer)):
        return "int" if _INT32_MIN <= int(x) <= _INT32_MAX else "long"
    if isinstance(x, (float, np.floating)):
        return "double"
    if isinstance(x, (complex, np.complexfloating)):
        return "complex"
    raise TypeError(f"unsupported constant type: {type(x).__name__}")


def commonKind(nodes) -> str:
    """The widest kind of the nodes (strings only with strings)."""
    kinds = [n.astKind for n in nodes]
    strings = sum(k in ("bytes", "str") for k in kinds)
    if strings and strings < len(kinds):
        raise TypeError("strings can only be operated with strings")
    if strings:
        return "bytes"
    return max(kinds, key=kind_rank.index)


def _node(x):
    if isinstance(x, ExpressionNode):
        return x
    if isConstant(x):
        return ConstantNode(x)
    raise TypeError(f"unsupported object type: {type(x)}")


def _all_constant(nodes) -> bool:
    return all(isinstance(n, ConstantNode) for n in nodes)


def _binary(name, swap=False, kind=None):
    fold = getattr(operator, name if name not in ("and", "or") else name + "_")

    def method(self, other):
        a, b = _node(self), _node(other)
        if swap:
            a, b = b, a
        if _all_constant((a, b)):
            return ConstantNode(fold(a.value, b.value))
        return OpNode(name, (a, b), kind=kind)

    method.__name__ = f"__{'r' if swap else ''}{name}__"
    return method


def _truediv(a, b):
    a, b = _node(a), _node(b)
    if _all_constant((a, b)):
        return ConstantNode(a.value / b.value)
    if (get_optimization() in ("moderate", "aggressive") and isinstance(b, ConstantNode)
            and a.astKind == b.astKind and a.astKind in ("float", "double", "complex")):
        return OpNode("mul", (a, ConstantNode(1.0 / b.value)))
    kind = commonKind((a, b))
    return OpNode("div", (a, b), kind="double" if kind in ("bool", "int", "long") else kind)


def _pow(a, b):
    a, b = _node(a), _node(b)
    if _all_constant((a, b)):
        return ConstantNode(a.value ** b.value)
    if isinstance(b, ConstantNode):
        x = b.value
        if a.astKind in ("int", "long") and b.astKind in ("int", "long") and x < 0:
            raise ValueError("Integers to negative integer powers are not allowed.")
        if get_optimization() in ("moderate", "aggressive"):
            if x == 0:
                return OpNode("ones_like", (a,))
            if x == 1:
                return a
            if x == 2:
                return OpNode("mul", (a, a))
            if x == -1:
                return _truediv(ConstantNode(1), a)
            if x == 0.5:
                return FuncNode("sqrt", (a,), kind="double" if a.astKind in ("bool", "int", "long") else a.astKind)
    return OpNode("pow", (a, b))


class ExpressionNode:
    """A node of an expression tree: ``value`` (an op's name, a constant, a variable's name),
    ``astKind`` (the kind of its result) and ``children``."""

    astType = "generic"

    def __init__(self, value=None, kind=None, children=None):
        self.value = value
        self.astKind = "none" if kind is None else kind
        self.children = () if children is None else tuple(children)

    @property
    def real(self):
        if isinstance(self, ConstantNode):
            return ConstantNode(complex(self.value).real)
        return OpNode("real", (self,), "double")

    @property
    def imag(self):
        if isinstance(self, ConstantNode):
            return ConstantNode(complex(self.value).imag)
        return OpNode("imag", (self,), "double")

    def __str__(self):
        return f"{type(self).__name__}({self.value}, {self.astKind}, {self.children})"

    __repr__ = __str__

    def __bool__(self):
        raise TypeError("You can't use Python's standard boolean operators in NumExpr expressions. You should use "
                        "their bitwise counterparts instead: '&' instead of 'and', '|' instead of 'or', and '~' "
                        "instead of 'not'.")

    def __neg__(self):
        return OpNode("neg", (self,))

    def __invert__(self):
        return OpNode("invert", (self,))

    def __pos__(self):
        return self

    __add__ = __radd__ = _binary("add")
    __sub__ = _binary("sub")
    __rsub__ = _binary("sub", swap=True)
    __mul__ = __rmul__ = _binary("mul")
    __floordiv__ = _binary("floordiv")
    __rfloordiv__ = _binary("floordiv", swap=True)
    __mod__ = _binary("mod")
    __rmod__ = _binary("mod", swap=True)
    __lshift__ = _binary("lshift")
    __rlshift__ = _binary("lshift", swap=True)
    __rshift__ = _binary("rshift")
    __rrshift__ = _binary("rshift", swap=True)
    __and__ = __rand__ = _binary("and")
    __or__ = __ror__ = _binary("or")
    __xor__ = __rxor__ = _binary("xor")
    __gt__ = _binary("gt", kind="bool")
    __ge__ = _binary("ge", kind="bool")
    __eq__ = _binary("eq", kind="bool")
    __ne__ = _binary("ne", kind="bool")
    __lt__ = _binary("gt", swap=True, kind="bool")
    __le__ = _binary("ge", swap=True, kind="bool")
    __hash__ = object.__hash__

    def __truediv__(self, other):
        return _truediv(self, other)

    def __rtruediv__(self, other):
        return _truediv(other, self)

    def __pow__(self, other):
        return _pow(self, other)

    def __rpow__(self, other):
        return _pow(other, self)


class LeafNode(ExpressionNode):
    leafNode = True


class VariableNode(LeafNode):
    astType = "variable"

    def __init__(self, value=None, kind=None, children=None):
        LeafNode.__init__(self, value=value, kind=kind)


class ConstantNode(LeafNode):
    """A scalar constant; a Python float is double, a NumPy float32 float."""

    astType = "constant"

    def __init__(self, value=None, children=None):
        LeafNode.__init__(self, value=value, kind=getKind(value))

    def __neg__(self):
        return ConstantNode(-self.value)

    def __invert__(self):
        return ConstantNode(~self.value)


class RawNode:
    """An integer operand of an op that is not an array (a reduction's axis)."""

    astType = "raw"
    astKind = "none"

    def __init__(self, value):
        self.value = value
        self.children = ()

    def __str__(self):
        return f"RawNode({self.value})"

    __repr__ = __str__


class OpNode(ExpressionNode):
    """An operator; its kind is the widest of its operands' unless given. On bools, ``*`` is
    ``&`` and ``+`` is ``|``, as in numexpr."""

    astType = "op"

    def __init__(self, opcode=None, args=None, kind=None):
        if kind is None and args is not None:
            kind = commonKind(args)
        if kind == "bool":
            opcode = {"mul": "and", "add": "or"}.get(opcode, opcode)
        ExpressionNode.__init__(self, value=opcode, kind=kind, children=args)


class FuncNode(OpNode):
    """A function call; isnan, isfinite, isinf and signbit are bool."""

    def __init__(self, opcode=None, args=None, kind=None):
        if kind is None and args is not None:
            kind = commonKind(args)
        if opcode in ("isnan", "isfinite", "isinf", "signbit"):
            kind = "bool"
        OpNode.__init__(self, opcode, args, kind)


class Expression:
    """``E.name`` is the variable ``name``."""

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return VariableNode(name, default_kind)


E = Expression()

# Functions whose integer arguments keep their kind (NumPy's integer loops); the others compute
# integers in double.
_INTEGER_KEEPING = ("copy", "ones_like", "abs", "round", "sign")


def _function(name, fold, minkind=None, maxkind=None):
    def function(*args):
        nodes = [_node(a) for a in args]
        if _all_constant(nodes):
            return ConstantNode(fold(*[n.value for n in nodes]))
        kind = commonKind(nodes)
        if kind in ("int", "long"):
            if name not in _INTEGER_KEEPING:
                kind = "double"
        else:
            if minkind and kind_rank.index(minkind) > kind_rank.index(kind):
                kind = minkind
            if maxkind and kind_rank.index(maxkind) < kind_rank.index(kind):
                kind = maxkind
        return FuncNode(name, nodes, kind)

    function.__name__ = name
    return function


def _where(a, b, c):
    a, b, c = _node(a), _node(b), _node(c)
    if isinstance(a, ConstantNode):
        return b if a.value else c
    return FuncNode("where", (a, b, c))


allaxes = 255  # the axis of a reduction over all axes


def encode_axis(axis):
    if isinstance(axis, ConstantNode):
        axis = axis.value
    if axis is None:
        return RawNode(allaxes)
    if axis < 0:
        raise ValueError("negative axis are not supported")
    if axis > 254:
        raise ValueError("cannot encode axis")
    return RawNode(axis)


def _reduction(name):
    def reduce(a, axis=None):
        raw = encode_axis(axis)
        a = _node(a)
        if isinstance(a, ConstantNode):
            return a
        return FuncNode(name, (a, raw), kind=a.astKind)

    reduce.__name__ = name
    return reduce


def _contains(a, b):
    return FuncNode("contains", (_node(a), _node(b)), kind="bool")


def _make_functions():
    f = {}
    for n, lo in [("sqrt", "float"), ("sin", "float"), ("cos", "float"), ("tan", "float"), ("arcsin", "float"),
                  ("arccos", "float"), ("arctan", "float"), ("sinh", "float"), ("cosh", "float"), ("tanh", "float"),
                  ("arcsinh", "float"), ("arccosh", "float"), ("arctanh", "float"), ("fmod", "float"),
                  ("arctan2", "float"), ("hypot", "double"), ("nextafter", "double"), ("copysign", "double"),
                  ("maximum", "double"), ("minimum", "double"), ("log", "float"), ("log1p", "float"),
                  ("log10", "float"), ("log2", "float"), ("exp", "float"), ("expm1", "float"),
                  ("round", "double"), ("trunc", "double"), ("sign", "double"), ("isnan", "double"),
                  ("isfinite", "double"), ("isinf", "double"), ("signbit", "double")]:
        f[n] = _function(n, getattr(np, n), lo)
    f["copy"] = _function("copy", np.copy)
    f["ones_like"] = _function("ones_like", np.ones_like)
    f["abs"] = _function("absolute", np.absolute, "float")
    f["ceil"] = _function("ceil", np.ceil, "float", "double")
    f["floor"] = _function("floor", np.floor, "float", "double")
    f["real"] = _function("real", np.real, "double", "double")
    f["imag"] = _function("imag", np.imag, "double", "double")
    f["complex"] = _function("complex", complex, "complex")
    f["conj"] = _function("conjugate", np.conj, "complex")
    f["where"] = _where
    for n in ("sum", "prod", "min", "max"):
        f[n] = _reduction(n)
    f["contains"] = _contains
    return f


functions = _make_functions()
