"""numexpr.necompiler over jitexpr: ``NumExpr`` (an expression compiled once for a signature),
``disassemble``, ``getContext``, ``getExprNames``, ``precompile``, and ``evaluate``,
``re_evaluate``, ``validate``.

``NumExpr(ex, signature=())`` takes a text or an :mod:`~jitexpr.numexpr.expressions` tree and
compiles it as numexpr does — kinds from the signature (``double`` for a name it does not give),
constants folded, every operation given an opcode of numexpr's virtual machine (its name and
the kinds of its result and operands, ``mul_ddd``), casts where the kinds differ, common
subexpressions shared, registers reused — so that ``disassemble`` and ``constants`` are
numexpr's. Calls run the typed expression through jitexpr: ``f(a, b)`` casts each argument to
its kind in the signature (safe casting) and returns an array of the expression's kind.
"""

from __future__ import annotations

import ast
import itertools
import operator
import sys

import numpy as np

from . import expressions
from .. import _jitexpr as _core

__all__ = ["NumExpr", "disassemble", "evaluate", "re_evaluate", "validate", "getContext", "getExprNames",
           "precompile", "getType"]

double = np.double
int_ = np.int32
long_ = np.int64

typecode_to_kind = {"b": "bool", "i": "int", "l": "long", "f": "float", "d": "double", "c": "complex", "n": "none",
                    "s": "str"}
kind_to_typecode = {"bool": "b", "int": "i", "long": "l", "float": "f", "double": "d", "complex": "c", "bytes": "s",
                    "str": "s", "none": "n"}
type_to_typecode = {bool: "b", int_: "i", long_: "l", float: "f", double: "d", complex: "c", bytes: "s", str: "s"}
type_to_kind = expressions.type_to_kind
kind_to_type = expressions.kind_to_type
default_type = kind_to_type[expressions.default_kind]

# The NumPy dtype of each kind, and jitexpr's cast function for it.
_KIND_DTYPE = {"bool": np.bool_, "int": np.int32, "long": np.int64, "float": np.float32, "double": np.float64,
               "complex": np.complex128}
_KIND_CAST = {"bool": "bool", "int": "int32", "long": "int64", "float": "float32", "double": "float64",
              "complex": "complex128"}

# ---- numexpr's opcodes: name_<result><operands> --------------------------------------------


def _opcode_table():
    ops = set()

    def add(name, *sigs):
        ops.update(f"{name}_{s}" for s in sigs)

    add("copy", "bb", "ii", "ll", "ff", "dd", "cc", "ss")
    add("ones_like", "ii", "ll", "ff", "dd", "cc")
    add("neg", "ii", "ll", "ff", "dd", "cc")
    add("invert", "bb", "ii", "ll")
    for op in ("add", "sub", "mul", "div"):
        add(op, "iii", "lll", "fff", "ddd", "ccc")
    for op in ("pow", "mod", "floordiv"):
        add(op, "iii", "lll", "fff", "ddd")
    for op in ("lshift", "rshift"):
        add(op, "iii", "lll")
    for op in ("and", "or", "xor"):
        add(op, "bbb", "iii", "lll")
    for op in ("gt", "ge"):
        add(op, "bii", "bll", "bff", "bdd", "bss")
    for op in ("eq", "ne"):
        add(op, "bbb", "bii", "bll", "bff", "bdd", "bcc", "bss")
    add("cast", "ib", "li", "fi", "fl", "di", "dl", "df", "ci", "cl", "cf", "cd")
    add("sqrt", "ff", "dd")
    add("where", "bbbb", "ibii", "lbll", "fbff", "dbdd", "cbcc")
    add("real", "dc")
    add("imag", "dc")
    add("complex", "cdd")
    add("contains", "bss")
    for op in ("sum", "prod"):
        add(op, "iin", "lln", "ffn", "ddn", "ccn")
    for op in ("min", "max"):
        add(op, "iin", "lln", "ffn", "ddn")
    return frozenset(ops)


