// mc.h: inter prediction samples of P_L0_16x16 macroblocks (8.4.2.2)
#pragma once

#include <cstdint>

#include "common/dsp/plane.h"

namespace gvc::h264 {

// 16x16 luma prediction (stride 16) of the block at luma (x, y) displaced by the quarter-pel
// vector mv, from the edge-extended reference (8.4.2.2.1, via luma_qpel_sample of me.h).
void mc_luma16x16(const PlaneView& ref, int x, int y, const int16_t mv[2], uint8_t dst[256]);

// 8x8 chroma prediction (stride 8) of the block at chroma (x, y) with the luma vector mv,
// i.e. an eighth-pel chroma vector, bilinear (8.4.2.2.2).
void mc_chroma8x8(const PlaneView& ref, int x, int y, const int16_t mv[2], uint8_t dst[64]);

}  // namespace gvc::h264
