// h264_halfpel.cpp (checkgpu): the GPU's luma reference planes (build_half_pel_planes: G, b, h, j over a border) against the CPU's LumaRefPlanes::build, every sample
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "checkgpu.h"
#include "common/h264enc/mc.h"
#include "gpu/device.h"
#include "gpu/halfpel.h"

namespace checkgpu {
namespace {

// Pictures of random samples, of samples that are 0 or 255 (the 6-tap sums at their extremes,
// clipped both ways) and cut from the painting, at sizes below, across and above the kernel's
// tiles (one macroblock to 1080p, odd ones too), from a device plane with a row stride wider
// than the picture: the four planes, border included, equal the CPU's sample for sample.
TEST(H264HalfPel, PlanesEqualTheCpu) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::mt19937_64 rng = rng_for("H264HalfPel");
  const Plane& e = elephants();
  const int sizes[][2] = {{16, 16}, {17, 5}, {64, 16}, {65, 17}, {100, 37}, {352, 288}, {1920, 1080}};
  int round = 0;
  for (const auto& sz : sizes) {
    for (int kind = 0; kind < 3; kind++, round++) {
      const int w = sz[0], h = sz[1], stride = w + 16 + int(rng() % 48);
      std::vector<uint8_t> pic(size_t(stride) * size_t(h));
      for (int y = 0; y < h; y++)
        for (int x = 0; x < stride; x++) {
          uint8_t v = uint8_t(rng());
          if (kind == 1) v = rng() % 2 ? 255 : 0;
          if (kind == 2 && !e.pix.empty() && x < w)
            v = e.pix[size_t(y % e.height) * size_t(e.stride) + size_t((x + 7 * round) % e.width)];
          pic[size_t(y) * size_t(stride) + size_t(x)] = v;
        }
      gvc::h264::LumaRefPlanes want;
      want.build(gvc::PlaneView{pic.data(), stride, w, h, gvc::MemoryLocation::Host});
      const gvc::h264::LumaRefView v = want.view();
      const size_t bytes = size_t(v.w) * size_t(v.h);

      gvc::cuda::DeviceBuffer ref, out[4];
      CHECK_OK(ref.reserve(pic.size()));
      CHECK_CUDA(cudaMemcpy(ref.get(), pic.data(), pic.size(), cudaMemcpyHostToDevice));
      gvc::cuda::HalfPelPlanes hp;
      for (int p = 0; p < 4; p++) {
        CHECK_OK(out[p].reserve(bytes));
        CHECK_CUDA(cudaMemset(out[p].get(), 0x5a, bytes));
        hp.plane[p] = out[p].get<uint8_t>();
      }
      hp.pitch = v.w;
      hp.pad = gvc::h264::LumaRefView::kPad;
      hp.pw = v.w;
      hp.ph = v.h;
      CHECK_OK(gvc::cuda::build_half_pel_planes(ref.get<uint8_t>(), stride, w, h, hp, nullptr));
      CHECK_CUDA(cudaDeviceSynchronize());
      for (int p = 0; p < 4; p++) {
        std::vector<uint8_t> got(bytes);
        CHECK_CUDA(cudaMemcpy(got.data(), out[p].get(), bytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < bytes; i++)
          ASSERT_EQ(int(got[i]), int(v.plane[p][i]))
              << w << "x" << h << " kind " << kind << ": plane " << "Gbhj"[p] << " at padded (" << i % size_t(v.w)
              << ", " << i / size_t(v.w) << ")";
      }
    }
  }
}

}  // namespace
}  // namespace checkgpu
