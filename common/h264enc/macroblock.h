// macroblock.h: one coded macroblock (syntax values and levels) and its residual coding + reconstruction
#pragma once

#include <cstdint>

#include "common/h264enc/pixel.h"
#include "common/h264enc/tables.h"
#include "common/h264enc/transform.h"
#include "common/util/hd.h"

namespace gvc::h264 {

// P macroblock types are those of Table 7-13 (P_8x8ref0 is never produced).
enum class MbType : uint8_t { I4x4, I16x16, IPcm, PL0_16x16, PSkip, PL0_16x8, PL0_8x16, P8x8 };

// sub_mb_type of a P_8x8 sub-macroblock (Table 7-17): the value is the syntax value.
enum SubMbType : uint8_t { kSubP8x8 = 0, kSubP8x4 = 1, kSubP4x8 = 2, kSubP4x4 = 3 };

GVC_HD bool is_intra(MbType t) { return t == MbType::I4x4 || t == MbType::I16x16 || t == MbType::IPcm; }

// luma4x4BlkIdx of the 4x4 block at column bx, row by (in 4-sample units) of a macroblock.
GVC_TABLE(uint8_t, kBlkIdx, [4][4], {{0, 1, 4, 5}, {2, 3, 6, 7}, {8, 9, 12, 13}, {10, 11, 14, 15}})

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
  // Everything from here on is written by the reconstruction (recon_mb.h); the fields above
  // are the decision's, the only ones a device copy receives (frame_recon.h kDecisionBytes).
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

// Partitions of P macroblocks (Tables 7-13 and 7-17), in 4x4-block units: mbPartIdx `part`
// of `type` inside the macroblock, subMbPartIdx `part` of sub_mb_type `sub` inside its 8x8.
GVC_HD void partition_rect(MbType type, int part, int* x, int* y, int* w, int* h) {
  switch (type) {
    case MbType::PL0_16x8: *x = 0, *y = 2 * part, *w = 4, *h = 2; return;
    case MbType::PL0_8x16: *x = 2 * part, *y = 0, *w = 2, *h = 4; return;
    case MbType::P8x8: *x = 2 * (part & 1), *y = 2 * (part >> 1), *w = 2, *h = 2; return;
    default: *x = 0, *y = 0, *w = 4, *h = 4; return;
  }
}

GVC_HD void sub_partition_rect(int sub, int part, int* x, int* y, int* w, int* h) {
  switch (sub) {
    case kSubP8x4: *x = 0, *y = part, *w = 2, *h = 1; return;
    case kSubP4x8: *x = part, *y = 0, *w = 1, *h = 2; return;
    case kSubP4x4: *x = part & 1, *y = part >> 1, *w = 1, *h = 1; return;
    default: *x = 0, *y = 0, *w = 2, *h = 2; return;
  }
}

// NumMbPart: 1 for P_L0_16x16 / P_Skip
GVC_HD int num_mb_part(MbType type) {
  return type == MbType::P8x8 ? 4 : (type == MbType::PL0_16x8 || type == MbType::PL0_8x16) ? 2 : 1;
}

// NumSubMbPart
GVC_HD int num_sub_mb_part(int sub) { return sub == kSubP8x8 ? 1 : sub == kSubP4x4 ? 4 : 2; }

// The macroblocks of a picture in raster order, for the nA/nB and prediction-mode neighbours.
// With slice >= 0, macroblocks of other slices count as not available (6.4.8); the loop
// filter, which crosses slice edges (disable_deblocking_filter_idc 0), uses slice = -1.
struct MbMap {
  const Macroblock* mbs = nullptr;
  int mb_width = 0;
  int mb_height = 0;
  int slice = -1;
  GVC_HD const Macroblock* at(int mx, int my) const {
    if (mx < 0 || my < 0 || mx >= mb_width || my >= mb_height) return nullptr;
    const Macroblock* m = &mbs[my * mb_width + mx];
    return (slice >= 0 && m->slice_id != slice) ? nullptr : m;
  }
};

// The macroblock's samples: source (read) and reconstruction (written) planes at its origin.
struct MbPixels {
  const uint8_t* src[3];
  int src_stride[3];
  uint8_t* rec[3];
  int rec_stride[3];
};

// Residual of a 4x4 block at (x, y) of plane p.
GVC_HD void diff4x4(const uint8_t* src, int ss, const uint8_t* pred, int ps, int16_t out[16]) {
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 4; x++) out[4 * y + x] = int16_t(src[y * ss + x] - pred[y * ps + x]);
}

