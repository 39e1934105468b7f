// jitexpr — dtype promotion (NumPy 2, NEP 50) and the typing rules of the op table.
#pragma once

#include "dsl/ir.hpp"

#include <optional>
#include <string>

namespace jit::dsl {

// The kind of a weakly typed value (a Python-style literal or host scalar, NEP 50): it adapts to
// the dtype of the array it meets instead of promoting it.
enum class Weak : std::uint8_t { None, Bool, Int, Float, Complex };

DType default_dtype(Weak w);                  // bool, int64, float64, complex128
Weak weak_kind_of(DType t);                   // the kind (Bool/Int/Float/Complex) of a dtype
DType promote(DType a, DType b);              // two strong dtypes (numpy.result_type)
DType promote_weak(DType strong, Weak weak);  // a strong dtype with a weak value
DType float_for(DType t);                     // bool/int8/uint8 -> float16, int16/uint16 -> float32, wider -> float64
DType real_of(DType t);                       // complex64 -> float32, complex128 -> float64
DType complex_of(DType t);                    // float16/bfloat16/float32 -> complex64, float64 -> complex128
bool can_cast_same_kind(DType from, DType to);

// What a rule makes of promoted operand dtype `p`: the dtype the operands are cast to and the
// dtype of the result. `error` is set (and the optional empty) when the rule rejects `p`.
struct Typed {
    DType operand;
    DType result;
};
std::optional<Typed> apply_rule(ir::Op op, DType p, std::string* error);

}  // namespace jit::dsl
