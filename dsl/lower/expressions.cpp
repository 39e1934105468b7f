// jitexpr — lowering, literals, names (with the suggestion for an unknown one) and comparison
// chains (the class: dsl/lower/lowerer.hpp).
#include "dsl/lower/lowerer.hpp"

#include <numbers>

namespace jit::dsl::lowering {

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

}  // namespace

const std::map<std::string_view, double, std::less<>>& named_constants() {
    static const std::map<std::string_view, double, std::less<>> c = {
        {"pi", std::numbers::pi},
        {"e", std::numbers::e},
        {"inf", std::numeric_limits<double>::infinity()},
        {"nan", std::numeric_limits<double>::quiet_NaN()},
    };
    return c;
}

// Functions (and reductions) called `name`, any arity, in table order.
std::span<const ir::OpInfo* const> functions_named(std::string_view name) {
    // Every (spelling, op) pair sorted by spelling, ops of one spelling in table order, and the
    // ops alone in the same order: a name's functions are a run of them. Built once, with two
    // allocations (a map of vectors was 0.16 M instructions of a fresh process's first plan).
    struct Index {
        std::vector<std::string_view> names;
        std::vector<const ir::OpInfo*> ops;
    };
    static const Index index = [] {
        std::vector<std::pair<std::string_view, const ir::OpInfo*>> pairs;
        pairs.reserve(ir::op_table().size() * 2);
        for (const ir::OpInfo& i : ir::op_table())
            for (std::string_view names = i.names; !names.empty();) {
                const std::size_t bar = names.find('|');
                pairs.emplace_back(names.substr(0, bar), &i);
                if (bar == std::string_view::npos) break;
                names.remove_prefix(bar + 1);
            }
        // By spelling, then by place in the table (the entries are one array): table order within
        // a name. (std::sort: stable_sort's temporary buffer comes from the nothrow operator new.)
        std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
            return a.first != b.first ? a.first < b.first : std::less<const ir::OpInfo*>()(a.second, b.second);
        });
        Index x;
        x.names.reserve(pairs.size());
        x.ops.reserve(pairs.size());
        for (const auto& [n, op] : pairs) {
            x.names.push_back(n);
            x.ops.push_back(op);
        }
        return x;
    }();
    const auto [lo, hi] = std::equal_range(index.names.begin(), index.names.end(), name);
    return {index.ops.data() + (lo - index.names.begin()), static_cast<std::size_t>(hi - lo)};
}

// The candidate closest to `name`, if it is close enough to be a likely typo: at most a third of
// the letters differ (at least one may), and not every letter.
std::string closest(const std::string& name, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_d = std::max<std::size_t>(1, name.size() / 3) + 1;
    for (const std::string& c : candidates) {
        const std::size_t d = edit_distance(name, c);
        if (d < best_d && d < std::max(name.size(), c.size())) best_d = d, best = c;
    }
    return best;
}

// A literal-only expression, folded exactly (dsl/literal.hpp), as one weak constant.
Val Lowerer::literal(const Folded& f, SourceSpan span) {
    const ir::NodeId n = constant(f.value, span);
    if (f.big) big_.emplace(n, BigLiteral{f.shown, f.as_float});
    switch (f.kind) {
        case Folded::Kind::Bool: return Val{n, Weak::Bool};
        case Folded::Kind::Int: return Val{n, Weak::Int};
        case Folded::Kind::Float: return Val{n, Weak::Float};
        case Folded::Kind::Complex: return Val{n, Weak::Complex};
    }
    return Val{n, Weak::Int};
}

// The value as a strong array of its own dtype: a literal past every integer dtype cannot
// be one (NumPy would make an object array of 2**64).
Val Lowerer::strong(const Val& v) {
    if (auto big = big_.find(v.node); big != big_.end())
        throw ValueError(fmt::format("integer {} fits no integer dtype ({})", big->second.digits,
                                     big->second.digits[0] == '-' ? "int64 holds down to -9223372036854775808"
                                                                  : "uint64 holds up to 18446744073709551615"),
                         text_, node(v.node).span);
    check_fit(v, node(v.node).dtype);  // an array of its default dtype, int64: the value must fit
    return typed(v);
}

// v typed (not weak), a selection staying one.
Val Lowerer::typed(Val v) {
    v.weak = Weak::None;
    return v;
}

std::optional<double> Lowerer::unshadowed_constant(std::string_view name) const {
    if (locals_.find(name) != locals_.end() || (lookup_ && lookup_(name))) return std::nullopt;
    if (auto c = named_constants().find(name); c != named_constants().end()) return c->second;
    return std::nullopt;
}

Val Lowerer::expr(const Expr& e) {
    if (folder_.is_literal(e)) return literal(folder_.fold(e), e.span);
    switch (e.kind) {
        case ExprKind::Int:
        case ExprKind::Float:
        case ExprKind::Imag:
        case ExprKind::Bool: break;  // literals are folded above
        case ExprKind::Name: return name(e);
        case ExprKind::Unary: {
            const Val a = expr(*e.operands.at(0));
            return unary(e.ops.at(0), a, e.span);
        }
        case ExprKind::Chain: return chain(e);
        case ExprKind::Ternary: {
            const Val c = expr(*e.operands.at(0));
            const Val x = expr(*e.operands.at(1));
            const Val y = expr(*e.operands.at(2));
            return where(c, x, y, e.span);
        }
        case ExprKind::Call: return call(e);
        case ExprKind::Subscript: return subscript(e);
        case ExprKind::Tuple:
            throw TypeError("a tuple is not a value here (only a reduction's axis is one: sum(x, axis=(0, 1)))", text_,
                            e.span);
        case ExprKind::Str:
        case ExprKind::Bytes: return string_literal(e);
    }
    throw InternalError("unknown expression kind");
}

