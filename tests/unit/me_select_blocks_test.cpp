// me_select_blocks_test.cpp: MotionSearch::select_blocks for every BlockSize, Auto checked
// against the least-summed-cost rule of me.h recomputed here
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "tests/unit/me_oracle.h"

namespace {

using gvc::BlockSize;
using gvc::MbPartitions;
using gvc::MvCost;

bool same(const MvCost& a, const MvCost& b) {
  return a.mvx == b.mvx && a.mvy == b.mvy && a.cost == b.cost;
}

// Partition index that owns 4x4 block (bx, by) of a macroblock for a fixed block size.
int fixed_owner(BlockSize size, int bx, int by) {
  const int k = (by / 2) * 2 + bx / 2;  // 8x8 index
  switch (size) {
    case BlockSize::B16x16: return gvc::kPart16x16;
    case BlockSize::B8x8: return gvc::kPart8x8 + k;
    default: return gvc::kPart4x4 + 4 * k + (by % 2) * 2 + bx % 2;
  }
}

// me.h's Auto rule, written out: per 8x8 the cheapest of 8x8, 8x4, 4x8, 4x4 (first listed on a
// tie), then the cheapest of 16x16, 16x8, 8x16, 8x8-split (first listed on a tie).
// Returns the owner of each 4x4 block and the summed cost of the choice.
uint64_t auto_owner(const MbPartitions& mb, int owner[4][4]) {
  auto c = [&](int i) { return uint64_t(mb.part[i].cost); };
  uint64_t sub_cost[4];
  int sub_mode[4];
  for (int k = 0; k < 4; k++) {
    const uint64_t opt[4] = {c(5 + k), c(9 + 2 * k) + c(10 + 2 * k), c(17 + 2 * k) + c(18 + 2 * k),
                             c(25 + 4 * k) + c(26 + 4 * k) + c(27 + 4 * k) + c(28 + 4 * k)};
    sub_mode[k] = 0;
    for (int m = 1; m < 4; m++)
      if (opt[m] < opt[sub_mode[k]]) sub_mode[k] = m;
    sub_cost[k] = opt[sub_mode[k]];
  }
  const uint64_t top[4] = {c(0), c(1) + c(2), c(3) + c(4),
                           sub_cost[0] + sub_cost[1] + sub_cost[2] + sub_cost[3]};
  int mode = 0;
  for (int m = 1; m < 4; m++)
    if (top[m] < top[mode]) mode = m;
  for (int by = 0; by < 4; by++)
    for (int bx = 0; bx < 4; bx++) {
      const int k = (by / 2) * 2 + bx / 2, sx = bx % 2, sy = by % 2;
      int o;
      switch (mode) {
        case 0: o = 0; break;
        case 1: o = 1 + by / 2; break;
        case 2: o = 3 + bx / 2; break;
        default:
          switch (sub_mode[k]) {
            case 0: o = 5 + k; break;
            case 1: o = 9 + 2 * k + sy; break;
            case 2: o = 17 + 2 * k + sx; break;
            default: o = 25 + 4 * k + 2 * sy + sx;
          }
      }
      owner[by][bx] = o;
    }
  return top[mode];
}

// The least summed cost over every partitioning H.264 allows (3 whole-MB ones, and 4^4 choices
// of sub-partitioning with the 8x8 split), by enumeration.
uint64_t least_cost(const MbPartitions& mb) {
  auto c = [&](int i) { return uint64_t(mb.part[i].cost); };
  uint64_t best = std::min({c(0), c(1) + c(2), c(3) + c(4)});
  for (int combo = 0; combo < 256; combo++) {
    uint64_t sum = 0;
    for (int k = 0; k < 4; k++) {
      switch ((combo >> (2 * k)) & 3) {
        case 0: sum += c(5 + k); break;
        case 1: sum += c(9 + 2 * k) + c(10 + 2 * k); break;
        case 2: sum += c(17 + 2 * k) + c(18 + 2 * k); break;
        default: sum += c(25 + 4 * k) + c(26 + 4 * k) + c(27 + 4 * k) + c(28 + 4 * k);
      }
    }
    best = std::min(best, sum);
  }
  return best;
}

// Partition fields to select from: real search results, and made-up costs drawn from a small
// set so that many partitionings tie.
std::vector<std::vector<MbPartitions>> fields(int cols, int rows) {
  std::vector<std::vector<MbPartitions>> out;
  std::mt19937 rng(4242);
  gvc_test::Plane ref = gvc_test::textured_plane(rng, 16 * cols - 5, 16 * rows - 3);
  gvc_test::Plane cur = gvc_test::shifted_plane(ref, 2, 1, rng, 20);
  gvc::MeParams params;
  params.range = 8;
  params.lambda = 2;
  out.push_back(gvc_test::cpu_search(cur.view(), ref.view(), params));
  for (int costs : {3, 40}) {
    std::vector<MbPartitions> f(size_t(cols) * rows);
    std::uniform_int_distribution<int> d(0, costs - 1), v(-64, 63);
    for (auto& mb : f)
      for (auto& p : mb.part) p = {int16_t(v(rng)), int16_t(v(rng)), uint32_t(d(rng))};
    out.push_back(f);
  }
  return out;
}

TEST(SelectBlocks, EveryBlockSize) {
  const int cols = 5, rows = 3;
  auto me = gvc::make_cpu_motion_search();
  int field_no = 0;
  for (auto& parts : fields(cols, rows)) {
    ASSERT_EQ(parts.size(), size_t(cols) * rows);
    gvc::MbPartitionField pf{parts.data(), cols, rows, gvc::MemoryLocation::Host};
    for (BlockSize size : {BlockSize::B16x16, BlockSize::B8x8, BlockSize::B4x4, BlockSize::Auto}) {
      SCOPED_TRACE("field " + std::to_string(field_no) + " block size " +
                   std::to_string(int(size)));
      int bw, bh, fc, fr;
      gvc::block_field_dims(size, cols, rows, &bw, &bh, &fc, &fr);
      const int b = size == BlockSize::B16x16 ? 16 : (size == BlockSize::B8x8 ? 8 : 4);
      EXPECT_EQ(bw, b);
      EXPECT_EQ(bh, b);
      ASSERT_EQ(fc, cols * 16 / b);
      ASSERT_EQ(fr, rows * 16 / b);
      std::vector<MvCost> blocks(size_t(fc) * fr, MvCost{-999, -999, 0xDEADBEEF});
      gvc::MvBlockField bf;
      bf.data = blocks.data();
      bf.cols = fc;
      bf.rows = fr;
      bf.block_w = bf.block_h = 1;  // select_blocks must set them
      ASSERT_TRUE(me->select_blocks(pf, size, bf).ok());
      EXPECT_EQ(bf.block_w, b);
      EXPECT_EQ(bf.block_h, b);
      for (int mby = 0; mby < rows; mby++)
        for (int mbx = 0; mbx < cols; mbx++) {
          const MbPartitions& mb = parts[size_t(mby) * cols + mbx];
          int owner[4][4];
          if (size == BlockSize::Auto) {
            const uint64_t best = auto_owner(mb, owner);
            EXPECT_EQ(best, least_cost(mb)) << "MB " << mbx << "," << mby;
          } else {
            for (int by = 0; by < 4; by++)
              for (int bx = 0; bx < 4; bx++) owner[by][bx] = fixed_owner(size, bx, by);
          }
          const int per = 16 / b;
          for (int by = 0; by < per; by++)
            for (int bx = 0; bx < per; bx++) {
              const int o = owner[by * b / 4][bx * b / 4];
              const MvCost& got = blocks[size_t(mby * per + by) * fc + mbx * per + bx];
              EXPECT_TRUE(same(got, mb.part[o]))
                  << "MB " << mbx << "," << mby << " block " << bx << "," << by << ": got "
                  << gvc_test::describe(got) << ", want partition " << o << " "
                  << gvc_test::describe(mb.part[o]);
            }
        }
    }
    field_no++;
  }
}

TEST(SelectBlocks, AutoPrefersLargerPartitionsOnEqualCost) {
  // Every partition costs the same per covered sample: all partitionings sum alike, so 16x16.
  MbPartitions mb;
  for (int i = 0; i < gvc::kNumPartitions; i++) {
    gvc::PartitionGeometry g = gvc::partition_geometry(i);
    mb.part[i] = {int16_t(i), int16_t(-i), uint32_t(g.w * g.h)};
  }
  gvc::MbPartitionField pf{&mb, 1, 1, gvc::MemoryLocation::Host};
  std::vector<MvCost> blocks(16);
  gvc::MvBlockField bf{blocks.data(), 4, 4, 4, 4, gvc::MemoryLocation::Host};
  ASSERT_TRUE(gvc::make_cpu_motion_search()->select_blocks(pf, BlockSize::Auto, bf).ok());
  for (const MvCost& m : blocks) EXPECT_EQ(m.mvx, 0);
  // Make 16x8 and the 8x8 split one cheaper than 16x16 each: 16x8 is listed first and wins.
  mb.part[1].cost -= 1;
  mb.part[5].cost -= 1;
  ASSERT_TRUE(gvc::make_cpu_motion_search()->select_blocks(pf, BlockSize::Auto, bf).ok());
  for (int i = 0; i < 16; i++) EXPECT_EQ(blocks[i].mvx, i < 8 ? 1 : 2) << "block " << i;
}

TEST(SelectBlocks, RejectsAFieldOfTheWrongSize) {
  std::vector<MbPartitions> parts(6);
  gvc::MbPartitionField pf{parts.data(), 3, 2, gvc::MemoryLocation::Host};
  std::vector<MvCost> blocks(6 * 4);
  gvc::MvBlockField bf{blocks.data(), 8, 8, 6, 3, gvc::MemoryLocation::Host};  // 6x4 needed
  EXPECT_FALSE(gvc::make_cpu_motion_search()->select_blocks(pf, BlockSize::B8x8, bf).ok());
}

}  // namespace
