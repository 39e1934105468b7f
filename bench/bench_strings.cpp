// String predicates through the C++ API, piece by piece (issue 32's Speed section): the Arrow
// import of a string column (its offsets and UTF-8 checked), contains and == over it on the
// CPU, the export of the boolean result, and, with a GPU, the same predicates over the column
// in device memory against a device copy of as many bytes as they read (contains also with the
// warp search of -DJX_CONTAINS_WARP).
//
//   build/bench/bench_strings [--rows N] [--reps R] [--cpu-only | --gpu-only]
//
// The column: N ASCII words of 4 to 24 bytes (1 in 50 holding "needle", 1 in 100 "oslo").
// Figures: the median of R runs, in ms, and GB/s of the bytes each predicate reads (offsets,
// data, and the bools it writes). On the GPU the goal is at least half the device copy's GB/s
// (bench/results/ keeps the runs); bench/strings_cpu.py compares the CPU with Polars, DuckDB and
// numexpr from Python.
#include <jit/arrow.h>
#include <jit/interop.hpp>
#include <jit/jit.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double median_ms(int reps, const std::function<void()>& f) {
    f();  // warm-up: the program prepared, the kernels compiled
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        const auto t0 = Clock::now();
        f();
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

struct Column {
    std::vector<std::int32_t> offsets;
    std::string chars;
};

Column make_column(std::int64_t rows) {
    // splitmix64: a byte of a random word per character (a Mersenne twister per byte made the
    // setup, not the predicates, the bulk of a run).
    std::uint64_t state = 7;
    auto next = [&state] {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    };
    const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789 _-";
    Column c;
    c.offsets.reserve(static_cast<std::size_t>(rows) + 1);
    c.chars.reserve(static_cast<std::size_t>(rows) * 15);
    c.offsets.push_back(0);
    for (std::int64_t i = 0; i < rows; ++i) {
        const std::uint64_t r = next();
        if (r % 100 == 0) {
            c.chars += "oslo";
        } else {
            const std::size_t len = 4 + (r >> 8) % 21;
            const std::size_t at = c.chars.size();
            for (std::size_t k = 0; k < len; k += 8) {
                std::uint64_t w = next();
                for (std::size_t b = 0; b < 8 && k + b < len; ++b, w >>= 8)
                    c.chars += alphabet[(w & 0xff) % (sizeof alphabet - 1)];
            }
            if ((r >> 16) % 50 == 0) {  // the needle, within the word's 24 bytes
                const std::size_t pos = at + (r >> 24) % std::min<std::size_t>(len, 18);
                c.chars.replace(pos, std::min<std::size_t>(6, c.chars.size() - pos), "needle");
                if (c.chars.size() - at > 24) c.chars.resize(at + 24);
            }
        }
        c.offsets.push_back(static_cast<std::int32_t>(c.chars.size()));
    }
    return c;
}

void noop_release(ArrowArray* a) { a->release = nullptr; }
void noop_release_schema(ArrowSchema* s) { s->release = nullptr; }

}  // namespace

