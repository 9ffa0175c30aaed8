// hevc_output.cpp (checkgpu): the decoder's NV12/P010 output kernel against the CPU reference (hevc_write_semi_planar)
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "checkgpu.h"
#include "common/dsp/hevc_output.h"
#include "gpu/device.h"
#include "gpu/hevc_output.h"

namespace checkgpu {
namespace {

using gvc::HevcPlane;
using gvc::SemiPlanarView;
using gvc::cuda::DeviceBuffer;

int rand_int(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// Random pictures and windows (odd sizes, crop offsets, bit depths 8 to 16), written into
// pitched destinations prefilled with a pattern: every byte equal to the CPU's, including the
// padding it must not touch.
TEST(HevcOutput, SemiPlanarMatchesCpu) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::mt19937_64 rng = rng_for("HevcOutput.SemiPlanarMatchesCpu");
  const int depths[] = {8, 10, 12, 16};
  for (int iter = 0; iter < 48; ++iter) {
    const int bd = depths[iter % 4];
    const int pw = 2 * rand_int(rng, 4, 140), ph = 2 * rand_int(rng, 4, 90);
    const int x0 = 2 * rand_int(rng, 0, pw / 4), y0 = 2 * rand_int(rng, 0, ph / 4);
    const int w = rand_int(rng, 1, pw - x0), h = rand_int(rng, 1, ph - y0);
    std::vector<uint16_t> host[3];
    DeviceBuffer dev[3];
    HevcPlane hp[3], dp[3];
    for (int c = 0; c < 3; ++c) {
      const int cw = c ? pw / 2 : pw, chh = c ? ph / 2 : ph, stride = cw + rand_int(rng, 0, 9);
      host[c].resize(size_t(stride) * chh);
      for (auto& v : host[c]) v = uint16_t(rand_int(rng, 0, (1 << bd) - 1));
      CHECK_OK(dev[c].reserve(host[c].size() * 2));
      CHECK_CUDA(cudaMemcpy(dev[c].get(), host[c].data(), host[c].size() * 2, cudaMemcpyHostToDevice));
      hp[c] = {host[c].data(), stride, cw, chh};
      dp[c] = {dev[c].get<uint16_t>(), stride, cw, chh};
    }
    const size_t bps = bd > 8 ? 2 : 1;
    const size_t pitch = size_t((w + 1) / 2) * 2 * bps + size_t(rand_int(rng, 0, 3)) * 2;
    const int rows = h + (h + 1) / 2;
    std::vector<uint8_t> want(pitch * rows), got(pitch * rows);
    for (size_t i = 0; i < want.size(); ++i) want[i] = uint8_t(i * 7 + 3);
    DeviceBuffer out;
    CHECK_OK(out.reserve(want.size()));
    CHECK_CUDA(cudaMemcpy(out.get(), want.data(), want.size(), cudaMemcpyHostToDevice));
    gvc::hevc_write_semi_planar(hp, x0, y0, w, h, bd,
                                SemiPlanarView{want.data(), ptrdiff_t(pitch), want.data() + pitch * h, ptrdiff_t(pitch)});
    uint8_t* o = out.get<uint8_t>();
    CHECK_OK(gvc::cuda::hevc_write_semi_planar(dp, x0, y0, w, h, bd,
                                               SemiPlanarView{o, ptrdiff_t(pitch), o + pitch * h, ptrdiff_t(pitch)},
                                               nullptr));
    CHECK_CUDA(cudaMemcpy(got.data(), out.get(), got.size(), cudaMemcpyDeviceToHost));
    ASSERT_TRUE(got == want) << "iteration " << iter << ": " << pw << "x" << ph << " window " << w << "x" << h
                             << " at " << x0 << "," << y0 << ", " << bd << " bits";
  }
  // windows it must refuse: an odd offset, past the picture, a bit depth under 8
  uint16_t sample = 0;
  const HevcPlane tiny[3] = {{&sample, 1, 1, 1}, {&sample, 1, 1, 1}, {&sample, 1, 1, 1}};
  EXPECT_FALSE(gvc::cuda::hevc_write_semi_planar(tiny, 1, 0, 1, 1, 8, SemiPlanarView{}, nullptr).ok());
  EXPECT_FALSE(gvc::cuda::hevc_write_semi_planar(tiny, 0, 0, 2, 1, 8, SemiPlanarView{}, nullptr).ok());
  EXPECT_FALSE(gvc::cuda::hevc_write_semi_planar(tiny, 0, 0, 1, 1, 7, SemiPlanarView{}, nullptr).ok());
}

}  // namespace
}  // namespace checkgpu
