// The Arrow C data interface (include/jit/arrow.h, the Arrow part of include/jit/interop.hpp
// and jitexpr_eval_arrow) on host memory: columns built by hand, as a foreign producer would.
#include <jit/c_api.h>
#include <jit/interop.hpp>
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <map>

#include "test_util.hpp"

#include <cstring>
#include <limits>
#include <set>
#include <string>

using namespace embed_test;

namespace {

// A primitive column produced by the test. The ArrowArray's private_data points here (not to
// the struct, which an importer may move); release counts its calls.
struct Producer {
    std::vector<std::uint8_t> bitmap;  // validity, LSB first; empty for none
    std::vector<std::byte> values;     // length + offset elements (or bits for "b")
    const void* buffers[3] = {nullptr, nullptr, nullptr};
    int released = 0;
    std::string format;
    ArrowArray array{};
    ArrowSchema schema{};
    int schema_released = 0;
};

void release_producer_array(ArrowArray* a) {
    ++static_cast<Producer*>(a->private_data)->released;
    a->release = nullptr;
}

void release_producer_schema(ArrowSchema* s) {
    ++static_cast<Producer*>(s->private_data)->schema_released;
    s->release = nullptr;
}

std::vector<std::uint8_t> pack(const std::vector<bool>& bits) {
    std::vector<std::uint8_t> out((bits.size() + 7) / 8, 0);
    for (std::size_t i = 0; i < bits.size(); ++i)
        if (bits[i]) out[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
    return out;
}

bool bit(const void* buffer, std::int64_t i) {
    return ((static_cast<const std::uint8_t*>(buffer)[i / 8] >> (i % 8)) & 1) != 0;
}

// `values` hold offset + length elements; `valid` (offset + length entries, or empty for no
// bitmap) the validity; null_count as given (-1 = unknown).
void produce(Producer& p, std::string format, std::vector<std::byte> values, std::int64_t offset, std::int64_t length,
             const std::vector<bool>& valid = {}, std::int64_t null_count = 0) {
    p.format = std::move(format);
    p.values = std::move(values);
    p.bitmap = valid.empty() ? std::vector<std::uint8_t>{} : pack(valid);
    p.buffers[0] = p.bitmap.empty() ? nullptr : p.bitmap.data();
    p.buffers[1] = p.values.data();
    p.array = ArrowArray{};
    p.array.length = length;
    p.array.null_count = null_count;
    p.array.offset = offset;
    p.array.n_buffers = 2;
    p.array.buffers = p.buffers;
    p.array.release = &release_producer_array;
    p.array.private_data = &p;
    p.schema = ArrowSchema{};
    p.schema.format = p.format.c_str();
    p.schema.flags = ARROW_FLAG_NULLABLE;
    p.schema.release = &release_producer_schema;
    p.schema.private_data = &p;
}

std::vector<std::byte> host_bytes(const jit::Array& a) {
    std::vector<std::byte> out(a.nbytes());
    a.copy_to_host(out.data());
    return out;
}

jit::Runtime& cpu_runtime() {
    static jit::Runtime rt([] {
        jit::RuntimeOptions o;
        o.backend = jit::Backend::Cpu;
        o.disk_cache = false;
        return o;
    }());
    return rt;
}

struct FormatCase {
    const char* format;
    jit::DType dtype;
};
const FormatCase kPrimitive[] = {
    {"c", jit::DType::Int8},    {"C", jit::DType::UInt8},   {"s", jit::DType::Int16},   {"S", jit::DType::UInt16},
    {"i", jit::DType::Int32},   {"I", jit::DType::UInt32},  {"l", jit::DType::Int64},   {"L", jit::DType::UInt64},
    {"e", jit::DType::Float16}, {"f", jit::DType::Float32}, {"g", jit::DType::Float64},
};

template <class T>
std::vector<T> exported_values(const ArrowArray& a) {
    std::vector<T> out(static_cast<std::size_t>(a.length));
    std::memcpy(out.data(), static_cast<const T*>(a.buffers[1]) + a.offset, out.size() * sizeof(T));
    return out;
}

}  // namespace

TEST(ArrowFormat, MapsEveryPrimitiveFormatBothWays) {
    for (const FormatCase& c : kPrimitive) {
        EXPECT_EQ(jit::from_arrow_format(c.format), c.dtype) << c.format;
        EXPECT_STREQ(jit::to_arrow_format(c.dtype), c.format);
    }
    EXPECT_EQ(jit::from_arrow_format("b"), jit::DType::Bool);
    EXPECT_STREQ(jit::to_arrow_format(jit::DType::Bool), "b");
}

TEST(ArrowFormat, HasNoDTypeForStringsNestedOrParametricTypes) {
    for (const char* f :
         {"z", "Z", "vu", "vz", "n", "+l", "+s", "d:10,2", "w:4", "tts", "ttn", "tin", "tDD", "tsx:", "tss", "", "ii"})
        EXPECT_FALSE(jit::from_arrow_format(f)) << f;
    // Arrow's string and large_string are one dtype, the offsets' width the array's own.
    EXPECT_EQ(jit::from_arrow_format("u"), jit::DType::Utf8);
    EXPECT_EQ(jit::from_arrow_format("U"), jit::DType::Utf8);
    EXPECT_THROW(jit::to_arrow_format(jit::DType::Utf8), jit::ArgumentError);
    EXPECT_THROW(jit::to_arrow_format(jit::DType::Complex64), jit::ArgumentError);
    EXPECT_THROW(jit::to_arrow_format(jit::DType::BFloat16), jit::ArgumentError);
}

TEST(ArrowFormat, MapsTheTemporalTypesToDatesAndDurations) {
    EXPECT_EQ(jit::from_arrow_format("tdD"), jit::DType::DateTime64_D);
    EXPECT_EQ(jit::from_arrow_format("tdm"), jit::DType::DateTime64_ms);
    EXPECT_EQ(jit::from_arrow_format("tsu:"), jit::DType::DateTime64_us);
    EXPECT_EQ(jit::from_arrow_format("tsn:Europe/Oslo"), jit::DType::DateTime64_ns);  // the values are UTC
    EXPECT_EQ(jit::from_arrow_format("tDs"), jit::DType::TimeDelta64_s);
    EXPECT_STREQ(jit::to_arrow_format(jit::DType::DateTime64_D), "tdD");
    EXPECT_STREQ(jit::to_arrow_format(jit::DType::DateTime64_ms), "tsm:");
    EXPECT_STREQ(jit::to_arrow_format(jit::DType::TimeDelta64_ns), "tDn");
    // Units Arrow lacks: the message says to convert.
    for (const jit::DType t :
         {jit::DType::DateTime64_h, jit::DType::DateTime64_M, jit::DType::TimeDelta64_D, jit::DType::DateTime64_ps}) {
        try {
            jit::to_arrow_format(t);
            ADD_FAILURE() << jit::dtype_name(t);
        } catch (const jit::ArgumentError& e) {
            EXPECT_NE(std::string(e.what()).find("convert it first"), std::string::npos) << e.what();
        }
    }
}

TEST(ArrowImport, WidensADate32ColumnWithOffsetAndNulls) {
    std::vector<std::byte> days(6 * 4);
    const std::int32_t v[] = {7, -1, 19783, 0, -719468, 2};
    std::memcpy(days.data(), v, sizeof v);
    Producer p;
    produce(p, "tdD", days, 1, 5, {true, true, false, true, true, true}, 1);
    const jit::ArrowColumn c = jit::from_arrow(&p.schema, &p.array);
    EXPECT_EQ(p.released, 1);  // widened: nothing is viewed
    EXPECT_EQ(c.values.dtype(), jit::DType::DateTime64_D);
    EXPECT_EQ(c.values.to_vector<std::int64_t>()[1], 19783);
    EXPECT_EQ(c.values.to_vector<std::int64_t>()[3], -719468);
    EXPECT_EQ(c.null_count, 1);
}

TEST(ArrowImport, ViewsATimestampColumnInPlace) {
    std::vector<std::byte> ns(3 * 8);
    const std::int64_t v[] = {1, std::numeric_limits<std::int64_t>::max(), -5};
    std::memcpy(ns.data(), v, sizeof v);
    Producer p;
    produce(p, "tsn:UTC", ns, 0, 3);
    const jit::ArrowColumn c = jit::view_arrow(&p.schema, &p.array);
    EXPECT_EQ(c.values.dtype(), jit::DType::DateTime64_ns);
    EXPECT_EQ(c.values.data(), p.values.data());
}

TEST(ArrowExport, NaTIsNullAndADayDateIsADate32) {
    const std::int64_t v[] = {19783, jit::kNaT, -3};
    jit::ArrowColumn c;
    c.values = jit::Array::from_host(v, jit::DType::DateTime64_D, {3}, jit::Backend::Cpu);
    ArrowArray out{};
    ArrowSchema schema{};
    jit::to_arrow(c, &out, &schema);
    EXPECT_STREQ(schema.format, "tdD");
    EXPECT_EQ(out.null_count, 1);
    EXPECT_FALSE(bit(out.buffers[0], 1));
    EXPECT_EQ(exported_values<std::int32_t>(out)[0], 19783);
    EXPECT_EQ(exported_values<std::int32_t>(out)[2], -3);
    out.release(&out);
    schema.release(&schema);
    const std::int64_t far[] = {std::int64_t{1} << 40};
    c.values = jit::Array::from_host(far, jit::DType::DateTime64_D, {1}, jit::Backend::Cpu);
    EXPECT_THROW(jit::to_arrow(c, &out, &schema), jit::ArgumentError);
    EXPECT_EQ(out.release, nullptr);
}

TEST(ArrowEval, DatesWithNullsAndNaT) {
    std::vector<std::byte> s(4 * 8);
    const std::int64_t v[] = {0, 60, jit::kNaT, 120};
    std::memcpy(s.data(), v, sizeof v);
    Producer p;
    produce(p, "tss:", s, 0, 4, {true, false, true, true}, 1);
    const jit::ArrowColumn a = jit::view_arrow(&p.schema, &p.array);
    const jit::ArrowColumn r = jit::eval_arrow("a + timedelta64(1, 'm')", {a}, cpu_runtime());
    EXPECT_EQ(r.values.dtype(), jit::DType::DateTime64_s);
    ArrowArray out{};
    ArrowSchema schema{};
    jit::to_arrow(r, &out, &schema);
    EXPECT_STREQ(schema.format, "tss:");
    EXPECT_EQ(out.null_count, 2);  // Arrow's null and the NaT
    EXPECT_EQ(exported_values<std::int64_t>(out)[3], 180);
    out.release(&out);
    schema.release(&schema);
}

TEST(ArrowImport, RoundTripsEveryPrimitiveTypeWithOffsetAndNulls) {
    constexpr std::int64_t kOffset = 3, kLength = 10;
    std::vector<bool> valid(kOffset + kLength, true);
    valid[kOffset + 1] = valid[kOffset + 4] = valid[kOffset + 9] = false;
    valid[0] = false;  // before the offset: not counted
    for (const FormatCase& c : kPrimitive) {
        SCOPED_TRACE(c.format);
        Producer p;
        const std::vector<std::byte> all = sample(c.dtype, kOffset + kLength);
        produce(p, c.format, all, kOffset, kLength, valid, 3);
        {
            jit::ArrowColumn col = jit::from_arrow(&p.schema, &p.array);
            EXPECT_EQ(p.array.release, nullptr);  // moved
            ASSERT_EQ(col.values.dtype(), c.dtype);
            ASSERT_EQ(col.values.shape(), jit::Shape{kLength});
            const std::size_t size = jit::itemsize(c.dtype);
            EXPECT_EQ(host_bytes(col.values), std::vector<std::byte>(all.begin() + kOffset * size, all.end()));
            ASSERT_TRUE(col.validity);
            EXPECT_EQ(col.null_count, 3);
            EXPECT_EQ(col.validity->to_vector<std::uint8_t>(),
                      (std::vector<std::uint8_t>{1, 0, 1, 1, 0, 1, 1, 1, 1, 0}));

            ArrowArray out{};
            ArrowSchema out_schema{};
            jit::to_arrow(col, &out, &out_schema, "x");
            EXPECT_STREQ(out_schema.format, c.format);
            EXPECT_STREQ(out_schema.name, "x");
            EXPECT_EQ(out.length, kLength);
            EXPECT_EQ(out.offset, 0);
            EXPECT_EQ(out.null_count, 3);
            ASSERT_EQ(out.n_buffers, 2);
            std::vector<std::byte> exported(static_cast<std::size_t>(kLength) * size);
            std::memcpy(exported.data(), out.buffers[1], exported.size());
            EXPECT_EQ(exported, std::vector<std::byte>(all.begin() + kOffset * size, all.end()));
            for (std::int64_t i = 0; i < kLength; ++i) EXPECT_EQ(bit(out.buffers[0], i), valid[kOffset + i]) << i;
            out.release(&out);
            out_schema.release(&out_schema);
            EXPECT_EQ(out.release, nullptr);
            EXPECT_EQ(out_schema.release, nullptr);
            EXPECT_EQ(p.released, 0);  // col still views the buffers
        }
        EXPECT_EQ(p.released, 1);
        EXPECT_EQ(p.schema_released, 0);  // the schema is only read
    }
}

TEST(ArrowImport, ViewsPrimitiveValuesInPlace) {
    Producer p;
    produce(p, "i", as_bytes(std::vector<std::int32_t>{9, 8, 7, 6, 5}), 2, 3);
    jit::ArrowColumn col = jit::from_arrow(&p.schema, &p.array);
    EXPECT_EQ(col.values.data(), p.values.data() + 2 * sizeof(std::int32_t));
    EXPECT_EQ(col.values.to_vector<std::int32_t>(), (std::vector<std::int32_t>{7, 6, 5}));
}

TEST(ArrowImport, ColumnsAreReadOnlyAndAnAssignmentIntoOneIsRefused) {
    Producer p;
    produce(p, "i", as_bytes(std::vector<std::int32_t>{9, 8, 7}), 0, 3);
    Producer q;
    produce(q, "b", std::vector<std::byte>{std::byte{0x05}}, 0, 3);  // copied (unpacked), still read-only
    jit::ArrowColumn col = jit::from_arrow(&p.schema, &p.array);
    jit::ArrowColumn bits = jit::from_arrow(&q.schema, &q.array);
    EXPECT_TRUE(col.values.read_only());
    EXPECT_TRUE(bits.values.read_only());
    jit::RuntimeOptions o;
    o.backend = jit::Backend::Cpu;
    o.disk_cache = false;
    jit::Runtime rt(o);
    jit::Environment env{{"x", jit::Arg(col.values)}};
    EXPECT_THROW(rt.run("x = x + 1", env), jit::ReadOnlyError);
    EXPECT_EQ(col.values.to_vector<std::int32_t>(), (std::vector<std::int32_t>{9, 8, 7}));
}

TEST(ArrowImport, ReleasesExactlyOnceWhenTheLastArrayReferringToTheValuesGoes) {
    Producer p;
    produce(p, "g", as_bytes(std::vector<double>{1, 2, 3, 4}), 0, 4);
    jit::Array tail;
    {
        jit::ArrowColumn col = jit::from_arrow(&p.schema, &p.array);
        tail = col.values.slice(0, 2, 4);
        jit::Array r = cpu_runtime().eval("a * 2", {jit::Arg(col.values)});
        EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{2, 4, 6, 8}));
    }
    EXPECT_EQ(p.released, 0);
    EXPECT_EQ(tail.to_vector<double>(), (std::vector<double>{3, 4}));
    tail = jit::Array();
    EXPECT_EQ(p.released, 1);
}

