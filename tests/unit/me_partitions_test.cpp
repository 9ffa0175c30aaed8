// me_partitions_test.cpp: the 41 partition geometries, per-partition costs recomputed from their
// vectors, and the tie-break of me.h on crafted content with many equal costs
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "tests/unit/me_oracle.h"

namespace {

using gvc::MeParams;
using gvc::MvCost;
using gvc::Subpel;
using gvc_test::Plane;

struct Group {
  int first, count, w, h;
};
// The partition groups as mv_field.h lists them.
const Group kGroups[] = {{0, 1, 16, 16}, {1, 2, 16, 8}, {3, 2, 8, 16}, {5, 4, 8, 8},
                         {9, 8, 8, 4},   {17, 8, 4, 8}, {25, 16, 4, 4}};

TEST(PartitionGeometry, EachGroupTilesTheMacroblockOnce) {
  int total = 0;
  for (const Group& g : kGroups) {
    int cover[16][16] = {};
    for (int i = g.first; i < g.first + g.count; i++) {
      gvc::PartitionGeometry p = gvc::partition_geometry(i);
      EXPECT_EQ(p.w, g.w) << "partition " << i;
      EXPECT_EQ(p.h, g.h) << "partition " << i;
      ASSERT_LE(p.x + p.w, 16) << "partition " << i;
      ASSERT_LE(p.y + p.h, 16) << "partition " << i;
      EXPECT_EQ(p.x % p.w, 0) << "partition " << i << " is not aligned to its size";
      EXPECT_EQ(p.y % p.h, 0) << "partition " << i << " is not aligned to its size";
      for (int y = p.y; y < p.y + p.h; y++)
        for (int x = p.x; x < p.x + p.w; x++) cover[y][x]++;
      total++;
    }
    for (int y = 0; y < 16; y++)
      for (int x = 0; x < 16; x++)
        ASSERT_EQ(cover[y][x], 1) << "group starting at " << g.first << ", sample " << x << ","
                                  << y;
  }
  EXPECT_EQ(total, gvc::kNumPartitions);
}

TEST(PartitionGeometry, OrderAsListedInMvField) {
  // 16x8 top then bottom; 8x16 left then right; 8x8 raster.
  EXPECT_EQ(gvc::partition_geometry(1).y, 0);
  EXPECT_EQ(gvc::partition_geometry(2).y, 8);
  EXPECT_EQ(gvc::partition_geometry(3).x, 0);
  EXPECT_EQ(gvc::partition_geometry(4).x, 8);
  for (int k = 0; k < 4; k++) {
    gvc::PartitionGeometry q = gvc::partition_geometry(gvc::kPart8x8 + k);
    EXPECT_EQ(q.x, 8 * (k % 2));
    EXPECT_EQ(q.y, 8 * (k / 2));
    // Sub-partitions of 8x8 #k lie inside it, in the listed order.
    for (int j = 0; j < 2; j++) {
      gvc::PartitionGeometry a = gvc::partition_geometry(gvc::kPart8x4 + 2 * k + j);
      EXPECT_EQ(a.x, q.x);
      EXPECT_EQ(a.y, q.y + 4 * j);
      gvc::PartitionGeometry b = gvc::partition_geometry(gvc::kPart4x8 + 2 * k + j);
      EXPECT_EQ(b.x, q.x + 4 * j);
      EXPECT_EQ(b.y, q.y);
    }
    for (int s = 0; s < 4; s++) {
      gvc::PartitionGeometry c = gvc::partition_geometry(gvc::kPart4x4 + 4 * k + s);
      EXPECT_EQ(c.x, q.x + 4 * (s % 2));
      EXPECT_EQ(c.y, q.y + 4 * (s / 2));
    }
  }
}

// Every partition's cost is the SAD of its own vector plus lambda * bits, and for an integer
// search no partition could do better with the vector another partition chose.
// A textured w x h reference, the current frame it moved by (dx, dy) with noise, and a random
// predictor per macroblock within +-pred_range quarter samples.
struct SearchInput {
  Plane ref, cur;
  std::vector<MvCost> preds;
};
SearchInput search_input(std::mt19937& rng, int w, int h, int dx, int dy, int noise, int pred_range) {
  SearchInput in;
  in.ref = gvc_test::textured_plane(rng, w, h);
  in.cur = gvc_test::shifted_plane(in.ref, dx, dy, rng, noise);
  in.preds.resize(size_t(gvc::mb_count(w)) * size_t(gvc::mb_count(h)));
  std::uniform_int_distribution<int> pd(-pred_range, pred_range);
  for (auto& p : in.preds) p = {int16_t(pd(rng)), int16_t(pd(rng)), 0};
  return in;
}

TEST(PartitionCosts, CostIsSadOfItsVectorPlusLambdaBits) {
  for (uint32_t seed : gvc_test::test_seeds({71, 72, 73})) {
    for (Subpel sp : {Subpel::None, Subpel::Half, Subpel::Quarter}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " subpel " + std::to_string(int(sp)));
      std::mt19937 rng(seed);
      const int w = 80 + int(seed % 5), h = 50 + int(seed % 7);
      const SearchInput in = search_input(rng, w, h, 3, -2, 8, 40);
      const Plane &ref = in.ref, &cur = in.cur;
      const std::vector<MvCost>& preds = in.preds;
      const int cols = gvc::mb_count(w), rows = gvc::mb_count(h);
      MeParams params;
      params.range = 12;
      params.lambda = 6;
      params.subpel = sp;
      params.predictors = preds.data();
      auto got = gvc_test::cpu_search(cur.view(), ref.view(), params);
      ASSERT_EQ(got.size(), preds.size());
      const int R = params.range, slack = sp == Subpel::None ? 0 : 3;
      for (int mby = 0; mby < rows; mby++)
        for (int mbx = 0; mbx < cols; mbx++) {
          const MvCost pred = preds[size_t(mby) * cols + mbx];
          const gvc::MbPartitions& mb = got[size_t(mby) * cols + mbx];
          for (int i = 0; i < gvc::kNumPartitions; i++) {
            const MvCost m = mb.part[i];
            SCOPED_TRACE("MB " + std::to_string(mbx) + "," + std::to_string(mby) +
                         " partition " + std::to_string(i) + " " + gvc_test::describe(m));
            ASSERT_EQ(m.cost, gvc_test::partition_cost(cur.view(), ref.view(), mbx, mby, i,
                                                       m.mvx, m.mvy, params.lambda, pred.mvx,
                                                       pred.mvy));
            EXPECT_GE(m.mvx, -4 * R - slack);
            EXPECT_LE(m.mvx, 4 * (R - 1) + slack);
            EXPECT_GE(m.mvy, -4 * R - slack);
            EXPECT_LE(m.mvy, 4 * (R - 1) + slack);
            if (sp == Subpel::None) {
              EXPECT_EQ(m.mvx % 4, 0);
              EXPECT_EQ(m.mvy % 4, 0);
              for (int j = 0; j < gvc::kNumPartitions; j++) {
                uint32_t other =
                    gvc_test::partition_cost(cur.view(), ref.view(), mbx, mby, i, mb.part[j].mvx,
                                             mb.part[j].mvy, params.lambda, pred.mvx, pred.mvy);
                EXPECT_LE(m.cost, other) << "partition " << j << "'s vector is cheaper";
              }
            } else if (sp == Subpel::Half) {
              EXPECT_EQ(m.mvx % 2, 0);
              EXPECT_EQ(m.mvy % 2, 0);
            }
          }
        }
    }
  }
}

