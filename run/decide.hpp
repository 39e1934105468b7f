// jitexpr — how a call runs, decided once: run::decide returns a value that Runtime::explain
// prints and the runtime executes (run/ways.hpp), never derived a second time.
//
//   Direct    the arrays are on the runtime's backend and device: the prepared program runs
//             over them as they are (every call on the CPU, device arrays on CUDA).
//   Cpu       host arrays given to a CUDA runtime under Backend::Auto, kept on the CPU: too
//             little data for the GPU to be worth its copies, or the cost model (the link's
//             bytes per second against the CPU backend's, measured once per machine) expects
//             the CPU as fast, or the program fits neither streamed nor whole.
//   Streamed  host arrays through the GPU in chunks of rows (run/chunks.hpp says how).
//   Copied    host arrays copied whole to the device and the results back, when the program
//             cannot be streamed (the reason is kept) and fits the device memory it may use.
//   TooLarge  neither streamed nor fitting, on Backend::Cuda: the run is an OutOfMemoryError.
//   Sharded   arrays in row blocks on several devices (jit::ShardedRuntime), each block on its
//             device, reductions' partials combined on the host (run/shards.hpp says how).
#pragma once

#include "dsl/plan.hpp"
#include "run/chunks.hpp"
#include "run/shards.hpp"

#include <jit/array.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace jit::run {

// Host data below this many bytes (inputs and outputs) stays on the CPU under Backend::Auto:
// the copies, a kernel compile and the pipeline's start cost more than the CPU's loop.
constexpr std::uint64_t kAutoMinBytes = std::uint64_t{64} << 20;
// Host data below this many bytes on a CUDA runtime is copied whole: the streamed pipeline's
// pinned buffers, events and second stream cost more than the copies they would overlap.
constexpr std::uint64_t kCopyWholeBelow = std::uint64_t{1} << 20;
// Under Auto the GPU is chosen only when the cost model expects it this many times faster.
constexpr double kAutoMargin = 1.5;

// Bytes per second of the link and of the CPU backend, measured once per machine (kept in the
// disk cache) and once per process (Machine::host_model).
struct HostModel {
    double link_gbs = 0;  // min(pinned host -> device, staging of pageable memory)
    double cpu_gbs = 0;   // the CPU backend on a memory-bound program, bytes read and written
    std::string source;   // "measured", "the disk cache"
};

// What decide() asks of the machine, and only when the call needs it (host data on CUDA):
// run::Machine answers; tests give their own.
class Probe {
public:
    virtual ~Probe() = default;
    // A runtime under Backend::Auto that has not started its backend (Request::backend is Auto):
    // starts it now, the CUDA driver (cuInit, the device's primary context) when there is one,
    // and returns the backend, Cuda or Cpu. Asked only for host data that the GPU may be worth.
    virtual Backend start() = 0;
    virtual const HostModel& host_model() = 0;
    // The host model as far as it is known without starting anything, or nullptr: the figures
    // this machine's last process that had them kept in the disk cache (keyed by the CPU, not
    // the device, which only the driver can name). decide() asks it before Probe::start, so
    // that host data the model keeps on the CPU starts no driver; a first run, or one without
    // the disk cache, starts the backend and measures.
    virtual const HostModel* known_host_model() = 0;
    // The device memory a call may use now: device_memory_limit within 90% of the free memory,
    // else 80% of the free memory.
    virtual std::size_t device_budget() = 0;
    // Whether the driver offers what streaming needs (streams, events, pinned memory).
    virtual bool can_stream() = 0;
};

// Where the arrays bound to the program's names are.
struct Where {
    bool host = false;       // some on the host
    bool on_device = false;  // some on a device
};

enum class Way : std::uint8_t { Direct, Cpu, Streamed, Copied, TooLarge, Sharded };

