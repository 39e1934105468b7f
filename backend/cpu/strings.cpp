// jitexpr CPU backend — strings: loads of string columns and the string ops' block kernels (see
// strings.hpp). The ops are dsl/semantics.h's, element by element, except contains() of one
// needle over rows that lie back to back (an Arrow column's block, whose bytes are contiguous):
// one search of the block's bytes, each match kept when it lies within one row.
#include "backend/cpu/strings.hpp"

#include "dsl/semantics.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace jit::cpu {

namespace {

using i64 = std::int64_t;

static_assert(sizeof(jx::sb) == kStringRegBytes && sizeof(jx::su) == kStringRegBytes &&
              sizeof(jx::s8) == kStringRegBytes);

// The length of `n` units at p without the zero units at the end.
template <class U>
i64 trimmed(const U* p, i64 n) {
    if constexpr (sizeof(U) == 1) {
        // Eight bytes at a time from the end (the padding of S columns): the last nonzero byte of
        // a nonzero word is its highest (little-endian), found by counting its leading zeros.
        while (n >= 8) {
            std::uint64_t w;
            std::memcpy(&w, p + n - 8, 8);
            if (w != 0) return n - __builtin_clzll(w) / 8;
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

// The first occurrence of the needle nd (m >= 1 bytes) in [p, end), or null. Candidates are the
// positions where both the needle's first and last bytes match, found 16 positions at a time
// (SSE2, every x86-64 has it), each confirmed by comparing the bytes between.
const jx::u8* search(const jx::u8* p, const jx::u8* end, const jx::u8* nd, i64 m) {
    if (end - p < m) return nullptr;
    if (m == 1) return static_cast<const jx::u8*>(std::memchr(p, nd[0], static_cast<std::size_t>(end - p)));
    const jx::u8* const last_start = end - m;  // the last position a match may start at
    const auto rest = static_cast<std::size_t>(m - 2);
#if defined(__SSE2__)
    const __m128i first = _mm_set1_epi8(static_cast<char>(nd[0]));
    const __m128i last = _mm_set1_epi8(static_cast<char>(nd[m - 1]));
    // 16 starting positions p .. p + 15, all at most last_start: the loads stay within [p, end).
    for (; p + 15 <= last_start; p += 16) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + m - 1));
        auto mask =
            static_cast<unsigned>(_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last))));
        while (mask != 0) {
            const int k = __builtin_ctz(mask);
            if (rest == 0 || std::memcmp(p + k + 1, nd + 1, rest) == 0) return p + k;
            mask &= mask - 1;
        }
    }
#endif
    for (; p <= last_start; ++p)
        if (p[0] == nd[0] && p[m - 1] == nd[m - 1] && (rest == 0 || std::memcmp(p + 1, nd + 1, rest) == 0)) return p;
    return nullptr;
}

// contains(rows, needle) of one-byte units (bytes, UTF-8): where the block's rows lie in order in
// memory (back to back, or with an S column's padding between), one search over their bytes
// finds the matches, each kept when it lies within one row; otherwise row by row.
template <class S>
void contains_needle(const void* const* in, void* out, i64 n) {
    const auto* r = static_cast<const S*>(in[0]);
    const S needle = *static_cast<const S*>(in[1]);
    auto* o = static_cast<bool*>(out);
    if (n == 0) return;
    // Rows in order without overlap (an Arrow block back to back, an S block with its padding
    // between): one search over the whole range.
    bool packed = true;
    for (i64 i = 0; i + 1 < n && packed; ++i) packed = r[i].p + r[i].n <= r[i + 1].p;
    if (needle.n == 0) {
        std::memset(o, 1, static_cast<std::size_t>(n));
        return;
    }
    if (!packed) {
        for (i64 i = 0; i < n; ++i) o[i] = search(r[i].p, r[i].p + r[i].n, needle.p, needle.n) != nullptr;
        return;
    }
    std::memset(o, 0, static_cast<std::size_t>(n));
    const jx::u8* pos = r[0].p;
    const jx::u8* const end = r[n - 1].p + r[n - 1].n;
    i64 row = 0;
    while (pos < end) {
        const jx::u8* hit = search(pos, end, needle.p, needle.n);
        if (!hit) break;
        while (r[row].p + r[row].n <= hit) ++row;  // the first row that ends past the match's start
        if (hit >= r[row].p && hit + needle.n <= r[row].p + r[row].n) {  // (not in the padding before it)
            o[row] = true;
            pos = r[row].p + r[row].n;  // the row is decided: on to the next
            ++row;
            if (row >= n) break;
        } else {
            pos = hit + 1;
        }
    }
}

