// checkgpu.h: shared state of the checkgpu binary (seed, bench flag, device, test content)
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/dsp/backend.h"

// Assertions on a CUDA runtime call and on a gvc::Status, printing the error.
#define CHECK_CUDA(call)                                                 \
  do {                                                                   \
    const gvc::Status st_ = gvc::cuda::check((call), #call);             \
    ASSERT_TRUE(st_.ok()) << st_.message();                              \
  } while (0)
#define CHECK_OK(expr)                                                   \
  do {                                                                   \
    const gvc::Status st_ = (expr);                                      \
    ASSERT_TRUE(st_.ok()) << st_.message();                              \
  } while (0)

namespace checkgpu {

// The run's seed (printed at start; --seed N repeats a run).
uint64_t seed();
bool bench_mode();

// A generator for one test: the run's seed mixed with the test's name.
std::mt19937_64 rng_for(const std::string& name);

// The CUDA backend of the run, or nullptr (then `why` says why) when there is no device.
gvc::Backend* cuda_backend();
const std::string& no_cuda_reason();

// An 8-bit plane owned by the test, with `stride` >= width.
struct Plane {
  std::vector<uint8_t> pix;
  int width = 0, height = 0, stride = 0;
  gvc::PlaneView view() const { return {pix.data(), stride, width, height, gvc::MemoryLocation::Host}; }
};

// The luma of a real painting (mate-backgrounds' Elephants, 4096x2304 crop), or an empty plane
// when the raw file is not there (GVC_ELEPHANTS names it).
const Plane& elephants();

}  // namespace checkgpu
