// transform.h: 4x4 integer transform, DC Hadamard transforms, quantisation and scaling (8.5)
#pragma once

#include <cstdint>

#include "common/h264enc/pixel.h"
#include "common/h264enc/tables.h"
#include "common/util/hd.h"

namespace gvc::h264 {

// out = H * in * H with H = [1 1 1 1; 1 1 -1 -1; 1 -1 -1 1; 1 -1 1 -1] (8.5.10).
GVC_HD void hadamard4x4(const int32_t in[16], int32_t out[16]) {
  int32_t t[16];
  for (int i = 0; i < 4; i++) {
    const int32_t* x = in + 4 * i;
    int s01 = x[0] + x[1], d01 = x[0] - x[1], s23 = x[2] + x[3], d23 = x[2] - x[3];
    t[4 * i + 0] = s01 + s23;
    t[4 * i + 1] = s01 - s23;
    t[4 * i + 2] = d01 - d23;
    t[4 * i + 3] = d01 + d23;
  }
  for (int j = 0; j < 4; j++) {
    int s01 = t[j] + t[4 + j], d01 = t[j] - t[4 + j];
    int s23 = t[8 + j] + t[12 + j], d23 = t[8 + j] - t[12 + j];
    out[j] = s01 + s23;
    out[4 + j] = s01 - s23;
    out[8 + j] = d01 - d23;
    out[12 + j] = d01 + d23;
  }
}

// Blocks are 16 coefficients in raster order (4 * row + column) unless a name says "scan".

// Forward core transform Cf * X * Cf^T of a 4x4 residual.
GVC_HD void fdct4x4(const int16_t r[16], int32_t coef[16]) {
  int32_t t[16];
  for (int i = 0; i < 4; i++) {  // rows
    const int16_t* x = r + 4 * i;
    int s03 = x[0] + x[3], d03 = x[0] - x[3], s12 = x[1] + x[2], d12 = x[1] - x[2];
    t[4 * i + 0] = s03 + s12;
    t[4 * i + 1] = 2 * d03 + d12;
    t[4 * i + 2] = s03 - s12;
    t[4 * i + 3] = d03 - 2 * d12;
  }
  for (int j = 0; j < 4; j++) {  // columns
    int s03 = t[j] + t[12 + j], d03 = t[j] - t[12 + j];
    int s12 = t[4 + j] + t[8 + j], d12 = t[4 + j] - t[8 + j];
    coef[j] = s03 + s12;
    coef[4 + j] = 2 * d03 + d12;
    coef[8 + j] = s03 - s12;
    coef[12 + j] = d03 - 2 * d12;
  }
}
// Inverse transform of scaled coefficients d (8.5.12.2) with the final (x + 32) >> 6.
GVC_HD void idct4x4(const int32_t d[16], int32_t res[16]) {
  int32_t f[16];
  for (int i = 0; i < 4; i++) {  // 8.5.12.2: each row first
    const int32_t* x = d + 4 * i;
    int e0 = x[0] + x[2], e1 = x[0] - x[2];
    int e2 = (x[1] >> 1) - x[3], e3 = x[1] + (x[3] >> 1);
    f[4 * i + 0] = e0 + e3;
    f[4 * i + 1] = e1 + e2;
    f[4 * i + 2] = e1 - e2;
    f[4 * i + 3] = e0 - e3;
  }
  for (int j = 0; j < 4; j++) {  // then each column
    int g0 = f[j] + f[8 + j], g1 = f[j] - f[8 + j];
    int g2 = (f[4 + j] >> 1) - f[12 + j], g3 = f[4 + j] + (f[12 + j] >> 1);
    res[j] = (g0 + g3 + 32) >> 6;
    res[4 + j] = (g1 + g2 + 32) >> 6;
    res[8 + j] = (g1 - g2 + 32) >> 6;
    res[12 + j] = (g0 - g3 + 32) >> 6;
  }
}

// Forward Hadamard of the 16 luma DC coefficients of an Intra_16x16 macroblock (4x4 raster of
// blocks), divided by two with rounding.
GVC_HD void fdc_luma(const int32_t dc[16], int32_t out[16]) {
  int32_t h[16];
  hadamard4x4(dc, h);
  for (int i = 0; i < 16; i++) out[i] = h[i] >= 0 ? (h[i] + 1) >> 1 : -((-h[i] + 1) >> 1);
}
// Forward 2x2 Hadamard of the chroma DC coefficients (raster order of the chroma blocks).
GVC_HD void fdc_chroma(const int32_t c[4], int32_t out[4]) {
  out[0] = c[0] + c[1] + c[2] + c[3];
  out[1] = c[0] - c[1] + c[2] - c[3];
  out[2] = c[0] + c[1] - c[2] - c[3];
  out[3] = c[0] - c[1] - c[2] + c[3];
}

// Largest |level| the encoder emits: every such level has a CAVLC code with level_prefix at
// most 15, as Baseline and Main require (9.2.2.1), for any suffixLength.
constexpr int kMaxLevel = 2063;

GVC_HD int16_t quant_one(int32_t c, int mf, int f, int qbits) {
  int v = int((int64_t(iabs(c)) * mf + f) >> qbits);
  if (v > kMaxLevel) v = kMaxLevel;
  return int16_t(c < 0 ? -v : v);
}

// Quantisation with a dead zone: level = sign(c) * ((|c| * MF + f) >> qbits), f = 2^qbits/3
// for intra and 2^qbits/6 for inter blocks, qbits = 15 + qP/6; levels are clipped to
// +-kMaxLevel. `start` = 1 skips the DC of Intra_16x16 and chroma blocks (left 0). Returns the
// number of non-zero levels.
GVC_HD int quant4x4(const int32_t coef[16], int16_t level[16], int qp, bool intra, int start = 0) {
  int qbits = 15 + qp / 6;
  int f = (1 << qbits) / (intra ? 3 : 6);
  int nz = 0;
  if (start) level[0] = 0;
  for (int i = start; i < 16; i++) {
    level[i] = quant_one(coef[i], GVC_T(kQuantMf)[qp % 6][GVC_T(kPosClass)[i]], f, qbits);
    nz += level[i] != 0;
  }
  return nz;
}
// DC levels of Intra_16x16 (16) or chroma (4), with MF of position 0 and qbits + 1.
GVC_HD int quant_dc(const int32_t coef[], int16_t level[], int n, int qp, bool intra) {
  int qbits = 16 + qp / 6;
  int f = (1 << qbits) / (intra ? 3 : 6);
  int nz = 0;
  for (int i = 0; i < n; i++) {
    level[i] = quant_one(coef[i], GVC_T(kQuantMf)[qp % 6][0], f, qbits);
    nz += level[i] != 0;
  }
  return nz;
}

// Scaling (8.5.12.1) of the levels of a 4x4 block into d, flat scaling matrices. `start` = 1
// leaves d[0] untouched (it comes from the DC transform).
GVC_HD void dequant4x4(const int16_t level[16], int32_t d[16], int qp, int start = 0) {
  // With flat weights (16), LevelScale4x4 = 16 * v and 8.5.12.1 reduces to c * v << (qP / 6).
  for (int i = start; i < 16; i++) d[i] = (level[i] * GVC_T(kDequantScale)[qp % 6][GVC_T(kPosClass)[i]]) << (qp / 6);
}
// Inverse Hadamard and scaling of Intra_16x16 DC levels into dcY (8.5.10).
GVC_HD void dequant_dc_luma(const int16_t level[16], int32_t dcy[16], int qp) {
  int32_t c[16], f[16];
  for (int i = 0; i < 16; i++) c[i] = level[i];
  hadamard4x4(c, f);
  int scale = 16 * GVC_T(kDequantScale)[qp % 6][0];  // LevelScale4x4(qP % 6, 0, 0)
  for (int i = 0; i < 16; i++) {
    if (qp >= 36)
      dcy[i] = (f[i] * scale) << (qp / 6 - 6);
    else
      dcy[i] = (f[i] * scale + (1 << (5 - qp / 6))) >> (6 - qp / 6);
  }
}
// Inverse 2x2 transform and scaling of 4:2:0 chroma DC levels into dcC (8.5.11.2).
GVC_HD void dequant_dc_chroma(const int16_t level[4], int32_t dcc[4], int qp) {
  int32_t c[4] = {level[0], level[1], level[2], level[3]}, f[4];
  fdc_chroma(c, f);
  int scale = 16 * GVC_T(kDequantScale)[qp % 6][0];
  for (int i = 0; i < 4; i++) dcc[i] = ((f[i] * scale) << (qp / 6)) >> 5;
}

// Sum of absolute values of the 4x4 Hadamard transform of a difference block, halved (the
// SATD used for mode decision).
GVC_HD int satd4x4(const int16_t diff[16]) {
  int32_t in[16], out[16];
  for (int i = 0; i < 16; i++) in[i] = diff[i];
  hadamard4x4(in, out);
  int sum = 0;
  for (int i = 0; i < 16; i++) sum += iabs(out[i]);
  return (sum + 1) >> 1;
}

}  // namespace gvc::h264