def _function_table():
    # The functions numexpr calls through func_<sig>n: each signature's functions are numbered
    # from 0 in its own table (the number is the instruction's raw operand).
    unary = ["sqrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
             "arctanh", "log", "log1p", "log10", "log2", "exp", "expm1", "absolute", "conjugate"]
    rounding = ["ceil", "floor", "trunc", "sign", "round"]
    binary = ["fmod", "arctan2", "hypot", "nextafter", "copysign", "maximum", "minimum"]
    predicates = ["isnan", "isfinite", "isinf", "signbit"]
    tables = {
        "ff": unary + rounding, "dd": unary + rounding, "cc": unary + ["sign", "round"],
        "fff": binary, "ddd": binary, "ccc": ["pow"],
        "bd": predicates, "bf": predicates, "bc": predicates[:3],
        "ii": ["sign", "round", "absolute"], "ll": ["sign", "round", "absolute"],
    }
    return {f"{f}_{sig}": i for sig, names in tables.items() for i, f in enumerate(names)}


opcodes = _opcode_table()
funccodes = _function_table()

# ---- compile: the typed tree, registers, three-address form --------------------------------


class ASTNode:
    """A node of the tree being compiled: astType ('op', 'variable', 'constant', 'raw',
    'alias'), astKind, value, children and, once assigned, its register."""

    def __init__(self, astType="generic", astKind="unknown", value=None, children=()):
        self.astType = astType
        self.astKind = astKind
        self.value = value
        self.children = tuple(children)
        self.reg = None

    def key(self):
        return (self.astType, self.astKind, self.value, tuple(c.key() for c in self.children))

    def typecode(self):
        return kind_to_typecode[self.astKind]

    def postorderWalk(self):
        for c in self.children:
            yield from c.postorderWalk()
        yield self

    def allOf(self, *astTypes):
        return (n for n in self.postorderWalk() if n.astType in astTypes)

    def __repr__(self):
        return f"ASTNode({self.astType}, {self.astKind}, {self.value!r}, {len(self.children)} children)"


def expressionToAST(ex):
    return ASTNode(ex.astType, ex.astKind, ex.value, [expressionToAST(c) for c in ex.children])


def _upcasts(code):
    order = "bilfdc"
    return order[order.index(code):] if code in order else code


def typeCompileAst(ast):
    """Gives every op the opcode of numexpr's machine that takes its operands' kinds (upcast as
    little as possible, the first operand first) and casts the operands to it."""
    if ast.astType != "op":
        return ASTNode(ast.astType, ast.astKind, ast.value, [typeCompileAst(c) for c in ast.children])
    children = list(ast.children)
    ret = ast.typecode()
    have = "".join(c.typecode() for c in children)
    opcode = None
    for want in map("".join, itertools.product(*[_upcasts(c) for c in have])):
        name = f"{ast.value}_{ret}{want}"
        if name in opcodes:
            opcode = name
            break
        if name in funccodes:
            opcode = f"func_{ret}{want}n"
            children.append(ASTNode("raw", "none", funccodes[name]))
            break
    else:
        raise NotImplementedError(f"couldn't find matching opcode for '{ast.value}_{ret}{have}'")
    for i, (h, w) in enumerate(zip(have, want)):
        if h != w:
            kind = typecode_to_kind[w]
            c = children[i]
            children[i] = ASTNode("constant", kind, c.value) if c.astType == "constant" else \
                ASTNode("op", kind, "cast", [c])
    return ASTNode("op", ast.astKind, opcode, [typeCompileAst(c) for c in children])


class Register:
    def __init__(self, node, temporary=False):
        self.node = node
        self.temporary = temporary
        self.immediate = False
        self.n = None

    def __repr__(self):
        return f"{'Temporary' if self.temporary else 'Register'}({self.node.astType}, {self.node.astKind}, {self.n})"


class Immediate(Register):
    def __init__(self, node):
        Register.__init__(self, node)
        self.immediate = True


def _share_subexpressions(ast):
    """Each op computed once: a repeated subtree becomes an alias of its first occurrence."""
    seen = {}
    aliases = []
    for node in list(ast.allOf("op")):
        k = node.key()
        if k in seen:
            node.astType, node.value, node.children = "alias", seen[k], ()
            aliases.append(node)
        else:
            seen[k] = node
    return aliases


def _reuse_temporaries(ast):
    """A temporary whose last reader has read it takes the next result of its kind."""
    ops = [n for n in ast.postorderWalk() if n.astType == "op" and n.reg.temporary]
    readers = {}
    for n in ast.postorderWalk():
        if n.astType != "op":
            continue
        for c in n.children:
            if c.reg.temporary:
                readers.setdefault(c.reg, set()).add(id(n))
    free = {}
    for n in ops:
        for c in n.children:
            if c.reg.temporary:
                left = readers.get(c.reg, set())
                left.discard(id(n))
                if not left:
                    free.setdefault(c.reg.node.astKind, []).append(c.reg)
        pool = free.get(n.astKind)
        if pool:
            reg = pool.pop(0)  # the first freed: an operation writes over its first operand
            readers[reg] = readers.get(n.reg, set())
            n.reg = reg


