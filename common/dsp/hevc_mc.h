// hevc_mc.h: HEVC inter sample prediction (8.5.3.3): fractional interpolation and weighting, batch interface and CPU reference
#pragma once

#include <cstdint>

#include "common/dsp/hevc_plane.h"

namespace gvc {

// One prediction block to predict, with its motion already derived (8.5.3.2).
struct HevcMcPb {
  int x = 0, y = 0, w = 0, h = 0;  // luma samples; chroma (4:2:0) is x/2, y/2, w/2, h/2
  uint8_t pred_flag[2] = {0, 0};   // predFlagL0, predFlagL1
  uint8_t ref[2] = {0, 0};         // per list: index into HevcMcBatch::refs
  int16_t mv[2][2] = {};           // mvLX in quarter luma samples, [list][0 = x, 1 = y]
  // 8.5.3.3.4.3 explicit weighting (weightedPredFlag 1); otherwise the default weighting.
  bool weighted = false;
  uint8_t log2_wd_base[3] = {0, 0, 0};  // luma_log2_weight_denom, ChromaLog2WeightDenom (x2)
  int16_t weight[2][3] = {};            // LumaWeightLX, ChromaWeightLX[.][0..1] per component
  int16_t offset[2][3] = {};            // luma_offset_lX, ChromaOffsetLX, before the bit-depth shift
};

// A batch of prediction blocks of one picture, all written into `dst`.
struct HevcMcBatch {
  const HevcPlane (*refs)[3] = nullptr;  // reference pictures, three planes each
  int n_refs = 0;
  const HevcMcPb* pbs = nullptr;
  int n_pbs = 0;
  int bit_depth_y = 8, bit_depth_c = 8;
};

struct HevcMc {
  static void run(const HevcMcBatch& b, const HevcPlane dst[3]);
};

// 8.5.3.3.3.1 / 8.5.3.3.3.2 fractional sample interpolation of one block of one component into
// 14-bit intermediate predSamples (w x h, row stride w). `c_idx` 0 uses the 8-tap luma filter
// with quarter-sample `mv`, else the 4-tap chroma filter with eighth-sample `mv` (4:2:0); w and
// h are 1..64 (nothing is written otherwise).
void hevc_mc_interpolate(const HevcPlane& ref, int c_idx, int x, int y, int w, int h,
                         int mv_x, int mv_y, int bit_depth, int16_t* pred);

}  // namespace gvc
