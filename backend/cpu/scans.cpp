// jitexpr — the CPU backend's scan kernels: a row's running sum or product, in order (prepared.hpp).
#include "backend/cpu/prepared.hpp"
#include "dsl/semantics.h"

#include <cstring>

namespace jit::cpu::impl {

namespace {

template <class R, class T, DType D>
void kscan(const void* in, i64 n, void* out, void* carry, bool first) {
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    T c;
    std::memcpy(&c, carry, sizeof c);
    for (i64 i = 0; i < n; ++i) {
        c = first && i == 0 ? x[0] : R::combine(c, x[i]);
        if constexpr (D == DType::Float16) c = jx::round_f16(c);
        else if constexpr (D == DType::BFloat16) c = jx::round_bf16(c);
        y[i] = c;
    }
    std::memcpy(carry, &c, sizeof c);
}

template <class T, DType D>
ScanFn scan_of(Red r) {
    return r == Red::Prod ? &kscan<jx::red::Prod<T>, T, D> : &kscan<jx::red::Sum<T>, T, D>;
}

}  // namespace

// The scan of accumulator slot `r` (Sum or Prod) over register values of `t`; null for the
// dtypes lowering never scans (bool and the narrow integers become int64 or uint64 first).
ScanFn scan_kernel(Red r, DType t) {
    if (r != Red::Sum && r != Red::Prod) return nullptr;
    switch (t) {
        case DType::Int64: return scan_of<jx::i64, DType::Int64>(r);
        case DType::UInt64: return scan_of<jx::u64, DType::UInt64>(r);
        case DType::Float16: return scan_of<float, DType::Float16>(r);
        case DType::BFloat16: return scan_of<float, DType::BFloat16>(r);
        case DType::Float32: return scan_of<float, DType::Float32>(r);
        case DType::Float64: return scan_of<double, DType::Float64>(r);
        case DType::Complex64: return scan_of<jx::c64, DType::Complex64>(r);
        case DType::Complex128: return scan_of<jx::c128, DType::Complex128>(r);
        default: return nullptr;
    }
}

}  // namespace jit::cpu::impl
