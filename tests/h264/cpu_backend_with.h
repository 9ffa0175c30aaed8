// cpu_backend_with.h: the CPU backend with an H.264 reconstructor (and optionally a motion search) of a test's own
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "common/dsp/backend.h"
#include "common/h264enc/frame_recon.h"

namespace gvc::h264 {

// Everything is the CPU backend's except h264_reconstructor(), which `make` gives, and
// motion_search(), which `make_search` gives when set.
class CpuBackendWith final : public Backend {
 public:
  explicit CpuBackendWith(std::function<std::unique_ptr<FrameReconstructor>()> make,
                          std::function<std::unique_ptr<MotionSearch>()> make_search = nullptr)
      : make_(std::move(make)), make_search_(std::move(make_search)) {}
  const char* name() const override { return "cpu"; }
  MemoryLocation location() const override { return MemoryLocation::Host; }
  std::unique_ptr<MotionSearch> motion_search() override {
    return make_search_ ? make_search_() : cpu_->motion_search();
  }
  std::unique_ptr<IntraPrune> intra_prune() override { return cpu_->intra_prune(); }
  std::unique_ptr<FrameReconstructor> h264_reconstructor() override { return make_(); }
  void* allocate(size_t bytes) override { return cpu_->allocate(bytes); }
  void release(void* p) override { cpu_->release(p); }
  Status copy(void* dst, MemoryLocation dl, const void* src, MemoryLocation sl, size_t bytes) override {
    return cpu_->copy(dst, dl, src, sl, bytes);
  }
  Status synchronize() override { return cpu_->synchronize(); }

 private:
  std::function<std::unique_ptr<FrameReconstructor>()> make_;
  std::function<std::unique_ptr<MotionSearch>()> make_search_;
  std::unique_ptr<Backend> cpu_ = make_cpu_backend();
};

}  // namespace gvc::h264
