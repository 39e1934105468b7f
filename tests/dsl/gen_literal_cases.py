#!/usr/bin/env python3
"""Writes golden/literals.tsv: literal-only expressions and what Python computes for them, the
reference of jitexpr's exact literal fold (dsl/literal.cpp; test_literal_fold.cpp reads it).

usage: gen_literal_cases.py > tests/dsl/golden/literals.tsv

Each line: TEXT <tab> KIND <tab> VALUE, where KIND is int, float, bool, complex or an error
class (ValueError for Python's ZeroDivisionError/OverflowError/ValueError, TypeError), and VALUE
is the decimal integer, float.hex() of a float, 0/1 for a bool, two float.hex() for a complex.
The cases are fixed (a seeded generator plus hand-written ones), so the file is stable.
"""
import ast
import math
import operator
import random
import sys
import warnings

warnings.simplefilter("ignore")

NAMES = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}

HAND = [
    "2**64", "2**64 - 1", "2**64 // 2**60", "-2**63", "-2**64", "2**63", "7 // -2", "-7 // 2", "7 % -2",
    "-7 % 2", "2**-1", "0**0", "(-2)**63", "(-2)**64 // 2**64", "10**30 // 10**29", "2**200 / 2**199",
    "(2**70 + 1) / 3", "1 / 3", "2**1023 * 2 / 2", "2**53 + 1 == 2.0**53", "2**53 + 1 > 2.0**53",
    "2**64 > 1e19", "2**64 < 1.8446744073709552e19", "-1 < 2**64", "1 < 2 < 3", "3 > 2 > 2",
    "7.5 // -2", "-7.5 % 2", "7.5 % -2", "-0.0 % 5", "5 % -0.5", "1e308 * 10", "-1e308 * 10",
    "2.0**0.5", "(-8.0)**(1/3)", "(-2)**0.5", "2**0.5", "1 << 100", "-1 << 100", "(1 << 100) >> 99",
    "-5 >> 1", "-5 >> 100", "5 >> 100", "~5", "~-1", "-5 & 3", "-5 | 3", "-5 ^ 3", "-5 & -3",
    "2**100 & (2**100 - 1)", "(2**100 - 1) ^ -1", "1 // 0", "1 % 0", "1 / 0", "1.0 / 0", "1.0 // 0.0",
    "1.0 % 0.0", "0 ** -1", "0.0 ** -1", "1 << -1", "1 >> -1", "2.5 & 1", "1.5 << 2", "~2.5",
    "2**10000 * 1.0", "2**1024 / 1", "2.0**1024", "10.0**400", "pi * 2", "e ** 2", "inf - inf",
    "nan == nan", "nan != nan", "inf > 2**1000", "-inf < -2**1000", "2**64 * 0.5", "True + 1",
    "True * 2.5", "False - 1", "True / 2", "1 and 0", "2 or 0", "not 0", "not 2.5", "0.0 or 0",
    "3 ** 2 ** 2", "-3 ** 2", "(-3) ** 2", "2 ** -2 ** 2", "5 - 3 - 1", "100 // 7 // 2", "2**63 * 2",
    "18446744073709551616 // 2", "0x10000000000000000 - 1", "99999999999999999999 % 7",
    "9223372036854775808 * -1", "-9223372036854775808 - 1", "1 == 1.0", "2**64 == 2.0**64",
    "(-2)**-1", "(-2)**-2", "4**0.5", "(2**60)**0.5", "0.1 + 0.2", "1e-320 / 10", "5 // 0.3",
]


# Imaginary literals (1j, 3J, 2.5e-3j): Python complex arithmetic. Written after the seeded
# cases so that adding them left the earlier lines of the file as they were.
COMPLEX = [
    "1j * 1j", "1j ** 2", "3J", "2.5e-3j", "1 + 2j", "(1 + 2j) * (3 - 4j)", "1 / 1j", "1j / 0", "0j ** 0",
    "0j ** -1", "1j ** 0.5", "-1j", "+1j", "True + 1j", "2 ** 64 * 1j", "1j == 1j", "1j != 1", "1j < 2j",
    "1j // 2", "1j % 2", "1j & 1", "~1j", "not 0j", "1j and 0", "0j or 2", ".5j - 0.5", "007j", "1e-320j / 10",
    "(1 + 1j) ** 3", "(2 + 3j) / (4 - 5j)", "inf * 1j", "nan + 0j",
]


