// analyse.cpp: macroblock mode decision (intra modes against the inter choice) and coding
#include "common/h264enc/analyse.h"

#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/bitstream/bitwriter.h"
#include "common/h264enc/analyse_inter.h"
#include "common/h264enc/predict.h"
#include "common/h264enc/tables.h"
#include "common/h264enc/transform.h"

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
    px.rec[p] = a.rec->at(p, n * a.mx, n * a.my);
    px.rec_stride[p] = a.rec->stride[p];
  }
  return px;
}

// Intra_16x16: the mode of least SATD + lambda * bits(mb_type). Returns the cost.
static int choose_i16(const MbAnalysis& a, const MbPixels& px, int* best_mode) {
  IntraEdge e;
  load_edge(a.rec->plane[0].data(), a.rec->stride[0], 16 * a.mx, 16 * a.my, 16, nb(a, 0, -1),
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

static void code_i16(const MbAnalysis& a, const MbPixels& px, int mode, Macroblock& mb) {
  IntraEdge e;
  load_edge(a.rec->plane[0].data(), a.rec->stride[0], 16 * a.mx, 16 * a.my, 16, nb(a, 0, -1),
            nb(a, -1, 0), nb(a, -1, -1), false, e);
  uint8_t pred[256];
  predict_16x16(mode, e, pred);
  mb.type = MbType::I16x16;
  mb.i16_mode = uint8_t(mode);
  code_luma16x16(px, pred, a.qp, true, mb);
}

// Whether the 4x4 block at (bx, by) of the macroblock has its above-right samples decoded.
static bool i4_top_right_available(const MbAnalysis& a, int bx, int by) {
  if (by == 0) {
    if (bx < 3) return nb(a, 0, -1);
    return nb(a, 1, -1);  // in the macroblock above-right
  }
  if (bx == 3) return false;  // in the macroblock to the right: not yet decoded
  return kBlkIdx[by - 1][bx + 1] < kBlkIdx[by][bx];
}

// Intra_4x4: per block in decoding order, the mode of least SATD + lambda * mode bits, coded
// and reconstructed at once (later blocks predict from it). Returns the summed cost.
static int choose_and_code_i4(const MbAnalysis& a, const MbPixels& px, Macroblock& mb) {
  mb.type = MbType::I4x4;
  mb.cbp &= ~15;
  int total = 0;
  for (int blk = 0; blk < 16; blk++) {
    int bx = kBlkX[blk], by = kBlkY[blk];
    int x = 16 * a.mx + 4 * bx, y = 16 * a.my + 4 * by;
    IntraEdge e;
    bool top = by > 0 || nb(a, 0, -1), left = bx > 0 || nb(a, -1, 0);
    bool top_left = (bx > 0 && by > 0) || (bx > 0 ? nb(a, 0, -1) : by > 0 ? nb(a, -1, 0) : nb(a, -1, -1));
    load_edge(a.rec->plane[0].data(), a.rec->stride[0], x, y, 4, top, left, top_left,
              i4_top_right_available(a, bx, by), e);
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
    code_luma4x4(px, blk, best_pred, a.qp, mb);
    if (mb.total_coeff_luma[blk]) mb.cbp |= 1 << (blk >> 2);
    total += best;
  }
  return total;
}

static void code_intra_chroma(const MbAnalysis& a, const MbPixels& px, Macroblock& mb) {
  IntraEdge e[2];
  for (int c = 0; c < 2; c++)
    load_edge(a.rec->plane[1 + c].data(), a.rec->stride[1 + c], 8 * a.mx, 8 * a.my, 8, nb(a, 0, -1),
              nb(a, -1, 0), nb(a, -1, -1), false, e[c]);
  int best = INT_MAX, best_mode = kChromaDc;
  uint8_t pred[2][64], best_pred[2][64];
  for (int mode = 0; mode < 4; mode++) {
    if (!chroma_mode_available(mode, e[0])) continue;
    if (a.intra_cand && !(a.intra_cand->chroma >> mode & 1)) continue;
    int cost = a.lambda * ue_size(uint32_t(mode));
    for (int c = 0; c < 2; c++) {
      predict_chroma8x8(mode, e[c], pred[c]);
      cost += satd(px.src[1 + c], px.src_stride[1 + c], pred[c], 8);
    }
    if (cost < best) {
      best = cost;
      best_mode = mode;
      std::memcpy(best_pred, pred, sizeof(pred));
    }
  }
  mb.chroma_mode = uint8_t(best_mode);
  code_chroma(px, best_pred, a.qpc, true, mb);
}

void analyse_and_code_mb(const MbAnalysis& a, Macroblock& mb) {
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
  }
  int i4_cost = INT_MAX;
  if (a.params->analyse.intra4x4) {
    // An Intra_4x4 macroblock spends more on its 16 modes; the estimate above counts them.
    i4_cost = choose_and_code_i4(a, px, mb) + a.lambda * (a.num_refs ? 6 : 0);
  }
  if (inter.cost < i16_cost && inter.cost < i4_cost) {
    code_inter(a, px, inter, mb);
    return;
  }
  if (i16_cost <= i4_cost) {
    code_i16(a, px, i16_mode, mb);
  }
  code_intra_chroma(a, px, mb);
}

}  // namespace gvc::h264
