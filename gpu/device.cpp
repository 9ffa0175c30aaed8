// device.cpp: CUDA error checking, device buffers, streams and the current-context rule
#include "gpu/device.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/util/parallel.h"

namespace gvc {
namespace cuda {

Status check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  std::string msg = what;
  msg += ": ";
  msg += cudaGetErrorName(e);
  msg += ": ";
  msg += cudaGetErrorString(e);
  return Status::error(msg);
}

namespace {
// A driver API function by name (CUDA 12 entry points; null where the driver lacks it): the
// runtime's headers give no CUcontext calls, and the project links the runtime only.
void* driver_entry(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return nullptr;
  return p;
}
}  // namespace

void* current_context() {
  // CUresult cuCtxGetCurrent(CUcontext*): CUresult and CUcontext are an int and a pointer.
  using CtxGetCurrent = int (*)(void**);
  static const auto fn = reinterpret_cast<CtxGetCurrent>(driver_entry("cuCtxGetCurrent"));
  void* ctx = nullptr;
  if (!fn || fn(&ctx) != 0) return nullptr;
  return ctx;
}

bool context_is_current() { return current_context() != nullptr; }

bool make_context_current(void* ctx) {
  if (!ctx) return true;
  // CUresult cuCtxSetCurrent(CUcontext)
  using CtxSetCurrent = int (*)(void*);
  static const auto fn = reinterpret_cast<CtxSetCurrent>(driver_entry("cuCtxSetCurrent"));
  return fn && fn(ctx) == 0;
}

Status enter_device(int device_id) {
  if (context_is_current()) return {};
  return check(cudaSetDevice(device_id), "cudaSetDevice");
}

Status DeviceBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_ && ptr_) return {};
  reset();
  void* p = nullptr;
  GVC_CUDA_TRY(cudaMalloc(&p, bytes ? bytes : 1));
  ptr_ = p;
  bytes_ = bytes;
  return {};
}

void DeviceBuffer::reset() {
  if (ptr_) cudaFree(ptr_);  // nothing useful to do with an error while freeing
  ptr_ = nullptr;
  bytes_ = 0;
}

Status PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_ && ptr_) return {};
  reset();
  void* p = nullptr;
  GVC_CUDA_TRY(cudaMallocHost(&p, bytes ? bytes : 1));
  ptr_ = p;
  bytes_ = bytes;
  return {};
}

void copy_host_parallel(void* dst, const void* src, size_t bytes) {
  const int n = int(std::min<size_t>(8, std::max<size_t>(1, bytes >> 20)));
  parallel_for(n, [&](int t) {
    const size_t lo = bytes * size_t(t) / size_t(n), hi = bytes * size_t(t + 1) / size_t(n);
    std::memcpy(static_cast<uint8_t*>(dst) + lo, static_cast<const uint8_t*>(src) + lo, hi - lo);
  });
}

Status download_staged(PinnedBuffer& staging, void* dst, const void* src, size_t bytes, cudaStream_t s) {
  GVC_TRY(staging.reserve(bytes));
  GVC_CUDA_TRY(cudaMemcpyAsync(staging.get(), src, bytes, cudaMemcpyDeviceToHost, s));
  GVC_CUDA_TRY(cudaStreamSynchronize(s));
  copy_host_parallel(dst, staging.get(), bytes);
  return {};
}

Status upload_staged(PinnedBuffer& staging, size_t offset, void* dst, const void* src, size_t bytes, cudaStream_t s) {
  copy_host_parallel(staging.get<uint8_t>() + offset, src, bytes);
  GVC_CUDA_TRY(cudaMemcpyAsync(dst, staging.get<uint8_t>() + offset, bytes, cudaMemcpyHostToDevice, s));
  return {};
}

void PinnedBuffer::reset() {
  if (ptr_) cudaFreeHost(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

Stream::~Stream() {
  if (done_) cudaEventDestroy(done_);
  if (stream_) cudaStreamDestroy(stream_);
}

Status Stream::create(bool first) {
  if (stream_) return {};
  int least = 0, greatest = 0;
  if (first) GVC_TRY(check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange"));
  GVC_TRY(check(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, first ? greatest : least),
                "cudaStreamCreateWithPriority"));
  // synchronize()'s event, made here in the stream's context (not lazily by a later caller)
  return check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming | cudaEventBlockingSync),
               "cudaEventCreateWithFlags");
}

Status Stream::synchronize(const char* what) {
  if (!done_) GVC_CUDA_TRY(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming | cudaEventBlockingSync));
  GVC_CUDA_TRY(cudaEventRecord(done_, stream_));
  return wait_event(done_, what);
}

Status wait_event(cudaEvent_t e, const char* what) {
  // 30 us of polling keeps the short waits as quick as a spin (one encoder: the same fps);
  // sleeping through the rest gave 16 encoders in one process 298-329 -> 357-361 fps (H100).
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(30);
  do {
    const cudaError_t r = cudaEventQuery(e);
    if (r == cudaSuccess) return {};
    if (r != cudaErrorNotReady) return check(r, what);
  } while (std::chrono::steady_clock::now() < until);
  return check(cudaEventSynchronize(e), what);
}

Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}

Status Event::record(cudaStream_t s) {
  if (!event_) GVC_CUDA_TRY(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming | cudaEventBlockingSync));
  return check(cudaEventRecord(event_, s), "cudaEventRecord");
}

Status Event::wait_on(cudaStream_t s) const {
  if (!event_) return {};
  return check(cudaStreamWaitEvent(s, event_, 0), "cudaStreamWaitEvent");
}

Status StagingRing::acquire(size_t bytes, uint8_t*& host) {
  const int i = next_;
  GVC_TRY(done_[i].synchronize("pinned staging"));
  if (bytes > capacity_[i] || !buf_[i].get()) {
    const size_t want = bytes + bytes / 4;
    GVC_TRY(buf_[i].reserve(want));
    capacity_[i] = want;
  }
  host = buf_[i].get<uint8_t>();
  return {};
}

Status StagingRing::release(cudaStream_t s) {
  GVC_TRY(done_[next_].record(s));
  next_ = (next_ + 1) % kBuffers;
  return {};
}

std::string describe_device(int device_id) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device_id) != cudaSuccess) return "unknown CUDA device";
  char buf[320];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs)", prop.name, prop.major, prop.minor,
                prop.multiProcessorCount);
  return buf;
}

}  // namespace cuda
}  // namespace gvc
