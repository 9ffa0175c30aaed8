// hevc_intra.h: HEVC intra sample prediction (8.4.4.2), CPU reference
#pragma once

#include <cstdint>

#include "common/dsp/hevc_plane.h"

namespace gvc {

// Reference samples of one nTbS x nTbS block in the order of 8.4.4.2.2: index i < 2N is
// p[-1][2N-1-i] (left column, bottom up), index 2N is p[-1][-1], index 2N+1+x is p[x][-1].
struct HevcIntraRefs {
  uint16_t p[4 * 32 + 1];
  uint8_t avail[4 * 32 + 1];  // 1 where the neighbouring sample is available for prediction
};

struct HevcIntraParams {
  int log2_size = 2;
  int c_idx = 0;
  int mode = 0;  // predModeIntra 0..34
  int bit_depth = 8;
  bool strong_intra_smoothing = false;  // sps strong_intra_smoothing_enabled_flag
};

// Substitutes unavailable samples, filters the references when the mode asks for it, and
// writes the prediction at (x0, y0) of `plane` (8.4.4.2.2-8.4.4.2.6). `refs` is modified.
void hevc_intra_predict(HevcIntraRefs& refs, const HevcIntraParams& prm, const HevcPlane& plane,
                        int x0, int y0);

}  // namespace gvc
