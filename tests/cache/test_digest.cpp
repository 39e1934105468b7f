// Known answers for SHA-256 and the key encoding; KeyBuilder field sensitivity and boundaries.
#include "backend/cache/cache.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

using jit::cache::digest;
using jit::cache::KeyBuilder;
using jit::cache::Sha256;

namespace {

std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i % 251);
    return s;
}

}  // namespace

TEST(Digest, MatchesFipsKnownAnswers) {
    EXPECT_EQ(digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(digest("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                     "mnopqrstnopqrstu"),
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Digest, MillionAs) {
    EXPECT_EQ(digest(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Digest, PaddingEdgeLengths) {
    // Lengths around the 56- and 64-byte padding boundaries (answers from Python's hashlib).
    const std::vector<std::pair<std::size_t, const char*>> cases = {
        {55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"},
        {56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"},
        {63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"},
        {64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"},
        {65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"},
        {119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"},
        {120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"},
    };
    for (const auto& [n, want] : cases) EXPECT_EQ(digest(pattern(n)), want) << "length " << n;
}

TEST(Digest, IncrementalUpdatesEqualOneShot) {
    const std::string data = pattern(1000);
    for (std::size_t step : {1u, 7u, 63u, 64u, 65u, 200u}) {
        Sha256 sha;
        for (std::size_t i = 0; i < data.size(); i += step) sha.update(std::string_view(data).substr(i, step));
        auto d = sha.finish();
        EXPECT_EQ(jit::cache::to_hex(d.data(), d.size()), digest(data)) << "step " << step;
    }
}

TEST(KeyBuilder, MatchesDocumentedEncoding) {
    // sha256(u64le(20) "jitexpr.cache.key.v1" {u64le(len) name u64le(len) value}... u64le(count)),
    // computed independently in Python; a change here invalidates every disk cache.
    EXPECT_EQ(KeyBuilder().add("source", "__global__ void k(){}").add("arch", "sm_90").key(),
              "1586df989fb9d067976b99d123e5852b184d4186e4b29151f102870e8bcecc7d");
    EXPECT_EQ(KeyBuilder().key(), "62301fc8dc93f64e0ccf59e7cee554954d1e5c0aef71b63e9d99d7a15aaaadaf");
}

TEST(KeyBuilder, EveryFieldChangesTheKey) {
    const std::vector<std::pair<std::string, std::string>> base = {
        {"source", "extern \"C\" __global__ void k(float* a) { a[0] = 1; }"},
        {"nvrtc", "13000"},
        {"arch", "sm_90"},
        {"options", "-default-device --minimal"},
        {"codegen", "1"},
    };
    auto build = [](const std::vector<std::pair<std::string, std::string>>& fields) {
        KeyBuilder b;
        for (const auto& [n, v] : fields) b.add(n, v);
        return b.key();
    };
    const std::string k0 = build(base);
    std::set<std::string> seen = {k0};
    for (std::size_t i = 0; i < base.size(); ++i) {
        auto changed = base;
        changed[i].second += "x";
        EXPECT_TRUE(seen.insert(build(changed)).second) << "value of field " << base[i].first;
        changed = base;
        changed[i].first += "x";
        EXPECT_TRUE(seen.insert(build(changed)).second) << "name of field " << base[i].first;
    }
    auto swapped = base;
    std::swap(swapped[0], swapped[1]);
    EXPECT_NE(build(swapped), k0) << "field order";
    auto fewer = base;
    fewer.pop_back();
    EXPECT_NE(build(fewer), k0) << "one field less";
}

TEST(KeyBuilder, NoCollisionAcrossFieldBoundaries) {
    // Moving bytes between names and values, or between adjacent fields, must change the key.
    std::set<std::string> keys = {
        KeyBuilder().add("a", "bc").add("d", "e").key(),
        KeyBuilder().add("a", "b").add("cd", "e").key(),
        KeyBuilder().add("ab", "c").add("d", "e").key(),
        KeyBuilder().add("a", "bcd").add("e", "").key(),
        KeyBuilder().add("a", "").add("bcd", "e").key(),
        KeyBuilder().add("abcde", "").key(),
        KeyBuilder().add("a", "bcde").key(),
        KeyBuilder().add("a", std::string("b\0c", 3)).add("d", "e").key(),
    };
    EXPECT_EQ(keys.size(), 8u);
}

TEST(KeyBuilder, IntegerFieldIsItsDecimalText) {
    EXPECT_EQ(KeyBuilder().add("nvrtc", 13000).key(), KeyBuilder().add("nvrtc", "13000").key());
    EXPECT_NE(KeyBuilder().add("nvrtc", 13000).key(), KeyBuilder().add("nvrtc", 12080).key());
    EXPECT_EQ(KeyBuilder().add("n", std::size_t{7}).key(), KeyBuilder().add("n", "7").key());
    EXPECT_EQ(KeyBuilder().add("fast", true).key(), KeyBuilder().add("fast", "1").key());
}

TEST(KeyBuilder, RejectsDuplicateAndEmptyNames) {
    KeyBuilder b;
    b.add("arch", "sm_90");
    EXPECT_THROW(b.add("arch", "sm_80"), jit::InternalError);
    EXPECT_THROW(KeyBuilder().add("", "x"), jit::InternalError);
}

TEST(KeyBuilder, KeyIsAValidDiskKey) {
    const std::string k = KeyBuilder().add("source", "x").key();
    EXPECT_EQ(k.size(), 64u);
    EXPECT_TRUE(jit::cache::DiskCache::valid_key(k));
}

TEST(Hash64, TheSameBytesAndSeedGiveTheSameHashAndAnyChangeAnother) {
    std::string source(15000, 'x');
    for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<char>('a' + i * 7 % 26);
    const std::uint64_t h = jit::cache::hash64(source, 0x9e3779b97f4a7c15ULL);
    EXPECT_EQ(jit::cache::hash64(std::string(source), 0x9e3779b97f4a7c15ULL), h);
    EXPECT_NE(jit::cache::hash64(source, 1), h);  // another seed
    for (const std::size_t at : {std::size_t{0}, std::size_t{7000}, source.size() - 1}) {
        std::string changed = source;
        changed[at] ^= 1;
        EXPECT_NE(jit::cache::hash64(changed, 0x9e3779b97f4a7c15ULL), h) << "byte " << at;
    }
    EXPECT_NE(jit::cache::hash64(std::string_view(source).substr(1), 0x9e3779b97f4a7c15ULL), h);  // a byte fewer
    EXPECT_NE(jit::cache::hash64("", 0), jit::cache::hash64(std::string_view("\0", 1), 0));
}
