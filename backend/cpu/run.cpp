// jitexpr — the CPU backend: running a prepared program (prepared.hpp).
//
// Run: the iteration space of a stage is split into blocks of kBlock elements; blocks are split
// in contiguous chunks over the thread pool. Block boundaries never depend on the thread count,
// so results (reductions included) are bitwise the same with 1 or N threads. A scan stage runs
// its rows in parallel and each row in order, element after element (NumPy's order: the same
// rounding as NumPy's cumsum).
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/prepared.hpp"
#include "backend/cpu/strings.hpp"
#include "core/device.hpp"
#include "dsl/semantics.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <tuple>

#include <boost/container/small_vector.hpp>

namespace jit::cpu::impl {

namespace {

// Most units (blocks) one thread takes from the shared counter at a time.
constexpr i64 kRunUnits = 128;
// ... and at most about this many elements, so that a stop is seen within a short time when a
// unit is large (a row of a reduction along an axis: 128 rows of 10^6 elements took seconds
// between two polls in a Debug build).
constexpr i64 kRunElements = i64{1} << 20;

}  // namespace

// Units are handed out in small runs from a shared counter, in increasing order: a thread that
// is slowed down (the machine is shared, or one core is busy) takes fewer runs instead of
// holding up the others, and the threads stream through neighbouring memory. Which thread
// evaluates a unit never changes what it computes, so results stay the same for any thread count.
template <class Body>
void CpuPrepared::parallel(i64 units, i64 elements, detail::CallControl* ctl, Body&& body) const {
    if (units <= 0) return;
    int threads = pool_ ? pool_->size() : 1;
    if (elements < kParallelThreshold) threads = 1;
    threads = static_cast<int>(std::min<i64>(threads, units));
    // Cancellation: every thread asks before each run of units it takes (two relaxed loads) and
    // takes no more once a stop is requested; the calling thread also ticks the control (its
    // poll function and progress callback). A stage cut short throws CancelledError here, after
    // every thread has finished its current run; one whose units were all taken completes.
    std::atomic<bool> cut{false};
    const double per_unit = static_cast<double>(elements) / static_cast<double>(units);
    const i64 run_cap =
        std::clamp<i64>(static_cast<i64>(static_cast<double>(kRunElements) / std::max(per_unit, 1.0)), 1, kRunUnits);
    auto account = [&](i64 u0, i64 u1) {
        if (ctl) ctl->add_done(static_cast<std::uint64_t>(static_cast<double>(u1 - u0) * per_unit));
    };
    if (threads <= 1) {
        // The whole range at once, unless someone may stop the call: then runs of run_cap units.
        const i64 run = ctl ? run_cap : units;
        i64 next_unit = 0;
        body([&](i64& u0, i64& u1) {
            if (next_unit >= units) return false;
            if (ctl && (ctl->wants_ticks() ? ctl->tick() : ctl->stop_requested())) {
                cut.store(true, std::memory_order_relaxed);
                return false;
            }
            u0 = next_unit;
            u1 = next_unit = std::min(units, u0 + run);
            account(u0, u1);
            return true;
        });
    } else {
        // About 8 runs per thread at least, and at most kRunUnits units (kRunElements elements) per run.
        const i64 run = std::clamp<i64>(units / (i64{threads} * 8), 1, run_cap);
        std::atomic<i64> next_unit{0};
        pool_->run([&](int t) {
            if (t >= threads) return;
            const bool ticks = t == 0 && ctl && ctl->wants_ticks();
            body([&](i64& u0, i64& u1) {
                if (ctl && (ticks ? ctl->tick() : ctl->stop_requested())) {
                    if (next_unit.load(std::memory_order_relaxed) < units) cut.store(true, std::memory_order_relaxed);
                    return false;
                }
                u0 = next_unit.fetch_add(run, std::memory_order_relaxed);
                if (u0 >= units) return false;
                u1 = std::min(units, u0 + run);
                account(u0, u1);
                return true;
            });
        });
    }
    if (cut.load(std::memory_order_relaxed)) detail::CallControl::throw_cancelled();
}

void CpuPrepared::fill(const StagePlan& sp, const Ctx& ctx, std::byte* scratch, const void** ptr) const {
    for (const Instr& f : sp.fills) {
        const ir::Node& nd = program_.node(f.node);
        alignas(16) std::byte one[16];
        if (nd.kind == ir::NodeKind::Const && is_string(nd.dtype)) {
            // A string literal: its bytes in the program, as one string value (strings.hpp).
            const std::string& s = program_.strings.at(static_cast<std::size_t>(nd.slot));
            const void* p = s.data();
            const std::int64_t units = static_cast<std::int64_t>(nd.dtype == DType::Str ? s.size() / 4 : s.size());
            std::memcpy(one, &p, sizeof p);
            std::memcpy(one + 8, &units, sizeof units);
        } else if (nd.kind == ir::NodeKind::Scalar) {
            if (static_cast<std::size_t>(nd.slot) >= ctx.args->scalars.size())
                throw ArgumentError(fmt::format("scalar {} is missing", nd.slot));
            value_to_reg(ctx.args->scalars[static_cast<std::size_t>(nd.slot)], nd.dtype, one);
        } else {
            value_to_reg(nd.value, nd.dtype, one);
        }
        const i64 rs = reg_size(nd.dtype);
        std::byte* dst = scratch + f.out * sp.slot_bytes;
        const i64 count = f.full ? kBlock : 1;
        for (i64 i = 0; i < count; ++i) std::memcpy(dst + i * rs, one, static_cast<std::size_t>(rs));
        ptr[f.out] = dst;
    }
}

void CpuPrepared::eval_block(const StagePlan& sp, const Bound& b, std::byte* scratch, const void** ptr, i64 start,
                             i64 len) const {
    for (const Instr& ins : sp.code) {
        std::byte* buf = scratch + ins.out * sp.slot_bytes;
        if (ins.kind == Instr::Kind::Load) {
            const Operand& op = b.loads[static_cast<std::size_t>(ins.load)];
            if (op.direct) {
                ptr[ins.out] = op.base + start * op.item;
                continue;
            }
            const DType ld = sp.loads[static_cast<std::size_t>(ins.load)].dtype;
            if (is_string(ld)) {
                walk(b.space.shape, op.strides, start, len, [&](i64 off, i64 stride, i64 done, i64 run) {
                    load_strings(ld, op.base, op.item, op.chars, off, stride, buf + done * kStringRegBytes, run);
                });
                ptr[ins.out] = buf;
                continue;
            }
            const LoadFn load = kt_.load[static_cast<int>(ld)];
            const i64 rs = reg_size(ld);
            walk(b.space.shape, op.strides, start, len, [&](i64 off, i64 stride, i64 done, i64 run) {
                load(op.base + off * op.item, stride, buf + done * rs, run);
            });
            ptr[ins.out] = buf;
        } else {
            const void* in[3] = {ptr[ins.in[0]], ins.nin > 1 ? ptr[ins.in[1]] : nullptr,
                                 ins.nin > 2 ? ptr[ins.in[2]] : nullptr};
            if (ins.store >= 0 && b.stores[static_cast<std::size_t>(ins.store)].direct) {
                const Operand& o = b.stores[static_cast<std::size_t>(ins.store)];
                buf = const_cast<std::byte*>(reinterpret_cast<const std::byte*>(o.base)) + start * o.item;
            }
            if (ins.scan) {  // a string op read straight from its column (strings.hpp)
                const Operand& col = b.loads[static_cast<std::size_t>(ins.load)];
                auto* out = reinterpret_cast<bool*>(buf);
                walk(b.space.shape, col.strides, start, len, [&](i64 off, i64 stride, i64 done, i64 run) {
                    ins.scan(col.base, col.item, col.chars, off, stride, run, in[0], out + done);
                });
            } else {
                ins.fn(in, buf, len);
            }
            ptr[ins.out] = buf;
        }
    }
}

void CpuPrepared::run_elementwise(const StagePlan& sp, const Bound& b) const {
    const i64 n = b.space.size;
    const i64 blocks = (n + kBlock - 1) / kBlock;
    Ctx ctx{b.args, nullptr};
    parallel(blocks, n, b.args->control, [&](auto&& next) {
        std::byte* scratch = thread_scratch(static_cast<std::size_t>(sp.nslots * sp.slot_bytes));
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(sp.nslots), nullptr);
        fill(sp, ctx, scratch, ptr.data());
        for (i64 b0 = 0, b1 = 0; next(b0, b1);)
            for (i64 blk = b0; blk < b1; ++blk) {
                const i64 start = blk * kBlock, len = std::min(kBlock, n - start);
                eval_block(sp, b, scratch, ptr.data(), start, len);
                store_block(sp, b, ptr.data(), start, len);
            }
    });
}

