// jitexpr — lowering, subscripts with constant bounds: views of inputs and of the nodes under them
// (the class: dsl/lower/lowerer.hpp).
#include "dsl/lower/lowerer.hpp"

#include <algorithm>

namespace jit::dsl::lowering {

// The constant integer an index part must be (folded as Python folds literals).
std::int64_t Lowerer::index_constant(const Expr& e, bool in_slice) {
    if (!folder_.is_literal(e)) {
        const Val v = expr(e);
        if (is_bool(dt(v)) && !in_slice)
            throw ValueError(
                "a boolean mask must be the only index (b[m]); with other indices (b[m, 0], b[:, m]) "
                "it is not supported",
                text_, e.span);
        throw ValueError(fmt::format("{} must be a constant integer: jitexpr indexes with constant bounds "
                                     "(integer-array indexing is not supported)",
                                     in_slice ? "a slice bound" : "an index"),
                         text_, e.span);
    }
    const Folded f = folder_.fold(e);
    if (f.kind == Folded::Kind::Bool && !in_slice)
        throw ValueError("a boolean scalar index (a[True]) is not supported", text_, e.span);
    if (f.kind != Folded::Kind::Int && f.kind != Folded::Kind::Bool && in_slice)
        type_error("slice indices must be integers or None", e.span);
    if (f.kind != Folded::Kind::Int && f.kind != Folded::Kind::Bool)
        throw IndexError("only integers, slices (':'), ellipsis ('...'), None and boolean arrays are valid indices",
                         text_, e.span);
    constexpr std::int64_t kBig = std::numeric_limits<std::int64_t>::max();
    if (f.big) return f.digits[0] == '-' ? -kBig : kBig;  // past every axis: clipped, or out of bounds
    if (f.kind == Folded::Kind::Bool) return f.value.b ? 1 : 0;
    if (f.value.dtype == DType::UInt64) return kBig;
    return f.value.i;
}

Val Lowerer::subscript(const Expr& e) {
    const Val base = expr(*e.operands.at(0));
    if (base.weak != Weak::None) {
        // NumPy computes the index before it indexes: an error of the index itself comes first.
        for (std::size_t k = 1; k < e.operands.size(); ++k)
            if (const Expr& x = *e.operands[k]; !is_none(x) && !folder_.is_literal(x)) (void)expr(x);
        type_error("a scalar cannot be indexed (only arrays are)", e.operands[0]->span);
    }
    if (e.index.size() == 1 && e.index[0].kind == syntax::IndexItem::Kind::Index) {
        const Expr& x = *e.operands.at(static_cast<std::size_t>(e.index[0].start));
        if (!is_none(x) && !folder_.is_literal(x)) {
            const Val m = expr(x);
            if (is_bool(dt(m))) return mask_select(base, m, e, x);
        }
    }
    // A boolean-mask selection is indexed along its other axes only (c[m][:, 0] is c[:, 0][m]):
    // its first axis, whose length the data decides, stays whole.
    Shape sel_full, sel_shape;
    if (base.selected()) {
        sel_full = broadcast(shape(base), node(base.mask).shape, e.span);
        sel_shape.assign(1, 1);
        for (std::size_t d = 0; d < sel_full.size(); ++d) {
            if (static_cast<std::int32_t>(d) < base.mask_axes) sel_shape[0] *= sel_full[d];
            else sel_shape.push_back(sel_full[d]);
        }
        const syntax::IndexItem& first = e.index.front();
        auto omitted = [&](std::int32_t k) { return k < 0 || is_none(*e.operands[static_cast<std::size_t>(k)]); };
        const bool whole = (first.kind == syntax::IndexItem::Kind::Slice && omitted(first.start) &&
                            omitted(first.stop) && omitted(first.step)) ||
                           (first.kind == syntax::IndexItem::Kind::Ellipsis &&
                            count_consumed(e) < static_cast<std::int64_t>(sel_shape.size()));
        if (!whole)
            throw ValueError(
                "a boolean-mask selection can be indexed along its other axes only (c[m][:, 0]): its first axis "
                "has the length the data decides (index the array and its mask before selecting: b[1:][m[1:]])",
                text_, e.span);
    }
    const Shape& in = base.selected() ? sel_shape : shape(base);
    const auto nd = static_cast<std::int64_t>(in.size());
    // The items: how many axes they consume, and a single ellipsis.
    std::int64_t consumed = 0;
    const syntax::IndexItem* ellipsis = nullptr;
    for (const syntax::IndexItem& it : e.index) {
        if (it.kind == syntax::IndexItem::Kind::Ellipsis) {
            if (ellipsis) throw IndexError("an index can only have a single ellipsis ('...')", text_, it.span);
            ellipsis = &it;
        } else if (!(it.kind == syntax::IndexItem::Kind::Index &&
                     is_none(*e.operands[static_cast<std::size_t>(it.start)]))) {
            if (++consumed > nd)
                throw IndexError(fmt::format("too many indices for array: array is {}-dimensional, but {} were indexed",
                                             nd, count_consumed(e)),
                                 text_, it.span);
        }
    }
    View v;
    v.axes.resize(static_cast<std::size_t>(nd));
    std::int64_t axis = 0;
    auto full = [&] {
        const std::int64_t n = in[static_cast<std::size_t>(axis)];
        v.axes[static_cast<std::size_t>(axis++)] = ViewAxis{0, 1, static_cast<std::int32_t>(v.out.size())};
        v.out.push_back(n);
    };
    for (const syntax::IndexItem& it : e.index) {
        const auto part = [&](std::int32_t k) -> const Expr* {
            return k < 0 ? nullptr : e.operands[static_cast<std::size_t>(k)].get();
        };
        if (it.kind == syntax::IndexItem::Kind::Ellipsis) {
            for (std::int64_t k = 0; k < nd - consumed; ++k) full();
            continue;
        }
        if (it.kind == syntax::IndexItem::Kind::Index) {
            const Expr& x = *part(it.start);
            if (is_none(x)) {
                v.out.push_back(1);  // a new axis of length 1
                continue;
            }
            const std::int64_t n = in[static_cast<std::size_t>(axis)];
            std::int64_t i = index_constant(x, false);
            if (i < -n || i >= n)
                throw IndexError(fmt::format("index {} is out of bounds for axis {} with size {}",
                                             i == std::numeric_limits<std::int64_t>::max() ||
                                                     i == -std::numeric_limits<std::int64_t>::max()
                                                 ? std::string(text_.substr(x.span.begin, x.span.end - x.span.begin))
                                                 : std::to_string(i),
                                             axis, n),
                                 text_, x.span);
            if (i < 0) i += n;
            v.axes[static_cast<std::size_t>(axis++)] = ViewAxis{i, 1, -1};
            continue;
        }
        // start:stop:step as Python's slice.indices(n) reads it.
        const std::int64_t n = in[static_cast<std::size_t>(axis)];
        std::int64_t step = 1;
        if (const Expr* s = part(it.step)) {
            if (!is_none(*s)) step = index_constant(*s, true);
            if (step == 0) throw ValueError("slice step cannot be zero", text_, s->span);
            step = std::max(step, -std::numeric_limits<std::int64_t>::max());  // -step stays an int64
        }
        auto bound = [&](std::int32_t k, std::int64_t dflt) {
            const Expr* b = part(k);
            if (!b || is_none(*b)) return dflt;
            std::int64_t x = index_constant(*b, true);
            if (x < 0) {
                x = x < -n ? (step < 0 ? -1 : 0) : x + n;
            } else if (x >= n) {
                x = step < 0 ? n - 1 : n;
            }
            return x;
        };
        const std::int64_t start = bound(it.start, step < 0 ? n - 1 : 0);
        const std::int64_t stop = bound(it.stop, step < 0 ? -1 : n);
        std::int64_t count = 0;
        if (step > 0 && stop > start) count = (stop - start - 1) / step + 1;
        if (step < 0 && start > stop) count = (start - stop - 1) / (-step) + 1;
        v.axes[static_cast<std::size_t>(axis++)] =
            ViewAxis{count > 0 ? start : 0, step, static_cast<std::int32_t>(v.out.size())};
        v.out.push_back(count);
    }
    while (axis < nd) full();
    if (static_cast<int>(v.out.size()) > kMaxDims)
        throw ShapeError(fmt::format("more than {} dimensions", kMaxDims), text_, e.span);
    view_memo_.clear();
    if (base.selected()) return selection_view(base, sel_full, v, e.span);
    return Val{view_of(base.node, v, e.span), Weak::None};
}

// The view `v` of an operand of shape `a`, read by a node of shape `s` under view `v`:
// the operand's broadcast axes stay of length 1 (and read position 0).
Lowerer::View Lowerer::operand_view(const View& v, const Shape& s, const Shape& a) {
    View r;
    r.out.assign(v.out.size(), 1);
    const std::size_t lead = s.size() - a.size();
    for (std::size_t i = 0; i < a.size(); ++i) {
        ViewAxis x = v.axes[lead + i];
        if (a[i] != s[lead + i]) x = ViewAxis{0, 0, x.out};  // broadcast: always position 0
        else if (x.out >= 0) r.out[static_cast<std::size_t>(x.out)] = v.out[static_cast<std::size_t>(x.out)];
        r.axes.push_back(x);
    }
    return r;
}

bool Lowerer::identity(const View& v, const Shape& s) {
    if (v.out != s) return false;
    for (std::size_t d = 0; d < v.axes.size(); ++d)
        if (v.axes[d].start != 0 || v.axes[d].step != 1 || v.axes[d].out != static_cast<std::int32_t>(d)) return false;
    return true;
}

// The node computing `n` read through view `v` (a new node; `n` itself when v is the identity).
ir::NodeId Lowerer::view_of(ir::NodeId n, const View& v, SourceSpan span) {
    const Node src = node(n);
    if (identity(v, src.shape)) return n;
    if (is_string(src.dtype) && (src.kind != NodeKind::Input || src.shape.empty()))
        type_error(fmt::format("indexing {} strings ({}) is not supported: index a string array (s[1:], s[m]) and "
                               "compare the result or call a string function on it",
                               src.kind == NodeKind::Const ? "a literal's" : "0-d", dtype_name(src.dtype)),
                   span);
    std::string key = std::to_string(n.value());
    for (auto x : v.out) key += fmt::format(",{}", x);
    for (const ViewAxis& x : v.axes) key += fmt::format(";{},{},{}", x.start, x.step, x.out);
    if (auto it = view_memo_.find(key); it != view_memo_.end()) return it->second;
    ir::NodeId r;
    if (src.shape.empty()) {
        // A 0-d value under new axes: broadcast by a cast to the result's shape.
        Node c;
        c.kind = NodeKind::Cast;
        c.dtype = src.dtype;
        c.shape = v.out;
        c.args[0] = n;
        c.nargs = 1;
        c.span = span;
        r = add(std::move(c));
    } else if (src.kind == NodeKind::Input) {
        r = view_input(src, v, span);
    } else if (src.kind == NodeKind::Op || src.kind == NodeKind::Cast) {
        Node m = src;
        m.shape = v.out;
        for (int k = 0; k < src.nargs; ++k) {
            const ir::NodeId a = src.args[k];
            const Shape& as = node(a).shape;
            m.args[k] = as.empty() ? a : view_of(a, operand_view(v, src.shape, as), span);
        }
        r = add(std::move(m));
    } else if (src.kind == NodeKind::Reduce && src.axis >= 0 &&
               src.shape.size() + 1 == node(src.args[0]).shape.size()) {  // not a keepdims result
        // The reduced axis stays whole, as a last axis of the operand's view.
        const ir::NodeId a = src.args[0];
        const Shape& as = node(a).shape;
        View w;
        w.out = v.out;
        const auto reduced = static_cast<std::int32_t>(w.out.size());
        w.out.push_back(as[static_cast<std::size_t>(src.axis)]);
        for (std::size_t d = 0, k = 0; d < as.size(); ++d)
            w.axes.push_back(static_cast<std::int32_t>(d) == src.axis ? ViewAxis{0, 1, reduced} : v.axes[k++]);
        Node m = src;
        m.shape = v.out;
        m.axis = reduced;
        m.args[0] = view_of(a, w, span);
        r = add(std::move(m));
    } else if (src.kind == NodeKind::Scan) {
        r = view_of_scan(n, src, v, span);
    } else {
        throw ValueError("this expression cannot be indexed (index the arrays it is computed from)", text_, span);
    }
    view_memo_.emplace(std::move(key), r);
    return r;
}

// A view of a scan that keeps the scanned axis from its start, in order (the axis whole, or
// a prefix: cumsum(a)[:k] is cumsum(a[:k])): the same scan of the operand's view, the same
// values bit for bit. Any other view of the scanned axis would read the running values at
// other positions, which only the scan's stored result holds.
ir::NodeId Lowerer::view_of_scan(ir::NodeId n, const Node& src, const View& v, SourceSpan span) {
    if (shape_size(v.out) == 0) {
        // A view of no element reads no running value (a selection by a mask axis of no
        // element: cumsum(1)[zeros(0) > 1]): a zero of the scan's dtype broadcast to it.
        Node c;
        c.kind = NodeKind::Cast;
        c.dtype = src.dtype;
        c.shape = v.out;
        c.args[0] = constant(ir::Value::of_int(0).cast(src.dtype), span);
        c.nargs = 1;
        c.span = span;
        return add(std::move(c));
    }
    if (shape_size(src.shape) == 1 && v.out.size() >= src.shape.size() &&
        std::all_of(v.axes.begin(), v.axes.end(), [](const ViewAxis& x) { return x.start == 0; })) {
        // A scan of one element (cumsum(2.5), a scan of an axis of one) read at that element,
        // as a broadcast of it reads it ((cumsum(z) * v[None, :])[m]): the scan's one running
        // value, spread to the view's shape (of no fewer axes: a broadcast adds axes only).
        Node c;
        c.kind = NodeKind::Cast;
        c.dtype = src.dtype;
        c.shape = v.out;
        c.args[0] = n;
        c.nargs = 1;
        c.span = span;
        return add(std::move(c));
    }
    const ir::NodeId a = src.args[0];
    const Shape& as = node(a).shape;
    const bool flat_of_many = src.axis < 0 && as.size() != 1;  // a 1-d result of a 0-d or n-d operand
    const std::size_t sa = src.axis < 0 ? 0 : static_cast<std::size_t>(src.axis);
    const ViewAxis& x = v.axes.at(sa);
    if (flat_of_many || x.out < 0 || x.start != 0 || x.step != 1)
        throw ValueError(
            std::string("a scan's result can be indexed along its scanned axis only by a prefix slice ([:k], "
                        "the scan of the prefix): the running values at other positions exist only once the "
                        "whole scan is stored"),
            text_, span);
    Node m = src;
    m.shape = v.out;
    m.args[0] = view_of(a, v, span);
    m.axis = v.out.size() <= 1 ? -1 : x.out;
    return add(std::move(m));
}

// A view of an input: the same bound array at another offset, shape and strides.
ir::NodeId Lowerer::view_input(const Node& src, const View& v, SourceSpan span) {
    const ir::InputDecl d = p_.inputs[static_cast<std::size_t>(src.slot)];
    const Strides st = d.strides.size() == d.shape.size() ? d.strides : contiguous_strides(d.shape);
    ir::InputDecl w;
    w.name = d.name;
    w.dtype = d.dtype;
    w.itemsize = d.itemsize;
    w.shape = v.out;
    w.strides.assign(v.out.size(), 0);
    w.view = true;
    std::int64_t offset = d.offset;
    for (std::size_t a = 0; a < v.axes.size(); ++a) {
        offset += v.axes[a].start * st[a];
        if (v.axes[a].out >= 0) w.strides[static_cast<std::size_t>(v.axes[a].out)] = v.axes[a].step * st[a];
    }
    w.offset = shape_size(v.out) == 0 ? 0 : offset;
    std::string key = fmt::format("{}@{}", w.name, w.offset);
    for (std::size_t k = 0; k < w.shape.size(); ++k) key += fmt::format(",{}:{}", w.shape[k], w.strides[k]);
    if (auto it = view_inputs_.find(key); it != view_inputs_.end()) return it->second;
    Node m;
    m.kind = NodeKind::Input;
    m.dtype = d.dtype;
    m.shape = v.out;
    m.slot = static_cast<std::int32_t>(p_.inputs.size());
    m.span = span;
    p_.inputs.push_back(std::move(w));
    const ir::NodeId r = add(std::move(m));
    view_inputs_.emplace(std::move(key), r);
    return r;
}

}  // namespace jit::dsl::lowering
