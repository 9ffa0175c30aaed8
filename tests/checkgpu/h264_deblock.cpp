// h264_deblock.cpp (checkgpu): the H.264 loop filter's wavefront (H264DeblockCore) against the CPU's deblock_picture on random macroblocks, samples and filter offsets
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "checkgpu.h"
#include "common/h264enc/deblock.h"
#include "common/h264enc/picture.h"
#include "gpu/h264_deblock.h"

namespace checkgpu {
namespace {

using gvc::h264::Macroblock;
using gvc::h264::MbType;
using gvc::h264::Picture;

// Random macroblocks that give every bS: intra (I_PCM too), coded 4x4 blocks, two references,
// and vectors that differ by about the threshold of 4 between neighbouring blocks.
std::vector<Macroblock> random_mbs(int mbw, int mbh, std::mt19937_64& rng) {
  std::vector<Macroblock> mbs(size_t(mbw) * size_t(mbh));
  for (Macroblock& m : mbs) {
    const int kind = int(rng() % 24);
    m.type = kind < 3 ? MbType::I16x16 : kind < 5 ? MbType::I4x4 : kind < 6 ? MbType::IPcm
           : kind < 15 ? MbType::PL0_16x16 : MbType::PSkip;
    if (gvc::h264::is_intra(m.type)) continue;
    for (auto& r : m.ref_idx) r = int8_t(rng() % 4 == 0);
    const int bx = int(rng() % 41) - 20, by = int(rng() % 41) - 20;
    for (auto& v : m.mv) {
      v[0] = int16_t(bx + int(rng() % 9) - 4);
      v[1] = int16_t(by + int(rng() % 9) - 4);
    }
    for (auto& t : m.total_coeff_luma) t = uint8_t(rng() % 3 == 0 ? 1 + rng() % 5 : 0);
  }
  return mbs;
}

// Samples in 4x4 blocks of random levels a few steps apart, with noise: edges the filter
// smooths, and some it leaves.
void random_picture(Picture& pic, std::mt19937_64& rng) {
  for (int c = 0; c < 3; c++) {
    const int w = pic.width(c), h = pic.height(c);
    const int bw = (w + 3) / 4;
    std::vector<int> level(size_t(bw) * size_t((h + 3) / 4));
    int base = 128;
    for (int& l : level) {
      base = std::min(235, std::max(20, base + int(rng() % 13) - 6));
      l = rng() % 8 == 0 ? int(rng() % 256) : base;
    }
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        const int v = level[size_t(y / 4) * size_t(bw) + size_t(x / 4)] + int(rng() % 5) - 2;
        *pic.at(c, x, y) = uint8_t(std::min(255, std::max(0, v)));
      }
  }
}

TEST(H264Deblock, RandomPicturesMatchTheCpu) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::mt19937_64 rng = rng_for("H264Deblock");
  // One core for all: each picture, of any size, is filtered over the posts of those before
  // (the largest three times over, its wavefront's timing varying between launches), every
  // one with its own macroblocks and samples.
  gvc::cuda::H264DeblockCore core;
  const std::array<std::array<int, 2>, 12> sizes{{{1, 1}, {1, 6}, {7, 1}, {2, 2}, {3, 9}, {13, 7}, {22, 18},
                                                  {45, 30}, {120, 68}, {120, 68}, {45, 30}, {120, 68}}};
  long changed = 0, samples = 0;
  int bs_seen[5] = {};
  for (size_t round = 0; round < sizes.size(); round++) {
    const int mbw = sizes[round][0], mbh = sizes[round][1];
    SCOPED_TRACE(testing::Message() << mbw << "x" << mbh << " macroblocks, round " << round);
    const std::vector<Macroblock> mbs = random_mbs(mbw, mbh, rng);
    gvc::h264::DeblockParams p;
    p.qp = round == 0 ? 51 : 20 + int(rng() % 32);  // QPs where most edges filter
    p.alpha_c0_offset = 2 * (int(rng() % 9) - 3);
    p.beta_offset = 2 * (int(rng() % 9) - 3);
    p.chroma_qp_index_offset = int(rng() % 25) - 12;
    Picture in;
    in.alloc(mbw, mbh);
    random_picture(in, rng);
    Picture cpu = in;
    const gvc::h264::MbMap map{mbs.data(), mbw, mbh, -1};
    gvc::h264::deblock_picture(cpu, map, p);
    for (int my = 0; my < mbh; my++)
      for (int mx = 0; mx < mbw; mx++) {
        gvc::h264::MbEdges e;
        gvc::h264::mb_edges(map, mx, my, p, e);
        for (const auto& dir : e.bs)
          for (const auto& edge : dir)
            for (uint8_t b : edge) bs_seen[b]++;
      }

    // The device planes are wider than the picture (stride > width) and have guard rows
    // before and after, all canaries that the filter must leave alone.
    constexpr uint8_t kCanary = 0xA5;
    constexpr int kGuardRows = 2;
    gvc::cuda::DeviceBuffer planes[3], d_mbs;
    gvc::h264::DeblockPlanes dp;
    int pitch[3];
    size_t bytes[3];
    for (int c = 0; c < 3; c++) {
      pitch[c] = in.stride[c] + (c ? 16 : 32);
      bytes[c] = size_t(pitch[c]) * size_t(in.height(c) + 2 * kGuardRows);
      CHECK_OK(planes[c].reserve(bytes[c]));
      CHECK_CUDA(cudaMemset(planes[c].get(), kCanary, bytes[c]));
      dp.plane[c] = planes[c].get<uint8_t>() + size_t(kGuardRows) * size_t(pitch[c]);
      dp.stride[c] = pitch[c];
      CHECK_CUDA(cudaMemcpy2D(dp.plane[c], size_t(pitch[c]), in.plane[c].data(), size_t(in.stride[c]),
                              size_t(in.width(c)), size_t(in.height(c)), cudaMemcpyHostToDevice));
    }
    CHECK_OK(d_mbs.reserve(mbs.size() * sizeof(Macroblock)));
    CHECK_CUDA(cudaMemcpy(d_mbs.get(), mbs.data(), mbs.size() * sizeof(Macroblock), cudaMemcpyHostToDevice));
    CHECK_OK(core.run(dp, d_mbs.get<Macroblock>(), mbw, mbh, p, nullptr));
    CHECK_CUDA(cudaDeviceSynchronize());
    for (int c = 0; c < 3; c++) {
      std::vector<uint8_t> gpu(bytes[c]);
      CHECK_CUDA(cudaMemcpy(gpu.data(), planes[c].get(), gpu.size(), cudaMemcpyDeviceToHost));
      for (int y = -kGuardRows; y < in.height(c) + kGuardRows; y++)
        for (int x = 0; x < pitch[c]; x++) {
          const uint8_t got = gpu[size_t(y + kGuardRows) * size_t(pitch[c]) + size_t(x)];
          if (y < 0 || y >= in.height(c) || x >= in.width(c)) {
            ASSERT_EQ(int(got), int(kCanary)) << "plane " << c << ": written outside the picture at (" << x << ", "
                                              << y << ")";
            continue;
          }
          const size_t i = size_t(y) * size_t(in.stride[c]) + size_t(x);
          ASSERT_EQ(int(got), int(cpu.plane[c][i])) << "plane " << c << " at (" << x << ", " << y << "), input "
                                                    << int(in.plane[c][i]) << ", qp " << p.qp;
          changed += cpu.plane[c][i] != in.plane[c][i];
          samples++;
        }
    }
  }
  // the filter did change samples, with every bS
  EXPECT_GT(changed, samples / 10) << changed << " of " << samples << " samples changed";
  for (int b = 0; b <= 4; b++) EXPECT_GT(bs_seen[b], 100) << "bS " << b;
}