void CpuPrepared::store_block(const StagePlan& sp, const Bound& b, const void* const* ptr, i64 start, i64 len) const {
    for (std::size_t i = 0; i < sp.stores.size(); ++i) {
        const StorePlan& st = sp.stores[i];
        const Operand& o = b.stores[i];
        if (o.direct && static_cast<const char*>(ptr[st.slot]) == o.base + start * o.item)
            continue;  // written in place
        const StoreFn store = kt_.store[static_cast<int>(st.dtype)];
        const i64 rs = reg_size(st.dtype);
        const auto* src = static_cast<const std::byte*>(ptr[st.slot]);
        char* base = const_cast<char*>(o.base);
        walk(b.space.shape, o.strides, start, len,
             [&](i64 off, i64 stride, i64 done, i64 run) { store(src + done * rs, base + off * o.item, stride, run); });
    }
}

char* CpuPrepared::reduce_target(const ReducePlan& rp, const Ctx& ctx) const {
    const ir::Node& r = program_.node(rp.reduce_node);
    if (rp.output < 0) return reinterpret_cast<char*>((*ctx.temps)[static_cast<std::size_t>(rp.temp)]->data());
    const Array& a = ctx.args->outputs[static_cast<std::size_t>(rp.output)];
    if (a.dtype() != r.dtype || shape_size(a.shape()) != shape_size(r.shape))
        throw ArgumentError(fmt::format("output {} is {} {}, the program computes {} {}", rp.output,
                                        dtype_name(a.dtype()), shape_to_string(a.shape()), dtype_name(r.dtype),
                                        shape_to_string(r.shape)));
    return static_cast<char*>(a.data());
}

