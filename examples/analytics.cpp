// Column analytics with jitexpr: a table of taxi trips goes through a real CSV file, becomes
// columns, and gets derived columns and filtered aggregates computed twice: by jitexpr on the
// default backend (CUDA when present, else the CPU backend) and by a plain C++ loop. Prints both
// results and both times, and fails unless they agree.
//
//   example_analytics                      3,000,000 generated rows (seed 42)
//   example_analytics --rows 200000        fewer (the CTest test)
//   example_analytics --seed 7             another table
//   example_analytics --csv trips.csv      a file of your own: a header line, then rows of
//                                          distance (miles), duration (s), fare, tip, passengers
//   example_analytics --repeat 7           time 7 warm runs of each, alternated; min and median
//
// Exit status: 0 when jitexpr and the loop agree, 1 when not, 2 for bad input, 77 when the
// environment asks for CUDA (JITEXPR_BACKEND=cuda) on a machine without a device.
#include <jit/jit.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <unistd.h>  // getpid

namespace {

struct Trips {
    std::vector<double> distance, duration, fare, tip;
    std::vector<std::int32_t> passengers;
    std::size_t size() const { return distance.size(); }
};

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// A seeded table with plausible shapes: log-normal distances, speeds of 5 to 40 mph, a metered
// fare, 2% cancelled trips with a zero fare, tips on about two thirds of the trips.
Trips generate(std::size_t rows, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> dist_miles(0.8, 0.8);
    std::uniform_real_distribution<double> mph(5.0, 40.0), unit(0.0, 1.0), tip_rate(0.10, 0.25);
    std::discrete_distribution<int> party({60, 20, 8, 6, 4, 2});
    Trips t;
    for (auto* v : {&t.distance, &t.duration, &t.fare, &t.tip}) v->reserve(rows);
    t.passengers.reserve(rows);
    for (std::size_t i = 0; i < rows; ++i) {
        const double d = std::clamp(dist_miles(rng), 0.1, 60.0);
        const double secs = std::max(30.0, std::round(d / mph(rng) * 3600.0));
        double fare = std::round((3.0 + 2.5 * d + 0.5 * secs / 60.0) * 100.0) / 100.0;
        if (unit(rng) < 0.02) fare = 0.0;
        const double tip = unit(rng) < 0.35 ? 0.0 : std::round(fare * tip_rate(rng) * 100.0) / 100.0;
        t.distance.push_back(std::round(d * 100.0) / 100.0);
        t.duration.push_back(secs);
        t.fare.push_back(fare);
        t.tip.push_back(tip);
        t.passengers.push_back(party(rng) + 1);
    }
    return t;
}

void append_number(std::string& out, double v) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back exactly
    out.append(buf, r.ptr);
}

void write_csv(const Trips& t, const std::filesystem::path& path) {
    std::string text = "distance,duration,fare,tip,passengers\n";
    text.reserve(t.size() * 32);
    for (std::size_t i = 0; i < t.size(); ++i) {
        append_number(text, t.distance[i]);
        text += ',';
        append_number(text, t.duration[i]);
        text += ',';
        append_number(text, t.fare[i]);
        text += ',';
        append_number(text, t.tip[i]);
        text += ',';
        text += std::to_string(t.passengers[i]);
        text += '\n';
    }
    std::ofstream f(path, std::ios::binary);
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!f) throw std::runtime_error("cannot write " + path.string());
}

template <class T>
const char* parse_field(const char* p, const char* end, T& value, std::size_t line, char sep) {
    const auto r = std::from_chars(p, end, value);
    if (r.ec != std::errc() || r.ptr == end || *r.ptr != sep)
        throw std::runtime_error("line " + std::to_string(line) + ": expected a number followed by '" +
                                 (sep == '\n' ? std::string("\\n") : std::string(1, sep)) + "'");
    return r.ptr + 1;
}

Trips read_csv(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open " + path.string());
    std::ostringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    if (!text.empty() && text.back() != '\n') text += '\n';
    const char* p = text.data();
    const char* end = p + text.size();
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', text.size()));
    if (!nl || std::string_view(p, static_cast<std::size_t>(nl - p)).find("distance") == std::string_view::npos)
        throw std::runtime_error(path.string() + ": expected a header line starting with distance,duration,...");
    p = nl + 1;
    Trips t;
    for (std::size_t line = 2; p < end; ++line) {
        if (*p == '\n' || *p == '\r') {  // blank line
            p += 1;
            continue;
        }
        double d, s, fare, tip;
        std::int32_t n;
        p = parse_field(p, end, d, line, ',');
        p = parse_field(p, end, s, line, ',');
        p = parse_field(p, end, fare, line, ',');
        p = parse_field(p, end, tip, line, ',');
        if (const char* cr = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
            cr && cr > p && cr[-1] == '\r')
            const_cast<char*>(cr)[-1] = '\n';  // CRLF files
        p = parse_field(p, end, n, line, '\n');
        if (p < end && *p == '\n') ++p;  // the LF after a CR
        t.distance.push_back(d);
        t.duration.push_back(s);
        t.fare.push_back(fare);
        t.tip.push_back(tip);
        t.passengers.push_back(n);
    }
    return t;
}

