// jitexpr — sharded evaluation: one program over inputs split by rows across devices.
//
//   jit::ShardedRuntime rt({0, 1});                                  // a runtime per CUDA device
//   jit::Sharded a = jit::Sharded::split(host_a, {0, 1});            // rows 0..n/2 on GPU 0, the rest on GPU 1
//   jit::Sharded b = jit::Sharded::split(host_b, {0, 1});
//   jit::Sharded c = rt.eval("a * 2 + b", {{"a", a}, {"b", b}});     // c is split as a and b are
//   jit::Sharded s = rt.eval("sum(a * b)", {{"a", a}, {"b", b}});    // s.whole(): one value, combined
//
// Each shard is evaluated on its own device by that device's runtime, all shards at once (one
// thread per shard). Every copy is one the caller asks for: split(), replicate() and gather()
// copy; eval() copies only the per-device partial values of a reduction (a few elements each) to
// the host to combine them.
#pragma once

#include <jit/array.hpp>
#include <jit/runtime.hpp>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace jit {

// An array in pieces over devices. Three kinds:
//  - Split: shard i holds a block of rows (axis 0) of the whole, in order, on its own device;
//  - Replicated: every shard holds the whole array (an input that broadcasts, such as a row
//    vector added to every row), one copy per device;
//  - Whole: one array (the combined value of a reduction across the shards).
class Sharded {
public:
    enum class Kind { Split, Replicated, Whole };

    Sharded() = default;
    // Row blocks, in order (shard i is rows [sum of earlier extents, + shape()[0]) of the whole).
    // All of one dtype, the same number of dimensions (at least 1) and the same extents beyond
    // axis 0, each on one device (its backend and device() tell which); string shards may differ
    // in width (S3 and S5; int32 and int64 offsets). ArgumentError otherwise.
    static Sharded from_shards(std::vector<Array> shards);
    // One copy of the whole array per device, as given (the caller made the copies).
    static Sharded from_replicas(std::vector<Array> replicas);
    static Sharded from_whole(Array whole);

    // Copies `whole` by rows into len(devices) blocks as equal as possible (the first ones one
    // row longer), block i to device devices[i] of `backend`. A device may appear twice.
    static Sharded split(const Array& whole, const std::vector<int>& devices, Backend backend = Backend::Cuda);
    // Copies `whole` once to each device.
    static Sharded replicate(const Array& whole, const std::vector<int>& devices, Backend backend = Backend::Cuda);

    Kind kind() const { return kind_; }
    const std::vector<Array>& shards() const { return parts_; }
    DType dtype() const;
    Shape shape() const;  // of the whole array
    // The whole array as one C-contiguous copy on `backend`/`device` (the shards' rows in
    // order; a replica; or the whole value). String columns too: S and U rows at the widest
    // shard's width (np.concatenate's), an Arrow string column's bytes concatenated with its
    // offsets rebased from 0 (int64 where any shard's are).
    Array gather(Backend backend = Backend::Cpu, int device = 0) const;
    // The value of a Whole (ArgumentError for the other kinds).
    const Array& whole() const;

private:
    Kind kind_ = Kind::Whole;
    std::vector<Array> parts_;
};

// A name's value for ShardedRuntime::eval: a Sharded array, or a host scalar every shard shares.
using ShardedArg = std::variant<Sharded, Arg>;
using ShardedEnvironment = std::map<std::string, ShardedArg, std::less<>>;

// What ShardedRuntime::eval gives: the last statement's value and every assigned name.
struct ShardedResult {
    Sharded value;
    std::map<std::string, Sharded, std::less<>> assigned;
};

class ShardedRuntime {
public:
    // A runtime per distinct device of `devices`, each made with `options` (its device replaced).
    // options.backend Auto means Cuda here (a CPU "device list" is {0}: the host has one device,
    // and {0, 0} splits over two CPU shards, which is how the CPU tests exercise this class).
    explicit ShardedRuntime(std::vector<int> devices, RuntimeOptions options = RuntimeOptions::from_environment());
    ~ShardedRuntime();
    ShardedRuntime(const ShardedRuntime&) = delete;
    ShardedRuntime& operator=(const ShardedRuntime&) = delete;

    const std::vector<int>& devices() const;
    Backend backend() const;
    // The runtime of device `device` (one of devices()).
    Runtime& runtime(int device);

    // Evaluates `text` over the shards. Split inputs must all have the same number of shards on
    // the same devices with the same row counts; Replicated inputs have one replica per shard on
    // the same devices; scalars are shared. Each statement's value is:
    //  - Split, when it is computed row by row from split inputs (its axis 0 is their axis 0);
    //  - Whole, when the statement's whole value is a reduction over axis 0 of split data
    //    (`s = sum(a * b)`, `m = max(a, axis=0)`; sum, prod, min, max, any, all, mean): each
    //    device reduces its rows and the partial values are combined on the host;
    //  - Replicated, when it reads no split data.
    // Anything else is an ArgumentError saying why, before any device runs anything: a
    // reduction inside a larger expression (`sum(a) * 2`: make it a statement of its own),
    // a statement that reads a combined value (evaluate a second program), std/var/argmin/argmax
    // over the split axis, a split input whose axis 0 is not the result's axis 0. Parse, name,
    // type and shape errors are those of jit::check, with the caret.
    ShardedResult run(std::string_view text, const ShardedEnvironment& env);
    // run(text, env).value.
    Sharded eval(std::string_view text, const ShardedEnvironment& env);
    // What run(text, env) would do, in words, running nothing: the shards (rows and devices),
    // what each statement gives (split, one value combined from the shards' partials, replicated),
    // then the plan of shard 0 over its rows as Runtime::explain prints it (every shard runs the
    // same statements over its own rows). A program run() refuses is refused here the same way.
    std::string explain(std::string_view text, const ShardedEnvironment& env, const ExplainOptions& options = {});

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace jit