GVC_HD int64_t recon4x4(const int32_t d[16], const uint8_t* pred, int ps, const uint8_t* src,
                        int ss, uint8_t* rec, int rs) {
  int32_t r[16];
  idct4x4(d, r);
  int64_t ssd = 0;
  for (int y = 0; y < 4; y++) {
    for (int x = 0; x < 4; x++) {
      uint8_t v = clip1(pred[y * ps + x] + r[4 * y + x]);
      rec[y * rs + x] = v;
      int e = int(v) - src[y * ss + x];
      ssd += e * e;
    }
  }
  return ssd;
}

GVC_HD int to_scan(const int16_t raster[16], int16_t scan[16], int start) {
  int n = 0;
  for (int i = start; i < 16; i++) {
    scan[i] = raster[GVC_T(kZigzag4x4)[i]];
    n += scan[i] != 0;
  }
  if (start) scan[0] = 0;
  return n;
}

// Decimation of an inter macroblock's residual (JM's coefficient cost, x264's
// dct-decimate): a 4x4 block whose levels are all -1, 0 or 1 costs, for each of them, 3, 2,
// 2, 1, 1 or 1 by the zeros that run before it in scan order (more zeros: 0); a block with a
// larger level costs kDecimateKeep. Where a few lone small levels cost more bits than the
// distortion they save, they are dropped: a luma 8x8 quadrant whose blocks cost less than
// kDecimateQuadrant, all the luma of a macroblock whose quadrants cost less than
// kDecimateMb, a chroma component's AC levels that cost less than kDecimateChromaAc.
constexpr int kDecimateKeep = 9, kDecimateQuadrant = 4, kDecimateMb = 6, kDecimateChromaAc = 7;
GVC_TABLE(uint8_t, kDecimateRunCost, [6], {3, 2, 2, 1, 1, 1})

// The cost of the levels scan[start..15] (scan order).
GVC_HD int decimate_score(const int16_t scan[16], int start) {
  int score = 0, run = 0;
  bool seen = false;  // a level at a later position (the zeros after the last level are free)
  for (int i = 15; i >= start; i--) {
    const int v = scan[i];
    if (v == 0) {
      run += seen;
      continue;
    }
    if (v > 1 || v < -1) return kDecimateKeep;
    if (seen) score += run < 6 ? GVC_T(kDecimateRunCost)[run] : 0;
    seen = true;
    run = 0;
  }
  if (seen) score += run < 6 ? GVC_T(kDecimateRunCost)[run] : 0;
  return score;
}

// The luma 8x8 quadrants of an inter macroblock that keep their levels, from the blocks'
// decimate_score (block order: quadrant q holds blocks 4q..4q+3).
GVC_HD int decimate_luma_quadrants(const int score[16]) {
  int keep = 0, total = 0;
  for (int q = 0; q < 4; q++) {
    const int sq = score[4 * q] + score[4 * q + 1] + score[4 * q + 2] + score[4 * q + 3];
    total += sq;
    if (sq >= kDecimateQuadrant) keep |= 1 << q;
  }
  return total < kDecimateMb ? 0 : keep;
}

GVC_HD void from_scan(const int16_t scan[16], int16_t raster[16]) {
  for (int i = 0; i < 16; i++) raster[i] = scan[GVC_T(kZigzag4x4Inverse)[i]];  // a gather, as above
}

