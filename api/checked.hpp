// jitexpr — jit::check with the program it planned, private to api/: for callers in this layer
// that read more of the program than CheckedProgram says (sharding reads each output's row
// split, dsl/rows.hpp).
#pragma once

#include <jit/check.hpp>

#include "dsl/ir.hpp"

#include <optional>
#include <string_view>

namespace jit {

struct CheckedPlan {
    CheckedProgram checked;
    std::optional<ir::Program> program;  // none for a program of no statement
};

// check(text, names), and the program it planned.
CheckedPlan check_planned(std::string_view text, const Specs& names);

}  // namespace jit
