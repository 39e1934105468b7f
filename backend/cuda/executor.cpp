// jitexpr — the CUDA backend: prepare (build kernels, find or compile them, tiers and layout
// variants, workspace) and run (launch.cpp). See executor.hpp.
#include "backend/cuda/executor.hpp"

#include "backend/cuda/launch.hpp"
#include "backend/cuda/parallel.hpp"
#include "backend/cuda/tiers.hpp"

#include <jit/error.hpp>

#include <cuda.h>  // CU_STREAM_PER_THREAD

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace jit::cuda {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

using codegen::KernelKind;
using codegen::KernelSource;
using codegen::Param;

class CudaPrepared final : public detail::Prepared {
public:
    CudaPrepared(const ir::Plan& plan, const detail::PrepareOptions& o, std::shared_ptr<ModuleCache> cache, int block)
        : plan_(plan),
          program_(plan_.program),
          schedule_(plan_.schedule),
          options_(o),
          cache_(std::move(cache)),
          block_(block),
          device_(current_device()) {
        options_.control = nullptr;  // valid during this constructor only
        detail::CallControl* const ctl = o.control;
        const DeviceInfo& dev = device_info();
        launcher_.sm_count = std::max(1, dev.sm_count);
        compile_.cc_major = dev.cc_major;
        compile_.cc_minor = dev.cc_minor;
        compile_.fast_math = o.fast_math;
        compile_.extra = o.nvrtc_options;
        auto t0 = Clock::now();
        KernelOptions ko;
        ko.block = block_;
        codegen::Emitted full = build_kernels(plan_, ko, Tier::Full);
        // Tiered: when kernels with vector paths are not yet compiled (in memory or on disk), the
        // program starts on scalar-only kernels (about half the NVRTC time where transcendental
        // functions dominate) and the full kernels compile in the background, replacing them
        // once all are loaded. Results are the same either way: each element is computed alike.
        double found_load_ms = 0;  // modules the lookups below loaded from disk
        const bool tier = starts_on_first_tier(full, o.tiered, [&](const KernelSource& k) {
            ModuleCache::Lookup lk;
            const bool found = cache_->find(k, compile_, &lk) != nullptr;
            found_load_ms += lk.load_ms;
            return found;
        });
        if (tier) {
            // A compile is coming: the full kernels, with NVRTC, in the background. Its library
            // start (long, and paid once per process) overlaps the first tier from here on.
            warm_up_nvrtc();
            const KernelOptions first = first_tier_options(ko, compile_, o.ptx_first_tier);
            main_.emitted = build_kernels(plan_, first, Tier::ScalarOnly);
            bool any_ptx = false, any_call = false;
            for (const auto& k : main_.emitted.kernels)
                if (k.ptx) {
                    any_ptx = true;
                    any_call = any_call || !k.links.empty();
                    tiers().count_ptx();
                }
            if (any_call) start_library_build();
            full_ = std::make_unique<Variant>();
            full_->emitted = std::move(full);
            info_.emit_ms = ms_since(t0) - found_load_ms;
            // PTX that the assembler rejects, or a CUBIN of it that the driver does not load, is
            // a bug of codegen/ptx.cpp, not the user's: the NVRTC kernels of the same tier take
            // over (an NVRTC error, or a lost context, still reaches the user).
            auto fall_back = [&] {
                KernelOptions nvrtc_only = first;
                nvrtc_only.ptx_sm = 0;
                main_.emitted = build_kernels(plan_, nvrtc_only, Tier::ScalarOnly);  // the NVRTC kernels
                info_ = {};
                info_.emit_ms = ms_since(t0) - found_load_ms;
                load(main_, &info_, ctl);
            };
            try {
                load(main_, &info_, ctl);
            } catch (const CompileError&) {
                if (!any_ptx) throw;
                fall_back();
            } catch (const CudaError& e) {
                if (!any_ptx || e.sticky()) throw;
                fall_back();
            }
            info_.load_ms += found_load_ms;
        } else {
            main_.emitted = std::move(full);
            info_.emit_ms = ms_since(t0) - found_load_ms;  // the lookups' disk reads and loads are load_ms
            load(main_, &info_, ctl);
            info_.load_ms += found_load_ms;
        }
        // Workspace: per ReduceAll, ScanAll and Compact kernel its partials (counts) and counter, then each temporary.
        std::size_t off = 0;
        auto align = [](std::size_t x) { return (x + 255) / 256 * 256; };
        for (auto& l : main_.kernels) {
            if (l.kernel->launch.workspace_bytes() == 0) continue;
            l.workspace_offset = off;
            off += align(l.kernel->launch.workspace_bytes());
        }
        counters_bytes_ = off;
        const ir::TempLayout temps = ir::layout_temps(program_, schedule_, 256);  // shared when lifetimes allow
        for (std::size_t t = 0; t < schedule_.temps.size(); ++t)
            launcher_.temp_offset[schedule_.temps[t]] = off + temps.offset[t];
        workspace_bytes_ = off + temps.bytes;
        upload_strings();
        if (full_) start_upgrade();
    }

    ~CudaPrepared() override {
        if (upgrade_.joinable()) upgrade_.join();
        DeviceScope scope(device_);
        for (auto& [key, sw] : workspaces_) cuda::free(sw.ws.base);
        if (strings_) cuda::free(strings_);
    }

    // The program's string constants in one device buffer, each at a multiple of 16 bytes (U's
    // code points are read 4 bytes at a time): kernel parameters point into it.
    void upload_strings() {
        if (program_.strings.empty()) return;
        std::string all;
        std::vector<std::size_t> at;
        for (const std::string& s : program_.strings) {
            at.push_back(all.size());
            all += s;
            all.resize((all.size() + 15) / 16 * 16, '\0');
        }
        all.resize(std::max<std::size_t>(all.size(), 16), '\0');
        strings_ = cuda::alloc_for(all.size(), "the program's string constants");
        cuda::copy_to_device(strings_, all.data(), all.size());
        for (std::size_t k = 0; k < program_.strings.size(); ++k) {
            long long units = static_cast<long long>(program_.strings[k].size());
            for (const ir::Node& n : program_.nodes)
                if (n.kind == ir::NodeKind::Const && n.slot == static_cast<std::int32_t>(k) && n.dtype == DType::Str)
                    units /= 4;  // code points of UCS-4
            launcher_.texts.emplace_back(static_cast<const char*>(strings_) + at[k], units);
        }
    }

    void run(const detail::RunArgs& args) override {
        DeviceScope scope(device_);  // the device this program's modules are loaded on
        check_args(args);
        const Variant* v = live_.load(std::memory_order_acquire);
        if (needs_strided(args)) v = &strided_variant();
        if (workspace_bytes_ == 0) {  // most programs: no workspace, no lock on the launch path
            launch_all(*v, args, Workspace{});
            return;
        }
        // The kernels of one call pass temporaries and reduction counters through the stream's
        // workspace: a call of this program from another thread on the same stream must not
        // queue its kernels between ours (it would overwrite a temporary before our next kernel
        // reads it), so one call's kernels are queued together; the stream runs them in order.
        StreamWorkspace& sw = workspace(args.stream);
        std::lock_guard<std::mutex> queue(sw.queue);
        launch_all(*v, args, sw.ws);
    }

    std::string source() const override {
        std::string s;
        for (const auto& k : (full_ ? *full_ : main_).emitted.kernels) {
            s += fmt::format("// ---- stage {}: {} (compiled after dsl/semantics.h and the jitexpr prelude)\n", k.stage,
                             k.name);
            s += k.body;
        }
        return s;
    }

    detail::PrepareInfo info() const override { return info_; }

private:
    // Programs of at least this many elements (all kernels together) and more than one kernel
    // are watched: the host queues kernels until they hold about this much work, then waits for
    // them before queueing more, so that a stop request is honoured at the next kernel boundary.
    // Smaller programs are queued at once, as without a control.
    static constexpr std::uint64_t kWatchElements = std::uint64_t{1} << 26;

    std::uint64_t elements_of(const Loaded& l) const {
        return static_cast<std::uint64_t>(
            shape_size(schedule_.stages[static_cast<std::size_t>(l.kernel->stage)].shape));
    }

    // Launches with stop requests honoured between kernels. Kernels are queued until the work
    // queued since the last wait reaches kWatchElements (one large kernel does), then the host
    // waits for them on an event, yielding and ticking the control (a wait that spins, like the
    // driver's own synchronisation, so the next launch follows at once). On a stop it launches
    // nothing more, waits for what it queued (a kernel is never cut short) and throws
    // CancelledError: the call returns within about one kernel's time.
    void run_watched(const Variant& v, const detail::RunArgs& args, const Workspace& ws,
                     detail::CallControl& ctl) const {
        std::uint64_t total = 0;
        for (const auto& l : v.kernels) total += elements_of(l);
        ctl.begin(Progress::Phase::Run, Progress::Unit::Elements, total);
        ctl.check();
        if (v.kernels.size() <= 1 || total < kWatchElements || !Event::supported()) {
            for (auto& l : v.kernels) launcher_.launch(l, args, ws);
            return;
        }
        std::optional<Event> queued;
        std::uint64_t pending = 0;  // elements queued since the last wait
        // Waits for everything queued; true when a stop was asked meanwhile.
        auto drain = [&] {
            if (!queued) queued.emplace();
            queued->record(args.stream);
            bool stop = false;
            while (!queued->done()) {
                stop = ctl.tick() || stop;
                std::this_thread::yield();
            }
            ctl.add_done(pending);
            pending = 0;
            return stop || ctl.stop_requested();
        };
        for (std::size_t i = 0; i < v.kernels.size(); ++i) {
            if (ctl.tick()) {
                if (pending) drain();
                detail::CallControl::throw_cancelled();
            }
            const Loaded& l = v.kernels[i];
            launcher_.launch(l, args, ws);
            pending += elements_of(l);
            if (i + 1 < v.kernels.size() && pending >= kWatchElements && drain())
                detail::CallControl::throw_cancelled();
        }
        // The last kernels stay queued: the call returns as it does without a control.
    }

    // A machine's first PTX kernels that call device functions: the device libraries
    // (codegen::device_libraries) are compiled on a thread of their own and kept on disk, so
    // that later PTX kernels link them instead of compiling each function they call. Once per
    // cache and options, and only for a cache that stores images (otherwise every process would
    // pay for them again); the kernels of this program compile their functions as before.
    void start_library_build() {
        if (!cache_->claim_library_build(compile_)) return;
        thread_local WaitForUpgrades wait_before_this_thread_exits;
        (void)wait_before_this_thread_exits;
        tiers().begin_other();
        try {
            std::thread([cache = cache_, co = compile_]() mutable {
                try {
                    (void)cache->build_libraries(co);
                } catch (...) {
                    // Only an optimisation: the functions compile one by one.
                }
                cache.reset();  // before the count: the process may be exiting once it drops
                tiers().end_other();
            }).detach();
        } catch (...) {
            tiers().end_other();  // no thread to be had: nothing is prebuilt
        }
    }

    // The background half of a tiered compile: loads full_ (compiling what is missing, which
    // also stores it in the module cache and on disk) and then switches run() to it.
    void start_upgrade() {
        thread_local WaitForUpgrades wait_before_this_thread_exits;
        (void)wait_before_this_thread_exits;
        tiers().begin();
        try {
            upgrade_ = std::thread([this] {
                DeviceScope scope(device_);
                bool ok = false;
                try {
                    load(*full_, nullptr);
                    for (std::size_t i = 0; i < full_->kernels.size() && i < main_.kernels.size(); ++i)
                        full_->kernels[i].workspace_offset = main_.kernels[i].workspace_offset;
                    live_.store(full_.get(), std::memory_order_release);
                    ok = true;
                } catch (...) {
                    // The program keeps its scalar-only kernels (a sticky error fails everything anyway).
                }
                tiers().end(ok);
            });
        } catch (...) {
            tiers().end(false);  // no thread to be had: the scalar-only kernels stay
        }
    }

    // Compiles (or finds) and loads every kernel of the variant; the kernels of a program of
    // several stages compile in parallel (NVRTC is thread-safe; the module cache is single-flight).
    // With a control (a call that can be stopped or watched): compile progress counts the
    // kernels that need compiling, and a stop request leaves the compiles not yet started
    // unstarted (those running finish and stay cached) and throws CancelledError.
    void load(Variant& v, detail::PrepareInfo* info, detail::CallControl* ctl = nullptr) {
        const std::size_t n = v.emitted.kernels.size();
        v.kernels.clear();
        v.kernels.resize(n);
        std::vector<ModuleCache::Lookup> lookups(n);
        if (ctl) {
            ctl->check();
            std::uint64_t misses = 0;
            if (ctl->wants_ticks())
                for (const auto& k : v.emitted.kernels) misses += cache_->find(k, compile_) ? 0 : 1;
            ctl->begin(Progress::Phase::Compile, Progress::Unit::Kernels, misses);
        }
        // A first tier's own kernels (those the full kernels do not share: the PTX and the
        // scalar-only ones) stay off the disk cache: a later process finds the full kernels
        // there and never asks for them. Those it shares are written in the background: the
        // store's write, with its fsyncs, would be on the first eval's path.
        using Store = ModuleCache::Store;
        std::vector<Store> to_store(n, Store::Now);
        if (&v == &main_ && full_)
            for (std::size_t i = 0; i < n; ++i) {
                const KernelSource& k = v.emitted.kernels[i];
                to_store[i] = std::any_of(full_->emitted.kernels.begin(), full_->emitted.kernels.end(),
                                          [&](const KernelSource& f) { return f.key == k.key && f.name == k.name; })
                                  ? Store::Later
                                  : Store::No;
            }
        parallel_for_watched(n, ctl, [&](std::size_t i) {
            DeviceScope scope(device_);  // items may run on other threads
            const KernelSource& k = v.emitted.kernels[i];
            Loaded& l = v.kernels[i];
            l.kernel = &k;
            l.module = cache_->get(k, compile_, &lookups[i], to_store[i]);
            if (ctl && !lookups[i].hit) ctl->add_done(1);
            for (std::size_t e = 0; e < k.entries.size() && e < l.fn.size(); ++e)
                l.fn[e] = l.module->function(k.entries[e]);
            l.layout = initial_layout(k);
        });
        bool all_hit = true;
        for (const auto& lk : lookups) {
            all_hit = all_hit && lk.hit;
            if (info) {
                info->compile_ms += lk.compile_ms;
                info->load_ms += lk.load_ms;
            }
        }
        if (info) info->module_cache_hit = all_hit;
    }

    // Shape of the iteration space, then one stride row per array read (writes filled per run).
    std::vector<std::int64_t> initial_layout(const KernelSource& k) const {
        const int D = k.launch.ndim;
        const int R = k.launch.layout_rows;
        const bool has_layout =
            std::any_of(k.params.begin(), k.params.end(), [](const Param& p) { return p.kind == Param::Kind::Layout; });
        if (!has_layout) return {};
        const ir::Stage& st = schedule_.stages[static_cast<std::size_t>(k.stage)];
        std::vector<std::int64_t> lay(static_cast<std::size_t>(D) * (1 + std::max(R, 1)), 0);
        for (int d = 0; d < D; ++d) lay[static_cast<std::size_t>(d)] = st.shape[static_cast<std::size_t>(d)];
        for (const Param& p : k.params) {
            if (p.kind != Param::Kind::Array || p.written || p.layout_row < 0) continue;
            Shape shape;
            Strides strides;
            if (p.array.kind == codegen::ArrayRef::Kind::Input) {
                const ir::InputDecl& in = program_.inputs[p.array.input()];
                shape = in.shape;
                strides = in.strides.size() == in.shape.size() ? in.strides : contiguous_strides(in.shape);
            } else {
                shape = program_.node(p.array.node()).shape;
                strides = contiguous_strides(shape);
            }
            Strides b = ir::broadcast_strides(shape, strides, st.shape);
            for (int d = 0; d < D; ++d)
                lay[static_cast<std::size_t>(D + p.layout_row * D + d)] = b[static_cast<std::size_t>(d)];
        }
        return lay;
    }

    void check_args(const detail::RunArgs& args) const {
        if (args.inputs.size() != program_.inputs.size() || args.scalars.size() != program_.scalars.size() ||
            args.outputs.size() != program_.outputs.size())
            throw ArgumentError(
                fmt::format("cuda backend: expected {} inputs, {} scalars and {} outputs, got {}, {} and {}",
                            program_.inputs.size(), program_.scalars.size(), program_.outputs.size(),
                            args.inputs.size(), args.scalars.size(), args.outputs.size()));
        for (std::size_t i = 0; i < args.inputs.size(); ++i) {
            const Array& a = args.inputs[i];
            const ir::InputDecl& d = program_.inputs[i];
            if (a.backend() != Backend::Cuda || a.device() != device_)
                throw DeviceMismatchError(
                    fmt::format("cuda backend: input {} is on {}, not cuda device {}", i, a.place(), device_));
            if (a.dtype() != d.dtype || a.shape() != d.shape ||
                !same_layout_as_declared(d.shape, a.strides(), d.strides))
                throw ArgumentError(fmt::format("cuda backend: input {} is {}, the program was prepared for {} {}", i,
                                                a.describe(), dtype_name(d.dtype), shape_to_string(d.shape)));
        }
        for (std::size_t o = 0; o < args.outputs.size(); ++o) {
            const Array& a = args.outputs[o];
            const ir::Node& n = program_.node(program_.outputs[o].node);
            if (program_.is_dynamic(program_.outputs[o].node)) {  // made once its kernel has counted
                if (a.defined() || !args.allocate)
                    throw ArgumentError(
                        fmt::format("cuda backend: output {} has the data's length: it is made by "
                                    "the backend, through RunArgs::allocate",
                                    o));
                continue;
            }
            if (a.backend() != Backend::Cuda || a.device() != device_)
                throw DeviceMismatchError(
                    fmt::format("cuda backend: output {} is on {}, not cuda device {}", o, a.place(), device_));
            if (a.dtype() != n.dtype || a.shape() != n.shape)
                throw ArgumentError(fmt::format("cuda backend: output {} is {}, expected {} {} on cuda", o,
                                                a.describe(), dtype_name(n.dtype), shape_to_string(n.shape)));
        }
    }

    // Flat kernels were chosen only where the outputs they write are C-contiguous (an aliased
    // input's declared layout included), and Strided kernels may assume an output contiguous
    // along the last axis; any other layout at run time takes the strided variant.
    bool needs_strided(const detail::RunArgs& args) const {
        for (const auto& l : main_.kernels) {
            const KernelSource& k = *l.kernel;
            const bool flat = k.launch.kind == KernelKind::Flat;
            if (!flat && k.launch.kind != KernelKind::Strided) continue;
            for (const Param& p : k.params) {
                if (p.kind != Param::Kind::Array || !p.written) continue;
                if (!flat && !p.unit_inner) continue;
                std::int32_t o = schedule_.output_of[p.array.node()];
                if (o < 0) continue;
                const Array& a = args.outputs[static_cast<std::size_t>(o)];
                if (flat) {
                    if (!c_contiguous(a.shape(), a.strides())) return true;
                } else if (!a.shape().empty() && a.shape().back() != 1 && a.strides().back() != 1) {
                    return true;
                }
            }
        }
        return false;
    }

    Variant& strided_variant() {
        std::lock_guard<std::mutex> lock(variant_mutex_);
        if (!strided_) {
            auto v = std::make_unique<Variant>();
            KernelOptions ko;
            ko.block = block_;
            v->emitted = build_kernels(plan_, ko, Tier::Strided);
            load(*v, nullptr);
            for (std::size_t i = 0; i < v->kernels.size(); ++i)
                v->kernels[i].workspace_offset = main_.kernels[i].workspace_offset;
            strided_ = std::move(v);
        }
        return *strided_;
    }

    void launch_all(const Variant& v, const detail::RunArgs& args, const Workspace& ws) const {
        if (!args.control) {
            for (auto& l : v.kernels) launcher_.launch(l, args, ws);
            return;
        }
        run_watched(v, args, ws, *args.control);
    }

    // A workspace of one stream, and the lock that keeps the kernels of one call together on it.
    struct StreamWorkspace {
        Workspace ws;
        std::mutex queue;
    };
    // The per-thread default stream is one handle for a stream of each thread: its workspaces
    // are told apart by thread. Every other handle is one stream, whichever thread queues on it.
    using WorkspaceKey = std::pair<void*, std::thread::id>;

    StreamWorkspace& workspace(void* stream) {
        const WorkspaceKey key{stream, stream == reinterpret_cast<void*>(CU_STREAM_PER_THREAD)
                                           ? std::this_thread::get_id()
                                           : std::thread::id()};
        std::lock_guard<std::mutex> lock(ws_mutex_);
        auto [it, fresh] = workspaces_.try_emplace(key);
        if (!fresh) return it->second;
        try {
            Workspace& ws = it->second.ws;
            ws.base = cuda::alloc_for(workspace_bytes_, "the workspace of the program's reductions and scans");
            ws.bytes = workspace_bytes_;
            // Counters of the full reductions start at zero; the last block resets its own.
            if (counters_bytes_ > 0) cuda::memset(ws.base, 0, counters_bytes_, stream);
        } catch (...) {
            if (it->second.ws.base) cuda::free(it->second.ws.base);
            workspaces_.erase(it);
            throw;
        }
        return it->second;
    }

    const ir::Plan plan_;
    const ir::Program& program_;    // plan_'s
    const ir::Schedule& schedule_;  // plan_'s
    detail::PrepareOptions options_;
    std::shared_ptr<ModuleCache> cache_;
    int block_;
    int device_;  // the CUDA device ordinal: modules, workspaces and launches are on it
    Launcher launcher_{program_, schedule_};
    CompileOptions compile_;
    detail::PrepareInfo info_;
    Variant main_;                              // the kernels run first (tier 1 when tiered)
    std::unique_ptr<Variant> full_;             // tiered: the kernels with vector paths, loaded in the background
    std::atomic<const Variant*> live_{&main_};  // what run() launches for C-contiguous outputs
    std::thread upgrade_;
    std::mutex variant_mutex_;
    std::unique_ptr<Variant> strided_;
    std::size_t counters_bytes_ = 0, workspace_bytes_ = 0;
    void* strings_ = nullptr;  // Program::strings on the device (upload_strings)
    std::mutex ws_mutex_;
    std::map<WorkspaceKey, StreamWorkspace> workspaces_;
};

class CudaBackend final : public detail::BackendImpl {
public:
    explicit CudaBackend(ExecutorOptions o) : options_(std::move(o)) {
        if (!options_.cache) options_.cache = default_module_cache();
    }
    Backend kind() const override { return Backend::Cuda; }
    dsl::Limits limits() const override { return cuda::limits(); }
    std::shared_ptr<detail::Prepared> prepare(const ir::Plan& plan, const detail::PrepareOptions& options) override {
        std::string why;
        if (!available(&why)) throw NoDeviceError("cuda backend: " + why);
        DeviceScope scope(options_.device);
        return std::make_shared<CudaPrepared>(plan, options, options_.cache, options_.block);
    }

    std::vector<detail::KernelReport> explain(const ir::Plan& plan, const detail::PrepareOptions& o) const override {
        // CudaPrepared's decisions, made the same way, without compiling or loading.
        DeviceScope scope(options_.device);
        const DeviceInfo& dev = device_info();
        CompileOptions co;
        co.cc_major = dev.cc_major;
        co.cc_minor = dev.cc_minor;
        co.fast_math = o.fast_math;
        co.extra = o.nvrtc_options;
        KernelOptions ko;
        ko.block = options_.block;
        const codegen::Emitted full = build_kernels(plan, ko, Tier::Full);
        std::vector<detail::KernelReport> out = describe_kernels(plan, full);
        std::vector<ModuleCache::Presence> at(full.kernels.size());
        for (std::size_t i = 0; i < full.kernels.size(); ++i) {
            at[i] = options_.cache->presence(full.kernels[i], co);
            out[i].cache = at[i] == ModuleCache::Presence::Memory ? "memory (loaded)"
                           : at[i] == ModuleCache::Presence::Disk ? "disk (loaded at the first run, no compile)"
                                                                  : "not compiled";
        }
        const bool tier = starts_on_first_tier(full, o.tiered, [&](const KernelSource& k) {
            return at[static_cast<std::size_t>(&k - full.kernels.data())] != ModuleCache::Presence::None;
        });
        codegen::Emitted first;
        if (tier) first = build_kernels(plan, first_tier_options(ko, co, o.ptx_first_tier), Tier::ScalarOnly);
        for (std::size_t i = 0; i < out.size(); ++i) {
            if (!tier) {
                out[i].tier = "full";
                continue;
            }
            const codegen::KernelSource& f = first.kernels[i];
            const bool same = f.key == full.kernels[i].key;
            out[i].tier =
                same ? "full (no vector paths to defer)"
                     : fmt::format("first run on a scalar-only {} kernel while this one compiles in the background",
                                   f.ptx ? "PTX (nvJitLink)" : "NVRTC");
        }
        return out;
    }

private:
    ExecutorOptions options_;
};

}  // namespace

std::unique_ptr<jit::detail::BackendImpl> make_cuda_backend(ExecutorOptions options) {
    return std::make_unique<CudaBackend>(std::move(options));
}

}  // namespace jit::cuda