// What a GPU would do with host data, for a CPU runtime under Backend::Auto on a machine without
// one (explain says it).
struct OnAGpu {
    bool small = false;        // below kAutoMinBytes: kept on the CPU without weighing
    bool limit = false;        // device_memory_limit is set: `chunks` is its plan
    chunks::ChunkPlan chunks;  // under device_memory_limit, when `limit`
    std::size_t device_memory_limit = 0;
};

struct Decision {
    Way way = Way::Direct;
    std::string why;           // Cpu: the reason; Copied / TooLarge: why it is not streamed
    std::string model;         // under Auto, when the GPU was chosen: the cost model's sentence and "; "
    chunks::ChunkPlan chunks;  // host data on CUDA: how it streams (or chunks.why_not)
    std::size_t budget = 0;    // host data on CUDA: the device memory the call may use
    std::uint64_t in_bytes = 0, out_bytes = 0;  // host data: the inputs' and outputs' bytes
    std::optional<OnAGpu> on_a_gpu;             // a CPU runtime under Auto, host data: see OnAGpu
    std::optional<shards::Sharding> sharding;   // Sharded: the shards and what each statement gives
};

struct Request {
    Backend asked = Backend::Cpu;  // RuntimeOptions::backend (Auto, Cuda or Cpu)
    // The runtime's: Cuda or Cpu, or Auto while a runtime under Backend::Auto has not started
    // one (no call has needed the GPU yet: decide() starts it through Probe::start only when
    // the host data is not too small for the GPU, so that CPU work never starts the driver).
    Backend backend = Backend::Cpu;
    Where where;
    // Host data only (never read for a Direct call on a CUDA runtime): the plan made for the
    // host arrays, and its inputs as bound (views applied), one per Program::inputs.
    const ir::Plan* plan = nullptr;
    std::span<const Array> inputs;
    bool all_or_nothing = false;          // CallOptions::in_place_all_or_nothing
    std::size_t device_memory_limit = 0;  // RuntimeOptions::device_memory_limit (0: none)
};

// Whether a call with arrays `where` runs directly on `backend` (no decision to weigh): what
// decide() says first, and what the runtime's fast path asks. Under Backend::Auto (`asked`) a
// call with no array on a device is host work, arrays or none (a program of scalars alone is
// weighed as host data of its outputs' bytes, and so stays on the CPU), whether or not the
// runtime has started CUDA (`backend` Auto: not yet): where it runs does not depend on what
// ran before it.
inline bool runs_direct(Backend asked, Backend backend, Where where) {
    if (backend == Backend::Cpu) return true;
    if (where.on_device) return backend == Backend::Cuda;
    return !(where.host || asked == Backend::Auto);
}

// How the call runs. Throws what measuring the host model or the device's memory throws, and
// what starting the backend throws. Host data below kAutoMinBytes under Auto is kept on the CPU
// before anything of the machine is asked (no driver started, no memory or link measured); on
// a runtime under Auto that has not started, larger host data that the known host model
// (Probe::known_host_model) keeps on the CPU is kept there without starting the backend.
Decision decide(const Request& r, Probe& probe);

// How a program over row blocks on several devices runs (Way::Sharded, its `sharding`): an
// ArgumentError saying why for a program sharding does not take, before any device runs anything.
Decision decide(const shards::Request& r);

// The same decision after a streamed run found, preparing its chunks, that they make another
// program than the whole (`why`): copied whole, or kept on the CPU, or too large, by the rules
// decide() applies to a program that cannot be streamed.
Decision not_streamed(Decision d, std::string why, Backend asked);

// What Timing::placement says of a call that ran by `d` (empty for Direct).
std::string placement(const Decision& d);

// "12 chunks of 96.0 MiB (3 in flight) along 4096 rows, 300.0 MiB of device memory (limit
// 8.0 GiB: `budget_source`)", as explain prints a streamed call.
std::string stream_text(const chunks::ChunkPlan& cp, std::size_t budget, const std::string& budget_source);

// 1.5 GiB, 96.0 MiB, 512 bytes: binary units, as the placement and explain's host lines say.
std::string human(std::uint64_t bytes);

}  // namespace jit::run
