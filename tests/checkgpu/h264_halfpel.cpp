// h264_halfpel.cpp (checkgpu): the GPU's luma reference planes (build_half_pel_planes: G, b, h, j over a border) against the CPU's LumaRefPlanes::build, every sample
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "checkgpu.h"
#include "common/h264enc/mc.h"
#include "gpu/device.h"
#include "gpu/halfpel.h"

namespace checkgpu {
namespace {

int tap6(int e, int f, int g, int h, int i, int j) { return e - 5 * f + 20 * g + 20 * h - 5 * i + j; }
uint8_t clip(int v) { return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v); }

// Plane p (G, b, h, j) at padded (x, y) of a w x h picture (row stride `stride`) with a border
// of `pad`, from 8.4.2.2.1's formulas over the edge-extended picture: the GPU's definition,
// for borders other than LumaRefView's.
int half_pel_sample(const std::vector<uint8_t>& pic, int stride, int w, int h, int pad, int p, int x, int y) {
  const int sx = x - pad, sy = y - pad;
  const auto g = [&](int dx, int dy) {
    const int cy = std::min(std::max(sy + dy, 0), h - 1), cx = std::min(std::max(sx + dx, 0), w - 1);
    return int(pic[size_t(cy) * size_t(stride) + size_t(cx)]);
  };
  const auto b1 = [&](int dy) { return tap6(g(-2, dy), g(-1, dy), g(0, dy), g(1, dy), g(2, dy), g(3, dy)); };
  switch (p) {
    case 0: return g(0, 0);
    case 1: return clip((b1(0) + 16) >> 5);
    case 2: return clip((tap6(g(0, -2), g(0, -1), g(0, 0), g(0, 1), g(0, 2), g(0, 3)) + 16) >> 5);
    default: return clip((tap6(b1(-2), b1(-1), b1(0), b1(1), b1(2), b1(3)) + 512) >> 10);
  }
}

// Pictures of random samples, of samples that are 0 or 255 (the 6-tap sums at their extremes,
// clipped both ways) and cut from the painting, at sizes below, across and above the kernel's
// tiles (one macroblock to 1080p, odd ones too), from a device plane with a row stride wider
// than the picture: the four planes, border included, equal the CPU's sample for sample, and
// in the motion search's layout (a wider border, a wider pitch) 8.4.2.2.1's formulas.
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
      // The four planes built into buffers of `pitch` x `ph` filled with 0x5a first, read back.
      const auto build = [&](int pitch, int pad, int pw, int ph, std::vector<uint8_t> got[4]) {
        const size_t n = size_t(pitch) * size_t(ph);
        gvc::cuda::HalfPelPlanes hp;
        for (int p = 0; p < 4; p++) {
          CHECK_OK(out[p].reserve(n));
          CHECK_CUDA(cudaMemset(out[p].get(), 0x5a, n));
          hp.plane[p] = out[p].get<uint8_t>();
        }
        hp.pitch = pitch;
        hp.pad = pad;
        hp.pw = pw;
        hp.ph = ph;
        CHECK_OK(gvc::cuda::build_half_pel_planes(ref.get<uint8_t>(), stride, w, h, hp, nullptr));
        CHECK_CUDA(cudaDeviceSynchronize());
        for (int p = 0; p < 4; p++) {
          got[p].resize(n);
          CHECK_CUDA(cudaMemcpy(got[p].data(), out[p].get(), n, cudaMemcpyDeviceToHost));
        }
      };
      std::vector<uint8_t> got[4];
      build(v.w, gvc::h264::LumaRefView::kPad, v.w, v.h, got);
      ASSERT_FALSE(testing::Test::HasFatalFailure());  // (a check in build() left only the lambda)
      for (int p = 0; p < 4; p++) {
        for (size_t i = 0; i < bytes; i++)
          ASSERT_EQ(int(got[p][i]), int(v.plane[p][i]))
              << w << "x" << h << " kind " << kind << ": plane " << "Gbhj"[p] << " at padded (" << i % size_t(v.w)
              << ", " << i / size_t(v.w) << ")";
      }

      // The motion search's layout (MeCore::build_qpel_planes): a border of range + 20, one
      // more row, a row pitch past the written width (whose bytes stay as they were).
      const int pad = 20 + int(rng() % 33), pw = w + 2 * pad, ph = h + 2 * pad + 1;
      const int pitch = (pw + 4 + 15) & ~15;
      build(pitch, pad, pw, ph, got);
      ASSERT_FALSE(testing::Test::HasFatalFailure());
      for (int p = 0; p < 4; p++) {
        for (int y = 0; y < ph; y++)
          for (int x = 0; x < pitch; x++) {
            const int want_v = x < pw ? half_pel_sample(pic, stride, w, h, pad, p, x, y) : 0x5a;
            ASSERT_EQ(int(got[p][size_t(y) * size_t(pitch) + size_t(x)]), want_v)
                << w << "x" << h << " kind " << kind << ", border " << pad << ": plane " << "Gbhj"[p]
                << " at padded (" << x << ", " << y << ")";
          }
      }
    }
  }
}

}  // namespace
}  // namespace checkgpu
