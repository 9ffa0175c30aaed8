// params_test.cpp: PicParams::derive on hand-made parameter sets: the conformance window's checks, the z-scan order inside a CTB
#include <gtest/gtest.h>

#include <climits>

#include "common/hevcdec/params.h"

namespace {

// A 4:2:0 8-bit SPS of width x height with CTBs of 1 << log2_ctb and minimum TBs of
// 1 << log2_min_tb (minimum CBs 8, or 16 where the minimum TB is 8), and a PPS without tiles.
struct Sets {
  GstH265SPS sps{};
  GstH265PPS pps{};
  Sets(int width, int height, int log2_ctb = 4, int log2_min_tb = 2) {
    sps.chroma_format_idc = 1;
    sps.pic_width_in_luma_samples = width;
    sps.pic_height_in_luma_samples = height;
    const int log2_min_cb = log2_min_tb < 3 ? 3 : log2_min_tb + 1;
    sps.log2_min_luma_coding_block_size_minus3 = log2_min_cb - 3;
    sps.log2_diff_max_min_luma_coding_block_size = log2_ctb - log2_min_cb;
    sps.log2_min_transform_block_size_minus2 = log2_min_tb - 2;
    sps.log2_diff_max_min_transform_block_size = (log2_ctb < 5 ? log2_ctb : 5) - log2_min_tb;
    pps.sps = &sps;
  }
  void window(int x, int y, int w, int h) {
    sps.conformance_window_flag = 1;
    sps.crop_rect_x = x;
    sps.crop_rect_y = y;
    sps.crop_rect_width = w;
    sps.crop_rect_height = h;
  }
};

TEST(HevcPicParams, ConformanceWindowInsideThePictureOnly) {
  gvc::hevc::PicParams pp;
  Sets ok(64, 48);
  ASSERT_TRUE(pp.derive(&ok.sps, &ok.pps));
  ok.window(2, 4, 60, 40);  // a window flush with the right edge
  EXPECT_TRUE(pp.derive(&ok.sps, &ok.pps));
  struct Bad {
    int x, y, w, h;
  } const bad[] = {
      {2, 0, 64, 48},                // past the right edge
      {0, 2, 64, 48},                // past the bottom
      {0, 0, 0, 48},                 // empty
      {0, 0, -2, 48},                // offsets larger than the picture
      {-2, 0, 64, 48},               // (crop_rect_x from a wrapped left offset)
      {INT_MAX - 1, 0, 64, 48},      // an x whose sum with the width overflows an int
      {0, INT_MAX - 1, 64, 48},
  };
  for (const Bad& b : bad) {
    Sets s(64, 48);
    s.window(b.x, b.y, b.w, b.h);
    EXPECT_FALSE(pp.derive(&s.sps, &s.pps)) << b.x << "," << b.y << " " << b.w << "x" << b.h;
  }
}

// 6.5.2's MinTbAddrZs inside a CTB (the spec's loop over the bits of x and y) against
// PicParams::zscan_in_ctb, for every CTB size and minimum TB size.
TEST(HevcPicParams, ZscanInsideTheCtbIsThe652Order) {
  for (int log2_ctb = 4; log2_ctb <= 6; ++log2_ctb)
    for (int log2_min_tb = 2; log2_min_tb <= 4 && log2_min_tb < log2_ctb; ++log2_min_tb) {
      Sets s(3 << log2_ctb, 2 << log2_ctb, log2_ctb, log2_min_tb);
      gvc::hevc::PicParams pp;
      ASSERT_TRUE(pp.derive(&s.sps, &s.pps)) << log2_ctb << " " << log2_min_tb;
      const int shift = log2_ctb - log2_min_tb;
      for (int y = 0; y < (2 << log2_ctb); y += 4)
        for (int x = 0; x < (3 << log2_ctb); x += 4) {
          const int tx = x >> log2_min_tb, ty = y >> log2_min_tb;
          int v = 0;
          for (int i = 0; i < shift; ++i) {
            const int m = 1 << i;
            v += (m & tx ? m * m : 0) + (m & ty ? 2 * m * m : 0);
          }
          ASSERT_EQ(pp.zscan_in_ctb(x, y), v) << "CTB " << (1 << log2_ctb) << ", min TB " << (1 << log2_min_tb)
                                             << " at " << x << "," << y;
        }
    }
}

}  // namespace