void CpuPrepared::run_pass(const StagePlan& pp, const Ctx& ctx, Bound& b) const {
    bind(pp, ctx, b);
    const detail::RunArgs& args = *ctx.args;
    const std::size_t nred = pp.reduces.size();
    boost::container::small_vector<char*, 8> targets(nred);
    for (std::size_t r = 0; r < nred; ++r) targets[r] = reduce_target(pp.reduces[r], ctx);
    const i64 n = b.space.size;
    const i64 blocks = (n + kBlock - 1) / kBlock;
    // Per reduction: one partial per block, combined in block order afterwards (as run_reduce's
    // long rows: every partial is written before it is read, so no zero-fill).
    boost::container::small_vector<std::unique_ptr<std::byte[]>, 8> partials(nred);
    for (std::size_t r = 0; r < nred; ++r)
        partials[r] = core::host_buffer<std::byte>(
            static_cast<std::size_t>(blocks * acc_size(pp.reduces[r].red, pp.reduces[r].dtype)),
            "a reduction's partial results (one per block)");
    parallel(blocks, n * pp.stages(), args.control, [&](auto&& next) {
        std::byte* scratch = thread_scratch(static_cast<std::size_t>(pp.nslots * pp.slot_bytes));
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(pp.nslots), nullptr);
        fill(pp, ctx, scratch, ptr.data());
        for (i64 b0 = 0, b1 = 0; next(b0, b1);)
            for (i64 blk = b0; blk < b1; ++blk) {
                const i64 start = blk * kBlock, len = std::min(kBlock, n - start);
                eval_block(pp, b, scratch, ptr.data(), start, len);
                for (std::size_t r = 0; r < nred; ++r) {
                    const ReducePlan& rp = pp.reduces[r];
                    const int k = static_cast<int>(rp.red), d = static_cast<int>(rp.dtype);
                    std::byte* acc = partials[r].get() + blk * acc_size(rp.red, rp.dtype);
                    kt_.identity[k][d](acc);
                    rp.block(ptr[static_cast<std::size_t>(rp.value_slot)], len, acc, start);
                }
                store_block(pp, b, ptr.data(), start, len);
            }
    });
    for (std::size_t r = 0; r < nred; ++r) {
        const ReducePlan& rp = pp.reduces[r];
        const int k = static_cast<int>(rp.red), d = static_cast<int>(rp.dtype);
        const DType rd = program_.node(rp.reduce_node).dtype;
        if (args.started_outputs && rp.output >= 0) args.started_outputs[rp.output] = true;
        alignas(16) std::byte acc[16];
        kt_.identity[k][d](acc);
        combine_partials(rp, partials[r].get(), blocks, acc);
        if (rp.mean) kt_.divide[static_cast<int>(rd)](acc, n);
        kt_.store[static_cast<int>(rd)](acc, targets[r], 1, 1);
    }
}

// Folds `n` partial accumulators of a stage into `acc`, in order: a reduction of its operand's
// kind where accumulators are values (float sums stay pairwise), combine() for ArgFirst's
// positions.
void CpuPrepared::combine_partials(const ReducePlan& rp, const std::byte* partials, i64 n, std::byte* acc) const {
    const int k = static_cast<int>(rp.red), d = static_cast<int>(rp.dtype);
    if (rp.red != Red::ArgFirst) {
        kt_.reduce[k][d](partials, n, acc, 0);
        return;
    }
    const i64 as = acc_size(rp.red, rp.dtype);
    for (i64 i = 0; i < n; ++i) kt_.combine[k][d](acc, partials + i * as);
}

