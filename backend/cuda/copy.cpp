// jitexpr — the CUDA device of core::Array: allocation, host transfers and a strided copy
// kernel of the backend's own (hand-written PTX, loaded by the driver: no NVRTC, no program of
// the language), registered with core by register_device().
#include "backend/cuda/copy.hpp"

#include "backend/cuda/cuda.hpp"
#include "core/device.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>

namespace jit::cuda {

namespace {

// One entry point per word size W (1, 2, 4, 8 bytes): n elements of `units` words each, element
// i at the offsets its index has along up to kMaxDims axes (the innermost last), strides in
// elements, negative ones included. A grid-stride loop; 64-bit indices.
std::string copy_entry(int w) {
    const char* reg = w == 8 ? "b64" : w == 4 ? "b32" : "b16";
    std::string s = fmt::format(
        ".visible .entry jx_copy_u{w}(\n"
        "    .param .u64 p_dst,\n"
        "    .param .u64 p_src,\n"
        "    .param .u64 p_n,\n"
        "    .param .u32 p_ndim,\n"
        "    .param .u32 p_units,\n"
        "    .param .align 8 .b8 p_layout[{layout}]\n"
        ")\n"
        "{{\n"
        "    .reg .pred %p<4>;\n"
        "    .reg .b32 %r<8>;\n"
        "    .reg .b64 %rd<24>;\n"
        "    .reg .{reg} %v;\n"
        "    mov.u32 %r1, %ctaid.x;\n"
        "    mov.u32 %r2, %ntid.x;\n"
        "    mov.u32 %r3, %tid.x;\n"
        "    mul.wide.u32 %rd1, %r1, %r2;\n"
        "    cvt.u64.u32 %rd2, %r3;\n"
        "    add.u64 %rd1, %rd1, %rd2;\n"  // i
        "    mov.u32 %r4, %nctaid.x;\n"
        "    mul.wide.u32 %rd3, %r4, %r2;\n"  // the grid's stride
        "    ld.param.u64 %rd4, [p_n];\n"
        "    ld.param.u64 %rd5, [p_dst];\n"
        "    ld.param.u64 %rd6, [p_src];\n"
        "    cvta.to.global.u64 %rd5, %rd5;\n"
        "    cvta.to.global.u64 %rd6, %rd6;\n"
        "    ld.param.u32 %r5, [p_ndim];\n"
        "    ld.param.u32 %r6, [p_units];\n"
        "    mul.wide.u32 %rd7, %r6, {w};\n"  // bytes per element
        "$L_next:\n"
        "    setp.ge.u64 %p1, %rd1, %rd4;\n"
        "    @%p1 bra $L_done;\n"
        "    mov.u64 %rd8, %rd1;\n"  // the index left to split
        "    mov.u64 %rd9, 0;\n"     // destination offset, elements
        "    mov.u64 %rd10, 0;\n",   // source offset, elements
        fmt::arg("w", w), fmt::arg("reg", reg), fmt::arg("layout", 3 * 8 * kMaxDims));
    // Axes from the innermost used one (ndim - 1) out; the outermost takes what is left.
    for (int d = kMaxDims - 1; d >= 0; --d) {
        s += fmt::format(
            "    setp.le.u32 %p2, %r5, {d};\n"
            "    @%p2 bra $L_skip{d};\n",
            fmt::arg("d", d));
        if (d > 0) {
            s += fmt::format(
                "    ld.param.u64 %rd11, [p_layout+{shape}];\n"
                "    div.u64 %rd12, %rd8, %rd11;\n"
                "    mul.lo.u64 %rd13, %rd12, %rd11;\n"
                "    sub.u64 %rd13, %rd8, %rd13;\n"
                "    mov.u64 %rd8, %rd12;\n",
                fmt::arg("shape", 8 * d));
        } else {
            s += "    mov.u64 %rd13, %rd8;\n";
        }
        s += fmt::format(
            "    ld.param.u64 %rd14, [p_layout+{dst}];\n"
            "    mad.lo.u64 %rd9, %rd13, %rd14, %rd9;\n"
            "    ld.param.u64 %rd15, [p_layout+{src}];\n"
            "    mad.lo.u64 %rd10, %rd13, %rd15, %rd10;\n"
            "$L_skip{d}:\n",
            fmt::arg("dst", 8 * (kMaxDims + d)), fmt::arg("src", 8 * (2 * kMaxDims + d)), fmt::arg("d", d));
    }
    const char* type = w == 8 ? "u64" : w == 4 ? "u32" : w == 2 ? "u16" : "u8";
    s += fmt::format(
        "    mad.lo.u64 %rd16, %rd9, %rd7, %rd5;\n"
        "    mad.lo.u64 %rd17, %rd10, %rd7, %rd6;\n"
        "    mov.u32 %r7, 0;\n"
        "$L_unit:\n"
        "    ld.global.{type} %v, [%rd17];\n"
        "    st.global.{type} [%rd16], %v;\n"
        "    add.u64 %rd16, %rd16, {w};\n"
        "    add.u64 %rd17, %rd17, {w};\n"
        "    add.u32 %r7, %r7, 1;\n"
        "    setp.lt.u32 %p3, %r7, %r6;\n"
        "    @%p3 bra $L_unit;\n"
        "    add.u64 %rd1, %rd1, %rd3;\n"
        "    bra.uni $L_next;\n"
        "$L_done:\n"
        "    ret;\n"
        "}}\n",
        fmt::arg("type", type), fmt::arg("w", w));
    return s;
}

// The kernel's layout parameter.
struct KernelLayout {
    long long shape[kMaxDims];
    long long dst_stride[kMaxDims];
    long long src_stride[kMaxDims];
};
static_assert(sizeof(KernelLayout) == 3 * 8 * kMaxDims);

struct CopyKernels {
    ModulePtr module;
    void* fn[4] = {};  // by word size 1, 2, 4, 8
};

// Loaded once per device (a module belongs to one context).
const CopyKernels& copy_kernels() {
    struct PerDevice {
        std::once_flag once[kMaxDevices];
        CopyKernels* kernels[kMaxDevices] = {};
    };
    static PerDevice* all = new PerDevice;  // never destroyed: arrays may be copied during exit
    const int dev = current_device();
    if (dev < 0 || dev >= kMaxDevices) throw ArgumentError(fmt::format("CUDA device {} is out of range", dev));
    std::call_once(all->once[dev], [&] {
        Image img;
        img.data = copy_kernels_ptx();
        img.is_cubin = false;
        img.arch = "compute_70";
        auto c = std::make_unique<CopyKernels>();
        c->module = Module::load(img);
        for (int i = 0; i < 4; ++i) c->fn[i] = c->module->function(fmt::format("jx_copy_u{}", 1 << i));
        all->kernels[dev] = c.release();
    });
    return *all->kernels[dev];
}

void copy_strided(void* dst, const void* src, const core::CopyLayout& l, void* stream) {
    const std::int64_t n = l.size();
    if (n == 0) return;
    if (l.dense()) {
        copy_device(dst, src, static_cast<std::size_t>(n) * l.item, stream);
        return;
    }
    const CopyPlan plan = plan_copy(dst, src, l, device_info().sm_count);
    const CopyKernels& k = copy_kernels();
    KernelLayout layout{};
    for (int d = 0; d < l.ndim; ++d) {
        layout.shape[d] = l.shape[d];
        layout.dst_stride[d] = l.dst_stride[d];
        layout.src_stride[d] = l.src_stride[d];
    }
    void* dptr = dst;
    const void* sptr = src;
    unsigned long long count = static_cast<unsigned long long>(n);
    unsigned ndim = static_cast<unsigned>(l.ndim);
    unsigned units = static_cast<unsigned>(plan.units);
    void* args[] = {&dptr, &sptr, &count, &ndim, &units, &layout};
    LaunchConfig cfg;
    cfg.stream = stream;
    cfg.block[0] = static_cast<unsigned>(plan.block);
    cfg.grid[0] = static_cast<unsigned>(plan.grid);
    launch(k.fn[plan.word_log2], cfg, args);
}

const core::Device kCuda{
    [](int dev, std::size_t bytes) {
        DeviceScope scope(dev);
        return make_storage(bytes);
    },
    [](int dev, void* dst, std::size_t bytes) {
        DeviceScope scope(dev);
        memset(dst, 0, bytes);
    },
    [](int dev, void* dst, const void* src, std::size_t bytes) {
        DeviceScope scope(dev);
        copy_to_device(dst, src, bytes);
        synchronize();
    },
    [](int dev, void* dst, const void* src, std::size_t bytes) {
        DeviceScope scope(dev);
        copy_to_host(dst, src, bytes);
        synchronize();
    },
    [](int dev, void* dst, const void* src, const core::CopyLayout& l, void* stream) {
        DeviceScope scope(dev);
        copy_strided(dst, src, l, stream);
    },
    [](int dst_dev, void* dst, int src_dev, const void* src, std::size_t bytes) {
        copy_peer(dst, dst_dev, src, src_dev, bytes);
    },
    [] {
        std::string why;
        if (!available(&why)) throw NoDeviceError(why);
        return device_count();
    },
};

}  // namespace

std::string copy_kernels_ptx() {
    std::string s = ".version 7.0\n.target sm_70\n.address_size 64\n";
    for (int w : {1, 2, 4, 8}) {
        s += '\n';
        s += copy_entry(w);
    }
    return s;
}

CopyPlan plan_copy(const void* dst, const void* src, const core::CopyLayout& l, int sm_count) {
    CopyPlan p;
    // The widest word that divides the element and both base addresses: every element address
    // is a base plus a multiple of the element size, so all of them are aligned to it.
    const auto bits = reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src) | l.item;
    p.word_log2 = 3;
    while (p.word_log2 > 0 && (bits & ((std::uintptr_t{1} << p.word_log2) - 1)) != 0) --p.word_log2;
    p.units = static_cast<int>(l.item >> p.word_log2);
    const std::int64_t n = l.size();
    const std::int64_t blocks = (n + p.block - 1) / p.block;
    p.grid = std::clamp<std::int64_t>(blocks, 1, std::int64_t{std::max(sm_count, 1)} * 16);
    return p;
}

void register_device() {
    core::register_device(Backend::Cuda, &kCuda);
    core::set_current_device(Backend::Cuda, [] { return current_device(); });
}

}  // namespace jit::cuda
