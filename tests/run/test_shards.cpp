// How a program runs over row blocks on several devices (run/shards.hpp, run::decide's
// Way::Sharded): the decision as a value, from the facts the API layer gives, checked without a
// device. The shards are views of made-up memory: the decision reads their devices and shapes.
#include "run/decide.hpp"

#include <jit/error.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using namespace jit;
using Out = run::shards::StatementPlan::Out;

Array block(std::int64_t rows, std::int64_t cols = 4) {
    static float memory[1];
    return Array::view(memory, DType::Float32, {rows, cols}, {cols, 1}, Backend::Cpu);
}

struct Inputs {
    std::vector<Array> a{block(3), block(2)};
    std::vector<Array> row{block(1), block(1)};
    std::vector<run::shards::Input> list() const {
        return {{"a", run::shards::Input::Kind::Split, a}, {"row", run::shards::Input::Kind::Replicated, row}};
    }
};

const std::vector<int> kDevices{0};

run::shards::Statement statement(std::string target, std::string value, std::vector<std::string> reads, Shape whole,
                                 std::vector<Shape> per_shard) {
    run::shards::Statement s;
    s.target = std::move(target);
    s.value = std::move(value);
    s.text = s.target.empty() ? s.value : s.target + " = " + s.value;
    s.reads = std::move(reads);
    s.whole = run::shards::Value{DType::Float32, std::move(whole)};
    for (Shape& p : per_shard) s.per_shard.push_back(run::shards::Value{DType::Float32, std::move(p)});
    return s;
}

run::shards::Statement reduction(std::string target, std::string value, std::string function, bool whole_value) {
    run::shards::Statement s = statement(std::move(target), std::move(value), {"a"}, {}, {{}, {}});
    s.reductions.push_back({std::move(function), whole_value});
    return s;
}

TEST(Shards, TheLayoutIsTheSplitInputsRowBlocks) {
    const Inputs in;
    const auto inputs = in.list();
    const run::shards::Layout l = run::shards::layout(inputs, Backend::Cpu, kDevices);
    EXPECT_EQ(l.k, 2u);
    EXPECT_EQ(l.devices, (std::vector<int>{0, 0}));
    EXPECT_EQ(l.rows, (std::vector<std::int64_t>{3, 2}));
    EXPECT_EQ(l.total_rows, 5);
    EXPECT_EQ(l.split_names.count("a"), 1u);
    EXPECT_EQ(l.split_names.count("row"), 0u);
}

TEST(Shards, ALayoutThatIsNotOneIsRefused) {
    const Inputs in;
    const std::vector<Array> three{block(1), block(1), block(1)};
    const std::vector<run::shards::Input> counts{{"a", run::shards::Input::Kind::Split, in.a},
                                                 {"b", run::shards::Input::Kind::Split, three}};
    EXPECT_THROW(run::shards::layout(counts, Backend::Cpu, kDevices), ArgumentError);
    const std::vector<run::shards::Input> whole{{"w", run::shards::Input::Kind::Whole, in.row}};
    EXPECT_THROW(run::shards::layout(whole, Backend::Cpu, kDevices), ArgumentError);
    EXPECT_THROW(run::shards::layout(in.list(), Backend::Cuda, kDevices), DeviceMismatchError);
    EXPECT_THROW(run::shards::layout(in.list(), Backend::Cpu, std::vector<int>{1}), ArgumentError);
    EXPECT_THROW(run::shards::layout({}, Backend::Cpu, kDevices), ArgumentError);
}

TEST(Shards, DecideSaysWhatEachStatementGives) {
    const Inputs in;
    run::shards::Request r;
    r.layout = run::shards::layout(in.list(), Backend::Cpu, kDevices);
    r.statements.push_back(statement("c", "a * 2 + row", {"a", "row"}, {5, 4}, {{3, 4}, {2, 4}}));
    r.statements.push_back(statement("r2", "row * 2", {"row"}, {1, 4}, {{1, 4}, {1, 4}}));
    r.statements.push_back(statement("", "c", {"c"}, {5, 4}, {{3, 4}, {2, 4}}));  // dropped: not the last
    run::shards::Statement s = reduction("s", "sum(c)", "sum", true);
    s.reads = {"c"};
    r.statements.push_back(s);
    const run::Decision d = run::decide(r);
    ASSERT_EQ(d.way, run::Way::Sharded);
    ASSERT_TRUE(d.sharding);
    const auto& st = d.sharding->statements;
    ASSERT_EQ(st.size(), 3u);
    EXPECT_EQ(st[0].name, "c");
    EXPECT_EQ(st[0].out, Out::Split);
    EXPECT_EQ(st[1].out, Out::Replicated);
    EXPECT_EQ(st[2].out, Out::Whole);
    EXPECT_EQ(st[2].reduction, ir::Op::Sum);
    EXPECT_EQ(d.sharding->result, "s");
    EXPECT_EQ(run::placement(d), "sharded: 2 shards (devices 0, 0) of 5 rows");
}