TEST(ArrowImport, HasNoValidityWhenNullCountIsZeroOrTheBitmapIsNull) {
    Producer zero;
    produce(zero, "f", as_bytes(std::vector<float>{1, 2, 3}), 0, 3, {true, false, true}, 0);
    jit::ArrowColumn a = jit::from_arrow(&zero.schema, &zero.array);
    EXPECT_FALSE(a.validity);
    EXPECT_EQ(a.null_count, 0);

    Producer unknown_no_bitmap;
    produce(unknown_no_bitmap, "f", as_bytes(std::vector<float>{1, 2, 3}), 0, 3, {}, -1);
    jit::ArrowColumn b = jit::from_arrow(&unknown_no_bitmap.schema, &unknown_no_bitmap.array);
    EXPECT_FALSE(b.validity);
    EXPECT_EQ(b.null_count, 0);
}

TEST(ArrowImport, CountsNullsWhenNullCountIsUnknown) {
    Producer p;
    produce(p, "f", as_bytes(std::vector<float>{1, 2, 3, 4}), 1, 3, {false, true, false, false}, -1);
    jit::ArrowColumn c = jit::from_arrow(&p.schema, &p.array);
    ASSERT_TRUE(c.validity);
    EXPECT_EQ(c.null_count, 2);
    EXPECT_EQ(c.validity->to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{1, 0, 0}));
}

