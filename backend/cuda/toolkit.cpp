// jitexpr — finding and opening NVRTC and nvJitLink at run time (see toolkit.hpp for the order).
//
// Finding is separate from loading: the disk cache's keys hold the NVRTC version, which is read
// from the file names (libnvrtc-builtins.so.13.0 beside libnvrtc.so.13), so a process whose
// kernels all come from disk computes its keys without mapping NVRTC. Loading happens on the
// first compile.
#include "backend/cuda/toolkit.hpp"
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/driver.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <dirent.h>
#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

namespace jit::cuda::detail {
namespace {

bool is_file(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_dir(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string dirname_of(const std::string& p) {
    const auto slash = p.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : p.substr(0, slash);
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

// "libnvrtc-builtins.so.13.0" -> 13000 for a major of 13 (0: none in `dir`).
int builtins_version(const std::string& dir, int major) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) return 0;
    int best = 0;
    const std::string prefix = "libnvrtc-builtins.so.";
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        int maj = 0, min = 0;
        if (std::sscanf(name.c_str() + prefix.size(), "%d.%d", &maj, &min) != 2) continue;
        if (major != 0 && maj != major) continue;
        best = std::max(best, maj * 1000 + min * 10);
    }
    ::closedir(d);
    return best;
}

// The major version in "libnvrtc.so.13" (0 for the plain .so).
int major_of(const std::string& file, const std::string& stem) {
    const std::string base = file.substr(file.rfind('/') + 1);
    if (base.size() <= stem.size() + 1 || base.compare(0, stem.size(), stem) != 0) return 0;
    return std::atoi(base.c_str() + stem.size() + 1);
}

// The version read from file names: NVRTC from its builtins beside it; otherwise the real
// file's name (libnvJitLink.so.12.4.127 -> 12040) when it has one.
int version_of(const LibrarySpec& spec, const std::string& file) {
    char* real = ::realpath(file.c_str(), nullptr);
    const std::string resolved = real ? std::string(real) : file;
    std::free(real);
    int major = major_of(resolved, spec.stem);
    if (spec.builtins) return builtins_version(dirname_of(resolved), major);
    const std::string base = resolved.substr(resolved.rfind('/') + 1);
    int maj = 0, min = 0;
    if (base.size() > std::string(spec.stem).size() &&
        std::sscanf(base.c_str() + std::string(spec.stem).size(), ".%d.%d", &maj, &min) == 2)
        return maj * 1000 + min * 10;
    return 0;
}

// The file of `spec` in `dir`, newest major first; empty when none.
std::string find_in(const LibrarySpec& spec, const std::string& dir) {
    for (int major : spec.majors) {
        const std::string p = fmt::format("{}/{}.{}", dir, spec.stem, major);
        if (is_file(p)) return p;
    }
    const std::string plain = dir + "/" + spec.stem;
    return is_file(plain) ? plain : std::string();
}

std::string list_dirs(const std::vector<std::string>& dirs) {
    std::string out;
    for (const auto& d : dirs) out += (out.empty() ? "" : ", ") + d;
    return out;
}

std::string names_of(const LibrarySpec& spec) {
    std::string out;
    for (int m : spec.majors) out += fmt::format("{}.{}, ", spec.stem, m);
    return out + spec.stem;
}

#if defined(__x86_64__)
constexpr const char* kTargetDir = "targets/x86_64-linux/lib";
constexpr const char* kMultiarch = "x86_64-linux-gnu";
#elif defined(__aarch64__)
constexpr const char* kTargetDir = "targets/sbsa-linux/lib";
constexpr const char* kMultiarch = "aarch64-linux-gnu";
#else
constexpr const char* kTargetDir = "lib64";
constexpr const char* kMultiarch = "";
#endif

// The folders an /etc/ld.so.conf names, with its include lines followed (globs).
void read_ld_conf(const std::string& file, std::vector<std::string>& out, int depth) {
    if (depth > 4) return;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        const auto hash = line.find('#');
        if (hash != std::string::npos) line.resize(hash);
        std::istringstream words(line);
        std::string first;
        if (!(words >> first)) continue;
        if (first == "include") {
            for (std::string pattern; words >> pattern;) {
                if (pattern[0] != '/') pattern = dirname_of(file) + "/" + pattern;
                glob_t g{};
                if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
                    for (std::size_t i = 0; i < g.gl_pathc; ++i) read_ld_conf(g.gl_pathv[i], out, depth + 1);
                ::globfree(&g);
            }
        } else if (first[0] == '/') {
            out.push_back(first);
        }
    }
}

// A library file in a wheel's folder and its major version: "libnvrtc.so.12" (and
// "libnvrtc.so.11.2", as CUDA 11's wheels name it) -> 12 (11); the plain .so -> the major of the
// file it links to, 0 when that does not tell.
struct WheelFile {
    std::string path;
    int major = 0;
};

std::vector<WheelFile> wheel_files(const LibrarySpec& spec, const std::vector<std::string>& dirs) {
    std::vector<WheelFile> out;
    const std::string prefix = std::string(spec.stem) + ".";
    for (const auto& dir : dirs) {
        DIR* d = ::opendir(dir.c_str());
        if (!d) continue;
        std::vector<std::string> names;
        while (const dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
        ::closedir(d);
        // Per folder, one file per major: the shortest name ("libnvrtc.so.12" before a
        // "libnvrtc.so.12.8" beside it), the plain .so last; in a fixed order.
        std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
            return a.size() != b.size() ? a.size() < b.size() : a < b;
        });
        std::vector<WheelFile> here;
        bool plain = false;
        for (const std::string& name : names) {
            int major = 0;
            if (name == spec.stem) {
                plain = true;
                continue;
            }
            if (name.compare(0, prefix.size(), prefix) != 0) continue;
            const char* digits = name.c_str() + prefix.size();
            char* end = nullptr;
            const long m = std::strtol(digits, &end, 10);
            if (end == digits || (*end != '\0' && *end != '.') || m <= 0 || m > 999) continue;
            major = static_cast<int>(m);
            const std::string path = dir + "/" + name;
            if (!is_file(path)) continue;
            if (std::none_of(here.begin(), here.end(), [&](const WheelFile& w) { return w.major == major; }))
                here.push_back({path, major});
        }
        if (plain && here.empty() && is_file(dir + "/" + spec.stem)) {
            char* real = ::realpath((dir + "/" + spec.stem).c_str(), nullptr);
            const std::string resolved = real ? std::string(real) : dir + "/" + spec.stem;
            std::free(real);
            here.push_back({dir + "/" + spec.stem, major_of(resolved, spec.stem)});
        }
        out.insert(out.end(), here.begin(), here.end());
    }
    return out;
}

