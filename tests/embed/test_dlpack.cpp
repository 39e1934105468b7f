// DLPack import and export (include/jit/interop.hpp) on host memory.
#include <jit/interop.hpp>
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include "test_util.hpp"

#include <cstring>

using namespace embed_test;

namespace {

std::vector<std::byte> host_bytes(const jit::Array& a) {
    std::vector<std::byte> out(a.nbytes());
    a.copy_to_host(out.data());
    return out;
}

DLDataType dl(std::uint8_t code, std::uint8_t bits, std::uint16_t lanes = 1) { return DLDataType{code, bits, lanes}; }

}  // namespace

TEST(DLPackDType, MapsEveryDTypeBothWays) {
    for (jit::DType t : kAllDTypes) {
        const DLDataType d = jit::to_dlpack_dtype(t);
        EXPECT_EQ(d.lanes, 1);
        EXPECT_EQ(d.bits, jit::itemsize(t) * 8) << jit::dtype_name(t);
        EXPECT_EQ(jit::from_dlpack_dtype(d), t) << jit::dtype_name(t);
    }
}

TEST(DLPackDType, UsesTheSpecificationsCodesForBoolBFloat16AndComplex) {
    const DLDataType b = jit::to_dlpack_dtype(jit::DType::Bool);
    EXPECT_EQ(b.code, kDLBool);
    EXPECT_EQ(b.bits, 8);
    const DLDataType bf = jit::to_dlpack_dtype(jit::DType::BFloat16);
    EXPECT_EQ(bf.code, kDLBfloat);
    EXPECT_EQ(bf.bits, 16);
    const DLDataType c = jit::to_dlpack_dtype(jit::DType::Complex64);
    EXPECT_EQ(c.code, kDLComplex);
    EXPECT_EQ(c.bits, 64);
    EXPECT_EQ(jit::to_dlpack_dtype(jit::DType::Float16).code, kDLFloat);
}

TEST(DLPackDType, HasNoDTypeForVectorLanesOddWidthsOrHandles) {
    EXPECT_FALSE(jit::from_dlpack_dtype(dl(kDLFloat, 32, 4)));
    EXPECT_FALSE(jit::from_dlpack_dtype(dl(kDLFloat, 24)));
    EXPECT_FALSE(jit::from_dlpack_dtype(dl(kDLInt, 128)));
    EXPECT_FALSE(jit::from_dlpack_dtype(dl(kDLOpaqueHandle, 64)));
    EXPECT_FALSE(jit::from_dlpack_dtype(dl(kDLBool, 1)));
    EXPECT_FALSE(jit::from_dlpack_dtype(dl(kDLBfloat, 32)));
}

TEST(DLPackImport, ViewsHostMemoryWithoutCopy) {
    HostTensor h;
    fill(h, dl(kDLFloat, 32), {2, 3}, as_bytes(std::vector<float>{1, 2, 3, 4, 5, 6}));
    jit::Array a = jit::from_dlpack(&h.managed);
    EXPECT_EQ(a.backend(), jit::Backend::Cpu);
    EXPECT_EQ(a.dtype(), jit::DType::Float32);
    EXPECT_EQ(a.shape(), (jit::Shape{2, 3}));
    EXPECT_EQ(a.strides(), (jit::Strides{3, 1}));
    EXPECT_EQ(a.data(), h.bytes.data());
}

TEST(DLPackImport, CallsTheDeleterOnceWhenTheLastArrayIsGone) {
    int deleted = 0;
    HostTensor h;
    fill(h, dl(kDLFloat, 64), {4}, as_bytes(std::vector<double>{1, 2, 3, 4}), {}, &deleted);
    {
        jit::Array a = jit::from_dlpack(&h.managed);
        jit::Array tail = a.slice(0, 1, 4);
        a = jit::Array();
        EXPECT_EQ(deleted, 0);
        EXPECT_EQ(tail.to_vector<double>(), (std::vector<double>{2, 3, 4}));
    }
    EXPECT_EQ(deleted, 1);
}