// s == needle (Eq) or s != needle (Ne) with the needle one value: the lengths first, then the
// first unit, then the rest (most rows differ in length or first unit: no comparison call).
template <class S, bool Equal>
void equal_needle(const void* const* in, void* out, i64 n) {
    const auto* r = static_cast<const S*>(in[0]);
    const S needle = *static_cast<const S*>(in[1]);
    auto* o = static_cast<bool*>(out);
    const i64 m = needle.n;
    if (m == 0) {
        for (i64 i = 0; i < n; ++i) o[i] = (r[i].n == 0) == Equal;
        return;
    }
    // The rows of the needle's length first (their lengths are in the block's values: no
    // string is read), each one's bytes asked for as it is found, then those rows compared: the
    // reads of rows far apart overlap rather than wait one after another.
    i64 cand[kBlock];
    i64 nc = 0;
    for (i64 i = 0; i < n; ++i) {
        o[i] = !Equal;
        if (r[i].n == m) {
            __builtin_prefetch(r[i].p);
            cand[nc++] = i;
        }
    }
    const auto first = needle.p[0];
    for (i64 j = 0; j < nc; ++j) {
        const S& x = r[cand[j]];
        bool eq = x.p[0] == first;
        if (eq && m <= 16) {
            for (i64 k = 1; k < m && eq; ++k) eq = x.p[k] == needle.p[k];
        } else if (eq) {
            eq = jx::str::equal_units(x.p, needle.p, m);
        }
        o[cand[j]] = eq == Equal;
    }
}

