// Sharded evaluation (include/jit/sharded.hpp): one program over row blocks on several devices,
// each block on its device's runtime, all at once; reductions over the split axis combined on the
// host by jitexpr's own CPU kernels. What each statement gives (split, combined, replicated) is
// decided from jit::check and jit::outline before any device runs anything.
#include <jit/check.hpp>
#include <jit/error.hpp>
#include <jit/jit.hpp>
#include <jit/language.hpp>
#include <jit/sharded.hpp>

#include "backend/cpu/combine.hpp"
#include "core/device.hpp"
#include "dsl/ops.hpp"
#include "dsl/tree_walk.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace jit {

namespace {

std::string where(const Array& a) { return a.place(); }

void need(bool ok, const std::string& what) {
    if (!ok) throw ArgumentError(what);
}

Shape tail(const Shape& s) { return Shape(s.begin() + 1, s.end()); }

}  // namespace

// ---- Sharded

Sharded Sharded::from_shards(std::vector<Array> shards) {
    need(!shards.empty(), "Sharded::from_shards: no shards");
    const Array& first = shards.front();
    for (std::size_t i = 0; i < shards.size(); ++i) {
        const Array& s = shards[i];
        need(s.defined(), fmt::format("Sharded::from_shards: shard {} is undefined", i));
        need(s.ndim() >= 1, fmt::format("Sharded::from_shards: shard {} is 0-d; shards are blocks of rows", i));
        need(s.dtype() == first.dtype() && s.ndim() == first.ndim() && tail(s.shape()) == tail(first.shape()),
             fmt::format("Sharded::from_shards: shard {} is {} but shard 0 is {}: shards differ only in their rows", i,
                         s.describe(), first.describe()));
        need(s.backend() == first.backend(),
             fmt::format("Sharded::from_shards: shard {} is on {}, shard 0 on {}", i, where(s), where(first)));
    }
    Sharded r;
    r.kind_ = Kind::Split;
    r.parts_ = std::move(shards);
    return r;
}

Sharded Sharded::from_replicas(std::vector<Array> replicas) {
    need(!replicas.empty(), "Sharded::from_replicas: no replicas");
    for (std::size_t i = 0; i < replicas.size(); ++i) {
        need(replicas[i].defined(), fmt::format("Sharded::from_replicas: replica {} is undefined", i));
        need(replicas[i].dtype() == replicas[0].dtype() && replicas[i].shape() == replicas[0].shape() &&
                 replicas[i].backend() == replicas[0].backend(),
             fmt::format("Sharded::from_replicas: replica {} is {} but replica 0 is {}", i, replicas[i].describe(),
                         replicas[0].describe()));
    }
    Sharded r;
    r.kind_ = Kind::Replicated;
    r.parts_ = std::move(replicas);
    return r;
}

Sharded Sharded::from_whole(Array whole) {
    need(whole.defined(), "Sharded::from_whole: the array is undefined");
    Sharded r;
    r.kind_ = Kind::Whole;
    r.parts_.push_back(std::move(whole));
    return r;
}

Sharded Sharded::split(const Array& whole, const std::vector<int>& devices, Backend backend) {
    need(!devices.empty(), "Sharded::split: no devices");
    need(whole.defined() && whole.ndim() >= 1, "Sharded::split: needs an array of at least one dimension");
    const std::int64_t n = whole.shape()[0];
    const auto k = static_cast<std::int64_t>(devices.size());
    std::vector<Array> parts;
    std::int64_t lo = 0;
    for (std::int64_t i = 0; i < k; ++i) {
        const std::int64_t rows = n / k + (i < n % k ? 1 : 0);
        parts.push_back(whole.slice(0, lo, lo + rows).to(backend, devices[static_cast<std::size_t>(i)]));
        lo += rows;
    }
    return from_shards(std::move(parts));
}

Sharded Sharded::replicate(const Array& whole, const std::vector<int>& devices, Backend backend) {
    need(!devices.empty(), "Sharded::replicate: no devices");
    std::vector<Array> parts;
    for (int d : devices) parts.push_back(whole.to(backend, d));
    return from_replicas(std::move(parts));
}

