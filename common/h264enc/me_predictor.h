// me_predictor.h: the motion search's predictor of each macroblock, from the last frame's vectors (seed 002), for the CPU and CUDA
#pragma once

#include "common/h264enc/macroblock.h"
#include "common/mv/mv_field.h"
#include "common/util/hd.h"

namespace gvc::h264 {

// The predictor the motion search costs the vectors of macroblock (mx, my) against: the exact
// mvpL0 is only known during coding, in decoding order, so it is approximated as seed 002 does
// with vectors from an earlier pass: the median of the last frame's final vectors (`last`, its
// macroblocks in raster order, mb_width of them a row) of the co-located left, upper and
// upper-right neighbours (the upper-left one where the upper-right is outside the picture);
// one of left and upper where the others are missing; (0, 0) without either. Intra
// neighbours count as (0, 0); after an IDR every one is.
GVC_HD MvCost me_predictor(const Macroblock* last, int mb_width, int mx, int my) {
  // vector of 4x4 block (bx, by) of neighbour (x, y); false outside the picture (above, left, right)
  auto prev = [&](int x, int y, int bx, int by, int16_t v[2]) {
    if (x < 0 || y < 0 || x >= mb_width) return false;
    const Macroblock& m = last[y * mb_width + x];
    v[0] = is_intra(m.type) ? int16_t(0) : m.mv[4 * by + bx][0];
    v[1] = is_intra(m.type) ? int16_t(0) : m.mv[4 * by + bx][1];
    return true;
  };
  int16_t A[2] = {0, 0}, B[2] = {0, 0}, C[2] = {0, 0};
  const bool ha = prev(mx - 1, my, 3, 0, A), hb = prev(mx, my - 1, 0, 3, B);
  const bool hc = prev(mx + 1, my - 1, 0, 3, C) || prev(mx - 1, my - 1, 3, 3, C);
  MvCost p{0, 0, 0};
  if (ha && hb && hc) {
    auto med = [](int a, int b, int c) {
      const int lo = a < b ? a : b, hi = a < b ? b : a;
      return lo > c ? lo : (hi < c ? hi : c);
    };
    p.mvx = int16_t(med(A[0], B[0], C[0]));
    p.mvy = int16_t(med(A[1], B[1], C[1]));
  } else if (ha || hb) {
    p.mvx = ha ? A[0] : B[0];
    p.mvy = ha ? A[1] : B[1];
  }
  return p;
}

}  // namespace gvc::h264