int main(int argc, char** argv) {
    std::int64_t rows = 10'000'000;
    int reps = 9;
    bool cpu_only = false, gpu_only = false;
    std::string only;  // time this program alone on the CPU (a profile's run)
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--only" && i + 1 < argc) only = argv[++i];
        else if (a == "--rows" && i + 1 < argc) rows = std::stoll(argv[++i]);
        else if (a == "--reps" && i + 1 < argc) reps = std::stoi(argv[++i]);
        else if (a == "--cpu-only") cpu_only = true;
        else if (a == "--gpu-only") gpu_only = true;
        else {
            fmt::print(stderr, "usage: bench_strings [--rows N] [--reps R] [--cpu-only | --gpu-only] [--only TEXT]\n");
            return 2;
        }
    }
    const Column col = make_column(rows);
    const double read_bytes = static_cast<double>(col.chars.size() + col.offsets.size() * 4 + rows);  // + bools out
    fmt::print("bench_strings: {} rows, {:.0f} MB of data and offsets; median of {}\n", rows,
               static_cast<double>(col.chars.size() + col.offsets.size() * 4) / 1e6, reps);

    const void* buffers[3] = {nullptr, col.offsets.data(), col.chars.data()};
    ArrowArray arr{};
    arr.length = rows;
    arr.n_buffers = 3;
    arr.buffers = buffers;
    arr.release = &noop_release;
    ArrowSchema sch{};
    sch.format = "u";
    sch.release = &noop_release_schema;

    jit::RuntimeOptions o;
    o.backend = jit::Backend::Cpu;
    o.disk_cache = false;
    jit::Runtime cpu(o);
    const jit::ArrowColumn c = jit::view_arrow(&sch, &arr);
    jit::Environment env{{"s", jit::Arg(c.values)}};
    auto gbs = [&](double ms) { return read_bytes / (ms * 1e6); };

    if (!only.empty()) {
        const double ms = median_ms(reps, [&] { (void)cpu.run(only, env); });
        fmt::print("cpu  {:34s} {:8.2f} ms {:6.2f} GB/s\n", only, ms, gbs(ms));
        return 0;
    }
    if (!gpu_only) {
        const double import_ms = median_ms(reps, [&] { (void)jit::view_arrow(&sch, &arr); });
        fmt::print("cpu  import (offsets and UTF-8 checked)   {:8.2f} ms\n", import_ms);
        for (const char* text :
             {"contains(s, 'needle')", "s == 'oslo'", "sum(contains(s, 'needle'))", "sum(s == 'oslo')"}) {
            const double ms = median_ms(reps, [&] { (void)cpu.run(text, env); });
            fmt::print("cpu  {:34s} {:8.2f} ms {:6.2f} GB/s\n", text, ms, gbs(ms));
        }
        const jit::Array mask = cpu.run("contains(s, 'needle')", env);
        const double export_ms = median_ms(reps, [&] {
            ArrowArray out{};
            ArrowSchema out_schema{};
            jit::to_arrow(jit::ArrowColumn{mask, std::nullopt, 0}, &out, &out_schema);
            out.release(&out);
            out_schema.release(&out_schema);
        });
        fmt::print("cpu  export of the bool result (packing)   {:8.2f} ms\n", export_ms);
    }

    if (cpu_only) return 0;
    try {
        jit::RuntimeOptions g = jit::RuntimeOptions::from_environment();  // JITEXPR_NVRTC_OPTIONS and the rest
        g.backend = jit::Backend::Cuda;
        g.disk_cache = false;
        jit::Runtime gpu(g);
        const jit::Array dev = c.values.to(jit::Backend::Cuda);
        jit::Environment denv{{"s", jit::Arg(dev)}};
        // The copy reference: as many bytes as a predicate reads, device to device.
        const jit::Array raw =
            jit::Array::zeros(jit::DType::UInt8, {static_cast<std::int64_t>(read_bytes)}, jit::Backend::Cuda);
        // (one element of each result read back: the host waits for the work, not for a large copy)
        auto wait = [](const jit::Array& a) { (void)(a.ndim() ? a.slice(0, 0, 1) : a).to(jit::Backend::Cpu); };
        const double copy_ms = median_ms(reps, [&] { wait(raw.to(jit::Backend::Cuda)); });
        const double copy_gbs = 2 * read_bytes / (copy_ms * 1e6);  // read and write
        fmt::print("gpu  device copy of the same bytes          {:8.3f} ms {:7.1f} GB/s (read + write)\n", copy_ms,
                   copy_gbs);
        for (const char* text :
             {"contains(s, 'needle')", "s == 'oslo'", "startswith(s, 'ab')", "sum(contains(s, 'needle'))"}) {
            const double ms = median_ms(reps, [&] { wait(gpu.run(text, denv)); });
            fmt::print("gpu  {:34s} {:8.3f} ms {:7.1f} GB/s  ({:.0f}% of the copy's)\n", text, ms, gbs(ms),
                       100 * gbs(ms) / copy_gbs);
        }
        // contains() with the warp's rows searched together (dsl/semantics.h, warp_contains), an
        // option until it is shown faster: the same predicates in the same process.
        for (const auto& [label, macros] :
             {std::pair<const char*, std::vector<std::string>>{"the warp search", {"-DJX_CONTAINS_WARP"}},
              {"the warp search, whole blocks", {"-DJX_CONTAINS_WARP", "-DJX_CONTAINS_WHOLE_BLOCKS"}}}) {
            jit::RuntimeOptions wo = g;
            for (const auto& m : macros) wo.nvrtc_options.push_back(m);
            jit::Runtime warp(wo);
            for (const char* text : {"contains(s, 'needle')", "sum(contains(s, 'needle'))"}) {
                const double ms = median_ms(reps, [&] { wait(warp.run(text, denv)); });
                fmt::print("gpu  {:34s} {:8.3f} ms {:7.1f} GB/s  ({:.0f}% of the copy's; {})\n", text, ms, gbs(ms),
                           100 * gbs(ms) / copy_gbs, label);
            }
        }
        const double again = median_ms(reps, [&] { wait(gpu.run("contains(s, 'needle')", denv)); });
        fmt::print("gpu  {:34s} {:8.3f} ms {:7.1f} GB/s  ({:.0f}% of the copy's; again, last)\n",
                   "contains(s, 'needle')", again, gbs(again), 100 * gbs(again) / copy_gbs);
    } catch (const jit::Error& e) {
        fmt::print("gpu  skipped: {}\n", e.what());
    }
    return 0;
}
