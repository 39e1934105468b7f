// jitexpr — the CPU backend: a stage's plan bound to one run's memory (CpuPrepared::bind, prepared.hpp).
#include "backend/cpu/prepared.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <boost/container/small_vector.hpp>

namespace jit::cpu::impl {

// Fills `b` for this run. Everything goes into b's own vectors, which keep their capacity from
// run to run (CpuPrepared::run keeps one Bound per thread): a repeated run allocates nothing here.
void CpuPrepared::bind(const StagePlan& sp, const Ctx& ctx, Bound& b) const {
    const auto& args = *ctx.args;
    b.args = ctx.args;
    Shape& shape = b.space.shape;
    shape.assign(sp.shape.begin(), sp.shape.end());
    if (b.loads.size() < sp.loads.size()) b.loads.resize(sp.loads.size());
    if (b.stores.size() < sp.stores.size()) b.stores.resize(sp.stores.size());
    for (std::size_t i = 0; i < sp.loads.size(); ++i) {
        const LoadPlan& lp = sp.loads[i];
        Operand& op = b.loads[i];
        op.item = static_cast<i64>(itemsize(lp.dtype));
        const Shape* src_shape = nullptr;
        const Strides* src_strides = nullptr;
        if (lp.is_input) {
            const Array& a = args.inputs[static_cast<std::size_t>(lp.input)];
            if (a.dtype() != lp.dtype)
                throw ArgumentError(fmt::format("input {} is {}, the program expects {}", lp.input,
                                                dtype_name(a.dtype()), dtype_name(lp.dtype)));
            op.base = static_cast<const char*>(a.data());
            // A string column's width (S, U) or offsets' (Utf8), and a Utf8 column's bytes.
            if (is_string(lp.dtype)) op.item = static_cast<i64>(a.itemsize());
            op.chars = static_cast<const char*>(a.chars());
            src_shape = &a.shape();
            src_strides = &a.strides();
        } else {
            const int out = schedule_.output_of[lp.node];
            src_shape = &program_.node(lp.node).shape;
            if (out >= 0) {
                const Array& a = args.outputs[static_cast<std::size_t>(out)];
                op.base = static_cast<const char*>(a.data());
                src_strides = &a.strides();
            } else {
                auto it = std::find(schedule_.temps.begin(), schedule_.temps.end(), lp.node);
                op.base = reinterpret_cast<const char*>(
                    (*ctx.temps)[static_cast<std::size_t>(it - schedule_.temps.begin())]->data());
                b.temp_strides = contiguous_strides(*src_shape);
                src_strides = &b.temp_strides;
            }
        }
        ir::broadcast_strides(*src_shape, *src_strides, shape, op.strides);
    }
    for (std::size_t i = 0; i < sp.stores.size(); ++i) {
        const StorePlan& st = sp.stores[i];
        const Array& a = args.outputs[static_cast<std::size_t>(st.output)];
        if (a.dtype() != st.dtype)
            throw ArgumentError(fmt::format("output {} is {}, the program computes {}", st.output,
                                            dtype_name(a.dtype()), dtype_name(st.dtype)));
        if (a.shape() != shape)
            throw ArgumentError(fmt::format("output {} has shape {}, the program computes {}", st.output,
                                            shape_to_string(a.shape()), shape_to_string(shape)));
        b.stores[i].base = static_cast<const char*>(a.data());
        b.stores[i].item = static_cast<i64>(itemsize(st.dtype));
        b.stores[i].strides.assign(a.strides().begin(), a.strides().end());
    }

    bool keep_last = false;
    b.rows = 1;
    b.row_len = 0;
    b.out_base = nullptr;
    b.out_item = 0;
    if (sp.kind == ir::Stage::Kind::Scan) {
        // The result over the iteration space: along an axis it has the operand's shape; over
        // every element it is 1-d, element k the k-th of the operand in C order.
        const ReducePlan& rp = sp.root();
        const ir::Node& r = program_.node(rp.reduce_node);
        Operand& o = b.scan_out;
        o.item = static_cast<i64>(itemsize(r.dtype));
        Strides rs;
        if (rp.output >= 0) {
            const Array& a = args.outputs[static_cast<std::size_t>(rp.output)];
            if (a.dtype() != r.dtype || a.shape() != r.shape)
                throw ArgumentError(fmt::format("output {} is {} {}, the program computes {} {}", rp.output,
                                                dtype_name(a.dtype()), shape_to_string(a.shape()), dtype_name(r.dtype),
                                                shape_to_string(r.shape)));
            o.base = static_cast<const char*>(a.data());
            rs.assign(a.strides().begin(), a.strides().end());
        } else {
            o.base = reinterpret_cast<const char*>((*ctx.temps)[static_cast<std::size_t>(rp.temp)]->data());
            rs = contiguous_strides(r.shape);
        }
        if (rp.axis >= 0) {
            o.strides.assign(rs.begin(), rs.end());
        } else {
            o.strides.assign(shape.size(), 0);
            i64 step = rs.empty() ? 1 : rs[0];
            for (std::size_t k = shape.size(); k-- > 0;) {
                o.strides[k] = step;
                step *= shape[k];
            }
        }
        const i64 n = shape_size(shape);
        if (rp.axis >= 0) {
            const std::size_t ax = static_cast<std::size_t>(rp.axis);
            b.row_len = shape[ax];
            b.rows = b.row_len == 0 ? 0 : n / b.row_len;
            auto move_last = [&](auto& v) {
                auto x = v[ax];
                v.erase(v.begin() + rp.axis);
                v.push_back(x);
            };
            move_last(shape);
            for (std::size_t i = 0; i < sp.loads.size(); ++i) move_last(b.loads[i].strides);
            move_last(o.strides);
            keep_last = true;
        } else {
            b.row_len = n;
            b.rows = 1;
        }
    } else if (sp.kind == ir::Stage::Kind::Reduce) {
        const ReducePlan& rp = sp.root();
        const i64 n = shape_size(shape);
        if (rp.select >= 0) {
            // The reduced axes last, in order: each row of the iteration space is one row of
            // the statistic (its elements in C order of the reduced axes).
            const std::uint32_t axes = program_.order_stats[static_cast<std::size_t>(rp.select)].axes;
            const std::size_t nd = shape.size();
            b.row_len = 1;
            b.rows = 1;
            for (std::size_t d = 0; d < nd; ++d) ((axes >> d) & 1u ? b.row_len : b.rows) *= shape[d];
            auto reorder = [&](auto& v) {
                auto kept = v;
                kept.clear();
                auto moved = kept;
                for (std::size_t d = 0; d < nd; ++d) ((axes >> d) & 1u ? moved : kept).push_back(v[d]);
                for (auto x : moved) kept.push_back(x);
                v.assign(kept.begin(), kept.end());
            };
            reorder(shape);
            for (std::size_t i = 0; i < sp.loads.size(); ++i) reorder(b.loads[i].strides);
            keep_last = true;
        } else if (rp.axis >= 0) {
            // Move the reduced axis last: each row of the iteration space is one result.
            const std::size_t ax = static_cast<std::size_t>(rp.axis);
            b.row_len = shape[ax];
            b.rows = b.row_len == 0 ? shape_size([&] {
                Shape s = shape;
                s.erase(s.begin() + rp.axis);
                return s;
            }())
                                    : n / b.row_len;
            auto move_last = [&](auto& v) {
                auto x = v[ax];
                v.erase(v.begin() + rp.axis);
                v.push_back(x);
            };
            move_last(shape);
            for (std::size_t i = 0; i < sp.loads.size(); ++i) move_last(b.loads[i].strides);
            keep_last = true;
        } else {
            b.row_len = n;
            b.rows = 1;
        }
        const ir::Node& r = program_.node(rp.reduce_node);
        b.out_shape.assign(r.shape.begin(), r.shape.end());
        b.out_item = static_cast<i64>(itemsize(r.dtype));
        b.out_base = reduce_target(rp, ctx);
        if (rp.output >= 0) {
            const Array& a = args.outputs[static_cast<std::size_t>(rp.output)];
            b.out_shape.assign(a.shape().begin(), a.shape().end());
            b.out_strides.assign(a.strides().begin(), a.strides().end());
        } else {
            b.out_strides = contiguous_strides(r.shape);
        }
    }

    boost::container::small_vector<Strides*, 16> all;
    for (std::size_t i = 0; i < sp.loads.size(); ++i) all.push_back(&b.loads[i].strides);
    for (std::size_t i = 0; i < sp.stores.size(); ++i) all.push_back(&b.stores[i].strides);
    if (sp.kind == ir::Stage::Kind::Scan) all.push_back(&b.scan_out.strides);
    collapse(shape, std::span<Strides* const>(all.data(), all.size()), keep_last);
    b.space.size = shape_size(shape);
    const bool flat = shape.size() <= 1;
    for (std::size_t i = 0; i < sp.loads.size(); ++i) {
        Operand& op = b.loads[i];
        const LoadPlan& lp = sp.loads[i];
        const bool aliased =
            lp.is_input && std::find(aliased_inputs_.begin(), aliased_inputs_.end(), lp.input) != aliased_inputs_.end();
        op.direct = !keep_last && flat && !is_half(lp.dtype) && !is_string(lp.dtype) && !aliased &&
                    (shape.empty() ? false : op.strides[0] == 1);
    }
    for (std::size_t i = 0; i < sp.stores.size(); ++i) {
        Operand& op = b.stores[i];
        // A contiguous output is written by the kernel computing it, no block copy.
        op.direct = flat && !is_half(sp.stores[i].dtype) && !shape.empty() && op.strides[0] == 1;
    }
}

}  // namespace jit::cpu::impl
