// analyse_inter.h: P macroblock decision: partitions, sub-partitions, references and P_Skip, for the CPU and CUDA
//
// The ME core (gvc::MotionSearch) has already searched every partition of the macroblock
// against every reference with an approximate predictor; here its vectors are candidates,
// re-costed with the exact predictor mvpL0 of 8.4.1.3 (which depends on the partitions decided
// before, in decoding order), the larger partitions re-refined by
// quarter-pel steps, and J = SATD + lambda * bits (analyse.h) picks among P_Skip, P_L0_16x16,
// P_L0_L0_16x8, P_L0_L0_8x16 and P_8x8 with the best sub_mb_type and refIdxL0 of each 8x8.
#pragma once

#include <climits>
#include <cstdint>

#include "common/h264enc/analyse.h"
#include "common/h264enc/cavlc_bits.h"
#include "common/h264enc/inter_preselect.h"
#include "common/h264enc/satd_cache.h"
#include "common/h264enc/mvpred.h"

namespace gvc::h264 {

struct InterChoice {
  MbType type = MbType::PL0_16x16;  // PSkip, PL0_16x16, PL0_16x8, PL0_8x16 or P8x8
  uint8_t sub_mb_type[4] = {};      // P8x8
  MotionState motion;               // refIdxL0 and mvL0 of every block
  int cost = 0;                     // J of the choice (mvd_l0 comes from finish_mb_syntax)
};

namespace analyse_inter_detail {

// Bits of ref_idx_l0 te(v) with num_ref_idx_l0_active = n (9.1.2).
GVC_HD int ref_bits(int ref, int n) { return n == 1 ? 0 : n == 2 ? 1 : ue_bits(uint32_t(ref)); }

// se_bits(v) (9.1.1: 2 * floor(log2(codeNum + 1)) + 1) with a count of leading zeros in place of
// ue_bits' loop; |v| < 2^30.
GVC_HD int se_bits_fast(int v) {
  const uint32_t code_num_1 = v > 0 ? uint32_t(2 * v) : uint32_t(-2 * v) + 1;  // codeNum + 1 >= 1
#if defined(__CUDA_ARCH__)
  return 2 * (31 - __clz(code_num_1)) + 1;
#else
  return 2 * (31 - __builtin_clz(code_num_1)) + 1;
#endif
}

GVC_HD int mvd_bits(int mvx, int mvy, const int16_t mvp[2]) {
  return se_bits_fast(mvx - mvp[0]) + se_bits_fast(mvy - mvp[1]);
}

// One partition's search: the best (refIdxL0, mvL0) with its predictor and J.
struct PartResult {
  int ref = 0;
  int16_t mv[2] = {0, 0};
  int16_t mvp[2] = {0, 0};
  int cost = INT_MAX;  // SATD + lambda * (mvd bits + ref_idx bits)
};

class PartitionSearch {
 public:
  // `sel`: the macroblock's pre-selection (kept by the caller while the search is used), or
  // null without one.
  GVC_HD PartitionSearch(const MbAnalysis& a, const MbPixels& px, const Preselection* sel)
      : a_(a), px_(px), around_(&a.map, a.mx, a.my, nullptr), sel_(sel) {}