def _constant_sort_key(node):
    v = node.value
    try:
        c = complex(v)
        return (node.astKind, c.real, c.imag)
    except (TypeError, ValueError):
        return (node.astKind, 0.0, 0.0)


def convertConstantToKind(x, kind):
    if kind == "float":
        return np.float32(x)
    if isinstance(x, str):
        return x.encode("ascii")
    return kind_to_type[kind](x)


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
           ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
_COMPARE = {ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Eq: operator.eq,
            ast.NotEq: operator.ne}
_NAMED = {"None": None, "True": True, "False": False}


class _Builder:
    """Builds the expression tree of a text from Python's parse of it (never evaluated)."""

    def __init__(self, text, types):
        self.text = text
        self.types = types

    def fail(self, node, what):
        err = SyntaxError(f"{what} is not allowed in a numexpr expression")
        err.filename, err.lineno, err.offset, err.text = "<expr>", 1, getattr(node, "col_offset", 0) + 1, self.text
        raise err

    def build(self, node):
        if isinstance(node, ast.Expression):
            return self.build(node.body)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float, complex, bytes, str)) or node.value is None:
                return node.value
            self.fail(node, "this constant")
        if isinstance(node, ast.Name):
            if node.id in _NAMED:
                return _NAMED[node.id]
            if node.id in expressions.functions:
                return expressions.functions[node.id]
            return expressions.VariableNode(node.id, type_to_kind[self.types.get(node.id, default_type)])
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](self.build(node.left), self.build(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](self.build(node.operand))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self.build(node.operand)  # a node's __bool__: numexpr's TypeError
        if isinstance(node, ast.BoolOp):
            values = [self.build(v) for v in node.values]
            return (all if isinstance(node.op, ast.And) else any)(values)  # the same TypeError
        if isinstance(node, ast.Compare):
            left = self.build(node.left)
            result = None
            for op, right in zip(node.ops, node.comparators):
                if type(op) not in _COMPARE:
                    self.fail(node, "this comparison")
                r = self.build(right)
                step = _COMPARE[type(op)](left, r)
                result = step if result is None else (result and step)
                left = r
            return result
        if isinstance(node, ast.Attribute) and node.attr in ("real", "imag"):
            base = self.build(node.value)
            if isinstance(base, expressions.ExpressionNode):
                return getattr(base, node.attr)
            return getattr(complex(base), node.attr)
        if isinstance(node, ast.Call):
            f = self.build(node.func)
            if not callable(f) or isinstance(f, expressions.ExpressionNode):
                raise TypeError(f"'{type(f).__name__}' object is not callable")
            args = [self.build(a) for a in node.args]
            kwargs = {k.arg: self.build(k.value) for k in node.keywords}
            return f(*args, **kwargs)
        self.fail(node, type(node).__name__)


def stringToExpression(s, types, context, sanitize=True):
    """The tree of a text: its names become variables of their kinds in ``types`` (double
    otherwise), its functions those of :data:`expressions.functions`. The text is parsed by
    Python's parser and walked; it is never evaluated."""
    if not isinstance(s, str):
        raise ValueError("must specify expression as a string")
    if sanitize:
        _core.numexpr_check(s, {})
    old = expressions._context.get_current_context()
    try:
        expressions._context.set_new_context(context)
        ex = _Builder(s, types).build(ast.parse(s.strip(), "<expr>", "eval"))
        if expressions.isConstant(ex):
            ex = expressions.ConstantNode(ex)
        elif not isinstance(ex, expressions.ExpressionNode):
            raise TypeError(f"unsupported expression type: {type(ex)}")
    finally:
        expressions._context.set_new_context(old)
    return ex


context_info = [("optimization", ("none", "moderate", "aggressive"), "aggressive"),
                ("truediv", (False, True, "auto"), "auto")]


def getContext(kwargs, _frame_depth=1):
    """numexpr's options from keyword arguments: optimization and truediv, checked."""
    d = dict(kwargs)
    context = {}
    for name, allowed, default in context_info:
        value = d.pop(name, default)
        if value not in allowed:
            raise ValueError(f"'{name}' must be one of {allowed}")
        context[name] = value
    if d:
        raise ValueError(f"Unknown keyword argument '{d.popitem()[0]}'")
    if context["truediv"] == "auto":
        context["truediv"] = False  # Python 3 has only true division
    return context


def precompile(ex, signature=(), context={}, sanitize=True):  # noqa: B006 - numexpr's signature
    """(three-address program, input signature, temporaries' signature, constants, input names)."""
    types = dict(signature)
    order = [name for name, _ in signature]
    if isinstance(ex, str):
        ex = stringToExpression(ex, types, context, sanitize)
    ast = expressionToAST(ex)
    if ex.astType != "op":
        ast = ASTNode("op", ex.astKind, "copy", (ast,))
    ast = typeCompileAst(ast)
    aliases = _share_subexpressions(ast)

    leaves = {}
    for node in ast.allOf("raw"):
        node.reg = Immediate(node)
    for node in ast.allOf("variable", "constant"):
        node.reg = leaves.setdefault(node.key(), Register(node))
    for node in ast.allOf("op"):
        node.reg = Register(node, temporary=True)
    for a in aliases:
        a.reg = a.value.reg

    variables = {n.value: n for n in ast.allOf("variable")}
    if order:
        if set(order) != set(variables):
            raise ValueError(f"input names ({order}) don't match those found in expression ({set(variables)})")
    else:
        order = sorted(variables)
    inputs = [variables[n] for n in order]
    constant_regs = {id(n.reg): n.reg for n in ast.allOf("constant")}
    constant_nodes = sorted((r.node for r in constant_regs.values()), key=_constant_sort_key)
    constants = [convertConstantToKind(n.value, n.astKind) for n in constant_nodes]

    if ast.value.split("_", 1)[0] in ("sum", "prod", "min", "max"):
        ast.reg.temporary = False  # a reduction never writes into what it reads
    _reuse_temporaries(ast)
    ast.reg.temporary = False
    ast.reg.n = 0
    n = 1
    for node in inputs + constant_nodes:
        node.reg.n = n
        n += 1
    tempsig = ""
    for node in ast.postorderWalk():
        if node.astType == "alias":
            continue
        reg = node.reg
        if reg.immediate:
            reg.n = node.value
        elif reg.n is None:
            reg.n = n
            n += 1
            tempsig += reg.node.typecode()
    program = [(node.value, node.reg) + tuple(c.reg for c in node.children) for node in ast.allOf("op")]
    input_names = tuple(order)
    inputsig = "".join(type_to_typecode[types.get(x, default_type)] for x in input_names)
    return program, inputsig, tempsig, constants, input_names, ast


# ---- the compiled object ---------------------------------------------------------------------

_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "mod": "%", "floordiv": "//", "lshift": "<<",
          "rshift": ">>", "and": "&", "or": "|", "xor": "^", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_FUNCTION_NAME = {"absolute": "abs", "conjugate": "conj"}


def _render(node, names, constants):
    """jitexpr's text of a typed node; constants become bound names of their exact dtype."""
    t = node.astType
    if t == "alias":
        return _render(node.value, names, constants)
    if t == "variable":
        return names[node.value]
    if t == "constant":
        v = _KIND_DTYPE[node.astKind](node.value) if node.astKind in _KIND_DTYPE else node.value
        key = (node.astKind, repr(v))
        if key not in constants:
            constants[key] = (f"_ne_c{len(constants)}", v)
        return constants[key][0]
    op = node.value.rsplit("_", 1)[0]
    args = [c for c in node.children if c.astType != "raw"]
    parts = [_render(c, names, constants) for c in args]
    if op == "func":
        sig = node.value[len("func_"):-1]  # func_<sig>n
        fname = next(k for k, v in funccodes.items()
                     if v == node.children[-1].value and k.endswith("_" + sig)).rsplit("_", 1)[0]
        return f"{_FUNCTION_NAME.get(fname, fname)}({', '.join(parts)})"
    if op in _INFIX:
        return f"({parts[0]} {_INFIX[op]} {parts[1]})"
    if op == "neg":
        return f"(-{parts[0]})"
    if op == "invert":
        return f"(~{parts[0]})"
    if op == "cast":
        return f"{_KIND_CAST[node.astKind]}({parts[0]})"
    if op in ("sum", "prod", "min", "max"):
        axis = node.children[1].value
        return f"{op}({parts[0]})" if axis == expressions.allaxes else f"{op}({parts[0]}, axis={axis})"
    return f"{op}({', '.join(parts)})"


class NumExprObject:
    """An expression compiled for a signature (what :func:`NumExpr` returns): call it with the
    inputs in ``input_names``' order."""

    def __init__(self, program, inputsig, tempsig, constants, input_names, ast):
        self.signature = inputsig.encode("ascii")
        self.tempsig = tempsig.encode("ascii")
        self.constants = tuple(constants)
        self.input_names = input_names
        self._program = program
        self._kind = ast.astKind
        names = {n: f"_ne_i{i}" for i, n in enumerate(input_names)}
        bound = {}
        self._text = _render(ast.children[0] if ast.value.startswith("copy_") else ast, names, bound)
        self._constants = {name: value for name, value in bound.values()}
        self._names = [names[n] for n in input_names]
        self._kinds = [typecode_to_kind[c] for c in inputsig]

    @property
    def program(self):
        return tuple(self._program)

    def run(self, *args, out=None, order="K", casting="safe", ex_uses_vml=False):
        if len(args) != len(self._names):
            raise ValueError(f"number of inputs ({len(args)}) doesn't match the program's ({len(self._names)})")
        local = dict(self._constants)
        for name, kind, a in zip(self._names, self._kinds, args):
            arr = np.asarray(a)
            want = _KIND_DTYPE.get(kind)
            if want is not None and arr.dtype != want:
                if not np.can_cast(arr.dtype, want, casting):
                    raise TypeError(f"Cannot cast array data from {arr.dtype} to {np.dtype(want)} according to "
                                    f"the rule '{casting}'")
                arr = arr.astype(want)
            local[name] = arr
        from . import evaluate
        result = evaluate(self._text, local, {}, out=out, order=order, casting=casting, disable_cache=True)
        want = _KIND_DTYPE.get(self._kind)
        if out is None and want is not None and np.asarray(result).dtype != want:
            result = np.asarray(result).astype(want)
        return result

    __call__ = run

    def __repr__(self):
        return f"<NumExpr {self.input_names!r} -> {self._kind}: {self._text}>"


def NumExpr(ex, signature=(), sanitize=True, **kwargs):
    """Compiles ``ex`` (a text or an expression tree) for ``signature``, a list of
    (name, type) pairs that also orders the inputs (sorted names without it)."""
    context = getContext(kwargs)
    return NumExprObject(*precompile(ex, signature, context, sanitize))


def _reg_name(nex, n):
    r_constants = 1 + len(nex.signature)
    r_temps = r_constants + len(nex.constants)
    if n == 0:
        return b"r0"
    if n < r_constants:
        return f"r{n}[{nex.input_names[n - 1]}]".encode("ascii")
    if n < r_temps:
        return f"c{n}[{nex.constants[n - r_constants]}]".encode("ascii")
    return f"t{n}".encode("ascii")


def disassemble(nex):
    """The program of a compiled expression, one instruction a row: the opcode, then its
    destination and operands (registers r0 — the result — rN[input], cN[constant], tN —
    temporaries —, or an immediate), as numexpr lists them; an instruction of more than three
    operands continues on a ``noop`` row."""
    rows = []
    for opcode, *regs in nex._program:
        sig = opcode.rsplit("_", 1)[1] if "_" in opcode else ""
        row = [opcode.encode("ascii")]
        for code, reg in zip(sig, regs):
            if reg is None or (code == "n" and reg.n == expressions.allaxes):
                row.append(None)
            elif code == "n":
                row.append(reg.n)
            else:
                row.append(_reg_name(nex, reg.n))
        row += [None] * (4 - len(row))
        rows.append(row)
        for _ in range(0, max(0, len(regs) - 3), 3):
            rows.append([b"noop", None, None, None])
    return rows


def getType(a):
    """numexpr's type of an array: bool, int32 (narrower integers and uint16 too), int64
    (uint32 and wider), float (float32), double, complex, bytes."""
    kind = a.dtype.kind
    if kind == "b":
        return bool
    if kind in "iu":
        if a.dtype.itemsize > 4 or (kind == "u" and a.dtype.itemsize == 4):
            return long_
        return int_
    if kind == "f":
        return double if a.dtype.itemsize > 4 else float
    if kind == "c":
        return complex
    if kind == "S":
        return bytes
    if kind == "U":
        raise ValueError("NumExpr 2 does not support Unicode as a dtype.")
    raise ValueError(f"unknown type {a.dtype.name}")


def getExprNames(text, context, sanitize=True):
    """(the names ``text`` reads, sorted; whether it uses VML: always False)."""
    return sorted(_core.parameters(text)), False



# ---- evaluate, validate, re_evaluate ---------------------------------------------------------

# evaluate is the extension's own function (python/src/numexpr.cpp, py_numexpr_evaluate), as
# jitexpr.evaluate is: numexpr's arguments read from the call, the names bound by the extension's
# one binding (bind_names) under numexpr's rules — local_dict, else the caller's locals, then
# global_dict, else the caller's globals; a name in neither is numexpr's KeyError — and the
# thread's last expression kept there for re_evaluate. Its docstring is there.
evaluate = _core.numexpr_evaluate


def validate(ex: str, local_dict=None, global_dict=None, out=None, order: str = "K", casting: str = "safe",
             _frame_depth: int = 2, sanitize=None, **kwargs):
    """Checks ``ex`` against the given (or the caller's) variables: syntax, names and dtypes
    (on one-element arrays of the same dtypes and dimensions). Returns None on success (and
    keeps the expression for :func:`re_evaluate`), else the exception."""
    try:
        _core.numexpr_check(ex, kwargs)
        # _frame_depth as numexpr counts it (2: validate's caller); the extension's function
        # has no frame, so validate's own is the innermost.
        bound = _core.numexpr_bind(ex, local_dict, global_dict, _frame_depth - 1)
        probe = {}
        for n, v in bound.items():
            a = v if isinstance(v, (bool, int, float, complex)) else np.asarray(v)
            probe[n] = a if not isinstance(a, np.ndarray) else np.ones((1,) * a.ndim, dtype=a.dtype)
        evaluate(ex, probe, {})
        _core.numexpr_keep_last(ex, out, order, casting)
    except Exception as e:  # numexpr returns the exception
        return e
    return None


def re_evaluate(local_dict=None, global_dict=None, _frame_depth: int = 2):
    """Evaluates the last expression of :func:`evaluate` or :func:`validate` on this thread
    again, with the variables of now (numexpr.re_evaluate)."""
    last = _core.numexpr_last()
    if last is None:
        raise RuntimeError("A previous evaluate() execution was not found, please call `validate` or `evaluate` "
                           "once before `re_evaluate`")
    ex, out, order, casting = last
    # evaluate's _frame_depth 3 is its caller; from here, re_evaluate's caller is one more.
    return evaluate(ex, local_dict, global_dict, out, order, casting, None, _frame_depth + 2)


def _opcode_error(ex, names):
    """numexpr's error for ``ex`` over ``names`` (``{name: value}``) where its typing refuses byte
    strings: the NotImplementedError naming the opcode its machine lacks (``add_sss`` for two
    byte strings added, ``ge_bsi`` for one against an int32), or the TypeError of a string
    meeting a number in arithmetic; None otherwise. The drop-in asks it when jitexpr's checker
    refuses an operation on strings, so that the exception is numexpr's. In numexpr's order:
    the names' first reading with no types (every variable a double: ``s + 'a'`` is its
    TypeError "strings can only be operated with strings"), a program that is one string constant
    (its ValueError from NumPy: "data type must provide an itemsize"), then the typed compile,
    whose str constants are encoded as ASCII (``s == 'é'`` is its UnicodeEncodeError)."""
    try:
        tree = stringToExpression(ex, {}, {}, sanitize=False)
    except TypeError as e:
        return e
    except Exception:  # noqa: BLE001 - any other answer: jitexpr's own error stands
        return None
    if isinstance(tree, expressions.ConstantNode) and tree.astKind in ("bytes", "str"):
        return ValueError("data type must provide an itemsize")
    try:
        signature = [(name, getType(np.asarray(value))) for name, value in names.items()]
        precompile(ex, signature, sanitize=False)
    except (NotImplementedError, TypeError, UnicodeEncodeError) as e:
        return e
    except Exception:  # noqa: BLE001 - any other answer: jitexpr's own error stands
        return None
    return None
