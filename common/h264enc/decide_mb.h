// decide_mb.h: the decision of one macroblock (intra against inter) and its mvd and P_Skip syntax, for the CPU and CUDA
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "common/h264enc/analyse.h"
#include "common/h264enc/analyse_inter.h"
#include "common/h264enc/analyse_intra.h"
#include "common/h264enc/intra_prep.h"
#include "common/h264enc/mvpred.h"

namespace gvc::h264 {

// Writes the choice `c` (type, sub_mb_type, refIdxL0, mvL0) into mb; mvd_l0 and P_Skip come
// from finish_mb_syntax.
GVC_HD void decide_inter(const InterChoice& c, Macroblock& mb) {
  mb.type = c.type;
  mb.cbp = 0;
  for (int i = 0; i < 4; i++) {
    mb.ref_idx[i] = c.motion.ref_idx[i];
    mb.sub_mb_type[i] = c.sub_mb_type[i];
  }
  for (int i = 0; i < 16; i++) {
    mb.mv[i][0] = c.motion.mv[i][0];
    mb.mv[i][1] = c.motion.mv[i][1];
    mb.mvd[i][0] = mb.mvd[i][1] = 0;
  }
}

// Sets the decision's fields of mb (those before total_coeff_luma: frame_recon.h
// kDecisionBytes) to a default Macroblock's; the others are the reconstruction's, which writes
// every one of them (recon_mb.h), and are left as they are: resetting the whole macroblock
// (1.4 kB) took about a tenth of the decision's time.
GVC_HD void clear_decision(Macroblock& mb) {
  mb.type = MbType::I16x16;
  mb.slice_id = 0;
  mb.i16_mode = 0;
  mb.chroma_mode = 0;
  mb.cbp = 0;
  for (int i = 0; i < 4; i++) {
    mb.ref_idx[i] = -1;
    mb.sub_mb_type[i] = 0;
  }
  for (int i = 0; i < 16; i++) {
    mb.i4_mode[i] = 0;
    mb.mv[i][0] = mb.mv[i][1] = 0;
    mb.mvd[i][0] = mb.mvd[i][1] = 0;
  }
}

#if (defined(__x86_64__) || defined(__i386__)) && !defined(__CUDACC__)
namespace decide_detail {

// Prefetches the cache lines of the `bytes` bytes at p. An asm statement, not
// __builtin_prefetch: GCC takes a function or a loop doing nothing but prefetches for one
// without effects, and deletes it.
inline void prefetch_lines(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t i = 0; i < bytes; i += 64) asm volatile("prefetcht0 %0" : : "m"(c[i]));
  asm volatile("prefetcht0 %0" : : "m"(c[bytes - 1]));
}

}  // namespace decide_detail
#endif

// Asks the CPU's cache for what the decision of the next macroblock of the row will read first,
// while this one is decided: its ME results, SATD caches and prepared intra search (arrays in
// raster order, as DecideJob holds them; `prep` is this macroblock's) and its decision fields.
// On the CUDA backend they come from the GPU, not from any cache, and the wavefront's threads
// go through them too slowly for the hardware's prefetchers. A hint only: nothing changes.
GVC_HD void prefetch_next_mb(const MbAnalysis& a, const MbIntraPrep* prep) {
#if (defined(__x86_64__) || defined(__i386__)) && !defined(__CUDACC__)
  using decide_detail::prefetch_lines;
  if (a.mx + 1 >= a.map.mb_width) return;
  const size_t next = size_t(a.my) * size_t(a.map.mb_width) + size_t(a.mx) + 1;
  for (int r = 0; r < a.num_refs; r++) prefetch_lines(&a.me[r][next], sizeof(MbPartitions));
  if (a.satd && a.num_refs > 0) prefetch_lines(a.satd + a.num_refs, size_t(a.num_refs) * sizeof(MbSatdRef));
  if (prep) prefetch_lines(prep + 1, sizeof(MbIntraPrep));
  if (a.map.mbs) prefetch_lines(a.map.mbs + next, offsetof(Macroblock, total_coeff_luma));
#else
  (void)a, (void)prep;
#endif
}

