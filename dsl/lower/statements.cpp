// jitexpr — lowering, statements and assignments: outputs, in-place targets, the run-time checks
// (the class: dsl/lower/lowerer.hpp).
#include "dsl/lower/lowerer.hpp"

namespace jit::dsl::lowering {

ir::Program Lowerer::run(const syntax::Module& m) {
    for (std::size_t s = 0; s < m.statements.size(); ++s) statement(m.statements[s], s + 1 == m.statements.size());
    // The run-time checks, as unnamed outputs after every other.
    for (PendingCheck& c : checks_) {
        p_.checks.push_back(ir::RunCheck{static_cast<std::int32_t>(p_.outputs.size()), std::move(c.message), c.span});
        p_.outputs.push_back(ir::OutputDecl{"", c.node, -1});
    }
    erase_temporal();
    return std::move(p_);
}

void Lowerer::statement(const syntax::Statement& st, bool last) {
    if (!st.more_targets.empty()) {
        // `m, e = frexp(x)`: the results of one call, to the names in order.
        if (st.value->kind != ExprKind::Call || folder_.is_literal(*st.value)) not_several(st);
        const std::vector<Val> vals = call(*st.value, &st);
        assign(st.target, st.target_span, vals.at(0), st, false);
        for (std::size_t k = 0; k < st.more_targets.size(); ++k)
            assign(st.more_targets[k].name, st.more_targets[k].span, vals.at(k + 1), st,
                   last && k + 1 == st.more_targets.size());
        return;
    }
    const Val v = expr(*st.value);
    if (is_text(v) && (last || !st.target.empty()))
        type_error(
            st.target.empty()
                ? fmt::format("the program's value would be strings ({}): jitexpr computes no string-valued result; "
                              "compare them or call a string function (contains, startswith, endswith, find, "
                              "str_len)",
                              dtype_name(dt(v)))
                : fmt::format("'{}' would hold strings ({}): jitexpr computes no string-valued result; compare them "
                              "or call a string function (contains, startswith, endswith, find, str_len) in the "
                              "expression that reads them",
                              st.target, dtype_name(dt(v))),
            st.value->span);
    const bool into = !st.target.empty() && in_place_target(st.target, v) != nullptr;
    if (big_.count(v.node) && !into) strong(v);  // an integer past every dtype is no array
    // A value of host integers alone is stored as an int64 (into a bound array, cast() checks
    // it against that array's dtype).
    if (!into) check_fit(v, node(v.node).dtype);
    if (st.target.empty()) {
        if (last && v.selected()) {
            const ir::NodeId n = compact(v, st.span);
            p_.outputs.push_back(ir::OutputDecl{"", n, -1});
            output_nodes_.insert(n);
            p_.result = n;
        } else if (last) {
            ir::NodeId n = v.node;
            const NodeKind k = node(n).kind;
            if (k == NodeKind::Input || k == NodeKind::Scalar || output_nodes_.count(n))
                n = fresh(n, node(n).shape, st.span);
            p_.outputs.push_back(ir::OutputDecl{"", n, -1});
            output_nodes_.insert(n);
            p_.result = n;
        }
        return;
    }
    assign(st.target, st.target_span, v, st, last);
}

// Assigns v to `target` (one of the statement's targets).
void Lowerer::assign(const std::string& target, SourceSpan target_span, const Val& v, const syntax::Statement& st,
                     bool last) {
    if (target == "None") throw NameError("cannot assign to None", text_, target_span);
    if (dtype_from_name(target) || !functions_named(target).empty()) {
        // Allowed (a variable may shadow a function name only as a variable), but warn by error:
        // calling it later would be ambiguous. Keep it simple: forbid.
        throw NameError(fmt::format("cannot assign to '{}': it is a function name", target), text_, target_span);
    }
    if (v.selected()) {
        // A selection's length is the data's: the name is bound to a new array (never written
        // in place), and later statements read it as the selection it is (sum(c) stays fused).
        const ir::NodeId n = compact(v, st.span);
        std::erase_if(p_.outputs, [&](const ir::OutputDecl& o) {
            if (o.name != target) return false;
            output_nodes_.erase(o.node);
            return true;
        });
        alias_of_.erase(target);
        alias_binding_.erase(target);
        p_.outputs.push_back(ir::OutputDecl{target, n, -1});
        output_nodes_.insert(n);
        locals_[target] = typed(v);
        if (last) p_.result = n;
        return;
    }
    ir::NodeId n = v.node;
    std::int32_t alias = -1;
    if (const Binding* bound = in_place_target(target, v)) {
        if (bound->read_only)
            throw ReadOnlyError(
                target == "(out)"
                    ? fmt::format("out= is read-only ({} {}): jitexpr does not write into it; pass a writable "
                                  "array",
                                  dtype_name(bound->dtype), shape_to_string(bound->shape))
                    : fmt::format("'{}' is read-only ({} {}): assigning to it would write into it; assign to "
                                  "another name, or bind a writable copy",
                                  target, dtype_name(bound->dtype), shape_to_string(bound->shape)),
                text_, target_span);
        // A string array is never written: jitexpr computes no string-valued result, and NumPy's
        // same-kind cast of a number into one writes its text, which jitexpr does not make.
        if (is_string(bound->dtype))
            throw TypeError(
                target == "(out)"
                    ? fmt::format("cannot store a {} result in out= ({} {}): jitexpr does not write into string "
                                  "arrays; pass an out= of dtype {}",
                                  dtype_name(dt(v)), dtype_name(bound->dtype), shape_to_string(bound->shape),
                                  dtype_name(dt(v)))
                    : fmt::format("cannot store a {} value in '{}' ({} {}) in place: jitexpr does not write into "
                                  "string arrays; assign to another name",
                                  dtype_name(dt(v)), target, dtype_name(bound->dtype), shape_to_string(bound->shape)),
                text_, st.value->span);
        // Written in place: the value must fit the array's dtype (same kind) and shape.
        if (!can_cast_same_kind(dt(v), bound->dtype)) {
            // The conversion to name: float32(x); a date's, datetime64(x, 's').
            const std::string cast_to =
                is_temporal(bound->dtype)
                    ? fmt::format("{}64(x, '{}')", is_datetime(bound->dtype) ? "datetime" : "timedelta",
                                  time_unit_code(time_unit(bound->dtype)))
                    : fmt::format("{}(...)", dtype_name(bound->dtype));
            // run_into's target is the caller's out= (Runtime::run_into binds it as "(out)").
            if (target == "(out)")
                throw TypeError(
                    fmt::format("cannot store a {} result in out= ({} {}) under same-kind casting; "
                                "pass casting='unsafe' (jitexpr.numexpr) or cast it with {}",
                                dtype_name(dt(v)), dtype_name(bound->dtype), shape_to_string(bound->shape), cast_to),
                    text_, st.value->span);
            throw TypeError(
                fmt::format("cannot store a {} value in '{}' ({} {}) in place; cast it with {}", dtype_name(dt(v)),
                            target, dtype_name(bound->dtype), shape_to_string(bound->shape), cast_to),
                text_, st.value->span);
        }
        const Shape bs = broadcast(shape(v), bound->shape, st.value->span);
        if (bs != bound->shape)
            throw ShapeError(fmt::format("cannot store a value of shape {} in '{}' of shape {}",
                                         shape_to_string(shape(v)), target, shape_to_string(bound->shape)),
                             text_, st.value->span);
        n = cast(Val{n, v.weak}, bound->dtype, st.value->span);
        // The input slot of the array (created if the program never reads it).
        alias = input_slot_for(target, *bound);
        alias_of_[target] = alias;
        alias_binding_[target] = bound;
        if (node(n).shape != bound->shape || node(n).kind == NodeKind::Input || node(n).kind == NodeKind::Scalar ||
            output_nodes_.count(n))
            n = fresh(n, bound->shape, st.span);
    } else {
        // A new array under the name: a bound array of another dtype or shape is left as it
        // was, and later statements read the new value.
        alias_of_.erase(target);
        alias_binding_.erase(target);
        const NodeKind k = node(n).kind;
        if (k == NodeKind::Input || k == NodeKind::Scalar || output_nodes_.count(n))
            n = fresh(n, node(n).shape, st.span);
    }
    // A name assigned twice keeps only its last value as the output.
    std::erase_if(p_.outputs, [&](const ir::OutputDecl& o) {
        if (o.name != target) return false;
        output_nodes_.erase(o.node);
        return true;
    });
    p_.outputs.push_back(ir::OutputDecl{target, n, alias});
    output_nodes_.insert(n);
    // An assigned name is an array, typed like a NumPy 0-d array even when its value was a
    // literal: `t = 2; i8 + t` is int64 in one program as in two statements of the REPL.
    locals_[target] = Val{n, Weak::None};
    if (last) p_.result = n;
}

// The bound array an assignment of `v` to `target` writes into, or null when it binds the
// name to a new array. An array bound by the caller (or written by an earlier statement of
// this program) is written when the value has its dtype and shape, or whatever the value
// when the binding is strict (the value is then cast and broadcast into it, or refused).
const Binding* Lowerer::in_place_target(const std::string& target, const Val& v) const {
    const Binding* b = nullptr;
    if (!locals_.count(target)) b = lookup_ ? lookup_(target) : nullptr;
    else if (auto it = alias_binding_.find(target); it != alias_binding_.end()) b = it->second;
    if (!b || b->kind != Binding::Kind::Array) return nullptr;
    if (b->strict) return b;
    return dt(v) == b->dtype && shape(v) == b->shape ? b : nullptr;
}

std::int32_t Lowerer::input_slot_for(const std::string& name, const Binding& b) {
    auto [it, inserted] = input_slot_.try_emplace(name, -1);
    if (inserted) {
        it->second = static_cast<std::int32_t>(p_.inputs.size());
        p_.inputs.push_back(
            ir::InputDecl{name, b.dtype, b.shape, b.strides, false, 0, b.itemsize ? b.itemsize : itemsize(b.dtype)});
    }
    return it->second;
}

}  // namespace jit::dsl::lowering
