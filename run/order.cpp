// jitexpr — new arrays in the axis order of the arrays they are computed from (see order.hpp).
#include "run/order.hpp"

#include "core/device.hpp"

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <numeric>

namespace jit::run {

namespace {

const Array* array_of(const Environment& env, const std::string& name) {
    auto it = env.find(name);
    return it != env.end() && it->second.is_array() ? &it->second.array() : nullptr;
}

// Whether an array of `shape` and `strides` is C-contiguous (extent-1 axes have any stride), as
// Array::is_contiguous says.
bool c_contiguous(const Shape& shape, const Strides& strides) {
    std::int64_t expect = 1;
    for (std::size_t k = shape.size(); k-- > 0;) {
        if (shape[k] == 1) continue;
        if (shape[k] == 0) return true;
        if (strides[k] != expect) return false;
        expect *= shape[k];
    }
    return true;
}

}  // namespace

Strides in_order(const AxisOrder& o, const Strides& strides) {
    Strides s(o.axes.size());
    for (std::size_t i = 0; i < o.axes.size(); ++i) s[i] = strides[static_cast<std::size_t>(o.axes[i])];
    return s;
}

std::optional<AxisOrder> shared_order(std::span<const ArrayLayout> arrays) {
    // 0-d arrays (a NumPy scalar, a `float32[]` declaration) have no order and take no part.
    const ArrayLayout* first = nullptr;
    for (const ArrayLayout& a : arrays) {
        if (a.shape->empty()) continue;
        if (is_string(a.dtype) || c_contiguous(*a.shape, *a.strides)) return std::nullopt;
        if (!first) first = &a;
    }
    if (!first) return std::nullopt;
    const Shape& shape = *first->shape;
    if (shape.size() < 2 || std::count_if(shape.begin(), shape.end(), [](std::int64_t e) { return e > 1; }) < 2)
        return std::nullopt;
    AxisOrder o;
    o.shape = shape;
    // Axes of extent 1 first (in their own order), then the others by decreasing stride.
    o.axes.resize(shape.size());
    std::iota(o.axes.begin(), o.axes.end(), 0);
    const Strides& st = *first->strides;
    std::stable_sort(o.axes.begin(), o.axes.end(), [&](int x, int y) {
        const bool ux = shape[static_cast<std::size_t>(x)] == 1, uy = shape[static_cast<std::size_t>(y)] == 1;
        if (ux != uy) return ux;
        return !ux && st[static_cast<std::size_t>(x)] > st[static_cast<std::size_t>(y)];
    });
    for (int d : o.axes) o.ordered_shape.push_back(shape[static_cast<std::size_t>(d)]);
    for (const ArrayLayout& a : arrays)
        if (!a.shape->empty() && (*a.shape != shape || !c_contiguous(o.ordered_shape, in_order(o, *a.strides))))
            return std::nullopt;
    return o;
}

std::optional<AxisOrder> shared_order(std::span<const Arg* const> bound) {
    boost::container::small_vector<ArrayLayout, 8> arrays;
    for (const Arg* arg : bound) {
        const Array* a = arg && arg->is_array() ? &arg->array() : nullptr;
        if (!a || a->ndim() == 0) continue;
        if (a->is_contiguous()) return std::nullopt;
        arrays.push_back(ArrayLayout{&a->shape(), &a->strides(), a->dtype()});
    }
    return shared_order(std::span<const ArrayLayout>(arrays.data(), arrays.size()));
}

bool order_free(const ir::Program& p, const Shape& shape) {
    if (!p.order_stats.empty() || !p.checks.empty()) return false;
    for (const ir::InputDecl& in : p.inputs)
        if (in.view || (in.shape != shape && !in.shape.empty()) || is_string(in.dtype)) return false;
    for (const ir::Node& n : p.nodes) {
        switch (n.kind) {
            case ir::NodeKind::Input:
            case ir::NodeKind::Scalar:
            case ir::NodeKind::Const:
            case ir::NodeKind::Op:
            case ir::NodeKind::Cast: break;
            case ir::NodeKind::Reduce:
            case ir::NodeKind::Compact:
            case ir::NodeKind::Scan: return false;
        }
        if (!n.shape.empty() && n.shape != shape) return false;
    }
    return true;
}

Environment in_order(const AxisOrder& o, std::span<const std::string> names, const Environment& env) {
    Environment out;
    for (const std::string& n : names) {
        auto it = env.find(n);
        if (it == env.end()) continue;
        if (!it->second.is_array()) {
            out.emplace(n, it->second);
            continue;
        }
        const Array& a = it->second.array();
        out.emplace(n,
                    a.ndim() == 0 ? it->second : Arg(core::restrided(a, 0, o.ordered_shape, in_order(o, a.strides()))));
    }
    return out;
}

Array restored(const AxisOrder& o, const Array& a) {
    if (!a.defined() || a.shape() != o.ordered_shape) return a;
    Strides s(o.axes.size());
    for (std::size_t i = 0; i < o.axes.size(); ++i) s[static_cast<std::size_t>(o.axes[i])] = a.strides()[i];
    return core::restrided(a, 0, o.shape, std::move(s));
}

void assign_back(const AxisOrder& o, std::span<const std::string> names, const Environment& ordered, Environment& env) {
    for (const std::string& n : names) {
        const Array* now = array_of(ordered, n);
        if (!now) continue;
        // What in_order put there (the view of env's array, or a 0-d array itself): written in
        // place, or not assigned.
        if (const Array* was = array_of(env, n); was && was->data() == now->data() && was->dtype() == now->dtype()) {
            if (was->ndim() == 0 && now->ndim() == 0) continue;
            if (now->shape() == o.ordered_shape && now->strides() == in_order(o, was->strides())) continue;
        }
        env.insert_or_assign(n, Arg(restored(o, *now)));
    }
}

}  // namespace jit::run
