// mvdraw.h: per-frame motion statistics and arrow drawing of a block vector field (host side)
#pragma once

#include <cstddef>

#include "common/dsp/plane.h"
#include "common/mv/mv_field.h"

namespace gvc {

// A block counts as moving when its vector is at least this long, in pixels.
constexpr double kMovingThresholdPel = 1.0;

struct MvStats {
  double mean_length = 0;      // pixels
  double max_length = 0;       // pixels
  double moving_fraction = 0;  // blocks with length >= kMovingThresholdPel / all blocks
};

MvStats mv_stats(const MvCost* field, size_t n);

// Draws one arrow per block with a non-zero vector onto `luma`: from where the block was in
// the reference (centre + v/4) to the block centre, head at the centre. White, clipped.
void draw_mv_arrows(const MutablePlaneView& luma, const MvCost* field, int block_w,
                    int block_h, int cols, int rows);

}  // namespace gvc
