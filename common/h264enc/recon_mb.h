// recon_mb.h: reconstruction of one decided macroblock (prediction, residual coding, I_PCM and P_Skip), CPU and CUDA
//
// The encoder decides every macroblock of a frame first (analyse.h: modes, partitions,
// vectors, from the source picture), then reconstructs them here in an order where the left,
// upper-left, upper and upper-right macroblocks are done before each intra macroblock (raster
// order on the CPU, a wavefront on the GPU); inter macroblocks only read the references.
// The same arithmetic runs on both, so both give the same bits: the GPU's kernels share each
// macroblock among threads (gpu/h264_recon.cu) with its per-block steps (macroblock.h's
// luma_block_levels and the like; Intra_4x4's transform and quantisation written out a sample
// per thread), checked against this code by checkgpu.
#pragma once

#include <cstdint>

#include "common/h264enc/cavlc_bits.h"
#include "common/h264enc/macroblock.h"
#include "common/h264enc/mc.h"
#include "common/h264enc/predict.h"
#include "common/util/hd.h"

namespace gvc::h264 {

// A reference picture as the reconstruction reads it (host or device memory).
struct ReconRef {
  LumaRefView luma;
  const uint8_t* chroma[2] = {};  // Cb, Cr: chroma_width x chroma_height, row stride chroma_stride
  int chroma_stride = 0, chroma_width = 0, chroma_height = 0;
};

// One frame being reconstructed (host or device memory).
struct ReconPicture {
  const uint8_t* src[3];  // source, whole macroblocks
  int src_stride[3];
  uint8_t* rec[3];        // reconstruction before the loop filter
  int rec_stride[3];
  Macroblock* mbs;        // decisions in; levels, cbp, TotalCoeff and final mb_type out
  int mb_width, mb_height;
  const ReconRef* refs;   // RefPicList0 (num_refs entries; none for an I slice)
  int num_refs;
  int qp, qpc;
  bool p_slice;
};

// Whether the 4x4 block at (bx, by) of the macroblock has its above-right samples decoded.
GVC_HD bool i4_top_right_available(const MbMap& map, int mx, int my, int bx, int by) {
  if (by == 0) {
    if (bx < 3) return map.at(mx, my - 1) != nullptr;
    return map.at(mx + 1, my - 1) != nullptr;  // in the macroblock above-right
  }
  if (bx == 3) return false;  // in the macroblock to the right: not yet decoded
  return GVC_T(kBlkIdx)[by - 1][bx + 1] < GVC_T(kBlkIdx)[by][bx];
}

// Availability of the neighbours of the Intra_4x4 block at (bx, by) for load_edge.
struct I4Neighbours {
  bool top, left, top_left, top_right;
};
GVC_HD I4Neighbours i4_neighbours(const MbMap& map, int mx, int my, int bx, int by) {
  const bool up = map.at(mx, my - 1) != nullptr, lf = map.at(mx - 1, my) != nullptr;
  I4Neighbours n;
  n.top = by > 0 || up;
  n.left = bx > 0 || lf;
  n.top_left = (bx > 0 && by > 0) || (bx > 0 ? up : by > 0 ? lf : map.at(mx - 1, my - 1) != nullptr);
  n.top_right = i4_top_right_available(map, mx, my, bx, by);
  return n;
}

// Bits of an I_PCM macroblock: mb_type, at most 7 pcm_alignment_zero_bits, 384 samples.
GVC_HD int pcm_mb_bits(bool p_slice) { return ue_bits(p_slice ? 30 : 25) + 7 + 384 * 8; }

// The prediction buffers of reconstruct_mb (the CPU's; a GPU kernel keeps its own in shared
// memory, as a thread's stack is local memory reserved for every thread the device can hold).
struct MbScratch {
  uint8_t pred[256];       // luma, stride 16 (Intra_4x4: the current block, stride 4)
  uint8_t cpred[2][64];    // Cb, Cr, stride 8
};

// An inter macroblock once its cbp is known: a P_Skip candidate with coded coefficients goes
// as P_L0_16x16 with the mvd the decision stored in mvd[0]; one without stays P_Skip.
GVC_HD void finish_skip_candidate(Macroblock& mb) {
  if (mb.type != MbType::PSkip) return;
  if (mb.cbp) {
    mb.type = MbType::PL0_16x16;
  } else {
    mb.mvd[0][0] = mb.mvd[0][1] = 0;
  }
}

// The source and reconstruction planes of `f` at macroblock (mx, my).
GVC_HD MbPixels mb_pixels(const ReconPicture& f, int mx, int my) {
  MbPixels px;
  for (int p = 0; p < 3; p++) {
    const int n = p ? 8 : 16;
    px.src[p] = f.src[p] + size_t(n * my) * f.src_stride[p] + n * mx;
    px.src_stride[p] = f.src_stride[p];
    px.rec[p] = f.rec[p] + size_t(n * my) * f.rec_stride[p] + n * mx;
    px.rec_stride[p] = f.rec_stride[p];
  }
  return px;
}

// Reconstructs macroblock (mx, my) of `f` as decided:
// - intra (Intra_16x16 or Intra_4x4 with its modes): prediction from the reconstructed
//   neighbours, residual coding; then I_PCM instead when its coded form would be longer
//   (noisy content at low QP), which is also lossless. Only intra macroblocks become I_PCM:
//   an inter macroblock's motion is what later macroblocks' mvd were computed against.
// - inter (P_L0_*, P_8x8, or P_Skip for a macroblock whose motion is P_Skip's): motion
//   compensation from refs, residual coding; a P_Skip candidate with coded coefficients is
//   sent as P_L0_16x16 with the mvd the decision stored in mvd[0], one without stays P_Skip.
GVC_HD void reconstruct_mb(const ReconPicture& f, int mx, int my, MbScratch& s) {
  Macroblock& mb = f.mbs[my * f.mb_width + mx];
  const MbMap map{f.mbs, f.mb_width, f.mb_height, int(mb.slice_id)};
  const MbPixels px = mb_pixels(f, mx, my);
  uint8_t* pred = s.pred;
  uint8_t(*cpred)[64] = s.cpred;
  // Every level of the macroblock is written here, whatever the decision left in them (a
  // device copy of the macroblocks receives only their decisions: frame_recon.h).
  if (mb.type != MbType::I16x16)
    for (int i = 0; i < 16; i++) mb.luma_dc[i] = 0;
  if (!is_intra(mb.type)) {
    for (int by = 0; by < 4; by++) {
      for (int bx = 0; bx < 4; bx++) {
        const ReconRef& ref = f.refs[mb.ref_idx[(by >> 1) * 2 + (bx >> 1)]];
        const int16_t* mv = mb.mv[4 * by + bx];
        ref.luma.predict(16 * mx + 4 * bx, 16 * my + 4 * by, 4, 4, mv, pred + 64 * by + 4 * bx, 16);
        for (int c = 0; c < 2; c++)
          mc_chroma(ref.chroma[c], ref.chroma_stride, ref.chroma_width, ref.chroma_height,
                    8 * mx + 2 * bx, 8 * my + 2 * by, 2, 2, mv, cpred[c] + 16 * by + 2 * bx, 8);
      }
    }
    mb.cbp = 0;
    code_luma16x16(px, pred, f.qp, false, mb);
    code_chroma(px, cpred, f.qpc, false, mb);
    finish_skip_candidate(mb);
    return;
  }

  const bool up = map.at(mx, my - 1) != nullptr, left = map.at(mx - 1, my) != nullptr;
  const bool up_left = map.at(mx - 1, my - 1) != nullptr;
  mb.cbp = 0;
  if (mb.type == MbType::I16x16) {
    IntraEdge e;
    load_edge(f.rec[0], f.rec_stride[0], 16 * mx, 16 * my, 16, up, left, up_left, false, e);
    predict_16x16(mb.i16_mode, e, pred);
    code_luma16x16(px, pred, f.qp, true, mb);
  } else {
    for (int blk = 0; blk < 16; blk++) {
      const int bx = GVC_T(kBlkX)[blk], by = GVC_T(kBlkY)[blk];
      const I4Neighbours n = i4_neighbours(map, mx, my, bx, by);
      IntraEdge e;
      load_edge(f.rec[0], f.rec_stride[0], 16 * mx + 4 * bx, 16 * my + 4 * by, 4, n.top, n.left,
                n.top_left, n.top_right, e);
      predict_4x4(mb.i4_mode[blk], e, pred);
      code_luma4x4(px, blk, pred, f.qp, mb);
      if (mb.total_coeff_luma[blk]) mb.cbp |= 1 << (blk >> 2);
    }
  }
  for (int c = 0; c < 2; c++) {
    IntraEdge ce;
    load_edge(f.rec[1 + c], f.rec_stride[1 + c], 8 * mx, 8 * my, 8, up, left, up_left, false, ce);
    predict_chroma8x8(mb.chroma_mode, ce, cpred[c]);
  }
  code_chroma(px, cpred, f.qpc, true, mb);
  // (the bound spares the exact count where the macroblock is far from I_PCM's length)
  const int pcm_bits = pcm_mb_bits(f.p_slice);
  if (intra_mb_bits_bound(mb, f.p_slice) > pcm_bits && intra_mb_bits(map, mx, my, f.p_slice) > pcm_bits) {
    mb.type = MbType::IPcm;
    code_pcm(px, mb);
  }
}

}  // namespace gvc::h264