TEST(DLPackImport, ReadsExplicitStridesInElements) {
    // A 2x3 view of a 3x2 buffer, transposed: element (i, j) at i + 2*j.
    HostTensor h;
    fill(h, dl(kDLInt, 32), {2, 3}, as_bytes(std::vector<std::int32_t>{1, 4, 2, 5, 3, 6}), {1, 2});
    jit::Array a = jit::from_dlpack(&h.managed);
    EXPECT_FALSE(a.is_contiguous());
    EXPECT_EQ(a.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}));
}

TEST(DLPackImport, HonoursByteOffset) {
    HostTensor h;
    fill(h, dl(kDLInt, 16), {2}, as_bytes(std::vector<std::int16_t>{7, 8, 9}));
    h.managed.dl_tensor.byte_offset = 2;
    EXPECT_EQ(jit::from_dlpack(&h.managed).to_vector<std::int16_t>(), (std::vector<std::int16_t>{8, 9}));
}

TEST(DLPackImport, TakesZeroDimensionalTensors) {
    HostTensor h;
    fill(h, dl(kDLFloat, 32), {}, as_bytes(std::vector<float>{2.5f}));
    jit::Array a = jit::from_dlpack(&h.managed);
    EXPECT_EQ(a.ndim(), 0);
    EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2.5f}));
}

TEST(DLPackImport, MapsCudaDeviceZeroToTheCudaBackend) {
    // The memory is never touched here: making the view only records where it lives.
    int deleted = 0;
    HostTensor h;
    fill(h, dl(kDLFloat, 32), {4}, std::vector<std::byte>(16), {}, &deleted);
    h.managed.dl_tensor.device = {kDLCUDA, 0};
    EXPECT_EQ(jit::from_dlpack(&h.managed).backend(), jit::Backend::Cuda);
    EXPECT_EQ(deleted, 1);
}

TEST(DLPackImport, RejectsOtherDevicesWithoutConsumingTheTensor) {
    int deleted = 0;
    HostTensor h;
    fill(h, dl(kDLFloat, 32), {4}, std::vector<std::byte>(16), {}, &deleted);
    h.managed.dl_tensor.device = {kDLOpenCL, 0};
    EXPECT_THROW(jit::from_dlpack(&h.managed), jit::ArgumentError);
    h.managed.dl_tensor.device = {kDLCUDA, -1};
    EXPECT_THROW(jit::from_dlpack(&h.managed), jit::ArgumentError);
    EXPECT_EQ(deleted, 0);
}

TEST(DLPackImport, ACudaTensorKeepsItsDeviceOrdinal) {
    int deleted = 0;
    HostTensor h;
    fill(h, dl(kDLFloat, 32), {4}, std::vector<std::byte>(16), {}, &deleted);
    h.managed.dl_tensor.device = {kDLCUDA, 1};  // a view only: the memory is never touched
    {
        jit::Array a = jit::from_dlpack(&h.managed);
        EXPECT_EQ(a.backend(), jit::Backend::Cuda);
        EXPECT_EQ(a.device(), 1);
    }
    EXPECT_EQ(deleted, 1);
}

TEST(DLPackImport, RejectsVectorLanes) {
    HostTensor h;
    fill(h, dl(kDLFloat, 32, 4), {2}, std::vector<std::byte>(32));
    try {
        jit::from_dlpack(&h.managed);
        FAIL() << "no exception";
    } catch (const jit::ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("lanes 4"), std::string::npos) << e.what();
    }
}

TEST(DLPackImport, RejectsMoreThanEightDimensions) {
    HostTensor h;
    fill(h, dl(kDLUInt, 8), std::vector<std::int64_t>(9, 1), std::vector<std::byte>(1));
    EXPECT_THROW(jit::from_dlpack(&h.managed), jit::ArgumentError);
}

TEST(DLPackImport, RejectsANullTensor) { EXPECT_THROW(jit::from_dlpack(nullptr), jit::ArgumentError); }

