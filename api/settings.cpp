// Parsing and checking of the runtime's settings, shared by the environment
// (RuntimeOptions::from_environment) and the command line.
#include <jit/error.hpp>
#include <jit/runtime.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string>

namespace jit {
namespace settings {
namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

[[noreturn]] void bad(std::string_view source, std::string_view text, std::string_view allowed) {
    throw ArgumentError(fmt::format("{}: '{}' is not a valid value ({})", source, printable(text), allowed));
}

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

}  // namespace

Backend backend(std::string_view text, std::string_view source) {
    const std::string v = lower(trimmed(text));
    if (v == "cpu") return Backend::Cpu;
    if (v == "cuda") return Backend::Cuda;
    if (v == "auto") return Backend::Auto;
    bad(source, text, "use cpu, cuda or auto");
}

int cpu_threads(std::string_view text, std::string_view source) {
    const std::string_view v = trimmed(text);
    constexpr std::string_view allowed = "use a whole number of threads: 0 for every core, at most 1024";
    if (v.empty() || v.front() == '+') bad(source, text, allowed);
    long long n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (end != v.data() + v.size()) bad(source, text, allowed);
    if (ec == std::errc::result_out_of_range) {
        if (v.front() == '-') bad(source, text, allowed);
        return kMaxCpuThreads;
    }
    if (ec != std::errc() || n < 0) bad(source, text, allowed);
    return static_cast<int>(std::min<long long>(n, kMaxCpuThreads));
}

bool on_off(std::string_view text, std::string_view source) {
    const std::string v = lower(trimmed(text));
    if (v == "1" || v == "true" || v == "on" || v == "yes") return true;
    if (v == "0" || v == "false" || v == "off" || v == "no") return false;
    bad(source, text, "use 1 or 0 (also true/false, on/off, yes/no)");
}

std::vector<std::string> nvrtc_options(std::string_view text, std::string_view source) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
        std::size_t j = i;
        while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
        if (j > i) {
            std::string word(text.substr(i, j - i));
            if (word.size() < 2 || word[0] != '-')
                throw ArgumentError(
                    fmt::format("{}: '{}' is not an NVRTC option (options start with '-', e.g. "
                                "--Ofast-compile=max)",
                                source, printable(word)));
            out.push_back(std::move(word));
        }
        i = j;
    }
    return out;
}

int device(std::string_view text, std::string_view source) {
    const std::string_view v = trimmed(text);
    constexpr std::string_view allowed = "use a device ordinal: a whole number from 0 (the first GPU)";
    if (v.empty() || v.front() == '+' || v.front() == '-') bad(source, text, allowed);
    int n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 0) bad(source, text, allowed);
    return n;
}

std::size_t bytes(std::string_view text, std::string_view source) {
    const std::string_view v = trimmed(text);
    constexpr std::string_view allowed = "use a size in bytes, e.g. 4GiB, 512M or 1048576 (0: no limit)";
    if (v.empty() || v.front() == '+' || v.front() == '-') bad(source, text, allowed);
    unsigned long long n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end == v.data()) bad(source, text, allowed);
    std::string unit = lower(trimmed(std::string_view(end, static_cast<std::size_t>(v.data() + v.size() - end))));
    int shift = 0;
    if (unit.empty() || unit == "b") shift = 0;
    else if (unit == "k" || unit == "kb" || unit == "kib") shift = 10;
    else if (unit == "m" || unit == "mb" || unit == "mib") shift = 20;
    else if (unit == "g" || unit == "gb" || unit == "gib") shift = 30;
    else if (unit == "t" || unit == "tb" || unit == "tib") shift = 40;
    else bad(source, text, allowed);
    if (shift && n > (~0ull >> shift)) bad(source, text, allowed);
    return static_cast<std::size_t>(n << shift);
}

std::string one_of(std::string_view text, std::string_view source, const std::vector<std::string_view>& allowed) {
    const std::string v = lower(trimmed(text));
    for (std::string_view a : allowed)
        if (v == a) return v;
    std::string list;
    for (std::size_t k = 0; k < allowed.size(); ++k) list += (k ? ", " : "use ") + std::string(allowed[k]);
    bad(source, text, list);
}

}  // namespace settings

namespace {

// The variable's value, or nullptr when it is unset or empty (empty means "not set", as for
// every JITEXPR_* variable).
const char* env(const char* name) {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
}

}  // namespace

RuntimeOptions RuntimeOptions::from_environment() {
    RuntimeOptions o;
    if (const char* v = env("JITEXPR_BACKEND")) o.backend = settings::backend(v, "JITEXPR_BACKEND");
    if (const char* v = env("JITEXPR_CACHE_DIR")) o.cache_dir = v;
    if (const char* v = env("JITEXPR_DISK_CACHE")) o.disk_cache = settings::on_off(v, "JITEXPR_DISK_CACHE");
    if (const char* v = env("JITEXPR_DEVICE")) o.device = settings::device(v, "JITEXPR_DEVICE");
    if (const char* v = env("JITEXPR_THREADS")) o.cpu_threads = settings::cpu_threads(v, "JITEXPR_THREADS");
    if (const char* v = env("JITEXPR_FAST_MATH")) o.fast_math = settings::on_off(v, "JITEXPR_FAST_MATH");
    if (const char* v = env("JITEXPR_TIERED")) o.tiered_compile = settings::on_off(v, "JITEXPR_TIERED");
    if (const char* v = env("JITEXPR_NVRTC_OPTIONS"))
        o.nvrtc_options = settings::nvrtc_options(v, "JITEXPR_NVRTC_OPTIONS");
    if (const char* v = env("JITEXPR_SHOW_KERNELS")) o.show_kernels = settings::on_off(v, "JITEXPR_SHOW_KERNELS");
    if (const char* v = env("JITEXPR_DEVICE_MEMORY"))
        o.device_memory_limit = settings::bytes(v, "JITEXPR_DEVICE_MEMORY");
    // Read where they are used; checked here so that a typo is an error at start-up, not a
    // silent default.
    if (const char* v = env("JITEXPR_STAGING"))
        (void)settings::one_of(v, "JITEXPR_STAGING", {"staged", "1", "direct", "0", "register"});
    if (const char* v = env("JITEXPR_CPU_KERNELS")) (void)settings::one_of(v, "JITEXPR_CPU_KERNELS", {"auto", "base"});
    return o;
}

}  // namespace jit