  // Searches the partition at (x, y), w x h (4x4 units) over references [ref_lo, ref_hi]
  // with `state` holding the partitions decided before it. `count_ref` adds the ref_idx
  // bits (not for sub-macroblock partitions, whose 8x8 pays them once).
  GVC_HD PartResult search(const MotionState& state, int x, int y, int w, int h, int ref_lo, int ref_hi,
                    bool count_ref) const {
    PartResult best;
    const MvContext ctx(around_, &state);
    const int idx = me_partition_index(x, y, w, h);
    for (int r = ref_lo; r <= ref_hi; r++) {
      int16_t mvp[2];
      predict_mv(ctx, x, y, w, h, r, mvp);
      const MvCost& me = a_.me[r][a_.my * a_.map.mb_width + a_.mx].part[idx];
      const MvCost& me16 = a_.me[r][a_.my * a_.map.mb_width + a_.mx].part[kPart16x16];
      const int bias = count_ref ? a_.lambda * ref_bits(r, a_.num_refs) : 0;
      SatdLookup lookup;
      if (a_.satd) lookup = satd_lookup(a_, slot_of(idx), r, idx);
      const SatdLookup* lk = a_.satd ? &lookup : nullptr;
      // Candidates: the ME core's vector for this partition, the predictor (mvd 0), and the
      // ME core's 16x16 vector (the whole macroblock often moves together).
      const int16_t cand[3][2] = {{me.mvx, me.mvy}, {mvp[0], mvp[1]}, {me16.mvx, me16.mvy}};
      PartResult rb;
      for (const auto& c : cand) {
        int cost = cost_at(x, y, w, h, r, c, mvp, rb.cost, lk);
        if (cost < rb.cost) rb = {r, {c[0], c[1]}, {mvp[0], mvp[1]}, cost};
      }
      if (rb.cost == INT_MAX) continue;
      if (a_.flags.refine && w * h >= 4) refine(x, y, w, h, rb, lk);
      rb.cost += bias;
      if (rb.cost < best.cost) best = rb;
    }
    return best;
  }

  // The macroblock's neighbours (for its P_Skip vector).
  GVC_HD const MvContext& around() const { return around_; }

  // J of vector mv on reference r for the partition, without ref_idx bits; INT_MAX when mv
  // is out of the level's range. The prediction and its SATD go by rows of 4x4 blocks, and
  // once the sum reaches `bound` the rest is skipped and a cost of at least `bound` returned:
  // callers that keep a candidate only below a bound get the same answer sooner.
  GVC_HD int cost_of(int x, int y, int w, int h, int r, const int16_t mv[2], const int16_t mvp[2],
                     int bound = INT_MAX) const {
    if (!a_.satd) return cost_at(x, y, w, h, r, mv, mvp, bound, nullptr);
    const int idx = me_partition_index(x, y, w, h);
    const SatdLookup lk = satd_lookup(a_, slot_of(idx), r, idx);
    return cost_at(x, y, w, h, r, mv, mvp, bound, &lk);
  }

 private:
  // cost_of with the partition's cached SATDs `lk` found (null: no cache).
  GVC_HD int cost_at(int x, int y, int w, int h, int r, const int16_t mv[2], const int16_t mvp[2], int bound,
                     const SatdLookup* lk) const {
    if (mv[1] < -a_.max_mv_y || mv[1] > a_.max_mv_y - 1 || mv[0] < -8192 || mv[0] > 8191) return INT_MAX;
    int cost = a_.lambda * mvd_bits(mv[0], mv[1], mvp);
    if (lk) {
      const int satd = lk->get(mv);
      if (satd >= 0) return cost + satd;
    }
    return computed_cost(x, y, w, h, r, mv, cost, bound);
  }

  // cost_at's SATD computed, added to `cost` (the vector's bits): out of line, so that
  // cost_at, whose lookup nearly always finds the SATD, is small enough to be inlined.
#if defined(__GNUC__) && !defined(__CUDACC__)
  __attribute__((noinline))
#endif
  GVC_HD int computed_cost(int x, int y, int w, int h, int r, const int16_t mv[2], int cost, int bound) const {
    uint8_t pred[64];
    for (int row = y; row < y + h; row++) {
      a_.refs[r].predict(16 * a_.mx + 4 * x, 16 * a_.my + 4 * row, 4 * w, 4, mv, pred, 16);
      cost += satd_block(px_.src[0] + 4 * row * px_.src_stride[0] + 4 * x, px_.src_stride[0], pred, 16, 4 * w, 4);
      if (cost >= bound) return cost;
    }
    return cost;
  }

