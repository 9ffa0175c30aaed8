// intra_prune_test.cpp: CPU intra-mode pruning: edges give the modes along them, flat gives DC
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <vector>

#include "common/dsp/intra_prune.h"
#include "common/dsp/me.h"

namespace {

using gvc::IntraCandidateField;
using gvc::IntraMbCandidates;
using gvc::IntraPruneMethod;
using gvc::PlaneView;

constexpr uint16_t bit(int m) { return uint16_t(1u << m); }
constexpr uint16_t kDcOnly4 = bit(gvc::kI4Dc);
constexpr uint16_t kVertical4 =
    bit(gvc::kI4Vertical) | bit(gvc::kI4VerticalRight) | bit(gvc::kI4VerticalLeft) | kDcOnly4;
constexpr uint16_t kHorizontal4 =
    bit(gvc::kI4Horizontal) | bit(gvc::kI4HorizontalDown) | bit(gvc::kI4HorizontalUp) | kDcOnly4;
constexpr uint16_t kDiagDownLeft4 = bit(gvc::kI4DiagonalDownLeft) | bit(gvc::kI4HorizontalUp) |
                                    bit(gvc::kI4VerticalLeft) | kDcOnly4;
constexpr uint16_t kDiagDownRight4 = bit(gvc::kI4DiagonalDownRight) |
                                     bit(gvc::kI4VerticalRight) | bit(gvc::kI4HorizontalDown) |
                                     kDcOnly4;

// A 4:2:0 picture whose luma and chroma samples are given by functions of (x, y).
struct Picture {
  int w, h, cw, ch;
  std::vector<uint8_t> y, u, v;
  Picture(int width, int height, const std::function<int(int, int)>& luma,
          const std::function<int(int, int)>& chroma)
      : w(width), h(height), cw((width + 1) / 2), ch((height + 1) / 2) {
    y.resize(size_t(w) * h);
    u.resize(size_t(cw) * ch);
    v.resize(size_t(cw) * ch);
    for (int j = 0; j < h; j++)
      for (int i = 0; i < w; i++) y[size_t(j) * w + i] = uint8_t(luma(i, j));
    for (int j = 0; j < ch; j++)
      for (int i = 0; i < cw; i++)
        u[size_t(j) * cw + i] = v[size_t(j) * cw + i] = uint8_t(chroma(i, j));
  }
  std::vector<IntraMbCandidates> prune(IntraPruneMethod m) const {
    const int cols = gvc::mb_count(w), rows = gvc::mb_count(h);
    std::vector<IntraMbCandidates> out(size_t(cols) * rows);
    IntraCandidateField f{out.data(), cols, rows, gvc::MemoryLocation::Host};
    gvc::Status st = gvc::make_cpu_intra_prune()->run(
        {y.data(), w, w, h}, {u.data(), cw, cw, ch}, {v.data(), cw, cw, ch}, m, f);
    EXPECT_TRUE(st.ok()) << st.message();
    return out;
  }
};

// luma4x4BlkIdx of the 4x4 block at column bx, row by of a macroblock (6.4.3).
int blk(int bx, int by) { return (by / 2) * 8 + (bx / 2) * 4 + (by % 2) * 2 + bx % 2; }

TEST(IntraPruneBlocks, Luma4x4BlkIdxOrder) {
  for (int idx = 0; idx < 16; idx++)
    EXPECT_EQ(blk(gvc::luma4x4_blk_x(idx), gvc::luma4x4_blk_y(idx)), idx);
  EXPECT_EQ(gvc::luma4x4_blk_x(5), 3);
  EXPECT_EQ(gvc::luma4x4_blk_y(10), 3);
}

TEST(IntraPruneSample, KirschStepEdges) {
  // 3x3 patches, (1, 1) the sample: bright on one side.
  struct P { const char* rows; int mag, bin; } patches[] = {
      {"..#..#..#", 3825, 0},  // bright east: vertical edge
      {"#..#..#..", 3825, 0},  // bright west: same orientation
      {"###......", 3825, 4},  // bright north: horizontal edge
      {".##..#...", 3825, 2},  // bright north-east: 135-degree edge (diagonal down-right)
      {"##.#.....", 3825, 6},  // bright north-west: 45-degree edge (diagonal down-left)
      {".........", 0, 0},
      {".#.......", 1275, 4},  // one bright neighbour: the middle of three equal masks
  };
  for (const P& p : patches) {
    uint8_t px[9];
    for (int i = 0; i < 9; i++) px[i] = p.rows[i] == '#' ? 255 : 0;
    int mag, bin;
    gvc::intra_prune_sample({px, 3, 3, 3}, 1, 1, IntraPruneMethod::Kirsch, &mag, &bin);
    EXPECT_EQ(mag, p.mag) << p.rows;
    EXPECT_EQ(bin, p.bin) << p.rows;
  }
}

TEST(IntraPruneSample, SobelStepEdges) {
  struct P { const char* rows; int mag, bin; } patches[] = {
      {"..#..#..#", 1020, 0}, {"###......", 1020, 4}, {"......###", 1020, 4},
      {".##..#...", 1530, 2}, {"##.#.....", 1530, 6}, {".........", 0, 0},
  };
  for (const P& p : patches) {
    uint8_t px[9];
    for (int i = 0; i < 9; i++) px[i] = p.rows[i] == '#' ? 255 : 0;
    int mag, bin;
    gvc::intra_prune_sample({px, 3, 3, 3}, 1, 1, IntraPruneMethod::Sobel, &mag, &bin);
    EXPECT_EQ(mag, p.mag) << p.rows;
    EXPECT_EQ(bin, p.bin) << p.rows;
  }
}

class IntraPruneEdges : public testing::TestWithParam<IntraPruneMethod> {};

// A vertical edge between luma columns 5 and 6 (chroma 2 and 3) of a 32x32 picture: the 4x4
// blocks it crosses (column 1) get vertical with its neighbours and DC, the others DC only.
TEST_P(IntraPruneEdges, VerticalEdgeGivesVertical) {
  Picture pic(32, 32, [](int x, int) { return x < 6 ? 40 : 200; },
              [](int x, int) { return x < 3 ? 90 : 160; });
  const auto out = pic.prune(GetParam());
  for (int by = 0; by < 4; by++)
    for (int bx = 0; bx < 4; bx++)
      EXPECT_EQ(out[0].i4x4[blk(bx, by)], bx == 1 ? kVertical4 : kDcOnly4) << bx << "," << by;
  EXPECT_EQ(out[0].i16x16, bit(gvc::kI16Vertical) | bit(gvc::kI16Dc));
  EXPECT_EQ(out[0].chroma, bit(gvc::kChromaVertical) | bit(gvc::kChromaDc));
  for (int mb : {1, 3}) {  // right of the edge; macroblock 2, below 0, holds it too
    EXPECT_EQ(out[mb].i16x16, bit(gvc::kI16Dc)) << mb;
    EXPECT_EQ(out[mb].chroma, bit(gvc::kChromaDc)) << mb;
    for (uint16_t m : out[mb].i4x4) EXPECT_EQ(m, kDcOnly4) << mb;
  }
}

TEST_P(IntraPruneEdges, HorizontalEdgeGivesHorizontal) {
  Picture pic(32, 32, [](int, int y) { return y < 22 ? 230 : 10; },
              [](int, int y) { return y < 11 ? 30 : 60; });
  const auto out = pic.prune(GetParam());
  for (int mb : {2, 3}) {  // bottom row of macroblocks; the edge crosses luma block row 1
    for (int by = 0; by < 4; by++)
      for (int bx = 0; bx < 4; bx++)
        EXPECT_EQ(out[mb].i4x4[blk(bx, by)], by == 1 ? kHorizontal4 : kDcOnly4)
            << mb << " " << bx << "," << by;
    EXPECT_EQ(out[mb].i16x16, bit(gvc::kI16Horizontal) | bit(gvc::kI16Dc));
    EXPECT_EQ(out[mb].chroma, bit(gvc::kChromaHorizontal) | bit(gvc::kChromaDc));
  }
  EXPECT_EQ(out[0].i16x16, bit(gvc::kI16Dc));
  EXPECT_EQ(out[0].chroma, bit(gvc::kChromaDc));
}

// 45-degree step edges: bright up-left of x + y = c gives diagonal down-left along the edge,
// bright up-right of x - y = c diagonal down-right; plane for 16x16 and chroma.
TEST_P(IntraPruneEdges, DiagonalEdgesGiveDiagonals) {
  Picture dl(16, 16, [](int x, int y) { return x + y < 16 ? 220 : 20; },
             [](int x, int y) { return x + y < 8 ? 220 : 20; });
  Picture dr(16, 16, [](int x, int y) { return x - y > 0 ? 220 : 20; },
             [](int x, int y) { return x - y > 0 ? 220 : 20; });
  const auto a = dl.prune(GetParam());
  const auto b = dr.prune(GetParam());
  for (int by = 0; by < 4; by++)
    for (int bx = 0; bx < 4; bx++) {
      // The edge samples have x + y in 14..17 (a ring reaches one step further).
      EXPECT_EQ(a[0].i4x4[blk(bx, by)], bx + by >= 2 && bx + by <= 4 ? kDiagDownLeft4 : kDcOnly4)
          << bx << "," << by;
      if (bx == by) {
        EXPECT_EQ(b[0].i4x4[blk(bx, by)], kDiagDownRight4) << bx << "," << by;
      } else if (bx > by + 1 || by > bx + 1) {
        EXPECT_EQ(b[0].i4x4[blk(bx, by)], kDcOnly4) << bx << "," << by;
      }
    }
  for (const auto* r : {&a, &b}) {
    EXPECT_EQ((*r)[0].i16x16, bit(gvc::kI16Plane) | bit(gvc::kI16Dc));
    EXPECT_EQ((*r)[0].chroma, bit(gvc::kChromaPlane) | bit(gvc::kChromaDc));
  }
}

// A bright quadrant at the macroblock's centre: transpose-symmetric, so its vertical and
// horizontal edges weigh the same; the tie goes to the least mode number (vertical).
TEST_P(IntraPruneEdges, CornerTieGoesToVertical) {
  Picture pic(16, 16, [](int x, int y) { return x >= 8 && y >= 8 ? 250 : 5; },
              [](int x, int y) { return x >= 4 && y >= 4 ? 250 : 5; });
  const auto out = pic.prune(GetParam());
  EXPECT_EQ(out[0].i4x4[blk(2, 2)], kVertical4);
  EXPECT_EQ(out[0].i4x4[blk(1, 2)], kVertical4);
  EXPECT_EQ(out[0].i4x4[blk(2, 1)], kHorizontal4);
  EXPECT_EQ(out[0].i4x4[blk(0, 0)], kDcOnly4);
  EXPECT_EQ(out[0].i16x16, bit(gvc::kI16Vertical) | bit(gvc::kI16Dc));
  EXPECT_EQ(out[0].chroma, bit(gvc::kChromaVertical) | bit(gvc::kChromaDc));
}

TEST_P(IntraPruneEdges, FlatGivesDcOnly) {
  Picture pic(48, 40, [](int, int) { return 77; }, [](int, int) { return 128; });
  for (const IntraMbCandidates& mb : pic.prune(GetParam())) {
    for (uint16_t m : mb.i4x4) EXPECT_EQ(m, kDcOnly4);
    EXPECT_EQ(mb.i16x16, bit(gvc::kI16Dc));
    EXPECT_EQ(mb.chroma, bit(gvc::kChromaDc));
  }
}

// Every mask of textured content: 4 of 9 modes with DC, 2 of 4 with DC.
TEST_P(IntraPruneEdges, NoiseGivesFourAndTwoCandidates) {
  std::mt19937 rng(7);
  std::vector<uint8_t> n(64 * 64);
  for (auto& v : n) v = uint8_t(rng());
  Picture pic(64, 48, [&](int x, int y) { return n[y * 64 + x]; },
              [&](int x, int y) { return n[(y + 30) * 64 + x + 1]; });
  for (const IntraMbCandidates& mb : pic.prune(GetParam())) {
    for (uint16_t m : mb.i4x4) {
      EXPECT_EQ(__builtin_popcount(m), 4);
      EXPECT_TRUE(m & kDcOnly4);
    }
    EXPECT_EQ(__builtin_popcount(mb.i16x16), 2);
    EXPECT_TRUE(mb.i16x16 & bit(gvc::kI16Dc));
    EXPECT_EQ(__builtin_popcount(mb.chroma), 2);
    EXPECT_TRUE(mb.chroma & bit(gvc::kChromaDc));
  }
}

// A size that is not a multiple of 16 gives what its explicit edge extension gives.
TEST_P(IntraPruneEdges, EdgeExtensionOfOddSizes) {
  std::mt19937 rng(11);
  std::vector<uint8_t> n(64 * 64);
  for (auto& v : n) v = uint8_t(rng() % 64 + (rng() % 4) * 60);
  auto luma = [&](int x, int y) { return n[y * 64 + x]; };
  auto chroma = [&](int x, int y) { return n[(y + 40) * 64 + x + 20]; };
  Picture odd(37, 19, luma, chroma);
  Picture ext(48, 32, [&](int x, int y) { return luma(std::min(x, 36), std::min(y, 18)); },
              [&](int x, int y) { return chroma(std::min(x, 18), std::min(y, 9)); });
  const auto a = odd.prune(GetParam());
  const auto b = ext.prune(GetParam());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); i++) {
    for (int k = 0; k < 16; k++) EXPECT_EQ(a[i].i4x4[k], b[i].i4x4[k]) << i << " " << k;
    EXPECT_EQ(a[i].i16x16, b[i].i16x16) << i;
    EXPECT_EQ(a[i].chroma, b[i].chroma) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, IntraPruneEdges,
                         testing::Values(IntraPruneMethod::Kirsch, IntraPruneMethod::Sobel),
                         [](const testing::TestParamInfo<IntraPruneMethod>& i) {
                           return i.param == IntraPruneMethod::Kirsch ? "kirsch" : "sobel";
                         });

