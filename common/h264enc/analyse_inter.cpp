// analyse_inter.cpp: P macroblock decision: partitions, sub-partitions, references and P_Skip
#include "common/h264enc/analyse_inter.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>

#include "common/bitstream/bitwriter.h"

namespace gvc::h264 {

int me_partition_index(int x, int y, int w, int h) {
  const int quad = (y >> 1) * 2 + (x >> 1);
  if (w == 4 && h == 4) return kPart16x16;
  if (w == 4) return kPart16x8 + (y >> 1);
  if (h == 4) return kPart8x16 + (x >> 1);
  if (w == 2 && h == 2) return kPart8x8 + quad;
  if (w == 2) return kPart8x4 + 2 * quad + (y & 1);
  if (h == 2) return kPart4x8 + 2 * quad + (x & 1);
  return kPart4x4 + 4 * quad + 2 * (y & 1) + (x & 1);
}

namespace {

// Bits of ref_idx_l0 te(v) with num_ref_idx_l0_active = n (9.1.2).
int ref_bits(int ref, int n) { return n == 1 ? 0 : n == 2 ? 1 : ue_size(uint32_t(ref)); }

int mvd_bits(int mvx, int mvy, const int16_t mvp[2]) {
  return se_size(mvx - mvp[0]) + se_size(mvy - mvp[1]);
}

// One partition's search: the best (refIdxL0, mvL0) with its exact predictor and J.
struct PartResult {
  int ref = 0;
  int16_t mv[2] = {0, 0};
  int16_t mvp[2] = {0, 0};
  int cost = INT_MAX;  // SATD + lambda * (mvd bits + ref_idx bits)
};

class PartitionSearch {
 public:
  PartitionSearch(const MbAnalysis& a, const MbPixels& px) : a_(a), px_(px) {}

  // Searches the partition at (x, y), w x h (4x4 units) over references [ref_lo, ref_hi]
  // with `state` holding the partitions decided before it. `count_ref` adds the ref_idx
  // bits (not for sub-macroblock partitions, whose 8x8 pays them once).
  PartResult search(const MotionState& state, int x, int y, int w, int h, int ref_lo, int ref_hi,
                    bool count_ref) const {
    PartResult best;
    MvContext ctx{&a_.map, a_.mx, a_.my, &state};
    const int idx = me_partition_index(x, y, w, h);
    for (int r = ref_lo; r <= ref_hi; r++) {
      int16_t mvp[2];
      predict_mv(ctx, x, y, w, h, r, mvp);
      const MvCost& me = a_.me[r].data[a_.my * a_.me[r].mb_cols + a_.mx].part[idx];
      const MvCost& me16 = a_.me[r].data[a_.my * a_.me[r].mb_cols + a_.mx].part[kPart16x16];
      const int bias = count_ref ? a_.lambda * ref_bits(r, a_.num_refs) : 0;
      // Candidates: the ME core's vector for this partition, the predictor (mvd 0), and the
      // ME core's 16x16 vector (the whole macroblock often moves together).
      const int16_t cand[3][2] = {{me.mvx, me.mvy}, {mvp[0], mvp[1]}, {me16.mvx, me16.mvy}};
      PartResult rb;
      for (const auto& c : cand) {
        int cost = cost_of(x, y, w, h, r, c, mvp);
        if (cost < rb.cost) rb = {r, {c[0], c[1]}, {mvp[0], mvp[1]}, cost};
      }
      if (rb.cost == INT_MAX) continue;
      if (a_.params->analyse.refine && w * h >= 4) refine(x, y, w, h, rb);
      rb.cost += bias;
      if (rb.cost < best.cost) best = rb;
    }
    return best;
  }

  // J of vector mv on reference r for the partition, without ref_idx bits; INT_MAX when mv
  // is out of the level's range.
  int cost_of(int x, int y, int w, int h, int r, const int16_t mv[2], const int16_t mvp[2]) const {
    if (mv[1] < -a_.max_mv_y || mv[1] > a_.max_mv_y - 1 || mv[0] < -8192 || mv[0] > 8191) return INT_MAX;
    uint8_t pred[256];
    a_.refs[r]->luma.predict(16 * a_.mx + 4 * x, 16 * a_.my + 4 * y, 4 * w, 4 * h, mv, pred, 16);
    return satd_block(px_.src[0] + 4 * y * px_.src_stride[0] + 4 * x, px_.src_stride[0], pred, 16,
                      4 * w, 4 * h) +
           a_.lambda * mvd_bits(mv[0], mv[1], mvp);
  }