DType Sharded::dtype() const {
    need(!parts_.empty(), "Sharded: empty");
    return parts_.front().dtype();
}

Shape Sharded::shape() const {
    need(!parts_.empty(), "Sharded: empty");
    Shape s = parts_.front().shape();
    if (kind_ == Kind::Split) {
        s[0] = 0;
        for (const Array& p : parts_) s[0] += p.shape()[0];
    }
    return s;
}

const Array& Sharded::whole() const {
    need(kind_ == Kind::Whole,
         "Sharded::whole: the value is split or replicated; use gather() to copy it into one array");
    return parts_.front();
}

Array Sharded::gather(Backend backend, int device) const {
    need(!parts_.empty(), "Sharded: empty");
    if (kind_ != Kind::Split) return parts_.front().to(backend, device);
    const Shape s = shape();
    Array host;
    if (dtype() == DType::Utf8) {
        // Rows of no fixed size: the bytes concatenated, the offsets rebased.
        host = core::concat_utf8(parts_, s);
    } else if (is_string(dtype())) {
        // S and U rows of the widest shard's width, a narrower shard's values padded with NULs
        // (which do not count), as np.concatenate widens S3 and S5 to S5.
        std::size_t w = 0;
        for (const Array& p : parts_) w = std::max(w, p.itemsize());
        host = Array::empty(dtype(), w, s, Backend::Cpu);
        auto* out = static_cast<unsigned char*>(host.data());
        std::vector<unsigned char> narrow;
        for (const Array& p : parts_) {
            const auto n = static_cast<std::size_t>(p.size());
            if (p.itemsize() == w) {
                p.copy_to_host(out);
            } else {
                narrow.resize(p.nbytes());
                p.copy_to_host(narrow.data());
                std::memset(out, 0, n * w);
                for (std::size_t i = 0; i < n; ++i)
                    std::memcpy(out + i * w, narrow.data() + i * p.itemsize(), p.itemsize());
            }
            out += n * w;
        }
    } else {
        host = Array::empty(dtype(), s, Backend::Cpu);
        const std::size_t row_bytes = static_cast<std::size_t>(shape_size(tail(s))) * itemsize(dtype());
        auto* out = static_cast<unsigned char*>(host.data());
        for (const Array& p : parts_) {
            p.copy_to_host(out);
            out += static_cast<std::size_t>(p.shape()[0]) * row_bytes;
        }
    }
    return backend == Backend::Cpu && device == 0 ? host : host.to(backend, device);
}

// ---- ShardedRuntime

struct ShardedRuntime::Impl {
    std::vector<int> devices;
    Backend backend = Backend::Cuda;
    std::map<int, std::unique_ptr<Runtime>> runtimes;
};

ShardedRuntime::ShardedRuntime(std::vector<int> devices, RuntimeOptions options) : impl_(std::make_unique<Impl>()) {
    need(!devices.empty(), "ShardedRuntime: no devices");
    impl_->devices = std::move(devices);
    if (options.backend == Backend::Auto) options.backend = Backend::Cuda;
    impl_->backend = options.backend;
    for (int d : impl_->devices) {
        if (impl_->runtimes.count(d)) continue;
        RuntimeOptions o = options;
        o.device = d;
        impl_->runtimes.emplace(d, std::make_unique<Runtime>(o));
    }
}

ShardedRuntime::~ShardedRuntime() = default;

const std::vector<int>& ShardedRuntime::devices() const { return impl_->devices; }
Backend ShardedRuntime::backend() const { return impl_->backend; }

Runtime& ShardedRuntime::runtime(int device) {
    auto it = impl_->runtimes.find(device);
    need(it != impl_->runtimes.end(), fmt::format("ShardedRuntime: device {} is not one of its devices", device));
    return *it->second;
}

