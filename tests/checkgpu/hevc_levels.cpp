// hevc_levels.cpp (checkgpu): the parse's coded 4x4 sub-blocks made dense on the GPU against hevc_scatter_level_blocks, bit for bit
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "checkgpu.h"
#include "common/dsp/hevc_itx.h"
#include "gpu/device.h"
#include "gpu/hevc_levels.h"

namespace checkgpu {
namespace {

using gvc::cuda::DeviceBuffer;

constexpr int16_t kPoison = 0x5A5A;  // what the device buffer held before
constexpr size_t kGuard = 64;        // values after the dense levels that must stay poisoned

// A picture's worth of TUs as the decoder records them: dense offsets one after another, each
// sub-block coded with probability `percent`, its levels anywhere in the 16-bit range.
struct Levels {
  std::vector<uint32_t> blocks;
  std::vector<int16_t> packed;
  size_t dense = 0;
};

Levels make_levels(int n_tus, int percent, std::mt19937_64& rng) {
  Levels l;
  for (int t = 0; t < n_tus; ++t) {
    const int log2 = 2 + int(rng() % 4), n = 1 << log2;
    for (int ys = 0; ys < n / 4; ++ys)
      for (int xs = 0; xs < n / 4; ++xs) {
        if (int(rng() % 100) >= percent) continue;
        l.blocks.push_back(gvc::hevc_level_block(uint32_t(l.dense + size_t(4 * ys * n + 4 * xs)), log2));
        for (int i = 0; i < 16; ++i) l.packed.push_back(int16_t(rng() % 4 ? int(rng() % 65536) - 32768 : 0));
      }
    l.dense += size_t(n) * size_t(n);
  }
  return l;
}

// The device's dense levels (and the guard after them) for `l`.
std::vector<int16_t> expand_on_device(const Levels& l, cudaStream_t s, gvc::Status& st) {
  DeviceBuffer blocks, packed, dense;
  std::vector<int16_t> out(l.dense + kGuard, kPoison);
  st = blocks.reserve(l.blocks.size() * 4 + 4);
  if (st.ok()) st = packed.reserve(l.packed.size() * 2 + 8);
  if (st.ok()) st = dense.reserve(out.size() * 2);
  if (!st.ok()) return {};
  // on the stream of the expansion (a pageable cudaMemcpy may still be copying when it returns,
  // and the legacy stream does not order a non-blocking one)
  cudaMemcpyAsync(blocks.get(), l.blocks.data(), l.blocks.size() * 4, cudaMemcpyHostToDevice, s);
  cudaMemcpyAsync(packed.get(), l.packed.data(), l.packed.size() * 2, cudaMemcpyHostToDevice, s);
  cudaMemcpyAsync(dense.get(), out.data(), out.size() * 2, cudaMemcpyHostToDevice, s);
  st = gvc::cuda::hevc_expand_levels(blocks.get<uint32_t>(), l.blocks.size(), packed.get<int16_t>(),
                                     dense.get<int16_t>(), l.dense, s);
  if (st.ok()) st = gvc::cuda::check(cudaMemcpyAsync(out.data(), dense.get(), out.size() * 2, cudaMemcpyDeviceToHost, s), "download");
  if (st.ok()) st = gvc::cuda::check(cudaStreamSynchronize(s), "sync");
  return out;
}

TEST(HevcLevels, ExpandMatchesCpu) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  auto rng = rng_for("hevc levels");
  for (const int percent : {0, 3, 20, 60, 100}) {
    for (const int n_tus : {1, 7, 3000}) {
      const Levels l = make_levels(n_tus, percent, rng);
      std::vector<int16_t> want(l.dense + kGuard, kPoison);
      std::fill(want.begin(), want.begin() + long(l.dense), int16_t(0));
      gvc::hevc_scatter_level_blocks(l.blocks.data(), l.blocks.size(), l.packed.data(), want.data());
      gvc::Status st;
      const std::vector<int16_t> got = expand_on_device(l, stream.get(), st);
      ASSERT_TRUE(st.ok()) << st.message();
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < want.size(); ++i)
        if (got[i] != want[i] && !bad++) first = i;
      ASSERT_EQ(bad, 0u) << percent << "% coded, " << n_tus << " TUs, " << l.blocks.size()
                         << " sub-blocks: first difference at " << first << " of " << l.dense
                         << " (got " << got[first] << ", want " << want[first] << ")";
    }
  }
}

TEST(HevcLevels, RejectsWhatCannotFit) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  DeviceBuffer buf;
  CHECK_OK(buf.reserve(4096));
  CHECK_CUDA(cudaMemset(buf.get(), 0, 4096));  // (entries at offset 0, should a check fail)
  uint8_t* base = buf.get<uint8_t>();
  const uint32_t* blocks = reinterpret_cast<const uint32_t*>(base);
  int16_t* dense = reinterpret_cast<int16_t*>(base + 2048);
  // three sub-blocks of levels, room for two
  EXPECT_FALSE(gvc::cuda::hevc_expand_levels(blocks, 3, reinterpret_cast<const int16_t*>(base + 1024), dense, 32,
                                             stream.get()).ok());
  // levels not 8-byte aligned
  EXPECT_FALSE(gvc::cuda::hevc_expand_levels(blocks, 1, reinterpret_cast<const int16_t*>(base + 1026), dense, 32,
                                             stream.get()).ok());
  // dense levels not 8-byte aligned
  EXPECT_FALSE(gvc::cuda::hevc_expand_levels(blocks, 1, reinterpret_cast<const int16_t*>(base + 1024),
                                             reinterpret_cast<int16_t*>(base + 2050), 32, stream.get()).ok());
  // nothing to do is fine
  EXPECT_TRUE(gvc::cuda::hevc_expand_levels(blocks, 0, nullptr, dense, 0, stream.get()).ok());
  CHECK_CUDA(cudaStreamSynchronize(stream.get()));
}

}  // namespace
}  // namespace checkgpu
