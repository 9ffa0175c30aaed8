// me_naive_test.cpp: the CPU motion search against a naive per-partition brute force, and
// gvc::luma_qpel_sample against a direct reading of H.264 8.4.2.2.1
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "tests/unit/me_oracle.h"

namespace {

using gvc::MeParams;
using gvc::MvCost;
using gvc::Subpel;
using gvc_test::Plane;

const char* subpel_name(Subpel s) {
  return s == Subpel::None ? "none" : (s == Subpel::Half ? "half" : "quarter");
}

struct Case {
  int w, h, range;
  uint32_t lambda;
  Subpel subpel;
  bool with_predictors;
  int content;  // 0: white noise, 1: three levels (many equal costs), 2: moved texture
};

std::string describe(uint32_t seed, const Case& c) {
  std::ostringstream os;
  os << "seed " << seed << ": " << c.w << "x" << c.h << " range " << c.range << " lambda "
     << c.lambda << " subpel " << subpel_name(c.subpel) << " predictors "
     << (c.with_predictors ? "yes" : "no") << " content " << c.content;
  return os.str();
}

// Compares the CPU reference with the naive search on every partition of every macroblock.
void check_against_naive(uint32_t seed, const Case& c) {
  SCOPED_TRACE(describe(seed, c));
  std::mt19937 rng(seed);
  Plane ref, cur;
  switch (c.content) {
    case 0:
      ref = gvc_test::random_plane(rng, c.w, c.h);
      cur = gvc_test::random_plane(rng, c.w, c.h);
      break;
    case 1:
      ref = gvc_test::random_plane(rng, c.w, c.h, 3);
      cur = gvc_test::random_plane(rng, c.w, c.h, 3);
      break;
    default: {
      ref = gvc_test::textured_plane(rng, c.w, c.h);
      std::uniform_int_distribution<int> d(-c.range, c.range);
      cur = gvc_test::shifted_plane(ref, d(rng), d(rng), rng, 3);
    }
  }
  const int mb_cols = gvc::mb_count(c.w), mb_rows = gvc::mb_count(c.h);
  std::vector<MvCost> preds(size_t(mb_cols) * mb_rows);
  std::uniform_int_distribution<int> pd(-4 * c.range, 4 * c.range);
  for (auto& p : preds) p = {int16_t(pd(rng)), int16_t(pd(rng)), 0};

  MeParams params;
  params.range = c.range;
  params.lambda = c.lambda;
  params.subpel = c.subpel;
  params.predictors = c.with_predictors ? preds.data() : nullptr;

  auto got = gvc_test::cpu_search(cur.view(), ref.view(), params);
  ASSERT_EQ(got.size(), preds.size());
  int mismatches = 0;
  for (int mby = 0; mby < mb_rows; mby++)
    for (int mbx = 0; mbx < mb_cols; mbx++)
      for (int part = 0; part < gvc::kNumPartitions; part++) {
        MvCost want =
            gvc_test::naive_partition_search(cur.view(), ref.view(), mbx, mby, part, params);
        MvCost have = got[size_t(mby) * mb_cols + mbx].part[part];
        if (have.mvx != want.mvx || have.mvy != want.mvy || have.cost != want.cost) {
          if (++mismatches <= 10)
            ADD_FAILURE() << "MB (" << mbx << "," << mby << ") partition " << part << ": cpu "
                          << gvc_test::describe(have) << ", naive "
                          << gvc_test::describe(want);
        }
      }
  EXPECT_EQ(mismatches, 0);
}

TEST(CpuSearchVsNaive, RandomSizesRangesAndParams) {
  for (uint32_t seed : gvc_test::test_seeds({11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                             23, 24, 25, 26, 27, 28})) {
    std::mt19937 rng(seed * 7919u);
    Case c;
    // Sizes up to 3x3 macroblocks, most of them not multiples of 16.
    c.w = std::uniform_int_distribution<int>(1, 48)(rng);
    c.h = std::uniform_int_distribution<int>(1, 44)(rng);
    c.range = std::uniform_int_distribution<int>(8, 16)(rng);
    const uint32_t lambdas[] = {0, 1, 4, 17, 300};
    c.lambda = lambdas[seed % 5];
    c.subpel = Subpel(seed % 3);
    c.with_predictors = (seed / 3) % 2 == 0;
    c.content = int((seed / 2) % 3);
    check_against_naive(seed, c);
  }
}

TEST(CpuSearchVsNaive, SizesThatAreMultiplesOf16) {
  for (uint32_t seed : gvc_test::test_seeds({31, 32, 33}))
    check_against_naive(seed, {48, 32, 8, 2, Subpel::Quarter, true, int(seed % 3)});
}

TEST(CpuSearchVsNaive, TinyFrames) {
  // Smaller than one macroblock: everything outside is edge extension.
  for (uint32_t seed : gvc_test::test_seeds({41, 42, 43})) {
    check_against_naive(seed, {1, 1, 8, 3, Subpel::Quarter, true, 0});
    check_against_naive(seed, {5, 3, 9, 0, Subpel::Half, false, 1});
    check_against_naive(seed, {17, 2, 8, 1, Subpel::Quarter, true, 2});
  }
}

TEST(CpuSearchVsNaive, LargestRange) {
  // Range 64 positions -64..63 around a frame far smaller than the window.
  for (uint32_t seed : gvc_test::test_seeds({51}))
    check_against_naive(seed, {20, 12, 64, 2, Subpel::Quarter, true, 2});
}

TEST(CpuSearchVsNaive, RejectsBadParameters) {
  std::mt19937 rng(1);
  Plane a = gvc_test::random_plane(rng, 32, 32), b = gvc_test::random_plane(rng, 32, 16);
  std::vector<gvc::MbPartitions> out(4);
  gvc::MbPartitionField f{out.data(), 2, 2, gvc::MemoryLocation::Host};
  auto me = gvc::make_cpu_motion_search();
  MeParams p;
  EXPECT_TRUE(me->run(a.view(), a.view(), p, f).ok());
  p.range = 7;
  EXPECT_FALSE(me->run(a.view(), a.view(), p, f).ok());
  p.range = 65;
  EXPECT_FALSE(me->run(a.view(), a.view(), p, f).ok());
  p.range = 16;
  EXPECT_FALSE(me->run(a.view(), b.view(), p, f).ok());  // sizes differ
  gvc::MbPartitionField small{out.data(), 2, 1, gvc::MemoryLocation::Host};
  EXPECT_FALSE(me->run(a.view(), a.view(), p, small).ok());
}

// luma_qpel_sample against the standard's sample names, everywhere in and around small planes,
// including the clipping of the 6-tap filter on extreme content.
TEST(LumaQpelSample, MatchesH264Clause8_4_2_2_1) {
  for (uint32_t seed : gvc_test::test_seeds({61, 62, 63, 64})) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const int w = std::uniform_int_distribution<int>(1, 24)(rng);
    const int h = std::uniform_int_distribution<int>(1, 20)(rng);
    // Odd seeds: only 0 and 255, so the 6-tap filter overshoots and clipping matters.
    Plane p = gvc_test::random_plane(rng, w, h, seed % 2 ? 2 : 256);
    int checked = 0;
    for (int y = -6; y < h + 6; y++)
      for (int x = -6; x < w + 6; x++)
        for (int fy = 0; fy < 4; fy++)
          for (int fx = 0; fx < 4; fx++) {
            int want = gvc_test::spec_luma_sample(p.view(), x, y, fx, fy);
            int have = gvc::luma_qpel_sample(p.view(), x, y, fx, fy);
            ASSERT_EQ(have, want) << "plane " << w << "x" << h << " at (" << x << "," << y
                                  << ") fraction (" << fx << "," << fy << ")";
            checked++;
          }
    EXPECT_GT(checked, 0);
  }
}