void CpuPrepared::run_reduce(const StagePlan& sp, const Bound& b) const {
    const ReducePlan& rp = sp.root();
    const int k = static_cast<int>(rp.red), d = static_cast<int>(rp.dtype);
    const ReduceFn reduce = rp.block;
    const IdentityFn identity = kt_.identity[k][d];
    const ir::Node& rnode = program_.node(rp.reduce_node);
    const DType rd = rnode.dtype;
    const StoreFn store = kt_.store[static_cast<int>(rd)];
    const DivideFn divide = rp.mean ? kt_.divide[static_cast<int>(rd)] : nullptr;
    const i64 rs = reg_size(rp.value_dtype), as = acc_size(rp.red, rp.dtype);
    const i64 rows = b.rows, L = b.row_len;
    Ctx ctx{b.args, nullptr};

    // Marks the output (when it is one) as being written, for a stop that cuts the stage short.
    auto writing = [&] {
        if (b.args->started_outputs && rp.output >= 0) b.args->started_outputs[rp.output] = true;
    };
    auto finish_row = [&](i64 row, std::byte* acc) {
        if (divide) divide(acc, L);
        store(acc, b.out_base + offset_of(row, b.out_shape, b.out_strides) * b.out_item, 1, 1);
    };

    if (L == 0 || b.space.size == 0) {
        writing();
        for (i64 row = 0; row < rows; ++row) {
            alignas(16) std::byte acc[16];
            identity(acc);
            finish_row(row, acc);
        }
        return;
    }

    if (L > kBlock) {
        // Long rows: blocks of a row are reduced in parallel into partials, then each row's
        // partials are reduced in block order.
        const i64 per_row = (L + kBlock - 1) / kBlock;
        const i64 units = rows * per_row;
        // Not zero-filled: every partial is written before it is read, and zeroing n/64 bytes up
        // front (156 MB for 10^10 elements) delayed the first block, and a stop, by that long.
        std::unique_ptr<std::byte[]> partials_buf = core::host_buffer<std::byte>(
            static_cast<std::size_t>(units * as), "a reduction's partial results (one per block)");
        std::byte* const partials_data = partials_buf.get();
        parallel(units, b.space.size, b.args->control, [&](auto&& next) {
            std::byte* scratch = thread_scratch(static_cast<std::size_t>(sp.nslots * sp.slot_bytes));
            boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(sp.nslots), nullptr);
            fill(sp, ctx, scratch, ptr.data());
            for (i64 u0 = 0, u1 = 0; next(u0, u1);)
                for (i64 u = u0; u < u1; ++u) {
                    const i64 row = u / per_row, j = u % per_row;
                    const i64 start = row * L + j * kBlock, len = std::min(kBlock, L - j * kBlock);
                    eval_block(sp, b, scratch, ptr.data(), start, len);
                    std::byte* acc = partials_data + u * as;
                    identity(acc);
                    reduce(ptr[rp.value_slot], len, acc, j * kBlock);
                }
        });
        writing();  // only now: a stop during the partial sums leaves the output untouched
        for (i64 row = 0; row < rows; ++row) {
            alignas(16) std::byte acc[16];
            identity(acc);
            combine_partials(rp, partials_data + row * per_row * as, per_row, acc);
            finish_row(row, acc);
        }
        return;
    }

    // Short rows: whole rows packed into each block, each row written as soon as it is reduced.
    const i64 per_block = std::max<i64>(1, kBlock / L);
    const i64 units = (rows + per_block - 1) / per_block;
    writing();
    parallel(units, b.space.size, b.args->control, [&](auto&& next) {
        std::byte* scratch = thread_scratch(static_cast<std::size_t>(sp.nslots * sp.slot_bytes));
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(sp.nslots), nullptr);
        fill(sp, ctx, scratch, ptr.data());
        for (i64 u0 = 0, u1 = 0; next(u0, u1);)
            for (i64 u = u0; u < u1; ++u) {
                const i64 r0 = u * per_block, r1 = std::min(rows, r0 + per_block);
                eval_block(sp, b, scratch, ptr.data(), r0 * L, (r1 - r0) * L);
                const auto* vals = static_cast<const std::byte*>(ptr[rp.value_slot]);
                for (i64 row = r0; row < r1; ++row) {
                    alignas(16) std::byte acc[16];
                    identity(acc);
                    reduce(vals + (row - r0) * L * rs, L, acc, 0);
                    finish_row(row, acc);
                }
            }
    });
}

