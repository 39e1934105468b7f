// Sharded evaluation (include/jit/sharded.hpp): one program over row blocks on several devices,
// each block on its device's runtime, all at once; reductions over the split axis combined on the
// host by jitexpr's own CPU kernels. What each statement gives (split, combined, replicated) is
// run::decide's (run/shards.hpp), from what jit::check and jit::outline say of the program and
// what its outputs' own nodes need beyond a shard's rows by their kinds (dsl::split_rows, the
// row split streaming and jit::check's program info read too), before any device runs anything;
// run::sharded (run/sharded.cpp) runs that decision.
#include <jit/check.hpp>
#include <jit/error.hpp>
#include <jit/jit.hpp>
#include <jit/sharded.hpp>

#include "api/checked.hpp"
#include "core/device.hpp"
#include "dsl/rows.hpp"
#include "run/decide.hpp"
#include "run/ways.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

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

// The Sharded inputs as the decision reads them (in name order; scalars are not inputs).
std::vector<run::shards::Input> inputs_of(const ShardedEnvironment& env) {
    std::vector<run::shards::Input> inputs;
    for (const auto& [name, v] : env) {
        const auto* s = std::get_if<Sharded>(&v);
        if (!s) continue;
        using Kind = run::shards::Input::Kind;
        const Kind kind = s->kind() == Sharded::Kind::Split        ? Kind::Split
                          : s->kind() == Sharded::Kind::Replicated ? Kind::Replicated
                                                                   : Kind::Whole;
        inputs.push_back({name, kind, s->shards()});
    }
    return inputs;
}

// The program checked over the whole arrays (with the program planned for them) and over each
// shard's part of them.
struct Checked {
    CheckedPlan whole;
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
    c.whole = check_planned(text, whole_specs);
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

// The output of `program` that statement `target` gives (empty: the last statement's bare
// value), or -1 for none.
int output_of(const ir::Program& program, const std::string& target) {
    int found = -1;
    for (std::size_t o = 0; o < program.outputs.size(); ++o) {
        const ir::OutputDecl& od = program.outputs[o];
        if (od.name == target && (!target.empty() || od.node == program.result)) found = static_cast<int>(o);
    }
    return found;
}

// What the checker, the outline and the row split of the program's outputs say of each
// statement, for run::decide.
std::vector<run::shards::Statement> statements_of(std::string_view text, const Checked& checked) {
    const Outline outline = jit::outline(text);
    // What each output's own nodes need beyond a shard's rows: a selection by the data, a scan.
    dsl::RowSplit rows;
    if (checked.whole.program) rows = dsl::split_rows(*checked.whole.program, dsl::RowsOptions{.per_output = true});
    std::vector<run::shards::Statement> out;
    for (std::size_t j = 0; j < outline.statements.size(); ++j) {
        const OutlineStatement& st = outline.statements[j];
        run::shards::Statement s;
        s.target = st.target;
        s.several_targets = !st.more_targets.empty();
        s.text = std::string(text.substr(st.span.begin, st.span.end - st.span.begin));
        s.value = std::string(text.substr(st.value_span.begin, st.value_span.end - st.value_span.begin));
        s.reads = jit::parameters(s.value);
        // Slices are the text's: views and reductions of selections leave no node that says so
        // (dsl::OwnRows).
        for (const OutlineSubscript& sub : outline.subscripts)
            s.slices = s.slices || sub.statement == static_cast<int>(j);
        if (const int o = checked.whole.program ? output_of(*checked.whole.program, s.target) : -1; o >= 0) {
            s.slices = s.slices || rows.own[static_cast<std::size_t>(o)].selects;
            s.scans = rows.own[static_cast<std::size_t>(o)].scans;
        }
        for (const OutlineReduction& r : outline.reductions)
            if (r.statement == static_cast<int>(j))
                s.reductions.push_back(
                    {r.function, r.span.begin == st.value_span.begin && r.span.end == st.value_span.end});
        auto value = [&](const CheckedProgram& p) -> std::optional<run::shards::Value> {
            const CheckedValue* v = value_of(p, s.target);
            if (!v) return std::nullopt;
            return run::shards::Value{v->dtype, v->shape};
        };
        s.whole = value(checked.whole.checked);
        for (const CheckedProgram& p : checked.per_shard) s.per_shard.push_back(value(p));
        out.push_back(std::move(s));
    }
    return out;
}

// Each shard's program on its device's runtime.
class OnRuntimes final : public run::Shards {
public:
    OnRuntimes(std::string_view text, const run::shards::Layout& layout,
               const std::map<int, std::unique_ptr<Runtime>>& runtimes)
        : text_(text), layout_(layout), runtimes_(runtimes) {}
    Array run(std::size_t shard, Environment& env) override {
        return runtimes_.at(layout_.devices[shard])->run(text_, env);
    }

private:
    std::string_view text_;
    const run::shards::Layout& layout_;
    const std::map<int, std::unique_ptr<Runtime>>& runtimes_;
};

}  // namespace

