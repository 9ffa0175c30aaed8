// backend_cpu.cpp: the CPU backend, which hands out the reference implementations
#include <cstdlib>
#include <cstring>

#include "common/dsp/backend.h"

#include "common/h264enc/frame_recon.h"

namespace gvc {
namespace {

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  MemoryLocation location() const override { return MemoryLocation::Host; }
  std::unique_ptr<MotionSearch> motion_search() override { return make_cpu_motion_search(); }
  std::unique_ptr<IntraPrune> intra_prune() override { return make_cpu_intra_prune(); }
  void* allocate(size_t bytes) override { return std::malloc(bytes ? bytes : 1); }
  void release(void* p) override { std::free(p); }
  Status copy(void* dst, MemoryLocation dst_loc, const void* src, MemoryLocation src_loc,
              size_t bytes) override {
    if (dst_loc != MemoryLocation::Host || src_loc != MemoryLocation::Host)
      return Status::error("the CPU backend cannot reach device memory");
    std::memmove(dst, src, bytes);
    return {};
  }
  Status synchronize() override { return {}; }
};

}  // namespace

std::unique_ptr<h264::FrameReconstructor> Backend::h264_reconstructor() { return nullptr; }

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace gvc
