// deblock.h: the in-loop deblocking filter of a reconstructed picture (8.7)
#pragma once

#include "common/h264enc/cavlc.h"
#include "common/h264enc/picture.h"

namespace gvc::h264 {

struct DeblockParams {
  int qp = 26;                      // QPY of every macroblock except I_PCM (0)
  int chroma_qp_index_offset = 0;
  int alpha_c0_offset = 0;  // FilterOffsetA = slice_alpha_c0_offset_div2 << 1
  int beta_offset = 0;      // FilterOffsetB = slice_beta_offset_div2 << 1
};

// Filters `pic` in place, macroblock by macroblock in raster order (luma and chroma: vertical
// edges left to right, then horizontal edges top to bottom), with the boundary strengths of
// 8.7.2.1 from the coded macroblocks in `map` (slice = -1: slice edges are filtered, as with
// disable_deblocking_filter_idc 0). Frame macroblocks.
void deblock_picture(Picture& pic, const MbMap& map, const DeblockParams& p);

}  // namespace gvc::h264
