// The chunk plan of a streamed call over host data (run/chunks): pure decisions, checked
// without a GPU.
#include "dsl/plan.hpp"
#include "run/chunks.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace jit;
using jit::run::chunks::ChunkPlan;
using jit::run::chunks::Request;

struct Var {
    DType dtype;
    Shape shape;
};

ir::Plan plan_of(const std::string& text, const std::map<std::string, Var>& vars) {
    std::map<std::string, dsl::Binding> b;
    for (const auto& [name, v] : vars) {
        dsl::Binding x;
        x.kind = dsl::Binding::Kind::Array;
        x.dtype = v.dtype;
        x.shape = v.shape;
        x.strides = contiguous_strides(v.shape);
        b.emplace(name, x);
    }
    return dsl::plan(text, dsl::bindings_of(b), dsl::Limits{});
}

// Inputs at disjoint made-up addresses, contiguous.
Request request(const ir::Plan& p, std::size_t budget, std::size_t chunk_bytes = 0) {
    Request r;
    r.program = &p.program;
    std::uintptr_t at = 0x10000000;
    for (const auto& in : p.program.inputs) {
        const std::uintptr_t n = static_cast<std::uintptr_t>(shape_size(in.shape)) * itemsize(in.dtype);
        r.input_memory.push_back({at, at + n});
        r.input_contiguous.push_back(true);
        at += n + 4096;
    }
    r.device_budget = budget;
    r.target_chunk_bytes = chunk_bytes;
    return r;
}

std::size_t input_index(const ir::Plan& p, const std::string& name) {
    for (std::size_t i = 0; i < p.program.inputs.size(); ++i)
        if (p.program.inputs[i].name == name) return i;
    ADD_FAILURE() << "no input " << name;
    return 0;
}

// Every row in exactly one chunk, in order, with at most two chunk sizes differing by one.
void expect_covering(const ChunkPlan& cp) {
    ASSERT_TRUE(cp.streamable) << cp.why_not;
    ASSERT_GE(cp.chunks, 1u);
    std::int64_t next = 0;
    std::set<std::int64_t> sizes;
    for (std::size_t c = 0; c < cp.chunks; ++c) {
        EXPECT_EQ(cp.chunk_begin(c), next) << "chunk " << c;
        EXPECT_GE(cp.chunk_rows(c), 1) << "chunk " << c;
        EXPECT_LE(cp.chunk_rows(c), cp.rows_per_chunk);
        sizes.insert(cp.chunk_rows(c));
        next += cp.chunk_rows(c);
    }
    EXPECT_EQ(next, cp.rows);
    EXPECT_LE(sizes.size(), 2u);
    if (sizes.size() == 2) {
        EXPECT_EQ(*sizes.rbegin() - *sizes.begin(), 1);
    }
    EXPECT_EQ(*sizes.rbegin(), cp.rows_per_chunk);
}

constexpr std::size_t MiB = std::size_t{1} << 20;

TEST(StreamPlan, ElementwiseSplitsContiguousElementRangesIntoBalancedChunks) {
    const std::int64_t n = 10'000'019;  // prime: no chunk size divides it
    const ir::Plan p = plan_of("a*2+b", {{"a", {DType::Float32, {n}}}, {"b", {DType::Float32, {n}}}});
    const ChunkPlan cp = plan_stream(request(p, 1024 * MiB, 12 * MiB));
    expect_covering(cp);
    EXPECT_EQ(cp.split, 1);
    EXPECT_EQ(cp.rows, n);
    // 12 bytes per element (a, b, the result): a chunk holds about 1 Mi elements.
    EXPECT_LE(cp.chunk_bytes, 12 * MiB);
    EXPECT_EQ(cp.chunks, static_cast<std::size_t>((n * 12 + 12 * MiB - 1) / (12 * MiB)));
    EXPECT_TRUE(cp.inputs[0].chunked);
    EXPECT_TRUE(cp.inputs[1].chunked);
    EXPECT_EQ(cp.inputs[0].row_bytes, 4u);
    EXPECT_FALSE(cp.outputs[0].reduction);
    EXPECT_EQ(cp.buffers, 3);
}

