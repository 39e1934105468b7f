// jitexpr — what the API layer asks of a backend (CPU or CUDA).
//
// The API layer turns text into an ir::Plan with dsl::plan (within the backend's limits()),
// allocates the outputs (shapes and dtypes come from the program), then asks the backend to
// prepare the plan once and run it many times. A Prepared object is what the front cache
// keeps: a hit skips parse, check and emit.
#pragma once

#include "backend/call_control.hpp"
#include "dsl/ir.hpp"
#include "dsl/plan.hpp"
#include "dsl/schedule.hpp"

#include <jit/array.hpp>
#include <jit/error.hpp>

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace jit::detail {

// Memory a backend could not have for the part of the program at `where` (the span of the
// node its stage computes: `median(x)`, a statement's value). The backend knows the node, not
// the text; Runtime rethrows it with a caret there (OutOfMemoryError::at).
class OutOfMemoryAt : public OutOfMemoryError {
public:
    OutOfMemoryAt(const OutOfMemoryError& e, SourceSpan span) : OutOfMemoryError(e), where(span) {}
    SourceSpan where;
};

// Makes the arrays of outputs whose first extent the data decides (a boolean-mask selection,
// ir::NodeKind::Compact): the backend counts first, then asks for the array.
class OutputAllocator {
public:
    virtual ~OutputAllocator() = default;
    // A new C-contiguous array of output `output`'s dtype, of `shape`, on the backend's device.
    virtual Array allocate(std::size_t output, const Shape& shape) = 0;
};

// The arrays of a call's inputs, read as a span of arrays: contiguous (a vector of them), or
// each where the caller holds it (RunInputs::at: a call that binds its arguments as they are,
// without copying the arrays, whose shared counts are atomic).
class RunInputs {
public:
    RunInputs() = default;
    RunInputs(std::span<const Array> arrays) : arrays_(arrays.data()), n_(arrays.size()) {}
    RunInputs(const std::vector<Array>& arrays) : arrays_(arrays.data()), n_(arrays.size()) {}
    static RunInputs at(std::span<const Array* const> pointers) {
        RunInputs r;
        r.pointers_ = pointers.data();
        r.n_ = pointers.size();
        return r;
    }
    std::size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    const Array& operator[](std::size_t i) const { return pointers_ ? *pointers_[i] : arrays_[i]; }

    class iterator {
    public:
        iterator(const RunInputs* r, std::size_t i) : r_(r), i_(i) {}
        const Array& operator*() const { return (*r_)[i_]; }
        iterator& operator++() {
            ++i_;
            return *this;
        }
        bool operator!=(const iterator& o) const { return i_ != o.i_; }

    private:
        const RunInputs* r_;
        std::size_t i_;
    };
    iterator begin() const { return {this, 0}; }
    iterator end() const { return {this, n_}; }

private:
    const Array* arrays_ = nullptr;
    const Array* const* pointers_ = nullptr;
    std::size_t n_ = 0;
};

struct RunArgs {
    RunInputs inputs;                     // one per Program::inputs, shapes/strides as declared
    std::span<const ir::Value> scalars;   // one per Program::scalars, already of the declared dtype
    std::span<Array> outputs;             // one per Program::outputs, allocated (or the aliased
                                          // input's memory), shape of the output node; may be strided.
                                          // A Compact output is empty: the backend sets it from
                                          // allocate once it has counted.
    OutputAllocator* allocate = nullptr;  // for Compact outputs (required when there are any)
    void* stream = nullptr;               // CUstream for CUDA (nullptr: the default stream)
    // Stop requests and progress (null: none). A backend that sees stop_requested() at a safe
    // point throws CancelledError; work it has not started is never started.
    CallControl* control = nullptr;
    // When given, one flag per output: the backend sets flag o before it starts work that writes
    // output o, so that a cancelled call can name the in-place targets it may have partly written.
    bool* started_outputs = nullptr;
};

struct PrepareOptions {
    bool fast_math = false;
    std::vector<std::string> nvrtc_options;  // CUDA: appended to the NVRTC command line
    bool tiered = false;                     // CUDA: scalar-only kernels first, full ones in the background
    bool ptx_first_tier = true;              // CUDA, tiered: Flat kernels of tier 1 written as PTX where possible
    // Valid during prepare() only (never kept): compile progress and stop requests between compiles.
    CallControl* control = nullptr;
};

// Timing of the last prepare, for :time and stats.
struct PrepareInfo {
    bool module_cache_hit = false;  // CUDA: the compiled module came from the cache
    double emit_ms = 0, compile_ms = 0, load_ms = 0;
};

class Prepared {
public:
    virtual ~Prepared() = default;
    virtual void run(const RunArgs& args) = 0;
    // CUDA: the generated source of every kernel, for :source and JITEXPR_SHOW_KERNELS.
    virtual std::string source() const { return {}; }
    virtual PrepareInfo info() const { return {}; }
};

// What `explain` shows of one kernel a backend runs for a stage of a plan (Runtime::explain).
// Every field is a short phrase for people; nothing here is compiled or loaded to find it.
struct KernelReport {
    int stage = 0;       // index into Schedule::stages
    std::string name;    // CUDA: the generated kernel name; CPU: empty
    std::string kind;    // "flat", "strided", "tiled", "reduce-all", "reduce-axis"; CPU: "blocks", "reduce blocks"
    std::string index;   // index width: "32-bit", "64-bit", "32-bit when offsets fit, else 64-bit"
    std::string vector;  // vector width: "4 x float32 (128-bit) when aligned", "none"
    std::string tier;    // CUDA: "full", or what a tiered first run starts on; CPU: "-"
    std::string cache;   // "memory", "disk", "not compiled"; CPU: "no compile (...)"
    std::string detail;  // more, backend-specific (launch shape, instructions)
    // CPU: the first stage of the group of stages run in one pass over memory with this one
    // (each input is read from memory once per pass), or -1.
    int pass = -1;
};

class BackendImpl {
public:
    virtual ~BackendImpl() = default;
    virtual Backend kind() const = 0;
    // What the backend could not set up as asked and how it runs instead (the CPU backend's
    // threads that could not start); empty when everything is as asked.
    virtual std::string setup_note() const { return {}; }
    // What one stage of this backend may compute: the limits dsl::plan schedules within.
    virtual dsl::Limits limits() const = 0;
    // `plan` was made by dsl::plan within limits(); the backend runs its schedule as it is.
    virtual std::shared_ptr<Prepared> prepare(const ir::Plan& plan, const PrepareOptions& options) = 0;
    // The kernels prepare(plan, options) would make, one per stage, and whether each is compiled
    // already (memory, disk) -- without compiling, loading or launching anything.
    virtual std::vector<KernelReport> explain(const ir::Plan& plan, const PrepareOptions& options) const = 0;
};

}  // namespace jit::detail
