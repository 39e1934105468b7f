// jitexpr — lowering, function calls: arity and keyword checks, functions of several results, clip,
// ldexp (the class: dsl/lower/lowerer.hpp).
#include "dsl/lower/lowerer.hpp"

namespace jit::dsl::lowering {

Val Lowerer::call(const Expr& e) {
    std::vector<Val> one = call(e, nullptr);
    return one.front();
}

// A call. With `several` null the call must give one value (a function of several results
// is a TypeError); otherwise it must be a function of several, whose results are returned.
std::vector<Val> Lowerer::call(const Expr& e, const syntax::Statement* several) {
    const std::string& fname = e.text;
    const std::size_t nargs = e.operands.size();
    // dtype casts: float32(x), int64(x), bool(x), ...; complex(re, im) with two arguments
    // is the function of the op table (numexpr's constructor), complex(x) the cast.
    const bool complex_function = fname == "complex" && nargs == 2 && e.keywords.empty();
    // The date functions (dsl/lower/dates.cpp), unless the name is a variable's.
    if ((fname == "datetime64" || fname == "timedelta64" || fname == "isnat") && locals_.count(fname) == 0 &&
        !(lookup_ && lookup_(fname))) {
        if (several) not_several(*several);
        if (fname == "isnat") return {isnat_call(e)};
        return {date_call(e, fname == "datetime64")};
    }
    if (auto t = complex_function ? std::nullopt : dtype_from_name(fname)) {
        if (nargs != 1 || !e.keywords.empty())
            throw TypeError(fmt::format("{}() takes exactly 1 argument ({} given)", fname, nargs), text_, e.span);
        if (locals_.count(fname) == 0 && !(lookup_ && lookup_(fname))) {
            // A literal must fit an integer dtype it is cast to (np.uint8(300) is an error);
            // arrays and host scalars convert with NumPy's casting.
            if (several) not_several(*several);
            Val a = expr(*e.operands[0]);
            const bool literal_int = a.weak == Weak::Int && node(a.node).kind == NodeKind::Const;
            // An expression of host integers is Python's arithmetic before it is converted: its
            // errors (a negative shift count) and its leaving int64 are checked when bound.
            if (a.weak == Weak::Int && !literal_int) check_fit(a, DType::Int64);
            if (a.selected()) {
                const Sel sel = unselect({&a}, e.span);
                return {reselect(Val{cast(Val{a.node, Weak::None}, *t, e.span), Weak::None}, sel)};
            }
            return {Val{cast(Val{a.node, literal_int ? Weak::Int : Weak::None}, *t, e.span), Weak::None}};
        }
    }
    const auto& candidates = functions_named(fname);
    if (candidates.empty()) {
        if (locals_.count(fname) || (lookup_ && lookup_(fname)) || named_constants().count(fname))
            throw NameError(fmt::format("'{}' is not a function", fname), text_, e.name_span);
        const std::string best = closest(fname, builtin_names());
        throw NameError(fmt::format("unknown function '{}'{}", fname,
                                    best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best)),
                        text_, e.name_span);
    }
    const ir::OpInfo* fn = nullptr;
    for (const ir::OpInfo* c : candidates)
        if (static_cast<std::size_t>(c->arity) == nargs && !takes_axis(*c)) fn = c;
    // A reduction or scan takes its axis (and a statistic its other arguments) positionally
    // too; max(x, y) stays the element-wise maximum.
    if (!fn && nargs >= 1)
        for (const ir::OpInfo* c : candidates)
            if (takes_axis(*c)) fn = c;
    if (!fn) {
        std::string arities;
        for (const ir::OpInfo* c : candidates) arities += (arities.empty() ? "" : " or ") + std::to_string(c->arity);
        throw TypeError(
            fmt::format("{}() takes {} argument{} ({} given)", fname, arities, arities == "1" ? "" : "s", nargs), text_,
            e.span);
    }
    if (fn->kind == OpKind::Result && !several) {
        const ir::Results res = ir::results_of(fn->op);
        type_error(fmt::format("{}() gives {} values; assign them to {} names, as in '{}'", fname, res.count, res.count,
                               several_example(e, res.count)),
                   e.span);
    }
    if (several) {
        if (fn->kind != OpKind::Result) not_several(*several);
        const std::size_t want = ir::results_of(fn->op).count, have = several->more_targets.size() + 1;
        if (want != have)
            type_error(fmt::format("{}() gives {} values, but {} names are assigned", fname, want, have),
                       SourceSpan{several->target_span.begin, several->more_targets.back().span.end});
    }
    if (fn->kind == OpKind::Reduction) return {reduction_call(*fn, e)};
    if (fn->kind == OpKind::Scan) return {scan_call(*fn, e)};
    // Keywords: only on reductions and scans.
    if (!e.keywords.empty())
        throw TypeError(fmt::format("{}() got an unexpected keyword argument '{}'", fname, e.keywords[0].name), text_,
                        e.keywords[0].name_span);
    std::vector<Val> args;
    args.reserve(nargs);
    for (const auto& a : e.operands) args.push_back(expr(*a));

