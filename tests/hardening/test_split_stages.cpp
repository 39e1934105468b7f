// Program size on CUDA: ir::split_large_stages keeps every kernel at most cuda::kMaxStageNodes IR
// nodes (NVRTC's time grows faster than linearly with kernel size), by storing intermediate
// values in stages of their own. Checked without a GPU: the split schedule is evaluated stage by
// stage with a small reference interpreter (each stage may read from memory only what an earlier
// stage stored) and compared with the whole program; the split kernels are emitted and compiled
// with NVRTC; the temporaries' workspace (ir::layout_temps) shares memory only between values
// whose lifetimes do not overlap. tests/hardening/test_gpu_faults.cpp runs split programs on a
// device.
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/executor.hpp"
#include "tests/hardening/pipeline.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

using namespace jit;

namespace {

std::string repeat(std::string_view s, std::size_t n) {
    std::string r;
    r.reserve(s.size() * n);
    for (std::size_t i = 0; i < n; ++i) r += s;
    return r;
}

// Values of a node: its elements in C order, as doubles.
using Values = std::vector<double>;

// A reference interpreter for the ops these tests use (+, -, *, casts, full sums), with NumPy
// broadcasting. Inputs are given per slot.
class Interpreter {
public:
    Interpreter(const ir::Program& p, std::map<int, Values> inputs) : p_(p), inputs_(std::move(inputs)) {}

    // The value of node `n` from the values of its operands (`get`).
    template <class Get>
    Values eval(ir::NodeId n, Get&& get) const {
        const ir::Node& nd = p_.node(n);
        const std::size_t size = static_cast<std::size_t>(shape_size(nd.shape));
        Values out(size);
        switch (nd.kind) {
            case ir::NodeKind::Input: return inputs_.at(nd.slot);
            case ir::NodeKind::Const: std::fill(out.begin(), out.end(), nd.value.as_double()); return out;
            case ir::NodeKind::Cast: return broadcast(get(nd.args[0]), p_.node(nd.args[0]).shape, nd.shape);
            case ir::NodeKind::Reduce: {
                if (nd.op != ir::Op::Sum || nd.axis >= 0) ADD_FAILURE() << "interpreter: only full sums";
                double s = 0;
                for (double v : get(nd.args[0])) s += v;
                return Values{s};
            }
            case ir::NodeKind::Op: {
                const Values a = broadcast(get(nd.args[0]), p_.node(nd.args[0]).shape, nd.shape);
                const Values b = broadcast(get(nd.args[1]), p_.node(nd.args[1]).shape, nd.shape);
                for (std::size_t i = 0; i < size; ++i) {
                    switch (nd.op) {
                        case ir::Op::Add: out[i] = a[i] + b[i]; break;
                        case ir::Op::Sub: out[i] = a[i] - b[i]; break;
                        case ir::Op::Mul: out[i] = a[i] * b[i]; break;
                        default: ADD_FAILURE() << "interpreter: unsupported op " << ir::info(nd.op).id;
                    }
                }
                return out;
            }
            case ir::NodeKind::Scalar:
            case ir::NodeKind::Compact:
            case ir::NodeKind::Scan: break;  // the programs here have no scalars, selections or scans
        }
        ADD_FAILURE() << "interpreter: unsupported node kind";
        return out;
    }

    // Every node's value, the whole program at once.
    ir::NodeMap<Values> whole() const {
        ir::NodeMap<Values> v(p_.nodes.size());
        for (ir::NodeId n : p_.ids()) v[n] = eval(n, [&](ir::NodeId a) -> const Values& { return v[a]; });
        return v;
    }

private:
    static Values broadcast(const Values& v, const Shape& from, const Shape& to) {
        if (from == to) return v;
        const Strides st = ir::broadcast_strides(from, contiguous_strides(from), to);
        Values out(static_cast<std::size_t>(shape_size(to)));
        for (std::size_t i = 0; i < out.size(); ++i) {
            std::int64_t rest = static_cast<std::int64_t>(i), off = 0;
            for (std::size_t d = to.size(); d-- > 0;) {
                off += (rest % to[d]) * st[d];
                rest /= to[d];
            }
            out[i] = v[static_cast<std::size_t>(off)];
        }
        return out;
    }

