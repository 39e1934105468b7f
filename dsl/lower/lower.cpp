// jitexpr — lowering: the entry points of dsl/lower.hpp (the class is dsl/lower/lowerer.hpp) and
// the names a program reads, assigns and may call.
#include "dsl/lower.hpp"
#include "core/stack.hpp"

#include "dsl/lower/lowerer.hpp"

#include <algorithm>
#include <set>

namespace jit::dsl {

using lowering::Lowerer;
using lowering::named_constants;
using syntax::Expr;
using syntax::ExprKind;

namespace {

std::vector<std::string> read_names_here(const syntax::Module& module, bool constants);

void collect_parameters(const Expr& e, const std::set<std::string, std::less<>>& assigned, bool constants,
                        std::vector<std::string>& out, std::set<std::string, std::less<>>& seen) {
    if (e.kind == ExprKind::Name) {
        if (e.text == "None") return;  // a reduction's axis=None, never a variable (as in Python)
        if (!assigned.count(e.text) && (constants || !named_constants().count(e.text)) && !seen.count(e.text)) {
            seen.insert(e.text);
            out.push_back(e.text);
        }
        return;
    }
    for (const auto& o : e.operands) collect_parameters(*o, assigned, constants, out, seen);
    for (const auto& k : e.keywords) collect_parameters(*k.value, assigned, constants, out, seen);
}

std::vector<std::string> read_names(const syntax::Module& module, bool constants) {
    // The walk recurses once per nesting level, as the lowering does: on a stack of known size.
    return core::with_stack(core::kFrontStackBytes, [&] { return read_names_here(module, constants); });
}

std::vector<std::string> read_names_here(const syntax::Module& module, bool constants) {
    std::vector<std::string> out;
    std::set<std::string, std::less<>> assigned, seen;
    for (const syntax::Statement& st : module.statements) {
        collect_parameters(*st.value, assigned, constants, out, seen);
        if (!st.target.empty()) assigned.insert(st.target);
        for (const syntax::Target& t : st.more_targets) assigned.insert(t.name);
    }
    return out;
}

}  // namespace

ir::Program lower(const syntax::Module& module, std::string_view text, const Lookup& lookup,
                  const BoundNames& bound_names) {
    // The lowering recurses once per nesting level: on a stack of known size (core/stack.hpp).
    return core::with_stack(core::kFrontStackBytes, [&] {
        Lowerer l(text, lookup, bound_names);
        return l.run(module);
    });
}

ir::Program lower(const syntax::Module& module, std::string_view text, const Lookup& lookup,
                  const std::vector<std::string>& bound_names) {
    BoundNames names;
    if (!bound_names.empty()) names = [&bound_names] { return bound_names; };
    return lower(module, text, lookup, names);
}

std::vector<std::string> parameters(const syntax::Module& module) { return read_names(module, false); }

std::vector<std::string> free_names(const syntax::Module& module) { return read_names(module, true); }

std::optional<double> named_constant(std::string_view name) {
    auto c = named_constants().find(name);
    if (c == named_constants().end()) return std::nullopt;
    return c->second;
}

std::vector<std::string> targets(const syntax::Module& module) {
    std::vector<std::string> out;
    auto add = [&out](const std::string& t) {
        if (!t.empty() && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
    };
    for (const syntax::Statement& st : module.statements) {
        add(st.target);
        for (const syntax::Target& t : st.more_targets) add(t.name);
    }
    return out;
}

std::vector<std::string> builtin_names() {
    std::vector<std::string> r;
    for (const ir::OpInfo& i : ir::op_table()) {
        std::string_view names = i.names;
        std::size_t pos = 0;
        while (!names.empty() && pos <= names.size()) {
            std::size_t bar = names.find('|', pos);
            if (bar == std::string_view::npos) bar = names.size();
            r.emplace_back(names.substr(pos, bar - pos));
            pos = bar + 1;
        }
    }
#define JIT_DTYPE_NAME_LIST(Id, lower, spelled, size) r.emplace_back(spelled);
    JIT_FOR_EACH_DTYPE(JIT_DTYPE_NAME_LIST)
#undef JIT_DTYPE_NAME_LIST
    for (const auto& [n, v] : named_constants()) r.emplace_back(n);
    for (const char* n : {"datetime64", "timedelta64", "isnat"}) r.emplace_back(n);  // dsl/lower/dates.cpp
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
    return r;
}

}  // namespace jit::dsl
