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

// One intra transform block (8.4.4.1) of one component, in decoding order. The availability
// of its 4N+1 reference samples (8.4.4.2.1: 6.4.1 plus constrained_intra_pred_flag) is decided
// at parse time, per unit of 4 luma samples (2 chroma samples in 4:2:0), the granularity at
// which it can change: bit k is unit k of the reference array in the order of HevcIntraRefs
// (left column bottom up, then the corner p[-1][-1] as its own unit, then the top row).
struct HevcIntraBlock {
  uint16_t x = 0, y = 0;  // top-left sample in the component's plane
  uint8_t c_idx = 0;
  uint8_t log2_size = 2;  // log2(nTbS)
  uint8_t mode = 0;       // predModeIntra
  uint64_t avail = 0;
  int32_t tu = -1;        // its residual in the batch's TU list, or -1 (cbf 0)
};

// Substitutes unavailable samples, filters the references when the mode asks for it, and
// writes the prediction at (x0, y0) of `plane` (8.4.4.2.2-8.4.4.2.6). `refs` is modified.
void hevc_intra_predict(HevcIntraRefs& refs, const HevcIntraParams& prm, const HevcPlane& plane,
                        int x0, int y0);

// The reference samples of `b` from `plane` as its availability mask describes them
// (unavailable samples 0, for 8.4.4.2.2 to substitute).
void hevc_gather_intra_refs(const HevcIntraBlock& b, const HevcPlane& plane, HevcIntraRefs& refs);

}  // namespace gvc