TEST(H264Deblock, RefusesPlanesItCannotFilter) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  gvc::cuda::DeviceBuffer plane;
  CHECK_OK(plane.reserve(4096));
  gvc::cuda::H264DeblockCore core;
  const gvc::h264::Macroblock* none = nullptr;
  auto attempt = [&](int luma_stride, int chroma_stride, size_t offset) {
    gvc::h264::DeblockPlanes dp;
    for (int c = 0; c < 3; c++) {
      dp.plane[c] = plane.get<uint8_t>() + (c == 1 ? offset : 0);
      dp.stride[c] = c ? chroma_stride : luma_stride;
    }
    return core.run(dp, none, 2, 1, gvc::h264::DeblockParams{}, nullptr);
  };
  for (const gvc::Status& st : {attempt(40, 16, 0), attempt(32, 20, 0), attempt(32, 16, 4), attempt(16, 16, 0),
                                attempt(32, 8, 0)}) {
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("loop filter"), std::string::npos) << st.message();
  }
}

// --bench: the loop filter on a 1920x1080 picture of random macroblocks (a quarter intra) and
// samples, at QP 32: the median of 22 cudaEvent intervals around H264DeblockCore::run
// (its gather_filters and the wavefront), with the picture uploaded afresh before each.
TEST(H264DeblockBench, Picture1080p) {
  if (!bench_mode()) GTEST_SKIP() << "only with --bench";
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::mt19937_64 rng = rng_for("H264DeblockBench");
  const int mbw = 120, mbh = 68;
  const std::vector<Macroblock> mbs = random_mbs(mbw, mbh, rng);
  gvc::h264::DeblockParams p;
  p.qp = 32;
  Picture in;
  in.alloc(mbw, mbh);
  random_picture(in, rng);
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  gvc::cuda::DeviceBuffer planes[3], d_mbs;
  gvc::cuda::H264DeblockCore core;
  gvc::h264::DeblockPlanes dp;
  for (int c = 0; c < 3; c++) {
    CHECK_OK(planes[c].reserve(in.plane[c].size()));
    dp.plane[c] = planes[c].get<uint8_t>();
    dp.stride[c] = in.stride[c];
  }
  CHECK_OK(d_mbs.reserve(mbs.size() * sizeof(Macroblock)));
  CHECK_CUDA(cudaMemcpy(d_mbs.get(), mbs.data(), mbs.size() * sizeof(Macroblock), cudaMemcpyHostToDevice));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int i = 0; i < 25; i++) {
    for (int c = 0; c < 3; c++)
      CHECK_CUDA(cudaMemcpyAsync(dp.plane[c], in.plane[c].data(), in.plane[c].size(), cudaMemcpyHostToDevice,
                                 stream.get()));
    CHECK_CUDA(cudaEventRecord(e0, stream.get()));
    CHECK_OK(core.run(dp, d_mbs.get<Macroblock>(), mbw, mbh, p, stream.get()));
    CHECK_CUDA(cudaEventRecord(e1, stream.get()));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    if (i >= 3) t.push_back(ms);  // the first launches allocate and warm up
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(t.begin(), t.end());
  std::printf("\ncheckgpu --bench: H.264 loop filter, 1920x1080, QP 32: median %.3f ms (min %.3f, max %.3f) of %zu\n",
              double(t[t.size() / 2]), double(t.front()), double(t.back()), t.size());
}

}  // namespace
}  // namespace checkgpu