TEST(ArrowImport, UnpacksABooleanColumnWithOffsetIntoACopy) {
    const std::vector<bool> bits = {1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1};
    Producer p;
    std::vector<std::byte> packed;
    for (std::uint8_t b : pack(bits)) packed.push_back(static_cast<std::byte>(b));
    produce(p, "b", packed, 5, 7, {1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1}, 1);
    jit::ArrowColumn c = jit::from_arrow(&p.schema, &p.array);
    EXPECT_EQ(p.released, 1);  // copied: the producer's array is released at once
    EXPECT_EQ(c.values.dtype(), jit::DType::Bool);
    EXPECT_EQ(c.values.to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{0, 1, 0, 1, 1, 0, 1}));
    ASSERT_TRUE(c.validity);
    EXPECT_EQ(c.validity->to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{1, 0, 1, 1, 1, 1, 1}));

    ArrowArray out{};
    ArrowSchema schema{};
    jit::to_arrow(c, &out, &schema);
    EXPECT_STREQ(schema.format, "b");
    EXPECT_EQ(out.null_count, 1);
    for (std::int64_t i = 0; i < 7; ++i) EXPECT_EQ(bit(out.buffers[1], i), bits[5 + static_cast<std::size_t>(i)]) << i;
    out.release(&out);
    schema.release(&schema);
}

