// The language as data (include/jit/language.hpp): the op table and the syntax tree, copied
// into the public types; and what a text names (parameters, targets, a Kernel over them).
#include <jit/jit.hpp>
#include <jit/language.hpp>

#include "core/stack.hpp"
#include "dsl/ir.hpp"
#include "dsl/literal.hpp"
#include "dsl/lower.hpp"
#include "dsl/syntax.hpp"
#include "dsl/tree_walk.hpp"

namespace jit {

const std::vector<FunctionInfo>& functions() {
    static const std::vector<FunctionInfo> table = [] {
        std::vector<FunctionInfo> t;
        for (const ir::OpInfo& i : ir::op_table()) {
            if (i.names.empty() && i.kind == ir::OpKind::Reduction) continue;  // internal (argmin's second pass)
            FunctionInfo f;
            f.kind = i.kind == ir::OpKind::Operator   ? FunctionInfo::Kind::Operator
                     : i.kind == ir::OpKind::Function ? FunctionInfo::Kind::Function
                     : i.kind == ir::OpKind::Result   ? FunctionInfo::Kind::Result
                     : i.kind == ir::OpKind::Scan     ? FunctionInfo::Kind::Scan
                                                      : FunctionInfo::Kind::Reduction;
            f.id = std::string(i.id);
            for (std::string_view names = i.names; !names.empty();) {
                const auto bar = names.find('|');
                f.names.emplace_back(names.substr(0, bar));
                if (bar == std::string_view::npos) break;
                names.remove_prefix(bar + 1);
            }
            f.token = std::string(i.token);
            f.arity = i.arity;
            f.doc = std::string(i.doc);
            t.push_back(std::move(f));
        }
        return t;
    }();
    return table;
}

std::vector<std::string> builtin_names() { return dsl::builtin_names(); }

static_assert(kMaxIdentifierBytes == syntax::kMaxIdentifier);
bool is_variable_name(std::string_view name) { return syntax::is_variable_name(name); }

namespace {
std::optional<LiteralNumber> fold_here(std::string_view text, const std::function<bool(std::string_view)>& shadowed);
}  // namespace

std::optional<LiteralNumber> fold_literal(std::string_view text,
                                          const std::function<bool(std::string_view)>& shadowed) {
    // The folder recurses once per nesting level.
    return core::with_stack(core::kFrontStackBytes, [&] { return fold_here(text, shadowed); });
}

namespace {
std::optional<LiteralNumber> fold_here(std::string_view text, const std::function<bool(std::string_view)>& shadowed) {
    const syntax::Module m = syntax::parse(text);
    if (m.statements.size() != 1 || !m.statements[0].target.empty() || !m.statements[0].value) return std::nullopt;
    const dsl::LiteralFolder folder(text, [&shadowed](std::string_view n) -> std::optional<double> {
        if (shadowed && shadowed(n)) return std::nullopt;
        return dsl::named_constant(n);
    });
    const syntax::Expr& e = *m.statements[0].value;
    if (!folder.is_literal(e)) return std::nullopt;
    const dsl::Folded f = folder.fold(e);
    LiteralNumber r;
    switch (f.kind) {
        case dsl::Folded::Kind::Bool:
            r.kind = LiteralNumber::Kind::Bool;
            r.b = f.value.b;
            break;
        case dsl::Folded::Kind::Float:
            r.kind = LiteralNumber::Kind::Float;
            r.f = f.value.f;
            break;
        case dsl::Folded::Kind::Complex:
            r.kind = LiteralNumber::Kind::Complex;
            r.f = f.value.f;
            r.im = f.value.im;
            break;
        case dsl::Folded::Kind::Int:
            r.kind = LiteralNumber::Kind::Int;
            if (f.big) {
                r.fits_int64 = false;
                r.big = true;
                r.digits = f.digits;
            } else if (f.value.dtype == DType::Int64) {
                r.i = f.value.i;
            } else {
                r.fits_int64 = false;
                r.u = f.value.u;
            }
            break;
    }
    return r;
}
}  // namespace

namespace parsed {

namespace {

ExprPtr copy(const syntax::Expr& e) {
    auto out = std::make_unique<Expr>();
    out->kind = static_cast<ExprKind>(e.kind);
    out->span = e.span;
    out->text = e.text;
    out->name_span = e.name_span;
    out->int_value = e.int_value;
    out->float_value = e.float_value;
    out->bool_value = e.bool_value;
    out->operands.reserve(e.operands.size());
    for (const auto& o : e.operands) out->operands.push_back(copy(*o));
    out->ops.reserve(e.ops.size());
    for (const ir::Op op : e.ops) out->ops.emplace_back(ir::spelling(op));  // the public tree spells them
    out->op_spans = e.op_spans;
    for (const auto& k : e.keywords) out->keywords.push_back(Keyword{k.name, k.name_span, copy(*k.value)});
    for (const auto& i : e.index)
        out->index.push_back(IndexItem{static_cast<IndexItem::Kind>(i.kind), i.span, i.start, i.stop, i.step});
    return out;
}

static_assert(static_cast<int>(ExprKind::Call) == static_cast<int>(syntax::ExprKind::Call));
static_assert(static_cast<int>(ExprKind::Imag) == static_cast<int>(syntax::ExprKind::Imag));
static_assert(static_cast<int>(ExprKind::Subscript) == static_cast<int>(syntax::ExprKind::Subscript));
static_assert(static_cast<int>(IndexItem::Kind::Ellipsis) == static_cast<int>(syntax::IndexItem::Kind::Ellipsis));
static_assert(static_cast<int>(ExprKind::Tuple) == static_cast<int>(syntax::ExprKind::Tuple));
static_assert(static_cast<int>(ExprKind::Str) == static_cast<int>(syntax::ExprKind::Str));
static_assert(static_cast<int>(ExprKind::Bytes) == static_cast<int>(syntax::ExprKind::Bytes));

Module parse_here(std::string_view text);

}  // namespace

Expr::~Expr() { tree::take_apart(*this); }

Module parse(std::string_view text) {
    // The copy recurses once per nesting level, as the parser does.
    return core::with_stack(core::kFrontStackBytes, [&] { return parse_here(text); });
}

namespace {
Module parse_here(std::string_view text) {
    const syntax::Module m = syntax::parse(text);
    Module out;
    out.statements.reserve(m.statements.size());
    for (const auto& s : m.statements) {
        Statement st;
        st.target = s.target;
        st.target_span = s.target_span;
        for (const auto& t : s.more_targets) st.more_targets.push_back(Target{t.name, t.span});
        st.value = s.value ? copy(*s.value) : nullptr;
        st.span = s.span;
        out.statements.push_back(std::move(st));
    }
    return out;
}
}  // namespace

}  // namespace parsed

void with_front_stack(const std::function<void()>& fn) {
    core::with_stack(core::kFrontStackBytes, [&fn] { fn(); });
}

// The parameters and targets of a text, and a Kernel over them (jit/runtime.hpp).
Kernel::Kernel(std::string text, Runtime* runtime) : text_(std::move(text)), runtime_(runtime) {
    params_ = dsl::parameters(syntax::parse(text_));
}

Kernel compile(std::string_view text, Runtime& runtime) { return Kernel(std::string(text), &runtime); }

std::vector<std::string> parameters(std::string_view text) { return dsl::parameters(syntax::parse(text)); }

std::vector<std::string> targets(std::string_view text) { return dsl::targets(syntax::parse(text)); }

}  // namespace jit