TEST(Shards, DescribeSaysTheShardsAndWhatEachStatementGives) {
    const Inputs in;
    run::shards::Request r;
    r.layout = run::shards::layout(in.list(), Backend::Cpu, kDevices);
    r.statements.push_back(statement("c", "a * 2 + row", {"a", "row"}, {5, 4}, {{3, 4}, {2, 4}}));
    r.statements.push_back(statement("r2", "row * 2", {"row"}, {1, 4}, {{1, 4}, {1, 4}}));
    r.statements.push_back(statement("", "c", {"c"}, {5, 4}, {{3, 4}, {2, 4}}));  // dropped: not the last
    run::shards::Statement s = reduction("s", "sum(c)", "sum", true);
    s.reads = {"c"};
    r.statements.push_back(s);
    const run::Decision d = run::decide(r);
    ASSERT_TRUE(d.sharding);
    EXPECT_EQ(run::shards::describe(*d.sharding, r, Backend::Cpu),
              "sharded: 2 shards of 5 rows (3 + 2)\n"
              "  shard 0: the host, rows 0 to 2\n"
              "  shard 1: the host, rows 3 to 4\n"
              "  split by rows: a\n"
              "   1: c = a * 2 + row   -> split by rows, each shard its own\n"
              "   2: r2 = row * 2   -> replicated: reads no split rows, each shard computes it\n"
              "   4: s = sum(c)   -> one value float32 (): sum of 2 partials, combined on the host\n");
    r.layout.devices = {0, 1};
    EXPECT_NE(
        run::shards::describe(*run::decide(r).sharding, r, Backend::Cuda).find("  shard 1: cuda:1, rows 3 to 4\n"),
        std::string::npos);
}

TEST(Shards, WhatShardingDoesNotTakeIsRefusedWithAReason) {
    const Inputs in;
    auto refusal = [&](std::vector<run::shards::Statement> statements) -> std::string {
        run::shards::Request r;
        r.layout = run::shards::layout(in.list(), Backend::Cpu, kDevices);
        r.statements = std::move(statements);
        try {
            (void)run::decide(r);
        } catch (const ArgumentError& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_NE(refusal({reduction("", "sum(a) * 2", "sum", false)}).find("whole value of a statement"),
              std::string::npos);
    EXPECT_NE(refusal({reduction("", "argmax(a)", "argmax", true)}).find("not combined across devices"),
              std::string::npos);
    run::shards::Statement scan = statement("c", "cumsum(a)", {"a"}, {5, 4}, {{3, 4}, {2, 4}});
    scan.scans = true;
    EXPECT_NE(refusal({scan}).find("has a scan"), std::string::npos);
    run::shards::Statement slice = statement("c", "a[::-1]", {"a"}, {5, 4}, {{3, 4}, {2, 4}});
    slice.slices = true;
    EXPECT_NE(refusal({slice}).find("slices an array"), std::string::npos);
    EXPECT_NE(
        refusal({reduction("s", "sum(a)", "sum", true), statement("t", "s + a", {"s", "a"}, {5, 4}, {{3, 4}, {2, 4}})})
            .find("reads 's', a reduction combined"),
        std::string::npos);
    EXPECT_NE(refusal({statement("t", "a.T", {"a"}, {4, 5}, {{4, 3}, {4, 2}})}).find("does not keep the rows"),
              std::string::npos);
    EXPECT_NE(refusal({statement("t", "a", {"a"}, {5, 4}, {{3, 4}, {2, 4}}),
                       statement("t", "a", {"a"}, {5, 4}, {{3, 4}, {2, 4}})})
                  .find("assigned twice"),
              std::string::npos);
    // A slice of replicated data alone is the same on every device: taken.
    run::shards::Statement replicated = statement("r", "row[:, ::-1]", {"row"}, {1, 4}, {{1, 4}, {1, 4}});
    replicated.slices = true;
    EXPECT_EQ(refusal({replicated}), "");
}

}  // namespace
