// satd_cache.h: SATDs of the inter candidates a macroblock's decision is likely to cost, computed before the decision's wavefront (on the GPU), for the CPU and CUDA
//
// choose_inter (analyse_inter.h) costs a partition's candidates as SATD + lambda * bits. The
// bits need the exact mvpL0, known only in the wavefront, but the SATD of a vector does not:
// the SATDs of the vectors the search is likely to visit can be computed for every macroblock
// at once beforehand, and cost_of looks a vector up (SatdLookup) before computing it. What is
// not in the cache (a predictor far from the ME core's vector, a refinement that wanders
// further) is computed as before, so the decisions are those of the search alone, bit for bit.
//
// Per macroblock and reference, for the partitions the search costs (P_L0_16x16 and the shape
// the pre-selection keeps, inter_preselect.h):
// - a partition that is refined (8x8 and larger): the 5x5 quarter-pel vectors around its ME
//   vector (the refinement's two steps from there stay inside), and its 16x16 ME vector;
// - a sub-macroblock partition (8x4, 4x8, 4x4): its ME vector and the 16x16 ME vector.
#pragma once

#include <cstdint>

#include "common/h264enc/analyse.h"
#include "common/h264enc/inter_preselect.h"

namespace gvc::h264 {

constexpr uint16_t kSatdMiss = 0xFFFF;  // not computed, or too large to store

struct MbSatdRef {
  static constexpr int kBig = 5, kGrid = 25, kSmall = 16;
  static constexpr int kEntries = kBig * kGrid + kBig + 2 * kSmall;  // satd_entry's numbering
  uint16_t grid[kBig][kGrid];  // refined partition k at ME vector + (g % 5 - 2, g / 5 - 2)
  uint16_t at_me16[kBig];      // refined partition k > 0 at the 16x16 ME vector
  uint16_t small[kSmall][2];   // sub-macroblock partition k at its ME vector, at the 16x16 one
};

// Which cache slot holds each ME partition (mv_field.h) of a macroblock, and back.
struct SatdSlots {
  int8_t big_of[kNumPartitions];
  int8_t small_of[kNumPartitions];
  int8_t big_part[MbSatdRef::kBig];
  int8_t small_part[MbSatdRef::kSmall];
};

// The slots of a macroblock whose pre-selection is `sel`: the partitions choose_inter costs
// (without a pre-selection, null, only P_L0_16x16's).
GVC_HD SatdSlots satd_slots(const Preselection* sel) {
  SatdSlots s;
  for (int i = 0; i < kNumPartitions; i++) s.big_of[i] = s.small_of[i] = -1;
  for (auto& p : s.big_part) p = -1;
  for (auto& p : s.small_part) p = -1;
  int nbig = 0, nsmall = 0;
  auto big = [&](int idx) {
    s.big_of[idx] = int8_t(nbig);
    s.big_part[nbig++] = int8_t(idx);
  };
  auto small = [&](int idx) {
    s.small_of[idx] = int8_t(nsmall);
    s.small_part[nsmall++] = int8_t(idx);
  };
  big(kPart16x16);
  if (!sel) return s;
  if (sel->try16x8) big(kPart16x8), big(kPart16x8 + 1);
  if (sel->try8x16) big(kPart8x16), big(kPart8x16 + 1);
  if (sel->try8x8) {
    for (int q = 0; q < 4; q++) {
      switch (sel->sub[q]) {
        case kSubP8x4: small(kPart8x4 + 2 * q), small(kPart8x4 + 2 * q + 1); break;
        case kSubP4x8: small(kPart4x8 + 2 * q), small(kPart4x8 + 2 * q + 1); break;
        case kSubP4x4:
          for (int k = 0; k < 4; k++) small(kPart4x4 + 4 * q + k);
          break;
        default: big(kPart8x8 + q); break;
      }
    }
  }
  return s;
}

// The slots of macroblock (a.mx, a.my), and where `sel` is not null its pre-selection there
// (made with a.flags.preselect only; the decision takes it from there, as MbAnalysis::presel).
GVC_HD SatdSlots satd_slots(const MbAnalysis& a, Preselection* sel = nullptr) {
  if (!a.flags.preselect) return satd_slots(nullptr);
  const Preselection made = preselect(a);
  if (sel) *sel = made;
  return satd_slots(&made);
}

// The slot satd_slots(sel) gives ME partition `part`: its index among the refined partitions'
// grids (big) or among the sub-macroblock partitions' (small), or neither (-1, -1). What the
// decision looks up for the few partitions it costs, without making the whole table. For the
// pre-selections preselect() makes: one shape at most besides P_L0_16x16 (the cache's 5 big
// slots could not hold two).
struct SatdSlot {
  int8_t big = -1, small = -1;
};

GVC_HD SatdSlot satd_slot_of(const Preselection* sel, int part) {
  SatdSlot s;
  if (part == kPart16x16) {
    s.big = 0;
    return s;
  }
  if (!sel) return s;
  if (part < kPart8x16) {
    if (sel->try16x8) s.big = int8_t(1 + part - kPart16x8);
    return s;
  }
  if (part < kPart8x8) {
    if (sel->try8x16) s.big = int8_t(1 + part - kPart8x16);
    return s;
  }
  if (!sel->try8x8) return s;
  int q, sub, k;  // the partition's quadrant, sub_mb_type and index in it
  if (part < kPart8x4) q = part - kPart8x8, sub = kSubP8x8, k = 0;
  else if (part < kPart4x8) q = (part - kPart8x4) >> 1, sub = kSubP8x4, k = (part - kPart8x4) & 1;
  else if (part < kPart4x4) q = (part - kPart4x8) >> 1, sub = kSubP4x8, k = (part - kPart4x8) & 1;
  else q = (part - kPart4x4) >> 2, sub = kSubP4x4, k = (part - kPart4x4) & 3;
  if (sel->sub[q] != sub) return s;
  int big = 1, small = 0;  // the slots the quadrants before it take, in satd_slots' order
  for (int i = 0; i < q; i++) {
    if (sel->sub[i] == kSubP8x8) big++;
    else small += sel->sub[i] == kSubP4x4 ? 4 : 2;
  }
  if (sub == kSubP8x8) s.big = int8_t(big);
  else s.small = int8_t(small + k);
  return s;
}

// The cell of entry e (0 .. kEntries - 1): the grids, then at_me16, then small.
GVC_HD uint16_t* satd_cell(MbSatdRef& c, int e) {
  if (e < MbSatdRef::kBig * MbSatdRef::kGrid) return &c.grid[e / MbSatdRef::kGrid][e % MbSatdRef::kGrid];
  e -= MbSatdRef::kBig * MbSatdRef::kGrid;
  if (e < MbSatdRef::kBig) return &c.at_me16[e];
  e -= MbSatdRef::kBig;
  return &c.small[e / 2][e % 2];
}

// Entry e (0 .. kEntries - 1) of a macroblock's cache for reference r: its partition and
// vector, and the cell; false when the slot is unused.
GVC_HD bool satd_entry(const MbAnalysis& a, const SatdSlots& s, int r, int e, int* part, int16_t mv[2],
                       uint16_t** cell, MbSatdRef& c) {
  const MbPartitions& me = a.me[r][a.my * a.map.mb_width + a.mx];
  const MvCost& m16 = me.part[kPart16x16];
  if (e < MbSatdRef::kBig * MbSatdRef::kGrid) {
    const int k = e / MbSatdRef::kGrid, g = e % MbSatdRef::kGrid;
    if (s.big_part[k] < 0) return false;
    *part = s.big_part[k];
    mv[0] = int16_t(me.part[*part].mvx + g % 5 - 2);
    mv[1] = int16_t(me.part[*part].mvy + g / 5 - 2);
    *cell = &c.grid[k][g];
    return true;
  }
  e -= MbSatdRef::kBig * MbSatdRef::kGrid;
  if (e < MbSatdRef::kBig) {
    if (e == 0 || s.big_part[e] < 0) return false;
    *part = s.big_part[e];
    mv[0] = m16.mvx, mv[1] = m16.mvy;
    *cell = &c.at_me16[e];
    return true;
  }
  e -= MbSatdRef::kBig;
  const int k = e / 2;
  if (s.small_part[k] < 0) return false;
  *part = s.small_part[k];
  const MvCost& v = e % 2 ? m16 : me.part[*part];
  mv[0] = v.mvx, mv[1] = v.mvy;
  *cell = &c.small[k][e % 2];
  return true;
}

// SATD of the w x h partition at (x, y) (4x4-block units) of macroblock (a.mx, a.my) displaced
// by mv in reference r, by rows of 4x4 blocks: the sum cost_of computes.
GVC_HD int partition_satd(const MbAnalysis& a, int r, int x, int y, int w, int h, const int16_t mv[2]) {
  const uint8_t* src = a.src.at(0, 16 * a.mx + 4 * x, 16 * a.my + 4 * y);
  int sum = 0;
  uint8_t pred[64];
  for (int row = 0; row < h; row++) {
    a.refs[r].predict(16 * a.mx + 4 * x, 16 * a.my + 4 * (y + row), 4 * w, 4, mv, pred, 16);
    sum += satd_block(src + 4 * row * a.src.stride[0], a.src.stride[0], pred, 16, 4 * w, 4);
  }
  return sum;
}

// Fills entry e of macroblock (a.mx, a.my)'s cache `c` for reference r (kSatdMiss where unused).
GVC_HD void fill_satd_entry(const MbAnalysis& a, const SatdSlots& s, int r, int e, MbSatdRef& c) {
  int part = 0;
  int16_t mv[2];
  uint16_t* cell = nullptr;
  if (!satd_entry(a, s, r, e, &part, mv, &cell, c)) {
    *satd_cell(c, e) = kSatdMiss;  // the cell of an unused slot, for a defined value
    return;
  }
  int x, y, w, h;
  me_partition_rect(part, &x, &y, &w, &h);
  const int v = partition_satd(a, r, x, y, w, h, mv);
  *cell = v < kSatdMiss ? uint16_t(v) : kSatdMiss;
}

// The cached SATDs of one ME partition in one reference of a macroblock (satd_lookup), found
// once for the many vectors the partition's search costs.
struct SatdLookup {
  const uint16_t* near = nullptr;  // (2 * rad + 1)^2 cells around (cx, cy), by rows; null: none
  int rad = 0;                     // 2: a refined partition's grid; 0: a sub-partition's own vector
  int16_t cx = 0, cy = 0;          // the partition's ME vector
  int16_t m16x = 0, m16y = 0;      // the 16x16 ME vector
  uint16_t at16 = kSatdMiss;       // the SATD at the 16x16 ME vector, where not among `near`

