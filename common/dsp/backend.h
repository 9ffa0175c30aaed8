// backend.h: a set of kernel implementations (CPU or CUDA) chosen once per element instance
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/dsp/intra_prune.h"
#include "common/dsp/me.h"
#include "common/dsp/plane.h"
#include "common/util/status.h"

namespace gvc {

namespace h264 {
class FrameReconstructor;
}

enum class BackendKind { Auto, Cuda, Cpu };

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const char* name() const = 0;  // "cpu" or "cuda"

  // Where this backend wants frames and results to live.
  virtual MemoryLocation location() const = 0;

  virtual std::unique_ptr<MotionSearch> motion_search() = 0;
  virtual std::unique_ptr<IntraPrune> intra_prune() = 0;
  // The H.264 encoder's reconstruction stage (common/h264enc/frame_recon.h); null: the
  // encoder uses the CPU one.
  virtual std::unique_ptr<h264::FrameReconstructor> h264_reconstructor();

  // Memory in location(); nullptr when it cannot be had.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p) = 0;

  // Copies between host and this backend's memory; waits until the copy is done.
  virtual Status copy(void* dst, MemoryLocation dst_loc, const void* src,
                      MemoryLocation src_loc, size_t bytes) = 0;

  // Waits for all work this backend has queued.
  virtual Status synchronize() = 0;
};

// The CPU backend: always available.
std::unique_ptr<Backend> make_cpu_backend();

}  // namespace gvc