TEST(DLPackImport, BorrowedViewOwnsNothing) {
    int deleted = 0;
    HostTensor h;
    fill(h, dl(kDLUInt, 8), {3}, as_bytes(std::vector<std::uint8_t>{1, 2, 3}), {}, &deleted);
    {
        EXPECT_EQ(jit::view_dlpack(h.managed.dl_tensor).to_vector<std::uint8_t>(),
                  (std::vector<std::uint8_t>{1, 2, 3}));
    }
    EXPECT_EQ(deleted, 0);
}

TEST(DLPackExport, DescribesTheArray) {
    jit::Array a = jit::Array::from(std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}, {2, 3}, jit::Backend::Cpu);
    DLManagedTensor* t = jit::to_dlpack(a);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->dl_tensor.device.device_type, kDLCPU);
    EXPECT_EQ(t->dl_tensor.ndim, 2);
    EXPECT_EQ(t->dl_tensor.dtype.code, kDLInt);
    EXPECT_EQ(t->dl_tensor.dtype.bits, 64);
    EXPECT_EQ(t->dl_tensor.shape[0], 2);
    EXPECT_EQ(t->dl_tensor.shape[1], 3);
    EXPECT_EQ(t->dl_tensor.strides[0], 3);
    EXPECT_EQ(t->dl_tensor.strides[1], 1);
    EXPECT_EQ(t->dl_tensor.data, a.data());
    EXPECT_EQ(t->dl_tensor.byte_offset, 0u);
    t->deleter(t);
}

TEST(DLPackExport, KeepsTheStorageAliveUntilTheDeleterRuns) {
    DLManagedTensor* t = nullptr;
    std::weak_ptr<jit::Storage> watch;
    {
        jit::Array a = jit::Array::from(std::vector<float>{1, 2, 3}, {}, jit::Backend::Cpu);
        watch = a.storage();
        t = jit::to_dlpack(a);
    }
    ASSERT_FALSE(watch.expired());
    const float* p = static_cast<const float*>(t->dl_tensor.data);
    EXPECT_EQ(p[2], 3.0f);
    t->deleter(t);
    EXPECT_TRUE(watch.expired());
}

TEST(DLPackExport, SlicesUseByteOffsetFromTheStorageBase) {
    jit::Array a = jit::Array::from(std::vector<std::int32_t>{0, 1, 2, 3, 4, 5}, {}, jit::Backend::Cpu);
    jit::Array s = a.slice(0, 1, 6, 2);  // {1, 3, 5}
    DLManagedTensor* t = jit::to_dlpack(s);
    EXPECT_EQ(t->dl_tensor.data, a.data());
    EXPECT_EQ(t->dl_tensor.byte_offset, 4u);
    EXPECT_EQ(t->dl_tensor.strides[0], 2);
    jit::Array back = jit::from_dlpack(t);
    EXPECT_EQ(back.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 3, 5}));
}

TEST(DLPackExport, RejectsAnUndefinedArray) { EXPECT_THROW(jit::to_dlpack(jit::Array()), jit::ArgumentError); }

TEST(DLPackRoundTrip, EveryDTypeKeepsItsBytesAndMemory) {
    for (jit::DType t : kAllDTypes) {
        SCOPED_TRACE(std::string(jit::dtype_name(t)));
        const std::vector<std::byte> bytes = sample(t, 6);
        jit::Array a = jit::Array::from_host(bytes.data(), t, {2, 3}, jit::Backend::Cpu);
        jit::Array b = jit::from_dlpack(jit::to_dlpack(a));
        EXPECT_EQ(b.dtype(), t);
        EXPECT_EQ(b.shape(), a.shape());
        EXPECT_EQ(b.data(), a.data());
        EXPECT_EQ(host_bytes(b), bytes);
    }
}

TEST(DLPackRoundTrip, ImportedArraysEvaluateLikeOwnedOnes) {
    HostTensor ha, hb;
    fill(ha, dl(kDLFloat, 32), {3}, as_bytes(std::vector<float>{1, 2, 3}));
    fill(hb, dl(kDLFloat, 32), {3}, as_bytes(std::vector<float>{4, 5, 6}));
    jit::RuntimeOptions o;
    o.backend = jit::Backend::Cpu;
    o.disk_cache = false;
    jit::Runtime rt(o);
    jit::Array c = rt.eval("a * 2 + b", {jit::from_dlpack(&ha.managed), jit::from_dlpack(&hb.managed)});
    EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{6, 9, 12}));
}

