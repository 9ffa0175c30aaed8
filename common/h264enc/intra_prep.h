// intra_prep.h: the intra mode search of every macroblock made before the frame's wavefront (on the GPU), for the CPU and CUDA
//
// decide_mb's intra search reads the source and, for Intra_4x4, the neighbours' Intra4x4PredMode
// (predIntra4x4PredMode, 8.3.1.1). Where neither the left nor the upper macroblock is
// Intra_4x4 (nearly everywhere in P frames), every neighbouring mode counts as Intra_4x4_DC
// whatever the neighbours are, so the search can run for all macroblocks at once, before any is
// decided, against a stand-in map whose macroblocks are all "available, not Intra_4x4" (each
// with its slice). decide_mb takes the result where that holds and searches again where a
// neighbour turned out Intra_4x4: the decisions are the ones of the search alone, bit for bit.
#pragma once

#include <climits>
#include <cstdint>

#include "common/h264enc/analyse.h"
#include "common/h264enc/analyse_intra.h"

namespace gvc::h264 {

struct MbIntraPrep {
  int32_t i16_cost = INT_MAX;  // i16_mb_cost of Intra_16x16's best mode
  int32_t i4_cost = INT_MAX;   // i4_cost of Intra_4x4, or INT_MAX: not below i16_cost, or not tried
  uint8_t i16_mode = 0;
  uint8_t chroma_mode = 0;
  uint8_t i4_mode[16] = {};
};

// What prepare_intra works in: on a CPU caller's stack, in shared memory for a GPU thread.
struct IntraPrepScratch {
  Macroblock mb;
  uint8_t window[kI4WindowBytes];
};

// The stand-in a prepare_intra map is made of for the macroblock of slice `slice`.
GVC_HD void make_stand_in(Macroblock& m, uint16_t slice) {
  m.type = MbType::PL0_16x16;
  m.slice_id = slice;
}

// The macroblock's source samples at its origin.
GVC_HD MbPixels mb_source(const MbAnalysis& a) {
  MbPixels px;
  for (int p = 0; p < 3; p++) {
    const int n = p ? 8 : 16;
    px.src[p] = a.src.at(p, n * a.mx, n * a.my);
    px.src_stride[p] = a.src.stride[p];
    px.rec[p] = nullptr;  // nothing is reconstructed while deciding
    px.rec_stride[p] = 0;
  }
  return px;
}

// The intra search of macroblock (a.mx, a.my) with a.map a stand-in map (make_stand_in).
GVC_HD void prepare_intra(const MbAnalysis& a, IntraPrepScratch& s, MbIntraPrep& out) {
  const MbPixels px = mb_source(a);
  const bool p_slice = a.num_refs > 0;
  int mode = kI16Dc;
  out.i16_cost = i16_mb_cost(choose_i16(a, px, &mode), a.lambda, p_slice);
  out.i16_mode = uint8_t(mode);
  out.chroma_mode = uint8_t(choose_chroma(a, px));
  out.i4_cost = INT_MAX;
  for (int i = 0; i < 16; i++) out.i4_mode[i] = 0;
  if (!a.flags.intra4x4) return;
  const int blocks = choose_i4(a, px, s.mb, out.i16_cost, INT_MAX, s.window);
  if (blocks == INT_MAX) return;
  out.i4_cost = i4_cost(blocks, a.lambda, p_slice);
  for (int i = 0; i < 16; i++) out.i4_mode[i] = s.mb.i4_mode[i];
}

// Whether prepare_intra's result is the search's for the macroblock at (mx, my) of the decided
// `map`: neither its left nor its upper neighbour is Intra_4x4.
GVC_HD bool intra_prep_holds(const MbMap& map, int mx, int my) {
  const Macroblock* left = map.at(mx - 1, my);
  const Macroblock* up = map.at(mx, my - 1);
  return !(left && left->type == MbType::I4x4) && !(up && up->type == MbType::I4x4);
}

}  // namespace gvc::h264
