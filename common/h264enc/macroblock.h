// macroblock.h: one coded macroblock (syntax values and levels) and its residual coding + reconstruction
#pragma once

#include <cstdint>

namespace gvc::h264 {

// P macroblock types are those of Table 7-13 (P_8x8ref0 is never produced).
enum class MbType : uint8_t { I4x4, I16x16, IPcm, PL0_16x16, PSkip, PL0_16x8, PL0_8x16, P8x8 };

// sub_mb_type of a P_8x8 sub-macroblock (Table 7-17): the value is the syntax value.
enum SubMbType : uint8_t { kSubP8x8 = 0, kSubP8x4 = 1, kSubP4x8 = 2, kSubP4x4 = 3 };

inline bool is_intra(MbType t) { return t == MbType::I4x4 || t == MbType::I16x16 || t == MbType::IPcm; }

// luma4x4BlkIdx of the 4x4 block at column bx, row by (in 4-sample units) of a macroblock.
constexpr uint8_t kBlkIdx[4][4] = {{0, 1, 4, 5}, {2, 3, 6, 7}, {8, 9, 12, 13}, {10, 11, 14, 15}};

struct Macroblock {
  MbType type = MbType::I16x16;
  uint16_t slice_id = 0;    // index of the slice of the picture that holds the macroblock
  uint8_t i16_mode = 0;     // Intra16x16PredMode
  uint8_t i4_mode[16] = {}; // Intra4x4PredMode[luma4x4BlkIdx]
  uint8_t chroma_mode = 0;  // intra_chroma_pred_mode
  uint8_t cbp = 0;          // coded_block_pattern: bits 0..3 luma 8x8 blocks, bits 4..5 chroma (0..2)
  // Motion of P macroblocks (intra: ref_idx -1, vectors 0). refIdxL0 per 8x8 quadrant
  // (raster: 0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right); mvL0 per 4x4 block in
  // raster order (index 4 * y + x, quarter-pel); mvd_l0 of each (sub-)partition stored at its
  // top-left 4x4 block.
  int8_t ref_idx[4] = {-1, -1, -1, -1};
  uint8_t sub_mb_type[4] = {};  // P_8x8 only
  int16_t mv[16][2] = {};
  int16_t mvd[16][2] = {};
  // TotalCoeff(coeff_token) of each 4x4 block (luma by luma4x4BlkIdx, AC only for
  // Intra_16x16; chroma AC by chroma4x4BlkIdx): nA/nB of 9.2.1 and the bS of 8.7.2.1.
  uint8_t total_coeff_luma[16] = {};
  uint8_t total_coeff_chroma[2][4] = {};
  // Levels in zig-zag scan order. Intra_16x16 and chroma AC blocks use scan indices 1..15.
  int16_t luma_dc[16] = {};
  int16_t luma[16][16] = {};
  int16_t chroma_dc[2][4] = {};
  int16_t chroma_ac[2][4][16] = {};
  uint8_t pcm[384] = {};  // I_PCM samples: 256 luma, 64 Cb, 64 Cr, raster order
};

// The macroblock's samples: source (read) and reconstruction (written) planes at its origin.
struct MbPixels {
  const uint8_t* src[3];
  int src_stride[3];
  uint8_t* rec[3];
  int rec_stride[3];
};

// Residual of the 16x16 luma block against `pred` (stride 16): transform, quantisation and
// reconstruction into rec. Intra_16x16 (separate DC transform, cbp luma 0 or 15) when `i16`,
// else sixteen plain 4x4 blocks with the inter dead zone. Sets luma levels, cbp bits 0..3,
// total_coeff_luma. Returns the distortion (SSD) of the reconstruction.
int64_t code_luma16x16(const MbPixels& px, const uint8_t pred[256], int qp, bool i16, Macroblock& mb);

// One Intra_4x4 block: residual against `pred` (stride 4), levels, reconstruction. Sets
// luma[blk], total_coeff_luma[blk]; cbp bits are set by the caller. Returns the SSD.
int64_t code_luma4x4(const MbPixels& px, int blk, const uint8_t pred[16], int qp, Macroblock& mb);

// Both chroma components against `pred` (stride 8, [0] Cb, [1] Cr); sets chroma levels,
// cbp bits 4..5 and total_coeff_chroma. Returns the SSD.
int64_t code_chroma(const MbPixels& px, const uint8_t pred[2][64], int qpc, bool intra, Macroblock& mb);

// Copies the source into mb.pcm and the reconstruction (I_PCM).
void code_pcm(const MbPixels& px, Macroblock& mb);

}  // namespace gvc::h264