// code_luma16x16 in three steps, which a GPU block may share among its threads (a thread per
// 4x4 block; gpu/h264_recon.cu):
// 1. The levels of luma block blk (its AC levels for Intra_16x16): luma[blk] and
//    total_coeff_luma[blk]. Returns the block's DC coefficient (the input of Intra_16x16's DC
//    transform). Each block's levels are made as soon as it is transformed (the AC levels do
//    not depend on the DC transform), so one block's coefficients are held at a time: a GPU
//    thread's stack stays small (the reconstruction kernels' local memory is reserved for
//    every resident thread).
GVC_HD int32_t luma_block_levels(const MbPixels& px, const uint8_t pred[256], int qp, bool i16, int blk,
                                 Macroblock& mb) {
  int x = 4 * GVC_T(kBlkX)[blk], y = 4 * GVC_T(kBlkY)[blk];
  int16_t res[16], level[16];
  int32_t coef[16];
  diff4x4(px.src[0] + y * px.src_stride[0] + x, px.src_stride[0], pred + 16 * y + x, 16, res);
  fdct4x4(res, coef);
  quant4x4(coef, level, qp, i16, i16 ? 1 : 0);
  mb.total_coeff_luma[blk] = uint8_t(to_scan(level, mb.luma[blk], i16 ? 1 : 0));
  return coef[0];
}
// 2. Intra_16x16's DC levels (luma_dc) from the blocks' DC coefficients (block order), and
//    each block's scaled DC into dcy (block order).
GVC_HD void luma_dc_levels(const int32_t blk_dc[16], int qp, Macroblock& mb, int32_t dcy[16]) {
  // DC matrix in the blocks' spatial raster order, scanned in zig-zag like a 4x4 block.
  int32_t dc[16], dct[16];
  // Gathered, not scattered through kBlkX/kBlkY: nvcc 13.0 -O2 miscompiled that scatter into
  // a local array inside the reconstruction kernel (garbage DCs; right with -G or as a gather).
  for (int i = 0; i < 16; i++) dc[i] = blk_dc[GVC_T(kBlkIdx)[i >> 2][i & 3]];
  fdc_luma(dc, dct);
  int16_t dcl[16];
  quant_dc(dct, dcl, 16, qp, true);
  to_scan(dcl, mb.luma_dc, 0);
  int32_t dq[16];
  dequant_dc_luma(dcl, dq, qp);
  for (int blk = 0; blk < 16; blk++) dcy[blk] = dq[4 * GVC_T(kBlkY)[blk] + GVC_T(kBlkX)[blk]];
}
// 3. The reconstruction of block blk into rec once the macroblock's cbp (bits 0..3 in
//    cbp_luma) is known: a block outside it is reconstructed from zero levels, which are
//    cleared. `dc`: its scaled DC (Intra_16x16). Returns the SSD.
GVC_HD int64_t luma_block_recon(const MbPixels& px, const uint8_t pred[256], int qp, bool i16, int blk,
                                int cbp_luma, int32_t dc, Macroblock& mb) {
  int x = 4 * GVC_T(kBlkX)[blk], y = 4 * GVC_T(kBlkY)[blk];
  if (!(cbp_luma & (1 << (blk >> 2)))) {
    for (int i = i16 ? 1 : 0; i < 16; i++) mb.luma[blk][i] = 0;
    mb.total_coeff_luma[blk] = 0;
  }
  int16_t level[16];
  from_scan(mb.luma[blk], level);
  int32_t d[16];
  dequant4x4(level, d, qp, i16 ? 1 : 0);
  if (i16) d[0] = dc;
  return recon4x4(d, pred + 16 * y + x, 16, px.src[0] + y * px.src_stride[0] + x, px.src_stride[0],
                  px.rec[0] + y * px.rec_stride[0] + x, px.rec_stride[0]);
}