Sharded ShardedRuntime::eval(std::string_view text, const ShardedEnvironment& env) { return run(text, env).value; }

namespace {

enum class Out { Split, Whole, Replicated };

struct StatementPlan {
    std::string name;  // empty: the last statement's bare value
    Out out = Out::Split;
    ir::Op reduction = ir::Op::Sum;  // Whole: the reduction its partials are combined with
};

ValueSpec spec_of(const Array& a) {
    return is_string(a.dtype()) ? ValueSpec::strings(a.dtype(), a.itemsize(), a.shape())
                                : ValueSpec::array(a.dtype(), a.shape());
}

ValueSpec spec_of(const Arg& a) {
    if (a.is_array()) return spec_of(a.array());
    switch (a.value().index()) {
        case 1: return ValueSpec::host_scalar(DType::Bool);
        case 2: return ValueSpec::host_scalar(DType::Int64);
        case 3: return ValueSpec::host_scalar(DType::Float64);
        default: return ValueSpec::host_scalar(DType::Complex128);
    }
}

const CheckedValue* value_of(const CheckedProgram& p, const std::string& name) {
    if (name.empty()) return p.result ? &*p.result : nullptr;
    for (const auto& v : p.assigned)
        if (v.name == name) return &v;
    return nullptr;
}

// The reduction named `function` (a spelling of the op table's, as jit::outline reports it).
std::optional<ir::Op> reduction_named(std::string_view function) {
    for (const ir::OpInfo& i : ir::op_table())
        if (i.kind == ir::OpKind::Reduction && ir::spelling(i.op) == function) return i.op;
    return std::nullopt;
}

// The combine step on the host: `partials` (one per shard that has rows; each of the whole
// value's shape) folded element by element through the CPU kernel table (cpu::combine); a mean
// weighs each shard's by its rows.
Array combine(ir::Op op, const std::vector<Array>& partials, const std::vector<std::int64_t>& rows,
              const CheckedValue& whole) {
    std::vector<std::size_t> use;
    for (std::size_t i = 0; i < partials.size(); ++i)
        if (rows[i] > 0) use.push_back(i);
    if (use.empty()) use.push_back(0);  // no rows anywhere: every partial is the empty reduction
    const auto width = static_cast<std::size_t>(shape_size(whole.shape));
    const std::size_t bytes = width * itemsize(whole.dtype);
    std::vector<unsigned char> stacked(use.size() * bytes);
    std::vector<std::int64_t> weights;
    for (std::size_t k = 0; k < use.size(); ++k) {
        partials[use[k]].copy_to_host(stacked.data() + k * bytes);
        weights.push_back(rows[use[k]]);
    }
    Array out = Array::empty(whole.dtype, whole.shape, Backend::Cpu);
    cpu::combine(op, whole.dtype, stacked.data(), use.size(), width, weights.data(), out.data());
    return out;
}

using tree::any_node;  // dsl/tree_walk.hpp

// Whether the expression indexes anything (a[1:], m[:, 0]).
bool has_subscript(const parsed::Expr& root) {
    return any_node(root, [](const parsed::Expr& e) { return e.kind == parsed::ExprKind::Subscript; });
}

// Whether `e` calls a scan (cumsum, ...): over split rows each shard would scan its own alone.
bool has_scan(const parsed::Expr& root) {
    return any_node(root, [](const parsed::Expr& e) {
        if (e.kind != parsed::ExprKind::Call) return false;
        for (const FunctionInfo& f : functions())
            if (f.kind == FunctionInfo::Kind::Scan &&
                std::find(f.names.begin(), f.names.end(), e.text) != f.names.end())
                return true;
        return false;
    });
}

// The shards of the inputs: how many, on which devices, and the row counts of the split ones.
struct Layout {
    std::size_t k = 0;
    std::vector<int> devices;        // per shard
    std::vector<std::int64_t> rows;  // per shard, of the split inputs
    std::int64_t total_rows = 0;
    std::set<std::string, std::less<>> split_names;
};

Layout layout_of(const ShardedEnvironment& env, Backend backend) {
    Layout l;
    std::string first_split;
    for (const auto& [name, v] : env) {
        const auto* s = std::get_if<Sharded>(&v);
        if (!s) continue;
        need(s->kind() != Sharded::Kind::Whole,
             fmt::format("'{}' is one whole array, not on the shards' devices: pass Sharded::replicate(...) or "
                         "Sharded::split(...) of it (jitexpr copies between devices only when asked)",
                         name));
        const auto& parts = s->shards();
        for (const Array& a : parts)
            if (a.backend() != backend)
                throw DeviceMismatchError(
                    fmt::format("a shard of '{}' is on {} but this sharded runtime evaluates on {}", name, where(a),
                                backend_name(backend)));
        if (l.k == 0) {
            l.k = parts.size();
            for (const Array& a : parts) l.devices.push_back(a.device());
        }
        need(parts.size() == l.k, fmt::format("'{}' has {} shards but another input has {}", name, parts.size(), l.k));
        for (std::size_t i = 0; i < l.k; ++i)
            if (parts[i].device() != l.devices[i])
                throw DeviceMismatchError(
                    fmt::format("shard {} of '{}' is on {} but shard {} of another input is on "
                                "device {}: every input's shard i must be on one device",
                                i, name, where(parts[i]), i, l.devices[i]));
        if (s->kind() == Sharded::Kind::Split) {
            l.split_names.insert(name);
            std::vector<std::int64_t> r;
            for (const Array& a : parts) r.push_back(a.shape()[0]);
            if (first_split.empty()) {
                first_split = name;
                l.rows = r;
            }
            need(r == l.rows,
                 fmt::format("'{}' and '{}' are split into blocks of different row counts", name, first_split));
        }
    }
    need(l.k > 0, "sharded evaluation needs at least one Sharded input");
    for (auto r : l.rows) l.total_rows += r;
    return l;
}

// The program checked over the whole arrays and over each shard's part of them.
struct Checked {
    CheckedProgram whole;
    std::vector<CheckedProgram> per_shard;
};

Checked check_shards(std::string_view text, const ShardedEnvironment& env, std::size_t k) {
    Specs whole_specs;
    std::vector<Specs> shard_specs(k);
    for (const auto& [name, v] : env) {
        if (const auto* s = std::get_if<Sharded>(&v)) {
            std::size_t width = 0;  // a string column's: the widest shard's
            for (const Array& p : s->shards()) width = std::max(width, p.itemsize());
            whole_specs.emplace(name, is_string(s->dtype()) ? ValueSpec::strings(s->dtype(), width, s->shape())
                                                            : ValueSpec::array(s->dtype(), s->shape()));
            for (std::size_t i = 0; i < k; ++i) shard_specs[i].emplace(name, spec_of(s->shards()[i]));
        } else {
            const Arg& a = std::get<Arg>(v);
            need(!a.is_array(),
                 fmt::format("'{}' is a plain array: pass Sharded::split(...) or Sharded::replicate(...) "
                             "of it, so that each device has its part",
                             name));
            whole_specs.emplace(name, spec_of(a));
            for (auto& sp : shard_specs) sp.emplace(name, spec_of(a));
        }
    }
    Checked c;
    c.whole = check(text, whole_specs);
    for (std::size_t i = 0; i < k; ++i) {
        try {
            c.per_shard.push_back(check(text, shard_specs[i]));
        } catch (const Error& e) {
            throw ArgumentError(
                fmt::format("the program fits the whole arrays but not the rows of shard {}: split "
                            "inputs must have the result's axis 0 as their axis 0 (replicate the "
                            "others); for shard {}: {}",
                            i, i, e.what()));
        }
    }
    return c;
}

// What each statement gives (split, combined, replicated), from the checker alone; an
// ArgumentError for a statement sharding does not take.
std::vector<StatementPlan> plan_statements(std::string_view text, const Outline& outline, const Checked& checked,
                                           const Layout& layout) {
    const std::size_t k = layout.k;
    std::vector<StatementPlan> plans;
    std::set<std::string, std::less<>> split_dependent(layout.split_names.begin(), layout.split_names.end());
    std::set<std::string, std::less<>> combined, assigned_once;
    for (std::size_t j = 0; j < outline.statements.size(); ++j) {
        const OutlineStatement& st = outline.statements[j];
        const std::string stmt(text.substr(st.span.begin, st.span.end - st.span.begin));
        need(st.more_targets.empty(),
             fmt::format("'{}' assigns several names; sharded evaluation takes one name a statement (assign the "
                         "results of the function in statements of their own)",
                         stmt));
        StatementPlan plan;
        plan.name = st.target;
        if (plan.name.empty() && j + 1 != outline.statements.size()) continue;  // a bare value that is dropped
        need(plan.name.empty() || assigned_once.insert(plan.name).second,
             fmt::format("'{}' is assigned twice; in sharded evaluation each name is assigned once", plan.name));
        const std::string value(text.substr(st.value_span.begin, st.value_span.end - st.value_span.begin));
        bool reads_split = false;
        for (const std::string& n : jit::parameters(value)) {
            need(!combined.count(n), fmt::format("'{}' reads '{}', a reduction combined across the devices; evaluate "
                                                 "what uses it as a second program",
                                                 plan.name.empty() ? value : plan.name, n));
            reads_split = reads_split || split_dependent.count(n) > 0;
        }
        // A slice of rows on each shard is not a slice of the whole (a[::-1] would reverse each block).
        if (reads_split)
            for (const auto& ps : parsed::parse(value).statements)
                need(!ps.value || !has_subscript(*ps.value),
                     fmt::format("'{}' indexes or slices an array (a[...]); sharded evaluation over split inputs does "
                                 "not take slices: evaluate it as a program of its own",
                                 plan.name.empty() ? value : plan.name));
        // A running sum over the rows of one shard is not the running sum over all of them.
        if (reads_split)
            for (const auto& ps : parsed::parse(value).statements)
                need(!ps.value || !has_scan(*ps.value),
                     fmt::format("'{}' has a scan (cumsum, cumprod, ...); sharded evaluation over split inputs does "
                                 "not take scans: evaluate it as a program of its own",
                                 plan.name.empty() ? value : plan.name));
        std::vector<const OutlineReduction*> reductions;
        for (const auto& r : outline.reductions)
            if (r.statement == static_cast<int>(j)) reductions.push_back(&r);
        const CheckedValue* w = value_of(checked.whole, plan.name);
        need(w != nullptr, "sharded evaluation: the checker did not report a statement's value");
        auto shard_value = [&](std::size_t i) { return value_of(checked.per_shard[i], plan.name); };
        bool rows_follow = w->shape.size() >= 1 && w->shape[0] == layout.total_rows;
        bool same_everywhere = true;
        for (std::size_t i = 0; i < k; ++i) {
            const CheckedValue* s = shard_value(i);
            rows_follow = rows_follow && s && s->shape.size() == w->shape.size() && s->shape[0] == layout.rows[i] &&
                          tail(s->shape) == tail(w->shape);
            same_everywhere = same_everywhere && s && s->shape == w->shape;
        }
        if (!reads_split) {
            plan.out = Out::Replicated;
        } else if (reductions.empty() || (k > 1 && rows_follow && !same_everywhere)) {
            need(rows_follow,
                 fmt::format("'{}' does not keep the rows of the split inputs as its axis 0 ({} for inputs of {} "
                             "rows); split inputs whose axis 0 is the result's axis 0",
                             plan.name.empty() ? value : plan.name, shape_to_string(w->shape), layout.total_rows));
            // A reduction over other axes only keeps the rows: each device's value is its rows' own.
            plan.out = Out::Split;
        } else {
            const OutlineReduction& r = *reductions.front();
            need(reductions.size() == 1 && r.span.begin == st.value_span.begin && r.span.end == st.value_span.end,
                 fmt::format("'{}': a reduction over the split rows is combined across devices only when it is the "
                             "whole value of a statement (s = sum(a * b)); make it a statement of its own",
                             value));
            const std::optional<ir::Op> op = reduction_named(r.function);
            need(op && cpu::can_combine(*op, w->dtype),
                 fmt::format("'{}': {} over the split rows is not combined across devices (sum, prod, min, max, any, "
                             "all and mean are); gather the array first",
                             value, r.function));
            need(same_everywhere || k == 1,
                 fmt::format("'{}': the value's shape depends on the shard ({}), so it cannot be combined", value,
                             shape_to_string(w->shape)));
            plan.out = Out::Whole;
            plan.reduction = *op;
        }
        if (!plan.name.empty()) {
            if (plan.out != Out::Replicated) split_dependent.insert(plan.name);
            if (plan.out == Out::Whole) combined.insert(plan.name);
        }
        plans.push_back(std::move(plan));
    }
    return plans;
}

// The program on every shard at once, each on its device's runtime (the calling thread takes
// the last shard): each shard's environment afterwards, and its value in `values`.
std::vector<Environment> run_shards(std::string_view text, const ShardedEnvironment& env, const Layout& layout,
                                    const std::map<int, std::unique_ptr<Runtime>>& runtimes,
                                    std::vector<Array>& values) {
    const std::size_t k = layout.k;
    std::vector<Environment> envs(k);
    values.assign(k, Array());
    for (std::size_t i = 0; i < k; ++i)
        for (const auto& [name, v] : env) {
            if (const auto* s = std::get_if<Sharded>(&v)) envs[i].emplace(name, Arg(s->shards()[i]));
            else envs[i].emplace(name, std::get<Arg>(v));
        }
    std::vector<std::exception_ptr> errors(k);
    {
        std::vector<std::thread> threads;
        threads.reserve(k);
        for (std::size_t i = 0; i < k; ++i) {
            Runtime* rt = runtimes.at(layout.devices[i]).get();
            auto work = [&, i, rt] {
                try {
                    values[i] = rt->run(text, envs[i]);
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
    return envs;
}

}  // namespace

ShardedResult ShardedRuntime::run(std::string_view text, const ShardedEnvironment& env) {
    const Layout layout = layout_of(env, impl_->backend);
    for (int d : layout.devices)
        need(impl_->runtimes.count(d) > 0, fmt::format("a shard is on device {}, which is not one of this runtime's "
                                                       "devices",
                                                       d));
    const Checked checked = check_shards(text, env, layout.k);
    const Outline outline = jit::outline(text);
    const std::vector<StatementPlan> plans = plan_statements(text, outline, checked, layout);
    std::vector<Array> values;
    std::vector<Environment> envs = run_shards(text, env, layout, impl_->runtimes, values);

    // ---- the values, assembled
    const std::size_t k = layout.k;
    ShardedResult result;
    for (const StatementPlan& plan : plans) {
        std::vector<Array> parts(k);
        for (std::size_t i = 0; i < k; ++i) {
            if (plan.name.empty()) {
                parts[i] = values[i];
            } else {
                auto it = envs[i].find(plan.name);
                need(it != envs[i].end() && it->second.is_array(), "sharded evaluation: a statement gave no array");
                parts[i] = it->second.array();
            }
        }
        Sharded v;
        switch (plan.out) {
            case Out::Split: v = Sharded::from_shards(std::move(parts)); break;
            case Out::Replicated: v = Sharded::from_replicas(std::move(parts)); break;
            case Out::Whole:
                v = Sharded::from_whole(
                    combine(plan.reduction, parts, layout.rows, *value_of(checked.whole, plan.name)));
                break;
        }
        if (plan.name.empty()) result.value = v;
        else result.assigned.insert_or_assign(plan.name, v);
    }
    if (!outline.statements.empty() && !outline.statements.back().target.empty())
        result.value = result.assigned.at(outline.statements.back().target);
    return result;
}

}  // namespace jit
