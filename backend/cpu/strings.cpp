// jitexpr CPU backend — strings: loads of string columns and the string ops' block kernels (see
// strings.hpp). The ops are dsl/semantics.h's, element by element, except contains() of one
// needle over rows that lie back to back (an Arrow column's block, whose bytes are contiguous):
// one search of the block's bytes, each match kept when it lies within one row.
#include "backend/cpu/strings.hpp"

#include "dsl/semantics.h"

#include <cstring>

namespace jit::cpu {

namespace {

using i64 = std::int64_t;

static_assert(sizeof(jx::sb) == kStringRegBytes && sizeof(jx::su) == kStringRegBytes &&
              sizeof(jx::s8) == kStringRegBytes);

// The length of `n` units at p without the zero units at the end.
template <class U>
i64 trimmed(const U* p, i64 n) {
    if constexpr (sizeof(U) == 1) {
        // Eight bytes at a time from the end while they are all zero (the padding of S columns).
        while (n >= 8) {
            std::uint64_t w;
            std::memcpy(&w, p + n - 8, 8);
            if (w != 0) break;
            n -= 8;
        }
    }
    while (n > 0 && p[n - 1] == 0) --n;
    return n;
}

template <class O>
void load_utf8(const char* base, const char* chars, i64 off, i64 stride, jx::s8* dst, i64 n) {
    const auto* o = reinterpret_cast<const O*>(base);
    const auto* c = reinterpret_cast<const jx::u8*>(chars);
    for (i64 j = 0; j < n; ++j) {
        const i64 k = off + j * stride;
        O b, e;
        std::memcpy(&b, o + k, sizeof b);
        std::memcpy(&e, o + k + 1, sizeof e);
        dst[j] = jx::s8{c + b, static_cast<i64>(e - b)};
    }
}

}  // namespace

void load_strings(DType t, const char* base, i64 item, const char* chars, i64 off, i64 stride, void* dst, i64 n) {
    switch (t) {
        case DType::Bytes: {
            auto* d = static_cast<jx::sb*>(dst);
            for (i64 j = 0; j < n; ++j) {
                const auto* p = reinterpret_cast<const jx::u8*>(base + (off + j * stride) * item);
                d[j] = jx::sb{p, trimmed(p, item)};
            }
            return;
        }
        case DType::Str: {
            auto* d = static_cast<jx::su*>(dst);
            for (i64 j = 0; j < n; ++j) {
                const auto* p = reinterpret_cast<const jx::u32*>(base + (off + j * stride) * item);
                d[j] = jx::su{p, trimmed(p, item / 4)};
            }
            return;
        }
        case DType::Utf8:
            if (item == 4) load_utf8<std::int32_t>(base, chars, off, stride, static_cast<jx::s8*>(dst), n);
            else load_utf8<std::int64_t>(base, chars, off, stride, static_cast<jx::s8*>(dst), n);
            return;
        default: break;
    }
    throw InternalError(fmt::format("cpu backend: a string load of {}", dtype_name(t)));
}

namespace {

// One functor per string op, over any pair of string types semantics.h defines it for.
#define JX_SFN(Id)                   \
    struct F_##Id {                  \
        template <class... A>        \
        static auto call(A... a) {   \
            return jx::op::Id(a...); \
        }                            \
    };
JX_SFN(Lt)
JX_SFN(Le)
JX_SFN(Eq)
JX_SFN(Ne)
JX_SFN(Ge)
JX_SFN(Gt)
JX_SFN(Contains)
JX_SFN(Startswith)
JX_SFN(Endswith)
JX_SFN(Find)
JX_SFN(StrLen)
#undef JX_SFN

template <class F, class A>
void k1(const void* const* in, void* out, i64 n) {
    const auto* a = static_cast<const A*>(in[0]);
    using R = decltype(F::call(A{}));
    auto* o = static_cast<R*>(out);
    for (i64 i = 0; i < n; ++i) o[i] = F::call(a[i]);
}

template <class F, class A, class B, int S>
void k2(const void* const* in, void* out, i64 n) {
    const auto* a = static_cast<const A*>(in[0]);
    const auto* b = static_cast<const B*>(in[1]);
    using R = decltype(F::call(A{}, B{}));
    auto* o = static_cast<R*>(out);
    for (i64 i = 0; i < n; ++i) o[i] = F::call(a[(S & 1) ? 0 : i], b[(S & 2) ? 0 : i]);
}

// contains(rows, needle) of one-byte units (bytes, UTF-8): where the block's rows lie back to back,
// one memmem over their bytes finds the matches, each kept when it ends within the row it starts
// in; otherwise row by row.
template <class S>
void contains_needle(const void* const* in, void* out, i64 n) {
    const auto* r = static_cast<const S*>(in[0]);
    const S needle = *static_cast<const S*>(in[1]);
    auto* o = static_cast<bool*>(out);
    if (n == 0) return;
    bool packed = true;
    for (i64 i = 0; i + 1 < n && packed; ++i) packed = r[i].p + r[i].n == r[i + 1].p;
    if (!packed || needle.n == 0) {
        for (i64 i = 0; i < n; ++i) o[i] = jx::str::contains(r[i], needle);
        return;
    }
    std::memset(o, 0, static_cast<std::size_t>(n));
    const jx::u8* pos = r[0].p;
    const jx::u8* const end = r[n - 1].p + r[n - 1].n;
    i64 row = 0;
    while (pos < end) {
        const void* f =
            ::memmem(pos, static_cast<std::size_t>(end - pos), needle.p, static_cast<std::size_t>(needle.n));
        if (!f) break;
        const auto* hit = static_cast<const jx::u8*>(f);
        while (r[row].p + r[row].n <= hit) ++row;  // the row the match starts in
        if (hit + needle.n <= r[row].p + r[row].n) {
            o[row] = true;
            pos = r[row].p + r[row].n;  // the row is decided: on to the next
            ++row;
            if (row >= n) break;
        } else {
            pos = hit + 1;
        }
    }
}

template <class F>
OpFn pick2(DType a, DType b, int s) {
    auto by_scalar = [s](auto fa, auto fb, auto fab, auto fnone) -> OpFn {
        switch (s) {
            case 0: return fnone;
            case 1: return fa;
            case 2: return fb;
            default: return fab;
        }
    };
#define JX_PAIR(TA, TB)                                                                               \
    return by_scalar(&k2<F, jx::TA, jx::TB, 1>, &k2<F, jx::TA, jx::TB, 2>, &k2<F, jx::TA, jx::TB, 3>, \
                     &k2<F, jx::TA, jx::TB, 0>)
    if (a == DType::Bytes && b == DType::Bytes) JX_PAIR(sb, sb);
    if (a == DType::Str && b == DType::Str) JX_PAIR(su, su);
    if (a == DType::Utf8 && b == DType::Utf8) JX_PAIR(s8, s8);
    if (a == DType::Str && b == DType::Utf8) JX_PAIR(su, s8);
    if (a == DType::Utf8 && b == DType::Str) JX_PAIR(s8, su);
#undef JX_PAIR
    return nullptr;
}

}  // namespace

