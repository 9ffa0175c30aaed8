// h264_decide_prep.cpp (checkgpu): what the H.264 encoder's decision prepares on the GPU (the intra search, the SATD caches, the pre-selections) against the CPU's, field for field
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

// A mbw x mbh-macroblock picture cut from the painting at (ox, oy), chroma from other parts.
void fill_from(const Plane& e, int mbw, int mbh, int ox, int oy, Picture& p) {
  p.alloc(mbw, mbh);
  for (int c = 0; c < 3; c++)
    for (int y = 0; y < p.height(c); y++)
      for (int x = 0; x < p.width(c); x++)
        *p.at(c, x, y) = e.pix[size_t(oy + y + 300 * c) * e.stride + size_t(ox + x + 500 * c)];
}

// The intra search: real content at sizes up to 1080p, I and P slices (the P-slice surcharges), one to three
// slices (neighbours across a slice edge are not available), every mode or random candidate
// sets (Intra_4x4_DC and Intra_16x16_DC always among them, as the pruning keeps them), QPs
// over the range.
TEST(H264DecidePrep, IntraSearchEqualsTheCpu) {
  gvc::Backend* be = cuda_backend();
  if (!be) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  const Plane& e = elephants();
  if (e.pix.empty()) GTEST_SKIP() << "no real test content (GVC_ELEPHANTS names the raw 4096x2304 luma file)";
  std::mt19937_64 rng = rng_for("H264IntraPrep");
  gvc::cuda::H264ReconCore core;
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  const int sizes[][2] = {{11, 9}, {22, 18}, {45, 30}, {120, 68}};
  int i4_edges_all = 0;  // over the I slices' rounds: one small picture at a high QP may have none
  for (int round = 0; round < 8; round++) {
    const int mbw = sizes[round % 4][0], mbh = sizes[round % 4][1], n = mbw * mbh;
    Picture src;
    const int ox = int(rng() % 1500), oy = int(rng() % 900);
    fill_from(e, mbw, mbh, ox, oy, src);
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
    const uint64_t ref_ids[1] = {12345};  // not on the device
    std::vector<gvc::MbPartitions> me(static_cast<size_t>(n));
    const gvc::MbPartitionField me_field{me.data(), mbw, mbh, gvc::MemoryLocation::Host};
    const int qp = int(rng() % 52);
    gvc::h264::DecideJob job;
    job.analysis.qp = qp;
    job.analysis.lambda = gvc::h264::lambda_for_qp(qp);
    job.analysis.flags.intra4x4 = round != 5;
    job.src = &src;
    job.refs = refs;
    job.ref_ids = ref_ids;
    job.num_refs = round % 2;
    job.me = &me_field;
    job.intra_cand = round % 4 == 1 || round % 4 == 2 ? cand.data() : nullptr;
    job.slice_of_mb = slice_of_mb.data();
    job.mb_width = mbw;
    job.mb_height = mbh;
    std::vector<MbIntraPrep> want(static_cast<size_t>(n));
    gvc::h264::prepare_intra_cpu(job, want.data());
    const MbIntraPrep* got = nullptr;
    const gvc::h264::MbSatdRef* satd = nullptr;
    const gvc::h264::Preselection* presel = nullptr;
    gvc::MbPartitionField me_host[4];
    CHECK_OK(core.prepare_decision(job, stream.get(), &got, &satd, &presel, me_host));
    int i4_wins = 0, i4_edges = 0;
    for (int i = 0; i < n; i++) {
      const MbIntraPrep& a = want[size_t(i)];
      const MbIntraPrep& b = got[i];
      const bool same = a.i16_cost == b.i16_cost && a.i4_cost == b.i4_cost && a.i16_mode == b.i16_mode &&
                        a.chroma_mode == b.chroma_mode && std::memcmp(a.i4_mode, b.i4_mode, sizeof a.i4_mode) == 0 &&
                        std::memcmp(a.edge_modes, b.edge_modes, sizeof a.edge_modes) == 0;
      ASSERT_TRUE(same) << "round " << round << " (" << mbw << "x" << mbh << " macroblocks, qp " << qp
                        << "): macroblock " << i % mbw << "," << i / mbw << ": i16 " << a.i16_cost << "/"
                        << b.i16_cost << " mode " << int(a.i16_mode) << "/" << int(b.i16_mode) << ", i4 "
                        << a.i4_cost << "/" << b.i4_cost << ", chroma " << int(a.chroma_mode) << "/"
                        << int(b.chroma_mode);
      i4_wins += a.i4_cost < a.i16_cost;
      for (uint8_t m : a.edge_modes) i4_edges += m != 2 && m != 255;
    }
    if (round != 5) {
      EXPECT_GT(i4_wins, 0) << "round " << round << ": Intra_4x4 never beat Intra_16x16";
    }
    if (job.num_refs == 0 && round != 5) i4_edges_all += i4_edges;
    // The references are not on the device: no SATD caches.
    EXPECT_EQ(satd, nullptr);
  }
  // the I slices' later passes ran against Intra_4x4 stand-ins
  EXPECT_GT(i4_edges_all, 0);
}