// needle == s and needle != s: the same, the operands the other way round.
template <class S, bool Equal>
void equal_needle_left(const void* const* in, void* out, i64 n) {
    const void* swapped[2] = {in[1], in[0]};
    equal_needle<S, Equal>(swapped, out, n);
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

// ---- kernels that read the column themselves (string_scan_kernel)

// Element j's string, any stride: what load_strings gives for one element.
template <class S>
S element_at(DType t, const char* base, i64 item, const char* chars, i64 k) {
    S s{};
    load_strings(t, base, item, chars, k, 1, &s, 1);
    return s;
}

// An Arrow column's == / != needle: lengths from adjacent offsets (no string read), then the
// bytes of the rows of the needle's length, asked for as they are found.
template <class O, bool Equal>
void scan_utf8_equal(const char* base, i64 item, const char* chars, i64 off, i64 stride, i64 n, const void* nd,
                     bool* out) {
    const jx::s8 needle = *static_cast<const jx::s8*>(nd);
    const i64 m = needle.n;
    const auto* c = reinterpret_cast<const jx::u8*>(chars);
    if (stride != 1) {
        for (i64 j = 0; j < n; ++j) {
            const auto s = element_at<jx::s8>(DType::Utf8, base, item, chars, off + j * stride);
            out[j] = jx::str::equal(s, needle) == Equal;
        }
        return;
    }
    const O* __restrict o = reinterpret_cast<const O*>(base) + off;
    bool* __restrict flag = out;
    const O want = static_cast<O>(m);
    for (i64 j = 0; j < n; ++j) flag[j] = static_cast<O>(o[j + 1] - o[j]) == want;  // (vectorised)
    if (m > 0) {
        i64 cand[kBlock];
        i64 nc = 0;
        for (i64 j0 = 0; j0 < n; j0 += kBlock) {
            const i64 j1 = std::min(n, j0 + kBlock);
            nc = 0;
            i64 j = j0;
            for (; j + 8 <= j1; j += 8) {  // eight flags at a time: most are all false
                std::uint64_t w;
                std::memcpy(&w, flag + j, 8);
                for (; w != 0; w &= w - 1) {
                    const i64 at = j + __builtin_ctzll(w) / 8;
                    __builtin_prefetch(c + o[at]);
                    cand[nc++] = at;
                }
            }
            for (; j < j1; ++j)
                if (flag[j]) {
                    __builtin_prefetch(c + o[j]);
                    cand[nc++] = j;
                }
            for (i64 q = 0; q < nc; ++q) {
                const i64 row = cand[q];
                const jx::u8* p = c + o[row];
                bool eq = p[0] == needle.p[0];
                for (i64 k = 1; k < m && k < 16 && eq; ++k) eq = p[k] == needle.p[k];
                if (eq && m > 16) eq = std::memcmp(p + 16, needle.p + 16, static_cast<std::size_t>(m - 16)) == 0;
                out[row] = eq;
            }
        }
    }
    if (!Equal)
        for (i64 j = 0; j < n; ++j) out[j] = !out[j];
}

// An Arrow column's contains(s, needle): one search over the rows' bytes, each match mapped to
// its row by the offsets and kept when it ends within the row.
template <class O>
void scan_utf8_contains(const char* base, i64 item, const char* chars, i64 off, i64 stride, i64 n, const void* nd,
                        bool* out) {
    const jx::s8 needle = *static_cast<const jx::s8*>(nd);
    if (needle.n == 0) {
        std::memset(out, 1, static_cast<std::size_t>(n));
        return;
    }
    const auto* c = reinterpret_cast<const jx::u8*>(chars);
    if (stride != 1) {
        for (i64 j = 0; j < n; ++j) {
            const auto s = element_at<jx::s8>(DType::Utf8, base, item, chars, off + j * stride);
            out[j] = search(s.p, s.p + s.n, needle.p, needle.n) != nullptr;
        }
        return;
    }
    std::memset(out, 0, static_cast<std::size_t>(n));
    if (n == 0) return;
    const O* o = reinterpret_cast<const O*>(base) + off;
    const jx::u8* pos = c + o[0];
    const jx::u8* const end = c + o[n];
    i64 row = 0;
    while (pos < end) {
        const jx::u8* hit = search(pos, end, needle.p, needle.n);
        if (!hit) break;
        const auto at = static_cast<i64>(hit - c);
        while (static_cast<i64>(o[row + 1]) <= at) ++row;  // the row the match starts in
        if (at + needle.n <= static_cast<i64>(o[row + 1])) {
            out[row] = true;
            pos = c + o[row + 1];  // the row is decided: on to the next
            if (++row >= n) break;
        } else {
            pos = hit + 1;
        }
    }
}

// An S column's == / != needle: rows of `item` bytes compared whole with the needle NUL-padded
// to that width (the same as comparing them without their trailing NULs: the needle has none),
// eight bytes first.
template <bool Equal>
void scan_bytes_equal(const char* base, i64 item, const char* chars, i64 off, i64 stride, i64 n, const void* nd,
                      bool* out) {
    const jx::sb needle = *static_cast<const jx::sb*>(nd);
    if (needle.n > item) {  // longer than a row: equal to none
        std::memset(out, Equal ? 0 : 1, static_cast<std::size_t>(n));
        return;
    }
    constexpr i64 kPad = 256;
    if (item > kPad) {
        for (i64 j = 0; j < n; ++j) {
            const auto s = element_at<jx::sb>(DType::Bytes, base, item, chars, off + j * stride);
            out[j] = jx::str::equal(s, needle) == Equal;
        }
        return;
    }
    unsigned char padded[kPad] = {};
    if (needle.n > 0) std::memcpy(padded, needle.p, static_cast<std::size_t>(needle.n));
    const i64 head = std::min<i64>(item, 8);
    std::uint64_t want = 0;
    std::memcpy(&want, padded, static_cast<std::size_t>(head));
    for (i64 j = 0; j < n; ++j) {
        const char* r = base + (off + j * stride) * item;
        std::uint64_t got = 0;
        std::memcpy(&got, r, static_cast<std::size_t>(head));
        bool eq = got == want;
        if (eq && item > 8) eq = std::memcmp(r + 8, padded + 8, static_cast<std::size_t>(item - 8)) == 0;
        out[j] = eq == Equal;
    }
}

// An S column's contains(s, needle): one search over the block's rows, each match kept when it
// lies within one row (the needle ends in no NUL, so no match reaches into a row's padding).
void scan_bytes_contains(const char* base, i64 item, const char* chars, i64 off, i64 stride, i64 n, const void* nd,
                         bool* out) {
    const jx::sb needle = *static_cast<const jx::sb*>(nd);
    if (needle.n == 0) {
        std::memset(out, 1, static_cast<std::size_t>(n));
        return;
    }
    if (stride != 1) {
        for (i64 j = 0; j < n; ++j) {
            const auto s = element_at<jx::sb>(DType::Bytes, base, item, chars, off + j * stride);
            out[j] = search(s.p, s.p + s.n, needle.p, needle.n) != nullptr;
        }
        return;
    }
    std::memset(out, 0, static_cast<std::size_t>(n));
    const auto* start = reinterpret_cast<const jx::u8*>(base + off * item);
    const jx::u8* const end = start + n * item;
    const jx::u8* pos = start;
    while (pos < end) {
        const jx::u8* hit = search(pos, end, needle.p, needle.n);
        if (!hit) break;
        const i64 row = (hit - start) / item;
        const jx::u8* row_end = start + (row + 1) * item;
        if (hit + needle.n <= row_end) {
            out[row] = true;
            pos = row_end;
        } else {
            pos = hit + 1;
        }
    }
}

}  // namespace