  // The cached SATD at mv, or -1.
  GVC_HD int get(const int16_t mv[2]) const {
    const int n = 2 * rad + 1, dx = mv[0] - cx + rad, dy = mv[1] - cy + rad;
    uint16_t got = kSatdMiss;
    if (near && unsigned(dx) < unsigned(n) && unsigned(dy) < unsigned(n)) got = near[n * dy + dx];
    else if (mv[0] == m16x && mv[1] == m16y) got = at16;
    return got == kSatdMiss ? -1 : int(got);
  }
};

// The cached SATDs of ME partition `part`, in slot `s`, in reference r of macroblock (a.mx, a.my).
GVC_HD SatdLookup satd_lookup(const MbAnalysis& a, SatdSlot s, int r, int part) {
  const MbSatdRef& c = a.satd[r];
  const MbPartitions& me = a.me[r][a.my * a.map.mb_width + a.mx];
  SatdLookup l;
  l.cx = me.part[part].mvx;
  l.cy = me.part[part].mvy;
  l.m16x = me.part[kPart16x16].mvx;
  l.m16y = me.part[kPart16x16].mvy;
  if (s.big >= 0) {
    const int k = s.big;
    l.near = c.grid[k];
    l.rad = 2;
    if (k > 0) l.at16 = c.at_me16[k];
  } else if (s.small >= 0) {
    const int k = s.small;
    l.near = &c.small[k][0];
    l.at16 = c.small[k][1];
  }
  return l;
}

}  // namespace gvc::h264
