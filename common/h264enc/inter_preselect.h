// inter_preselect.h: seed 002's inter pre-selection from the ME core's costs, and the ME core's partitions as rectangles, for the CPU and CUDA
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/h264enc/analyse.h"
#include "common/h264enc/cavlc_bits.h"
#include "common/mv/mv_field.h"

namespace gvc::h264 {

// Seed 002's inter pre-selection: from the ME core's costs (SAD + lambda * vector bits with
// its approximate predictor; best reference per partition) plus lambda * mb_type and
// sub_mb_type bits, the cheapest macroblock shape and, for P_8x8, the cheapest sub_mb_type of
// each quadrant. choose_inter then re-costs only that shape besides P_L0_16x16 and P_Skip. At
// most one of the try flags is set.
struct Preselection {
  bool try16x8 = false, try8x16 = false, try8x8 = false;
  uint8_t sub[4] = {};  // P_8x8: sub_mb_type per quadrant
};

// Index (mv_field.h) of the ME core's partition at (x, y), w x h in 4x4-block units.
GVC_HD int me_partition_index(int x, int y, int w, int h) {
  const int quad = (y >> 1) * 2 + (x >> 1);
  if (w == 4 && h == 4) return kPart16x16;
  if (w == 4) return kPart16x8 + (y >> 1);
  if (h == 4) return kPart8x16 + (x >> 1);
  if (w == 2 && h == 2) return kPart8x8 + quad;
  if (w == 2) return kPart8x4 + 2 * quad + (y & 1);
  if (h == 2) return kPart4x8 + 2 * quad + (x & 1);
  return kPart4x4 + 4 * quad + 2 * (y & 1) + (x & 1);
}

// The rectangle of the ME core's partition `idx` (mv_field.h) in 4x4-block units: the inverse
// of me_partition_index.
GVC_HD void me_partition_rect(int idx, int* x, int* y, int* w, int* h) {
  if (idx == kPart16x16) *x = 0, *y = 0, *w = 4, *h = 4;
  else if (idx < kPart8x16) *x = 0, *y = 2 * (idx - kPart16x8), *w = 4, *h = 2;
  else if (idx < kPart8x8) *x = 2 * (idx - kPart8x16), *y = 0, *w = 2, *h = 4;
  else if (idx < kPart8x4) *x = 2 * ((idx - kPart8x8) & 1), *y = 2 * ((idx - kPart8x8) >> 1), *w = 2, *h = 2;
  else if (idx < kPart4x8) {
    const int q = (idx - kPart8x4) >> 1;
    *x = 2 * (q & 1), *y = 2 * (q >> 1) + ((idx - kPart8x4) & 1), *w = 2, *h = 1;
  } else if (idx < kPart4x4) {
    const int q = (idx - kPart4x8) >> 1;
    *x = 2 * (q & 1) + ((idx - kPart4x8) & 1), *y = 2 * (q >> 1), *w = 1, *h = 2;
  } else {
    const int q = (idx - kPart4x4) >> 2, k = (idx - kPart4x4) & 3;
    *x = 2 * (q & 1) + (k & 1), *y = 2 * (q >> 1) + (k >> 1), *w = 1, *h = 1;
  }
}

// How many of the ME core's partitions the decision reads with flags `f` (preselect and
// choose_inter alike), a prefix of mv_field.h's order: 16x16; then 16x8 and 8x16 (part16x8);
// then the 8x8s (part8x8), and their sub-partitions (sub8x8). The rest may be left unrefined
// (MeParams::refined_partitions) and need not come to the host.
GVC_HD int me_partitions_read(const DecideFlags& f) {
  return f.part8x8 ? (f.sub8x8 ? kNumPartitions : kPart8x4) : f.part16x8 ? kPart8x8 : kPart16x8;
}

// Seed 002's pre-selection of macroblock (a.mx, a.my): see Preselection.
GVC_HD Preselection preselect(const MbAnalysis& a) {
  Preselection sel;
  const DecideFlags& p = a.flags;
  // Each partition's cost, best over the references (ref_idx bits aside): with one reference
  // its own, read where it is.
  const size_t addr = size_t(a.my) * size_t(a.map.mb_width) + size_t(a.mx);
  MbPartitions best_of_refs;
  const MvCost* me = best_of_refs.part;
  if (a.num_refs == 1) {
    me = a.me[0][addr].part;
  } else {
    for (int i = 0; i < me_partitions_read(p); i++) {
      uint32_t c = UINT32_MAX;
      for (int r = 0; r < a.num_refs; r++) c = a.me[r][addr].part[i].cost < c ? a.me[r][addr].part[i].cost : c;
      best_of_refs.part[i].cost = c;
    }
  }
  auto me_cost = [&](int part) { return int64_t(me[part].cost); };
  const int64_t l = a.lambda;
  const int64_t c16 = me_cost(kPart16x16) + l * ue_bits(0);
  int64_t best = c16;
  int choice = 0;  // 0: 16x16 only, 1: 16x8, 2: 8x16, 3: 8x8
  if (p.part16x8) {
    const int64_t c168 = me_cost(kPart16x8) + me_cost(kPart16x8 + 1) + l * ue_bits(1);
    const int64_t c816 = me_cost(kPart8x16) + me_cost(kPart8x16 + 1) + l * ue_bits(2);
    if (c168 < best) best = c168, choice = 1;
    if (c816 < best) best = c816, choice = 2;
  }
  if (p.part8x8) {
    int64_t c88 = l * ue_bits(3);
    for (int q = 0; q < 4; q++) {
      int64_t qbest = me_cost(kPart8x8 + q) + l * ue_bits(kSubP8x8);
      sel.sub[q] = kSubP8x8;
      if (p.sub8x8) {
        const int64_t c84 = me_cost(kPart8x4 + 2 * q) + me_cost(kPart8x4 + 2 * q + 1) + l * ue_bits(kSubP8x4);
        const int64_t c48 = me_cost(kPart4x8 + 2 * q) + me_cost(kPart4x8 + 2 * q + 1) + l * ue_bits(kSubP4x8);
        int64_t c44 = l * ue_bits(kSubP4x4);
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

}  // namespace gvc::h264