void CpuPrepared::run_compact(std::size_t stage, const Ctx& ctx, Bound& b) const {
    const detail::RunArgs& args = *ctx.args;
    const StagePlan& cp = count_plans_[stage];
    const StagePlan& sp = plans_[stage];
    if (!args.allocate) throw InternalError("cpu backend: a compaction without an output allocator");
    // Pass 1: the mask's true elements per block (blocks as every pass cuts them: C order).
    bind(cp, ctx, b);
    const i64 n = b.space.size;
    const i64 blocks = (n + kBlock - 1) / kBlock;
    std::vector<i64> before;  // then: true elements before each block
    try {
        before.assign(static_cast<std::size_t>(blocks) + 1, 0);
    } catch (const std::bad_alloc&) {
        throw OutOfMemoryError(static_cast<std::uint64_t>(blocks + 1) * sizeof(i64), core::host_memory_available(),
                               "a mask's counts of selected elements (one per block)");
    }
    parallel(blocks, n, args.control, [&](auto&& next) {
        std::byte* scratch = thread_scratch(static_cast<std::size_t>(cp.nslots * cp.slot_bytes));
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(cp.nslots), nullptr);
        fill(cp, ctx, scratch, ptr.data());
        for (i64 b0 = 0, b1 = 0; next(b0, b1);)
            for (i64 blk = b0; blk < b1; ++blk) {
                const i64 start = blk * kBlock, len = std::min(kBlock, n - start);
                eval_block(cp, b, scratch, ptr.data(), start, len);
                const auto* m = static_cast<const bool*>(ptr[cp.mask_slot]);
                i64 c = 0;
                for (i64 i = 0; i < len; ++i) c += m[i] ? 1 : 0;
                before[static_cast<std::size_t>(blk) + 1] = c;
            }
    });
    for (std::size_t i = 1; i < before.size(); ++i) before[i] += before[i - 1];
    const i64 total = before.back();
    // The outputs, now that their length is known: (true mask rows, the values' other axes).
    // Each row counted n / capacity times (once where the rows hold no element, see
    // dsl/lower/masks.cpp's compact).
    bool any_element = false;
    for (const StorePlan& st : sp.compacts) {
        const ir::Node& nd = program_.node(st.node);
        Shape shape = nd.shape;
        const i64 per_row = shape[0] > 0 ? n / shape[0] : 0;
        shape[0] = per_row == 0 ? 0 : total / per_row;
        any_element = any_element || shape_size(shape) > 0;
        args.outputs[static_cast<std::size_t>(st.output)] =
            args.allocate->allocate(static_cast<std::size_t>(st.output), shape);
        if (args.started_outputs) args.started_outputs[st.output] = true;
    }
    if (total == 0 || !any_element) return;
    // Pass 2: each block's selected values, packed, at the count of the blocks before it.
    bind(sp, ctx, b);
    if (b.space.size != n) throw InternalError("cpu backend: the passes of a compaction differ in size");
    parallel(blocks, n * static_cast<i64>(sp.compacts.size()), args.control, [&](auto&& next) {
        const std::size_t slots_bytes = static_cast<std::size_t>(sp.nslots * sp.slot_bytes);
        std::byte* scratch = thread_scratch(slots_bytes + static_cast<std::size_t>(kBlock * kMaxRegBytes));
        std::byte* packed = scratch + slots_bytes;
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(sp.nslots), nullptr);
        fill(sp, ctx, scratch, ptr.data());
        for (i64 b0 = 0, b1 = 0; next(b0, b1);)
            for (i64 blk = b0; blk < b1; ++blk) {
                const i64 at = before[static_cast<std::size_t>(blk)];
                if (before[static_cast<std::size_t>(blk) + 1] == at) continue;  // nothing selected here
                const i64 start = blk * kBlock, len = std::min(kBlock, n - start);
                eval_block(sp, b, scratch, ptr.data(), start, len);
                const auto* m = static_cast<const bool*>(ptr[sp.mask_slot]);
                for (const StorePlan& st : sp.compacts) {
                    const i64 rs = reg_size(st.dtype);
                    const auto* src = static_cast<const std::byte*>(ptr[st.slot]);
                    i64 w = 0;
                    for (i64 i = 0; i < len; ++i)
                        if (m[i]) std::memcpy(packed + (w++) * rs, src + i * rs, static_cast<std::size_t>(rs));
                    const Array& out = args.outputs[static_cast<std::size_t>(st.output)];
                    char* dst = static_cast<char*>(out.data()) + at * static_cast<i64>(itemsize(st.dtype));
                    kt_.store[static_cast<int>(st.dtype)](packed, dst, 1, w);
                }
            }
    });
}

void CpuPrepared::run_scan(const StagePlan& sp, const Bound& b) const {
    const ReducePlan& rp = sp.root();
    const ScanFn scan = scan_kernel(rp.red, rp.dtype);
    if (!scan) throw InternalError(fmt::format("cpu backend: no scan for {}", dtype_name(rp.dtype)));
    const DType rd = program_.node(rp.reduce_node).dtype;
    const StoreFn store = kt_.store[static_cast<int>(rd)];
    const IdentityFn identity = kt_.identity[static_cast<int>(rp.red)][static_cast<int>(rp.dtype)];
    const i64 rs = reg_size(rp.dtype);
    const i64 rows = b.rows, L = b.row_len;
    if (b.args->started_outputs && rp.output >= 0) b.args->started_outputs[rp.output] = true;
    if (rows == 0 || L == 0 || b.space.size == 0) return;
    Ctx ctx{b.args, nullptr};
    const Operand& out = b.scan_out;
    char* const out_base = const_cast<char*>(out.base);
    // The scanned values of flat positions [start, start + len) go to the result.
    auto put = [&](const std::byte* vals, i64 start, i64 len) {
        walk(b.space.shape, out.strides, start, len, [&](i64 off, i64 stride, i64 done, i64 run) {
            store(vals + done * rs, out_base + off * out.item, stride, run);
        });
    };
    // Short rows: whole rows packed into each block; long rows: a row per unit, its blocks in
    // order with the running value carried from one to the next.
    const bool short_rows = L <= kBlock;
    const i64 per_block = short_rows ? kBlock / L : 1;
    const i64 units = (rows + per_block - 1) / per_block;
    const std::size_t scratch_bytes = static_cast<std::size_t>((sp.nslots + 1) * sp.slot_bytes);
    parallel(units, b.space.size, b.args->control, [&](auto&& next) {
        std::byte* scratch = thread_scratch(scratch_bytes);
        std::byte* result = scratch + sp.nslots * sp.slot_bytes;  // one block of scanned values
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(sp.nslots), nullptr);
        fill(sp, ctx, scratch, ptr.data());
        alignas(16) std::byte carry[16];
        for (i64 u0 = 0, u1 = 0; next(u0, u1);)
            for (i64 u = u0; u < u1; ++u) {
                if (short_rows) {
                    const i64 r0 = u * per_block, r1 = std::min(rows, r0 + per_block);
                    eval_block(sp, b, scratch, ptr.data(), r0 * L, (r1 - r0) * L);
                    const auto* vals = static_cast<const std::byte*>(ptr[rp.value_slot]);
                    for (i64 row = r0; row < r1; ++row) {
                        identity(carry);
                        scan(vals + (row - r0) * L * rs, L, result + (row - r0) * L * rs, carry, true);
                    }
                    put(result, r0 * L, (r1 - r0) * L);
                    continue;
                }
                identity(carry);
                for (i64 j = 0; j < L; j += kBlock) {
                    const i64 start = u * L + j, len = std::min(kBlock, L - j);
                    eval_block(sp, b, scratch, ptr.data(), start, len);
                    scan(ptr[rp.value_slot], len, result, carry, j == 0);
                    put(result, start, len);
                }
            }
    });
}

