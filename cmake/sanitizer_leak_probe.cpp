// A program that leaks on purpose: under JITEXPR_SANITIZE its exit must report the leak
// (test sanitizer_detects_leaks), so the sanitizer pass is known to check for leaks.
#include <cstdio>
#include <cstdlib>

int main() {
    void* volatile leaked = std::malloc(4096);
    leaked = nullptr;
    std::puts("leaked 4096 bytes");
    return 0;
}