// MeParams::refined_partitions: partitions before it as the full refinement leaves them, the
// others as the integer search leaves them, for every boundary the encoder uses and others.
TEST(PartialRefinement, RefinesThePrefixAndLeavesTheRestInteger) {
  for (uint32_t seed : gvc_test::test_seeds({81, 82})) {
    std::mt19937 rng(seed);
    const SearchInput in = search_input(rng, 72 + int(seed % 5), 40 + int(seed % 7), -2, 3, 12, 30);
    const Plane &ref = in.ref, &cur = in.cur;
    MeParams params;
    params.range = 8;
    params.lambda = 5;
    params.predictors = in.preds.data();
    params.subpel = Subpel::None;
    const auto integer = gvc_test::cpu_search(cur.view(), ref.view(), params);
    params.subpel = Subpel::Quarter;
    const auto full = gvc_test::cpu_search(cur.view(), ref.view(), params);
    int moved = 0;  // partitions the refinement moved: the test would see a prefix left out
    for (int n : {1, 5, 9, 20, 41}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " refined_partitions " + std::to_string(n));
      params.refined_partitions = n;
      const auto got = gvc_test::cpu_search(cur.view(), ref.view(), params);
      ASSERT_EQ(got.size(), full.size());
      for (size_t mb = 0; mb < got.size(); mb++)
        for (int i = 0; i < gvc::kNumPartitions; i++) {
          const MvCost want = i < n ? full[mb].part[i] : integer[mb].part[i];
          const MvCost g = got[mb].part[i];
          ASSERT_TRUE(g.mvx == want.mvx && g.mvy == want.mvy && g.cost == want.cost)
              << "MB " << mb << " partition " << i << ": " << gvc_test::describe(g) << ", want "
              << gvc_test::describe(want);
          moved += i < n && (full[mb].part[i].mvx != integer[mb].part[i].mvx ||
                             full[mb].part[i].mvy != integer[mb].part[i].mvy);
        }
    }
    EXPECT_GT(moved, 0);
  }
  // Out of range: refused.
  std::mt19937 rng(3);
  Plane a = gvc_test::random_plane(rng, 32, 32);
  std::vector<gvc::MbPartitions> out(4);
  gvc::MbPartitionField f{out.data(), 2, 2, gvc::MemoryLocation::Host};
  MeParams p;
  for (int n : {0, 42}) {
    p.refined_partitions = n;
    EXPECT_FALSE(gvc::make_cpu_motion_search()->run(a.view(), a.view(), p, f).ok()) << n;
  }
}

