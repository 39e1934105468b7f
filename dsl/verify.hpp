// jitexpr — ir::verify: the invariants of dsl/ir.hpp and dsl/schedule.hpp, checked in one place.
//
// Backends rely on them without checking (a node's operands come before it and have the
// dtypes its op computes in, shapes broadcast, a stage reads from memory only what an earlier
// stage stored, ...). dsl::plan runs verify on every plan in debug builds (NDEBUG unset: the
// sanitizer build of CI runs every test so); tests call it on the plans they make.
#pragma once

#include "dsl/ir.hpp"
#include "dsl/plan.hpp"
#include "dsl/schedule.hpp"

namespace jit::ir {

// Throws InternalError naming the first node, stage or output that breaks an invariant.
void verify(const Program& program);
void verify(const Program& program, const Schedule& schedule);
void verify(const Plan& plan);

}  // namespace jit::ir
