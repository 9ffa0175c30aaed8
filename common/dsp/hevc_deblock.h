// hevc_deblock.h: HEVC deblocking filter (8.7.2.5), frame-level interface and CPU reference
#pragma once

#include <cstdint>

#include "common/dsp/hevc_plane.h"

namespace gvc {

// Everything the edge filters need, at 4x4 luma granularity ("units", row stride `stride`).
// Edges and their boundary strengths are derived by the caller (8.7.2.2-8.7.2.4).
struct HevcDeblockFrame {
  int width = 0, height = 0;  // luma samples
  int stride = 0;             // units per row of the arrays below
  // bS (0..2) of the edge on the left (bs_v) or top (bs_h) of each unit; only units on the
  // 8x8 luma grid are read.
  const uint8_t* bs_v = nullptr;
  const uint8_t* bs_h = nullptr;
  const int8_t* qp_y = nullptr;        // QpY of the coding unit covering the unit
  const int8_t* beta_offset_div2 = nullptr;  // slice_beta_offset_div2 of the unit's slice
  const int8_t* tc_offset_div2 = nullptr;    // slice_tc_offset_div2 of the unit's slice
  const uint8_t* no_filter = nullptr;  // pcm with pcm_loop_filter_disabled, or transquant bypass
  int bit_depth_y = 8, bit_depth_c = 8;
  int cb_qp_offset = 0, cr_qp_offset = 0;  // pps_cb_qp_offset, pps_cr_qp_offset (cQpPicOffset)
};

// Table 8-12: beta' for Q = 0..51 and tC' for Q = 0..53.
extern const uint8_t kHevcBeta[52];
extern const uint8_t kHevcTc[54];
// Table 8-10: QpC as a function of qPi for ChromaArrayType 1.
int hevc_chroma_qp(int qpi);

// All vertical edges of the picture, then all horizontal edges (8.7.2), in place.
struct HevcDeblock {
  static void run(const HevcDeblockFrame& f, const HevcPlane planes[3]);
};

}  // namespace gvc