TEST(ArrowImport, CopiesValuesNotAlignedToTheirSize) {
    Producer p;
    std::vector<std::byte> raw(1 + 3 * sizeof(float));
    const std::vector<std::byte> v = as_bytes(std::vector<float>{1.5f, 2.5f, 3.5f});
    std::memcpy(raw.data() + 1, v.data(), v.size());
    produce(p, "f", raw, 0, 3);
    p.buffers[1] = p.values.data() + 1;  // misaligned for float
    jit::ArrowColumn c = jit::view_arrow(&p.schema, &p.array);
    EXPECT_EQ(c.values.to_vector<float>(), (std::vector<float>{1.5f, 2.5f, 3.5f}));
}

TEST(ArrowImport, RejectsBinaryViewAndLeavesTheArrayToItsOwner) {
    Producer p;
    produce(p, "vz", as_bytes(std::vector<std::int32_t>{0, 1, 3}), 0, 2);  // binary_view: not taken
    p.array.n_buffers = 3;
    EXPECT_THROW(jit::from_arrow(&p.schema, &p.array), jit::ArgumentError);
    EXPECT_NE(p.array.release, nullptr);  // not consumed
    EXPECT_EQ(p.released, 0);
    p.array.release(&p.array);
}

TEST(ArrowImport, RejectsAPrimitiveArrayWithTheWrongNumberOfBuffers) {
    Producer p;
    produce(p, "i", as_bytes(std::vector<std::int32_t>{1, 2}), 0, 2);
    p.array.n_buffers = 1;
    EXPECT_THROW(jit::from_arrow(&p.schema, &p.array), jit::ArgumentError);
    EXPECT_NE(p.array.release, nullptr);
}

TEST(ArrowImport, RejectsNullsWithoutABitmapDictionariesAndReleasedArrays) {
    Producer nulls;
    produce(nulls, "i", as_bytes(std::vector<std::int32_t>{1, 2}), 0, 2, {}, 1);
    EXPECT_THROW(jit::view_arrow(&nulls.schema, &nulls.array), jit::ArgumentError);

    Producer dict;
    produce(dict, "i", as_bytes(std::vector<std::int32_t>{0, 1}), 0, 2);
    ArrowSchema values_type{};
    dict.schema.dictionary = &values_type;
    EXPECT_THROW(jit::view_arrow(&dict.schema, &dict.array), jit::ArgumentError);

    Producer released;
    produce(released, "i", as_bytes(std::vector<std::int32_t>{1, 2}), 0, 2);
    released.array.release = nullptr;
    EXPECT_THROW(jit::from_arrow(&released.schema, &released.array), jit::ArgumentError);
    EXPECT_THROW(jit::from_arrow(nullptr, &released.array), jit::ArgumentError);
}

TEST(ArrowEval, PropagatesNullsThroughAxTwoPlusB) {
    Producer pa, pb;
    produce(pa, "f", as_bytes(std::vector<float>{1, 2, 3, 4, 5, 6, 7}), 0, 7, {1, 0, 1, 1, 0, 1, 1}, 2);
    produce(pb, "f", as_bytes(std::vector<float>{10, 20, 30, 40, 50, 60, 70}), 0, 7, {1, 1, 1, 1, 0, 1, 0}, 2);
    const jit::ArrowColumn a = jit::from_arrow(&pa.schema, &pa.array);
    const jit::ArrowColumn b = jit::from_arrow(&pb.schema, &pb.array);
    const jit::ArrowColumn c = jit::eval_arrow("a * 2 + b", {a, b}, cpu_runtime());
    ASSERT_TRUE(c.validity);
    EXPECT_EQ(c.validity->to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{1, 0, 1, 1, 0, 1, 0}));

    ArrowArray out{};
    ArrowSchema schema{};
    jit::to_arrow(c, &out, &schema);
    EXPECT_STREQ(schema.format, "f");
    EXPECT_EQ(out.null_count, 3);
    const std::vector<float> v = exported_values<float>(out);
    const std::set<std::int64_t> nulls = {1, 4, 6};
    for (std::int64_t i = 0; i < 7; ++i) {
        EXPECT_EQ(bit(out.buffers[0], i), nulls.count(i) == 0) << i;
        if (!nulls.count(i)) {
            EXPECT_EQ(v[static_cast<std::size_t>(i)], static_cast<float>((i + 1) * 2 + (i + 1) * 10)) << i;
        }
    }
    out.release(&out);
    schema.release(&schema);
}