namespace {

// Decided before any device runs anything (run/shards.hpp), for run and explain alike.
run::Decision decide_shards(std::string_view text, const ShardedEnvironment& env, Backend backend,
                            const std::vector<int>& devices, run::shards::Request& request) {
    request.layout = run::shards::layout(inputs_of(env), backend, devices);
    const Checked checked = check_shards(text, env, request.layout.k);
    request.statements = statements_of(text, checked);
    return run::decide(request);
}

// Each shard's environment: its part of every Sharded input, and the shared scalars.
std::vector<Environment> shard_environments(const ShardedEnvironment& env, std::size_t k) {
    std::vector<Environment> envs(k);
    for (std::size_t i = 0; i < k; ++i)
        for (const auto& [name, v] : env) {
            if (const auto* s = std::get_if<Sharded>(&v)) envs[i].emplace(name, Arg(s->shards()[i]));
            else envs[i].emplace(name, std::get<Arg>(v));
        }
    return envs;
}

}  // namespace

ShardedResult ShardedRuntime::run(std::string_view text, const ShardedEnvironment& env) {
    run::shards::Request request;
    const run::Decision d = decide_shards(text, env, impl_->backend, impl_->devices, request);
    const run::shards::Layout& layout = d.sharding->layout;
    std::vector<Environment> envs = shard_environments(env, layout.k);
    OnRuntimes shards(text, layout, impl_->runtimes);
    ShardedResult result;
    for (run::ShardValue& v : run::sharded(d, shards, envs)) {
        Sharded value;
        switch (v.out) {
            case run::shards::StatementPlan::Out::Split: value = Sharded::from_shards(std::move(v.parts)); break;
            case run::shards::StatementPlan::Out::Replicated: value = Sharded::from_replicas(std::move(v.parts)); break;
            case run::shards::StatementPlan::Out::Whole: value = Sharded::from_whole(std::move(v.parts.front())); break;
        }
        if (v.name.empty()) result.value = value;
        else result.assigned.insert_or_assign(v.name, value);
    }
    if (!d.sharding->result.empty()) result.value = result.assigned.at(d.sharding->result);
    return result;
}

std::string ShardedRuntime::explain(std::string_view text, const ShardedEnvironment& env,
                                    const ExplainOptions& options) {
    run::shards::Request request;
    const run::Decision d = decide_shards(text, env, impl_->backend, impl_->devices, request);
    const run::shards::Layout& layout = d.sharding->layout;
    std::string out = run::shards::describe(*d.sharding, request, impl_->backend);
    out += fmt::format("each shard runs these statements over its own rows; the plan of shard 0:\n");
    const std::string first =
        runtime(layout.devices.front()).explain(text, shard_environments(env, 1).front(), options);
    for (std::size_t b = 0; b < first.size();) {
        const std::size_t e = std::min(first.find('\n', b), first.size());
        out += "  ";
        out.append(first, b, e - b);
        out += '\n';
        b = e + 1;
    }
    return out;
}

}  // namespace jit
