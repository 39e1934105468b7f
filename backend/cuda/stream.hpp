// jitexpr — the streamed pipeline: host data through the GPU in chunks (no cuda.h types here).
//
// For each chunk c (rows [begin, begin + rows), as run/chunks.hpp plans them), in slot
// s = c % slots:
//   host:   wait until slot s's previous chunk has left the device, copy its element-wise
//           results out of the pinned buffers into the caller's pageable outputs, and copy chunk
//           c's rows of the pageable inputs into slot s's pinned buffers (both by several CPU
//           threads, in one batch);
//   copy stream:    host -> device of every chunked input (from the pinned buffers, or straight
//                   from the caller's memory when it is pinned already), then an event;
//   compute stream: waits for that event, runs the chunk program (`launch`), then an event;
//   copy-back stream: waits for that event, device -> host of the outputs (straight into the
//                   caller's memory when it is pinned, else into slot s's pinned buffers) and of
//                   the reductions' partials, then an event.
// Up to `slots` chunks are in flight, so the copies both ways and the kernels overlap. Resident
// (broadcast) inputs are copied once before the first chunk. A stop request is honoured between
// the pieces of that copy and between chunks: nothing more is queued, the chunks in flight
// finish (a kernel is never cut short), and CancelledError is thrown. Any error waits for what
// was queued before it propagates; the pipeline's buffers and streams stay usable for the next
// run.
#pragma once

#include "backend/call_control.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace jit::cuda {

struct StreamSpec {
    struct Input {
        const void* host = nullptr;  // element 0 of the whole (C-contiguous) input
        bool chunked = true;         // rows travel with the chunks; else copied once (`bytes`)
        std::size_t row_bytes = 0;   // chunked
        std::size_t bytes = 0;       // resident
        bool copy = true;            // false: the program never reads it (an in-place target): not copied in
    };
    struct Output {
        void* host = nullptr;  // element-wise: element 0 of the whole output; reduction:
                               // `chunks` partials, one after the other
        bool reduction = false;
        std::size_t row_bytes = 0;  // element-wise
        std::size_t item = 0;       // reduction: bytes of one partial
    };
    std::vector<Input> inputs;
    std::vector<Output> outputs;
    std::int64_t rows = 0;  // rows of the whole run
    std::size_t chunks = 0;
    std::int64_t rows_per_chunk = 0;  // the largest chunk's
    int slots = 3;                    // chunks in flight
    // Chunk c's first row and row count.
    std::function<std::int64_t(std::size_t)> chunk_begin, chunk_rows;
    // Queues chunk c's program on `stream` (a CUstream): device pointers of every input (chunk
    // rows or the resident copy) and every output (chunk rows, or one partial), in the order of
    // `inputs` and `outputs`. Must not synchronise; may throw (the run then fails cleanly).
    std::function<void(std::size_t chunk, std::int64_t rows, const std::vector<void*>& in,
                       const std::vector<void*>& out, void* stream)>
        launch;
    jit::detail::CallControl* control = nullptr;  // stop requests between chunks, progress (bytes)
    bool* started_outputs = nullptr;              // set per output before its first write
};

struct StreamStats {
    double seconds = 0;
    std::uint64_t to_device_bytes = 0, to_host_bytes = 0;
    std::size_t chunks = 0;
    unsigned staging_threads = 0;
    bool pinned_inputs = false;  // every chunked input was pinned already (no staging)
};

// The copy threads of the pipelines made from now on (a device's is made at its first streamed
// run or link measurement), for benchmarks; 0 (the default): three quarters of the hardware
// threads, 1 to 16.
void set_staging_threads(unsigned n) noexcept;

// Whether this driver offers what the pipeline needs (pinned memory, events, streams).
bool streaming_supported();
// Free and total device memory now (cuMemGetInfo).
void device_memory(std::size_t* free_bytes, std::size_t* total_bytes);
// Runs the pipeline. Throws CudaError, CancelledError, or what `launch` throws.
StreamStats stream_run(const StreamSpec& spec);

// Link and host measurements for the cost model of Backend::Auto and the streaming benchmark.
struct LinkMeasure {
    double pinned_to_device_gbs = 0;    // cuMemcpyHtoDAsync from pinned memory
    double pinned_to_host_gbs = 0;      // cuMemcpyDtoHAsync into pinned memory
    double staging_gbs = 0;             // pageable -> pinned by the pipeline's copy threads
    double staging_streaming_gbs = 0;   // the same with non-temporal stores
    double pageable_to_device_gbs = 0;  // cuMemcpyHtoDAsync from pageable memory (the driver's path)
    // Pinning pageable memory in place (cuMemHostRegister + cuMemHostUnregister, bytes per
    // second): of the whole buffer at once, and in pieces of 16 MiB; then the whole buffer
    // registered, copied to the device and unregistered. 0 where the driver refuses.
    double register_gbs = 0, register_pieces_gbs = 0, registered_to_device_gbs = 0;
    unsigned staging_threads = 0;
};
// Copies `bytes` (at least 1 MiB) each way, best of `repeats`.
LinkMeasure measure_link(std::size_t bytes, int repeats);

// Host memory the device reads in place (cuMemHostAlloc), for tests and benchmarks of pinned
// callers; freed with free_pinned.
void* alloc_pinned(std::size_t bytes);
void free_pinned(void* p) noexcept;

}  // namespace jit::cuda
