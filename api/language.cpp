// The language as data (include/jit/language.hpp): the op table and the syntax tree, copied
// into the public types.
#include <jit/language.hpp>

#include "dsl/ir.hpp"
#include "dsl/lower.hpp"
#include "dsl/syntax.hpp"

namespace jit {

const std::vector<FunctionInfo>& functions() {
    static const std::vector<FunctionInfo> table = [] {
        std::vector<FunctionInfo> t;
        for (const ir::OpInfo& i : ir::op_table()) {
            FunctionInfo f;
            f.kind = i.kind == ir::OpKind::Operator   ? FunctionInfo::Kind::Operator
                     : i.kind == ir::OpKind::Function ? FunctionInfo::Kind::Function
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
    out->ops = e.ops;
    out->op_spans = e.op_spans;
    for (const auto& k : e.keywords) out->keywords.push_back(Keyword{k.name, k.name_span, copy(*k.value)});
    return out;
}

static_assert(static_cast<int>(ExprKind::Call) == static_cast<int>(syntax::ExprKind::Call));

}  // namespace

Module parse(std::string_view text) {
    const syntax::Module m = syntax::parse(text);
    Module out;
    out.statements.reserve(m.statements.size());
    for (const auto& s : m.statements) {
        Statement st;
        st.target = s.target;
        st.target_span = s.target_span;
        st.value = s.value ? copy(*s.value) : nullptr;
        st.span = s.span;
        out.statements.push_back(std::move(st));
    }
    return out;
}

}  // namespace parsed

}  // namespace jit