// A 64x64 frame whose samples repeat with period 4 horizontally and/or vertically. The four
// interior macroblocks see no frame edge for any vector of range 8.
Plane periodic_plane(std::mt19937& rng, bool periodic_x, bool periodic_y, int shift_x,
                     int shift_y) {
  // Distinct values per phase, so only whole periods match exactly.
  std::vector<int> value(64 * 64);
  std::iota(value.begin(), value.end(), 0);
  std::shuffle(value.begin(), value.end(), rng);
  Plane p(64, 64);
  for (int y = 0; y < 64; y++)
    for (int x = 0; x < 64; x++) {
      int px = periodic_x ? (x + shift_x) & 3 : x + shift_x;
      int py = periodic_y ? (y + shift_y) & 3 : y + shift_y;
      p.at(x, y) = uint8_t(value[size_t(py & 63) * 64 + (px & 63)] * 255 / 4095);
    }
  return p;
}

struct TieCase {
  const char* what;
  bool px, py;
  int sx, sy;           // the current frame is the reference moved by (sx, sy) phases
  int want_x, want_y;   // the expected vector, in whole samples
};

TEST(TieBreak, PeriodicContentPicksShortestThenRaster) {
  const TieCase cases[] = {
      // Zero-cost vectors (+-2, +-2): equal length, so the smallest vy, then the smallest vx.
      {"2-D period, half-period shift", true, true, 2, 2, -2, -2},
      // (+-2, 0): equal length and vy, so the smallest vx.
      {"horizontal period, half-period shift", true, false, 2, 0, -2, 0},
      // (0, +-2): the smallest vy.
      {"vertical period, half-period shift", false, true, 0, 2, 0, -2},
      // 1, -3, 5, -7: the shortest wins over raster order.
      {"horizontal period, one-sample shift", true, false, 1, 0, 1, 0},
      {"horizontal period, three-sample shift", true, false, 3, 0, -1, 0},
      // (1,1), (1,-3), (-3,1), (-3,-3): the shortest.
      {"2-D period, (3,3) shift", true, true, 3, 3, -1, -1},
  };
  for (uint32_t seed : gvc_test::test_seeds({81, 82})) {
    for (const TieCase& tc : cases) {
      for (Subpel sp : {Subpel::None, Subpel::Quarter}) {
        SCOPED_TRACE(std::string(tc.what) + ", seed " + std::to_string(seed) + " subpel " +
                     std::to_string(int(sp)));
        std::mt19937 rng(seed);
        Plane ref = periodic_plane(rng, tc.px, tc.py, 0, 0);
        std::mt19937 rng2(seed);
        Plane cur = periodic_plane(rng2, tc.px, tc.py, tc.sx, tc.sy);
        MeParams params;
        params.range = 8;
        params.subpel = sp;
        auto got = gvc_test::cpu_search(cur.view(), ref.view(), params);
        ASSERT_EQ(got.size(), 16u);
        for (int mby = 1; mby <= 2; mby++)
          for (int mbx = 1; mbx <= 2; mbx++)
            for (int i = 0; i < gvc::kNumPartitions; i++) {
              const MvCost m = got[size_t(mby) * 4 + mbx].part[i];
              EXPECT_EQ(m.mvx, 4 * tc.want_x) << "MB " << mbx << "," << mby << " part " << i;
              EXPECT_EQ(m.mvy, 4 * tc.want_y) << "MB " << mbx << "," << mby << " part " << i;
              EXPECT_EQ(m.cost, 0u) << "MB " << mbx << "," << mby << " part " << i;
            }
      }
    }
  }
}