// Kirsch alone resolves the directions between its masks: a step edge two rows down per
// column across gives vertical-right (26.6 degrees off vertical), one row down per two
// columns across horizontal-down; Sobel's bins do too.
TEST(IntraPruneDirections, BetweenMasks) {
  for (IntraPruneMethod m : {IntraPruneMethod::Kirsch, IntraPruneMethod::Sobel}) {
    Picture vr(64, 64, [](int x, int y) { return 2 * x - y > 16 ? 200 : 30; },
               [](int x, int y) { return 2 * x - y > 8 ? 200 : 30; });
    Picture hd(64, 64, [](int x, int y) { return x - 2 * y > -16 ? 200 : 30; },
               [](int x, int y) { return x - 2 * y > -8 ? 200 : 30; });
    int vr_hits = 0, hd_hits = 0, vr_blocks = 0, hd_blocks = 0;
    const auto a = vr.prune(m), b = hd.prune(m);
    for (size_t i = 0; i < a.size(); i++)
      for (int k = 0; k < 16; k++) {
        if (a[i].i4x4[k] == kDcOnly4) continue;
        vr_blocks++;
        // The dominant mode is the one whose two neighbours are in the set too.
        const uint16_t vr_set = bit(gvc::kI4VerticalRight) | bit(gvc::kI4Vertical) |
                                bit(gvc::kI4DiagonalDownRight) | kDcOnly4;
        vr_hits += a[i].i4x4[k] == vr_set;
      }
    for (size_t i = 0; i < b.size(); i++)
      for (int k = 0; k < 16; k++) {
        if (b[i].i4x4[k] == kDcOnly4) continue;
        hd_blocks++;
        const uint16_t hd_set = bit(gvc::kI4HorizontalDown) | bit(gvc::kI4Horizontal) |
                                bit(gvc::kI4DiagonalDownRight) | kDcOnly4;
        hd_hits += b[i].i4x4[k] == hd_set;
      }
    const char* name = m == IntraPruneMethod::Kirsch ? "kirsch" : "sobel";
    EXPECT_GT(vr_blocks, 0);
    EXPECT_GT(hd_blocks, 0);
    // Most edge blocks: the staircase of a digital edge makes some samples vote for its
    // neighbouring directions.
    EXPECT_GE(vr_hits * 2, vr_blocks) << name << ": " << vr_hits << " of " << vr_blocks;
    EXPECT_GE(hd_hits * 2, hd_blocks) << name << ": " << hd_hits << " of " << hd_blocks;
  }
}