TEST(StreamPlan, SizesAroundTheChunkSizeCoverEveryElementOnce) {
    // 8 bytes per element (one f32 input, one f32 output); 1 MiB chunks hold 131072 elements.
    const std::int64_t per = static_cast<std::int64_t>(MiB / 8);
    for (std::int64_t n : {std::int64_t{1}, per - 1, per, per + 1, 2 * per - 1, 2 * per, 2 * per + 1, 3 * per + 7}) {
        const ir::Plan p = plan_of("a+1", {{"a", {DType::Float32, {n}}}});
        const ChunkPlan cp = plan_stream(request(p, 512 * MiB, MiB));
        SCOPED_TRACE(n);
        expect_covering(cp);
        EXPECT_EQ(cp.chunks, static_cast<std::size_t>((n + per - 1) / per));
        EXPECT_LE(cp.rows_per_chunk, per);
        EXPECT_EQ(cp.buffers, static_cast<int>(std::min<std::size_t>(3, cp.chunks)));
    }
}

TEST(StreamPlan, RowVectorBroadcastIsResidentAndReadByEveryChunk) {
    const ir::Plan p = plan_of("a*b", {{"a", {DType::Float64, {100000, 64}}}, {"b", {DType::Float64, {64}}}});
    const ChunkPlan cp = plan_stream(request(p, 256 * MiB, 4 * MiB));
    expect_covering(cp);
    EXPECT_EQ(cp.split, 1);
    const std::size_t a = input_index(p, "a"), b = input_index(p, "b");
    EXPECT_TRUE(cp.inputs[a].chunked);
    EXPECT_FALSE(cp.inputs[b].chunked);
    EXPECT_EQ(cp.inputs[b].bytes, 64u * 8);
    EXPECT_EQ(cp.resident_bytes, 64u * 8);
    EXPECT_EQ(cp.input_chunk_shape(b, 7), (Shape{64}));
    EXPECT_EQ(cp.input_chunk_shape(a, 7), (Shape{7, 64}));
    EXPECT_EQ(cp.chunk_shape(7), (Shape{7, 64}));
}

TEST(StreamPlan, OuterBroadcastColumnAndRowKeepTheirOwnShapes) {
    // (R, 1) + (1, C): the column travels with the rows, the row is resident as (1, C).
    const ir::Plan p = plan_of("a+b", {{"a", {DType::Float32, {50000, 1}}}, {"b", {DType::Float32, {1, 300}}}});
    const ChunkPlan cp = plan_stream(request(p, 256 * MiB, 4 * MiB));
    expect_covering(cp);
    const std::size_t a = input_index(p, "a"), b = input_index(p, "b");
    EXPECT_TRUE(cp.inputs[a].chunked);
    EXPECT_EQ(cp.inputs[a].row_bytes, 4u);
    EXPECT_EQ(cp.input_chunk_shape(a, 5), (Shape{5, 1}));
    EXPECT_FALSE(cp.inputs[b].chunked);
    EXPECT_EQ(cp.input_chunk_shape(b, 5), (Shape{1, 300}));
    EXPECT_EQ(cp.outputs[0].row_bytes, 300u * 4);
}

TEST(StreamPlan, FewLongRowsCollapseMoreAxesIntoRows) {
    // Two rows of 8 Mi elements: axis 1 joins the split so chunks stay small.
    const ir::Plan p = plan_of("a-b", {{"a", {DType::Float32, {2, 1 << 23}}}, {"b", {DType::Float32, {2, 1 << 23}}}});
    const ChunkPlan cp = plan_stream(request(p, 1024 * MiB, 12 * MiB));
    expect_covering(cp);
    EXPECT_EQ(cp.split, 2);
    EXPECT_EQ(cp.rows, std::int64_t{2} << 23);
    EXPECT_GT(cp.chunks, 2u);
    EXPECT_EQ(cp.chunk_shape(3), (Shape{3}));
}

