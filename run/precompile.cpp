// jitexpr — compiling a plan's CUDA kernels ahead of time (see precompile.hpp).
#include "run/precompile.hpp"

#include "backend/cuda/build.hpp"
#include "backend/cuda/cuda.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

namespace jit::run {

cuda::ImageStore disk_image_store(std::shared_ptr<cache::DiskCache> disk, bool strict) {
    if (!strict)
        return cuda::ImageStore{
            [disk](const std::string& key) { return disk->get(cache::digest(key)); },
            [disk](const std::string& key, const std::string& bytes) { disk->put(cache::digest(key), bytes); }};
    return cuda::ImageStore{
        [disk](const std::string& key) { return disk->get(cache::digest(key)); },
        [disk](const std::string& key, const std::string& bytes) {
            std::string why;
            if (!disk->put(cache::digest(key), bytes, &why))
                throw IOError(fmt::format("could not write to the disk cache in {}: {}", disk->directory(), why));
        }};
}

Precompiler::Precompiler(const PrecompileTarget& target) {
    co_.fast_math = target.fast_math;
    co_.extra = target.nvrtc_options;
    if (target.arch) {
        std::tie(co_.cc_major, co_.cc_minor) = *target.arch;
    } else {
        std::string why;
        if (!cuda::available(&why))
            throw NoDeviceError(fmt::format("no GPU to take the architecture from ({}); give --arch sm_XY", why));
        const cuda::DeviceInfo& dev = cuda::device_info();
        co_.cc_major = dev.cc_major;
        co_.cc_minor = dev.cc_minor;
    }
    cache::DiskCacheOptions dco;
    dco.dir = target.cache_dir;
    auto disk = std::make_shared<cache::DiskCache>(dco);
    if (!disk->enabled()) throw IOError("the disk cache is disabled: " + disk->disabled_reason());
    store_ = disk_image_store(disk, /*strict=*/true);
    dir_ = disk->directory();
    disk_ = std::move(disk);
}

dsl::Limits Precompiler::limits() { return cuda::limits(); }

std::vector<Precompiled> Precompiler::add(const ir::Plan& plan) const {
    std::vector<Precompiled> out;
    for (const auto& k : cuda::precompile(plan, co_, store_)) {
        Precompiled p;
        p.name = k.name;
        p.already_stored = k.already_stored;
        p.compile_ms = k.compile_ms;
        p.image_bytes = k.image_bytes;
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace jit::run
