// jit::precompile (include/jit/precompile.hpp): the plan and kernels a CUDA runtime would
// prepare, compiled with NVRTC for an architecture and stored under the runtime's keys.
#include <jit/error.hpp>
#include <jit/precompile.hpp>

#include "backend/cache/cache.hpp"
#include "backend/cuda/build.hpp"
#include "backend/cuda/cuda.hpp"
#include "dsl/plan.hpp"

#include <fmt/format.h>

#include <memory>

namespace jit {

Declaration Declaration::array(DType dtype, Shape shape, Strides strides) {
    Declaration d;
    d.kind = Kind::Array;
    d.dtype = dtype;
    d.strides = strides.empty() ? contiguous_strides(shape) : std::move(strides);
    d.shape = std::move(shape);
    return d;
}

Declaration Declaration::scalar(DType dtype) {
    Declaration d;
    d.kind = Kind::Scalar;
    d.dtype = dtype;
    return d;
}

struct Precompiler::Impl {
    cuda::CompileOptions co;
    std::shared_ptr<cache::DiskCache> disk;
    cuda::ImageStore store;
    std::string dir;
};

Precompiler::Precompiler(const PrecompileOptions& options) : impl_(std::make_unique<Impl>()) {
    cuda::CompileOptions& co = impl_->co;
    co.fast_math = options.fast_math;
    co.extra = options.nvrtc_options;
    if (options.arch) {
        std::tie(co.cc_major, co.cc_minor) = *options.arch;
    } else {
        std::string why;
        if (!cuda::available(&why))
            throw NoDeviceError(fmt::format("no GPU to take the architecture from ({}); give --arch sm_XY", why));
        const cuda::DeviceInfo& dev = cuda::device_info();
        co.cc_major = dev.cc_major;
        co.cc_minor = dev.cc_minor;
    }

    cache::DiskCacheOptions dco;
    dco.dir = options.cache_dir;
    auto disk = std::make_shared<cache::DiskCache>(dco);
    if (!disk->enabled()) throw IOError("the disk cache is disabled: " + disk->disabled_reason());
    // The same store the runtime connects (api/runtime.cpp): the file key is the digest of the
    // module cache's text key.
    impl_->store = cuda::ImageStore{
        [disk](const std::string& key) { return disk->get(cache::digest(key)); },
        [disk](const std::string& key, const std::string& bytes) {
            std::string why;
            if (!disk->put(cache::digest(key), bytes, &why))
                throw IOError(fmt::format("could not write to the disk cache in {}: {}", disk->directory(), why));
        }};
    impl_->dir = disk->directory();
    impl_->disk = std::move(disk);
}

Precompiler::~Precompiler() = default;

int Precompiler::cc_major() const { return impl_->co.cc_major; }
int Precompiler::cc_minor() const { return impl_->co.cc_minor; }
const std::string& Precompiler::cache_dir() const { return impl_->dir; }

namespace {

// The plan the CUDA runtime would make for `statements` with these variables.
ir::Plan plan_of(std::string_view statements, const std::map<std::string, Declaration, std::less<>>& variables) {
    std::map<std::string, dsl::Binding, std::less<>> bindings;
    for (const auto& [name, d] : variables) {
        dsl::Binding b;
        b.kind = d.kind == Declaration::Kind::Array ? dsl::Binding::Kind::Array : dsl::Binding::Kind::Scalar;
        b.dtype = d.dtype;
        b.shape = d.shape;
        b.strides = d.kind == Declaration::Kind::Array && d.strides.empty() ? contiguous_strides(d.shape) : d.strides;
        bindings.emplace(name, std::move(b));
    }
    return dsl::plan(statements, dsl::bindings_of(bindings), cuda::limits());
}

}  // namespace

void Precompiler::check(std::string_view statements, const std::map<std::string, Declaration, std::less<>>& variables) {
    (void)plan_of(statements, variables);
}

std::vector<PrecompiledKernel> Precompiler::add(std::string_view statements,
                                                const std::map<std::string, Declaration, std::less<>>& variables) {
    const ir::Plan plan = plan_of(statements, variables);
    std::vector<PrecompiledKernel> out;
    for (const auto& k : cuda::precompile(plan, impl_->co, impl_->store)) {
        PrecompiledKernel pk;
        pk.name = k.name;
        pk.already_cached = k.already_stored;
        pk.compile_ms = k.compile_ms;
        pk.image_bytes = k.image_bytes;
        out.push_back(std::move(pk));
    }
    return out;
}

std::vector<PrecompiledKernel> precompile(std::string_view statements,
                                          const std::map<std::string, Declaration, std::less<>>& variables,
                                          const PrecompileOptions& options) {
    return Precompiler(options).add(statements, variables);
}

}  // namespace jit
