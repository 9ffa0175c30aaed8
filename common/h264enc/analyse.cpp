// analyse.cpp: macroblock mode decision (intra modes, P_L0_16x16 motion, P_Skip) and coding
#include "common/h264enc/analyse.h"

#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/bitstream/bitwriter.h"
#include "common/h264enc/mc.h"
#include "common/h264enc/predict.h"
#include "common/h264enc/tables.h"
#include "common/h264enc/transform.h"

namespace gvc::h264 {

int lambda_for_qp(int qp) {
  int l = int(std::lround(std::sqrt(0.85 * std::pow(2.0, (qp - 12) / 3.0))));
  return l < 1 ? 1 : l;
}

// SATD of an n x n block (n = 4, 8, 16) of src against pred (stride n).
static int satd(const uint8_t* src, int ss, const uint8_t* pred, int n) {
  int sum = 0;
  for (int by = 0; by < n; by += 4) {
    for (int bx = 0; bx < n; bx += 4) {
      int16_t d[16];
      for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) d[4 * y + x] = int16_t(src[(by + y) * ss + bx + x] - pred[(by + y) * n + bx + x]);
      sum += satd4x4(d);
    }
  }
  return sum;
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

// --- inter ----------------------------------------------------------------------------------

struct MvNeighbour {
  bool available;
  int ref_idx;  // -1: intra or unavailable
  int16_t mv[2];
};

static MvNeighbour mv_neighbour(const MbMap& map, int mx, int my) {
  const Macroblock* m = map.at(mx, my);
  if (!m) return {false, -1, {0, 0}};
  if (is_intra(m->type)) return {true, -1, {0, 0}};
  return {true, 0, {m->mv[0], m->mv[1]}};
}

static int16_t median3(int a, int b, int c) {
  int mx = a > b ? a : b, mn = a < b ? a : b;
  return int16_t(c > mx ? mx : (c < mn ? mn : c));
}

void predict_mv_16x16(const MbMap& map, int mx, int my, int16_t mvp[2]) {
  MvNeighbour A = mv_neighbour(map, mx - 1, my);
  MvNeighbour B = mv_neighbour(map, mx, my - 1);
  MvNeighbour C = mv_neighbour(map, mx + 1, my - 1);
  if (!C.available) C = mv_neighbour(map, mx - 1, my - 1);  // 8.4.1.3.2: D replaces C
  if (!B.available && !C.available && A.available) B = C = A;  // 8.4.1.3.1
  int matches = (A.ref_idx == 0) + (B.ref_idx == 0) + (C.ref_idx == 0);
  const MvNeighbour* only = A.ref_idx == 0 ? &A : B.ref_idx == 0 ? &B : &C;
  if (matches == 1) {
    mvp[0] = only->mv[0];
    mvp[1] = only->mv[1];
  } else {
    mvp[0] = median3(A.mv[0], B.mv[0], C.mv[0]);
    mvp[1] = median3(A.mv[1], B.mv[1], C.mv[1]);
  }
}

void predict_mv_skip(const MbMap& map, int mx, int my, int16_t mv[2]) {
  MvNeighbour A = mv_neighbour(map, mx - 1, my);
  MvNeighbour B = mv_neighbour(map, mx, my - 1);
  if (!A.available || !B.available || (A.ref_idx == 0 && A.mv[0] == 0 && A.mv[1] == 0) ||
      (B.ref_idx == 0 && B.mv[0] == 0 && B.mv[1] == 0)) {
    mv[0] = mv[1] = 0;
    return;
  }
  predict_mv_16x16(map, mx, my, mv);
}

static int mv_bits(int mvx, int mvy, const int16_t mvp[2]) {
  return se_size(mvx - mvp[0]) + se_size(mvy - mvp[1]);
}

// Integer full search around the rounded predictor, then half- and quarter-pel refinement
// (8 neighbours each) by SATD. Cost: SAD (integer) or SATD (sub-pel) + lambda * mvd bits.
// Returns the SATD-based cost of the chosen vector.
static int motion_search(const MbAnalysis& a, const MbPixels& px, const int16_t mvp[2], int16_t mv[2]) {
  const PlaneView ref = a.ref->view(0);
  const int x0 = 16 * a.mx, y0 = 16 * a.my, range = a.params->analyse.search_range;
  const int cx = (mvp[0] + 2) >> 2, cy = (mvp[1] + 2) >> 2;
  int best = INT_MAX, bx = 0, by = 0;
  auto sad_at = [&](int dx, int dy, int limit) {
    int sad = 0;
    bool inside = x0 + dx >= 0 && y0 + dy >= 0 && x0 + dx + 16 <= ref.width && y0 + dy + 16 <= ref.height;
    for (int y = 0; y < 16 && sad < limit; y++) {
      const uint8_t* s = px.src[0] + y * px.src_stride[0];
      if (inside) {
        const uint8_t* r = ref.data + (y0 + dy + y) * ref.stride + x0 + dx;
        for (int x = 0; x < 16; x++) sad += std::abs(s[x] - r[x]);
      } else {
        for (int x = 0; x < 16; x++) sad += std::abs(s[x] - sample_clamped(ref, x0 + dx + x, y0 + dy + y));
      }
    }
    return sad;
  };
  // Vectors stay within the level's MaxVmvR vertically and +-2048 samples horizontally (the
  // quarter-pel refinement adds at most 3/4 sample, hence the one-sample margin).
  const int max_y = a.max_mv_y / 4 - 1, max_x = 2047;
  auto try_int = [&](int dx, int dy) {
    if (dy < -max_y || dy > max_y || dx < -max_x || dx > max_x) return;
    int bits_cost = a.lambda * mv_bits(4 * dx, 4 * dy, mvp);
    if (bits_cost >= best) return;
    int cost = sad_at(dx, dy, best - bits_cost) + bits_cost;
    if (cost < best) {
      best = cost;
      bx = dx;
      by = dy;
    }
  };
  try_int(0, 0);
  try_int(cx, cy);
  for (int dy = cy - range; dy < cy + range; dy++)
    for (int dx = cx - range; dx < cx + range; dx++) try_int(dx, dy);

  int16_t cur[2] = {int16_t(4 * bx), int16_t(4 * by)};
  uint8_t pred[256];
  mc_luma16x16(ref, x0, y0, cur, pred);
  int best_cost = satd(px.src[0], px.src_stride[0], pred, 16) + a.lambda * mv_bits(cur[0], cur[1], mvp);
  if (a.params->analyse.subpel) {
    for (int step = 2; step >= 1; step >>= 1) {
      int16_t center[2] = {cur[0], cur[1]};
      for (int k = 0; k < 9; k++) {
        if (k == 4) continue;
        int16_t cand[2] = {int16_t(center[0] + step * (k % 3 - 1)), int16_t(center[1] + step * (k / 3 - 1))};
        mc_luma16x16(ref, x0, y0, cand, pred);
        int cost = satd(px.src[0], px.src_stride[0], pred, 16) + a.lambda * mv_bits(cand[0], cand[1], mvp);
        if (cost < best_cost) {
          best_cost = cost;
          cur[0] = cand[0];
          cur[1] = cand[1];
        }
      }
    }
  }
  mv[0] = cur[0];
  mv[1] = cur[1];
  return best_cost;
}

static void code_inter(const MbAnalysis& a, const MbPixels& px, const int16_t mv[2], const int16_t mvp[2],
                       Macroblock& mb) {
  mb.type = MbType::PL0_16x16;
  mb.mv[0] = mv[0];
  mb.mv[1] = mv[1];
  mb.mvp[0] = mvp[0];
  mb.mvp[1] = mvp[1];
  mb.cbp = 0;
  uint8_t pred[256], cpred[2][64];
  mc_luma16x16(a.ref->view(0), 16 * a.mx, 16 * a.my, mv, pred);
  code_luma16x16(px, pred, a.qp, false, mb);
  for (int c = 0; c < 2; c++) mc_chroma8x8(a.ref->view(1 + c), 8 * a.mx, 8 * a.my, mv, cpred[c]);
  code_chroma(px, cpred, a.qpc, false, mb);
}

void analyse_and_code_mb(const MbAnalysis& a, Macroblock& mb) {
  MbPixels px = mb_pixels(a);
  mb = Macroblock();
  mb.slice_id = uint16_t(a.map.slice < 0 ? 0 : a.map.slice);
  int i16_mode = kI16Dc;
  int i16_cost = choose_i16(a, px, &i16_mode);
  int inter_cost = INT_MAX;
  int16_t mv[2] = {0, 0}, mvp[2] = {0, 0};
  if (a.ref) {
    predict_mv_16x16(a.map, a.mx, a.my, mvp);
    inter_cost = motion_search(a, px, mvp, mv) + a.lambda * 1;  // mb_type P_L0_16x16: 1 bit
    i16_cost += a.lambda * 6;  // intra mb_type codes are 5+ longer in P slices
  }
  int i4_cost = INT_MAX;
  if (a.params->analyse.intra4x4) {
    // An Intra_4x4 macroblock spends more on its 16 modes; the estimate above counts them.
    i4_cost = choose_and_code_i4(a, px, mb) + a.lambda * (a.ref ? 6 : 0);
  }
  if (inter_cost < i16_cost && inter_cost < i4_cost) {
    code_inter(a, px, mv, mvp, mb);
    int16_t skip_mv[2];
    predict_mv_skip(a.map, a.mx, a.my, skip_mv);
    if (mb.cbp == 0 && mv[0] == skip_mv[0] && mv[1] == skip_mv[1]) mb.type = MbType::PSkip;
    return;
  }
  if (i16_cost <= i4_cost) {
    code_i16(a, px, i16_mode, mb);
  }
  code_intra_chroma(a, px, mb);
}

}  // namespace gvc::h264
