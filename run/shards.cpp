// jitexpr — how a program runs over row blocks on several devices (see shards.hpp).
#include "run/shards.hpp"

#include "backend/cpu/combine.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

namespace jit::run::shards {

namespace {

void need(bool ok, const std::string& what) {
    if (!ok) throw ArgumentError(what);
}

Shape tail(const Shape& s) { return Shape(s.begin() + 1, s.end()); }

// The reduction named `function` (a spelling of the op table's, as jit::outline reports it).
std::optional<ir::Op> reduction_named(std::string_view function) {
    for (const ir::OpInfo& i : ir::op_table())
        if (i.kind == ir::OpKind::Reduction && ir::spelling(i.op) == function) return i.op;
    return std::nullopt;
}

}  // namespace

Layout layout(std::span<const Input> inputs, Backend backend, std::span<const int> devices) {
    Layout l;
    std::string first_split;
    for (const Input& in : inputs) {
        const std::string& name = in.name;
        need(in.kind != Input::Kind::Whole,
             fmt::format("'{}' is one whole array, not on the shards' devices: pass Sharded::replicate(...) or "
                         "Sharded::split(...) of it (jitexpr copies between devices only when asked)",
                         name));
        const std::span<const Array> parts = in.parts;
        for (const Array& a : parts)
            if (a.backend() != backend)
                throw DeviceMismatchError(
                    fmt::format("a shard of '{}' is on {} but this sharded runtime evaluates on {}", name, a.place(),
                                backend_name(backend)));
        if (l.k == 0) {
            l.k = parts.size();
            for (const Array& a : parts) l.devices.push_back(a.device());
        }
        need(parts.size() == l.k, fmt::format("'{}' has {} shards but another input has {}", name, parts.size(), l.k));
        for (std::size_t i = 0; i < l.k; ++i)
            if (parts[i].device() != l.devices[i])
                throw DeviceMismatchError(
                    fmt::format("shard {} of '{}' is on {} but shard {} of another input is on "
                                "device {}: every input's shard i must be on one device",
                                i, name, parts[i].place(), i, l.devices[i]));
        if (in.kind == Input::Kind::Split) {
            l.split_names.insert(name);
            std::vector<std::int64_t> r;
            for (const Array& a : parts) r.push_back(a.shape()[0]);
            if (first_split.empty()) {
                first_split = name;
                l.rows = r;
            }
            need(r == l.rows,
                 fmt::format("'{}' and '{}' are split into blocks of different row counts", name, first_split));
        }
    }
    need(l.k > 0, "sharded evaluation needs at least one Sharded input");
    for (auto r : l.rows) l.total_rows += r;
    for (int d : l.devices)
        need(std::find(devices.begin(), devices.end(), d) != devices.end(),
             fmt::format("a shard is on device {}, which is not one of this runtime's devices", d));
    return l;
}

Sharding plan(const Request& r) {
    const Layout& layout = r.layout;
    const std::size_t k = layout.k;
    Sharding s;
    s.layout = layout;
    std::set<std::string, std::less<>> split_dependent(layout.split_names.begin(), layout.split_names.end());
    std::set<std::string, std::less<>> combined, assigned_once;
    for (std::size_t j = 0; j < r.statements.size(); ++j) {
        const Statement& st = r.statements[j];
        need(!st.several_targets,
             fmt::format("'{}' assigns several names; sharded evaluation takes one name a statement (assign the "
                         "results of the function in statements of their own)",
                         st.text));
        StatementPlan plan;
        plan.name = st.target;
        plan.statement = j;
        if (plan.name.empty() && j + 1 != r.statements.size()) continue;  // a bare value that is dropped
        need(plan.name.empty() || assigned_once.insert(plan.name).second,
             fmt::format("'{}' is assigned twice; in sharded evaluation each name is assigned once", plan.name));
        const std::string& value = st.value;
        const std::string& what = plan.name.empty() ? value : plan.name;
        bool reads_split = false;
        for (const std::string& n : st.reads) {
            need(!combined.count(n), fmt::format("'{}' reads '{}', a reduction combined across the devices; evaluate "
                                                 "what uses it as a second program",
                                                 what, n));
            reads_split = reads_split || split_dependent.count(n) > 0;
        }
        // A slice of rows on each shard is not a slice of the whole (a[::-1] would reverse each block).
        need(!reads_split || !st.slices,
             fmt::format("'{}' indexes or slices an array (a[...]); sharded evaluation over split inputs does "
                         "not take slices: evaluate it as a program of its own",
                         what));
        // A running sum over the rows of one shard is not the running sum over all of them.
        need(!reads_split || !st.scans,
             fmt::format("'{}' has a scan (cumsum, cumprod, ...); sharded evaluation over split inputs does "
                         "not take scans: evaluate it as a program of its own",
                         what));
        need(st.whole.has_value(), "sharded evaluation: the checker did not report a statement's value");
        const Value& w = *st.whole;
        bool rows_follow = w.shape.size() >= 1 && w.shape[0] == layout.total_rows;
        bool same_everywhere = true;
        for (std::size_t i = 0; i < k; ++i) {
            const std::optional<Value>& v = i < st.per_shard.size() ? st.per_shard[i] : std::nullopt;
            rows_follow = rows_follow && v && v->shape.size() == w.shape.size() && v->shape[0] == layout.rows[i] &&
                          tail(v->shape) == tail(w.shape);
            same_everywhere = same_everywhere && v && v->shape == w.shape;
        }
        if (!reads_split) {
            plan.out = StatementPlan::Out::Replicated;
        } else if (st.reductions.empty() || (k > 1 && rows_follow && !same_everywhere)) {
            need(rows_follow,
                 fmt::format("'{}' does not keep the rows of the split inputs as its axis 0 ({} for inputs of {} "
                             "rows); split inputs whose axis 0 is the result's axis 0",
                             what, shape_to_string(w.shape), layout.total_rows));
            // A reduction over other axes only keeps the rows: each device's value is its rows' own.
            plan.out = StatementPlan::Out::Split;
        } else {
            const Statement::Reduction& red = st.reductions.front();
            need(st.reductions.size() == 1 && red.whole_value,
                 fmt::format("'{}': a reduction over the split rows is combined across devices only when it is the "
                             "whole value of a statement (s = sum(a * b)); make it a statement of its own",
                             value));
            const std::optional<ir::Op> op = reduction_named(red.function);
            need(op && cpu::can_combine(*op, w.dtype),
                 fmt::format("'{}': {} over the split rows is not combined across devices (sum, prod, min, max, any, "
                             "all and mean are); gather the array first",
                             value, red.function));
            need(same_everywhere || k == 1,
                 fmt::format("'{}': the value's shape depends on the shard ({}), so it cannot be combined", value,
                             shape_to_string(w.shape)));
            plan.out = StatementPlan::Out::Whole;
            plan.reduction = *op;
            plan.whole = w;
        }
        if (!plan.name.empty()) {
            if (plan.out != StatementPlan::Out::Replicated) split_dependent.insert(plan.name);
            if (plan.out == StatementPlan::Out::Whole) combined.insert(plan.name);
        }
        s.statements.push_back(std::move(plan));
    }
    if (!r.statements.empty()) s.result = r.statements.back().target;
    return s;
}

std::string describe(const Sharding& s, const Request& r, Backend backend) {
    const Layout& l = s.layout;
    auto device = [&](std::size_t i) {
        return backend == Backend::Cpu ? std::string("the host") : fmt::format("cuda:{}", l.devices[i]);
    };
    std::string out = fmt::format("sharded: {} shard{}", l.k, l.k == 1 ? "" : "s");
    if (!l.rows.empty()) {
        std::vector<std::string> counts;
        for (auto n : l.rows) counts.push_back(std::to_string(n));
        out += fmt::format(" of {} rows ({})", l.total_rows, fmt::join(counts, " + "));
    }
    out += "\n";
    for (std::size_t i = 0; i < l.k; ++i) {
        std::int64_t first = 0;
        for (std::size_t j = 0; j < i && j < l.rows.size(); ++j) first += l.rows[j];
        out += fmt::format("  shard {}: {}", i, device(i));
        if (i < l.rows.size()) out += fmt::format(", rows {} to {}", first, first + l.rows[i] - 1);
        out += "\n";
    }
    if (!l.split_names.empty()) out += fmt::format("  split by rows: {}\n", fmt::join(l.split_names, ", "));
    for (const StatementPlan& p : s.statements) {
        const Statement& st = r.statements.at(p.statement);
        out += fmt::format("  {:>2}: {}   -> ", p.statement + 1, st.text);
        switch (p.out) {
            case StatementPlan::Out::Split: out += "split by rows, each shard its own"; break;
            case StatementPlan::Out::Replicated:
                out += "replicated: reads no split rows, each shard computes it";
                break;
            case StatementPlan::Out::Whole:
                out +=
                    fmt::format("one value {} {}: {} of {} partials, combined on the host", dtype_name(p.whole.dtype),
                                shape_to_string(p.whole.shape), ir::spelling(p.reduction), l.k);
                break;
        }
        out += "\n";
    }
    return out;
}

}  // namespace jit::run::shards
