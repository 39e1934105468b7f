// Default AddressSanitizer options of every executable of a JITEXPR_SANITIZE build (the
// variable ASAN_OPTIONS still adds to and overrides them).
//
// intercept_tls_get_addr=0: the sanitizer runtime of GCC up to 13 (and LLVM up to 16) decides
// that a dynamic TLS block carries the header glibc 2.19 put before it whenever the block's
// address is 16 bytes past a page boundary, and then takes the two words before the block as its
// address and size. glibc 2.25 and later have no such header; a block that lands there by chance
// gets a bogus range, and LeakSanitizer's exit-time scan of it ends in "Tracer caught signal 11".
// The blocks here are those of NVRTC and nvJitLink (dlopen'ed, with TLS of their own): with
// LSAN_OPTIONS=verbosity=1 the last line before the crash read "DTLS 7 at
// 0x0000000013a5-0x0020000024a7", 6 crashes in 6 runs of
// PtxTier.ADeviceFunctionIsCompiledOnceForEveryKernelThatCallsIt, 0 in 6 with this option.
// Leak checking itself stays on in every process (the test sanitizer_detects_leaks proves it);
// what is given up is the scan of dynamic TLS for pointers, which can only add reports, never
// hide one.
extern "C" const char* __asan_default_options() { return "intercept_tls_get_addr=0"; }