TEST(ArrowEval, KeepsTheOnlyInputValidityAndExportsNoBitmapWithoutNulls) {
    Producer pa, pb;
    produce(pa, "l", as_bytes(std::vector<std::int64_t>{1, 2, 3}), 0, 3, {1, 0, 1}, 1);
    produce(pb, "l", as_bytes(std::vector<std::int64_t>{4, 5, 6}), 0, 3);
    const jit::ArrowColumn a = jit::from_arrow(&pa.schema, &pa.array);
    const jit::ArrowColumn b = jit::from_arrow(&pb.schema, &pb.array);
    const jit::ArrowColumn c = jit::eval_arrow("a + b", {a, b}, cpu_runtime());
    ASSERT_TRUE(c.validity);
    EXPECT_EQ(c.null_count, 1);

    const jit::ArrowColumn d = jit::eval_arrow("b * b", {b}, cpu_runtime());
    EXPECT_FALSE(d.validity);
    ArrowArray out{};
    ArrowSchema schema{};
    jit::to_arrow(d, &out, &schema);
    EXPECT_EQ(out.null_count, 0);
    EXPECT_EQ(out.buffers[0], nullptr);
    EXPECT_EQ(exported_values<std::int64_t>(out), (std::vector<std::int64_t>{16, 25, 36}));
    out.release(&out);
    schema.release(&schema);
}

TEST(ArrowEval, AWholeReductionSkipsTheRowsWhereAnInputIsNull) {
    Producer pa, pb;
    produce(pa, "g", as_bytes(std::vector<double>{1, 2, 3, 4}), 0, 4, {1, 0, 1, 1}, 1);
    produce(pb, "g", as_bytes(std::vector<double>{10, 20, 30, 40}), 0, 4, {1, 1, 0, 1}, 1);
    const jit::ArrowColumn a = jit::from_arrow(&pa.schema, &pa.array);
    const jit::ArrowColumn b = jit::from_arrow(&pb.schema, &pb.array);
    // SQL's SUM(a*b): rows 1 (a null) and 2 (b null) are skipped.
    const jit::ArrowColumn s = jit::eval_arrow("sum(a*b)", {a, b}, cpu_runtime());
    EXPECT_EQ(s.values.ndim(), 0);
    EXPECT_FALSE(s.validity);
    EXPECT_EQ(s.values.to_vector<double>(), std::vector<double>{1 * 10 + 4 * 40});
    EXPECT_EQ(jit::eval_arrow("mean(a)", {a}, cpu_runtime()).values.to_vector<double>(),
              std::vector<double>{(1 + 3 + 4) / 3.0});
    EXPECT_EQ(jit::eval_arrow("max(b)", {b}, cpu_runtime()).values.to_vector<double>(), std::vector<double>{40});
}

TEST(ArrowEval, AReductionOverOnlyNullsIsNull) {
    Producer p;
    produce(p, "i", as_bytes(std::vector<std::int32_t>{5, 6}), 0, 2, {0, 0}, 2);
    const jit::ArrowColumn a = jit::from_arrow(&p.schema, &p.array);
    for (const char* text : {"sum(a)", "min(a)", "mean(a)"}) {
        const jit::ArrowColumn r = jit::eval_arrow(text, {a}, cpu_runtime());
        ASSERT_TRUE(r.validity) << text;
        EXPECT_EQ(r.validity->to_vector<std::uint8_t>(), std::vector<std::uint8_t>{0}) << text;
        EXPECT_EQ(r.null_count, 1) << text;
    }
    // The dtype is the one of the reduction over rows: int32 sums to int64, min stays int32.
    EXPECT_EQ(jit::eval_arrow("sum(a)", {a}, cpu_runtime()).values.dtype(), jit::DType::Int64);
    EXPECT_EQ(jit::eval_arrow("min(a)", {a}, cpu_runtime()).values.dtype(), jit::DType::Int32);
}

TEST(ArrowEval, AReductionInsideALargerProgramOverNullsIsRefused) {
    Producer p;
    produce(p, "g", as_bytes(std::vector<double>{1, 2, 3}), 0, 3, {1, 0, 1}, 1);
    const jit::ArrowColumn a = jit::from_arrow(&p.schema, &p.array);
    EXPECT_THROW(jit::eval_arrow("a - mean(a)", {a}, cpu_runtime()), jit::ArgumentError);
    EXPECT_THROW(jit::eval_arrow("sum(a) + sum(a*2)", {a}, cpu_runtime()), jit::ArgumentError);
    // Two-argument max is elementwise, not a reduction.
    EXPECT_EQ(jit::eval_arrow("max(a, 2.5)", {a}, cpu_runtime()).values.shape(), jit::Shape{3});
}

TEST(ArrowEval, NamedBindingReadsOnlyTheValidityOfWhatTheProgramReads) {
    Producer pa, pb;
    produce(pa, "g", as_bytes(std::vector<double>{1, 2, 3}), 0, 3, {1, 0, 1}, 1);
    produce(pb, "g", as_bytes(std::vector<double>{4, 5, 6}), 0, 3, {0, 1, 1}, 1);
    const jit::ArrowColumn a = jit::from_arrow(&pa.schema, &pa.array);
    const jit::ArrowColumn b = jit::from_arrow(&pb.schema, &pb.array);
    jit::Environment env{{"a", a.values}, {"b", b.values}, {"x", 2.5}};
    const std::map<std::string, jit::Array, std::less<>> validity{{"a", *a.validity}, {"b", *b.validity}};
    const jit::ArrowColumn r = jit::eval_arrow("a * x", env, validity, cpu_runtime());
    ASSERT_TRUE(r.validity);
    EXPECT_EQ(r.validity->to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{1, 0, 1}));
    EXPECT_EQ(r.values.to_vector<double>()[2], 7.5);
    EXPECT_THROW(jit::eval_arrow("a = b * 2", env, validity, cpu_runtime()), jit::ArgumentError);
}

