// Arrow columns (host memory, as the C data interface requires) evaluated on a CUDA runtime:
// inputs go to the device, the result and its validity come back to host memory on export.
// Skips, saying why, where there is no CUDA driver or device.
#include <jit/c_api.h>
#include <jit/interop.hpp>
#include <jit/jit.hpp>

#include "backend/cuda/cuda.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

#define REQUIRE_GPU()                                                               \
    do {                                                                            \
        std::string why;                                                            \
        if (!jit::cuda::available(&why)) GTEST_SKIP() << "no CUDA device: " << why; \
    } while (0)

// A borrowed float64 column with an optional validity bitmap (LSB first); release is a no-op.
struct Column {
    std::vector<double> values;
    std::uint8_t bitmap[1] = {0};
    const void* buffers[2] = {nullptr, nullptr};
    ArrowArray array{};
    ArrowSchema schema{};
};

void make(Column& c, std::vector<double> v, int valid_bits, std::int64_t nulls) {
    c.values = std::move(v);
    c.bitmap[0] = static_cast<std::uint8_t>(valid_bits);
    c.buffers[0] = nulls ? c.bitmap : nullptr;
    c.buffers[1] = c.values.data();
    c.array.length = static_cast<std::int64_t>(c.values.size());
    c.array.null_count = nulls;
    c.array.n_buffers = 2;
    c.array.buffers = c.buffers;
    c.array.release = [](ArrowArray* a) { a->release = nullptr; };
    c.schema.format = "g";
    c.schema.release = [](ArrowSchema* s) { s->release = nullptr; };
}

}  // namespace

TEST(ArrowGpu, EvalArrowOnCudaExportsHostMemoryWithNulls) {
    REQUIRE_GPU();
    jit::RuntimeOptions o;
    o.backend = jit::Backend::Cuda;
    o.disk_cache = false;
    jit::Runtime rt(o);
    Column a, b;
    make(a, {1, 2, 3, 4}, 0b1101, 1);      // null at 1
    make(b, {10, 20, 30, 40}, 0b0111, 1);  // null at 3
    const jit::ArrowColumn c =
        jit::eval_arrow("a * 2 + b", {jit::view_arrow(&a.schema, &a.array), jit::view_arrow(&b.schema, &b.array)}, rt);
    ArrowArray out{};
    ArrowSchema schema{};
    jit::to_arrow(c, &out, &schema);
    EXPECT_EQ(out.null_count, 2);
    EXPECT_EQ(*static_cast<const std::uint8_t*>(out.buffers[0]) & 0x0F, 0b0101);
    std::vector<double> v(4);
    std::memcpy(v.data(), out.buffers[1], sizeof(double) * 4);  // host memory: readable here
    EXPECT_EQ(v[0], 12.0);
    EXPECT_EQ(v[2], 36.0);
    out.release(&out);
    schema.release(&schema);
}

TEST(ArrowGpu, CApiEvalArrowOnCudaRuntime) {
    REQUIRE_GPU();
    jitexpr_runtime* rt = jitexpr_runtime_create(JITEXPR_BACKEND_CUDA);
    ASSERT_NE(rt, nullptr) << jitexpr_last_error();
    Column a;
    make(a, {1, 2, 3}, 0b101, 1);
    const ArrowSchema* schemas[] = {&a.schema};
    const ArrowArray* arrays[] = {&a.array};
    ArrowArray out{};
    ArrowSchema schema{};
    ASSERT_EQ(jitexpr_eval_arrow(rt, "a > 1.5", 1, schemas, arrays, &out, &schema), JITEXPR_OK) << jitexpr_last_error();
    EXPECT_STREQ(schema.format, "b");
    EXPECT_EQ(out.null_count, 1);
    EXPECT_EQ(*static_cast<const std::uint8_t*>(out.buffers[1]) & 0b101, 0b100);  // 1 > 1.5 no, 3 > 1.5 yes
    out.release(&out);
    schema.release(&schema);
    jitexpr_runtime_destroy(rt);
}