// Chooses the coding of the macroblock at (a.mx, a.my) (mb_type, intra modes, partitions,
// references and vectors), writing into `mb` (which a.map.at(mx, my) must point to); no
// residual yet: recon_mb.h codes and reconstructs it. Intra modes are chosen on the source
// picture (its samples stand in for the reconstructed neighbours the decoder predicts from),
// so that every decision of a frame is made before any macroblock is reconstructed; the exact
// mvpL0 of inter partitions comes from the macroblocks decided before, in decoding order (so
// the macroblocks of a frame are decided in a wavefront: (x, y) after (x + 1, y - 1)).
// `prep`, if not null, is the macroblock's prepare_intra result (intra_prep.h), used where it
// holds; the decision is the same with it or without.
GVC_HD void decide_mb(const MbAnalysis& a, Macroblock& mb, const MbIntraPrep* prep = nullptr) {
  prefetch_next_mb(a, prep);
  const MbPixels px = mb_source(a);
  clear_decision(mb);
  mb.slice_id = uint16_t(a.map.slice < 0 ? 0 : a.map.slice);
  const bool p_slice = a.num_refs > 0;
  if (prep && !intra_prep_holds(a.map, a.mx, a.my, *prep)) prep = nullptr;
  int i16_mode = kI16Dc;
  const int i16_cost = prep ? prep->i16_cost : i16_mb_cost(choose_i16(a, px, &i16_mode), a.lambda, p_slice);
  if (prep) i16_mode = prep->i16_mode;
  InterChoice inter;
  inter.cost = INT_MAX;
  if (p_slice) choose_inter(a, px, inter);
  // Intra_4x4 wins only with a cost below i16_cost and not above inter.cost (the order of the
  // tests below); choose_i4 stops as soon as it cannot (prepare_intra only at i16_cost, which
  // gives the same decision: a cost it did not stop at passes inter.cost all the same).
  int i4 = INT_MAX;
  if (prep) {
    i4 = prep->i4_cost;
    for (int i = 0; i < 16; i++) mb.i4_mode[i] = prep->i4_mode[i];
  } else if (a.flags.intra4x4) {
    uint8_t window[kI4WindowBytes];
    const int blocks = choose_i4(a, px, mb, i16_cost, inter.cost, window);
    if (blocks != INT_MAX) i4 = i4_cost(blocks, a.lambda, p_slice);
  }
  if (inter.cost < i16_cost && inter.cost < i4) {
    for (int i = 0; i < 16; i++) mb.i4_mode[i] = 0;
    decide_inter(inter, mb);
    return;
  }
  if (i16_cost <= i4) {
    mb.type = MbType::I16x16;
    mb.i16_mode = uint8_t(i16_mode);
    for (int i = 0; i < 16; i++) mb.i4_mode[i] = 0;
  } else {
    mb.type = MbType::I4x4;
  }
  mb.chroma_mode = uint8_t(prep ? prep->chroma_mode : choose_chroma(a, px));
}

// The syntax of the decided inter macroblock at (mx, my) that its neighbours' motion sets (all
// decided in `map`): the mvd_l0 of each partition against its mvpL0 (8.4.1.3), and P_Skip: a
// P_L0_16x16 decision with P_Skip's motion (8.4.1.1) becomes a P_Skip candidate (recon_mb.h)
// with its P_L0_16x16 mvd in mvd[0], and a P_Skip decision whose vector is not P_Skip's would
// be sent as P_L0_16x16. Changes no motion. Intra macroblocks are left as they are.
GVC_HD void finish_mb_syntax(const MbMap& map, int mx, int my, Macroblock& mb) {
  if (is_intra(mb.type)) return;
  int16_t skip_mv[2];
  predict_mv_skip(map, mx, my, skip_mv);
  const bool one_part = mb.type == MbType::PSkip || mb.type == MbType::PL0_16x16;
  const bool skip_motion = one_part && mb.ref_idx[0] == 0 && mb.mv[0][0] == skip_mv[0] && mb.mv[0][1] == skip_mv[1];
  if (mb.type == MbType::PSkip) mb.type = MbType::PL0_16x16;
  // mvd_l0 of every (sub-)partition in decoding order, each against the mvpL0 of the
  // partitions before it.
  MotionState st;
  const MvContext ctx{&map, mx, my, &st};
  for (int i = 0; i < 16; i++) mb.mvd[i][0] = mb.mvd[i][1] = 0;
  auto part = [&](int x, int y, int w, int h) {
    const int ref = mb.ref_idx[(y >> 1) * 2 + (x >> 1)];
    int16_t mvp[2];
    predict_mv(ctx, x, y, w, h, ref, mvp);
    const int16_t* mv = mb.mv[4 * y + x];
    mb.mvd[4 * y + x][0] = int16_t(mv[0] - mvp[0]);
    mb.mvd[4 * y + x][1] = int16_t(mv[1] - mvp[1]);
    st.set(x, y, w, h, ref, mv[0], mv[1]);
  };
  for (int i = 0; i < num_mb_part(mb.type); i++) {
    int x, y, w, h;
    partition_rect(mb.type, i, &x, &y, &w, &h);
    if (mb.type != MbType::P8x8) {
      part(x, y, w, h);
      continue;
    }
    for (int j = 0; j < num_sub_mb_part(mb.sub_mb_type[i]); j++) {
      int sx, sy, sw, sh;
      sub_partition_rect(mb.sub_mb_type[i], j, &sx, &sy, &sw, &sh);
      part(x + sx, y + sy, sw, sh);
    }
  }
  if (skip_motion) mb.type = MbType::PSkip;  // a candidate: recon_mb.h decides
}

}  // namespace gvc::h264
