// mvpred.h: motion vector prediction of P macroblocks (8.4.1.1 P_Skip, 8.4.1.3 mvpL0), for the CPU and CUDA
#pragma once

#include <cstdint>

#include "common/h264enc/macroblock.h"
#include "common/util/hd.h"

namespace gvc::h264 {

// The motion of the macroblock being decided, filled in decoding order: partitions whose 4x4
// blocks are set in `done` (bit 4 * y + x) are the ones a later partition may use as its
// neighbours A, B, C or D (6.4.11.7: a partition not yet decoded is not available).
struct MotionState {
  int8_t ref_idx[4] = {-1, -1, -1, -1};  // per 8x8 quadrant, raster
  int16_t mv[16][2] = {};                // per 4x4 block, raster
  uint16_t done = 0;

  // Sets ref and vector of the partition at (x, y), w x h (4x4-block units) and marks it done.
  GVC_HD void set(int x, int y, int w, int h, int ref, int mvx, int mvy) {
    const unsigned row = ((1u << w) - 1) << x;  // the partition's blocks in one row of `done`
    for (int by = y; by < y + h; by++) {
      for (int bx = x; bx < x + w; bx++) {
        mv[4 * by + bx][0] = int16_t(mvx);
        mv[4 * by + bx][1] = int16_t(mvy);
      }
      done |= uint16_t(row << (4 * by));
    }
    // the 8x8 quadrants it covers (a partition lies in one, or covers whole ones)
    for (int qy = y >> 1; qy <= (y + h - 1) >> 1; qy++)
      for (int qx = x >> 1; qx <= (x + w - 1) >> 1; qx++) ref_idx[qy * 2 + qx] = int8_t(ref);
  }
};

// Where prediction looks: the macroblocks around the one at (mx, my) of a picture's macroblocks
// (MbMap::at, slice-aware: null where not available), found once, and that macroblock's motion
// so far, `cur`.
struct MvContext {
  const Macroblock* left = nullptr;      // (mx - 1, my)
  const Macroblock* up = nullptr;        // (mx, my - 1)
  const Macroblock* up_right = nullptr;  // (mx + 1, my - 1)
  const Macroblock* up_left = nullptr;   // (mx - 1, my - 1)
  const MotionState* cur = nullptr;