TEST(ArrowExport, RejectsResultsWithoutAnArrowFormatOrMoreThanOneDimension) {
    ArrowArray out{};
    ArrowSchema schema{};
    jit::ArrowColumn complex;
    complex.values = jit::Array::zeros(jit::DType::Complex64, {3}, jit::Backend::Cpu);
    EXPECT_THROW(jit::to_arrow(complex, &out, &schema), jit::ArgumentError);
    jit::ArrowColumn matrix;
    matrix.values = jit::Array::zeros(jit::DType::Float32, {2, 2}, jit::Backend::Cpu);
    EXPECT_THROW(jit::to_arrow(matrix, &out, &schema), jit::ArgumentError);
    EXPECT_EQ(out.release, nullptr);  // nothing written
}

TEST(ArrowExport, CopiesAStridedArrayIntoContiguousValues) {
    jit::ArrowColumn c;
    c.values = jit::Array::from(std::vector<std::int16_t>{1, 2, 3, 4, 5, 6}, {}, jit::Backend::Cpu).slice(0, 0, 6, 2);
    ArrowArray out{};
    ArrowSchema schema{};
    jit::to_arrow(c, &out, &schema);
    EXPECT_EQ(exported_values<std::int16_t>(out), (std::vector<std::int16_t>{1, 3, 5}));
    out.release(&out);
    schema.release(&schema);
}

TEST(ArrowCApi, EvalArrowPropagatesNullsAndBorrowsTheInputs) {
    jitexpr_runtime* rt = jitexpr_runtime_create(JITEXPR_BACKEND_CPU);
    ASSERT_NE(rt, nullptr);
    Producer pa, pb;
    produce(pa, "i", as_bytes(std::vector<std::int32_t>{0, 1, 2, 3, 4}), 1, 4, {1, 1, 0, 1, 1}, 1);
    produce(pb, "i", as_bytes(std::vector<std::int32_t>{10, 20, 30, 40}), 0, 4, {1, 1, 1, 0}, 1);
    const ArrowSchema* schemas[] = {&pa.schema, &pb.schema};
    const ArrowArray* arrays[] = {&pa.array, &pb.array};
    ArrowArray out{};
    ArrowSchema schema{};
    ASSERT_EQ(jitexpr_eval_arrow(rt, "a * 2 + b", 2, schemas, arrays, &out, &schema), JITEXPR_OK)
        << jitexpr_last_error();
    EXPECT_EQ(pa.released + pb.released, 0);
    EXPECT_NE(pa.array.release, nullptr);
    EXPECT_STREQ(schema.format, "i");
    EXPECT_EQ(out.length, 4);
    EXPECT_EQ(out.null_count, 2);
    const std::vector<std::int32_t> v = exported_values<std::int32_t>(out);
    EXPECT_TRUE(bit(out.buffers[0], 0));
    EXPECT_FALSE(bit(out.buffers[0], 1));
    EXPECT_TRUE(bit(out.buffers[0], 2));
    EXPECT_FALSE(bit(out.buffers[0], 3));
    EXPECT_EQ(v[0], 12);
    EXPECT_EQ(v[2], 36);
    out.release(&out);
    schema.release(&schema);
    jitexpr_runtime_destroy(rt);
}

TEST(ArrowCApi, CopiesAResultThatIsAnInput) {
    jitexpr_runtime* rt = jitexpr_runtime_create(JITEXPR_BACKEND_CPU);
    ASSERT_NE(rt, nullptr);
    Producer p;
    produce(p, "g", as_bytes(std::vector<double>{1, 2}), 0, 2);
    const ArrowSchema* schemas[] = {&p.schema};
    const ArrowArray* arrays[] = {&p.array};
    ArrowArray out{};
    ArrowSchema schema{};
    ASSERT_EQ(jitexpr_eval_arrow(rt, "a", 1, schemas, arrays, &out, &schema), JITEXPR_OK) << jitexpr_last_error();
    EXPECT_NE(out.buffers[1], p.values.data());
    EXPECT_EQ(exported_values<double>(out), (std::vector<double>{1, 2}));
    out.release(&out);
    schema.release(&schema);
    jitexpr_runtime_destroy(rt);
}

TEST(ArrowCApi, ReportsAnUnsupportedFormatAsAnArgumentError) {
    jitexpr_runtime* rt = jitexpr_runtime_create(JITEXPR_BACKEND_CPU);
    ASSERT_NE(rt, nullptr);
    Producer p;
    produce(p, "vz", as_bytes(std::vector<std::int32_t>{0, 1, 3}), 0, 2);  // binary_view: not taken
    p.array.n_buffers = 3;
    const ArrowSchema* schemas[] = {&p.schema};
    const ArrowArray* arrays[] = {&p.array};
    ArrowArray out{};
    ArrowSchema schema{};
    out.release = &release_producer_array;  // must be marked released on failure
    EXPECT_EQ(jitexpr_eval_arrow(rt, "a + 1", 1, schemas, arrays, &out, &schema), JITEXPR_ERROR_ARGUMENT);
    EXPECT_EQ(out.release, nullptr);
    EXPECT_NE(std::string(jitexpr_last_error()).find("\"vz\""), std::string::npos) << jitexpr_last_error();
    jitexpr_runtime_destroy(rt);
}

// ---- string columns (format "u", int32 offsets, and "U", int64): offsets + data + validity

