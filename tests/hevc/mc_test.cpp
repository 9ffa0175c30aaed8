// mc_test.cpp: the HEVC inter prediction reference (common/dsp/hevc_mc) on hand-checked inputs
#include <gtest/gtest.h>

#include <vector>

#include "common/dsp/hevc_mc.h"

namespace {

struct Pic {
  std::vector<uint16_t> buf[3];
  gvc::HevcPlane plane[3];
  Pic(int w, int h, uint16_t fill) {
    const int ws[3] = {w, w / 2, w / 2}, hs[3] = {h, h / 2, h / 2};
    for (int c = 0; c < 3; ++c) {
      buf[c].assign(size_t(ws[c]) * hs[c], fill);
      plane[c] = {buf[c].data(), ws[c], ws[c], hs[c]};
    }
  }
};

// Predicts one block from `refs` into a fresh 64x64 picture and returns it.
Pic predict(const gvc::HevcPlane (*refs)[3], int n_refs, const gvc::HevcMcPb& pb, int bd) {
  Pic out(64, 64, 0);
  gvc::HevcMcBatch b;
  b.refs = refs;
  b.n_refs = n_refs;
  b.pbs = &pb;
  b.n_pbs = 1;
  b.bit_depth_y = b.bit_depth_c = bd;
  gvc::HevcMc::run(b, out.plane);
  return out;
}

gvc::HevcMcPb uni(int x, int y, int w, int h, int mvx, int mvy) {
  gvc::HevcMcPb pb;
  pb.x = x;
  pb.y = y;
  pb.w = w;
  pb.h = h;
  pb.pred_flag[0] = 1;
  pb.mv[0][0] = int16_t(mvx);
  pb.mv[0][1] = int16_t(mvy);
  return pb;
}

// Full-sample motion outside the picture reads the clipped (padded) border samples (8-228).
TEST(HevcMc, FullSampleMotionPadsAtPictureBorders) {
  Pic ref(64, 64, 0);
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 64; ++x) ref.plane[0].at(x, y) = uint16_t((x * 3 + y * 7) & 255);
  const gvc::HevcPlane refs[1][3] = {{ref.plane[0], ref.plane[1], ref.plane[2]}};
  const Pic out = predict(refs, 1, uni(0, 0, 16, 16, -40, -40), 8);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x)
      ASSERT_EQ(out.plane[0].at(x, y), ref.plane[0].at(std::max(0, x - 10), std::max(0, y - 10)))
          << x << "," << y;
}

// Half-sample luma across a 0/255 step: taps (-1, 4, -11, 40, 40, -11, 4, -1) give 32 * 255,
// i.e. 128 after the default weighting, at the sample left of the step; 0 far left of it.
TEST(HevcMc, HalfSampleLumaOnAStep) {
  Pic ref(64, 64, 0);
  for (int y = 0; y < 64; ++y)
    for (int x = 32; x < 64; ++x) ref.plane[0].at(x, y) = 255;
  const gvc::HevcPlane refs[1][3] = {{ref.plane[0], ref.plane[1], ref.plane[2]}};
  const Pic out = predict(refs, 1, uni(16, 8, 16, 8, 2, 0), 8);
  EXPECT_EQ(out.plane[0].at(31, 8), 128);
  EXPECT_EQ(out.plane[0].at(16, 8), 0);
  // the sample one left of that: taps 2..7 of the filter see 255: 4*255-... = (-11+4-1)*255 < 0
  EXPECT_EQ(out.plane[0].at(30, 8), 0);
}

// Every fractional position of both filters keeps a flat picture flat (coefficients sum to
// 64), at 8 and 10 bits, through the two-stage (shift1, shift2) path.
TEST(HevcMc, FlatPictureStaysFlatAtEveryFraction) {
  for (int bd : {8, 10}) {
    const uint16_t v = bd == 8 ? 201 : 1000;
    Pic ref(64, 64, v);
    const gvc::HevcPlane refs[1][3] = {{ref.plane[0], ref.plane[1], ref.plane[2]}};
    for (int fy = 0; fy < 8; ++fy)
      for (int fx = 0; fx < 8; ++fx) {
        const Pic out = predict(refs, 1, uni(8, 8, 16, 16, 4 + fx, -4 + fy), bd);
        for (int c = 0; c < 3; ++c) {
          const int s = c ? 1 : 0;
          for (int y = 8 >> s; y < (24 >> s); ++y)
            for (int x = 8 >> s; x < (24 >> s); ++x)
              ASSERT_EQ(out.plane[c].at(x, y), v) << "bd " << bd << " c " << c << " frac " << fx << "," << fy;
        }
      }
  }
}

// Explicit weighting with weight 1 << denom and offset 0 is the default weighting; an offset
// o adds o << (BitDepth - 8); bi-prediction of one block twice equals uni-prediction.
TEST(HevcMc, WeightingIdentitiesAndOffsets) {
  for (int bd : {8, 10}) {
    Pic ref(64, 64, 0);
    for (int c = 0; c < 3; ++c)
      for (size_t i = 0; i < ref.buf[c].size(); ++i) ref.buf[c][i] = uint16_t((i * 37 + c * 11) % (1u << bd));
    const gvc::HevcPlane refs[1][3] = {{ref.plane[0], ref.plane[1], ref.plane[2]}};
    const gvc::HevcMcPb base = uni(8, 16, 16, 8, 5, -3);
    const Pic def = predict(refs, 1, base, bd);
    gvc::HevcMcPb w = base;
    w.weighted = true;
    w.log2_wd_base[0] = 6;
    w.log2_wd_base[1] = w.log2_wd_base[2] = 3;
    w.weight[0][0] = 64;
    w.weight[0][1] = w.weight[0][2] = 8;
    const Pic same = predict(refs, 1, w, bd);
    w.offset[0][0] = 5;
    w.offset[0][1] = -3;
    const Pic off = predict(refs, 1, w, bd);
    gvc::HevcMcPb bi = base;
    bi.pred_flag[1] = 1;
    bi.mv[1][0] = base.mv[0][0];
    bi.mv[1][1] = base.mv[0][1];
    const Pic b2 = predict(refs, 1, bi, bd);
    const int maxv = (1 << bd) - 1;
    for (int c = 0; c < 3; ++c)
      for (size_t i = 0; i < def.buf[c].size(); ++i) {
        ASSERT_EQ(same.buf[c][i], def.buf[c][i]) << "bd " << bd << " c " << c;
        ASSERT_EQ(b2.buf[c][i], def.buf[c][i]) << "bd " << bd << " c " << c;
        const int o = (c == 0 ? 5 : (c == 1 ? -3 : 0)) << (bd - 8);
        // where the default result was not clipped (predicted area only), the offset adds up
        const bool unclipped = def.buf[c][i] > 0 && def.buf[c][i] < maxv;
        if (unclipped) {
          ASSERT_EQ(off.buf[c][i], std::clamp(int(def.buf[c][i]) + o, 0, maxv))
              << "bd " << bd << " c " << c << " i " << i;
        }
      }
  }
}

}  // namespace
