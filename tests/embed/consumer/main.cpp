// Consumer of the installed package (C++ API and DLPack): exits 0 when the results are right.
#include <jit/interop.hpp>
#include <jit/jit.hpp>

#include <cstdio>
#include <vector>

int main() {
    jit::RuntimeOptions o;
    o.backend = jit::Backend::Cpu;
    o.disk_cache = false;
    jit::Runtime rt(o);
    jit::Array a = jit::Array::from(std::vector<float>{1, 2, 3}, {}, jit::Backend::Cpu);
    jit::Array b = jit::Array::from(std::vector<float>{4, 5, 6}, {}, jit::Backend::Cpu);
    jit::Array c = jit::from_dlpack(jit::to_dlpack(rt.eval("c = a * 2 + b", {a, b})));
    const std::vector<float> v = c.to_vector<float>();
    if (v != std::vector<float>{6, 9, 12}) {
        std::fprintf(stderr, "consumer_cpp: wrong result\n");
        return 1;
    }
    std::printf("consumer_cpp: ok\n");
    return 0;
}