namespace {

// A string column of `rows` (offsets from `base` into `chars`, which may hold bytes before the
// first row), `offset` rows skipped, with validity `valid` (empty: no bitmap).
struct StringProducer {
    Producer p;
    std::vector<std::byte> offsets;
    std::string chars;
};

void produce_strings(StringProducer& s, const std::string& format, const std::vector<std::string>& rows,
                     std::int64_t offset = 0, const std::vector<bool>& valid = {}, std::int64_t null_count = 0,
                     std::size_t base = 0) {
    s.chars.assign(base, '#');
    std::vector<std::int64_t> off{static_cast<std::int64_t>(base)};
    for (const auto& r : rows) {
        s.chars += r;
        off.push_back(static_cast<std::int64_t>(s.chars.size()));
    }
    if (format == "U") {
        s.offsets = as_bytes(off);
    } else {
        std::vector<std::int32_t> o32(off.begin(), off.end());
        s.offsets = as_bytes(o32);
    }
    produce(s.p, format, s.offsets, offset, static_cast<std::int64_t>(rows.size()) - offset, valid, null_count);
    s.p.array.n_buffers = 3;
    s.p.buffers[2] = s.chars.data();
}

}  // namespace

TEST(ArrowStrings, ImportsStringAndLargeStringInPlaceWithOffsetAndNulls) {
    for (const char* format : {"u", "U"}) {
        StringProducer s;
        // Rows 1.. of the column (offset 1), the first byte of data before any row, row 2 null.
        produce_strings(s, format, {"skip", "apple", "pear", "b\xc3\xa9t", "apple"}, 1, {true, true, true, false, true},
                        1, 3);
        jit::ArrowColumn c = jit::from_arrow(&s.p.schema, &s.p.array);
        EXPECT_EQ(s.p.array.release, nullptr);  // moved
        EXPECT_EQ(c.values.dtype(), jit::DType::Utf8);
        EXPECT_EQ(c.values.itemsize(), std::string(format) == "U" ? 8u : 4u);
        EXPECT_EQ(c.values.size(), 4);
        EXPECT_EQ(c.values.chars(), s.chars.data());  // viewed, not copied
        EXPECT_TRUE(c.values.read_only());
        ASSERT_TRUE(c.validity.has_value());
        jit::ArrowColumn r = jit::eval_arrow("s == 'apple'", {c});
        EXPECT_EQ(r.values.to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{1, 0, 0, 1}));
        EXPECT_EQ(r.validity->to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{1, 1, 0, 1}));
        // A reduction skips the null rows: str_len of apple, pear, apple.
        jit::ArrowColumn n = jit::eval_arrow("sum(str_len(s))", {c});
        EXPECT_EQ(n.values.item<std::int64_t>(), 14);
        jit::ArrowColumn m = jit::eval_arrow("sum(contains(s, 'p'))", {c});
        EXPECT_EQ(m.values.item<std::int64_t>(), 3);
        c = {};
        r = {};
        n = {};
        m = {};
        EXPECT_EQ(s.p.released, 1);  // released once, when the last view went
    }
}

TEST(ArrowStrings, RefusesMalformedOffsetsAndLeavesTheArrayToItsOwner) {
    // Decreasing offsets, an offset below 0, and offsets past what the rows hold are refused
    // before anything reads the data (tests/embed/test_arrow_asan.cpp reads them under ASan).
    struct Case {
        std::vector<std::int32_t> offsets;
        const char* words;
    };
    const Case cases[] = {
        {{0, 3, 2, 4}, "decrease at row 1"},
        {{-1, 2, 3, 4}, "below 0"},
        {{0, 2, 1000, 3}, "decrease at row 2"},
    };
    for (const Case& c : cases) {
        Producer p;
        std::string chars = "abcd";
        produce(p, "u", as_bytes(c.offsets), 0, 3);
        p.array.n_buffers = 3;
        p.buffers[2] = chars.data();
        try {
            jit::from_arrow(&p.schema, &p.array);
            ADD_FAILURE() << c.words << ": no error";
        } catch (const jit::ArgumentError& e) {
            EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << e.what();
        }
        EXPECT_NE(p.array.release, nullptr);  // not consumed
        p.array.release(&p.array);
    }
}

TEST(ArrowStrings, RefusesInvalidUtf8NamingTheRow) {
    for (const std::string& bad : {std::string("\xff"), std::string("a\xc3"), std::string("\xed\xa0\x80"),
                                   std::string("\xc0\xaf"), std::string("\xf4\x90\x80\x80")}) {
        StringProducer s;
        produce_strings(s, "u", {"fine", "ok", bad + "x"});
        try {
            jit::view_arrow(&s.p.schema, &s.p.array);
            ADD_FAILURE() << "no error";
        } catch (const jit::ArgumentError& e) {
            EXPECT_NE(std::string(e.what()).find("row 2 of a string column is not valid UTF-8"), std::string::npos)
                << e.what();
        }
    }
    StringProducer ok;  // every length of a sequence, the extremes of each
    produce_strings(ok, "u",
                    {"\x7f", "\xc2\x80\xdf\xbf", "\xe0\xa0\x80\xef\xbf\xbf", "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"});
    EXPECT_NO_THROW(jit::view_arrow(&ok.p.schema, &ok.p.array));
}

TEST(ArrowStrings, RefusesBinaryWithWhatToDo) {
    for (const char* f : {"z", "Z", "vz"}) {
        Producer p;
        produce(p, f, as_bytes(std::vector<std::int32_t>{0, 1}), 0, 1);
        p.array.n_buffers = 3;
        try {
            jit::view_arrow(&p.schema, &p.array);
            ADD_FAILURE() << f;
        } catch (const jit::ArgumentError& e) {
            EXPECT_NE(std::string(e.what()).find("not supported"), std::string::npos) << e.what();
        }
    }
}

