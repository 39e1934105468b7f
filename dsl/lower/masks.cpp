// jitexpr — lowering, boolean-mask selections (b[m]): operands unselected and reselected, views of
// them, compaction (the class: dsl/lower/lowerer.hpp).
#include "dsl/lower/lowerer.hpp"

namespace jit::dsl::lowering {

// Whether two nodes compute the same value (the masks of b[a > 0] + c[a > 0] are two nodes).
bool Lowerer::same_value(ir::NodeId a, ir::NodeId b) const {
    if (a == b) return true;
    const Node& x = node(a);
    const Node& y = node(b);
    if (x.kind != y.kind || x.dtype != y.dtype || x.shape != y.shape || x.nargs != y.nargs ||
        (x.slot != y.slot && x.kind != NodeKind::Input) || x.axis != y.axis)
        return false;
    if ((x.kind == NodeKind::Op || x.kind == NodeKind::Reduce) && x.op != y.op) return false;
    if (x.kind == NodeKind::Const && x.value.to_string() != y.value.to_string()) return false;
    if (x.kind == NodeKind::Input && x.slot != y.slot) {  // two slots of one view of one name
        const ir::InputDecl& p = p_.inputs[static_cast<std::size_t>(x.slot)];
        const ir::InputDecl& q = p_.inputs[static_cast<std::size_t>(y.slot)];
        return p.name == q.name && p.dtype == q.dtype && p.shape == q.shape && p.strides == q.strides &&
               p.view == q.view && p.offset == q.offset;
    }
    for (int k = 0; k < x.nargs; ++k)
        if (!same_value(x.args[k], y.args[k])) return false;
    return true;
}

// The operands of an element-wise operation of which some are selections, rewritten to their
// values before selection; returns the mask they share. Another operand must broadcast
// without meeting the selection's first axis, whose length only the data knows: fewer
// dimensions than the selection, or as many with extent 1 first.
Lowerer::Sel Lowerer::unselect(std::initializer_list<Val*> vals, SourceSpan span) {
    Sel sel;
    for (Val* v : vals) {
        if (!v->selected()) continue;
        if (!sel.mask.valid()) {
            sel = Sel{v->mask, v->mask_axes};
        } else if (sel.axes != v->mask_axes || !same_value(sel.mask, v->mask)) {
            throw ValueError(
                "operands selected by different boolean masks: their lengths are known only when the program "
                "runs (select once: (b + c)[m])",
                text_, span);
        }
    }
    const std::size_t rank = 1 + node(sel.mask).shape.size() - static_cast<std::size_t>(sel.axes);
    for (Val* v : vals) {
        if (v->selected()) {
            v->mask = ir::NodeId();
            v->mask_axes = 0;
            continue;
        }
        const Shape& x = shape(*v);
        if (x.size() < rank || (x.size() == rank && x[0] == 1)) continue;
        throw ShapeError(fmt::format("a boolean-mask selection, whose length the data decides, does not broadcast "
                                     "with shape {}",
                                     shape_to_string(x)),
                         text_, span);
    }
    return sel;
}

Val Lowerer::reselect(Val v, const Sel& s) {
    v.mask = s.mask;
    v.mask_axes = s.axes;
    return v;
}

// The view v of a selection (its axis 0 whole) as a view of its values, of shape `full`,
// and of its mask (extent 1 past the mask's axes), still selected by the mask's axes.
Val Lowerer::selection_view(const Val& base, const Shape& full, const View& v, SourceSpan span) {
    const auto k = static_cast<std::size_t>(base.mask_axes);
    View w;
    for (std::size_t d = 0; d < k; ++d) {
        w.axes.push_back(ViewAxis{0, 1, static_cast<std::int32_t>(d)});
        w.out.push_back(full[d]);
    }
    w.out.insert(w.out.end(), v.out.begin() + 1, v.out.end());
    for (std::size_t d = 1; d < v.axes.size(); ++d) {
        ViewAxis x = v.axes[d];
        if (x.out >= 0) x.out += static_cast<std::int32_t>(k) - 1;
        w.axes.push_back(x);
    }
    if (static_cast<int>(w.out.size()) > kMaxDims)
        throw ShapeError(fmt::format("more than {} dimensions", kMaxDims), text_, span);
    const ir::NodeId values = shape(base) == full ? base.node : fresh(base.node, full, span);
    Val r{view_of(values, w, span), Weak::None};
    // The mask's axes past its own are of extent 1 (it broadcasts over them): they stay so,
    // or go where the view indexes them away.
    View mv;
    mv.out = w.out;
    for (std::size_t d = k; d < mv.out.size(); ++d) mv.out[d] = 1;
    for (std::size_t d = 0; d < w.axes.size(); ++d)
        mv.axes.push_back(d < k ? w.axes[d] : ViewAxis{0, 1, w.axes[d].out});
    if (node(base.mask).shape.size() != w.axes.size())
        throw InternalError("lower: a selection's mask of another rank than its values");
    view_memo_.clear();
    r.mask = view_of(base.mask, mv, span);
    r.mask_axes = base.mask_axes;
    return r;
}

// b[m] for a bool array m: NumPy's rules (m's shape is that of b's leading axes), the
// selection kept as a masked value (Val::mask) until it is reduced or stored.
Val Lowerer::mask_select(const Val& base, const Val& m, const Expr& e, const Expr& mx) {
    if (base.selected())
        throw ValueError("a boolean-mask selection cannot be indexed again (combine the masks: b[m1 & m2])", text_,
                         e.span);
    if (m.selected())
        throw ValueError("a mask cannot itself be a boolean-mask selection (combine the masks: b[m1 & m2])", text_,
                         mx.span);
    const Shape ms = shape(m);
    const Shape bs = shape(base);
    if (m.weak != Weak::None || ms.empty())
        throw ValueError("a 0-d boolean index (b[flag]) is not supported: a mask is a bool array", text_, mx.span);
    if (ms.size() > bs.size())
        throw IndexError(fmt::format("too many indices for array: array is {}-dimensional, but {} were indexed",
                                     bs.size(), ms.size()),
                         text_, mx.span);
    // NumPy lets a mask axis of no element stand against an axis of any extent (its selection
    // is then empty: ones(3)[zeros(0) > 1] has shape (0,)); any other mismatch is an error.
    bool empty_axis = false;
    for (std::size_t d = 0; d < ms.size(); ++d) {
        if (ms[d] == bs[d]) continue;
        if (ms[d] != 0)
            throw IndexError(fmt::format("boolean index did not match indexed array along axis {}; size of axis is "
                                         "{} but size of corresponding boolean axis is {}",
                                         d, bs[d], ms[d]),
                             text_, mx.span);
        empty_axis = true;
    }
    if (empty_axis) {
        // The values cut to the mask's extents (a view of no element), then selected as usual.
        View v;
        v.out = ms;
        v.out.insert(v.out.end(), bs.begin() + static_cast<std::ptrdiff_t>(ms.size()), bs.end());
        for (std::size_t d = 0; d < bs.size(); ++d) v.axes.push_back(ViewAxis{0, 1, static_cast<std::int32_t>(d)});
        view_memo_.clear();
        Val cut{view_of(base.node, v, e.span), Weak::None};
        return mask_select(cut, m, e, mx);
    }
    // The mask with the array's other axes as extent 1, so that it broadcasts over them.
    ir::NodeId mk = m.node;
    if (ms.size() < bs.size()) {
        View v;
        v.out = ms;
        v.out.resize(bs.size(), 1);
        for (std::size_t d = 0; d < ms.size(); ++d) v.axes.push_back(ViewAxis{0, 1, static_cast<std::int32_t>(d)});
        view_memo_.clear();
        mk = view_of(m.node, v, mx.span);
    }
    Val r{base.node, Weak::None};
    r.mask = mk;
    r.mask_axes = static_cast<std::int32_t>(ms.size());
    return r;
}

// A selection stored to memory: the Compact node of its values where its mask is true, both
// over their common shape.
// A selection whose rows hold no element (b of shape (4, 0) under a mask of shape (4,)) still
// has a row for each true mask element, (count, 0) as in NumPy: its stage runs over the
// mask's own axes (the other axes of extent 1), counting rows, with values that read
// nothing of the empty array, and stores no element (ir::verify and both backends know the
// form: the values' trailing axes are 1 where the Compact node's hold no element).
ir::NodeId Lowerer::compact(const Val& v, SourceSpan span) {
    Shape full = broadcast(shape(v), node(v.mask).shape, span);
    const auto k = static_cast<std::size_t>(v.mask_axes);
    Node c;
    c.kind = NodeKind::Compact;
    c.dtype = dt(v);
    c.shape.assign(1, 1);
    for (std::size_t d = 0; d < full.size(); ++d) {
        if (d < k) c.shape[0] *= full[d];
        else c.shape.push_back(full[d]);
    }
    const bool empty_rows = shape_size(full) == 0 && c.shape[0] > 0;
    if (empty_rows)
        for (std::size_t d = k; d < full.size(); ++d) full[d] = 1;
    // One broadcast mask node per mask and shape: selections by one mask share a stage.
    std::string key = std::to_string(v.mask.value());
    for (const std::int64_t e : full) key += fmt::format(",{}", e);
    if (empty_rows) key += ",rows";
    auto [it, fresh_mask] = compact_masks_.try_emplace(std::move(key), v.mask);
    if (fresh_mask && node(v.mask).shape != full) it->second = fresh(v.mask, full, span);
    const ir::NodeId mask = it->second;
    const ir::NodeId values = empty_rows         ? cast(Val{mask, Weak::None}, c.dtype, span)
                              : shape(v) == full ? v.node
                                                 : fresh(v.node, full, span);
    c.args[0] = values;
    c.args[1] = mask;
    c.nargs = 2;
    c.axis = v.mask_axes;
    c.span = span;
    return add(std::move(c));
}

std::int64_t Lowerer::count_consumed(const Expr& e) {
    std::int64_t k = 0;
    for (const syntax::IndexItem& it : e.index)
        if (it.kind == syntax::IndexItem::Kind::Slice ||
            (it.kind == syntax::IndexItem::Kind::Index && !is_none(*e.operands[static_cast<std::size_t>(it.start)])))
            ++k;
    return k;
}

}  // namespace jit::dsl::lowering