// Why a wheel's library of `major` cannot serve ("" when it can). jitexpr is built against
// CUDA 12 and 13's interfaces; a library is usable on a driver of its own CUDA major or a newer
// one (a newer driver runs an older toolkit's kernels, minor versions within a major are
// compatible), never on an older driver: CUDA 13's NVRTC writes kernels a CUDA 12 driver cannot
// load, and the same holds for nvJitLink's CUBINs. A plain .so whose major does not show is taken
// as it is, as before.
std::string unusable(const LibrarySpec& spec, int major, int driver_version) {
    if (major == 0) return {};
    if (std::find(spec.majors.begin(), spec.majors.end(), major) == spec.majors.end()) {
        std::vector<int> ms = spec.majors;
        std::sort(ms.begin(), ms.end());
        std::string majors;
        for (int m : ms) majors += fmt::format("{}{}'s", majors.empty() ? "" : " or ", m);
        return fmt::format(
            "it is CUDA {}'s {}, and jitexpr uses CUDA {} (`pip install \"jitexpr[cuda12]\"` or "
            "`\"jitexpr[cuda13]\"`)",
            major, spec.label, majors);
    }
    const int driver_major = driver_version / 1000;
    if (driver_version <= 0 || major <= driver_major) return {};
    const int oldest = *std::min_element(spec.majors.begin(), spec.majors.end());
    const std::string fix =
        driver_major < oldest
            ? fmt::format("update the NVIDIA driver to one of CUDA {} or newer", oldest)
            : fmt::format("update the NVIDIA driver, or `pip install \"jitexpr[cuda{}]\"`", driver_major);
    return fmt::format(
        "it is CUDA {}'s {}, newer than the driver, which supports CUDA {}.{}: the kernels it makes "
        "would not load ({})",
        major, spec.label, driver_major, driver_version % 1000 / 10, fix);
}

struct Library {
    std::once_flag locate_once, load_once;
    Located located;
    void* handle = nullptr;
    std::string error;               // why loading failed
    std::atomic<bool> ready{false};  // loaded, every entry point resolved
};

Library& nvrtc_library() {
    static Library* l = new Library;  // never destroyed: other threads may use it during exit
    return *l;
}
Library& nvjitlink_library() {
    static Library* l = new Library;
    return *l;
}