TEST(ArrowStrings, EmptyColumnsAndEmptyRows) {
    StringProducer s;
    produce_strings(s, "u", {"", "", ""});
    s.p.buffers[2] = nullptr;  // no byte at all: Arrow allows a null data buffer
    jit::ArrowColumn c = jit::view_arrow(&s.p.schema, &s.p.array);
    EXPECT_EQ(jit::eval_arrow("str_len(s) + contains(s, '')", {c}).values.to_vector<std::int64_t>(),
              (std::vector<std::int64_t>{1, 1, 1}));
    StringProducer none;
    produce_strings(none, "U", {});
    EXPECT_EQ(jit::eval_arrow("s == 'x'", {jit::view_arrow(&none.p.schema, &none.p.array)}).values.size(), 0);
}

TEST(ArrowStrings, CApiEvaluatesAStringColumn) {
    jitexpr_runtime* rt = jitexpr_runtime_create(JITEXPR_BACKEND_CPU);
    ASSERT_NE(rt, nullptr);
    StringProducer s;
    produce_strings(s, "u", {"oslo", "bergen", "oslo", "troms\xc3\xb8"}, 0, {true, true, false, true}, 1);
    const ArrowSchema* schemas[] = {&s.p.schema};
    const ArrowArray* arrays[] = {&s.p.array};
    ArrowArray out{};
    ArrowSchema schema{};
    ASSERT_EQ(
        jitexpr_eval_arrow(rt, "startswith(city, 'o') | endswith(city, '\\u00f8')", 1, schemas, arrays, &out, &schema),
        JITEXPR_OK)
        << jitexpr_last_error();
    EXPECT_STREQ(schema.format, "b");
    EXPECT_EQ(out.null_count, 1);
    EXPECT_TRUE(bit(out.buffers[1], 0));
    EXPECT_FALSE(bit(out.buffers[1], 1));
    EXPECT_TRUE(bit(out.buffers[1], 3));
    EXPECT_FALSE(bit(out.buffers[0], 2));
    out.release(&out);
    schema.release(&schema);
    EXPECT_NE(s.p.array.release, nullptr);  // borrowed
    s.p.array.release(&s.p.array);
    jitexpr_runtime_destroy(rt);
}

namespace {

// A string_view column (format "vu"): 16-byte views, strings of up to 12 bytes inline, longer
// ones in the variadic data buffers, whose sizes the last buffer holds.
struct ViewProducer {
    Producer p;
    std::vector<std::byte> views;
    std::vector<std::string> data;
    std::vector<std::int64_t> sizes;
    std::vector<const void*> buffers;
};

void produce_views(ViewProducer& v, const std::vector<std::string>& rows, const std::vector<bool>& valid = {},
                   std::int64_t null_count = 0) {
    v.data.assign(2, std::string());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        unsigned char view[16] = {};
        const auto len = static_cast<std::int32_t>(rows[i].size());
        std::memcpy(view, &len, 4);
        if (len <= 12) {
            std::memcpy(view + 4, rows[i].data(), rows[i].size());
        } else {
            const std::int32_t index = static_cast<std::int32_t>(i % 2);
            const auto at = static_cast<std::int32_t>(v.data[static_cast<std::size_t>(index)].size());
            v.data[static_cast<std::size_t>(index)] += rows[i];
            std::memcpy(view + 4, rows[i].data(), 4);
            std::memcpy(view + 8, &index, 4);
            std::memcpy(view + 12, &at, 4);
        }
        const auto* b = reinterpret_cast<const std::byte*>(view);
        v.views.insert(v.views.end(), b, b + 16);
    }
    v.sizes = {static_cast<std::int64_t>(v.data[0].size()), static_cast<std::int64_t>(v.data[1].size())};
    produce(v.p, "vu", v.views, 0, static_cast<std::int64_t>(rows.size()), valid, null_count);
    v.buffers = {v.p.buffers[0], v.views.data(), v.data[0].data(), v.data[1].data(), v.sizes.data()};
    v.p.array.n_buffers = 5;
    v.p.array.buffers = v.buffers.data();
}

}  // namespace

TEST(ArrowStrings, ImportsStringViewAsACopyWithNulls) {
    // Polars' strings: string_view. Inline rows, rows in both data buffers, a null.
    ViewProducer v;
    produce_views(v, {"oslo", "a string longer than twelve", "", "troms\xc3\xb8", "another long one, in buffer 0"},
                  {true, true, false, true, true}, 1);
    jit::ArrowColumn c = jit::from_arrow(&v.p.schema, &v.p.array);
    EXPECT_EQ(v.p.array.release, nullptr);
    EXPECT_EQ(v.p.released, 1);  // copied, so released at once
    EXPECT_EQ(c.values.dtype(), jit::DType::Utf8);
    jit::ArrowColumn r = jit::eval_arrow("contains(s, 'long') | (s == 'oslo')", {c});
    EXPECT_EQ(r.values.to_vector<std::uint8_t>()[0], 1);
    EXPECT_EQ(r.values.to_vector<std::uint8_t>()[1], 1);
    EXPECT_EQ(r.values.to_vector<std::uint8_t>()[3], 0);
    EXPECT_EQ(r.values.to_vector<std::uint8_t>()[4], 1);
    EXPECT_EQ(r.validity->to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{1, 1, 0, 1, 1}));
    EXPECT_EQ(jit::eval_arrow("str_len(s)", {c}).values.to_vector<std::int64_t>()[3], 6);
}

TEST(ArrowStrings, RefusesAStringViewThatPointsPastItsData) {
    for (int which = 0; which < 3; ++which) {
        ViewProducer v;
        produce_views(v, {"a string longer than twelve", "ok"});
        std::int32_t bad = which == 0 ? 7 : which == 1 ? 1000 : -3;  // buffer index, offset, length
        std::memcpy(v.views.data() + (which == 0 ? 8 : which == 1 ? 12 : 0), &bad, 4);
        EXPECT_THROW(jit::view_arrow(&v.p.schema, &v.p.array), jit::ArgumentError) << which;
        EXPECT_NE(v.p.array.release, nullptr);
    }
}
