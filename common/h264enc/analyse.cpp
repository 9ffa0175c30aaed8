// analyse.cpp: macroblock mode decision (intra modes against the inter choice), before reconstruction
#include "common/h264enc/analyse.h"

#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/bitstream/bitwriter.h"
#include "common/h264enc/analyse_inter.h"
#include "common/h264enc/predict.h"
#include "common/h264enc/recon_mb.h"
#include "common/h264enc/tables.h"

namespace gvc::h264 {

int lambda_for_qp(int qp) {
  int l = int(std::lround(std::sqrt(0.85 * std::pow(2.0, (qp - 12) / 3.0))));
  return l < 1 ? 1 : l;
}

int satd_block(const uint8_t* src, int ss, const uint8_t* pred, int ps, int w, int h) {
  int sum = 0;
  for (int by = 0; by < h; by += 4) {
    for (int bx = 0; bx < w; bx += 4) {
      int16_t d[16];
      for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) d[4 * y + x] = int16_t(src[(by + y) * ss + bx + x] - pred[(by + y) * ps + bx + x]);
      sum += satd4x4(d);
    }
  }
  return sum;
}

// SATD of an n x n block (n = 4, 8, 16) of src against pred (stride n).
static int satd(const uint8_t* src, int ss, const uint8_t* pred, int n) {
  return satd_block(src, ss, pred, n, n, n);
}

// Whether the macroblock at (mx + dx, my + dy) is available for prediction (6.4.8: inside the
// picture, already coded, in the same slice).
static bool nb(const MbAnalysis& a, int dx, int dy) { return a.map.at(a.mx + dx, a.my + dy) != nullptr; }

static MbPixels mb_pixels(const MbAnalysis& a) {
  MbPixels px;
  for (int p = 0; p < 3; p++) {
    int n = p ? 8 : 16;
    px.src[p] = a.src->at(p, n * a.mx, n * a.my);
    px.src_stride[p] = a.src->stride[p];
    px.rec[p] = nullptr;  // nothing is reconstructed while deciding
    px.rec_stride[p] = 0;
  }
  return px;
}

// Intra_16x16: the mode of least SATD + lambda * bits(mb_type). Returns the cost.
static int choose_i16(const MbAnalysis& a, const MbPixels& px, int* best_mode) {
  IntraEdge e;
  load_edge(a.src->plane[0].data(), a.src->stride[0], 16 * a.mx, 16 * a.my, 16, nb(a, 0, -1),
            nb(a, -1, 0), nb(a, -1, -1), false, e);
  int best = INT_MAX;
  for (int mode = 0; mode < 4; mode++) {
    if (!i16_mode_available(mode, e)) continue;
    if (a.intra_cand && !(a.intra_cand->i16x16 >> mode & 1)) continue;
    uint8_t pred[256];
    predict_16x16(mode, e, pred);
    int cost = satd(px.src[0], px.src_stride[0], pred, 16) + a.lambda * ue_size(uint32_t(1 + mode));
    if (cost < best) {
      best = cost;
      *best_mode = mode;
    }
  }
  return best;
}