  // Quarter-pel steps around the vector with the partition's predictor (the ME core refined with
  // an approximate one), while they improve, at most twice.
  GVC_HD void refine(int x, int y, int w, int h, PartResult& rb, const SatdLookup* lk) const {
    for (int iter = 0; iter < 2; iter++) {
      const int16_t center[2] = {rb.mv[0], rb.mv[1]};
      // Where the step lies in the cached grid, cost_at's costs come quicker: each vector's
      // bits from its column's and its row's, its SATD from the grid's 3x3 cells around the
      // centre.
      const bool in_grid = step_in_grid(center, lk);
      int bits_x[3] = {}, bits_y[3] = {};
      const uint16_t* cells = nullptr;
      if (in_grid) {
        for (int d = 0; d < 3; d++) {
          bits_x[d] = se_bits_fast(center[0] + d - 1 - rb.mvp[0]);
          bits_y[d] = se_bits_fast(center[1] + d - 1 - rb.mvp[1]);
        }
        cells = lk->near + 5 * (center[1] - lk->cy + 1) + (center[0] - lk->cx + 1);
      }
      bool moved = false;
      for (int k = 0; k < 9; k++) {
        if (k == 4) continue;
        const int dx = k % 3, dy = k / 3;
        const int16_t c[2] = {int16_t(center[0] + dx - 1), int16_t(center[1] + dy - 1)};
        int cost;
        if (in_grid) {
          const int bits = a_.lambda * (bits_x[dx] + bits_y[dy]);
          const uint16_t satd = cells[5 * dy + dx];
          cost = satd != kSatdMiss ? bits + satd : computed_cost(x, y, w, h, rb.ref, c, bits, rb.cost);
        } else {
          cost = cost_at(x, y, w, h, rb.ref, c, rb.mvp, rb.cost, lk);
        }
        if (cost < rb.cost) {
          rb.cost = cost;
          rb.mv[0] = c[0];
          rb.mv[1] = c[1];
          moved = true;
        }
      }
      if (!moved) break;
    }
  }

  // Whether the 3x3 step around `center` lies in the cached 5x5 grid `lk` (a refined
  // partition's, around its ME vector) and in the level's vector range: refine's quick case.
  GVC_HD bool step_in_grid(const int16_t center[2], const SatdLookup* lk) const {
    return lk && lk->near && lk->rad == 2 && unsigned(center[0] - lk->cx + 1) <= 2u &&
           unsigned(center[1] - lk->cy + 1) <= 2u && center[1] - 1 >= -a_.max_mv_y &&
           center[1] + 1 <= a_.max_mv_y - 1 && center[0] - 1 >= -8192 && center[0] + 1 <= 8191;
  }

  const MbAnalysis& a_;
  const MbPixels& px_;
  MvContext around_;  // the neighbouring macroblocks, found once for every partition's mvpL0
  const Preselection* sel_;  // the macroblock's pre-selection, or null