// The SATD caches of P slices with one to three references that the device holds (kept
// reconstructions of earlier jobs), ME results with random vectors and costs (so that the
// pre-selection keeps every shape) in host or device memory, with and without the
// pre-selection, which comes down too; the host views of the ME results equal them. The caches
// come in one band or, as the encoder takes them, in two (the first on return).
TEST(H264DecidePrep, SatdCachesEqualTheCpu) {
  gvc::Backend* be = cuda_backend();
  if (!be) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  const Plane& e = elephants();
  if (e.pix.empty()) GTEST_SKIP() << "no real test content (GVC_ELEPHANTS names the raw 4096x2304 luma file)";
  std::mt19937_64 rng = rng_for("H264SatdCache");
  gvc::cuda::H264ReconCore core;
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  const int sizes[][2] = {{11, 9}, {22, 18}, {45, 30}, {120, 68}};
  uint64_t next_id = 1;
  for (int round = 0; round < 6; round++) {
    const int mbw = sizes[round % 4][0], mbh = sizes[round % 4][1], n = mbw * mbh;
    const int num_refs = 1 + round % 3;
    const int ox = int(rng() % 1500), oy = int(rng() % 900);
    std::vector<uint16_t> slice_of_mb(static_cast<size_t>(n), 0);
    // The references: reconstructions of Intra_16x16 DC frames, which the core keeps by id.
    std::vector<gvc::h264::RefPicture> dpb(static_cast<size_t>(num_refs));
    std::vector<const gvc::h264::RefPicture*> refs;
    std::vector<uint64_t> ids;
    for (int r = 0; r < num_refs; r++) {
      Picture ref_src;
      fill_from(e, mbw, mbh, ox + 3 * r + 1, oy + 2 * r + 1, ref_src);
      std::vector<gvc::h264::Macroblock> mbs(static_cast<size_t>(n));
      for (auto& m : mbs) m.i16_mode = 2;
      gvc::h264::RefPicture& ref = dpb[size_t(r)];
      ref.pic.alloc(mbw, mbh);
      ref.id = next_id++;
      gvc::h264::ReconJob rj;
      rj.src = &ref_src;
      rj.rec = &ref.pic;
      rj.rec_id = ref.id;
      rj.rec_luma = &ref.luma;
      rj.mbs = mbs.data();
      rj.mb_width = mbw;
      rj.mb_height = mbh;
      rj.qp = rj.qpc = 20;
      rj.deblock_params.qp = 20;
      CHECK_OK(core.run(rj, stream.get()));
      CHECK_OK(core.finish());
      refs.push_back(&ref);
      ids.push_back(ref.id);
    }
    Picture src;
    fill_from(e, mbw, mbh, ox, oy, src);
    std::vector<std::vector<gvc::MbPartitions>> me(static_cast<size_t>(num_refs),
                                                   std::vector<gvc::MbPartitions>(static_cast<size_t>(n)));
    std::vector<gvc::MbPartitionField> fields;
    for (auto& m : me) {
      for (auto& parts : m)
        for (auto& p : parts.part) p = {int16_t(int(rng() % 257) - 128), int16_t(int(rng() % 129) - 64), uint32_t(rng() % 3000)};
      fields.push_back({m.data(), mbw, mbh, gvc::MemoryLocation::Host});
    }
    const int qp = int(rng() % 52);
    gvc::h264::DecideJob job;
    job.analysis.qp = qp;
    job.analysis.lambda = gvc::h264::lambda_for_qp(qp);
    job.analysis.flags.preselect = round != 4;
    job.src = &src;
    job.refs = refs.data();
    job.ref_ids = ids.data();
    job.num_refs = num_refs;
    job.me = fields.data();
    job.slice_of_mb = slice_of_mb.data();
    job.mb_width = mbw;
    job.mb_height = mbh;
    std::vector<gvc::h264::MbSatdRef> want(size_t(n) * size_t(num_refs));
    std::vector<gvc::h264::Preselection> want_presel(static_cast<size_t>(n));
    gvc::h264::prepare_satd_cpu(job, want.data(), want_presel.data());
    // Odd rounds: the ME results where the encoder's motion search leaves them on a CUDA
    // backend (motion_results()), read there and downloaded for the wavefront.
    std::vector<gvc::MbPartitionField> device_fields;
    if (round % 2) {
      for (int r = 0; r < num_refs; r++) {
        gvc::MbPartitions* d = core.motion_results(r, n);
        ASSERT_NE(d, nullptr);
        ASSERT_EQ(cudaMemcpy(d, me[size_t(r)].data(), size_t(n) * sizeof(gvc::MbPartitions), cudaMemcpyHostToDevice),
                  cudaSuccess);
        device_fields.push_back({d, mbw, mbh, gvc::MemoryLocation::Device});
      }
      job.me = device_fields.data();
    }
    const MbIntraPrep* intra = nullptr;
    const gvc::h264::MbSatdRef* got = nullptr;
    const gvc::h264::Preselection* presel = nullptr;
    gvc::MbPartitionField me_host[4];
    // From round 2 on, as the encoder takes them: the first band of rows' caches at once, the
    // others once rest_prepared() says so (two bands where there are 16 rows or more).
    const bool banded = round >= 2;
    int rows = -1;
    CHECK_OK(core.prepare_decision(job, stream.get(), &intra, &got, &presel, me_host, banded ? &rows : nullptr));
    ASSERT_NE(got, nullptr) << "round " << round << ": the device holds the references";
    if (banded) {
      ASSERT_EQ(rows, mbh >= 16 ? mbh / 2 : mbh) << "round " << round;
      std::vector<gvc::h264::MbSatdRef> first(got, got + size_t(rows) * size_t(mbw) * size_t(num_refs));
      ASSERT_TRUE(core.rest_prepared(5000)) << "round " << round;
      CHECK_OK(core.wait_prepared());
      ASSERT_EQ(0, std::memcmp(first.data(), want.data(), first.size() * sizeof(gvc::h264::MbSatdRef)))
          << "round " << round << ": the first " << rows << " rows' caches on return";
    }
    // The pre-selections the wavefront takes instead of making them: the CPU's, where made.
    if (job.analysis.flags.preselect) {
      ASSERT_NE(presel, nullptr) << "round " << round;
      int shaped = 0;  // macroblocks with a shape besides P_L0_16x16
      for (int i = 0; i < n; i++) {
        const gvc::h264::Preselection& a = want_presel[size_t(i)];
        const gvc::h264::Preselection& b = presel[i];
        ASSERT_TRUE(a.try16x8 == b.try16x8 && a.try8x16 == b.try8x16 && a.try8x8 == b.try8x8 &&
                    std::memcmp(a.sub, b.sub, sizeof a.sub) == 0)
            << "round " << round << ": macroblock " << i << "'s pre-selection";
        shaped += a.try16x8 || a.try8x16 || a.try8x8;
      }
      EXPECT_GT(shaped, 0) << "round " << round << ": only P_L0_16x16 pre-selected";
    } else {
      EXPECT_EQ(presel, nullptr) << "round " << round << ": no pre-selection asked for";
    }
    for (int r = 0; r < num_refs; r++) {
      ASSERT_EQ(me_host[r].loc, gvc::MemoryLocation::Host);
      ASSERT_EQ(0, std::memcmp(me_host[r].data, me[size_t(r)].data(), size_t(n) * sizeof(gvc::MbPartitions)))
          << "round " << round << ": the host view of reference " << r << "'s ME results";
    }
    int computed = 0;
    for (size_t i = 0; i < want.size(); i++) {
      const auto& a = want[i];
      const auto& b = got[i];
      ASSERT_EQ(0, std::memcmp(&a, &b, sizeof a))
          << "round " << round << ": macroblock " << i / size_t(num_refs) << ", reference " << i % size_t(num_refs)
          << ": 16x16 at the ME vector " << a.grid[0][12] << "/" << b.grid[0][12];
      for (const auto& g : a.grid)
        for (const uint16_t v : g) computed += v != gvc::h264::kSatdMiss;
    }
    if (job.analysis.flags.preselect) {
      EXPECT_GT(computed, 25 * n * num_refs) << "round " << round << ": only P_L0_16x16's grids";
    }
  }
}

}  // namespace
}  // namespace checkgpu