 private:
  // Quarter-pel steps around the vector with the exact predictor (the ME core refined with
  // an approximate one), while they improve, at most twice.
  void refine(int x, int y, int w, int h, PartResult& rb) const {
    for (int iter = 0; iter < 2; iter++) {
      int16_t center[2] = {rb.mv[0], rb.mv[1]};
      bool moved = false;
      for (int k = 0; k < 9; k++) {
        if (k == 4) continue;
        int16_t c[2] = {int16_t(center[0] + k % 3 - 1), int16_t(center[1] + k / 3 - 1)};
        int cost = cost_of(x, y, w, h, rb.ref, c, rb.mvp);
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

  const MbAnalysis& a_;
  const MbPixels& px_;
};

void commit(InterChoice& c, int x, int y, int w, int h, const PartResult& r) {
  c.motion.set(x, y, w, h, r.ref, r.mv[0], r.mv[1]);
  c.mvd[4 * y + x][0] = int16_t(r.mv[0] - r.mvp[0]);
  c.mvd[4 * y + x][1] = int16_t(r.mv[1] - r.mvp[1]);
}

// A macroblock split into `type`'s two or one partitions, each over all references.
InterChoice choose_mb_partitions(const PartitionSearch& ps, MbType type, int lambda, int num_refs) {
  InterChoice c;
  c.type = type;
  c.cost = lambda * ue_size(type == MbType::PL0_16x16 ? 0 : type == MbType::PL0_16x8 ? 1 : 2);
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
InterChoice choose_p8x8(const PartitionSearch& ps, int lambda, int num_refs, bool sub8x8, const uint8_t* only_sub) {
  InterChoice c;
  c.type = MbType::P8x8;
  c.cost = lambda * ue_size(3);
  for (int quad = 0; quad < 4; quad++) {
    const int qx = 2 * (quad & 1), qy = 2 * (quad >> 1);
    InterChoice best;
    best.cost = INT_MAX;
    for (int r = 0; r < num_refs; r++) {
      for (int sub = kSubP8x8; sub <= (sub8x8 ? kSubP4x4 : kSubP8x8); sub++) {
        if (only_sub && sub != only_sub[quad]) continue;
        InterChoice t = c;
        t.sub_mb_type[quad] = uint8_t(sub);
        int cost = lambda * (ue_size(uint32_t(sub)) + ref_bits(r, num_refs));
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

}  // namespace

Preselection preselect(const MbAnalysis& a) {
  Preselection sel;
  const EncoderParams& p = *a.params;
  auto me_cost = [&](int part) {  // best over the references, ref_idx bits aside
    uint32_t best = UINT32_MAX;
    for (int r = 0; r < a.num_refs; r++)
      best = std::min(best, a.me[r].data[a.my * a.me[r].mb_cols + a.mx].part[part].cost);
    return int64_t(best);
  };
  const int64_t l = a.lambda;
  const int64_t c16 = me_cost(kPart16x16) + l * ue_size(0);
  int64_t best = c16;
  int choice = 0;  // 0: 16x16 only, 1: 16x8, 2: 8x16, 3: 8x8
  if (p.analyse.part16x8) {
    const int64_t c168 = me_cost(kPart16x8) + me_cost(kPart16x8 + 1) + l * ue_size(1);
    const int64_t c816 = me_cost(kPart8x16) + me_cost(kPart8x16 + 1) + l * ue_size(2);
    if (c168 < best) best = c168, choice = 1;
    if (c816 < best) best = c816, choice = 2;
  }
  if (p.analyse.part8x8) {
    int64_t c88 = l * ue_size(3);
    for (int q = 0; q < 4; q++) {
      int64_t qbest = me_cost(kPart8x8 + q) + l * ue_size(kSubP8x8);
      sel.sub[q] = kSubP8x8;
      if (p.analyse.sub8x8) {
        const int64_t c84 = me_cost(kPart8x4 + 2 * q) + me_cost(kPart8x4 + 2 * q + 1) + l * ue_size(kSubP8x4);
        const int64_t c48 = me_cost(kPart4x8 + 2 * q) + me_cost(kPart4x8 + 2 * q + 1) + l * ue_size(kSubP4x8);
        int64_t c44 = l * ue_size(kSubP4x4);
        for (int k = 0; k < 4; k++) c44 += me_cost(kPart4x4 + 4 * q + k);
        if (c84 < qbest) qbest = c84, sel.sub[q] = kSubP8x4;
        if (c48 < qbest) qbest = c48, sel.sub[q] = kSubP4x8;
        if (c44 < qbest) qbest = c44, sel.sub[q] = kSubP4x4;
      }
      c88 += qbest;
    }
    if (c88 < best) best = c88, choice = 3;
  }
  sel.try16x8 = choice == 1;
  sel.try8x16 = choice == 2;
  sel.try8x8 = choice == 3;
  return sel;
}

void choose_inter(const MbAnalysis& a, const MbPixels& px, InterChoice& out) {
  const EncoderParams& p = *a.params;
  PartitionSearch ps(a, px);
  out = choose_mb_partitions(ps, MbType::PL0_16x16, a.lambda, a.num_refs);
  auto consider = [&](const InterChoice& c) {
    if (c.cost < out.cost) out = c;
  };
  if (p.analyse.preselect) {
    const Preselection sel = preselect(a);
    if (sel.try16x8) consider(choose_mb_partitions(ps, MbType::PL0_16x8, a.lambda, a.num_refs));
    if (sel.try8x16) consider(choose_mb_partitions(ps, MbType::PL0_8x16, a.lambda, a.num_refs));
    if (sel.try8x8) consider(choose_p8x8(ps, a.lambda, a.num_refs, p.analyse.sub8x8, sel.sub));
  } else {
    if (p.analyse.part16x8) {
      consider(choose_mb_partitions(ps, MbType::PL0_16x8, a.lambda, a.num_refs));
      consider(choose_mb_partitions(ps, MbType::PL0_8x16, a.lambda, a.num_refs));
    }
    if (p.analyse.part8x8) consider(choose_p8x8(ps, a.lambda, a.num_refs, p.analyse.sub8x8, nullptr));
  }

  // P_Skip: refIdxL0 0 and the predicted vector, no syntax but the skip run.
  InterChoice skip;
  skip.type = MbType::PSkip;
  int16_t mv[2];
  predict_mv_skip(a.map, a.mx, a.my, mv);
  const int16_t zero[2] = {mv[0], mv[1]};
  skip.cost = ps.cost_of(0, 0, 4, 4, 0, mv, zero);
  skip.motion.set(0, 0, 4, 4, 0, mv[0], mv[1]);
  consider(skip);
}

void decide_inter(const MbAnalysis& a, const InterChoice& c, Macroblock& mb) {
  mb.type = c.type;
  mb.cbp = 0;
  std::memcpy(mb.ref_idx, c.motion.ref_idx, sizeof(mb.ref_idx));
  std::memcpy(mb.mv, c.motion.mv, sizeof(mb.mv));
  std::memcpy(mb.mvd, c.mvd, sizeof(mb.mvd));
  std::memcpy(mb.sub_mb_type, c.sub_mb_type, sizeof(mb.sub_mb_type));

  int16_t skip_mv[2];
  predict_mv_skip(a.map, a.mx, a.my, skip_mv);
  const bool skip_motion = c.motion.ref_idx[0] == 0 && c.motion.mv[0][0] == skip_mv[0] &&
                           c.motion.mv[0][1] == skip_mv[1];
  if (c.type == MbType::PSkip || (c.type == MbType::PL0_16x16 && skip_motion)) {
    int16_t mvp[2];
    MotionState none;
    predict_mv(MvContext{&a.map, a.mx, a.my, &none}, 0, 0, 4, 4, 0, mvp);
    mb.type = MbType::PSkip;
    std::memset(mb.mvd, 0, sizeof(mb.mvd));
    mb.mvd[0][0] = int16_t(skip_mv[0] - mvp[0]);
    mb.mvd[0][1] = int16_t(skip_mv[1] - mvp[1]);
  }
}

}  // namespace gvc::h264
