// Load: 16 threads evaluating a mix of ~100 programs (templates x dtypes x shapes, a few that
// fail) on one CPU runtime. Every outcome — value bytes, dtype, shape, or error message — must
// equal the one a separate runtime computed single-threaded first; each program is prepared
// exactly once; a second, warm round does not grow the resident set.
//
// JITEXPR_LOAD_ROUNDS (default 10) sets how many passes over the mix each thread makes per round.
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace jit;

namespace {

constexpr int kThreads = 16;

struct Case {
    std::string text;
    Environment env;  // x, y (arrays) and n (a weak integer scalar); programs never assign them
};

struct Outcome {
    bool ok = false;
    DType dtype = DType::Float32;
    Shape shape;
    std::string bytes;  // the value in C order: NaNs compare by their bits
    std::string error;  // what() of the jit::Error, when !ok
    bool operator==(const Outcome&) const = default;
};

Runtime make_cpu_runtime() {
    RuntimeOptions o;
    o.backend = Backend::Cpu;
    o.disk_cache = false;
    o.cpu_threads = 2;
    return Runtime(o);
}

template <class T>
Array filled(Shape shape, int salt, bool fractional) {
    std::vector<T> v(static_cast<std::size_t>(shape_size(shape)));
    for (std::size_t k = 0; k < v.size(); ++k) {
        const int base =
            static_cast<int>((k * (7 + static_cast<std::size_t>(salt)) + static_cast<std::size_t>(salt)) % 23) - 5;
        v[k] = static_cast<T>(fractional ? base + 0.25 * salt : base);
    }
    return Array::from(v, shape, Backend::Cpu);
}

Array filled_of(DType t, Shape shape, int salt) {
    switch (t) {
        case DType::Float32: return filled<float>(shape, salt, true);
        case DType::Float64: return filled<double>(shape, salt, true);
        case DType::Int16: return filled<std::int16_t>(shape, salt, false);
        case DType::Int32: return filled<std::int32_t>(shape, salt, false);
        case DType::Int64: return filled<std::int64_t>(shape, salt, false);
        default: throw std::logic_error("dtype not in the mix");
    }
}

// 21 templates x 5 dtypes, alternating 1-D and 2-D operands: 105 cases. "x << 1" is a TypeError
// for the float dtypes: failures are part of the mix.
std::vector<Case> make_mix() {
    const std::vector<std::string> templates = {
        "x + y",
        "x * 3 - y",
        "where(x > y, x, y)",
        "sum(x)",
        "sum(x * y, axis=0)",
        "abs(x - y) + 1",
        "maximum(x, y) * minimum(x, y)",
        "x * n + y",
        "r = x + y; q = r * r; q - x",
        "mean(x)",
        "x // 3 + y % 5",
        "sqrt(abs(x))",
        "x ** 2",
        "max(x) - min(y)",
        "(x > 0) & (y < 10)",
        "float64(x) / 7",
        "exp(x * 0.01)",
        "clip(x, 1, 5)",
        "any(x == y)",
        "x - mean(x, axis=0)",
        "x << 1",
    };
    const DType dtypes[] = {DType::Float32, DType::Float64, DType::Int16, DType::Int32, DType::Int64};
    std::vector<Case> mix;
    int k = 0;
    for (const std::string& t : templates) {
        for (DType d : dtypes) {
            const Shape shape = (k++ % 2) ? Shape{8, 12} : Shape{96};
            Case c;
            c.text = t;
            c.env.emplace("x", Arg(filled_of(d, shape, 1)));
            c.env.emplace("y", Arg(filled_of(d, shape, 2)));
            c.env.emplace("n", Arg(3));
            mix.push_back(std::move(c));
        }
    }
    return mix;
}

Outcome evaluate(Runtime& rt, const Case& c) {
    Outcome o;
    Environment env = c.env;  // shares the arrays; new names land in this copy only
    try {
        const Array r = rt.run(c.text, env);
        o.ok = true;
        o.dtype = r.dtype();
        o.shape = r.shape();
        o.bytes.resize(r.nbytes());
        r.copy_to_host(o.bytes.data());
    } catch (const Error& e) {
        o.error = e.what();
    }
    return o;
}

std::size_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    std::size_t size = 0, resident = 0;
    statm >> size >> resident;
    return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

int rounds_per_thread() {
    const char* v = std::getenv("JITEXPR_LOAD_ROUNDS");
    const int n = v ? std::atoi(v) : 0;
    return n > 0 ? n : 10;
}

struct RoundResult {
    std::size_t evals = 0;
    std::size_t ok = 0;
    std::vector<std::string> mismatches;  // the first few
};

// Every thread walks the mix `passes` times, all threads released at once; each pass in its own
// shuffled order, or (shuffle false) every thread in the same order, so that all 16 ask for
// each program at about the same moment.
RoundResult hammer(Runtime& rt, const std::vector<Case>& mix, const std::vector<Outcome>& expect, int passes,
                   bool shuffle = true) {
    RoundResult result;
    std::mutex m;
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            std::vector<std::size_t> order(mix.size());
            std::mt19937 rng(static_cast<unsigned>(1000 + t));
            std::size_t evals = 0, ok = 0;
            std::vector<std::string> bad;
            ++ready;
            while (!go.load()) std::this_thread::yield();
            for (int p = 0; p < passes; ++p) {
                for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
                if (shuffle) std::shuffle(order.begin(), order.end(), rng);
                for (std::size_t i : order) {
                    const Outcome o = evaluate(rt, mix[i]);
                    ++evals;
                    ok += o.ok;
                    if (!(o == expect[i]) && bad.size() < 3)
                        bad.push_back("thread " + std::to_string(t) + ": '" + mix[i].text + "' (case " +
                                      std::to_string(i) + ") differs from the reference" +
                                      (o.ok ? "" : ": " + o.error));
                }
            }
            std::lock_guard lock(m);
            result.evals += evals;
            result.ok += ok;
            for (auto& b : bad)
                if (result.mismatches.size() < 10) result.mismatches.push_back(std::move(b));
        });
    }
    while (ready.load() < kThreads) std::this_thread::yield();
    go = true;
    for (auto& th : threads) th.join();
    return result;
}

class LoadTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        mix_ = new std::vector<Case>(make_mix());
        reference_ = new std::vector<Outcome>;
        Runtime ref = make_cpu_runtime();
        for (const Case& c : *mix_) reference_->push_back(evaluate(ref, c));
        ref_misses_ = ref.stats().misses;
    }
    static void TearDownTestSuite() {
        delete mix_;
        delete reference_;
    }
    static std::size_t successes() {
        return static_cast<std::size_t>(
            std::count_if(reference_->begin(), reference_->end(), [](const Outcome& o) { return o.ok; }));
    }
    static std::vector<Case>* mix_;
    static std::vector<Outcome>* reference_;
    static std::uint64_t ref_misses_;
};
std::vector<Case>* LoadTest::mix_ = nullptr;
std::vector<Outcome>* LoadTest::reference_ = nullptr;
std::uint64_t LoadTest::ref_misses_ = 0;

TEST_F(LoadTest, MixHasAboutAHundredDistinctProgramsAndSomeFailures) {
    EXPECT_GE(mix_->size(), 100u);
    const std::size_t ok = successes();
    EXPECT_LT(ok, mix_->size());
    EXPECT_GE(ok, mix_->size() - 10);
    EXPECT_EQ(ref_misses_, ok) << "the reference runtime prepared a program twice";
    for (std::size_t i = 0; i < reference_->size(); ++i) {
        const Outcome& o = (*reference_)[i];
        if (o.ok) continue;
        EXPECT_EQ((*mix_)[i].text, "x << 1") << o.error;  // shifts of floats: the only failures
        EXPECT_EQ(o.error.rfind("type error", 0), 0u) << o.error;
    }
}

TEST_F(LoadTest, SixteenThreadsAgreeWithTheSingleThreadedReference) {
    Runtime rt = make_cpu_runtime();
    const RoundResult r = hammer(rt, *mix_, *reference_, rounds_per_thread());
    EXPECT_EQ(r.evals,
              static_cast<std::size_t>(kThreads) * static_cast<std::size_t>(rounds_per_thread()) * mix_->size());
    EXPECT_EQ(r.ok, static_cast<std::size_t>(kThreads) * static_cast<std::size_t>(rounds_per_thread()) * successes());
    for (const std::string& m : r.mismatches) ADD_FAILURE() << m;
}

TEST_F(LoadTest, EachProgramIsPreparedOnceUnderConcurrentFirstUse) {
    Runtime rt = make_cpu_runtime();
    const RoundResult r = hammer(rt, *mix_, *reference_, 1, /*shuffle=*/false);
    EXPECT_TRUE(r.mismatches.empty());
    const CacheStats s = rt.stats();
    EXPECT_EQ(s.misses, successes());
    EXPECT_EQ(s.entries, successes());
    EXPECT_EQ(s.hits + s.misses, static_cast<std::uint64_t>(kThreads) * successes());
}

TEST_F(LoadTest, WarmRoundKeepsResidentMemoryFlat) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "AddressSanitizer keeps freed memory in quarantine: resident size says nothing here";
#endif
    Runtime rt = make_cpu_runtime();
    hammer(rt, *mix_, *reference_, rounds_per_thread());  // cold: prepares, grows the allocator's pools
    const std::uint64_t misses = rt.stats().misses;
    const std::size_t before = resident_bytes();
    const RoundResult r = hammer(rt, *mix_, *reference_, rounds_per_thread());
    const std::size_t after = resident_bytes();
    EXPECT_TRUE(r.mismatches.empty());
    EXPECT_EQ(rt.stats().misses, misses) << "a warm round prepared again";
    std::printf("resident set: %zu KiB before, %zu KiB after a warm round of %zu evaluations\n", before / 1024,
                after / 1024, r.evals);
    const std::size_t slack = 16u << 20;
    EXPECT_LE(after, before + slack) << "resident set grew from " << before / 1024 << " KiB to " << after / 1024
                                     << " KiB over a warm round";
}

}  // namespace
