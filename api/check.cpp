// jit::check and jit::outline (include/jit/check.hpp): the parser and the checker of
// Runtime::run, stopped before anything is emitted, compiled or run.
#include <jit/check.hpp>

#include "api/checked.hpp"

#include "core/stack.hpp"
#include "dsl/ir.hpp"
#include "dsl/literal.hpp"
#include "dsl/lower.hpp"
#include "dsl/plan.hpp"
#include "dsl/rows.hpp"
#include "dsl/syntax.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <utility>

namespace jit {

namespace {

bool named(const ir::OpInfo& i, std::string_view name) {
    std::string_view names = i.names;
    for (std::size_t pos = 0; pos <= names.size();) {
        std::size_t bar = names.find('|', pos);
        if (bar == std::string_view::npos) bar = names.size();
        if (names.substr(pos, bar - pos) == name) return true;
        pos = bar + 1;
    }
    return false;
}

// The op-table entry for a call of `name` with `nargs` arguments that is a reduction, if any:
// as lowering picks it, a reduction unless a function of that name takes exactly `nargs`
// (max(x, y) is the element-wise maximum; sum(x, 1) the sum along axis 1).
const ir::OpInfo* reduction_named(std::string_view name, std::size_t nargs) {
    if (nargs == 0) return nullptr;
    for (const ir::OpInfo& i : ir::op_table())
        if (i.kind != ir::OpKind::Reduction && static_cast<std::size_t>(i.arity) == nargs && named(i, name))
            return nullptr;
    for (const ir::OpInfo& i : ir::op_table())
        if (i.kind == ir::OpKind::Reduction && !i.names.empty() && named(i, name)) return &i;
    return nullptr;
}

bool is_none(const syntax::Expr& x) { return x.kind == syntax::ExprKind::Name && x.text == "None"; }

// An index part folded as lowering folds it (dsl/lower/indexing.cpp, index_constant), or none where it is
// not a constant integer (a bool literal is 0 or 1).
std::optional<std::int64_t> folded_index(const dsl::LiteralFolder& folder, const syntax::Expr& x) {
    if (!folder.is_literal(x)) return std::nullopt;
    const dsl::Folded f = folder.fold(x);
    constexpr std::int64_t kBig = std::numeric_limits<std::int64_t>::max();
    if (f.kind == dsl::Folded::Kind::Bool) return f.value.b ? 1 : 0;
    if (f.kind != dsl::Folded::Kind::Int) return std::nullopt;
    if (f.big) return f.digits[0] == '-' ? -kBig : kBig;
    if (f.value.dtype == DType::UInt64) return kBig;
    return f.value.i;
}

OutlineSubscript subscript_of(std::string_view text, const syntax::Expr& e, int statement,
                              const dsl::LiteralFolder& folder) {
    OutlineSubscript s;
    s.statement = statement;
    s.span = e.span;
    s.base = e.operands.at(0)->span;
    // From the bracket: only closing parentheses, blanks and comments come between the base and it.
    std::size_t open = s.base.end;
    while (open < e.span.end && text[open] != '[') {
        if (text[open] == '#') {
            while (open < e.span.end && text[open] != '\n') ++open;
        } else {
            ++open;
        }
    }
    s.index = SourceSpan{open < e.span.end ? static_cast<std::uint32_t>(open) : s.base.end, e.span.end};
    const auto part = [&](std::int32_t k) -> const syntax::Expr* {
        return k < 0 ? nullptr : e.operands.at(static_cast<std::size_t>(k)).get();
    };
    for (const syntax::IndexItem& it : e.index) {
        OutlineIndexItem o;
        o.span = it.span;
        if (it.kind == syntax::IndexItem::Kind::Ellipsis) {
            o.kind = OutlineIndexItem::Kind::Ellipsis;
        } else if (it.kind == syntax::IndexItem::Kind::Index) {
            const syntax::Expr& x = *part(it.start);
            const std::optional<std::int64_t> v = is_none(x) ? std::nullopt : folded_index(folder, x);
            o.kind = is_none(x) ? OutlineIndexItem::Kind::NewAxis
                     : v        ? OutlineIndexItem::Kind::Integer
                                : OutlineIndexItem::Kind::Array;
            o.value = v.value_or(0);
        } else {
            o.kind = OutlineIndexItem::Kind::Slice;
            auto bound = [&](std::int32_t k, std::optional<std::int64_t>& out) {
                const syntax::Expr* b = part(k);
                if (!b || is_none(*b)) return;
                out = folded_index(folder, *b);
                if (!out) o.constant = false;
            };
            bound(it.start, o.start);
            bound(it.stop, o.stop);
            bound(it.step, o.step);
        }
        s.items.push_back(std::move(o));
    }
    return s;
}

void collect_subscripts(std::string_view text, const syntax::Expr& e, int statement, const dsl::LiteralFolder& folder,
                        std::vector<OutlineSubscript>& out) {
    if (e.kind == syntax::ExprKind::Subscript) out.push_back(subscript_of(text, e, statement, folder));
    for (const auto& o : e.operands)
        if (o) collect_subscripts(text, *o, statement, folder, out);
    for (const auto& k : e.keywords)
        if (k.value) collect_subscripts(text, *k.value, statement, folder, out);
}

void collect(const syntax::Expr& e, int statement, std::vector<OutlineReduction>& out) {
    if (e.kind == syntax::ExprKind::Call) {
        if (const ir::OpInfo* r = reduction_named(e.text, e.operands.size())) {
            OutlineReduction red;
            red.function = std::string(ir::spelling(r->op));
            red.statement = statement;
            red.span = e.span;
            red.operand = e.operands.at(0)->span;
            // Positional arguments after the operand are listed under their keywords' names.
            static constexpr const char* kAverage[] = {"axis", "weights"};
            static constexpr const char* kQuantile[] = {"q", "axis"};
            const bool q = r->op == ir::Op::Percentile || r->op == ir::Op::Quantile || r->op == ir::Op::NanPercentile ||
                           r->op == ir::Op::NanQuantile;
            for (std::size_t a = 1; a < e.operands.size() && a <= 2; ++a)
                if (q) red.keywords.emplace_back(kQuantile[a - 1], e.operands[a]->span);
                else if (a == 1 || r->op == ir::Op::Average)
                    red.keywords.emplace_back(kAverage[a - 1], e.operands[a]->span);
            for (const syntax::Keyword& k : e.keywords)
                red.keywords.emplace_back(k.name, k.value ? k.value->span : k.name_span);
            out.push_back(std::move(red));
        }
    }
    for (const auto& o : e.operands)
        if (o) collect(*o, statement, out);
    for (const auto& k : e.keywords)
        if (k.value) collect(*k.value, statement, out);
}

CheckedRows rows_of(const ir::Program& p) {
    const dsl::RowSplit r = dsl::split_rows(p);
    CheckedRows out;
    out.why_not = r.first_refusal();
    out.splits = out.why_not.empty();
    for (std::size_t i = 0; i < r.inputs.size(); ++i)
        out.inputs.push_back({p.inputs[i].name, r.inputs[i].chunked ? CheckedRows::How::Rows : CheckedRows::How::Whole,
                              r.inputs[i].row_bytes});
    for (std::size_t o = 0; o < r.outputs.size(); ++o) {
        const dsl::OutputRows& orow = r.outputs[o];
        CheckedRows::Output c;
        c.name = p.outputs[o].name;
        switch (orow.how) {
            case dsl::OutputRows::How::Rows: c.how = CheckedRows::How::Rows; break;
            case dsl::OutputRows::How::Combine:
                c.how = CheckedRows::How::Combine;
                c.reduction = std::string(ir::spelling(orow.reduction));
                break;
            case dsl::OutputRows::How::Refused:
                c.how = CheckedRows::How::Refused;
                c.why = orow.why;
                break;
        }
        out.outputs.push_back(std::move(c));
    }
    return out;
}

CheckedPlan check_here(std::string_view text, const Specs& names);
Outline outline_here(std::string_view text);

}  // namespace

// The parser, the lowering and collect() recurse once per nesting level: on a stack of known
// size, whatever the caller's (core/stack.hpp).
CheckedProgram check(std::string_view text, const Specs& names) { return check_planned(text, names).checked; }

CheckedPlan check_planned(std::string_view text, const Specs& names) {
    return core::with_stack(core::kFrontStackBytes, [&] { return check_here(text, names); });
}

Outline outline(std::string_view text) {
    return core::with_stack(core::kFrontStackBytes, [&] { return outline_here(text); });
}

namespace {

CheckedPlan check_here(std::string_view text, const Specs& names) {
    const syntax::Module module = syntax::parse(text);
    CheckedPlan planned;
    CheckedProgram& out = planned.checked;
    out.parameters = dsl::parameters(module);
    std::unordered_map<std::string, dsl::Binding> bindings;
    std::vector<std::string> bound;
    for (const auto& [n, spec] : names) {
        dsl::Binding b;
        b.kind = spec.scalar ? dsl::Binding::Kind::Scalar : dsl::Binding::Kind::Array;
        b.dtype = spec.dtype;
        if (!spec.scalar) {
            for (const std::int64_t e : spec.shape)
                if (e < 0) throw ArgumentError("'" + n + "' has a negative extent in its shape");
            b.shape = spec.shape;
            b.strides = contiguous_strides(spec.shape);
            b.itemsize = spec.itemsize;
        }
        bindings.emplace(n, std::move(b));
        bound.push_back(n);
    }
    if (module.statements.empty()) {
        out.rows.why_not = "the program has no output";
        return planned;
    }
    dsl::Bindings db;
    db.lookup = [&](std::string_view name) -> const dsl::Binding* {
        auto it = bindings.find(std::string(name));
        return it == bindings.end() ? nullptr : &it->second;
    };
    db.names = [&bound] { return bound; };
    // The one pipeline every caller takes (dsl::plan), within no backend's limits: the types,
    // shapes and row split of its program.
    ir::Plan plan = dsl::plan(module, text, db, dsl::Limits{});
    const ir::Program& p = planned.program.emplace(std::move(plan.program));
    out.reduces = p.has_reductions();
    out.scans = p.has_scans();
    out.rows = rows_of(p);
    // The dtype each output has for the caller (a date's, not the int64 it is computed in).
    auto dtype_of = [&](ir::NodeId node) {
        for (std::size_t o = 0; o < p.outputs.size(); ++o)
            if (p.outputs[o].node == node) return p.output_dtype(o);
        return p.node(node).dtype;
    };
    for (const ir::OutputDecl& od : p.outputs) {
        if (od.name.empty()) continue;
        const ir::Node& n = p.node(od.node);
        auto it = std::find_if(out.assigned.begin(), out.assigned.end(),
                               [&](const CheckedValue& v) { return v.name == od.name; });
        const CheckedValue v{od.name, dtype_of(od.node), n.shape, n.kind == ir::NodeKind::Compact};
        if (it == out.assigned.end()) out.assigned.push_back(v);
        else *it = v;
    }
    if (p.result.valid()) {
        const ir::Node& n = p.node(p.result);
        std::string name;
        const syntax::Statement& last = module.statements.back();
        if (!last.target.empty()) name = last.more_targets.empty() ? last.target : last.more_targets.back().name;
        out.result = CheckedValue{name, dtype_of(p.result), n.shape, n.kind == ir::NodeKind::Compact};
    }
    return planned;
}

Outline outline_here(std::string_view text) {
    const syntax::Module module = syntax::parse(text);
    // Syntax alone: no binding shadows anything, and no named constant (pi, e) is an index.
    const dsl::LiteralFolder folder(text, [](std::string_view) { return std::optional<double>{}; });
    Outline out;
    for (std::size_t s = 0; s < module.statements.size(); ++s) {
        const syntax::Statement& st = module.statements[s];
        OutlineStatement o;
        o.target = st.target;
        o.span = st.span;
        o.target_span = st.target_span;
        o.value_span = st.value ? st.value->span : st.span;
        for (const syntax::Target& t : st.more_targets) o.more_targets.push_back(t.name);
        out.statements.push_back(std::move(o));
        if (st.value) collect(*st.value, static_cast<int>(s), out.reductions);
        if (st.value) collect_subscripts(text, *st.value, static_cast<int>(s), folder, out.subscripts);
    }
    return out;
}

}  // namespace

}  // namespace jit