const Located& located(const LibrarySpec& spec, Library& lib) {
    std::call_once(lib.locate_once, [&] {
        // The driver's version only matters when there are wheels to weigh (it maps libcuda).
        const std::vector<std::string> wheels = wheel_library_dirs();
        lib.located = locate_in(spec, env(spec.env), system_library_dirs(), wheels,
                                wheels.empty() ? 0 : installed_driver_version());
    });
    return lib.located;
}

template <class Fn>
bool sym(void* h, Fn& fn, const char* name, std::string& missing) {
    fn = reinterpret_cast<Fn>(::dlsym(h, name));
    if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(name);
    return fn != nullptr;
}

// dlopens the located library (the loader's own search by name when nothing was located);
// on failure records why in lib.error.
void open(const LibrarySpec& spec, Library& lib) {
    const Located& loc = located(spec, lib);
    std::vector<std::string> tries;
    if (loc.found) {
        tries.push_back(loc.path);
    } else if (env(spec.env).empty()) {
        for (int m : spec.majors) tries.push_back(fmt::format("{}.{}", spec.stem, m));
    }
    std::string errors;
    for (const std::string& path : tries) {
        if (spec.builtins && path.find('/') != std::string::npos) {
            // NVRTC opens libnvrtc-builtins.so.X.Y by name on its first compile: the one beside
            // it, loaded first, is what that name resolves to whatever the loader's path.
            const std::string dir = dirname_of(path);
            const int v = builtins_version(dir, major_of(path, spec.stem));
            if (v > 0) {
                const std::string b = fmt::format("{}/libnvrtc-builtins.so.{}.{}", dir, v / 1000, v % 1000 / 10);
                if (!::dlopen(b.c_str(), RTLD_NOW | RTLD_LOCAL)) {
                    const char* e = ::dlerror();
                    errors += fmt::format("; {}: {}", b, e ? e : "cannot be loaded");
                    continue;
                }
            }
        }
        // RTLD_LOCAL: reached only through dlsym. Never closed.
        if (void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
            lib.handle = h;
            if (!loc.found) {
                link_map* map = nullptr;
                lib.located.how = "the dynamic loader";
                lib.located.path = ::dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name ? map->l_name : path;
                lib.located.found = true;
                lib.located.version = version_of(spec, lib.located.path);
            }
            return;
        }
        const char* e = ::dlerror();
        errors += fmt::format("; {}: {}", path, e ? e : "cannot be loaded");
    }
    if (tries.empty()) errors = "; " + loc.why;
    else if (!loc.found) errors = "; " + loc.why + errors;
    lib.error = fmt::format("{} could not be loaded{}", spec.label, errors);
}

}  // namespace

const LibrarySpec& nvrtc_spec() {
    static const LibrarySpec s{"NVRTC", "JITEXPR_NVRTC", "libnvrtc.so", {13, 12}, true};
    return s;
}

const LibrarySpec& nvjitlink_spec() {
    static const LibrarySpec s{"nvJitLink", "JITEXPR_NVJITLINK", "libnvJitLink.so", {13, 12}, false};
    return s;
}

Located locate_in(const LibrarySpec& spec, const std::string& env_value, const std::vector<std::string>& system_dirs,
                  const std::vector<std::string>& wheel_dirs, int driver_version) {
    Located r;
    auto take = [&](const std::string& file, const char* how) {
        r.found = true;
        r.path = file;
        r.how = how;
        r.version = version_of(spec, file);
        return r;
    };
    if (!env_value.empty()) {
        if (is_file(env_value)) return take(env_value, spec.env);
        if (is_dir(env_value)) {
            if (std::string f = find_in(spec, env_value); !f.empty()) return take(f, spec.env);
            r.why = fmt::format("{}={} is a folder without {}", spec.env, env_value, names_of(spec));
        } else {
            r.why = fmt::format("{}={} names no file or folder", spec.env, env_value);
        }
        return r;
    }
    for (const auto& d : system_dirs)
        if (std::string f = find_in(spec, d); !f.empty()) return take(f, "the system toolkit");
    // Among NVIDIA's wheels the newest usable major wins whichever folder holds it: CUDA 13's
    // wheels share nvidia/cu13/lib, CUDA 12's have nvidia/cuda_nvrtc/lib and nvidia/nvjitlink/lib.
    const std::vector<WheelFile> files = wheel_files(spec, wheel_dirs);
    const WheelFile* best = nullptr;
    for (const WheelFile& w : files) {
        if (std::string why = unusable(spec, w.major, driver_version); !why.empty()) {
            r.skipped.push_back({w.path, std::move(why)});
        } else if (!best || w.major > best->major) {
            best = &w;
        }
    }
    if (best) return take(best->path, "an NVIDIA wheel");
    r.why = fmt::format(
        "{} not found: none of {} in the system toolkit's folders ({}) or in an NVIDIA wheel's{}{}; "
        "install the CUDA toolkit, or `pip install {}`, or set {} to the library",
        spec.label, names_of(spec), list_dirs(system_dirs), wheel_dirs.empty() ? "" : " (",
        wheel_dirs.empty() ? "" : list_dirs(wheel_dirs) + ")", spec.builtins ? "nvidia-cuda-nvrtc" : "nvidia-nvjitlink",
        spec.env);
    for (const Skipped& k : r.skipped)
        r.why += fmt::format("{} {} was skipped: {}", &k == &r.skipped.front() ? ";" : ",", k.path, k.reason);
    return r;
}