    const ir::Program& p_;
    std::map<int, Values> inputs_;
};

// Runs `s` stage by stage: each stage computes its nodes inline, reads the values of Reduce and
// spilled nodes of other stages from memory (failing if no earlier stage stored them) and stores
// its results. Checks that no stage computes more than `limit` nodes and returns the stored
// values by node; `last_read`, when given, gets the last stage reading each node from memory.
std::map<ir::NodeId, Values> run_staged(const ir::Program& p, const ir::Schedule& s, const Interpreter& in,
                                        std::size_t limit, std::map<ir::NodeId, std::size_t>* last_read = nullptr) {
    std::map<ir::NodeId, Values> memory;
    for (std::size_t k = 0; k < s.stages.size(); ++k) {
        const ir::Stage& st = s.stages[k];
        std::vector<ir::NodeId> roots = st.stores;
        if (st.kind == ir::Stage::Kind::Reduce) roots = {p.node(st.reduce).args[0]};
        // The nodes this stage computes (from memory: Reduce nodes and spilled nodes of others).
        auto from_memory = [&](ir::NodeId n) {
            return (p.node(n).kind == ir::NodeKind::Reduce || s.is_spilled(n)) &&
                   s.stored_by[n] != static_cast<std::int32_t>(k);
        };
        ir::NodeMap<char> inline_(p.nodes.size(), 0);
        std::vector<ir::NodeId> stack = roots;
        std::size_t count = 0;
        while (!stack.empty()) {
            const ir::NodeId n = stack.back();
            stack.pop_back();
            if (inline_[n]) continue;
            inline_[n] = 1;
            ++count;
            if (from_memory(n)) {
                if (last_read) (*last_read)[n] = k;
                if (s.stored_by[n] > static_cast<std::int32_t>(k))
                    ADD_FAILURE() << "stage " << k << " reads node " << n << " before stage " << s.stored_by[n]
                                  << " stores it";
                continue;
            }
            const ir::Node& nd = p.node(n);
            for (int a = 0; a < nd.nargs; ++a) stack.push_back(nd.args[a]);
        }
        EXPECT_LE(count, limit) << "stage " << k << " computes " << count << " nodes";
        std::map<ir::NodeId, Values> local;
        auto get = [&](ir::NodeId a) -> const Values& {
            if (from_memory(a)) return memory.at(a);
            return local.at(a);
        };
        for (ir::NodeId n : p.ids())
            if (inline_[n] && !from_memory(n)) local[n] = in.eval(n, get);
        if (st.kind == ir::Stage::Kind::Reduce) memory[st.reduce] = in.eval(st.reduce, get);
        for (auto n : st.stores) memory[n] = local.at(n);
    }
    return memory;
}

ir::Program lower(std::string_view text) { return jxharden::run_front(text).program; }

// a: float32 {4} = {1, 2, -3, 0.5}; c: float32 {3, 4}; b: float64 {4}.
std::map<int, Values> inputs_for(const ir::Program& p) {
    std::map<int, Values> in;
    for (std::size_t i = 0; i < p.inputs.size(); ++i) {
        const auto& d = p.inputs[i];
        Values v(static_cast<std::size_t>(shape_size(d.shape)));
        for (std::size_t e = 0; e < v.size(); ++e)
            v[e] = d.name == "a" ? std::vector<double>{1, 2, -3, 0.5}[e % 4] : 0.25 * double(e) - 1;
        in[static_cast<int>(i)] = v;
    }
    return in;
}

// The split schedule computes every output as the whole program does. Returns it.
ir::Schedule expect_staged_equals_whole(const ir::Program& p, std::size_t limit) {
    const ir::Schedule split = ir::split_large_stages(p, ir::schedule(p), limit);
    Interpreter in(p, inputs_for(p));
    const auto whole = in.whole();
    const auto memory = run_staged(p, split, in, limit);
    for (const auto& o : p.outputs) {
        auto it = memory.find(o.node);
        if (it == memory.end()) {
            ADD_FAILURE() << "output '" << o.name << "' is never stored";
            continue;
        }
        EXPECT_EQ(it->second, whole[o.node]) << "output '" << o.name << "'";
    }
    return split;
}

TEST(SplitStages, ProgramsWithinTheLimitKeepTheirSchedule) {
    // More nodes than the limit in all, but no stage computes more.
    const ir::Program p = lower("d = a" + repeat(" + a", 9) + "\nf = c" + repeat(" * c", 9));
    const ir::Schedule s = ir::schedule(p);
    ASSERT_GT(p.nodes.size(), 12u);
    const ir::Schedule split = ir::split_large_stages(p, s, 12);
    EXPECT_TRUE(split.spilled.empty());
    EXPECT_LT(split.stages.size(), p.nodes.size());
    ASSERT_EQ(split.stages.size(), s.stages.size());
    for (std::size_t k = 0; k < s.stages.size(); ++k) EXPECT_EQ(split.stages[k].stores, s.stages[k].stores);
    EXPECT_EQ(split.temps, s.temps);
}

TEST(SplitStages, LimitBelowEightNodesIsAnInternalError) {
    const ir::Program p = lower("c = a * 2 + b");
    EXPECT_THROW(ir::split_large_stages(p, ir::schedule(p), 7), InternalError);
}

TEST(SplitStages, HundredThousandTermSumFitsTheLimitAndKeepsItsValue) {
    const ir::Program p = lower("y = a" + repeat(" + a", 99999));
    const ir::Schedule split = ir::split_large_stages(p, ir::schedule(p), cuda::kMaxStageNodes);
    // A chain: each stage but the first reads the previous one's value and adds up to the limit.
    EXPECT_GE(split.stages.size(), 100000 / cuda::kMaxStageNodes + 1);
    EXPECT_LE(split.stages.size(), 100000 / (cuda::kMaxStageNodes / 2) + 1);
    Interpreter in(p, inputs_for(p));
    const auto memory = run_staged(p, split, in, cuda::kMaxStageNodes);
    EXPECT_EQ(memory.at(p.outputs[0].node), (Values{100000, 200000, -300000, 50000}));
}

TEST(SplitStages, ChainWithBroadcastAndReductionsEvaluatesStageByStage) {
    // A long chain over a broadcast {3, 4} shape, reductions of long chains that are read back,
    // and a value shared by two outputs.
    const std::string text = "y = a" + repeat(" + a * 2", 60) + "\n" +      //
                             "s = sum(y" + repeat(" - a", 50) + ")\n" +     //
                             "d = c + y" + repeat(" + c - s", 40) + "\n" +  //
                             "f = y * 2" + repeat(" + d", 30) + "\n";
    const ir::Program p = lower(text);
    const ir::Schedule split = expect_staged_equals_whole(p, 16);
    EXPECT_FALSE(split.spilled.empty());
    EXPECT_GT(split.stages.size(), ir::schedule(p).stages.size() + 10);
}

TEST(SplitStages, SharedSubexpressionsAreCountedOnce) {
    // As a tree x doubles at every step; as a DAG it grows by two nodes. Counting the tree would
    // spill every few steps; counting nodes once spills about once per 100 steps.
    std::string text = "y = a\n";
    for (int i = 0; i < 150; ++i) text += "y = y * y - y\n";
    const ir::Program p = lower(text);
    ASSERT_GT(p.nodes.size(), 200u);
    const ir::Schedule split = ir::split_large_stages(p, ir::schedule(p), 200);
    EXPECT_GE(split.stages.size(), 2u);
    EXPECT_LE(split.stages.size(), 4u);
    Interpreter in(p, inputs_for(p));
    run_staged(p, split, in, 200);
}

TEST(SplitStages, OutputsOfOneShapeAreDividedWhenTogetherTooLarge) {
    const std::string text = "d = a" + repeat(" + a", 10) + "\nf = b" + repeat(" + b", 10) + "\nr = a * b";
    const ir::Program p = lower(text);
    const ir::Schedule split = ir::split_large_stages(p, ir::schedule(p), 16);
    EXPECT_TRUE(split.spilled.empty());
    EXPECT_EQ(split.stages.size(), 2u);
    expect_staged_equals_whole(p, 16);
}

TEST(SplitStages, SpilledOutputIsStoredOnceInItsOwnMemory) {
    // d (25 nodes) is an output and the larger operand of f, which is too large with both: d is
    // spilled, into its own output buffer, and f reads it from there.
    const std::string text = "d = a" + repeat(" + a", 24) + "\nf = d + (a" + repeat(" - a", 15) + ")";
    const ir::Program p = lower(text);
    const ir::Schedule split = ir::split_large_stages(p, ir::schedule(p), 32);
    const ir::NodeId d = p.outputs[0].node;
    EXPECT_TRUE(split.is_spilled(d));
    EXPECT_EQ(std::count(split.temps.begin(), split.temps.end(), d), 0);
    int storing = 0;
    for (const auto& st : split.stages) storing += static_cast<int>(std::count(st.stores.begin(), st.stores.end(), d));
    EXPECT_EQ(storing, 1);
    expect_staged_equals_whole(p, 32);
}

// The kernels of a split program: one per stage; a kernel reads each value spilled by another
// stage as an array and writes what its stage stores; NVRTC compiles them.
TEST(SplitStages, SplitKernelsReadSpilledValuesAndCompileWithNvrtc) {
    const ir::Program p = lower("y = a" + repeat(" * 1.5 + a", 150));
    const ir::Schedule split = ir::split_large_stages(p, ir::schedule(p), 128);
    ASSERT_GE(split.stages.size(), 3u);
    const codegen::Emitted e = codegen::emit(p, split);
    ASSERT_EQ(e.kernels.size(), split.stages.size());
    cuda::CompileOptions co;
    co.cc_major = 9;
    co.cc_minor = 0;
    for (std::size_t k = 0; k < e.kernels.size(); ++k) {
        const auto& kernel = e.kernels[k];
        int spilled_reads = 0, writes = 0;
        for (const auto& prm : kernel.params) {
            if (prm.kind != codegen::Param::Kind::Array) continue;
            if (prm.written) {
                ++writes;
                EXPECT_EQ(prm.array.node(), split.stages[k].stores.at(0));
            } else if (prm.array.kind == codegen::ArrayRef::Kind::Node) {
                ++spilled_reads;
                EXPECT_TRUE(split.is_spilled(prm.array.node()));
                EXPECT_LT(split.stored_by[prm.array.node()], static_cast<std::int32_t>(k));
            }
        }
        EXPECT_EQ(writes, 1) << "stage " << k;
        EXPECT_EQ(spilled_reads, k == 0 ? 0 : 1) << "stage " << k;
        try {
            const cuda::Image img = cuda::compile(kernel.source, kernel.name, co);
            EXPECT_FALSE(img.data.empty());
        } catch (const CompileError& err) {
            ADD_FAILURE() << "NVRTC rejected stage " << k << ":\n" << err.log();
        }
    }
}

// `jitexpr precompile` compiles the kernels prepare() loads: the split ones.
TEST(SplitStages, PrecompileEmitsTheSplitKernels) {
    const ir::Plan plan = jxharden::run_front("y = a" + repeat(" + a", 5000));
    const ir::Program& p = plan.program;
    const std::size_t expected = ir::split_large_stages(p, ir::schedule(p), cuda::kMaxStageNodes).stages.size();
    EXPECT_EQ(plan.schedule.stages.size(), expected) << "dsl::plan applies the CUDA limit";
    ASSERT_GE(expected, 3u);
    std::vector<std::string> asked;
    cuda::ImageStore store;
    // Every image "present": nothing is compiled, only the kernels' keys are asked for.
    store.get = [&](const std::string& key) -> std::optional<std::string> {
        asked.push_back(key);
        return std::string("Cimage");
    };
    cuda::CompileOptions co;
    const auto kernels = cuda::precompile(plan, co, store);
    EXPECT_EQ(kernels.size(), expected);
    EXPECT_EQ(asked.size(), expected);
    for (const auto& k : kernels) EXPECT_TRUE(k.already_stored);
}

// ---- the temporaries' workspace

TEST(TempLayout, SplitChainNeedsTwoBuffers) {
    const ir::Program p = lower("y = a" + repeat(" + a", 500));
    const ir::Schedule split = ir::split_large_stages(p, ir::schedule(p), 64);
    ASSERT_GE(split.temps.size(), 6u);
    const ir::TempLayout layout = ir::layout_temps(p, split, 256);
    ASSERT_EQ(layout.offset.size(), split.temps.size());
    EXPECT_EQ(layout.bytes, 2u * 256u);  // 4 floats each, aligned: ping-pong between two blocks
}

TEST(TempLayout, TemporariesSharingMemoryNeverLiveAtTheSameStage) {
    const std::string text = "y = a" + repeat(" + a * 2", 60) + "\n" +       //
                             "s = sum(y" + repeat(" - a", 50) + ")\n" +      //
                             "r = sum(c" + repeat(" * 2 - s", 20) + ")\n" +  //
                             "d = c + y" + repeat(" + c - s * r", 40) + "\n";
    const ir::Program p = lower(text);
    const ir::Schedule split = ir::split_large_stages(p, ir::schedule(p), 16);
    ASSERT_GE(split.temps.size(), 4u);
    Interpreter in(p, inputs_for(p));
    std::map<ir::NodeId, std::size_t> last_read;
    run_staged(p, split, in, 16, &last_read);
    const ir::TempLayout layout = ir::layout_temps(p, split, 64);
    std::size_t separate = 0;
    for (std::size_t t = 0; t < split.temps.size(); ++t) {
        const ir::Node& nd = p.node(split.temps[t]);
        const std::size_t bytes =
            std::max<std::size_t>(1, static_cast<std::size_t>(shape_size(nd.shape)) * itemsize(nd.dtype));
        separate += (bytes + 63) / 64 * 64;
    }
    EXPECT_LT(layout.bytes, separate) << "nothing was shared";
    auto lifetime = [&](std::size_t t) {
        const ir::NodeId node = split.temps[t];
        const auto from = static_cast<std::size_t>(split.stored_by[node]);
        auto it = last_read.find(node);
        return std::pair{from, it == last_read.end() ? from : std::max(from, it->second)};
    };
    auto extent = [&](std::size_t t) {
        const ir::Node& nd = p.node(split.temps[t]);
        const std::size_t bytes =
            std::max<std::size_t>(1, static_cast<std::size_t>(shape_size(nd.shape)) * itemsize(nd.dtype));
        return std::pair{layout.offset[t], layout.offset[t] + bytes};
    };
    for (std::size_t t = 0; t < split.temps.size(); ++t) {
        EXPECT_EQ(layout.offset[t] % 64, 0u);
        EXPECT_LE(extent(t).second, layout.bytes);
        for (std::size_t u = t + 1; u < split.temps.size(); ++u) {
            const bool share = extent(t).first < extent(u).second && extent(u).first < extent(t).second;
            const bool overlap = lifetime(t).first <= lifetime(u).second && lifetime(u).first <= lifetime(t).second;
            EXPECT_FALSE(share && overlap) << "temporaries of nodes " << split.temps[t] << " and " << split.temps[u]
                                           << " share memory while both live";
        }
    }
}

}  // namespace
