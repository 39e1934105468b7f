// jitexpr — exact arithmetic on literals, as Python does it before NumPy sees the number.
//
// A NumPy user's `u + 2**8` computes 2**8 in Python first (an exact integer, 256) and only then
// applies NumPy 2's rules to the result (out of bounds for uint8). The same holds here: a
// subexpression made only of literals and the named constants (pi, e, inf, nan, unless a
// binding shadows them) is folded here with Python's semantics — integers of any size,
// 7 // -2 == -4, 2**-1 == 0.5, division by zero an error — and lowering then sees one weakly
// typed number. Functions (sin(1.0), maximum(2, 3)) are NumPy ufuncs, not Python arithmetic,
// and are never folded here.
#pragma once

#include "dsl/ir.hpp"
#include "dsl/syntax.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace jit::dsl {

// A folded literal: the Python number a literal-only subexpression denotes.
struct Folded {
    enum class Kind : std::uint8_t { Bool, Int, Float, Complex };
    Kind kind = Kind::Int;
    // Bool, Float and Complex always; Int when it fits int64 (dtype Int64) or else uint64
    // (dtype UInt64). An integer that fits neither has `big` set instead.
    ir::Value value;
    bool big = false;
    std::string digits;              // big: the integer in decimal
    std::string shown;               // big: the same, shortened for messages past 40 digits
    std::optional<double> as_float;  // big: the nearest double (none: too large for a double)
};

// The largest integer the fold computes, in bits (a larger intermediate is a ValueError).
inline constexpr int kMaxLiteralBits = 8192;

// Resolves a name to a named constant's value, or nullopt when the name is not one (or a
// binding shadows it).
using ConstantLookup = std::function<std::optional<double>(std::string_view name)>;

class LiteralFolder {
public:
    LiteralFolder(std::string_view text, ConstantLookup constant) : text_(text), constant_(std::move(constant)) {}

    // Whether `e` is made only of literals, unshadowed named constants and Python operators
    // (unary - + ~ not, the binary operators, comparisons, and/or): what fold() folds.
    bool is_literal(const syntax::Expr& e) const;

    // Folds a literal-only expression. Throws ValueError (division by zero, a float overflow,
    // an integer past kMaxLiteralBits, a negative shift count) or TypeError (an operator
    // Python does not define for the operands) pointing at the operator's operands.
    Folded fold(const syntax::Expr& e) const;

    // Folds operands [first, last] of a Chain and the operators between them (left-assoc;
    // right-assoc for "**"; pairwise and-ed for comparisons). Every operand must be literal.
    Folded fold_chain(const syntax::Expr& chain, std::size_t first, std::size_t last) const;

private:
    std::string_view text_;
    ConstantLookup constant_;
    mutable std::unordered_map<const syntax::Expr*, bool> memo_;
};

}  // namespace jit::dsl