  // The SATD caches' slot of ME partition `idx` (satd_slots' of the pre-selection).
  GVC_HD SatdSlot slot_of(int idx) const { return satd_slot_of(sel_, idx); }
};

GVC_HD void commit(InterChoice& c, int x, int y, int w, int h, const PartResult& r) {
  c.motion.set(x, y, w, h, r.ref, r.mv[0], r.mv[1]);
}

// A macroblock split into `type`'s two or one partitions, each over all references.
GVC_HD InterChoice choose_mb_partitions(const PartitionSearch& ps, MbType type, int lambda, int num_refs) {
  InterChoice c;
  c.type = type;
  c.cost = lambda * ue_bits(type == MbType::PL0_16x16 ? 0 : type == MbType::PL0_16x8 ? 1 : 2);
  for (int i = 0; i < num_mb_part(type); i++) {
    int x, y, w, h;
    partition_rect(type, i, &x, &y, &w, &h);
    PartResult r = ps.search(c.motion, x, y, w, h, 0, num_refs - 1, true);
    if (r.cost == INT_MAX) return c.cost = INT_MAX, c;
    commit(c, x, y, w, h, r);
    c.cost += r.cost;
  }
  return c;
}

// P_8x8: per 8x8 in decoding order, the sub_mb_type and refIdxL0 of least J.
// `only_sub` (per quadrant, or null): the one sub_mb_type to try.
GVC_HD InterChoice choose_p8x8(const PartitionSearch& ps, int lambda, int num_refs, bool sub8x8, const uint8_t* only_sub) {
  InterChoice c;
  c.type = MbType::P8x8;
  c.cost = lambda * ue_bits(3);
  for (int quad = 0; quad < 4; quad++) {
    const int qx = 2 * (quad & 1), qy = 2 * (quad >> 1);
    InterChoice best;
    best.cost = INT_MAX;
    for (int r = 0; r < num_refs; r++) {
      for (int sub = kSubP8x8; sub <= (sub8x8 ? kSubP4x4 : kSubP8x8); sub++) {
        if (only_sub && sub != only_sub[quad]) continue;
        InterChoice t = c;
        t.sub_mb_type[quad] = uint8_t(sub);
        int cost = lambda * (ue_bits(uint32_t(sub)) + ref_bits(r, num_refs));
        for (int j = 0; j < num_sub_mb_part(sub) && cost < best.cost; j++) {
          int x, y, w, h;
          sub_partition_rect(sub, j, &x, &y, &w, &h);
          PartResult pr = ps.search(t.motion, qx + x, qy + y, w, h, r, r, false);
          if (pr.cost == INT_MAX) {
            cost = INT_MAX;
            break;
          }
          commit(t, qx + x, qy + y, w, h, pr);
          cost += pr.cost;
        }
        if (cost < best.cost) {
          best = t;
          best.cost = cost;
        }
      }
    }
    if (best.cost == INT_MAX) return c.cost = INT_MAX, c;
    const int total = c.cost + best.cost;
    c = best;
    c.cost = total;
  }
  return c;
}

}  // namespace analyse_inter_detail

// Chooses the inter coding of macroblock (a.mx, a.my) of a P slice (a.num_refs > 0).
GVC_HD void choose_inter(const MbAnalysis& a, const MbPixels& px, InterChoice& out) {
  using namespace analyse_inter_detail;
  const DecideFlags& p = a.flags;
  Preselection sel;
  if (p.preselect) sel = a.presel ? *a.presel : preselect(a);
  PartitionSearch ps(a, px, p.preselect ? &sel : nullptr);
  out = choose_mb_partitions(ps, MbType::PL0_16x16, a.lambda, a.num_refs);
  auto consider = [&](const InterChoice& c) {
    if (c.cost < out.cost) out = c;
  };
  if (p.preselect) {
    if (sel.try16x8) consider(choose_mb_partitions(ps, MbType::PL0_16x8, a.lambda, a.num_refs));
    if (sel.try8x16) consider(choose_mb_partitions(ps, MbType::PL0_8x16, a.lambda, a.num_refs));
    if (sel.try8x8) consider(choose_p8x8(ps, a.lambda, a.num_refs, p.sub8x8, sel.sub));
  } else {
    if (p.part16x8) {
      consider(choose_mb_partitions(ps, MbType::PL0_16x8, a.lambda, a.num_refs));
      consider(choose_mb_partitions(ps, MbType::PL0_8x16, a.lambda, a.num_refs));
    }
    if (p.part8x8) consider(choose_p8x8(ps, a.lambda, a.num_refs, p.sub8x8, nullptr));
  }

  // P_Skip: refIdxL0 0 and the predicted vector, no syntax but the skip run.
  InterChoice skip;
  skip.type = MbType::PSkip;
  int16_t mv[2];
  predict_mv_skip(ps.around(), mv);
  const int16_t zero[2] = {mv[0], mv[1]};
  skip.cost = ps.cost_of(0, 0, 4, 4, 0, mv, zero, out.cost);  // kept only below out.cost
  skip.motion.set(0, 0, 4, 4, 0, mv[0], mv[1]);
  consider(skip);
}

}  // namespace gvc::h264
