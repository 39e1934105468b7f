// jitexpr — the language's rules for the values of host scalars, checked when a call binds them
// (the program's types are known when it is checked; these depend on the values): an integer
// raised to a negative integer power, a weak integer out of the range of the dtype it meets, and
// a weak integer expression of host scalars whose exact (Python) value leaves int64 where the
// kernels compute it in int64. Each is a ValueError with a caret under the text at fault.
#pragma once

#include "dsl/ir.hpp"

#include <span>

namespace jit::dsl {

// Checks the values bound to `p`'s scalars (one per Program::scalars, of the declared kind):
// ScalarDecl::must_be_nonnegative and must_fit, then Program::scalar_fits. Throws ValueError.
void check_scalars(const ir::Program& p, std::span<const ir::Value> scalars);

}  // namespace jit::dsl
