// h264_intra_prep.cpp (checkgpu): the H.264 encoder's intra search of every macroblock (prepare_intra) on the GPU against the CPU's, field for field
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "checkgpu.h"
#include "common/h264enc/frame_recon.h"
#include "gpu/device.h"
#include "gpu/h264_recon.h"

namespace checkgpu {
namespace {

using gvc::h264::MbIntraPrep;
using gvc::h264::Picture;

// Real content at sizes up to 1080p, I and P slices (the P-slice surcharges), one to three
// slices (neighbours across a slice edge are not available), every mode or random candidate
// sets (Intra_4x4_DC and Intra_16x16_DC always among them, as the pruning keeps them), QPs
// over the range.
TEST(H264IntraPrep, GpuEqualsTheCpu) {
  gvc::Backend* be = cuda_backend();
  if (!be) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  const Plane& e = elephants();
  if (e.pix.empty()) GTEST_SKIP() << "no real test content (GVC_ELEPHANTS names the raw 4096x2304 luma file)";
  std::mt19937_64 rng = rng_for("H264IntraPrep");
  gvc::cuda::H264ReconCore core;
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  const int sizes[][2] = {{11, 9}, {22, 18}, {45, 30}, {120, 68}};
  for (int round = 0; round < 8; round++) {
    const int mbw = sizes[round % 4][0], mbh = sizes[round % 4][1], n = mbw * mbh;
    Picture src;
    src.alloc(mbw, mbh);
    const int ox = int(rng() % 1500), oy = int(rng() % 900);
    for (int c = 0; c < 3; c++)
      for (int y = 0; y < src.height(c); y++)
        for (int x = 0; x < src.width(c); x++)
          *src.at(c, x, y) = e.pix[size_t(oy + y + 300 * c) * e.stride + size_t(ox + x + 500 * c)];
    const int slices = 1 + round % 3;
    std::vector<uint16_t> slice_of_mb(static_cast<size_t>(n));
    for (int i = 0; i < n; i++) slice_of_mb[size_t(i)] = uint16_t(int64_t(i) * slices / n);
    std::vector<gvc::IntraMbCandidates> cand(static_cast<size_t>(n));
    for (auto& c : cand) {
      for (auto& m : c.i4x4) m = uint16_t(rng() | 1u << 2);
      c.i16x16 = uint8_t(rng() | 1u << 2);
      c.chroma = uint8_t(rng() | 1u);
    }
    // A P slice reads its references' planes and the ME results only when it decides inter
    // macroblocks; the intra search reads neither, but frame_analysis sets them.
    gvc::h264::RefPicture ref;
    ref.pic.alloc(mbw, mbh);
    ref.luma.alloc(ref.pic.width(0), ref.pic.height(0));
    const gvc::h264::RefPicture* refs[1] = {&ref};
    std::vector<gvc::MbPartitions> me(static_cast<size_t>(n));
    const gvc::MbPartitionField me_field{me.data(), mbw, mbh, gvc::MemoryLocation::Host};
    const int qp = int(rng() % 52);
    gvc::h264::DecideJob job;
    job.analysis.qp = qp;
    job.analysis.lambda = gvc::h264::lambda_for_qp(qp);
    job.analysis.flags.intra4x4 = round != 5;
    job.src = &src;
    job.refs = refs;
    job.num_refs = round % 2;
    job.me = &me_field;
    job.intra_cand = round % 4 == 1 || round % 4 == 2 ? cand.data() : nullptr;
    job.slice_of_mb = slice_of_mb.data();
    job.mb_width = mbw;
    job.mb_height = mbh;
    std::vector<MbIntraPrep> want(static_cast<size_t>(n));
    gvc::h264::prepare_intra_cpu(job, want.data());
    const MbIntraPrep* got = nullptr;
    CHECK_OK(core.prepare_intra(job, stream.get(), &got));
    int i4_wins = 0;
    for (int i = 0; i < n; i++) {
      const MbIntraPrep& a = want[size_t(i)];
      const MbIntraPrep& b = got[i];
      const bool same = a.i16_cost == b.i16_cost && a.i4_cost == b.i4_cost && a.i16_mode == b.i16_mode &&
                        a.chroma_mode == b.chroma_mode && std::memcmp(a.i4_mode, b.i4_mode, sizeof a.i4_mode) == 0;
      ASSERT_TRUE(same) << "round " << round << " (" << mbw << "x" << mbh << " macroblocks, qp " << qp
                        << "): macroblock " << i % mbw << "," << i / mbw << ": i16 " << a.i16_cost << "/"
                        << b.i16_cost << " mode " << int(a.i16_mode) << "/" << int(b.i16_mode) << ", i4 "
                        << a.i4_cost << "/" << b.i4_cost << ", chroma " << int(a.chroma_mode) << "/"
                        << int(b.chroma_mode);
      i4_wins += a.i4_cost < a.i16_cost;
    }
    if (round != 5) {
      EXPECT_GT(i4_wins, 0) << "round " << round << ": Intra_4x4 never beat Intra_16x16";
    }
  }
}

}  // namespace
}  // namespace checkgpu
