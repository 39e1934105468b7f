// Sharded throughput: `c = a*2 + b` and `sum(a*b)` (float32) over one GPU and over every GPU of
// the machine (jit::ShardedRuntime), in the same process, same total size, inputs already on
// their devices (the split is not timed). Prints a line per case and writes JSON.
//
//   bench_multi_gpu [--elements N] [--reps R] [--devices 0,1] [--json FILE]
//
// The ratio is (time on one GPU) / (time sharded): 2 GPUs at full bandwidth each give about 2.
// With one GPU, --devices 0,0 measures what sharding costs on a single device (ratio about 1).
#include <jit/jit.hpp>
#include <jit/sharded.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <class F>
double time_ms(int reps, F&& f) {
    f();  // warm-up: compiles, pools
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        const auto t0 = Clock::now();
        f();
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    return median(t);
}

}  // namespace

int main(int argc, char** argv) {
    std::int64_t n = std::int64_t{1} << 28;
    int reps = 10;
    std::string json;
    std::vector<int> devices;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i], v = argv[i + 1];
        if (k == "--elements") n = std::stoll(v);
        else if (k == "--reps") reps = std::stoi(v);
        else if (k == "--json") json = v;
        else if (k == "--devices") {
            for (std::size_t p = 0; p < v.size();) {
                const std::size_t q = v.find(',', p);
                devices.push_back(std::stoi(v.substr(p, q - p)));
                p = q == std::string::npos ? v.size() : q + 1;
            }
        } else {
            std::fprintf(stderr, "bench_multi_gpu: unknown option %s\n", k.c_str());
            return 2;
        }
    }
    const jit::CudaInfo info = jit::cuda_info();
    if (!info.available) {
        std::printf("bench_multi_gpu: skipped, no CUDA (%s)\n", info.reason.c_str());
        return 0;
    }
    if (devices.empty())
        for (int d = 0; d < static_cast<int>(info.devices.size()); ++d) devices.push_back(d);
    jit::RuntimeOptions o;
    o.backend = jit::Backend::Cuda;
    o.device = 0;
    jit::Runtime one(o);
    jit::ShardedRuntime many(devices, o);
    const std::int64_t cols = 1024, rows = n / cols;
    // Inputs made on the devices directly (no host copy of 2 GiB): a constant fill is enough for
    // bandwidth; the tests check the values.
    jit::Array a = one.eval("float32(x) + zeros",
                            {1.5, jit::Array::zeros(jit::DType::Float32, {rows, cols}, jit::Backend::Cuda, 0)});
    jit::Array b = one.eval("a * 0 + 2", {a});
    std::vector<jit::Array> pa, pb;
    {
        const std::int64_t k = static_cast<std::int64_t>(devices.size());
        for (std::int64_t i = 0; i < k; ++i) {
            const std::int64_t r = rows / k + (i < rows % k ? 1 : 0);
            jit::Runtime& rt = many.runtime(devices[static_cast<std::size_t>(i)]);
            jit::Array z = jit::Array::zeros(jit::DType::Float32, {r, cols}, jit::Backend::Cuda,
                                             devices[static_cast<std::size_t>(i)]);
            pa.push_back(rt.eval("z + 1.5", {z}));
            pb.push_back(rt.eval("z + 2", {z}));
        }
    }
    const jit::Sharded sa = jit::Sharded::from_shards(pa), sb = jit::Sharded::from_shards(pb);
    auto sync_all = [&] {
        for (int d : devices) many.runtime(d).synchronize();
    };
    struct Case {
        const char* text;
        double bytes;  // moved by the work
    };
    const double el = static_cast<double>(rows * cols);
    const Case cases[] = {{"a*2 + b", el * 12}, {"sum(a*b)", el * 8}};
    std::string out = "{\n  \"elements\": " + std::to_string(rows * cols) + ",\n  \"devices\": [";
    for (std::size_t i = 0; i < devices.size(); ++i) out += (i ? ", " : "") + std::to_string(devices[i]);
    out += "],\n  \"gpu\": \"" + (info.devices.empty() ? std::string() : info.devices[0].describe()) +
           "\",\n  \"cases\": [\n";
    bool first = true;
    for (const Case& c : cases) {
        const double t1 = time_ms(reps, [&] {
            jit::Array r = one.eval(c.text, {a, b});
            one.synchronize();
        });
        const double tk = time_ms(reps, [&] {
            jit::Sharded r = many.eval(c.text, {{"a", sa}, {"b", sb}});
            sync_all();
        });
        const double ratio = t1 / tk;
        std::printf("%-10s one GPU %8.3f ms (%6.0f GB/s)   %zu shards %8.3f ms (%6.0f GB/s)   ratio %.2f\n", c.text, t1,
                    c.bytes / t1 / 1e6, devices.size(), tk, c.bytes / tk / 1e6, ratio);
        out += fmt::format("{}    {{\"text\": \"{}\", \"one_ms\": {:.4f}, \"sharded_ms\": {:.4f}, \"ratio\": {:.4f}}}",
                           first ? "" : ",\n", c.text, t1, tk, ratio);
        first = false;
    }
    out += "\n  ]\n}\n";
    if (!json.empty()) {
        if (std::FILE* f = std::fopen(json.c_str(), "w")) {
            std::fputs(out.c_str(), f);
            std::fclose(f);
        }
    }
    return 0;
}