struct Results {
    std::vector<double> speed, tip_pct;
    double mean_long_speed = 0;  // mean speed (mph) of trips over 5 miles
    double mean_group_tip = 0;   // mean tip percentage of trips with 3 or more passengers
};

// The same computation as a plain loop (the reference), into r's columns (sized already).
void by_loop(const Trips& t, Results& r) {
    const std::size_t n = t.size();
    double long_sum = 0, group_sum = 0;
    std::int64_t long_count = 0, group_count = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double speed = t.distance[i] / (t.duration[i] / 3600);
        const double tip_pct = t.fare[i] > 0 ? t.tip[i] / t.fare[i] * 100 : 0;
        r.speed[i] = speed;
        r.tip_pct[i] = tip_pct;
        if (t.distance[i] > 5) long_sum += speed, ++long_count;
        if (t.passengers[i] >= 3) group_sum += tip_pct, ++group_count;
    }
    r.mean_long_speed = long_sum / static_cast<double>(long_count);
    r.mean_group_tip = group_sum / static_cast<double>(group_count);
}

constexpr const char* kProgram = R"(
speed = distance / (duration / 3600)
tip_pct = where(fare > 0, tip / fare * 100, 0)
mean_long_speed = sum(where(distance > 5, speed, 0)) / sum(distance > 5)
mean_group_tip = sum(where(passengers >= 3, tip_pct, 0)) / sum(passengers >= 3)
)";

// The results into r. On the CPU backend the columns are r's own vectors already (bound as
// views: jitexpr wrote them in place); elsewhere they are copied back from the device.
void read_back(const jit::Environment& env, bool columns_in_place, Results& r) {
    if (!columns_in_place) {
        r.speed = env.at("speed").array().to_vector<double>();
        r.tip_pct = env.at("tip_pct").array().to_vector<double>();
    }
    r.mean_long_speed = env.at("mean_long_speed").array().to_vector<double>()[0];
    r.mean_group_tip = env.at("mean_group_tip").array().to_vector<double>()[0];
}

bool close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)}); }

std::size_t count_mismatches(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return std::max(a.size(), b.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < a.size(); ++i) bad += close(a[i], b[i]) ? 0 : 1;
    return bad;
}

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "example_analytics: %s\nusage: example_analytics [--rows N] [--seed S] [--csv FILE] [--repeat R]\n",
                 why);
    std::exit(2);
}

struct Timing {
    std::vector<double> ms;
    void add(double v) { ms.push_back(v); }
    double min() const { return *std::min_element(ms.begin(), ms.end()); }
    double median() const {
        std::vector<double> v = ms;
        std::sort(v.begin(), v.end());
        return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    }
};

}  // namespace

