// The smallest jitexpr program: c = a * 2 + b on the default backend (CUDA when present).
#include <jit/jit.hpp>

#include <cstdio>
#include <vector>

int main() {
    try {
        std::vector<float> ha(1 << 20), hb(1 << 20);
        for (std::size_t i = 0; i < ha.size(); ++i) ha[i] = static_cast<float>(i % 100), hb[i] = 0.5f;
        jit::Array a = jit::Array::from(ha), b = jit::Array::from(hb);
        jit::Array c = jit::eval("c = a * 2 + b", {{"a", a}, {"b", b}});
        std::vector<float> hc = c.to_vector<float>();
        std::printf("backend %s: c[0..3] = %g %g %g %g (%s)\n", std::string(jit::backend_name(c.backend())).c_str(),
                    hc[0], hc[1], hc[2], hc[3], c.describe().c_str());
        const double s = jit::eval("sum(a * b)", {{"a", a}, {"b", b}}).item<double>();
        std::printf("sum(a * b) = %g\n", s);
        return 0;
    } catch (const jit::Error& e) {
        std::fprintf(stderr, "quickstart: %s\n", e.what());
        return 1;
    }
}