// A few hand-computed values: a horizontal ramp has exact half-pel values.
TEST(LumaQpelSample, HandComputedValues) {
  Plane p(16, 16);
  for (int y = 0; y < 16; y++)
    for (int x = 0; x < 16; x++) p.at(x, y) = uint8_t(10 * x);
  // Away from the edges, the 6-tap filter of a linear ramp is the midpoint:
  // (1*60 - 5*70 + 20*80 + 20*90 - 5*100 + 110) = 2720, (2720 + 16) >> 5 = 85.
  EXPECT_EQ(gvc::luma_qpel_sample(p.view(), 8, 5, 2, 0), 85);
  EXPECT_EQ(gvc::luma_qpel_sample(p.view(), 8, 5, 1, 0), 83);  // (80 + 85 + 1) >> 1
  EXPECT_EQ(gvc::luma_qpel_sample(p.view(), 8, 5, 3, 0), 88);  // (90 + 85 + 1) >> 1
  EXPECT_EQ(gvc::luma_qpel_sample(p.view(), 8, 5, 0, 2), 80);  // constant down the column
  EXPECT_EQ(gvc::luma_qpel_sample(p.view(), 8, 5, 2, 2), 85);  // j = (2720*32 + 512) >> 10
  // At the left edge the ramp is clamped: taps read 0, 0, 0, 10, 20, 30 around x = 0.
  // (0 - 0 + 0 + 200 - 100 + 30) = 130, (130 + 16) >> 5 = 4.
  EXPECT_EQ(gvc::luma_qpel_sample(p.view(), 0, 0, 2, 0), 4);
  // Overshoot is clipped: a single 255 column among zeros gives 20*255 + ... > 255*32.
  Plane q(8, 8);
  for (int y = 0; y < 8; y++)
    for (int x = 0; x < 8; x++) q.at(x, y) = x == 4 || x == 5 ? 255 : 0;
  EXPECT_EQ(gvc::luma_qpel_sample(q.view(), 4, 2, 2, 0), 255);  // (40*255 + 16) >> 5 = 319
  EXPECT_EQ(gvc::luma_qpel_sample(q.view(), 2, 2, 2, 0), 0);    // -5*255 + 255 < 0
}

}  // namespace
