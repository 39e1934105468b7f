// jitexpr — text to a plan: the one way every caller (the runtime, precompile, the CLI,
// benchmarks, fuzzers, tests) turns a program into something a backend runs.
//
//   text --syntax::parse--> syntax::Module --dsl::lower--> ir::Program --ir::schedule-->
//   ir::Schedule --stage limits (split_large_stages)--> final schedule --> output aliasing
//
// dsl::plan does all of it, in that order, once: a backend never re-splits a plan, and the
// in-place decisions are made on the schedule the backend runs.
#pragma once

#include "dsl/ir.hpp"
#include "dsl/lower.hpp"
#include "dsl/schedule.hpp"
#include "dsl/syntax.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jit::ir {

// A checked program with the schedule a backend runs and how its outputs are written.
struct Plan {
    Program program;
    Schedule schedule;  // final: the backend's stage limits applied
    // Per output: 1 when the output is written straight into the input it aliases
    // (OutputDecl::alias_input), 0 when it is written into a fresh array that the caller then
    // copies into the input (some other stage still reads the input). 0 for outputs that alias
    // nothing.
    std::vector<std::uint8_t> direct_alias;
    std::int32_t result_output = -1;  // the output eval returns (the last statement's), or -1
};

}  // namespace jit::ir

namespace jit::dsl {

// What a program's free names are bound to.
struct Bindings {
    Lookup lookup;     // the binding of a name, or nullptr (unbound)
    BoundNames names;  // every bound name, for did-you-mean in messages; may be empty
};

// Bindings over a map from names to Binding (std::map or std::unordered_map, any comparator),
// which must outlive the plan() call.
template <class Map>
Bindings bindings_of(const Map& map) {
    Bindings b;
    b.lookup = [&map](std::string_view name) -> const Binding* {
        auto it = map.find(std::string(name));
        return it == map.end() ? nullptr : &it->second;
    };
    b.names = [&map] {
        std::vector<std::string> v;
        v.reserve(map.size());
        for (const auto& kv : map) v.push_back(kv.first);
        return v;
    };
    return b;
}

// What a backend can run in one stage (a kernel).
struct Limits {
    std::size_t max_stage_nodes = 0;  // most IR nodes one stage computes inline; 0: no bound
};

// Parses, checks and lowers `text`, schedules it within `limits` and decides how its outputs
// are written. Throws ParseError, NameError, TypeError, ShapeError or ValueError pointing into
// `text`.
ir::Plan plan(std::string_view text, const Bindings& bindings, const Limits& limits);
// The same for a module parsed from `text` already (the runtime keeps parsed texts).
ir::Plan plan(const syntax::Module& module, std::string_view text, const Bindings& bindings, const Limits& limits);
// The last steps alone, for a program built without text (tests building ir::Program by hand).
ir::Plan plan(ir::Program program, const Limits& limits);

}  // namespace jit::dsl