OpFn string_kernel(ir::Op op, DType a, DType b, int scalar) {
    if (op == ir::Op::StrLen) {
        switch (a) {
            case DType::Bytes: return &k1<F_StrLen, jx::sb>;
            case DType::Str: return &k1<F_StrLen, jx::su>;
            case DType::Utf8: return &k1<F_StrLen, jx::s8>;
            default: return nullptr;
        }
    }
    if (op == ir::Op::Contains && scalar == 2 && a == b) {
        if (a == DType::Bytes) return &contains_needle<jx::sb>;
        if (a == DType::Utf8) return &contains_needle<jx::s8>;
    }
    switch (op) {
        case ir::Op::Lt: return pick2<F_Lt>(a, b, scalar);
        case ir::Op::Le: return pick2<F_Le>(a, b, scalar);
        case ir::Op::Eq: return pick2<F_Eq>(a, b, scalar);
        case ir::Op::Ne: return pick2<F_Ne>(a, b, scalar);
        case ir::Op::Ge: return pick2<F_Ge>(a, b, scalar);
        case ir::Op::Gt: return pick2<F_Gt>(a, b, scalar);
        case ir::Op::Contains: return pick2<F_Contains>(a, b, scalar);
        case ir::Op::Startswith: return pick2<F_Startswith>(a, b, scalar);
        case ir::Op::Endswith: return pick2<F_Endswith>(a, b, scalar);
        case ir::Op::Find: return pick2<F_Find>(a, b, scalar);
        default: return nullptr;
    }
}

}  // namespace jit::cpu
