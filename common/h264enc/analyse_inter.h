// analyse_inter.h: P macroblock decision: partitions, sub-partitions, references and P_Skip
//
// The ME core (gvc::MotionSearch) has already searched every partition of the macroblock
// against every reference with an approximate predictor; here the CPU takes its vectors as
// candidates, re-costs them with the exact predictor mvpL0 of 8.4.1.3 (which depends on the
// partitions decided before, in decoding order), re-refines the larger partitions by one
// quarter-pel step, and picks, by J = SATD + lambda * bits (analyse.h), among P_Skip,
// P_L0_16x16, P_L0_L0_16x8, P_L0_L0_8x16 and P_8x8 with the best sub_mb_type and refIdxL0 of
// each 8x8.
#pragma once

#include <cstdint>

#include "common/h264enc/analyse.h"
#include "common/h264enc/mvpred.h"

namespace gvc::h264 {

struct InterChoice {
  MbType type = MbType::PL0_16x16;  // PSkip, PL0_16x16, PL0_16x8, PL0_8x16 or P8x8
  uint8_t sub_mb_type[4] = {};      // P8x8
  MotionState motion;               // refIdxL0 and mvL0 of every block
  int16_t mvd[16][2] = {};          // mvd_l0 at each partition's top-left 4x4 block
  int cost = 0;                     // J of the choice
};

// Seed 002's inter pre-selection: from the ME core's costs (SAD + lambda * vector bits with
// its approximate predictor; best reference per partition) plus lambda * mb_type and
// sub_mb_type bits, the cheapest macroblock shape and, for P_8x8, the cheapest sub_mb_type of
// each quadrant. choose_inter then re-costs only that shape besides P_L0_16x16 and P_Skip.
struct Preselection {
  bool try16x8 = false, try8x16 = false, try8x8 = false;
  uint8_t sub[4] = {};  // P_8x8: sub_mb_type per quadrant
};
Preselection preselect(const MbAnalysis& a);

// Chooses the inter coding of macroblock (a.mx, a.my) of a P slice (a.num_refs > 0).
void choose_inter(const MbAnalysis& a, const MbPixels& px, InterChoice& out);

// Writes the choice `c` into mb. A P_Skip choice, or a P_L0_16x16 one with P_Skip's motion,
// becomes a P_Skip candidate (recon_mb.h keeps it P_Skip if no coefficient is coded) with
// the P_L0_16x16 mvd of that motion in mvd[0].
void decide_inter(const MbAnalysis& a, const InterChoice& c, Macroblock& mb);

// Index (mv_field.h) of the ME core's partition at (x, y), w x h in 4x4-block units.
int me_partition_index(int x, int y, int w, int h);

}  // namespace gvc::h264
