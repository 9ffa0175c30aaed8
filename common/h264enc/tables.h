// tables.h: constant tables of H.264 (CAVLC codes, scans, quantisation, chroma QP, cbp mapping)
#pragma once

#include <cstdint>

namespace gvc::h264 {

// A variable-length code: `len` bits of `bits`, most significant first. len 0: no code.
struct Vlc {
  uint8_t len;
  uint8_t bits;
};

// coeff_token (Table 9-5), [nC class][4 * TotalCoeff + TrailingOnes]. nC class:
// 0: 0 <= nC < 2, 1: 2 <= nC < 4, 2: 4 <= nC < 8, 3: 8 <= nC (6-bit fixed-length codes).
extern const Vlc kCoeffToken[4][4 * 17];
// coeff_token for chroma DC of 4:2:0 (nC == -1), [4 * TotalCoeff + TrailingOnes].
extern const Vlc kCoeffTokenChromaDc[4 * 5];
// total_zeros (Tables 9-7, 9-8) for 4x4 blocks, [TotalCoeff - 1][total_zeros].
extern const Vlc kTotalZeros[15][16];
// total_zeros (Table 9-9a) for 4:2:0 chroma DC, [TotalCoeff - 1][total_zeros].
extern const Vlc kTotalZerosChromaDc[3][4];
// run_before (Table 9-10), [min(zerosLeft, 7) - 1][run_before].
extern const Vlc kRunBefore[7][15];

// Zig-zag scan of a 4x4 frame block (Table 8-13): scan index -> raster index (4 * y + x).
extern const uint8_t kZigzag4x4[16];

// coded_block_pattern -> codeNum of me(v) (Table 9-4, ChromaArrayType 1 or 2),
// [0: Intra_4x4 / Intra_8x8, 1: Inter][coded_block_pattern].
extern const uint8_t kCbpToCodeNum[2][48];

// QPc as a function of qPI (Table 8-15).
int chroma_qp(int qp_luma, int chroma_qp_index_offset);

// normAdjust4x4 v (8.5.9), [qP % 6][position class]: class 0 for (even, even) positions,
// 1 for (odd, odd), 2 otherwise.
extern const uint8_t kDequantScale[6][3];
// Forward quantisation multipliers MF of the reference encoder (JM), same indexing:
// level = (|coef| * MF + f) >> (15 + qP / 6), the inverse of the scaling with v above.
extern const uint16_t kQuantMf[6][3];
// Position class of raster index 0..15 into the tables above.
extern const uint8_t kPosClass[16];

// luma4x4BlkIdx -> position of the block in the macroblock in 4-sample units (6.4.3).
extern const uint8_t kBlkX[16];
extern const uint8_t kBlkY[16];

}  // namespace gvc::h264
