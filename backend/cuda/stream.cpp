// jitexpr — the streamed pipeline for host data (see stream.hpp).
#include "backend/cuda/stream.hpp"

#include "backend/cuda/cuda.hpp"
#include "backend/cuda/driver.hpp"
#include "backend/cuda/host_copy.hpp"

#include <jit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace jit::cuda {
namespace {

using detail::api;
using detail::check;
using detail::to_device_ptr;
using Clock = std::chrono::steady_clock;

std::atomic<unsigned> g_staging_threads{0};  // set_staging_threads's; 0: the default

// Three quarters of the hardware threads, at most 16: the pipeline's time on pageable data is
// the host's copies. On a 16-thread H100 host, c = a*2+b on 4 GiB of pageable inputs ran at
// 26.9 GB/s with 8 threads, 34.8 with 12 and 35.4 with 16
// (bench/results/2026-12-07d-h100-staging-threads.txt); a quarter stays for the caller's work.
unsigned staging_threads() {
    if (const unsigned n = g_staging_threads.load(std::memory_order_relaxed)) return n;
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    return std::clamp(hw * 3 / 4, 1u, 16u);
}

// ---- the pipeline's lasting state: streams, events, pinned buffers, copy threads

constexpr int kMaxSlots = 3;

struct Pinned {
    void* p = nullptr;
    std::size_t bytes = 0;
};

struct Pipeline {
    std::mutex mutex;  // one streamed run at a time
    bool ready = false;
    CUstream copy_in = nullptr, compute = nullptr, copy_out = nullptr;
    CUevent in_done[kMaxSlots] = {}, kernel_done[kMaxSlots] = {}, out_done[kMaxSlots] = {};
    CUevent allocated = nullptr;
    Pinned slot[kMaxSlots];
    std::unique_ptr<HostCopier> copier;
};

// The current device's (streams, events and pinned blocks belong to its context).
Pipeline& pipeline() {
    static std::mutex made;
    static Pipeline* per_device[kMaxDevices] = {};  // never destroyed: the driver may be gone at exit
    const int dev = current_device();
    if (dev < 0 || dev >= kMaxDevices) throw InternalError(fmt::format("stream pipeline: device {}", dev));
    std::lock_guard<std::mutex> lock(made);
    if (!per_device[dev]) per_device[dev] = new Pipeline;
    return *per_device[dev];
}

void make_ready(Pipeline& p, const detail::Driver& d) {
    if (p.ready) return;
    if (!d.StreamCreate)
        throw NoDeviceError("the CUDA driver lacks streams, events or pinned memory for streaming host data");
    check(d.StreamCreate(&p.copy_in, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(d.StreamCreate(&p.compute, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(d.StreamCreate(&p.copy_out, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    for (int s = 0; s < kMaxSlots; ++s) {
        check(d.EventCreate(&p.in_done[s], CU_EVENT_DISABLE_TIMING), "cuEventCreate");
        check(d.EventCreate(&p.kernel_done[s], CU_EVENT_DISABLE_TIMING), "cuEventCreate");
        check(d.EventCreate(&p.out_done[s], CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    }
    check(d.EventCreate(&p.allocated, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    p.copier = std::make_unique<HostCopier>(staging_threads());
    p.ready = true;
}

// Slot s's pinned block of at least `bytes` (kept for the next run; replaced when too small).
void* pinned_block(Pipeline& p, const detail::Driver& d, int s, std::size_t bytes) {
    Pinned& b = p.slot[s];
    if (bytes == 0 || (b.bytes >= bytes && b.p)) return b.p;
    if (b.p) {
        detail::report(d.MemFreeHost(b.p), "cuMemFreeHost");
        b = {};
    }
    void* q = nullptr;
    check(d.MemHostAlloc(&q, bytes, 0), "cuMemHostAlloc",
          fmt::format("pinning {} bytes of host memory for streaming", bytes));
    b.p = q;
    b.bytes = bytes;
    return q;
}

// Memory the copy engines read in place: pinned or registered host memory (the whole range).
bool pinned(const detail::Driver& d, const void* p, std::size_t bytes) {
    if (!p || bytes == 0) return false;
    auto host_known = [&](const void* q) {
        unsigned int type = 0;
        return d.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, to_device_ptr(q)) == CUDA_SUCCESS &&
               type == CU_MEMORYTYPE_HOST;
    };
    return host_known(p) && host_known(static_cast<const unsigned char*>(p) + bytes - 1);
}

// Waits for `e`, ticking the control (Ctrl-C, progress) while it waits when it wants ticks.
void wait_event(const detail::Driver& d, CUevent e, jit::detail::CallControl* ctl) {
    if (!ctl || !ctl->wants_ticks()) {
        check(d.EventSynchronize(e), "cuEventSynchronize");
        return;
    }
    for (;;) {
        const CUresult r = d.EventQuery(e);
        if (r == CUDA_SUCCESS) return;
        if (r != CUDA_ERROR_NOT_READY) check(r, "cuEventQuery");
        ctl->tick();
        std::this_thread::yield();
    }
}

std::size_t align256(std::size_t x) { return (x + 255) / 256 * 256; }

}  // namespace

void set_staging_threads(unsigned n) noexcept { g_staging_threads.store(std::min(n, 64u), std::memory_order_relaxed); }

bool streaming_supported() {
    const detail::Driver* d = detail::api_noexcept();
    return d && d->StreamCreate && d->MemHostAlloc && d->EventQuery;
}

void device_memory(std::size_t* free_bytes, std::size_t* total_bytes) {
    const auto& d = api();
    std::size_t f = 0, t = 0;
    if (d.MemGetInfo) check(d.MemGetInfo(&f, &t), "cuMemGetInfo");
    else t = f = device_info().total_memory;
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
}

void* alloc_pinned(std::size_t bytes) {
    const auto& d = api();
    if (!d.MemHostAlloc) throw NoDeviceError("the CUDA driver has no cuMemHostAlloc");
    void* p = nullptr;
    check(d.MemHostAlloc(&p, bytes, 0), "cuMemHostAlloc");
    return p;
}

void free_pinned(void* p) noexcept {
    if (!p) return;
    if (const auto* d = detail::api_noexcept()) detail::report(d->MemFreeHost(p), "cuMemFreeHost");
}

StreamStats stream_run(const StreamSpec& spec) {
    const auto t0 = Clock::now();
    const auto& d = api();
    Pipeline& p = pipeline();
    std::lock_guard<std::mutex> lock(p.mutex);
    make_ready(p, d);
    jit::detail::CallControl* const ctl = spec.control;
    if (ctl) ctl->check();

    StreamStats stats;
    stats.chunks = spec.chunks;
    stats.staging_threads = p.copier->threads();
    const int slots =
        std::clamp(spec.slots, 1, std::min<int>(kMaxSlots, static_cast<int>(std::max<std::size_t>(spec.chunks, 1))));
    const std::size_t nin = spec.inputs.size(), nout = spec.outputs.size();
    const auto rpc = static_cast<std::size_t>(spec.rows_per_chunk);

    // Which operands go through pinned buffers, and where each lives in a slot.
    std::vector<bool> in_direct(nin, false), out_direct(nout, false);
    std::size_t dev_slot = 0, pin_slot = 0, resident = 0;
    std::vector<std::size_t> in_dev_off(nin, 0), in_pin_off(nin, 0), out_dev_off(nout, 0), out_pin_off(nout, 0);
    stats.pinned_inputs = true;
    for (std::size_t i = 0; i < nin; ++i) {
        const auto& in = spec.inputs[i];
        if (!in.chunked) {
            in_dev_off[i] = resident;
            resident += align256(in.bytes);
            continue;
        }
        in_direct[i] = !in.copy || pinned(d, in.host, static_cast<std::size_t>(spec.rows) * in.row_bytes);
        if (!in_direct[i]) stats.pinned_inputs = false;
        in_dev_off[i] = dev_slot;
        dev_slot += align256(rpc * in.row_bytes);
        if (!in_direct[i]) {
            in_pin_off[i] = pin_slot;
            pin_slot += align256(rpc * in.row_bytes);
        }
    }
    for (std::size_t o = 0; o < nout; ++o) {
        const auto& out = spec.outputs[o];
        out_dev_off[o] = dev_slot;
        if (out.reduction) {
            dev_slot += align256(out.item);
            out_pin_off[o] = pin_slot;  // partials always come back through the slot's pinned block
            pin_slot += align256(out.item);
            continue;
        }
        out_direct[o] = pinned(d, out.host, static_cast<std::size_t>(spec.rows) * out.row_bytes);
        dev_slot += align256(rpc * out.row_bytes);
        if (!out_direct[o]) {
            out_pin_off[o] = pin_slot;
            pin_slot += align256(rpc * out.row_bytes);
        }
    }

    // Device memory: one block per slot and one for the resident inputs, from the array pool
    // (ordered on the legacy stream: the pipeline's streams wait for the allocation's event).
    std::shared_ptr<Storage> dev[kMaxSlots];
    for (int s = 0; s < slots; ++s)
        if (dev_slot) dev[s] = make_storage(dev_slot);
    std::shared_ptr<Storage> res = resident ? make_storage(resident) : nullptr;
    unsigned char* pin[kMaxSlots] = {};
    for (int s = 0; s < slots; ++s) pin[s] = static_cast<unsigned char*>(pinned_block(p, d, s, pin_slot));
    check(d.EventRecord(p.allocated, nullptr), "cuEventRecord");
    for (CUstream st : {p.copy_in, p.compute, p.copy_out})
        check(d.StreamWaitEvent(st, p.allocated, 0), "cuStreamWaitEvent");

    auto dev_ptr = [&](int s, std::size_t off) { return static_cast<unsigned char*>(dev[s]->data()) + off; };

    std::uint64_t total_bytes = 0;
    for (const auto& in : spec.inputs)
        if (in.copy) total_bytes += in.chunked ? static_cast<std::uint64_t>(spec.rows) * in.row_bytes : in.bytes;
    for (const auto& out : spec.outputs)
        total_bytes += out.reduction ? spec.chunks * out.item : static_cast<std::uint64_t>(spec.rows) * out.row_bytes;
    if (ctl) ctl->begin(Progress::Phase::Run, Progress::Unit::Bytes, total_bytes);

    std::vector<long long> pending(static_cast<std::size_t>(slots), -1);
    std::vector<CopyTask> tasks;
    auto drain_tasks = [&](int s) {
        const long long c = pending[static_cast<std::size_t>(s)];
        if (c < 0) return;
        const auto cc = static_cast<std::size_t>(c);
        const std::int64_t begin = spec.chunk_begin(cc), rows = spec.chunk_rows(cc);
        for (std::size_t o = 0; o < nout; ++o) {
            const auto& out = spec.outputs[o];
            if (out.reduction) {
                tasks.push_back(
                    {static_cast<unsigned char*>(out.host) + cc * out.item, pin[s] + out_pin_off[o], out.item});
                stats.to_host_bytes += out.item;
            } else {
                const std::size_t n = static_cast<std::size_t>(rows) * out.row_bytes;
                stats.to_host_bytes += n;
                if (!out_direct[o])
                    tasks.push_back(
                        {static_cast<unsigned char*>(out.host) + static_cast<std::size_t>(begin) * out.row_bytes,
                         pin[s] + out_pin_off[o], n});
            }
        }
    };
    auto chunk_bytes = [&](std::size_t c) {
        std::uint64_t b = 0;
        const auto rows = static_cast<std::uint64_t>(spec.chunk_rows(c));
        for (const auto& in : spec.inputs) b += in.chunked && in.copy ? rows * in.row_bytes : 0;
        for (const auto& out : spec.outputs) b += out.reduction ? out.item : rows * out.row_bytes;
        return b;
    };

    try {
        // Resident inputs, once (complete when copy_to_device returns; a stop is honoured
        // between its pieces, before any chunk ran: nothing of the caller's is written yet).
        for (std::size_t i = 0; i < nin; ++i)
            if (!spec.inputs[i].chunked && spec.inputs[i].copy) {
                copy_to_device(static_cast<unsigned char*>(res->data()) + in_dev_off[i], spec.inputs[i].host,
                               spec.inputs[i].bytes, nullptr, ctl);
                stats.to_device_bytes += spec.inputs[i].bytes;
            }
        std::vector<void*> in_ptr(nin), out_ptr(nout);
        for (std::size_t c = 0; c < spec.chunks; ++c) {
            const int s = static_cast<int>(c % static_cast<std::size_t>(slots));
            tasks.clear();
            if (pending[static_cast<std::size_t>(s)] >= 0) {
                wait_event(d, p.out_done[s], ctl);
                drain_tasks(s);
            }
            const bool stop = ctl && (ctl->tick() || ctl->stop_requested());
            const std::int64_t begin = spec.chunk_begin(c), rows = spec.chunk_rows(c);
            if (!stop)
                for (std::size_t i = 0; i < nin; ++i) {
                    const auto& in = spec.inputs[i];
                    if (in.chunked && !in_direct[i])
                        tasks.push_back({pin[s] + in_pin_off[i],
                                         static_cast<const unsigned char*>(in.host) +
                                             static_cast<std::size_t>(begin) * in.row_bytes,
                                         static_cast<std::size_t>(rows) * in.row_bytes});
                }
            p.copier->run(tasks);  // drains slot s's last chunk and stages chunk c, together
            if (pending[static_cast<std::size_t>(s)] >= 0) {
                if (ctl) ctl->add_done(chunk_bytes(static_cast<std::size_t>(pending[static_cast<std::size_t>(s)])));
                pending[static_cast<std::size_t>(s)] = -1;
            }
            if (stop) jit::detail::CallControl::throw_cancelled();

            // Host -> device.
            for (std::size_t i = 0; i < nin; ++i) {
                const auto& in = spec.inputs[i];
                if (!in.chunked) {
                    in_ptr[i] = static_cast<unsigned char*>(res->data()) + in_dev_off[i];
                    continue;
                }
                in_ptr[i] = dev_ptr(s, in_dev_off[i]);
                if (!in.copy) continue;
                const std::size_t n = static_cast<std::size_t>(rows) * in.row_bytes;
                const void* src = in_direct[i] ? static_cast<const unsigned char*>(in.host) +
                                                     static_cast<std::size_t>(begin) * in.row_bytes
                                               : pin[s] + in_pin_off[i];
                check(d.MemcpyHtoDAsync(to_device_ptr(in_ptr[i]), src, n, p.copy_in), "cuMemcpyHtoDAsync");
                stats.to_device_bytes += n;
            }
            check(d.EventRecord(p.in_done[s], p.copy_in), "cuEventRecord");
            // The chunk program.
            for (std::size_t o = 0; o < nout; ++o) out_ptr[o] = dev_ptr(s, out_dev_off[o]);
            check(d.StreamWaitEvent(p.compute, p.in_done[s], 0), "cuStreamWaitEvent");
            if (c == 0 && spec.started_outputs)
                for (std::size_t o = 0; o < nout; ++o) spec.started_outputs[o] = true;
            spec.launch(c, rows, in_ptr, out_ptr, p.compute);
            check(d.EventRecord(p.kernel_done[s], p.compute), "cuEventRecord");
            // Device -> host.
            check(d.StreamWaitEvent(p.copy_out, p.kernel_done[s], 0), "cuStreamWaitEvent");
            for (std::size_t o = 0; o < nout; ++o) {
                const auto& out = spec.outputs[o];
                if (out.reduction) {
                    check(d.MemcpyDtoHAsync(pin[s] + out_pin_off[o], to_device_ptr(out_ptr[o]), out.item, p.copy_out),
                          "cuMemcpyDtoHAsync");
                    continue;
                }
                const std::size_t n = static_cast<std::size_t>(rows) * out.row_bytes;
                void* dst = out_direct[o] ? static_cast<unsigned char*>(out.host) +
                                                static_cast<std::size_t>(begin) * out.row_bytes
                                          : static_cast<void*>(pin[s] + out_pin_off[o]);
                check(d.MemcpyDtoHAsync(dst, to_device_ptr(out_ptr[o]), n, p.copy_out), "cuMemcpyDtoHAsync");
            }
            check(d.EventRecord(p.out_done[s], p.copy_out), "cuEventRecord");
            pending[static_cast<std::size_t>(s)] = static_cast<long long>(c);
        }
        // The chunks still in flight, oldest first.
        for (std::size_t k = 0; k < static_cast<std::size_t>(slots); ++k) {
            const std::size_t c =
                spec.chunks >= static_cast<std::size_t>(slots) ? spec.chunks - static_cast<std::size_t>(slots) + k : k;
            if (c >= spec.chunks) continue;
            const int s = static_cast<int>(c % static_cast<std::size_t>(slots));
            if (pending[static_cast<std::size_t>(s)] != static_cast<long long>(c)) continue;
            tasks.clear();
            wait_event(d, p.out_done[s], ctl);
            drain_tasks(s);
            p.copier->run(tasks);
            if (ctl) ctl->add_done(chunk_bytes(c));
            pending[static_cast<std::size_t>(s)] = -1;
        }
    } catch (...) {
        // What was queued finishes before the buffers go back (a kernel is never cut short).
        // Failures here repeat the one being thrown (or a lost context): not reported again.
        for (CUstream st : {p.copy_in, p.compute, p.copy_out}) (void)d.StreamSynchronize(st);
        throw;
    }
    // The buffers return to the pool on the legacy stream: the pipeline's work is complete.
    for (CUstream st : {p.copy_in, p.compute, p.copy_out}) check(d.StreamSynchronize(st), "cuStreamSynchronize");
    stats.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return stats;
}

LinkMeasure measure_link(std::size_t bytes, int repeats) {
    const auto& d = api();
    Pipeline& p = pipeline();
    std::lock_guard<std::mutex> lock(p.mutex);
    make_ready(p, d);
    bytes = std::max<std::size_t>(bytes, std::size_t{1} << 20);
    LinkMeasure m;
    m.staging_threads = p.copier->threads();
    void* host_pinned = alloc_pinned(bytes);
    struct FreePinned {
        void* p;
        ~FreePinned() { free_pinned(p); }
    } free_host{host_pinned};
    std::unique_ptr<unsigned char[]> pageable(new unsigned char[bytes]);
    std::memset(pageable.get(), 1, bytes);  // touched: no page faults in the measures
    std::memset(host_pinned, 2, bytes);
    auto dev = make_storage(bytes);
    check(d.CtxSynchronize(), "cuCtxSynchronize");
    auto best = [&](auto&& body) {
        double b = 0;
        for (int r = 0; r < std::max(1, repeats); ++r) {
            const auto t0 = Clock::now();
            body();
            const double s = std::chrono::duration<double>(Clock::now() - t0).count();
            if (s > 0) b = std::max(b, static_cast<double>(bytes) / s / 1e9);
        }
        return b;
    };
    const CUdeviceptr dp = to_device_ptr(dev->data());
    m.pinned_to_device_gbs = best([&] {
        check(d.MemcpyHtoDAsync(dp, host_pinned, bytes, p.copy_in), "cuMemcpyHtoDAsync");
        check(d.StreamSynchronize(p.copy_in), "cuStreamSynchronize");
    });
    m.pinned_to_host_gbs = best([&] {
        check(d.MemcpyDtoHAsync(host_pinned, dp, bytes, p.copy_out), "cuMemcpyDtoHAsync");
        check(d.StreamSynchronize(p.copy_out), "cuStreamSynchronize");
    });
    m.staging_gbs = best([&] { p.copier->run({CopyTask{host_pinned, pageable.get(), bytes}}, false); });
    m.staging_streaming_gbs = best([&] { p.copier->run({CopyTask{host_pinned, pageable.get(), bytes}}); });
    m.pageable_to_device_gbs = best([&] {
        check(d.MemcpyHtoDAsync(dp, pageable.get(), bytes, p.copy_in), "cuMemcpyHtoDAsync");
        check(d.StreamSynchronize(p.copy_in), "cuStreamSynchronize");
    });
    if (d.MemHostRegister) {
        bool refused = false;
        auto reg = [&](void* q, std::size_t n) {
            if (!refused && d.MemHostRegister(q, n, 0) != CUDA_SUCCESS) refused = true;
            return !refused;
        };
        m.register_gbs = best([&] {
            if (reg(pageable.get(), bytes)) check(d.MemHostUnregister(pageable.get()), "cuMemHostUnregister");
        });
        constexpr std::size_t kPiece = std::size_t{16} << 20;
        m.register_pieces_gbs = best([&] {
            for (std::size_t off = 0; off + kPiece <= bytes; off += kPiece)
                if (reg(pageable.get() + off, kPiece))
                    check(d.MemHostUnregister(pageable.get() + off), "cuMemHostUnregister");
        });
        m.registered_to_device_gbs = best([&] {
            if (!reg(pageable.get(), bytes)) return;
            check(d.MemcpyHtoDAsync(dp, pageable.get(), bytes, p.copy_in), "cuMemcpyHtoDAsync");
            check(d.StreamSynchronize(p.copy_in), "cuStreamSynchronize");
            check(d.MemHostUnregister(pageable.get()), "cuMemHostUnregister");
        });
        if (refused) m.register_gbs = m.register_pieces_gbs = m.registered_to_device_gbs = 0;
    }
    return m;
}

}  // namespace jit::cuda