// Residual of the 16x16 luma block against `pred` (stride 16): transform, quantisation and
// reconstruction into rec. Intra_16x16 (separate DC transform, cbp luma 0 or 15) when `i16`,
// else sixteen plain 4x4 blocks with the inter dead zone. Sets luma levels, cbp bits 0..3,
// total_coeff_luma. Returns the distortion (SSD) of the reconstruction.
GVC_HD int64_t code_luma16x16(const MbPixels& px, const uint8_t pred[256], int qp, bool i16, Macroblock& mb) {
  int32_t blk_dc[16];
  int ac_total = 0;
  mb.cbp &= ~15;
  int score[16];
  for (int blk = 0; blk < 16; blk++) {
    blk_dc[blk] = luma_block_levels(px, pred, qp, i16, blk, mb);
    const int n = mb.total_coeff_luma[blk];
    ac_total += n;
    if (!i16 && n) mb.cbp |= 1 << (blk >> 2);
    score[blk] = i16 ? 0 : decimate_score(mb.luma[blk], 0);
  }
  if (!i16) mb.cbp &= uint8_t(decimate_luma_quadrants(score) | ~15);
  int32_t dcy[16] = {};
  if (i16) luma_dc_levels(blk_dc, qp, mb, dcy);
  if (i16 && ac_total) mb.cbp |= 15;
  int64_t ssd = 0;
  for (int blk = 0; blk < 16; blk++) ssd += luma_block_recon(px, pred, qp, i16, blk, mb.cbp & 15, dcy[blk], mb);
  return ssd;
}

// One Intra_4x4 block: residual against `pred` (stride 4), levels, reconstruction. Sets
// luma[blk], total_coeff_luma[blk]; cbp bits are set by the caller. Returns the SSD.
GVC_HD int64_t code_luma4x4(const MbPixels& px, int blk, const uint8_t pred[16], int qp, Macroblock& mb) {
  int x = 4 * GVC_T(kBlkX)[blk], y = 4 * GVC_T(kBlkY)[blk];
  const uint8_t* src = px.src[0] + y * px.src_stride[0] + x;
  int16_t res[16], level[16];
  int32_t coef[16], d[16];
  diff4x4(src, px.src_stride[0], pred, 4, res);
  fdct4x4(res, coef);
  quant4x4(coef, level, qp, true);
  mb.total_coeff_luma[blk] = uint8_t(to_scan(level, mb.luma[blk], 0));
  dequant4x4(level, d, qp);
  return recon4x4(d, pred, 4, src, px.src_stride[0], px.rec[0] + y * px.rec_stride[0] + x,
                  px.rec_stride[0]);
}

// code_chroma in three steps, shared among GPU threads as code_luma16x16's:
// 1. The AC levels of block blk of component c (0 Cb, 1 Cr) against `pred` (that component's,
//    stride 8): chroma_ac[c][blk], total_coeff_chroma[c][blk]. Returns its DC coefficient.
GVC_HD int32_t chroma_block_levels(const MbPixels& px, const uint8_t pred[64], int qpc, bool intra, int c, int blk,
                                   Macroblock& mb) {
  const int x = 4 * (blk & 1), y = 4 * (blk >> 1), ss = px.src_stride[1 + c];
  int16_t res[16], level[16];
  int32_t coef[16];
  diff4x4(px.src[1 + c] + y * ss + x, ss, pred + 8 * y + x, 8, res);
  fdct4x4(res, coef);
  quant4x4(coef, level, qpc, intra, 1);
  mb.total_coeff_chroma[c][blk] = uint8_t(to_scan(level, mb.chroma_ac[c][blk], 1));
  return coef[0];
}
// 1b. An inter macroblock's component c whose AC levels cost less than kDecimateChromaAc
//    (decimate_score over its four blocks) drops them, block by block.
GVC_HD void drop_chroma_ac(int c, int blk, Macroblock& mb) {
  for (int i = 0; i < 16; i++) mb.chroma_ac[c][blk][i] = 0;
  mb.total_coeff_chroma[c][blk] = 0;
}
// 2. The DC levels of component c (chroma_dc[c]; the chroma DC scan is raster, 8.5.11.1) from
//    its blocks' DC coefficients. Returns how many are non-zero.
GVC_HD int chroma_dc_levels(const int32_t dc[4], int qpc, bool intra, int c, Macroblock& mb) {
  int32_t dct[4];
  fdc_chroma(dc, dct);
  return quant_dc(dct, mb.chroma_dc[c], 4, qpc, intra);
}
// 3. The reconstruction of block blk of component c once cbp_chroma (0, 1 or 2) is known: its
//    AC levels are cleared unless it is 2. `dc`: its scaled DC (dequant_dc_chroma of the
//    component's DC levels). Returns the SSD.
GVC_HD int64_t chroma_block_recon(const MbPixels& px, const uint8_t pred[64], int qpc, int c, int blk, int cbp_chroma,
                                  int32_t dc, Macroblock& mb) {
  const int x = 4 * (blk & 1), y = 4 * (blk >> 1);
  if (cbp_chroma != 2) {
    for (int i = 0; i < 16; i++) mb.chroma_ac[c][blk][i] = 0;
    mb.total_coeff_chroma[c][blk] = 0;
  }
  int16_t level[16];
  from_scan(mb.chroma_ac[c][blk], level);
  int32_t d[16];
  dequant4x4(level, d, qpc, 1);
  d[0] = dc;
  return recon4x4(d, pred + 8 * y + x, 8, px.src[1 + c] + y * px.src_stride[1 + c] + x, px.src_stride[1 + c],
                  px.rec[1 + c] + y * px.rec_stride[1 + c] + x, px.rec_stride[1 + c]);
}