TEST(IntraPrune, NoneGivesEveryMode) {
  Picture pic(20, 20, [](int x, int) { return x * 12; }, [](int, int y) { return y * 20; });
  for (const IntraMbCandidates& mb : pic.prune(IntraPruneMethod::None)) {
    for (uint16_t m : mb.i4x4) EXPECT_EQ(m, gvc::kAllI4Modes);
    EXPECT_EQ(mb.i16x16, gvc::kAllI16Modes);
    EXPECT_EQ(mb.chroma, gvc::kAllChromaModes);
  }
}

TEST(IntraPrune, RejectsBadShapes) {
  std::vector<uint8_t> px(64 * 64, 3);
  std::vector<IntraMbCandidates> out(4);
  IntraCandidateField f{out.data(), 2, 2, gvc::MemoryLocation::Host};
  auto ip = gvc::make_cpu_intra_prune();
  const PlaneView y{px.data(), 32, 31, 32}, c{px.data(), 16, 16, 16}, c15{px.data(), 16, 15, 16};
  EXPECT_TRUE(ip->run(y, c, c, IntraPruneMethod::Kirsch, f).ok());
  EXPECT_FALSE(ip->run(y, c15, c, IntraPruneMethod::Kirsch, f).ok());
  EXPECT_FALSE(ip->run(y, c, c15, IntraPruneMethod::Sobel, f).ok());
  f.mb_rows = 1;
  EXPECT_FALSE(ip->run(y, c, c, IntraPruneMethod::Kirsch, f).ok());
  f.mb_rows = 2;
  const PlaneView on_device{px.data(), 32, 31, 32, gvc::MemoryLocation::Device};
  EXPECT_FALSE(ip->run(on_device, c, c, IntraPruneMethod::Kirsch, f).ok());
}

}  // namespace
