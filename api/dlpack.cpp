// DLPack import and export: arrays share memory with other libraries, no copy.
#include <jit/error.hpp>
#include <jit/interop.hpp>

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <memory>
#include <new>

namespace jit {

namespace {

// What one exported tensor owns: the DLPack struct handed out, a reference to the storage,
// and the shape and strides its pointers refer to.
struct Export {
    DLManagedTensor tensor{};
    std::shared_ptr<Storage> storage;
    std::array<std::int64_t, kMaxDims> shape{};
    std::array<std::int64_t, kMaxDims> strides{};
};

void delete_export(DLManagedTensor* self) noexcept { delete static_cast<Export*>(self->manager_ctx); }

// The same for DLPack 1.x.
struct ExportVersioned {
    DLManagedTensorVersioned tensor{};
    std::shared_ptr<Storage> storage;
    std::array<std::int64_t, kMaxDims> shape{};
    std::array<std::int64_t, kMaxDims> strides{};
};

void delete_export_versioned(DLManagedTensorVersioned* self) noexcept {
    delete static_cast<ExportVersioned*>(self->manager_ctx);
}

// Fills `t` (shape and strides pointing into the given arrays) from `array`.
void describe_into(const Array& array, const std::shared_ptr<Storage>& storage, DLTensor& t, std::int64_t* shape,
                   std::int64_t* strides) {
    const int nd = array.ndim();
    for (int k = 0; k < nd; ++k) {
        shape[k] = array.shape()[static_cast<std::size_t>(k)];
        strides[k] = array.strides()[static_cast<std::size_t>(k)];
    }
    // The storage's base with the array's offset in byte_offset, as the specification prefers
    // (base pointers keep their allocation's alignment).
    t.data = storage->data();
    t.byte_offset = t.data ? static_cast<std::uint64_t>(array.offset()) * itemsize(array.dtype()) : 0;
    t.device.device_type = array.backend() == Backend::Cuda ? kDLCUDA : kDLCPU;
    t.device.device_id = array.device();
    t.ndim = nd;
    t.dtype = to_dlpack_dtype(array.dtype());
    t.shape = shape;
    t.strides = strides;
}

std::string describe(DLDataType t) {
    return fmt::format("(code {}, bits {}, lanes {})", static_cast<unsigned>(t.code), static_cast<unsigned>(t.bits),
                       static_cast<unsigned>(t.lanes));
}

Backend backend_of(const DLDevice& d) {
    switch (d.device_type) {
        case kDLCPU:
        case kDLCUDAHost: return Backend::Cpu;
        case kDLCUDA:
        case kDLCUDAManaged:
            if (d.device_id < 0)
                throw ArgumentError(fmt::format("DLPack tensor on CUDA device {}: not a device ordinal", d.device_id));
            return Backend::Cuda;
        default:
            throw ArgumentError(
                fmt::format("DLPack tensor on device type {}: jitexpr takes host (kDLCPU, kDLCUDAHost) "
                            "and CUDA (kDLCUDA, kDLCUDAManaged) memory only",
                            static_cast<int>(d.device_type)));
    }
}

// Checks everything about `t` and builds the view; `keep_alive` is attached only once nothing
// can fail for a reason of the tensor's, so that a rejected tensor is left to its owner.
Array make_view(const DLTensor& t, std::shared_ptr<void> (*keep)(void*), void* owner) {
    const Backend backend = backend_of(t.device);
    const std::optional<DType> dtype = from_dlpack_dtype(t.dtype);
    if (!dtype) throw ArgumentError(fmt::format("DLPack element type {} has no jitexpr dtype", describe(t.dtype)));
    if (t.ndim < 0 || t.ndim > kMaxDims)
        throw ArgumentError(
            fmt::format("DLPack tensor with {} dimensions: jitexpr arrays have 0 to {}", t.ndim, kMaxDims));
    if (t.ndim > 0 && !t.shape) throw ArgumentError("DLPack tensor with a null shape pointer");
    Shape shape(t.shape, t.shape + t.ndim);
    for (auto e : shape)
        if (e < 0)
            throw ArgumentError(fmt::format("DLPack tensor with negative extent in shape {}", shape_to_string(shape)));
    Strides strides;
    if (t.strides && t.ndim > 0) strides.assign(t.strides, t.strides + t.ndim);
    else strides = contiguous_strides(shape);
    if (!t.data && shape_size(shape) > 0) throw ArgumentError("DLPack tensor with elements but a null data pointer");
    if (t.byte_offset % itemsize(*dtype) != 0)
        throw ArgumentError(fmt::format("DLPack byte_offset {} is not a multiple of the element size {}", t.byte_offset,
                                        itemsize(*dtype)));
    void* data = t.data ? static_cast<char*>(t.data) + t.byte_offset : nullptr;
    // The view is on the producer's device: a runtime of another device refuses it
    // (DeviceMismatchError) rather than reading another GPU's memory.
    const int device = backend == Backend::Cuda ? static_cast<int>(t.device.device_id) : 0;
    return Array::view(data, *dtype, std::move(shape), std::move(strides), backend, device,
                       keep ? keep(owner) : nullptr);
}

std::shared_ptr<void> own(void* p) {
    return std::shared_ptr<void>(p, [](void* q) {
        auto* m = static_cast<DLManagedTensor*>(q);
        if (m->deleter) m->deleter(m);
    });
}

}  // namespace

DLDataType to_dlpack_dtype(DType dtype) {
    DLDataType r{};
    r.lanes = 1;
    r.bits = static_cast<std::uint8_t>(itemsize(dtype) * 8);
    if (is_bool(dtype)) r.code = kDLBool;
    else if (is_signed_int(dtype) || is_temporal(dtype)) r.code = kDLInt;  // a date: its int64 count
    else if (is_unsigned_int(dtype)) r.code = kDLUInt;
    else if (dtype == DType::BFloat16) r.code = kDLBfloat;
    else if (is_float(dtype)) r.code = kDLFloat;
    else r.code = kDLComplex;
    return r;
}

std::optional<DType> from_dlpack_dtype(DLDataType t) {
    if (t.lanes != 1) return std::nullopt;
    switch (t.code) {
        case kDLBool:
            if (t.bits == 8) return DType::Bool;
            break;
        case kDLInt:
            switch (t.bits) {
                case 8: return DType::Int8;
                case 16: return DType::Int16;
                case 32: return DType::Int32;
                case 64: return DType::Int64;
            }
            break;
        case kDLUInt:
            switch (t.bits) {
                case 8: return DType::UInt8;
                case 16: return DType::UInt16;
                case 32: return DType::UInt32;
                case 64: return DType::UInt64;
            }
            break;
        case kDLFloat:
            switch (t.bits) {
                case 16: return DType::Float16;
                case 32: return DType::Float32;
                case 64: return DType::Float64;
            }
            break;
        case kDLBfloat:
            if (t.bits == 16) return DType::BFloat16;
            break;
        case kDLComplex:
            if (t.bits == 64) return DType::Complex64;
            if (t.bits == 128) return DType::Complex128;
            break;
    }
    return std::nullopt;
}

Array from_dlpack(DLManagedTensor* tensor) {
    if (!tensor) throw ArgumentError("from_dlpack: null tensor");
    return make_view(tensor->dl_tensor, &own, tensor);
}

Array from_dlpack_versioned(DLManagedTensorVersioned* tensor) {
    if (!tensor) throw ArgumentError("from_dlpack: null tensor");
    if (tensor->version.major != 1)
        throw ArgumentError(fmt::format("DLPack tensor of version {}.{}: jitexpr reads version 1",
                                        tensor->version.major, tensor->version.minor));
    auto keep = [](void* p) {
        return std::shared_ptr<void>(p, [](void* q) {
            auto* m = static_cast<DLManagedTensorVersioned*>(q);
            if (m->deleter) m->deleter(m);
        });
    };
    const bool read_only = (tensor->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    const Array a = make_view(tensor->dl_tensor, keep, tensor);
    return read_only ? a.as_read_only() : a;
}

Array view_dlpack(const DLTensor& tensor) { return make_view(tensor, nullptr, nullptr); }

Array view_dlpack_versioned(const DLManagedTensorVersioned& tensor) {
    if (tensor.version.major != 1)
        throw ArgumentError(fmt::format("DLPack tensor of version {}.{}: jitexpr reads version 1", tensor.version.major,
                                        tensor.version.minor));
    const Array a = make_view(tensor.dl_tensor, nullptr, nullptr);
    return (tensor.flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0 ? a.as_read_only() : a;
}

DLManagedTensor* to_dlpack(const Array& array) {
    if (!array.defined()) throw ArgumentError("to_dlpack: undefined array");
    auto e = std::make_unique<Export>();
    e->storage = array.storage();
    describe_into(array, e->storage, e->tensor.dl_tensor, e->shape.data(), e->strides.data());
    e->tensor.manager_ctx = e.get();
    e->tensor.deleter = &delete_export;
    return &e.release()->tensor;
}

DLManagedTensorVersioned* to_dlpack_versioned(const Array& array, std::uint64_t flags) {
    if (!array.defined()) throw ArgumentError("to_dlpack_versioned: undefined array");
    auto e = std::make_unique<ExportVersioned>();
    e->storage = array.storage();
    describe_into(array, e->storage, e->tensor.dl_tensor, e->shape.data(), e->strides.data());
    e->tensor.version = DLPackVersion{1, 0};
    e->tensor.flags = flags | (array.read_only() ? DLPACK_FLAG_BITMASK_READ_ONLY : 0);
    e->tensor.manager_ctx = e.get();
    e->tensor.deleter = &delete_export_versioned;
    return &e.release()->tensor;
}

}  // namespace jit