// ---- DLPack 1.x (versioned) tensors

TEST(DLPackVersioned, RoundTripsWithoutACopyAndCallsTheDeleterOnce) {
    jit::Array a = jit::Array::from(std::vector<double>{1, 2, 3, 4}, {2, 2}, jit::Backend::Cpu);
    DLManagedTensorVersioned* t = jit::to_dlpack_versioned(a, DLPACK_FLAG_BITMASK_READ_ONLY);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->version.major, 1u);
    EXPECT_EQ(t->flags, DLPACK_FLAG_BITMASK_READ_ONLY);
    EXPECT_EQ(t->dl_tensor.ndim, 2);
    {
        jit::Array b = jit::from_dlpack_versioned(t);
        EXPECT_EQ(b.data(), a.data());
        EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{1, 2, 3, 4}));
    }  // b's storage reference (the tensor's deleter) is gone here; a still owns the memory
    EXPECT_EQ(a.to_vector<double>()[3], 4.0);
}

TEST(DLPackVersioned, AnotherMajorVersionIsRefusedAndNotConsumed) {
    jit::Array a = jit::Array::from(std::vector<float>{1}, {}, jit::Backend::Cpu);
    DLManagedTensorVersioned* t = jit::to_dlpack_versioned(a);
    t->version.major = 2;
    EXPECT_THROW(jit::from_dlpack_versioned(t), jit::ArgumentError);
    t->deleter(t);  // still the caller's
}

TEST(DLPackReadOnly, AVersionedTensorFlaggedReadOnlyGivesAReadOnlyArray) {
    HostTensor h;
    fill(h, dl(kDLFloat, 32), {2}, as_bytes(std::vector<float>{1, 2}));
    DLManagedTensorVersioned v{};
    v.version = DLPackVersion{1, 0};
    v.dl_tensor = h.managed.dl_tensor;
    v.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    EXPECT_TRUE(jit::view_dlpack_versioned(v).read_only());
    EXPECT_TRUE(jit::from_dlpack_versioned(&v).read_only());
    v.flags = 0;
    EXPECT_FALSE(jit::view_dlpack_versioned(v).read_only());
    EXPECT_FALSE(jit::from_dlpack(&h.managed).read_only()) << "DLPack before 1.0 has no flag";
}

TEST(DLPackReadOnly, AReadOnlyArrayIsExportedFlaggedReadOnly) {
    const float values[2] = {1, 2};
    const jit::Array a = jit::Array::view(values, jit::DType::Float32, {2}, {}, jit::Backend::Cpu, 0);
    DLManagedTensorVersioned* t = jit::to_dlpack_versioned(a);
    EXPECT_NE(t->flags & DLPACK_FLAG_BITMASK_READ_ONLY, 0u);
    t->deleter(t);
    float mine[2] = {1, 2};
    DLManagedTensorVersioned* w =
        jit::to_dlpack_versioned(jit::Array::view(mine, jit::DType::Float32, {2}, {}, jit::Backend::Cpu));
    EXPECT_EQ(w->flags & DLPACK_FLAG_BITMASK_READ_ONLY, 0u);
    w->deleter(w);
}

TEST(DLPackReadOnly, StridesThatReachPastAnyAddressAreRefused) {
    HostTensor h;
    fill(h, dl(kDLFloat, 64), {3}, as_bytes(std::vector<double>{1, 2, 3}), {std::int64_t{1} << 62});
    EXPECT_THROW(jit::view_dlpack(h.managed.dl_tensor), jit::ArgumentError);
    fill(h, dl(kDLFloat, 64), {std::int64_t{1} << 62}, as_bytes(std::vector<double>{1}));
    EXPECT_THROW(jit::view_dlpack(h.managed.dl_tensor), jit::ArgumentError);
}