TEST(StreamPlan, AnInputBroadcastOnOnlyPartOfTheSplitLimitsTheSplit) {
    // b is (1, B, C): broadcast on axis 0, full on axis 1; the split stays at one axis.
    const ir::Plan p =
        plan_of("a*b", {{"a", {DType::Float32, {4, 1 << 20, 2}}}, {"b", {DType::Float32, {1, 1 << 20, 2}}}});
    const ChunkPlan cp = plan_stream(request(p, 4096 * MiB, 12 * MiB));
    expect_covering(cp);
    EXPECT_EQ(cp.split, 1);
    EXPECT_FALSE(cp.inputs[input_index(p, "b")].chunked);
    EXPECT_EQ(cp.inputs[input_index(p, "b")].device_shape, (Shape{1, 1 << 20, 2}));
}

TEST(StreamPlan, FullReductionsGiveOnePartialPerChunk) {
    const std::int64_t n = 3'000'001;
    const ir::Plan p =
        plan_of("s = sum(a*b); m = max(a); k = mean(b)", {{"a", {DType::Float32, {n}}}, {"b", {DType::Float32, {n}}}});
    const ChunkPlan cp = plan_stream(request(p, 256 * MiB, MiB));
    expect_covering(cp);
    ASSERT_EQ(cp.outputs.size(), 3u);
    EXPECT_TRUE(cp.outputs[0].reduction);
    EXPECT_EQ(cp.outputs[0].op, ir::Op::Sum);
    EXPECT_EQ(cp.outputs[1].op, ir::Op::ReduceMax);
    EXPECT_EQ(cp.outputs[2].op, ir::Op::Mean);
    // Only the inputs travel: 8 bytes per element.
    EXPECT_EQ(cp.chunk_bytes, static_cast<std::size_t>(cp.rows_per_chunk) * 8);
}

TEST(StreamPlan, ProgramsThatNeedEveryChunkFirstAreNotStreamed) {
    const std::map<std::string, Var> v{{"a", {DType::Float32, {1000, 10}}}};
    for (const char* text : {"sum(a)*2", "a - mean(a)", "sum(a, axis=0)", "sum(a, axis=1)"}) {
        const ir::Plan p = plan_of(text, v);
        const ChunkPlan cp = plan_stream(request(p, 256 * MiB));
        EXPECT_FALSE(cp.streamable) << text;
        EXPECT_FALSE(cp.why_not.empty()) << text;
    }
}

TEST(StreamPlan, OutputsOfDifferentShapesAreNotStreamed) {
    const ir::Plan p = plan_of("x = a*2; y = b+1", {{"a", {DType::Float32, {100, 10}}}, {"b", {DType::Float32, {10}}}});
    const ChunkPlan cp = plan_stream(request(p, 256 * MiB));
    EXPECT_FALSE(cp.streamable);
    EXPECT_NE(cp.why_not.find("different shapes"), std::string::npos) << cp.why_not;
}

TEST(StreamPlan, NonContiguousInputIsNotStreamed) {
    const ir::Plan p = plan_of("a+1", {{"a", {DType::Float32, {1000}}}});
    Request r = request(p, 256 * MiB);
    r.input_contiguous[0] = false;
    const ChunkPlan cp = plan_stream(r);
    EXPECT_FALSE(cp.streamable);
    EXPECT_NE(cp.why_not.find("contiguous"), std::string::npos);
}

TEST(StreamPlan, InPlaceOutputIsWrittenChunkByChunkIntoItsInput) {
    const ir::Plan p = plan_of("a = a*2 + b", {{"a", {DType::Float32, {1 << 20}}}, {"b", {DType::Float32, {1 << 20}}}});
    ASSERT_GE(p.program.outputs[0].alias_input, 0);
    const ChunkPlan cp = plan_stream(request(p, 256 * MiB, MiB));
    expect_covering(cp);
    EXPECT_EQ(cp.outputs[0].alias_input, static_cast<std::int32_t>(input_index(p, "a")));
    EXPECT_TRUE(cp.outputs[0].direct);
}

TEST(StreamPlan, InPlaceOutputOverlappingAnotherInputGoesThroughATemporary) {
    // b is a view of a's memory shifted by one element: writing a's chunk would change b's next rows.
    const ir::Plan p = plan_of("a = a + b", {{"a", {DType::Float32, {1 << 20}}}, {"b", {DType::Float32, {1 << 20}}}});
    Request r = request(p, 256 * MiB, MiB);
    const std::size_t a = input_index(p, "a"), b = input_index(p, "b");
    r.input_memory[b] = {r.input_memory[a].begin + 4, r.input_memory[a].end + 4};
    const ChunkPlan cp = plan_stream(r);
    expect_covering(cp);
    EXPECT_FALSE(cp.outputs[0].direct);
}