def expr(rng, depth, ints=False):
    if depth == 0 or rng.random() < 0.3:
        k = rng.random() * (0.55 if ints else 1.0)
        if k < 0.45:
            return str(rng.choice([0, 1, 2, 3, 7, 10, 255, 256, 1000, 2**31, 2**32, 2**63 - 1, 2**63, 2**64 - 1]))
        if k < 0.55:
            return str(rng.choice([2**64, 2**65 + 3, 10**25, 3**50]))
        if k < 0.85:
            return rng.choice(["0.5", "2.5", "1e300", "3.0", "1e-300", "0.1", "1e16", "7.25"])
        return rng.choice(["pi", "e", "inf", "nan"])
    kind = rng.random()
    if kind < 0.15:
        return f"-({expr(rng, depth - 1)})"
    if kind < 0.2:
        return f"~({expr(rng, depth - 1, True)})"
    op = rng.choice(["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>", "<", "<=", "==", "!=",
                     ">=", ">"])
    ints = ints or op in ("&", "|", "^", "<<", ">>")
    a = expr(rng, depth - 1, ints)
    b = expr(rng, depth - 1, ints)
    if op == "**":
        b = str(rng.choice([0, 1, 2, 3, 5, 10, 63, 64, -1, -2])) if rng.random() < 0.8 else rng.choice(["0.5", "-1.5", "2.0"])
    if op in ("<<", ">>"):
        b = str(rng.choice([0, 1, 3, 31, 63, 64, 65, 100, 200]))
    return f"({a}) {op} ({b})"


class TooLarge(Exception):
    pass


BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
       ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitAnd: operator.and_,
       ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift}
CMP = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.GtE: operator.ge,
       ast.Gt: operator.gt}


def check(v):
    # jitexpr's fold stops at 8192 bits; Python's ints do not (such cases are left out).
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 8192:
        raise TooLarge()
    return v


def ev(n):
    """Python's arithmetic, node by node, with jitexpr's documented rules for two bools (NumPy's:
    True + True is True, ~True is False) and `and`/`or`/`not` giving bools."""
    if isinstance(n, ast.Expression):
        return ev(n.body)
    if isinstance(n, ast.Constant):
        return n.value
    if isinstance(n, ast.Name):
        return NAMES[n.id]
    if isinstance(n, ast.UnaryOp):
        v = ev(n.operand)
        if isinstance(n.op, ast.Not):
            return not v
        if isinstance(v, bool):
            if isinstance(n.op, ast.Invert):
                return not v
            if isinstance(n.op, ast.USub):
                raise TypeError()
            return v
        return check({ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(n.op)](v))
    if isinstance(n, ast.BinOp):
        a, b = ev(n.left), ev(n.right)
        if isinstance(a, bool) and isinstance(b, bool):
            if isinstance(n.op, (ast.Add, ast.BitOr)):
                return a or b
            if isinstance(n.op, (ast.Mult, ast.BitAnd)):
                return a and b
            if isinstance(n.op, ast.BitXor):
                return a != b
            if isinstance(n.op, ast.Sub):
                raise TypeError()
        if isinstance(n.op, ast.Pow) and isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1:
            if (abs(a).bit_length() - 1) * b >= 8192:
                raise TooLarge()
        if isinstance(n.op, ast.LShift) and isinstance(b, int) and b > 8192 and a != 0:
            raise TooLarge()
        return check(BIN[type(n.op)](a, b))
    if isinstance(n, ast.Compare):
        left = ev(n.left)
        ok = True
        for op, c in zip(n.ops, n.comparators):
            right = ev(c)
            ok = CMP[type(op)](left, right) and ok
            left = right
        return ok
    if isinstance(n, ast.BoolOp):
        vals = [bool(ev(v)) for v in n.values]
        return all(vals) if isinstance(n.op, ast.And) else any(vals)
    raise AssertionError(ast.dump(n))


def evaluate(text):
    try:
        v = ev(ast.parse(text, mode="eval"))
    except TooLarge:
        return None
    except (ZeroDivisionError, OverflowError, ValueError):
        return "ValueError", ""
    except TypeError:
        return "TypeError", ""
    if isinstance(v, bool):
        return "bool", str(int(v))
    if isinstance(v, int):
        return "int", str(v)
    if isinstance(v, float):
        return "float", v.hex()
    if isinstance(v, complex):
        return "complex", f"{v.real.hex()} {v.imag.hex()}"
    return None


def main():
    rng = random.Random(16)
    cases = list(HAND)
    seen = set(cases)
    while len(cases) < len(HAND) + 600:
        t = expr(rng, 3)
        if t in seen:
            continue
        seen.add(t)
        cases.append(t)
    cases += COMPLEX
    out = sys.stdout
    for t in cases:
        r = evaluate(t)
        if r is None:
            continue
        out.write(f"{t}\t{r[0]}\t{r[1]}\n")


if __name__ == "__main__":
    main()
