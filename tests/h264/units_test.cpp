// units_test.cpp: CAVLC, transform and prediction pieces of the encoder against worked examples
#include <gtest/gtest.h>

#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "common/bitstream/bitwriter.h"
#include "common/h264enc/analyse.h"
#include "common/h264enc/cavlc.h"
#include "common/dsp/me.h"
#include "common/h264enc/encoder.h"
#include "common/h264enc/macroblock.h"
#include "common/h264enc/mc.h"
#include "common/h264enc/mvpred.h"
#include "common/h264enc/predict.h"
#include "common/h264enc/transform.h"

namespace gvc::h264 {
namespace {

std::string bits_of(const BitWriter& bw) {
  std::string s;
  for (size_t i = 0; i < bw.bit_count(); i++) s += ((bw.bytes()[i / 8] >> (7 - i % 8)) & 1) ? '1' : '0';
  return s;
}

TEST(Cavlc, RichardsonExampleBlock) {
  // I. Richardson, "H.264 and MPEG-4 Video Compression", CAVLC example 1 (nC = 0): the block
  // 0 3 -1 0 / 0 -1 1 0 / 1 0 0 0 / 0 0 0 0 in zig-zag order, and its published code.
  const int16_t scan[16] = {0, 3, 0, 1, -1, -1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  BitWriter bw;
  EXPECT_EQ(write_residual_block(bw, scan, 16, 0), 5);
  EXPECT_EQ(bits_of(bw), "000010001110010111101101");
}

TEST(Cavlc, EmptyBlocksAndTables) {
  const int16_t zero[16] = {};
  const char* expected[4] = {"1", "11", "1111", "000011"};  // TotalCoeff 0 for nC 0, 2, 4, 8
  const int nc[4] = {0, 2, 4, 8};
  for (int i = 0; i < 4; i++) {
    BitWriter bw;
    write_residual_block(bw, zero, 16, nc[i]);
    EXPECT_EQ(bits_of(bw), expected[i]);
  }
  BitWriter bw;
  write_residual_block(bw, zero, 4, -1);
  EXPECT_EQ(bits_of(bw), "01");  // chroma DC, TotalCoeff 0
}

TEST(Cavlc, LargeLevelsUseEscapeCodes) {
  // One level of kMaxLevel at scan index 0 (nC 0): coeff_token (1, 0) = 000101; levelCode
  // 2 * 2063 - 2, minus 2 as the first level after fewer than three trailing ones = 4122;
  // suffixLength 0: level_prefix 15 and a 12-bit suffix 4122 - 30; total_zeros 0 = "1".
  int16_t scan[16] = {kMaxLevel};
  BitWriter bw;
  write_residual_block(bw, scan, 16, 0);
  std::string expect = "000101" + std::string(15, '0') + "1";
  for (int b = 11; b >= 0; b--) expect += (((4122 - 30) >> b) & 1) ? '1' : '0';
  expect += "1";
  EXPECT_EQ(bits_of(bw), expect);
}

TEST(Transform, FlatResidualSurvivesEveryPath) {
  // A flat residual r gives DC-only blocks; 4x4, Intra_16x16 DC and chroma DC paths must
  // give r back at QP 0 (the quantiser step is below one there).
  for (int r = -40; r <= 40; r += 8) {
    int16_t res[16];
    for (auto& v : res) v = int16_t(r);
    int32_t coef[16], d[16], out[16];
    int16_t level[16];
    fdct4x4(res, coef);
    quant4x4(coef, level, 0, true);
    dequant4x4(level, d, 0);
    idct4x4(d, out);
    for (int i = 0; i < 16; i++) EXPECT_EQ(out[i], r);

    int32_t dc[16], dct[16], dcy[16];
    for (auto& v : dc) v = coef[0];
    fdc_luma(dc, dct);
    int16_t dcl[16];
    quant_dc(dct, dcl, 16, 0, true);
    dequant_dc_luma(dcl, dcy, 0);
    for (int i = 0; i < 16; i++) {
      int32_t dd[16] = {dcy[i]};
      idct4x4(dd, out);
      EXPECT_EQ(out[5], r) << "luma DC " << r;
    }

    int32_t cdc[4] = {coef[0], coef[0], coef[0], coef[0]}, cdct[4], dcc[4];
    int16_t cl[4];
    fdc_chroma(cdc, cdct);
    quant_dc(cdct, cl, 4, 0, true);
    dequant_dc_chroma(cl, dcc, 0);
    int32_t dd[16] = {dcc[3]};
    idct4x4(dd, out);
    EXPECT_EQ(out[10], r) << "chroma DC " << r;
  }
}

TEST(Decimation, ScoresWorkedExamples) {
  auto score = [](std::initializer_list<std::pair<int, int>> levels, int start = 0) {
    int16_t scan[16] = {};
    for (const auto& [pos, v] : levels) scan[pos] = int16_t(v);
    return decimate_score(scan, start);
  };
  EXPECT_EQ(score({}), 0);
  EXPECT_EQ(score({{0, 1}}), 3);             // no zero before it
  EXPECT_EQ(score({{3, -1}}), 1);            // three zeros before it
  EXPECT_EQ(score({{0, 1}, {7, -1}}), 3);    // six zeros before the second: free
  EXPECT_EQ(score({{1, 1}, {2, 1}}), 2 + 3); // one zero before the first, none before the second
  EXPECT_EQ(score({{15, 1}}), 0);
  EXPECT_EQ(score({{5, 2}}), kDecimateKeep);
  EXPECT_EQ(score({{0, 7}, {1, 1}}, 1), 3);  // chroma AC: the DC position is not counted

  int s16[16] = {};
  EXPECT_EQ(decimate_luma_quadrants(s16), 0);
  s16[5] = kDecimateKeep;  // a large level in quadrant 1 keeps it alone
  EXPECT_EQ(decimate_luma_quadrants(s16), 2);
  s16[5] = 0;
  s16[0] = s16[4] = 3;  // 3 and 3: each quadrant below 4, the macroblock at 6
  EXPECT_EQ(decimate_luma_quadrants(s16), 0);
  s16[0] = 4, s16[4] = 1;  // 4 keeps quadrant 0, the macroblock is below 6
  EXPECT_EQ(decimate_luma_quadrants(s16), 0);
  s16[4] = 2;  // now at 6
  EXPECT_EQ(decimate_luma_quadrants(s16), 1);
}

// An inter macroblock whose residual leaves one level of 1 codes no luma (the reconstruction is
// the prediction), where a larger residual keeps its quadrant.
TEST(Decimation, LoneSmallLevelIsDropped) {
  const int qp = 26;
  for (int r = 1; r < 64; r++) {
    uint8_t pred[256], src[256], rec[256];
    for (int i = 0; i < 256; i++) pred[i] = src[i] = 100;
    for (int y = 0; y < 4; y++)
      for (int x = 0; x < 4; x++) src[16 * y + x] = uint8_t(100 + r);  // block 0: a flat residual r
    int16_t res[16], level[16];
    int32_t coef[16];
    diff4x4(src, 16, pred, 16, res);
    fdct4x4(res, coef);
    const int nz = quant4x4(coef, level, qp, false);
    if (nz == 0) continue;
    MbPixels px{};
    px.src[0] = src;
    px.src_stride[0] = 16;
    px.rec[0] = rec;
    px.rec_stride[0] = 16;
    Macroblock mb;
    mb.type = MbType::PL0_16x16;
    code_luma16x16(px, pred, qp, false, mb);
    if (level[0] == 1 || level[0] == -1) {
      EXPECT_EQ(mb.cbp & 15, 0) << "residual " << r;
      EXPECT_EQ(mb.total_coeff_luma[0], 0) << "residual " << r;
      for (int i = 0; i < 256; i++) ASSERT_EQ(rec[i], pred[i]) << "residual " << r << ", sample " << i;
    } else {
      EXPECT_EQ(mb.cbp & 15, 1) << "residual " << r << ": DC level " << level[0];
      EXPECT_EQ(mb.total_coeff_luma[0], 1) << "residual " << r;
      return;  // the first residual past level 1 shown kept
    }
  }
  FAIL() << "no residual up to 63 gave a level above 1";
}

TEST(Predict, PlaneModeFollowsARamp) {
  // Samples v(x, y) = 100 + 2x + 3y continue exactly under Intra_16x16_Plane.
  IntraEdge e;
  e.has_top = e.has_left = e.has_top_left = true;
  e.top()[-1] = 100 - 2 - 3;
  for (int i = 0; i < 16; i++) {
    e.top()[i] = uint8_t(100 + 2 * i - 3);
    e.left[i] = uint8_t(100 - 2 + 3 * i);
  }
  uint8_t pred[256];
  predict_16x16(kI16Plane, e, pred);
  for (int y = 0; y < 16; y++)
    for (int x = 0; x < 16; x++) EXPECT_NEAR(pred[16 * y + x], 100 + 2 * x + 3 * y, 1) << x << "," << y;
  IntraEdge none;
  predict_16x16(kI16Dc, none, pred);
  EXPECT_EQ(pred[255], 128);
}

// A random w x h luma plane made into LumaRefPlanes (seeded by `seed`).
struct RandomRef {
  std::vector<uint8_t> data;
  PlaneView ref;
  LumaRefPlanes planes;
  RandomRef(int w, int h, unsigned seed) : data(size_t(w) * size_t(h)) {
    std::mt19937 rng(seed);
    for (auto& v : data) v = uint8_t(rng() & 255);
    ref = PlaneView{data.data(), w, w, h, MemoryLocation::Host};
    planes.build(ref);
  }
};

// Checks v.predict() against 8.4.2.2.1's samples as the ME core computes them
// (luma_qpel_sample), at every fraction, for bw x bh blocks (at most 32 x 32) at every (x, y)
// of steps (sx, sy) from 30 samples outside the picture to 30 past it; returns the samples
// checked.
int expect_qpel_samples(const LumaRefView& v, const PlaneView& ref, int sx, int sy, std::initializer_list<int> widths,
                        std::initializer_list<int> heights) {
  int checked = 0;
  for (int y = -30; y < ref.height + 30; y += sy) {
    for (int x = -30; x < ref.width + 30; x += sx) {
      for (int f = 0; f < 16; f++) {
        const int16_t mv[2] = {int16_t(f & 3), int16_t(f >> 2)};
        for (const int bw : widths) {
          for (const int bh : heights) {
            uint8_t pred[32 * 32];
            v.predict(x, y, bw, bh, mv, pred, 32);
            for (int j = 0; j < bh; j++)
              for (int i = 0; i < bw; i++, checked++) {
                const int want = luma_qpel_sample(ref, x + i, y + j, f & 3, f >> 2);
                if (pred[32 * j + i] != want) {
                  ADD_FAILURE() << "at (" << x + i << ", " << y + j << ") fraction " << f << ", " << bw << "x" << bh;
                  return checked;
                }
              }
          }
        }
      }
    }
  }
  return checked;
}

TEST(Mc, LumaRefPlanesEqualTheQpelSampleOfMe) {
  // A random 37x23 plane: every fractional position, blocks inside, across and far outside
  // the padded border must give the samples of 8.4.2.2.1 that the ME core computes (widths of
  // 8 and 16 take the SIMD rows inside).
  const RandomRef r(37, 23, 7);
  expect_qpel_samples(r.planes.view(), r.ref, 5, 7, {4, 8, 16}, {4});
}

TEST(Mc, ViewWithOnlyTheFullSamplesPredictsTheSame) {
  // The CUDA backend's decision reads the last reference's G before its b, h and j come down:
  // predict() then computes them, and must give 8.4.2.2.1's samples too, for blocks inside,
  // across and far outside the padded border, up to 16x16, and larger ones (no caller's) by
  // tiles.
  const RandomRef r(53, 41, 11);
  LumaRefView full = r.planes.view();
  full.plane[1] = full.plane[2] = full.plane[3] = nullptr;
  EXPECT_GT(expect_qpel_samples(full, r.ref, 3, 5, {4, 8, 16}, {4, 8, 16}), 1000000);
  expect_qpel_samples(full, r.ref, 29, 23, {32}, {24, 32});
}

// satd_block (SIMD where the host has it) against the plain 4x4-block reference, with
// random samples and the largest differences (a Hadamard coefficient of 16 * 255).
TEST(Satd, BlocksEqualTheReference) {
  std::mt19937 rng(11);
  uint8_t src[16 * 24], pred[16 * 24];
  for (int trial = 0; trial < 400; trial++) {
    for (int i = 0; i < 16 * 24; i++) {
      const int kind = trial % 4;
      src[i] = uint8_t(kind == 0 ? 255 : rng());
      pred[i] = uint8_t(kind == 0 ? 0 : kind == 1 ? 255 - src[i] : rng());
    }
    for (const int w : {4, 8, 16})
      for (const int h : {4, 8, 16})
        ASSERT_EQ(satd_block(src + 3, 24, pred + 1, 16, w, h), satd_block_c(src + 3, 24, pred + 1, 16, w, h))
            << w << "x" << h << ", trial " << trial;
  }
}

// A 3x2-macroblock picture: the current macroblock is (1, 1); its neighbours are P_L0_16x16
// macroblocks with the given refIdxL0 and vector.
struct MvFixture {
  Macroblock mbs[6];
  MbMap map{mbs, 3, 2, 0};
  void set(int mx, int my, int ref, int mvx, int mvy) {
    Macroblock& m = mbs[my * 3 + mx];
    m.type = MbType::PL0_16x16;
    for (auto& r : m.ref_idx) r = int8_t(ref);
    for (auto& v : m.mv) v[0] = int16_t(mvx), v[1] = int16_t(mvy);
  }
};

TEST(MvPred, MedianDirectionalAndSubPartitionNeighbours) {
  MvFixture f;
  f.set(0, 0, 0, 10, 10);    // D
  f.set(1, 0, 0, 8, 8);      // B
  f.set(2, 0, 1, 100, 100);  // C
  f.set(0, 1, 0, 4, 0);      // A
  MotionState st;
  MvContext ctx{&f.map, 1, 1, &st};
  int16_t mvp[2];
  predict_mv(ctx, 0, 0, 4, 4, 0, mvp);  // A and B have ref 0: median of (4,0), (8,8), (100,100)
  EXPECT_EQ(mvp[0], 8);
  EXPECT_EQ(mvp[1], 8);
  predict_mv(ctx, 0, 0, 4, 4, 1, mvp);  // only C has ref 1
  EXPECT_EQ(mvp[0], 100);
  EXPECT_EQ(mvp[1], 100);
  predict_mv(ctx, 0, 0, 4, 2, 0, mvp);  // 16x8 upper: B
  EXPECT_EQ(mvp[0], 8);
  EXPECT_EQ(mvp[1], 8);
  st.set(0, 0, 4, 2, 0, 20, 20);
  predict_mv(ctx, 0, 2, 4, 2, 0, mvp);  // 16x8 lower: A
  EXPECT_EQ(mvp[0], 4);
  EXPECT_EQ(mvp[1], 0);

  MotionState st2;
  MvContext ctx2{&f.map, 1, 1, &st2};
  st2.set(0, 0, 2, 4, 1, -6, 2);
  predict_mv(ctx2, 2, 0, 2, 4, 1, mvp);  // 8x16 right: C (ref 1)
  EXPECT_EQ(mvp[0], 100);
  EXPECT_EQ(mvp[1], 100);

  // 4x4 block 3 of the first 8x8: C lies in the second 8x8, not yet decoded, so D (block 0)
  // replaces it: median of A (3,3), B (2,2), D (10,10).
  MotionState st3;
  MvContext ctx3{&f.map, 1, 1, &st3};
  st3.set(0, 0, 1, 1, 0, 10, 10);
  st3.set(1, 0, 1, 1, 0, 2, 2);
  st3.set(0, 1, 1, 1, 0, 3, 3);
  predict_mv(ctx3, 1, 1, 1, 1, 0, mvp);
  EXPECT_EQ(mvp[0], 3);
  EXPECT_EQ(mvp[1], 3);
  // 8x4 lower half of the second 8x8: C, right of the macroblock below its top row, is never
  // available, so D (block (1, 0): (2, 2)) replaces it; A (block (1, 1)) is left undecided
  // here, so it counts as unavailable; B is the upper 8x4 (40, 0). Median: (2, 0).
  st3.set(2, 0, 2, 1, 0, 40, 0);
  predict_mv(ctx3, 2, 1, 2, 1, 0, mvp);
  EXPECT_EQ(mvp[0], 2);
  EXPECT_EQ(mvp[1], 0);

  // P_Skip: A has ref 0 and vector (0, 0) -> (0, 0); otherwise the 16x16 prediction.
  int16_t mv[2];
  predict_mv_skip(f.map, 1, 1, mv);
  EXPECT_EQ(mv[0], 8);
  EXPECT_EQ(mv[1], 8);
  f.set(0, 1, 0, 0, 0);
  predict_mv_skip(f.map, 1, 1, mv);
  EXPECT_EQ(mv[0], 0);
  EXPECT_EQ(mv[1], 0);
}

TEST(Encoder, RejectsBadParameters) {
  Encoder enc;
  EncoderParams p;
  p.width = 175;
  p.height = 144;
  EXPECT_FALSE(enc.init(p).ok());
  p.width = 176;
  p.rc.qp = 52;
  EXPECT_FALSE(enc.init(p).ok());
  p.rc.qp = 26;
  EXPECT_TRUE(enc.init(p).ok());
}

}  // namespace
}  // namespace gvc::h264