TEST(StreamPlan, InPlaceOutputSharingMemoryAsTheSameArrayIsStillDirect) {
    const ir::Plan p = plan_of("a = a * b", {{"a", {DType::Float32, {1 << 20}}}, {"b", {DType::Float32, {1 << 20}}}});
    Request r = request(p, 256 * MiB, MiB);
    r.input_memory[input_index(p, "b")] = r.input_memory[input_index(p, "a")];
    EXPECT_TRUE(plan_stream(r).outputs[0].direct);
}

TEST(StreamPlan, AllOrNothingSendsInPlaceOutputsThroughTemporaries) {
    const ir::Plan p = plan_of("a = a*2", {{"a", {DType::Float32, {1 << 20}}}});
    Request r = request(p, 256 * MiB, MiB);
    r.outputs_through_temporaries = true;
    EXPECT_FALSE(plan_stream(r).outputs[0].direct);
}

TEST(StreamPlan, OutOfCoreInputsStayWithinTheDeviceBudget) {
    // 16 GiB of inputs, 4 GiB of device memory.
    const std::int64_t n = std::int64_t{1} << 31;  // 8 GiB per float32 input
    const ir::Plan p = plan_of("a*2+b", {{"a", {DType::Float32, {n}}}, {"b", {DType::Float32, {n}}}});
    const std::size_t budget = std::size_t{4} << 30;
    const ChunkPlan cp = plan_stream(request(p, budget));
    expect_covering(cp);
    EXPECT_LE(cp.device_bytes, budget);
    EXPECT_GT(cp.chunks, 16u);
}

TEST(StreamPlan, TinyBudgetStillStreamsWithDoubleBuffers) {
    const ir::Plan p = plan_of("a+b", {{"a", {DType::Float64, {1 << 20}}}, {"b", {DType::Float64, {1 << 20}}}});
    // Room for two slots of a few rows, not three of a full chunk.
    const ChunkPlan cp = plan_stream(request(p, 64 * 1024));
    expect_covering(cp);
    EXPECT_LE(cp.device_bytes, std::size_t{64 * 1024});
    EXPECT_GE(cp.buffers, 2);
}

TEST(StreamPlan, ResidentInputsLargerThanTheBudgetAreRefusedWithTheFigures) {
    const ir::Plan p = plan_of("a*b", {{"a", {DType::Float32, {1000, 1 << 16}}}, {"b", {DType::Float32, {1 << 16}}}});
    const ChunkPlan cp = plan_stream(request(p, 100 * 1024));  // b alone is 256 KiB
    EXPECT_FALSE(cp.streamable);
    EXPECT_NE(cp.why_not.find("device memory"), std::string::npos) << cp.why_not;
}

TEST(StreamPlan, HalfAndComplexReductionsAreNotStreamed) {
    for (DType t : {DType::Float16, DType::Complex64}) {
        const ir::Plan p = plan_of("sum(a)", {{"a", {t, {1000}}}});
        const ChunkPlan cp = plan_stream(request(p, 256 * MiB));
        EXPECT_FALSE(cp.streamable) << dtype_name(t);
        EXPECT_EQ(cp.why_not, fmt::format("a sum of {} is not streamed", dtype_name(t)));
    }
}

}  // namespace

namespace {
TEST(StreamPlan, AnInPlaceTargetTheProgramDoesNotReadIsNeverCopiedIn) {
    const ir::Plan p = plan_of("x = a*2", {{"a", {DType::Float32, {1 << 20}}}, {"x", {DType::Float32, {1 << 20}}}});
    ASSERT_GE(p.program.outputs[0].alias_input, 0);
    const ChunkPlan cp = plan_stream(request(p, 256 * MiB, MiB));
    expect_covering(cp);
    EXPECT_FALSE(cp.inputs[static_cast<std::size_t>(p.program.outputs[0].alias_input)].read);
    EXPECT_TRUE(cp.inputs[input_index(p, "a")].read);
    EXPECT_TRUE(cp.outputs[0].direct);
}
}  // namespace
