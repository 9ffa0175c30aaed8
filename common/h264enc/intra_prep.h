// intra_prep.h: the intra mode search of every macroblock made before the frame's wavefront (on the GPU), for the CPU and CUDA
//
// decide_mb's intra search reads the source and, for Intra_4x4, the neighbours' Intra4x4PredMode
// (predIntra4x4PredMode, 8.3.1.1): the modes of the left macroblock's right column and of the
// upper macroblock's bottom row, each taken as Intra_4x4_DC where that macroblock is not
// Intra_4x4 (i4_edge_modes). So the search can run for all macroblocks at once, before any is
// decided, against a stand-in map (each stand-in with its macroblock's slice) whose edge modes
// are a guess: "not Intra_4x4" everywhere (make_stand_in; right nearly everywhere in P
// frames). An I frame's macroblocks are mostly Intra_4x4 next to Intra_4x4, so there the
// search runs again (kIntraPrepPassesI passes in all), each time against stand-ins that are
// the previous pass's choices (make_stand_in_from). The result records the edge modes it was
// made with; decide_mb takes it where the decided neighbours give the same ones and searches
// again elsewhere: the decisions are the ones of the search alone, bit for bit.
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
  uint8_t edge_modes[8] = {};  // i4_edge_modes of the map the search ran against
};

// Passes of the search in an I slice (P slices: one).
constexpr int kIntraPrepPassesI = 4;
// The passes for a frame whose analysis is `a`: one where the search cannot choose Intra_4x4
// (every stand-in's edge modes are then those of the first pass).
GVC_HD int intra_prep_passes(const MbAnalysis& a) {
  return a.num_refs > 0 || !a.flags.intra4x4 ? 1 : kIntraPrepPassesI;
}

// The neighbours' Intra4x4PredMode that the Intra_4x4 blocks on the left and upper edges of
// macroblock (mx, my) read (predict_i4_mode): [0..3] the left macroblock's right column (rows
// 0..3), [4..7] the upper macroblock's bottom row (columns 0..3); 2 where that macroblock is
// not Intra_4x4, 255 where it is not available.
GVC_HD void i4_edge_modes(const MbMap& map, int mx, int my, uint8_t out[8]) {
  const Macroblock* left = map.at(mx - 1, my);
  const Macroblock* up = map.at(mx, my - 1);
  for (int k = 0; k < 4; k++) {
    out[k] = !left ? 255 : left->type == MbType::I4x4 ? left->i4_mode[GVC_T(kBlkIdx)[k][3]] : 2;
    out[4 + k] = !up ? 255 : up->type == MbType::I4x4 ? up->i4_mode[GVC_T(kBlkIdx)[3][k]] : 2;
  }
}

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

// The stand-in for the macroblock of slice `slice` that an I slice's pass of the search chose
// `p` for: Intra_4x4 with its modes where that wins (as decide_mb decides an I slice's
// macroblock), else Intra_16x16.
GVC_HD void make_stand_in_from(Macroblock& m, uint16_t slice, const MbIntraPrep& p) {
  m.type = p.i4_cost < p.i16_cost ? MbType::I4x4 : MbType::I16x16;
  for (int i = 0; i < 16; i++) m.i4_mode[i] = p.i4_mode[i];
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

// The intra search of macroblock (a.mx, a.my) with a.map a stand-in map (make_stand_in,
// make_stand_in_from).
GVC_HD void prepare_intra(const MbAnalysis& a, IntraPrepScratch& s, MbIntraPrep& out) {
  const MbPixels px = mb_source(a);
  i4_edge_modes(a.map, a.mx, a.my, out.edge_modes);
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

// Whether prepare_intra's result `p` is the search's for the macroblock at (mx, my) of the
// decided `map`: its neighbours give the edge modes the search ran with.
GVC_HD bool intra_prep_holds(const MbMap& map, int mx, int my, const MbIntraPrep& p) {
  uint8_t m[8];
  i4_edge_modes(map, mx, my, m);
  for (int k = 0; k < 8; k++)
    if (m[k] != p.edge_modes[k]) return false;
  return true;
}

}  // namespace gvc::h264