std::vector<std::string> system_library_dirs() {
    std::vector<std::string> dirs = split(env("LD_LIBRARY_PATH"), ':');
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
        const std::string root = env(var);
        if (root.empty()) continue;
        dirs.push_back(root + "/lib64");
        dirs.push_back(root + "/" + kTargetDir);
        dirs.push_back(root + "/lib");
    }
    dirs.push_back("/usr/local/cuda/lib64");
    dirs.push_back(std::string("/usr/local/cuda/") + kTargetDir);
    dirs.push_back("/usr/local/cuda/lib");
    read_ld_conf("/etc/ld.so.conf", dirs, 0);
    if (*kMultiarch) {
        dirs.push_back(std::string("/lib/") + kMultiarch);
        dirs.push_back(std::string("/usr/lib/") + kMultiarch);
    }
    for (const char* d : {"/usr/lib64", "/usr/lib", "/lib64", "/lib"}) dirs.push_back(d);
    std::vector<std::string> unique;
    for (auto& d : dirs)
        if (std::find(unique.begin(), unique.end(), d) == unique.end() && is_dir(d)) unique.push_back(d);
    return unique;
}

std::vector<std::string> wheel_library_dirs() {
    // The folder of the binary or shared module this code is part of: site-packages/jitexpr/
    // for the Python package, whose parent holds the nvidia/ namespace of NVIDIA's wheels.
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&wheel_library_dirs), &info) == 0 || !info.dli_fname) return {};
    char* real = ::realpath(info.dli_fname, nullptr);
    if (!real) return {};
    const std::string here = dirname_of(real);
    std::free(real);
    std::vector<std::string> out;
    for (const std::string& root : {dirname_of(here) + "/nvidia", here + "/nvidia"}) {
        DIR* d = ::opendir(root.c_str());
        if (!d) continue;
        std::vector<std::string> subs;
        while (const dirent* e = ::readdir(d)) {
            const std::string name = e->d_name;
            if (name == "." || name == "..") continue;
            if (is_dir(root + "/" + name + "/lib")) subs.push_back(root + "/" + name + "/lib");
        }
        ::closedir(d);
        std::sort(subs.begin(), subs.end());  // a fixed order; locate_in takes the newest major of all
        out.insert(out.end(), subs.begin(), subs.end());
    }
    return out;
}

const Located& located_nvrtc() { return located(nvrtc_spec(), nvrtc_library()); }
const Located& located_nvjitlink() { return located(nvjitlink_spec(), nvjitlink_library()); }

const Nvrtc& nvrtc() {
    static Nvrtc* api = new Nvrtc;
    Library& lib = nvrtc_library();
    std::call_once(lib.load_once, [&] {
        open(nvrtc_spec(), lib);
        if (!lib.handle) return;
        std::string missing;
        Nvrtc& n = *api;
        sym(lib.handle, n.Version, "nvrtcVersion", missing);
        sym(lib.handle, n.GetErrorString, "nvrtcGetErrorString", missing);
        sym(lib.handle, n.GetNumSupportedArchs, "nvrtcGetNumSupportedArchs", missing);
        sym(lib.handle, n.GetSupportedArchs, "nvrtcGetSupportedArchs", missing);
        sym(lib.handle, n.CreateProgram, "nvrtcCreateProgram", missing);
        sym(lib.handle, n.DestroyProgram, "nvrtcDestroyProgram", missing);
        sym(lib.handle, n.CompileProgram, "nvrtcCompileProgram", missing);
        sym(lib.handle, n.GetProgramLogSize, "nvrtcGetProgramLogSize", missing);
        sym(lib.handle, n.GetProgramLog, "nvrtcGetProgramLog", missing);
        sym(lib.handle, n.GetPTXSize, "nvrtcGetPTXSize", missing);
        sym(lib.handle, n.GetPTX, "nvrtcGetPTX", missing);
        sym(lib.handle, n.GetCUBINSize, "nvrtcGetCUBINSize", missing);
        sym(lib.handle, n.GetCUBIN, "nvrtcGetCUBIN", missing);
        if (!missing.empty()) {
            lib.error = fmt::format("NVRTC at {} is too old for jitexpr (CUDA 11.2 or newer needed): it has no {}",
                                    lib.located.path, missing);
            lib.handle = nullptr;
        }
        lib.ready.store(lib.handle != nullptr);
    });
    if (!lib.handle) throw NoDeviceError(fmt::format("cannot compile CUDA kernels: {}", lib.error));
    return *api;
}