  GVC_HD MvContext(const MbMap* map, int mx, int my, const MotionState* cur_)
      : left(map->at(mx - 1, my)),
        up(map->at(mx, my - 1)),
        up_right(map->at(mx + 1, my - 1)),
        up_left(map->at(mx - 1, my - 1)),
        cur(cur_) {}
  // The neighbours of `around` with the motion `cur_` (another choice for the same macroblock).
  GVC_HD MvContext(const MvContext& around, const MotionState* cur_)
      : left(around.left), up(around.up), up_right(around.up_right), up_left(around.up_left), cur(cur_) {}
};

namespace mvpred_detail {

// mbAddrN\mbPartIdxN\subMbPartIdxN of 8.4.1.3.2 reduced to what prediction reads.
struct Neighbour {
  bool available;
  int ref_idx;  // refIdxL0N: -1 when not available, intra, or not predicted from list 0
  int mv[2];    // mvL0N: (0, 0) in those cases
};

GVC_HD Neighbour from_mb(const Macroblock* m, int bx, int by) {
  if (!m) return {false, -1, {0, 0}};
  const int ref = m->ref_idx[(by >> 1) * 2 + (bx >> 1)];
  if (is_intra(m->type) || ref < 0) return {true, -1, {0, 0}};
  return {true, ref, {m->mv[4 * by + bx][0], m->mv[4 * by + bx][1]}};
}

// The 4x4 block covering luma location (4x, 4y) relative to the macroblock's top-left sample,
// x in -1..4, y in -1..3 (6.4.12: locations right of the macroblock below its top row are
// not available; those inside it are available once their partition is decided).
GVC_HD Neighbour neighbour(const MvContext& c, int x, int y) {
  if (y < 0) {
    if (x < 0) return from_mb(c.up_left, 3, 3);
    if (x < 4) return from_mb(c.up, x, 3);
    return from_mb(c.up_right, 0, 3);
  }
  if (x < 0) return from_mb(c.left, 3, y);
  if (x >= 4 || !(c.cur->done & (1u << (4 * y + x)))) return {false, -1, {0, 0}};
  const int ref = c.cur->ref_idx[(y >> 1) * 2 + (x >> 1)];
  return {true, ref, {c.cur->mv[4 * y + x][0], c.cur->mv[4 * y + x][1]}};
}

GVC_HD int median3(int a, int b, int c) {
  const int hi = a > b ? a : b, lo = a < b ? a : b;
  return c > hi ? hi : (c < lo ? lo : c);
}

}  // namespace mvpred_detail

// mvpL0 (8.4.1.3) of the partition at (x, y), w x h in 4x4-block units, with refIdxL0 `ref`.
// A 16x8 or 8x16 macroblock partition (w x h = 4x2 or 2x4) takes the directional rule of
// 8.4.1.3 first; every other shape the median of 8.4.1.3.1.
GVC_HD void predict_mv(const MvContext& ctx, int x, int y, int w, int h, int ref, int16_t mvp[2]) {
  using mvpred_detail::Neighbour;
  using mvpred_detail::neighbour;
  // 8.4.1.3.2: A left of, B above, C above-right of the partition; D above-left replaces an
  // unavailable C.
  Neighbour A = neighbour(ctx, x - 1, y);
  Neighbour B = neighbour(ctx, x, y - 1);
  Neighbour C = neighbour(ctx, x + w, y - 1);
  if (!C.available) C = neighbour(ctx, x - 1, y - 1);

  // 8.4.1.3: directional prediction of 16x8 and 8x16 partitions.
  const Neighbour* dir = nullptr;
  if (w == 4 && h == 2) dir = y == 0 ? &B : &A;
  if (w == 2 && h == 4) dir = x == 0 ? &A : &C;
  if (dir && dir->ref_idx == ref) {
    mvp[0] = int16_t(dir->mv[0]);
    mvp[1] = int16_t(dir->mv[1]);
    return;
  }

  // 8.4.1.3.1: median prediction.
  if (!B.available && !C.available && A.available) B = C = A;
  const int matches = (A.ref_idx == ref) + (B.ref_idx == ref) + (C.ref_idx == ref);
  if (matches == 1) {
    const Neighbour& only = A.ref_idx == ref ? A : B.ref_idx == ref ? B : C;
    mvp[0] = int16_t(only.mv[0]);
    mvp[1] = int16_t(only.mv[1]);
    return;
  }
  mvp[0] = int16_t(mvpred_detail::median3(A.mv[0], B.mv[0], C.mv[0]));
  mvp[1] = int16_t(mvpred_detail::median3(A.mv[1], B.mv[1], C.mv[1]));
}

// mvL0 of P_Skip (8.4.1.1; refIdxL0 is 0) of the macroblock whose neighbours `around` holds
// (its own motion is not read).
GVC_HD void predict_mv_skip(const MvContext& around, int16_t mv[2]) {
  const MotionState none;
  const MvContext ctx(around, &none);
  const mvpred_detail::Neighbour A = mvpred_detail::neighbour(ctx, -1, 0);
  const mvpred_detail::Neighbour B = mvpred_detail::neighbour(ctx, 0, -1);
  if (!A.available || !B.available || (A.ref_idx == 0 && A.mv[0] == 0 && A.mv[1] == 0) ||
      (B.ref_idx == 0 && B.mv[0] == 0 && B.mv[1] == 0)) {
    mv[0] = mv[1] = 0;
    return;
  }
  predict_mv(ctx, 0, 0, 4, 4, 0, mv);
}

// mvL0 of P_Skip of the macroblock at (mx, my).
GVC_HD void predict_mv_skip(const MbMap& map, int mx, int my, int16_t mv[2]) {
  predict_mv_skip(MvContext(&map, mx, my, nullptr), mv);
}

}  // namespace gvc::h264