Val Lowerer::name(const Expr& e) {
    if (e.text == "None")
        throw TypeError("None is not a value here (it is only a reduction's axis: sum(x, axis=None))", text_, e.span);
    if (auto it = locals_.find(e.text); it != locals_.end()) return it->second;
    if (const Binding* b = lookup_ ? lookup_(e.text) : nullptr) {
        check_binding(e.text, *b, e.span);
        if (b->kind == Binding::Kind::Array) {
            if (static_cast<int>(b->shape.size()) > kMaxDims)
                throw ShapeError(fmt::format("'{}' has more than {} dimensions", e.text, kMaxDims), text_, e.span);
            auto [it, inserted] = input_slot_.try_emplace(e.text, -1);
            if (inserted) {
                it->second = static_cast<std::int32_t>(p_.inputs.size());
                p_.inputs.push_back(ir::InputDecl{e.text, b->dtype, b->shape, b->strides, false, 0,
                                                  b->itemsize ? b->itemsize : itemsize(b->dtype)});
                Node n;
                n.kind = NodeKind::Input;
                n.dtype = b->dtype;
                n.shape = b->shape;
                n.slot = it->second;
                n.span = e.span;
                input_node_[e.text] = add(std::move(n));
            }
            return Val{input_node_.at(e.text), Weak::None};
        }
        auto [it, inserted] = scalar_slot_.try_emplace(e.text, -1);
        if (inserted) {
            it->second = static_cast<std::int32_t>(p_.scalars.size());
            p_.scalars.push_back(ir::ScalarDecl{e.text, b->dtype, false, {}, {}, e.span});
            Node n;
            n.kind = NodeKind::Scalar;
            n.dtype = b->dtype;
            n.slot = it->second;
            n.span = e.span;
            scalar_node_[e.text] = add(std::move(n));
        }
        return Val{scalar_node_.at(e.text), weak_kind_of(b->dtype)};
    }
    unknown_name(e.text, e.span);
}

void Lowerer::unknown_name(const std::string& name, SourceSpan span) const {
    // Did you mean: the closest known name within a small edit distance.
    std::vector<std::string> candidates = builtin_names();
    for (const auto& [n, v] : locals_) candidates.push_back(n);
    if (bound_)
        for (std::string& n : bound_()) candidates.push_back(std::move(n));
    const std::string best = closest(name, candidates);
    const bool is_fn = !functions_named(name).empty() || dtype_from_name(name);
    std::string msg = is_fn ? fmt::format("'{}' is a function: call it as {}(...)", name, name)
                            : fmt::format("unknown name '{}'", name);
    if (!is_fn && !best.empty()) msg += fmt::format(" (did you mean '{}'?)", best);
    throw NameError(msg, text_, span);
}

Val Lowerer::chain(const Expr& e) {
    const auto& ops = e.ops;
    if (ops.empty()) return expr(*e.operands.at(0));
    auto lit = [&](std::size_t k) { return folder_.is_literal(*e.operands[k]); };
    // Literal runs are computed exactly first, as Python evaluates them: the leading
    // operands of a left-assoc chain (2**8 * 3 + x), the trailing ones of x ** 2 ** 3, and
    // each comparison between two literals.
    if (ir::is_comparison(ops[0])) {
        // a < b < c  ==  (a < b) and (b < c), each operand evaluated once.
        Val left = expr(*e.operands[0]);
        std::optional<Val> acc;
        for (std::size_t k = 0; k < ops.size(); ++k) {
            const Val right = expr(*e.operands[k + 1]);
            const SourceSpan span = join(e.operands[k]->span, e.operands[k + 1]->span);
            Val c = lit(k) && lit(k + 1) ? literal(folder_.fold_chain(e, k, k + 1), span)
                                         : binary(ops[k], left, right, span);
            acc = acc ? binary(Op::And, *acc, c, join(e.operands[0]->span, e.operands[k + 1]->span)) : c;
            left = right;
        }
        return *acc;
    }
    if (ir::is_right_assoc(ops[0])) {  // operands checked left to right (as Python), folded from the right
        std::size_t first = ops.size();
        while (first > 0 && lit(first - 1) && lit(ops.size())) --first;
        std::vector<Val> base;
        for (std::size_t k = 0; k < first; ++k) base.push_back(expr(*e.operands[k]));
        Val acc = first < ops.size() ? literal(folder_.fold_chain(e, first, ops.size()),
                                               join(e.operands[first]->span, e.operands.back()->span))
                                     : expr(*e.operands.back());
        for (std::size_t k = first; k-- > 0;) {
            const SourceSpan sp = join(e.operands[k]->span, e.operands.back()->span);
            acc = ops[k] == Op::Pow ? power(base[k], acc, sp, true) : binary(ops[k], base[k], acc, sp);
        }
        return acc;
    }
    std::size_t run = 0;
    while (run < e.operands.size() && lit(run)) ++run;
    if (run >= 2) {
        const std::size_t last = run - 1;
        Val acc = literal(folder_.fold_chain(e, 0, last), join(e.operands[0]->span, e.operands[last]->span));
        for (std::size_t k = last; k < ops.size(); ++k) {
            const Val right = expr(*e.operands[k + 1]);
            acc = binary(ops[k], acc, right, join(e.operands[0]->span, e.operands[k + 1]->span));
        }
        return acc;
    }
    Val acc = expr(*e.operands[0]);
    for (std::size_t k = 0; k < ops.size(); ++k) {
        const Val right = expr(*e.operands[k + 1]);
        acc = binary(ops[k], acc, right, join(e.operands[0]->span, e.operands[k + 1]->span));
    }
    return acc;
}

}  // namespace jit::dsl::lowering
