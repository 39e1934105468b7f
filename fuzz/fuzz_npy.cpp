// libFuzzer target: bytes as a .npy file through jit::parse_npy (CPU arrays). A file is either
// rejected with jit::IOError, as npy.hpp documents, or loaded; a loaded array must survive a
// round trip (to_npy_bytes, parse_npy again) with the same dtype, shape and element bytes, and
// writing it twice gives the same file. Anything else is a finding.
#include <jit/array.hpp>
#include <jit/error.hpp>
#include <jit/npy.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

std::string host_bytes(const jit::Array& a) {
    std::string s(a.nbytes(), '\0');
    if (!s.empty()) a.copy_to_host(s.data());
    return s;
}

[[noreturn]] void finding(const char* what) {
    std::fprintf(stderr, "fuzz_npy: %s\n", what);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    jit::Array a;
    try {
        a = jit::parse_npy(bytes, jit::Backend::Cpu, "fuzz.npy");
    } catch (const jit::IOError&) {
        return 0;  // the documented rejection
    }
    if (!a.defined() || a.backend() != jit::Backend::Cpu || !a.is_contiguous())
        finding("loaded array is not a contiguous CPU array");
    if (a.ndim() > jit::kMaxDims) finding("more dimensions than kMaxDims");
    const std::string file = jit::to_npy_bytes(a);
    const jit::Array b = jit::parse_npy(file, jit::Backend::Cpu, "round-trip.npy");
    if (b.dtype() != a.dtype() || b.shape() != a.shape()) finding("round trip changed the dtype or shape");
    if (host_bytes(a) != host_bytes(b)) finding("round trip changed the elements");
    if (jit::to_npy_bytes(b) != file) finding("writing the same array twice gave different files");
    return 0;
}
