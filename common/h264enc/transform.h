// transform.h: 4x4 integer transform, DC Hadamard transforms, quantisation and scaling (8.5)
#pragma once

#include <cstdint>

namespace gvc::h264 {

// Blocks are 16 coefficients in raster order (4 * row + column) unless a name says "scan".

// Forward core transform Cf * X * Cf^T of a 4x4 residual.
void fdct4x4(const int16_t residual[16], int32_t coef[16]);
// Inverse transform of scaled coefficients d (8.5.12.2) with the final (x + 32) >> 6.
void idct4x4(const int32_t d[16], int32_t residual[16]);

// Forward Hadamard of the 16 luma DC coefficients of an Intra_16x16 macroblock (4x4 raster of
// blocks), divided by two with rounding.
void fdc_luma(const int32_t dc[16], int32_t out[16]);
// Forward 2x2 Hadamard of the chroma DC coefficients (raster order of the chroma blocks).
void fdc_chroma(const int32_t dc[4], int32_t out[4]);

// Largest |level| the encoder emits: every such level has a CAVLC code with level_prefix at
// most 15, as Baseline and Main require (9.2.2.1), for any suffixLength.
constexpr int kMaxLevel = 2063;

// Quantisation with a dead zone: level = sign(c) * ((|c| * MF + f) >> qbits), f = 2^qbits/3
// for intra and 2^qbits/6 for inter blocks, qbits = 15 + qP/6; levels are clipped to
// +-kMaxLevel. `start` = 1 skips the DC of Intra_16x16 and chroma blocks (left 0). Returns the
// number of non-zero levels.
int quant4x4(const int32_t coef[16], int16_t level[16], int qp, bool intra, int start = 0);
// DC levels of Intra_16x16 (16) or chroma (4), with MF of position 0 and qbits + 1.
int quant_dc(const int32_t coef[], int16_t level[], int n, int qp, bool intra);

// Scaling (8.5.12.1) of the levels of a 4x4 block into d, flat scaling matrices. `start` = 1
// leaves d[0] untouched (it comes from the DC transform).
void dequant4x4(const int16_t level[16], int32_t d[16], int qp, int start = 0);
// Inverse Hadamard and scaling of Intra_16x16 DC levels into dcY (8.5.10).
void dequant_dc_luma(const int16_t level[16], int32_t dcy[16], int qp);
// Inverse 2x2 transform and scaling of 4:2:0 chroma DC levels into dcC (8.5.11.2).
void dequant_dc_chroma(const int16_t level[4], int32_t dcc[4], int qp);

// Sum of absolute values of the 4x4 Hadamard transform of a difference block, halved (the
// SATD used for mode decision).
int satd4x4(const int16_t diff[16]);

}  // namespace gvc::h264
