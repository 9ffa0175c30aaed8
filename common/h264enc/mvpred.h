// mvpred.h: motion vector prediction of P macroblocks (8.4.1.1 P_Skip, 8.4.1.3 mvpL0)
#pragma once

#include <cstdint>

#include "common/h264enc/cavlc.h"
#include "common/h264enc/macroblock.h"

namespace gvc::h264 {

// The motion of the macroblock being decided, filled in decoding order: partitions whose 4x4
// blocks are set in `done` (bit 4 * y + x) are the ones a later partition may use as its
// neighbours A, B, C or D (6.4.11.7: a partition not yet decoded is not available).
struct MotionState {
  int8_t ref_idx[4] = {-1, -1, -1, -1};  // per 8x8 quadrant, raster
  int16_t mv[16][2] = {};                // per 4x4 block, raster
  uint16_t done = 0;

  // Sets ref and vector of the partition at (x, y), w x h (4x4-block units) and marks it done.
  void set(int x, int y, int w, int h, int ref, int mvx, int mvy);
};

// Where prediction looks: the macroblocks of the picture (slice-aware) and the one at (mx, my)
// whose motion so far is `cur`.
struct MvContext {
  const MbMap* map;
  int mx, my;
  const MotionState* cur;
};

// mvpL0 (8.4.1.3) of the partition at (x, y), w x h in 4x4-block units, with refIdxL0 `ref`.
// A 16x8 or 8x16 macroblock partition (w x h = 4x2 or 2x4) takes the directional rule of
// 8.4.1.3 first; every other shape the median of 8.4.1.3.1.
void predict_mv(const MvContext& ctx, int x, int y, int w, int h, int ref, int16_t mvp[2]);

// mvL0 of P_Skip (8.4.1.1; refIdxL0 is 0).
void predict_mv_skip(const MbMap& map, int mx, int my, int16_t mv[2]);

}  // namespace gvc::h264