TEST(TieBreak, LambdaPullsTowardsThePredictorAmongEqualSads) {
  // Same zero-SAD set as the first case above, but the predictor sits on (2, 2): with lambda
  // the vector equal to the predictor costs the fewest bits (se(0) + se(0) = 2).
  std::mt19937 rng(91), rng2(91);
  Plane ref = periodic_plane(rng, true, true, 0, 0);
  Plane cur = periodic_plane(rng2, true, true, 2, 2);
  std::vector<MvCost> preds(16, MvCost{8, 8, 0});
  MeParams params;
  params.range = 8;
  params.lambda = 3;
  params.subpel = Subpel::None;
  params.predictors = preds.data();
  auto got = gvc_test::cpu_search(cur.view(), ref.view(), params);
  ASSERT_EQ(got.size(), 16u);
  for (int i = 0; i < gvc::kNumPartitions; i++) {
    const MvCost m = got[5].part[i];
    EXPECT_EQ(m.mvx, 8) << "partition " << i;
    EXPECT_EQ(m.mvy, 8) << "partition " << i;
    EXPECT_EQ(m.cost, 6u) << "partition " << i;
  }
}

TEST(TieBreak, FlatFramesGoToZeroOrToThePredictor) {
  Plane flat(40, 24);
  for (int y = 0; y < 24; y++)
    for (int x = 0; x < 40; x++) flat.at(x, y) = 100;
  auto me = gvc::make_cpu_motion_search();
  for (Subpel sp : {Subpel::None, Subpel::Half, Subpel::Quarter}) {
    SCOPED_TRACE("subpel " + std::to_string(int(sp)));
    // No lambda: every position costs 0, so the zero vector (the shortest) wins.
    MeParams params;
    params.range = 9;
    params.subpel = sp;
    auto got = gvc_test::cpu_search(flat.view(), flat.view(), params);
    ASSERT_EQ(got.size(), 6u);
    for (const auto& mb : got)
      for (const MvCost& m : mb.part) {
        EXPECT_EQ(m.mvx, 0);
        EXPECT_EQ(m.mvy, 0);
        EXPECT_EQ(m.cost, 0u);
      }
  }
  // Lambda 4, predictor (5, -3) quarter-pel. Integer search: (4, -4) costs 4 * (3 + 3) = 24,
  // every other integer vector more. Half-pel: (4, -2), (6, -4) and (6, -2) also cost 24 and
  // (4, -2) is the shortest. Quarter-pel: (5, -3) is the predictor, 4 * 2 = 8.
  const struct {
    Subpel sp;
    int x, y;
    uint32_t cost;
  } want[] = {{Subpel::None, 4, -4, 24}, {Subpel::Half, 4, -2, 24}, {Subpel::Quarter, 5, -3, 8}};
  std::vector<MvCost> preds(6, MvCost{5, -3, 0});
  for (const auto& w : want) {
    SCOPED_TRACE("subpel " + std::to_string(int(w.sp)));
    MeParams params;
    params.range = 8;
    params.lambda = 4;
    params.subpel = w.sp;
    params.predictors = preds.data();
    auto got = gvc_test::cpu_search(flat.view(), flat.view(), params);
    ASSERT_EQ(got.size(), 6u);
    for (const auto& mb : got)
      for (const MvCost& m : mb.part) {
        EXPECT_EQ(m.mvx, w.x);
        EXPECT_EQ(m.mvy, w.y);
        EXPECT_EQ(m.cost, w.cost);
      }
  }
}

TEST(SearchRange, PositionsRunFromMinusRToRMinusOne) {
  // True motion of exactly -R is found; +R lies outside the search and is not returned.
  for (int R : {8, 13}) {
    SCOPED_TRACE("range " + std::to_string(R));
    std::mt19937 rng(uint32_t(100 + R));
    Plane ref = gvc_test::textured_plane(rng, 96, 96);
    MeParams params;
    params.range = R;
    params.subpel = Subpel::None;
    // cur(x) = ref(x + t): the vector is t.
    Plane cur_neg = gvc_test::shifted_plane(ref, R, 0, rng, 0);   // t = (-R, 0)
    Plane cur_pos = gvc_test::shifted_plane(ref, -R, 0, rng, 0);  // t = (+R, 0)
    auto neg = gvc_test::cpu_search(cur_neg.view(), ref.view(), params);
    auto pos = gvc_test::cpu_search(cur_pos.view(), ref.view(), params);
    ASSERT_EQ(neg.size(), 36u);
    ASSERT_EQ(pos.size(), 36u);
    for (int mby = 1; mby <= 4; mby++)
      for (int mbx = 1; mbx <= 4; mbx++) {
        const MvCost n = neg[size_t(mby) * 6 + mbx].part[0];
        EXPECT_EQ(n.mvx, -4 * R);
        EXPECT_EQ(n.mvy, 0);
        EXPECT_EQ(n.cost, 0u);
        const MvCost p = pos[size_t(mby) * 6 + mbx].part[0];
        EXPECT_LE(p.mvx, 4 * (R - 1));
        EXPECT_GT(p.cost, 0u);
      }
  }
}

}  // namespace