// Both chroma components against `pred` (stride 8, [0] Cb, [1] Cr); sets chroma levels,
// cbp bits 4..5 and total_coeff_chroma. Returns the SSD.
GVC_HD int64_t code_chroma(const MbPixels& px, const uint8_t pred[2][64], int qpc, bool intra, Macroblock& mb) {
  int dc_nz = 0, ac_nz = 0;
  for (int c = 0; c < 2; c++) {
    int32_t dc[4];
    int score = 0;
    for (int blk = 0; blk < 4; blk++) {  // AC levels block by block, as code_luma16x16
      dc[blk] = chroma_block_levels(px, pred[c], qpc, intra, c, blk, mb);
      score += intra ? kDecimateKeep : decimate_score(mb.chroma_ac[c][blk], 1);
    }
    for (int blk = 0; blk < 4; blk++) {
      if (score < kDecimateChromaAc) drop_chroma_ac(c, blk, mb);
      ac_nz += mb.total_coeff_chroma[c][blk];
    }
    dc_nz += chroma_dc_levels(dc, qpc, intra, c, mb);
  }
  const int cbp_chroma = ac_nz ? 2 : (dc_nz ? 1 : 0);
  mb.cbp = uint8_t((mb.cbp & 15) | (cbp_chroma << 4));
  int64_t ssd = 0;
  for (int c = 0; c < 2; c++) {
    int32_t dcc[4];
    dequant_dc_chroma(mb.chroma_dc[c], dcc, qpc);
    for (int blk = 0; blk < 4; blk++) ssd += chroma_block_recon(px, pred[c], qpc, c, blk, cbp_chroma, dcc[blk], mb);
  }
  return ssd;
}

// Copies the source into mb.pcm and the reconstruction (I_PCM).
GVC_HD void code_pcm(const MbPixels& px, Macroblock& mb) {
  uint8_t* out = mb.pcm;
  for (int p = 0; p < 3; p++) {
    int n = p ? 8 : 16;
    for (int y = 0; y < n; y++) {
      for (int x = 0; x < n; x++) {
        uint8_t v = px.src[p][y * px.src_stride[p] + x];
        *out++ = v;
        px.rec[p][y * px.rec_stride[p] + x] = v;
      }
    }
  }
  mb.cbp = 0x2f;
  for (int i = 0; i < 16; i++) mb.total_coeff_luma[i] = 16;
  for (int i = 0; i < 8; i++) mb.total_coeff_chroma[i >> 2][i & 3] = 16;
}

}  // namespace gvc::h264