const NvJitLink& nvjitlink() {
    static NvJitLink* api = new NvJitLink;
    Library& lib = nvjitlink_library();
    std::call_once(lib.load_once, [&] {
#if JITEXPR_HAVE_NVJITLINK
        open(nvjitlink_spec(), lib);
        if (!lib.handle) return;
        std::string missing;
        NvJitLink& n = *api;
        sym(lib.handle, n.Create, "nvJitLinkCreate", missing);
        sym(lib.handle, n.Destroy, "nvJitLinkDestroy", missing);
        sym(lib.handle, n.AddData, "nvJitLinkAddData", missing);
        sym(lib.handle, n.Complete, "nvJitLinkComplete", missing);
        sym(lib.handle, n.GetLinkedCubinSize, "nvJitLinkGetLinkedCubinSize", missing);
        sym(lib.handle, n.GetLinkedCubin, "nvJitLinkGetLinkedCubin", missing);
        sym(lib.handle, n.GetErrorLogSize, "nvJitLinkGetErrorLogSize", missing);
        sym(lib.handle, n.GetErrorLog, "nvJitLinkGetErrorLog", missing);
        if (!missing.empty()) {
            lib.error = fmt::format("nvJitLink at {} lacks {}", lib.located.path, missing);
            lib.handle = nullptr;
        }
        lib.ready.store(lib.handle != nullptr);
#else
        lib.error = "jitexpr was built without nvJitLink's header (nvJitLink.h)";
#endif
    });
    if (!lib.handle) throw NoDeviceError(fmt::format("cannot assemble PTX: {}", lib.error));
    return *api;
}

bool nvrtc_loaded() { return nvrtc_library().ready.load(); }
bool nvjitlink_loaded() { return nvjitlink_library().ready.load(); }

std::string nvrtc_error() { return nvrtc_loaded() ? std::string() : nvrtc_library().error; }
std::string nvjitlink_error() { return nvjitlink_loaded() ? std::string() : nvjitlink_library().error; }

}  // namespace jit::cuda::detail

namespace jit::cuda {
namespace {
template <class Load>
LibraryStatus status(const detail::Located& where, bool load, Load&& do_load, bool (*loaded)(),
                     std::string (*error)()) {
    if (load) {
        try {
            (void)do_load();
        } catch (const NoDeviceError&) {}
    }
    LibraryStatus s;
    s.found = where.found;
    s.path = where.path;
    s.how = where.how;
    s.version = where.version;
    s.loaded = loaded();
    s.error = s.found ? error() : where.why;
    for (const auto& k : where.skipped) s.skipped.push_back({k.path, k.reason});
    if (s.error.empty() && !s.found) s.error = error();
    return s;
}
}  // namespace

LibraryStatus nvrtc_status(bool load) {
    LibraryStatus s = status(
        detail::located_nvrtc(), load, [] { return &detail::nvrtc(); }, &detail::nvrtc_loaded, &detail::nvrtc_error);
    if (s.loaded && s.version == 0) s.version = nvrtc_version();
    return s;
}

LibraryStatus nvjitlink_status(bool load) {
    return status(
        detail::located_nvjitlink(), load, [] { return &detail::nvjitlink(); }, &detail::nvjitlink_loaded,
        &detail::nvjitlink_error);
}

Found found(bool load_compilers) {
    Found f;
    f.available = available(&f.reason);
    if (f.available) f.reason.clear();
    else f.driver_version = driver_version();  // a driver without a usable device still has a version
    if (f.available) {
        for (int d = 0;; ++d) {
            try {
                const DeviceInfo& dev = device_info(d);
                f.driver_version = dev.driver_version;
                f.devices.push_back(dev);
            } catch (const ArgumentError&) {
                break;
            }
        }
    }
    f.nvrtc = nvrtc_status(load_compilers);
    f.nvjitlink = nvjitlink_status(load_compilers);
    return f;
}

}  // namespace jit::cuda
