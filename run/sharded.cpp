// jitexpr — row blocks on several devices at once (see ways.hpp): each shard's program on its
// device, the statements' values assembled, reductions' partials combined by the CPU kernel
// table.
#include "run/ways.hpp"

#include "backend/cpu/combine.hpp"

#include <jit/error.hpp>

#include <exception>
#include <thread>

namespace jit::run {

namespace {

// `partials` (one per shard that has rows, each of the whole value's shape) folded element by
// element through the CPU kernel table (cpu::combine); a mean weighs each shard's by its rows.
Array combine(const shards::StatementPlan& plan, const std::vector<Array>& partials,
              const std::vector<std::int64_t>& rows) {
    std::vector<std::size_t> use;
    for (std::size_t i = 0; i < partials.size(); ++i)
        if (rows[i] > 0) use.push_back(i);
    if (use.empty()) use.push_back(0);  // no rows anywhere: every partial is the empty reduction
    const shards::Value& whole = plan.whole;
    const auto width = static_cast<std::size_t>(shape_size(whole.shape));
    const std::size_t bytes = width * itemsize(whole.dtype);
    std::vector<unsigned char> stacked(use.size() * bytes);
    std::vector<std::int64_t> weights;
    for (std::size_t k = 0; k < use.size(); ++k) {
        partials[use[k]].copy_to_host(stacked.data() + k * bytes);
        weights.push_back(rows[use[k]]);
    }
    Array out = Array::empty(whole.dtype, whole.shape, Backend::Cpu);
    cpu::combine(plan.reduction, whole.dtype, stacked.data(), use.size(), width, weights.data(), out.data());
    return out;
}

}  // namespace

std::vector<ShardValue> sharded(const Decision& d, Shards& shards, std::span<Environment> envs) {
    if (d.way != Way::Sharded || !d.sharding || envs.size() != d.sharding->layout.k)
        throw InternalError("run::sharded: not a sharded decision for these shards");
    const shards::Sharding& s = *d.sharding;
    const std::size_t k = s.layout.k;
    std::vector<Array> values(k);
    std::vector<std::exception_ptr> errors(k);
    {
        std::vector<std::thread> threads;
        threads.reserve(k);
        for (std::size_t i = 0; i < k; ++i) {
            auto work = [&, i] {
                try {
                    values[i] = shards.run(i, envs[i]);
                } catch (...) {
                    errors[i] = std::current_exception();
                }
            };
            if (i + 1 == k) {
                work();  // the calling thread takes the last shard
            } else {
                try {
                    threads.emplace_back(work);
                } catch (...) {
                    work();  // no thread to be had: in turn
                }
            }
        }
        for (auto& t : threads) t.join();
    }
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);

    std::vector<ShardValue> out;
    out.reserve(s.statements.size());
    for (const shards::StatementPlan& plan : s.statements) {
        ShardValue v;
        v.name = plan.name;
        v.out = plan.out;
        v.parts.resize(k);
        for (std::size_t i = 0; i < k; ++i) {
            if (plan.name.empty()) {
                v.parts[i] = values[i];
            } else {
                auto it = envs[i].find(plan.name);
                if (it == envs[i].end() || !it->second.is_array())
                    throw ArgumentError("sharded evaluation: a statement gave no array");
                v.parts[i] = it->second.array();
            }
        }
        if (plan.out == shards::StatementPlan::Out::Whole) v.parts = {combine(plan, v.parts, s.layout.rows)};
        out.push_back(std::move(v));
    }
    return out;
}

}  // namespace jit::run