template <class T, int H, class R>
void CpuPrepared::select_rows(const StagePlan& sp, const Bound& b) const {
    const ReducePlan& rp = sp.root();
    const ir::OrderStatDecl& d = program_.order_stats[static_cast<std::size_t>(rp.select)];
    const ir::Node& rnode = program_.node(rp.reduce_node);
    const StoreFn store = kt_.store[static_cast<int>(rnode.dtype)];
    const i64 rows = b.rows, L = b.row_len;
    const i64 nq = static_cast<i64>(d.q.size());
    Ctx ctx{b.args, nullptr};
    if (b.args->started_outputs && rp.output >= 0) b.args->started_outputs[rp.output] = true;
    auto put = [&](i64 qi, i64 row, R v) {
        const i64 flat = qi * rows + row;
        store(&v, b.out_base + offset_of(flat, b.out_shape, b.out_strides) * b.out_item, 1, 1);
    };
    auto less = [](const T& x, const T& y) { return jx::sel::less(x, y); };
    if (rows == 0) return;
    // Whole rows per unit, at least one, about a block of elements.
    const i64 per_unit = L == 0 ? rows : std::max<i64>(1, kBlock / L);
    const i64 units = (rows + per_unit - 1) / per_unit;
    parallel(units, std::max<i64>(b.space.size, rows), b.args->control, [&](auto&& next) {
        std::byte* scratch = thread_scratch(static_cast<std::size_t>(sp.nslots * sp.slot_bytes));
        boost::container::small_vector<const void*, 64> ptr(static_cast<std::size_t>(sp.nslots), nullptr);
        fill(sp, ctx, scratch, ptr.data());
        std::unique_ptr<T[]> vals;  // not a std::vector: no vector<bool>
        i64 cap = 0;
        for (i64 u0 = 0, u1 = 0; next(u0, u1);)
            for (i64 u = u0; u < u1; ++u) {
                const i64 r0 = u * per_unit, r1 = std::min(rows, r0 + per_unit);
                const i64 total = (r1 - r0) * L;
                if (total > cap) {
                    vals.reset();  // the old buffer is not kept while the new one is asked for
                    vals = core::host_buffer<T>(static_cast<std::size_t>(total),
                                                fmt::format("the copy of {} {} elements an order statistic sorts",
                                                            total, dtype_name(rp.dtype)));
                    cap = total;
                }
                for (i64 done = 0; done < total;) {
                    const i64 len = std::min(kBlock, total - done);
                    eval_block(sp, b, scratch, ptr.data(), r0 * L + done, len);
                    std::memcpy(vals.get() + done, ptr[rp.value_slot], static_cast<std::size_t>(len) * sizeof(T));
                    if constexpr (jx::is_cplx<T>::value)
                        for (i64 k = done; k < done + len; ++k) vals[k] = jx::sel::canon(vals[k]);
                    done += len;
                }
                for (i64 row = r0; row < r1; ++row) {
                    T* v = vals.get() + (row - r0) * L;
                    i64 n = L;
                    bool nan = false;
                    if (d.skip_nan) n = std::partition(v, v + L, [](const T& x) { return !jx::sel::isnan(x); }) - v;
                    else nan = std::any_of(v, v + L, [](const T& x) { return jx::sel::isnan(x); });
                    for (i64 qi = 0; qi < nq; ++qi) {
                        R r;
                        const i64 end = d.q[static_cast<std::size_t>(qi)] == 0.0 ? 0 : n - 1;  // d.take's rank
                        if constexpr (!jx::is_fc<R>::value) {
                            // quantile of an integer q (0 or 1) in the operand's integer or bool dtype
                            if (!d.take || n == 0) throw InternalError("cpu backend: an integer order statistic");
                            std::nth_element(v, v + end, v + n, less);
                            r = v[end];
                        } else if (nan) {
                            // NumPy gives the row's last element in sorted order: a NaN.
                            if constexpr (jx::is_cplx<T>::value)
                                r = *std::max_element(v, v + L, [](T x, T y) { return jx::sel::sort_less(x, y); });
                            else r = jx::sel::nan_of<R>();
                        } else if (n == 0) {
                            r = L == 0 ? jx::sel::nan_of<R>() : jx::sel::all_nan_of<R>();
                        } else if (d.take) {
                            // quantile of an integer q (NumPy's integer virtual index): the element itself
                            std::nth_element(v, v + end, v + n, less);
                            r = static_cast<R>(v[end]);
                        } else if (d.median) {
                            const i64 k = (n - 1) / 2;
                            std::nth_element(v, v + k, v + n, less);
                            const T a = v[k];
                            const bool one = n % 2 == 1;
                            const T c = one ? a : *std::min_element(v + k + 1, v + n, less);
                            r = jx::sel::median<R, H>(a, c, one);
                        } else if constexpr (jx::is_cplx<T>::value || jx::is_bool<T>::value) {
                            throw InternalError("cpu backend: a quantile of complex or bool values");
                        } else {
                            const jx::sel::Ranks k = jx::sel::ranks(n, d.q[static_cast<std::size_t>(qi)]);
                            std::nth_element(v, v + k.lo, v + n, less);
                            const T a = v[k.lo];
                            const T c = k.hi == k.lo ? a : *std::min_element(v + k.lo + 1, v + n, less);
                            r = jx::sel::lerp<R, H>(a, c, k.t);
                        }
                        put(qi, row, r);
                    }
                }
            }
    });
}

