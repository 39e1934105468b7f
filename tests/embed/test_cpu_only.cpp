// A program that evaluates only on the CPU maps nothing of CUDA (issue 17, item 13): NVRTC and
// nvJitLink (about 200 MiB of mappings) are opened when CUDA first compiles, so a CPU run starts
// under a small address-space limit (`ulimit -v`; the CLI's run under 64 MiB is in
// tests/cli/test_reliability.py).
#include <jit/jit.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> mapped_files() {
    std::ifstream maps("/proc/self/maps");
    std::vector<std::string> files;
    for (std::string line; std::getline(maps, line);)
        if (auto slash = line.find('/'); slash != std::string::npos) files.push_back(line.substr(slash));
    return files;
}

TEST(CpuOnly, ACpuRunMapsNeitherNvrtcNorNvJitLinkNorTheDriver) {
    jit::RuntimeOptions o;
    o.backend = jit::Backend::Cpu;
    o.disk_cache = false;
    jit::Runtime rt(o);
    jit::Environment env{{"a", jit::Arg(jit::Array::from(std::vector<float>{1, 2, 3}, {}, jit::Backend::Cpu))}};
    rt.run("c = sum(a * 2 + 1)", env);
    EXPECT_EQ(env.at("c").array().to_vector<float>(), (std::vector<float>{15}));
    ASSERT_FALSE(mapped_files().empty()) << "/proc/self/maps is readable";
    for (const std::string& f : mapped_files()) {
        EXPECT_EQ(f.find("libnvrtc"), std::string::npos) << f;
        EXPECT_EQ(f.find("libnvJitLink"), std::string::npos) << f;
        EXPECT_EQ(f.find("libcuda.so"), std::string::npos) << f;
    }
}

}  // namespace