    // A ufunc of Python scalars alone makes each an array of its default dtype first
    // (np.power(True, True) is int8, as bool ** bool), and its result is typed.
    // np.clip is the exception: it makes its first operand an array and leaves the bounds
    // Python numbers, so clip(-143, 2**64 - 1, 9) is NumPy's OverflowError, not a float64.
    if (std::all_of(args.begin(), args.end(), [](const Val& v) { return v.weak != Weak::None; }) &&
        fn->op != Op::Where) {
        if (fn->op == Op::Clip) args[0] = strong(args[0]);
        else
            for (Val& a : args) a = strong(a);
    }
    if (fn->kind == OpKind::Result) {
        // Each result is an op of its own over the same operand nodes: one kernel computes them all.
        const ir::Results res = ir::results_of(fn->op);
        std::vector<Val> out;
        for (std::size_t k = res.first; k < res.first + res.count; ++k) {
            const Op op = ir::op_table()[k].op;
            out.push_back(fn->arity == 1 ? unary(op, strong(args[0]), e.span)
                                         : typed(binary(op, args[0], args[1], e.span)));
        }
        return out;
    }
    if (ir::info(fn->op).rule == ir::Rule::Ldexp) return {ldexp(args[0], args[1], e)};
    if (ir::info(fn->op).rule == ir::Rule::Logical && fn->arity == 2) {
        // NumPy's logical_and/or/xor convert a Python int beside an array to a C long
        // (OverflowError past int64, whatever the array's dtype); the operators `and` and
        // `or` take each operand as a bool (docs/language.md).
        for (std::size_t k = 0; k < args.size(); ++k) {
            const Val& v = args[k];
            if (v.weak != Weak::Int) continue;
            const Node& n = node(v.node);
            std::string digits;
            if (auto big = big_.find(v.node); big != big_.end()) digits = big->second.digits;
            else if (n.kind == NodeKind::Const && is_unsigned_int(n.value.dtype) &&
                     n.value.u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                digits = n.value.to_string();
            if (!digits.empty())
                throw ValueError(fmt::format("integer {} is out of bounds for int64 ({}() takes a Python int "
                                             "as a C long, as NumPy does)",
                                             digits, fname),
                                 text_, e.operands[k]->span);
        }
    }
    switch (fn->arity) {
        case 1: return {unary(fn->op, strong(args[0]), e.span)};
        case 2:  // power(): typed
            if (fn->op == Op::Pow) return {typed(power(args[0], args[1], e.span, false))};
            return {typed(binary(fn->op, args[0], args[1], e.span, /*function_form=*/true))};
        default: break;
    }
    if (fn->op == Op::Where) return {where(args[0], args[1], args[2], e.span)};
    // clip(x, lo, hi)
    if (args[0].selected() || args[1].selected() || args[2].selected()) {
        std::vector<Val> plain = args;
        const Sel sel = unselect({&plain[0], &plain[1], &plain[2]}, e.span);
        return {reselect(clip(*fn, plain, e), sel)};
    }
    return {clip(*fn, args, e)};
}

Val Lowerer::clip(const ir::OpInfo& fnr, const std::vector<Val>& args, const Expr& e) {
    if (temporal(args[0]) || temporal(args[1]) || temporal(args[2])) return temporal_clip(args, e);
    const ir::OpInfo* fn = &fnr;
    Weak weak = Weak::None;
    const DType p = promote_all({&args[0], &args[1], &args[2]}, &weak);
    const Typed t = rule(fn->op, p, e.span);
    const ir::NodeId x = cast(args[0], t.operand, e.span), lo = cast(args[1], t.operand, e.span),
                     hi = cast(args[2], t.operand, e.span);
    Shape s = broadcast(broadcast(node(x).shape, node(lo).shape, e.span), node(hi).shape, e.span);
    return Val{op_node(fn->op, t.result, std::move(s), {x, lo, hi}, e.span), Weak::None};  // a ufunc: typed
}

// `a, b = f(x)`, for a message (not the call's own text: a caller may have rewritten parts
// of it, as the CLI does its constructors).
std::string Lowerer::several_example(const Expr& call, std::size_t results) {
    static constexpr std::string_view kNames[] = {"a", "b", "c", "d"};
    std::string names, args;
    for (std::size_t k = 0; k < results; ++k)
        names += fmt::format("{}{}", k ? ", " : "", k < 4 ? std::string(kNames[k]) : fmt::format("r{}", k));
    const std::size_t n = call.operands.size();
    for (std::size_t k = 0; k < n; ++k) args += n == 1 ? std::string("x") : fmt::format("{}x{}", k ? ", " : "", k + 1);
    return fmt::format("{} = {}({})", names, call.text, args);
}

void Lowerer::not_several(const syntax::Statement& st) const {
    type_error(fmt::format("{} names are assigned one value; only a function of several results (divmod, frexp, "
                           "modf) can be assigned to several names",
                           st.more_targets.size() + 1),
               st.value->span);
}

// ldexp(x1, x2): NumPy's loops take a float x1 and an int32 or int64 x2, so x2 is not
// promoted with x1: it must be bool or an integer int64 holds (a Python integer one int32
// holds), and a Python number x1 takes x2's dtype first (ldexp(3, i8) is float16).
Val Lowerer::ldexp(const Val& x, const Val& n, const Expr& e) {
    if (x.selected() || n.selected()) {
        Val x1 = x, n1 = n;
        const Sel sel = unselect({&x1, &n1}, e.span);
        return reselect(ldexp(x1, n1, e), sel);
    }
    const SourceSpan n_span = e.operands.at(1)->span;
    Val xv = x, nv = n;
    if (nv.weak != Weak::None) {
        if (nv.weak != Weak::Int && nv.weak != Weak::Bool)
            type_error(fmt::format("ldexp() takes an integer exponent, not a Python {}",
                                   nv.weak == Weak::Float ? "float" : "complex"),
                       n_span);
        if (nv.weak == Weak::Int) nv = Val{cast(nv, DType::Int32, n_span), Weak::None};
        else nv = Val{cast(nv, DType::Bool, n_span), Weak::None};
    } else if (!(is_integer(dt(nv)) || is_bool(dt(nv))) || dt(nv) == DType::UInt64) {
        type_error(fmt::format("ldexp() takes an integer exponent that int64 holds, not {}", dtype_name(dt(nv))),
                   n_span);
    }
    if (xv.weak != Weak::None) {
        // NumPy's first loop a Python number fits: a Python int or bool takes float16 ('e'),
        // a Python float float64; an int against a bool exponent float64 (NumPy's int64).
        if (xv.weak == Weak::Complex) type_error("ldexp() is not supported for complex", e.operands.at(0)->span);
        const DType t =
            xv.weak == Weak::Float || (xv.weak == Weak::Int && is_bool(dt(nv))) ? DType::Float64 : DType::Float16;
        // An expression of host integers is computed in int64 when the program runs: Python's
        // value must be one (5 << n with n < 0 is Python's ValueError), as wherever it meets a dtype.
        if (xv.weak == Weak::Int) check_fit(xv, DType::Int64);
        xv = Val{cast(Val{xv.node, Weak::None}, t, e.operands.at(0)->span), Weak::None};
    }
    const Typed t = rule(Op::Ldexp, dt(xv), e.span);
    const ir::NodeId a = cast(xv, t.operand, e.span), b = cast(nv, t.operand, e.span);
    Shape s = broadcast(node(a).shape, node(b).shape, e.span);
    return Val{op_node(Op::Ldexp, t.result, std::move(s), {a, b}, e.span), Weak::None};
}

std::int64_t Lowerer::constant_int(const Expr& e) const {
    if (e.kind == ExprKind::Int && !e.int_big && e.int_value <= static_cast<std::uint64_t>(kMaxDims))
        return static_cast<std::int64_t>(e.int_value);
    if (e.kind == ExprKind::Unary && e.ops.at(0) == Op::Neg && e.operands.at(0)->kind == ExprKind::Int &&
        !e.operands[0]->int_big && e.operands[0]->int_value <= static_cast<std::uint64_t>(kMaxDims))
        return -static_cast<std::int64_t>(e.operands[0]->int_value);
    throw ValueError("axis must be a small integer literal, a tuple of them, or None", text_, e.span);
}

}  // namespace jit::dsl::lowering