void CpuPrepared::run_select(const StagePlan& sp, const Bound& b) const {
    const ReducePlan& rp = sp.root();
    const DType rd = program_.node(rp.reduce_node).dtype;
    const bool wide = rd == DType::Float64;
    if (rd == rp.dtype && !is_inexact(rd)) {
        // quantile of an integer q: the element in the operand's own integer or bool dtype
        switch (rp.dtype) {
            case DType::Bool: return select_rows<bool, 0, bool>(sp, b);
            case DType::Int8: return select_rows<jx::i8, 0, jx::i8>(sp, b);
            case DType::Int16: return select_rows<jx::i16, 0, jx::i16>(sp, b);
            case DType::Int32: return select_rows<jx::i32, 0, jx::i32>(sp, b);
            case DType::Int64: return select_rows<jx::i64, 0, jx::i64>(sp, b);
            case DType::UInt8: return select_rows<jx::u8, 0, jx::u8>(sp, b);
            case DType::UInt16: return select_rows<jx::u16, 0, jx::u16>(sp, b);
            case DType::UInt32: return select_rows<jx::u32, 0, jx::u32>(sp, b);
            case DType::UInt64: return select_rows<jx::u64, 0, jx::u64>(sp, b);
            default: break;
        }
    }
    switch (rp.dtype) {
        case DType::Bool: return select_rows<bool, 0, double>(sp, b);
        case DType::Int8: return select_rows<jx::i8, 0, double>(sp, b);
        case DType::Int16: return select_rows<jx::i16, 0, double>(sp, b);
        case DType::Int32: return select_rows<jx::i32, 0, double>(sp, b);
        case DType::Int64: return select_rows<jx::i64, 0, double>(sp, b);
        case DType::UInt8: return select_rows<jx::u8, 0, double>(sp, b);
        case DType::UInt16: return select_rows<jx::u16, 0, double>(sp, b);
        case DType::UInt32: return select_rows<jx::u32, 0, double>(sp, b);
        case DType::UInt64: return select_rows<jx::u64, 0, double>(sp, b);
        case DType::Float16: return wide ? select_rows<float, 1, double>(sp, b) : select_rows<float, 1, float>(sp, b);
        case DType::BFloat16: return wide ? select_rows<float, 2, double>(sp, b) : select_rows<float, 2, float>(sp, b);
        case DType::Float32: return wide ? select_rows<float, 0, double>(sp, b) : select_rows<float, 0, float>(sp, b);
        case DType::Float64: return select_rows<double, 0, double>(sp, b);
        case DType::Complex64: return select_rows<jx::c64, 0, jx::c64>(sp, b);
        case DType::Complex128:
            return select_rows<jx::c128, 0, jx::c128>(sp, b);
            JIT_TEMPORAL_CASES break;  // lowered to int64 by dsl/lower/: never here
        case DType::Bytes:
        case DType::Str:
        case DType::Utf8: break;
    }
    throw InternalError("cpu backend: an order statistic of an unknown dtype");
}

