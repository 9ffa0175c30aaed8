// mc.cpp: inter prediction samples of P_L0_16x16 macroblocks (8.4.2.2)
#include "common/h264enc/mc.h"

#include "common/dsp/me.h"

namespace gvc::h264 {

void mc_luma16x16(const PlaneView& ref, int x, int y, const int16_t mv[2], uint8_t dst[256]) {
  // xIntL = xAL + (mvLX[0] >> 2) + xL, xFracL = mvLX[0] & 3 (8.4.2.2)
  int ix = x + (mv[0] >> 2), iy = y + (mv[1] >> 2);
  int fx = mv[0] & 3, fy = mv[1] & 3;
  if (fx == 0 && fy == 0) {
    for (int j = 0; j < 16; j++)
      for (int i = 0; i < 16; i++) dst[16 * j + i] = sample_clamped(ref, ix + i, iy + j);
    return;
  }
  for (int j = 0; j < 16; j++)
    for (int i = 0; i < 16; i++) dst[16 * j + i] = luma_qpel_sample(ref, ix + i, iy + j, fx, fy);
}

void mc_chroma8x8(const PlaneView& ref, int x, int y, const int16_t mv[2], uint8_t dst[64]) {
  int ix = x + (mv[0] >> 3), iy = y + (mv[1] >> 3);
  int fx = mv[0] & 7, fy = mv[1] & 7;
  for (int j = 0; j < 8; j++) {
    for (int i = 0; i < 8; i++) {
      int a = sample_clamped(ref, ix + i, iy + j), b = sample_clamped(ref, ix + i + 1, iy + j);
      int c = sample_clamped(ref, ix + i, iy + j + 1), d = sample_clamped(ref, ix + i + 1, iy + j + 1);
      dst[8 * j + i] = uint8_t(((8 - fx) * (8 - fy) * a + fx * (8 - fy) * b + (8 - fx) * fy * c +
                                fx * fy * d + 32) >> 6);
    }
  }
}

}  // namespace gvc::h264
