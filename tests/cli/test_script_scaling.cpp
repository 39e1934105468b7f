// A statement's cost does not grow with the number of variables a CLI session holds (issue 17,
// item 9: 10k chained statements took 2.3 s, 40k 68 s, because every statement copied every
// name). Counted as work, not timed: the heap allocations one statement makes with ten live
// variables and with ten thousand, whose names are too long for the small-string buffer, so that
// copying any of them would allocate. bench/script_scaling.py shows the times.
#include "session.hpp"

#include "tests/support/allocation_counter.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

namespace {

using jit::Arg;
using jit::Array;
using jit::Backend;

struct Work {
    std::size_t first = 0;  // the statement's first run: parse, check, lower, prepare, run
    std::size_t again = 0;  // the same statement again: the runtime's caches hit
};

Work statement_work(int live) {
    jit::RuntimeOptions o;
    o.backend = Backend::Cpu;
    o.disk_cache = false;
    o.cpu_threads = 1;  // every allocation on this thread
    jit::cli::Session s(o);
    s.run("x = arange(3.0)", {});
    const Array v = Array::from(std::vector<double>{1, 2, 3}, {}, Backend::Cpu);
    for (int i = 0; i < live; ++i)
        s.env().insert_or_assign("a_live_variable_of_a_long_script_" + std::to_string(i), Arg(v));
    Work w;
    jit::test::start_counting_allocations();
    s.run("y = x * 2 + 1", {});
    w.first = jit::test::stop_counting_allocations();
    jit::test::start_counting_allocations();
    s.run("y = x * 2 + 1", {});
    w.again = jit::test::stop_counting_allocations();
    EXPECT_EQ(s.variable("y")->to_vector<double>(), (std::vector<double>{1, 3, 5}));
    return w;
}

TEST(ScriptScaling, AStatementDoesTheSameWorkWithTenOrTenThousandLiveVariables) {
    statement_work(10);  // first-use work of the process (lazily built tables, thread-local buffers)
    const Work few = statement_work(10);
    const Work many = statement_work(10000);
    EXPECT_GT(few.first, 0u) << "the counter counts";
    EXPECT_EQ(many.first, few.first) << "a new statement's work grew with the live variables";
    EXPECT_EQ(many.again, few.again) << "a repeated statement's work grew with the live variables";
}

}  // namespace