void CpuPrepared::run(const detail::RunArgs& args) {
    if (args.inputs.size() != program_.inputs.size())
        throw ArgumentError(
            fmt::format("the program takes {} inputs, {} given", program_.inputs.size(), args.inputs.size()));
    if (args.outputs.size() != program_.outputs.size())
        throw ArgumentError(
            fmt::format("the program has {} outputs, {} given", program_.outputs.size(), args.outputs.size()));
    if (args.scalars.size() != program_.scalars.size())
        throw ArgumentError(
            fmt::format("the program takes {} scalars, {} given", program_.scalars.size(), args.scalars.size()));
    for (const Array& a : args.inputs)
        if (a.backend() != Backend::Cpu)
            throw ArgumentError("the CPU backend needs inputs in host memory: " + a.describe());
    for (std::size_t o = 0; o < args.outputs.size(); ++o)
        if (args.outputs[o].defined() != !program_.is_dynamic(program_.outputs[o].node))
            throw ArgumentError(
                fmt::format("output {} is {}", o,
                            args.outputs[o].defined() ? "given, but the data decides its length" : "not given"));
    for (const Array& a : args.outputs)
        if (a.defined() && a.backend() != Backend::Cpu)
            throw ArgumentError("the CPU backend needs outputs in host memory: " + a.describe());

    // Host storage like an array's: not zero-filled (every element is written before it is
    // read), and a large one reuses a block freed by an earlier run instead of faulting in
    // fresh pages on every run.
    std::vector<std::shared_ptr<Storage>> temps;
    for (const ir::NodeId n : schedule_.temps) {
        const ir::Node& nd = program_.node(n);
        try {
            temps.push_back(core::host_storage(static_cast<std::size_t>(shape_size(nd.shape)) * itemsize(nd.dtype)));
        } catch (const OutOfMemoryError& e) {
            throw detail::OutOfMemoryAt(OutOfMemoryError(e.requested(), e.available(),
                                                         fmt::format("an intermediate {} array of shape {}",
                                                                     dtype_name(nd.dtype), shape_to_string(nd.shape))),
                                        nd.span);
        }
    }
    Ctx ctx{&args, &temps};
    detail::CallControl* ctl = args.control;
    if (ctl) {
        std::uint64_t total = 0;
        for (const auto& st : schedule_.stages) total += static_cast<std::uint64_t>(shape_size(st.shape));
        ctl->begin(Progress::Phase::Run, Progress::Unit::Elements, total);
    }
    // One Bound per thread, reused by every run (its vectors keep their capacity); a run that
    // starts while this thread's is in use (a nested call) gets its own.
    thread_local Bound kept;
    thread_local bool kept_busy = false;
    Bound nested;
    const bool owner = !kept_busy;
    Bound& b = owner ? kept : nested;
    struct Release {
        bool owner;
        ~Release() {
            if (owner) kept_busy = false;
        }
    } release{owner};
    kept_busy = true;
    for (std::size_t si = 0; si < plans_.size(); ++si) {
        const StagePlan& sp = plans_[si];
        if (ctl) ctl->check();  // between stages
        if (pass_of_[si] >= 0 && shape_size(sp.shape) > kBlock) {
            // A pass of several stages in one sweep. Small iteration spaces run stage by stage:
            // the long-row reduction path (partials per block) is the one a pass shares, and it
            // is for more than one block.
            const StagePlan& pp = passes_[static_cast<std::size_t>(pass_of_[si])];
            if (args.started_outputs)
                for (const StorePlan& st : pp.stores) args.started_outputs[st.output] = true;
            try {
                run_pass(pp, ctx, b);
            } catch (const detail::OutOfMemoryAt&) {
                throw;
            } catch (const OutOfMemoryError& e) {
                throw detail::OutOfMemoryAt(e, span_of(pp));
            } catch (const std::bad_alloc&) {
                throw detail::OutOfMemoryAt(OutOfMemoryError(0, core::host_memory_available(), "a kernel's own work"),
                                            span_of(pp));
            }
            si = static_cast<std::size_t>(pp.end_stage) - 1;
            continue;
        }
        if (args.started_outputs)  // a reduction marks its output where it starts writing it (run_reduce)
            for (const StorePlan& st : sp.stores) args.started_outputs[st.output] = true;
        try {
            if (sp.kind == ir::Stage::Kind::Compact) {
                run_compact(si, ctx, b);
                continue;
            }
            bind(sp, ctx, b);
            if (sp.is_select()) run_select(sp, b);
            else if (sp.kind == ir::Stage::Kind::Reduce) run_reduce(sp, b);
            else if (sp.kind == ir::Stage::Kind::Scan) run_scan(sp, b);
            else run_elementwise(sp, b);
        } catch (const detail::OutOfMemoryAt&) {
            throw;
        } catch (const OutOfMemoryError& e) {
            throw detail::OutOfMemoryAt(e, span_of(sp));
        } catch (const std::bad_alloc&) {
            throw detail::OutOfMemoryAt(OutOfMemoryError(0, core::host_memory_available(), "a kernel's own work"),
                                        span_of(sp));
        }
    }
}

// The text a stage computes, for its messages: its reduction, scan or order statistic (the
// call: `median(x)`), its selection (`x[x > 0]`), else the value it stores first (the
// statement's right-hand side). Empty when no node of it has a span.
SourceSpan CpuPrepared::span_of(const StagePlan& sp) const {
    for (const ReducePlan& r : sp.reduces)
        if (!program_.node(r.reduce_node).span.empty()) return program_.node(r.reduce_node).span;
    for (const auto* list : {&sp.compacts, &sp.stores})
        for (const StorePlan& st : *list)
            if (!program_.node(st.node).span.empty()) return program_.node(st.node).span;
    return {};
}

}  // namespace jit::cpu::impl