// Intra_4x4: per block in decoding order, the mode of least SATD + lambda * mode bits. The
// macroblock's own blocks are coded and reconstructed as they are chosen, in a scratch copy
// whose border (the neighbouring macroblocks' samples) comes from the source, so each block
// predicts from its coded neighbours as the decoder will. Sets mb's type and modes; returns
// the summed cost.
static int choose_i4(const MbAnalysis& a, const MbPixels& px, Macroblock& mb) {
  mb.type = MbType::I4x4;  // predict_i4_mode reads the modes chosen so far
  // scratch: rows -1..15, columns -1..23 of the macroblock (the row above reaches 8 samples
  // past it for the above-right block); the source fills what lies outside the macroblock.
  constexpr int kStride = 25;
  uint8_t scratch[17 * kStride];
  const int x0 = 16 * a.mx - 1, y0 = 16 * a.my - 1;
  for (int y = 0; y < 17; y++) {
    for (int x = 0; x < kStride; x++) {
      const int sx = x0 + x, sy = y0 + y;
      const bool inside = sx >= 0 && sy >= 0 && sx < a.src->width(0) && sy < a.src->height(0);
      scratch[y * kStride + x] = inside ? *a.src->at(0, sx, sy) : 128;
    }
  }
  MbPixels local = px;
  local.rec[0] = scratch + kStride + 1;
  local.rec_stride[0] = kStride;
  int total = 0;
  for (int blk = 0; blk < 16; blk++) {
    int bx = kBlkX[blk], by = kBlkY[blk];
    const I4Neighbours n = i4_neighbours(a.map, a.mx, a.my, bx, by);
    IntraEdge e;
    load_edge(scratch, kStride, 1 + 4 * bx, 1 + 4 * by, 4, n.top, n.left, n.top_left, n.top_right, e);
    int pred_mode = predict_i4_mode(a.map, a.mx, a.my, blk);
    int best = INT_MAX, best_mode = kI4Dc;
    uint8_t best_pred[16];
    for (int mode = 0; mode < 9; mode++) {
      if (!i4_mode_available(mode, e)) continue;
      if (a.intra_cand && !(a.intra_cand->i4x4[blk] >> mode & 1)) continue;
      uint8_t pred[16];
      predict_4x4(mode, e, pred);
      int cost = satd(px.src[0] + 4 * by * px.src_stride[0] + 4 * bx, px.src_stride[0], pred, 4) +
                 a.lambda * i4_mode_bits(mode, pred_mode);
      if (cost < best) {
        best = cost;
        best_mode = mode;
        std::memcpy(best_pred, pred, 16);
      }
    }
    mb.i4_mode[blk] = uint8_t(best_mode);
    code_luma4x4(local, blk, best_pred, a.qp, mb);  // levels are coded again by recon_mb.h
    total += best;
  }
  return total;
}

// intra_chroma_pred_mode of least SATD (both components) + lambda * mode bits, on the source.
static int choose_chroma(const MbAnalysis& a, const MbPixels& px) {
  IntraEdge e[2];
  for (int c = 0; c < 2; c++)
    load_edge(a.src->plane[1 + c].data(), a.src->stride[1 + c], 8 * a.mx, 8 * a.my, 8, nb(a, 0, -1),
              nb(a, -1, 0), nb(a, -1, -1), false, e[c]);
  int best = INT_MAX, best_mode = kChromaDc;
  for (int mode = 0; mode < 4; mode++) {
    if (!chroma_mode_available(mode, e[0])) continue;
    if (a.intra_cand && !(a.intra_cand->chroma >> mode & 1)) continue;
    int cost = a.lambda * ue_size(uint32_t(mode));
    for (int c = 0; c < 2; c++) {
      uint8_t pred[64];
      predict_chroma8x8(mode, e[c], pred);
      cost += satd(px.src[1 + c], px.src_stride[1 + c], pred, 8);
    }
    if (cost < best) {
      best = cost;
      best_mode = mode;
    }
  }
  return best_mode;
}

void decide_mb(const MbAnalysis& a, Macroblock& mb) {
  MbPixels px = mb_pixels(a);
  mb = Macroblock();
  mb.slice_id = uint16_t(a.map.slice < 0 ? 0 : a.map.slice);
  int i16_mode = kI16Dc;
  int i16_cost = choose_i16(a, px, &i16_mode);
  InterChoice inter;
  inter.cost = INT_MAX;
  if (a.num_refs) {
    choose_inter(a, px, inter);
    i16_cost += a.lambda * 6;  // intra mb_type codes are 5+ longer in P slices
    // Intra costs are measured against the source, not the coded neighbours the decoder
    // predicts from, and come out too low; a quarter more brought the quality guard's clip
    // from +17.3 to +15.6 % BD-rate against x264 veryfast.
    i16_cost += i16_cost / 4;
  }
  int i4_cost = INT_MAX;
  if (a.params->analyse.intra4x4) {
    // An Intra_4x4 macroblock spends more on its 16 modes; the estimate above counts them.
    i4_cost = choose_i4(a, px, mb) + a.lambda * (a.num_refs ? 6 : 0);
    if (a.num_refs) i4_cost += i4_cost / 4;  // the source's optimism, as for Intra_16x16
  }
  if (inter.cost < i16_cost && inter.cost < i4_cost) {
    decide_inter(a, inter, mb);
    return;
  }
  if (i16_cost <= i4_cost) {
    mb.type = MbType::I16x16;
    mb.i16_mode = uint8_t(i16_mode);
    for (auto& m : mb.i4_mode) m = 0;
  }
  mb.chroma_mode = uint8_t(choose_chroma(a, px));
}

}  // namespace gvc::h264