StringScanFn string_scan_kernel(ir::Op op, DType column) {
    if (column == DType::Utf8) {
        // (the offsets' width is the column's, known at run time: both kernels, chosen by `item`)
        switch (op) {
            case ir::Op::Eq:
                return [](const char* b, i64 it, const char* c, i64 o, i64 s, i64 n, const void* nd, bool* out) {
                    (it == 8 ? scan_utf8_equal<std::int64_t, true>
                             : scan_utf8_equal<std::int32_t, true>)(b, it, c, o, s, n, nd, out);
                };
            case ir::Op::Ne:
                return [](const char* b, i64 it, const char* c, i64 o, i64 s, i64 n, const void* nd, bool* out) {
                    (it == 8 ? scan_utf8_equal<std::int64_t, false>
                             : scan_utf8_equal<std::int32_t, false>)(b, it, c, o, s, n, nd, out);
                };
            case ir::Op::Contains:
                return [](const char* b, i64 it, const char* c, i64 o, i64 s, i64 n, const void* nd, bool* out) {
                    (it == 8 ? scan_utf8_contains<std::int64_t> : scan_utf8_contains<std::int32_t>)(b, it, c, o, s, n,
                                                                                                    nd, out);
                };
            default: return nullptr;
        }
    }
    if (column == DType::Bytes) {
        switch (op) {
            case ir::Op::Eq: return &scan_bytes_equal<true>;
            case ir::Op::Ne: return &scan_bytes_equal<false>;
            case ir::Op::Contains: return &scan_bytes_contains;
            default: return nullptr;
        }
    }
    return nullptr;
}

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
    if ((op == ir::Op::Eq || op == ir::Op::Ne) && (scalar == 1 || scalar == 2) && a == b) {
        const bool eq = op == ir::Op::Eq, right = scalar == 2;
#define JX_EQ_NEEDLE(S)                                                            \
    return right ? (eq ? &equal_needle<jx::S, true> : &equal_needle<jx::S, false>) \
                 : (eq ? &equal_needle_left<jx::S, true> : &equal_needle_left<jx::S, false>)
        switch (a) {
            case DType::Bytes: JX_EQ_NEEDLE(sb);
            case DType::Str: JX_EQ_NEEDLE(su);
            case DType::Utf8: JX_EQ_NEEDLE(s8);
            default: break;
        }
#undef JX_EQ_NEEDLE
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