int main(int argc, char** argv) {
    std::size_t rows = 3'000'000;
    std::uint64_t seed = 42;
    std::string csv;
    int repeat = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (i + 1 >= argc) usage("missing value after an option");
        const char* v = argv[++i];
        char* end = nullptr;
        if (a == "--rows") {
            rows = std::strtoull(v, &end, 10);
            if (*end || rows == 0) usage("--rows takes a positive integer");
        } else if (a == "--seed") {
            seed = std::strtoull(v, &end, 10);
            if (*end) usage("--seed takes an integer");
        } else if (a == "--repeat") {
            const unsigned long r = std::strtoul(v, &end, 10);
            if (*end || r == 0 || r > 1000) usage("--repeat takes an integer from 1 to 1000");
            repeat = static_cast<int>(r);
        } else if (a == "--csv") {
            csv = v;
        } else {
            usage("unknown option");
        }
    }

    try {
        jit::Runtime& rt = jit::Runtime::default_runtime();
        const jit::Backend backend = rt.backend();

        // 1. The table, through a CSV file.
        auto t0 = std::chrono::steady_clock::now();
        Trips trips;
        double write_ms = 0;
        if (csv.empty()) {
            const Trips generated = generate(rows, seed);
            const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                               ("jitexpr-analytics-" + std::to_string(seed) + "-" +
                                                std::to_string(rows) + "-" + std::to_string(::getpid()) + ".csv");
            write_csv(generated, path);
            write_ms = ms_since(t0);
            t0 = std::chrono::steady_clock::now();
            trips = read_csv(path);
            std::error_code ec;
            std::filesystem::remove(path, ec);
            if (trips.distance != generated.distance || trips.passengers != generated.passengers) {
                std::fprintf(stderr, "example_analytics: the CSV did not read back exactly\n");
                return 1;
            }
        } else {
            trips = read_csv(csv);
            if (trips.size() == 0) usage("the CSV file has no rows");
        }
        const double read_ms = ms_since(t0);
        std::printf("%zu trips (%s); CSV written in %.0f ms, parsed in %.0f ms\n", trips.size(),
                    csv.empty() ? ("generated, seed " + std::to_string(seed)).c_str() : csv.c_str(), write_ms, read_ms);

        // 2. Columns on the default backend (copied to the device there).
        t0 = std::chrono::steady_clock::now();
        jit::Environment env{{"distance", jit::Array::from(trips.distance)},
                             {"duration", jit::Array::from(trips.duration)},
                             {"fare", jit::Array::from(trips.fare)},
                             {"tip", jit::Array::from(trips.tip)},
                             {"passengers", jit::Array::from(trips.passengers)}};
        const double upload_ms = ms_since(t0);

        // 3. The derived columns: both jitexpr and the loop write them into vectors of the
        // caller's, allocated (and touched) once. On the CPU backend jitexpr writes straight into
        // them (views of host memory); on a device it writes device arrays, copied back.
        const std::size_t n = trips.size();
        Results jx, loop;
        for (Results* r : {&jx, &loop}) {
            r->speed.assign(n, 0.0);
            r->tip_pct.assign(n, 0.0);
        }
        const bool in_place = backend == jit::Backend::Cpu;
        if (in_place) {
            const jit::Shape shape{static_cast<std::int64_t>(n)};
            env.insert_or_assign("speed", jit::Array::view(jx.speed.data(), jit::DType::Float64, shape, {}, backend));
            env.insert_or_assign("tip_pct",
                                 jit::Array::view(jx.tip_pct.data(), jit::DType::Float64, shape, {}, backend));
        }

        // 4. jitexpr: the first run prepares (and on CUDA compiles) the program, the next ones
        // find it prepared. 5. The same with a loop. Warm runs of both alternate (--repeat R of
        // each): min and median.
        t0 = std::chrono::steady_clock::now();
        rt.run(kProgram, env);
        read_back(env, in_place, jx);
        const double first_ms = ms_since(t0);
        Timing warm, run_only, loop_time;
        for (int r = 0; r < repeat; ++r) {
            t0 = std::chrono::steady_clock::now();
            rt.run(kProgram, env);
            run_only.add(ms_since(t0));
            read_back(env, in_place, jx);
            warm.add(ms_since(t0));
            t0 = std::chrono::steady_clock::now();
            by_loop(trips, loop);
            loop_time.add(ms_since(t0));
        }
        const double warm_ms = warm.median(), loop_ms = loop_time.median();

        const std::size_t bad_speed = count_mismatches(jx.speed, loop.speed);
        const std::size_t bad_tip = count_mismatches(jx.tip_pct, loop.tip_pct);
        const bool agree = bad_speed == 0 && bad_tip == 0 && close(jx.mean_long_speed, loop.mean_long_speed) &&
                           close(jx.mean_group_tip, loop.mean_group_tip);

        std::printf("backend: %s\n", std::string(jit::backend_name(backend)).c_str());
        std::printf("%-34s %18s %18s\n", "", "jitexpr", "C++ loop");
        std::printf("%-34s %18.12g %18.12g\n", "mean speed, trips over 5 mi (mph)", jx.mean_long_speed,
                    loop.mean_long_speed);
        std::printf("%-34s %18.12g %18.12g\n", "mean tip %, 3+ passengers", jx.mean_group_tip, loop.mean_group_tip);
        std::printf("%-34s %15.2f ms %15.2f ms\n", "time (results on the host)", warm_ms, loop_ms);
        if (in_place) std::printf("(the columns written into the caller's vectors by both)\n");
        if (repeat > 1) std::printf("%-34s %15.2f ms %15.2f ms\n", "  best of the runs", warm.min(), loop_time.min());
        std::printf("(of that, jitexpr's run: %.2f ms, best %.2f; the rest reads the results back; %d run%s each)\n",
                    run_only.median(), run_only.min(), repeat, repeat == 1 ? "" : "s, median");
        std::printf("(jitexpr first run, preparing the program: %.2f ms; columns to the backend: %.2f ms)\n", first_ms,
                    upload_ms);
        if (!agree) {
            std::printf("MISMATCH: %zu speeds and %zu tip percentages differ\n", bad_speed, bad_tip);
            return 1;
        }
        std::printf("jitexpr and the loop agree (derived columns and aggregates, relative 1e-9)\n");
        return 0;
    } catch (const jit::NoDeviceError& e) {  // JITEXPR_BACKEND=cuda without a device
        std::printf("skipped: %s\n", e.what());
        return 77;
    } catch (const jit::Error& e) {
        std::fprintf(stderr, "example_analytics: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "example_analytics: %s\n", e.what());
        return 2;
    }
}
