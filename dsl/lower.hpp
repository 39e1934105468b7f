// jitexpr — from the syntax tree to a checked ir::Program: names, dtypes, shapes.
#pragma once

#include "dsl/ir.hpp"
#include "dsl/syntax.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jit::dsl {

// What the caller binds to a name.
struct Binding {
    enum class Kind : std::uint8_t { Array, Scalar };
    Kind kind = Kind::Array;
    DType dtype = DType::Float32;  // Scalar: Bool, Int64, Float64 or Complex128 (weakly typed)
    Shape shape;
    Strides strides;
    // Array: bytes per element (Array::itemsize()); 0 means the dtype's own. The width of a
    // string array (S, U) or its offsets' (Utf8).
    std::size_t itemsize = 0;
    // Array: jitexpr may not write into it; an assignment that would is a ReadOnlyError.
    bool read_only = false;
    // Array: an assignment to the name always writes into it (same-kind cast, broadcast;
    // TypeError / ShapeError when the value cannot be), rather than rebinding the name to a
    // value of another dtype or shape.
    bool strict = false;
};

// Returns the binding of `name`, or nullptr if the caller has none.
using Lookup = std::function<const Binding*(std::string_view name)>;
// Lists every name the caller binds. Called only to word a message (did-you-mean), so that
// checking a program costs nothing per name the caller holds.
using BoundNames = std::function<std::vector<std::string>()>;

// Checks and lowers `module`. Every statement's target becomes an output; a target that names
// a bound array is written in place when the value has the array's dtype and shape (always
// when the binding is strict: then its dtype and shape must hold the value), else the name is
// bound to a new array; a read-only array that would be written is a ReadOnlyError. Throws
// NameError, TypeError, ShapeError or ValueError pointing into `text`.
// `bound_names` (may be empty) lists the names the caller binds, for did-you-mean suggestions.
// Callers use dsl::plan (dsl/plan.hpp), which calls this.
ir::Program lower(const syntax::Module& module, std::string_view text, const Lookup& lookup,
                  const BoundNames& bound_names);
ir::Program lower(const syntax::Module& module, std::string_view text, const Lookup& lookup,
                  const std::vector<std::string>& bound_names = {});

// Names the program reads before assigning them, in order of first appearance, leaving out
// functions, dtype names used as casts and the named constants (pi, e, inf, nan) — the
// positional parameters of jit::eval. Binding by position keeps the constants constant.
std::vector<std::string> parameters(const syntax::Module& module);

// The same with the named constants the program reads: the names whose bindings matter when
// values are bound by name (an environment, named arguments), where a bound name shadows the
// constant.
std::vector<std::string> free_names(const syntax::Module& module);

// The value of a named constant (pi, e, inf, nan), or nullopt.
std::optional<double> named_constant(std::string_view name);

// Names the program assigns, in order.
std::vector<std::string> targets(const syntax::Module& module);

// Every name the language knows (functions, casts, constants), for completion and did-you-mean.
std::vector<std::string> builtin_names();

}  // namespace jit::dsl
