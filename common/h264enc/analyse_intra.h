// analyse_intra.h: intra mode choice of a macroblock (Intra_16x16, Intra_4x4, chroma) on the source picture, for the CPU and CUDA
#pragma once

#include <climits>
#include <cstdint>

#include "common/h264enc/analyse.h"
#include "common/h264enc/cavlc_bits.h"
#include "common/h264enc/predict.h"
#include "common/h264enc/recon_mb.h"

namespace gvc::h264 {

// Intra_16x16: the mode of least SATD + lambda * bits(mb_type). Returns the cost.
GVC_HD int choose_i16(const MbAnalysis& a, const MbPixels& px, int* best_mode) {
  IntraEdge e;
  load_edge(a.src.plane[0], a.src.stride[0], 16 * a.mx, 16 * a.my, 16, mb_available(a, 0, -1),
            mb_available(a, -1, 0), mb_available(a, -1, -1), false, e);
  int best = INT_MAX;
  for (int mode = 0; mode < 4; mode++) {
    if (!i16_mode_available(mode, e)) continue;
    if (a.intra_cand && !(a.intra_cand->i16x16 >> mode & 1)) continue;
    uint8_t pred[256];
    predict_16x16(mode, e, pred);
    // By rows of 4x4 blocks, stopping once the mode cannot be the cheapest.
    int cost = a.lambda * ue_bits(uint32_t(1 + mode));
    for (int row = 0; row < 4 && cost < best; row++)
      cost += satd_block(px.src[0] + 4 * row * px.src_stride[0], px.src_stride[0], pred + 64 * row, 16, 16, 4);
    if (cost < best) {
      best = cost;
      *best_mode = mode;
    }
  }
  return best;
}

// The cost of an Intra_4x4 macroblock whose 16 blocks cost `blocks_cost` (SATD + mode bits):
// in P slices it spends more on mb_type and its 16 modes, and, like Intra_16x16, its costs
// measured on the source are too low (a quarter more).
GVC_HD int i4_cost(int blocks_cost, int lambda, bool p_slice) {
  if (!p_slice) return blocks_cost;
  const int c = blocks_cost + lambda * 6;
  return c + c / 4;
}

// The cost of an Intra_16x16 macroblock whose mode costs `mode_cost` (choose_i16): in P slices
// its mb_type codes are 5+ bits longer, and its costs measured against the source, not the
// coded neighbours the decoder predicts from, come out too low; a quarter more brought the
// quality guard's clip from +17.3 to +15.6 % BD-rate against x264 veryfast.
GVC_HD int i16_mb_cost(int mode_cost, int lambda, bool p_slice) {
  if (!p_slice) return mode_cost;
  const int c = mode_cost + lambda * 6;
  return c + c / 4;
}

// The samples Intra_4x4's search codes its blocks into: rows -1..15, columns -1..23 of the
// macroblock (the row above reaches 8 samples past it for the above-right block).
constexpr int kI4WindowStride = 25;
constexpr int kI4WindowBytes = 17 * kI4WindowStride;

// Intra_4x4: per block in decoding order, the mode of least SATD + lambda * mode bits. The
// macroblock's own blocks are coded and reconstructed as they are chosen, in `window`
// (kI4WindowBytes) whose border (the neighbouring macroblocks' samples) comes from the source,
// so each block predicts from its coded neighbours as the decoder will. `mb` is the macroblock
// at (a.mx, a.my) or a copy of it outside a.map (the neighbours' modes come from the map). Sets
// mb's type and modes (and levels, which recon_mb.h codes again); returns the summed cost, or
// INT_MAX as soon as the cost so far, with the macroblock's fixed extra (i4_cost), rules
// Intra_4x4 out: reaches `i16_cost` or passes `inter_cost` (the costs only grow, so the
// decision is the one the whole search would give).
GVC_HD int choose_i4(const MbAnalysis& a, const MbPixels& px, Macroblock& mb, int i16_cost, int inter_cost,
                     uint8_t* window) {
  mb.type = MbType::I4x4;  // predict_i4_mode reads the modes chosen so far
  constexpr int kStride = kI4WindowStride;
  const int x0 = 16 * a.mx - 1, y0 = 16 * a.my - 1;
  for (int y = 0; y < 17; y++) {
    for (int x = 0; x < kStride; x++) {
      const int sx = x0 + x, sy = y0 + y;
      const bool inside = sx >= 0 && sy >= 0 && sx < a.src.width[0] && sy < a.src.height[0];
      window[y * kStride + x] = inside ? *a.src.at(0, sx, sy) : 128;
    }
  }
  MbPixels local = px;
  local.rec[0] = window + kStride + 1;
  local.rec_stride[0] = kStride;
  int total = 0;
  for (int blk = 0; blk < 16; blk++) {
    const int bx = GVC_T(kBlkX)[blk], by = GVC_T(kBlkY)[blk];
    const I4Neighbours n = i4_neighbours(a.map, a.mx, a.my, bx, by);
    IntraEdge e;
    load_edge(window, kStride, 1 + 4 * bx, 1 + 4 * by, 4, n.top, n.left, n.top_left, n.top_right, e);
    const int pred_mode = predict_i4_mode(a.map, mb, a.mx, a.my, blk);
    int best = INT_MAX, best_mode = kI4Dc;
    uint8_t best_pred[16];
    for (int mode = 0; mode < 9; mode++) {
      if (!i4_mode_available(mode, e)) continue;
      if (a.intra_cand && !(a.intra_cand->i4x4[blk] >> mode & 1)) continue;
      uint8_t pred[16];
      predict_4x4(mode, e, pred);
      const int cost = satd_block(px.src[0] + 4 * by * px.src_stride[0] + 4 * bx, px.src_stride[0], pred, 4, 4, 4) +
                       a.lambda * i4_mode_bits(mode, pred_mode);
      if (cost < best) {
        best = cost;
        best_mode = mode;
        for (int i = 0; i < 16; i++) best_pred[i] = pred[i];
      }
    }
    mb.i4_mode[blk] = uint8_t(best_mode);
    total += best;
    const int bound = i4_cost(total, a.lambda, a.num_refs > 0);
    if (bound >= i16_cost || bound > inter_cost) return INT_MAX;
    code_luma4x4(local, blk, best_pred, a.qp, mb);  // levels are coded again by recon_mb.h
  }
  return total;
}

// intra_chroma_pred_mode of least SATD (both components) + lambda * mode bits, on the source.
GVC_HD int choose_chroma(const MbAnalysis& a, const MbPixels& px) {
  IntraEdge e[2];
  for (int c = 0; c < 2; c++)
    load_edge(a.src.plane[1 + c], a.src.stride[1 + c], 8 * a.mx, 8 * a.my, 8, mb_available(a, 0, -1),
              mb_available(a, -1, 0), mb_available(a, -1, -1), false, e[c]);
  int best = INT_MAX, best_mode = kChromaDc;
  for (int mode = 0; mode < 4; mode++) {
    if (!chroma_mode_available(mode, e[0])) continue;
    if (a.intra_cand && !(a.intra_cand->chroma >> mode & 1)) continue;
    int cost = a.lambda * ue_bits(uint32_t(mode));
    for (int c = 0; c < 2 && cost < best; c++) {
      uint8_t pred[64];
      predict_chroma8x8(mode, e[c], pred);
      cost += satd_block(px.src[1 + c], px.src_stride[1 + c], pred, 8, 8, 8);
    }
    if (cost < best) {
      best = cost;
      best_mode = mode;
    }
  }
  return best_mode;
}

}  // namespace gvc::h264
