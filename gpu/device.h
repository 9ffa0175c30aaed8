// device.h: CUDA error checking into gvc::Status, RAII device buffers, the stream and context rules
//
// This header is for gpu/ and its tests only: it is the one place that includes the CUDA
// runtime headers. Code outside gpu/ uses gpu/backend.h, which needs no CUDA header.
//
// Contexts: the runtime API always works on the calling thread's current context. When the
// caller has made a driver context current (GStreamer's gst_cuda_context_push), that context
// is used as it is: nothing here calls cudaSetDevice or cudaDeviceReset then, since either
// would switch the thread to the device's primary context. Only when no context is current do
// we select `device_id` with cudaSetDevice (its primary context).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/util/status.h"

namespace gvc {
namespace cuda {

// Status::error("<what>: <CUDA error name>: <description>") unless `e` is cudaSuccess.
Status check(cudaError_t e, const char* what);

#define GVC_CUDA_TRY(call)                                           \
  do {                                                               \
    ::gvc::Status gvc_cuda_status_ = ::gvc::cuda::check((call), #call); \
    if (!gvc_cuda_status_.ok()) return gvc_cuda_status_;            \
  } while (0)

#define GVC_TRY(expr)                                  \
  do {                                                 \
    ::gvc::Status gvc_status_ = (expr);                \
    if (!gvc_status_.ok()) return gvc_status_;         \
  } while (0)

// True when the calling thread has a current CUDA driver context (pushed by GStreamer or made
// current by an earlier runtime call). Looks the driver entry point up at run time, so there is
// no link-time dependency on libcuda.
bool context_is_current();
// The calling thread's current CUDA driver context (a CUcontext; null: none), and making one
// current on another thread (cuCtxSetCurrent; nothing for null; false if it failed): for work
// handed to a thread that must use the caller's context, such as GStreamer's rather than the
// primary one.
void* current_context();
bool make_context_current(void* ctx);

// Makes `device_id` current for this thread unless a context is already current (see above).
Status enter_device(int device_id);

// Device memory that frees itself. reserve() keeps the allocation when it is already large
// enough, so per-frame calls do not reallocate.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = o.ptr_;
      bytes_ = o.bytes_;
      o.ptr_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }

  Status reserve(size_t bytes);
  void reset();

  template <typename T = void>
  T* get() const { return static_cast<T*>(ptr_); }
  size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory for staging copies.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  Status reserve(size_t bytes);
  void reset();

  template <typename T = void>
  T* get() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Copies host memory on the kept threads (parallel_for), each a share: pageable memory to or
// from pinned staging at memory speed.
void copy_host_parallel(void* dst, const void* src, size_t bytes);

// `bytes` from device `src` to pageable host `dst` through `staging` (grown as needed), on
// stream s, waited for. Pageable destinations make a copy slow and synchronous.
Status download_staged(PinnedBuffer& staging, void* dst, const void* src, size_t bytes, cudaStream_t s);

// `bytes` from pageable host `src` to device `dst` through `staging` at `offset`, queued on
// stream s: that part of staging must not be written again until s has passed the copy.
// staging must hold offset + bytes (PinnedBuffer::reserve before the first of a group).
Status upload_staged(PinnedBuffer& staging, size_t offset, void* dst, const void* src, size_t bytes, cudaStream_t s);

// A non-blocking stream owned by one backend instance.
class Stream {
 public:
  Stream() = default;
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // `first`: the device's greatest priority, whose blocks its scheduler starts before those of
  // the other streams (which have the least, the default).
  Status create(bool first = false);
  cudaStream_t get() const { return stream_; }
  // Waits for the work queued so far, as wait_event() does.
  Status synchronize(const char* what);

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
};

// Waits for `e` (made with cudaEventBlockingSync): polls it for a few microseconds, then sleeps
// until the device signals it. cudaStreamSynchronize and cudaEventSynchronize on a plain event
// spin a core for the whole wait (the context's default scheduling with fewer contexts than
// cores): several milliseconds of every encoded frame.
Status wait_event(cudaEvent_t e, const char* what);

// An event without timing, for ordering work between streams and waiting (wait_event).
class Event {
 public:
  Event() = default;
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : event_(o.event_) { o.event_ = nullptr; }

  // Creates the event on first use, then records it on `s`.
  Status record(cudaStream_t s);
  // Waits for the work recorded (wait_event).
  Status synchronize(const char* what) const { return event_ ? wait_event(event_, what) : Status(); }
  // Makes `s` wait for the work recorded (nothing when never recorded).
  Status wait_on(cudaStream_t s) const;

 private:
  cudaEvent_t event_ = nullptr;
};

// Pinned staging for an upload queued again and again on one stream (once per picture, say):
// kBuffers buffers taken in turn, each written again only once the copies queued out of it
// are done (an event recorded after them), so the host waits only when the stream is more
// than kBuffers uploads behind. A buffer grows with a quarter to spare, since every
// cudaMallocHost / cudaFreeHost costs far more than the copy.
class StagingRing {
 public:
  static constexpr int kBuffers = 2;
  // The next buffer, at least `bytes` large, once the copies out of it are done.
  Status acquire(size_t bytes, uint8_t*& host);
  // After the copies out of the buffer of the last acquire() were queued on `s`.
  Status release(cudaStream_t s);

 private:
  PinnedBuffer buf_[kBuffers];
  size_t capacity_[kBuffers] = {};
  Event done_[kBuffers];
  int next_ = 0;
};

// Short description of a device: "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)".
std::string describe_device(int device_id);

}  // namespace cuda
}  // namespace gvc
