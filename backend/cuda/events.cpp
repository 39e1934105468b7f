// jitexpr — CUDA events for polling a stream's progress (see cuda.hpp, Event).
#include "backend/cuda/cuda.hpp"
#include "backend/cuda/driver.hpp"

namespace jit::cuda {

using namespace detail;

bool Event::supported() {
    const Driver* d = api_noexcept();
    return d && d->EventQuery;
}

Event::Event() {
    const Driver& d = api();
    CUevent e = nullptr;
    check(d.EventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    handle_ = e;
}

Event::~Event() {
    if (!handle_) return;
    if (const Driver* d = api_noexcept()) {
        if (CUresult r = d->EventDestroy(static_cast<CUevent>(handle_)); r != CUDA_SUCCESS) report(r, "cuEventDestroy");
    }
}

void Event::record(void* stream) {
    check(api().EventRecord(static_cast<CUevent>(handle_), static_cast<CUstream>(stream)), "cuEventRecord");
}

bool Event::done() const {
    const CUresult r = api().EventQuery(static_cast<CUevent>(handle_));
    if (r == CUDA_ERROR_NOT_READY) return false;
    check(r, "cuEventQuery");
    return true;
}

}  // namespace jit::cuda
