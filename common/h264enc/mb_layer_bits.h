// mb_layer_bits.h: macroblock_layer() of a CAVLC slice (7.3.5, 9.2) into a bit string of fixed capacity, shared by CPU and CUDA
//
// The bits write_macroblock (cavlc.cpp) writes for the same macroblock, with the same
// neighbour contexts (cavlc_bits.h), from code a GPU thread can run: the reconstruction, which
// holds every macroblock's levels and those of its neighbours, can hand the host the coded
// macroblocks' bits instead of their levels. I_PCM macroblocks are left out (their
// pcm_alignment_zero_bits depend on where the macroblock lands in the slice). Its residual
// blocks are cavlc_bits.h's put_residual_block. The CPU's writer keeps its own, faster code
// (SSE masks, precomputed run codes); cavlc_test.cpp holds the two to the same bits.
#pragma once

#include <cstdint>

#include "common/h264enc/cavlc_bits.h"
#include "common/h264enc/macroblock.h"
#include "common/h264enc/tables.h"
#include "common/util/hd.h"

namespace gvc::h264 {

// Every macroblock's macroblock_layer() bits of a picture, made elsewhere (the GPU's
// reconstruction): macroblock i's are the first lens[i] bits of words[i * words_per_mb, ...),
// most significant first (none for P_Skip). A picture with a macroblock they could not hold
// (I_PCM, or longer than words_per_mb words) is never handed over so.
struct MbBitsView {
  const uint32_t* words = nullptr;
  const uint16_t* lens = nullptr;
  int words_per_mb = 0;
};

// mvd_l0 of the (sub-)partition whose top-left 4x4 block is at (x, y).
GVC_HD void put_mvd(MbBitString& out, const Macroblock& mb, int x, int y) {
  out.put_se(mb.mvd[4 * y + x][0]);
  out.put_se(mb.mvd[4 * y + x][1]);
}

// te(v) of ref_idx_l0 (9.1.2): one inverted bit when cMax is 1, else ue(v).
GVC_HD void put_ref_idx(MbBitString& out, int ref_idx, int num_ref_idx_active) {
  if (num_ref_idx_active == 2)
    out.put(1, ref_idx ? 0u : 1u);
  else
    out.put_ue(uint32_t(ref_idx));
}

// macroblock_layer() of the coded macroblock at (mx, my) of an I (p_slice false) or P slice,
// as write_macroblock writes it: nothing for P_Skip (part of mb_skip_run); false for I_PCM,
// which it does not write.
GVC_HD bool put_mb_layer(MbBitString& out, const MbMap& map, int mx, int my, bool p_slice, int num_ref_idx_active) {
  const Macroblock& mb = *map.at(mx, my);
  const int cbp_luma = mb.cbp & 15, cbp_chroma = mb.cbp >> 4;
  if (mb.type == MbType::IPcm) return false;
  if (mb.type == MbType::PSkip) return true;
  out.put_ue(mb_type_value(mb, p_slice));
  if (mb.type == MbType::I4x4) {
    for (int blk = 0; blk < 16; blk++) {  // prev_intra4x4_pred_mode_flag, rem_intra4x4_pred_mode
      const int pred = predict_i4_mode(map, mb, mx, my, blk), mode = mb.i4_mode[blk];
      if (mode == pred)
        out.put(1, 1);
      else
        out.put(4, uint32_t(mode < pred ? mode : mode - 1));
    }
  }
  if (is_intra(mb.type)) {
    out.put_ue(mb.chroma_mode);
  } else if (mb.type == MbType::P8x8) {  // sub_mb_pred() (7.3.5.2)
    for (int i = 0; i < 4; i++) out.put_ue(mb.sub_mb_type[i]);
    if (num_ref_idx_active > 1)
      for (int i = 0; i < 4; i++) put_ref_idx(out, mb.ref_idx[i], num_ref_idx_active);
    for (int i = 0; i < 4; i++) {
      for (int j = 0; j < num_sub_mb_part(mb.sub_mb_type[i]); j++) {
        int x, y, w, h;
        sub_partition_rect(mb.sub_mb_type[i], j, &x, &y, &w, &h);
        put_mvd(out, mb, 2 * (i & 1) + x, 2 * (i >> 1) + y);
      }
    }
  } else {  // mb_pred() (7.3.5.1)
    const int parts = num_mb_part(mb.type);
    int x[2] = {}, y[2] = {}, w, h;
    for (int i = 0; i < parts; i++) partition_rect(mb.type, i, &x[i], &y[i], &w, &h);
    if (num_ref_idx_active > 1)
      for (int i = 0; i < parts; i++) put_ref_idx(out, mb.ref_idx[(y[i] >> 1) * 2 + (x[i] >> 1)], num_ref_idx_active);
    for (int i = 0; i < parts; i++) put_mvd(out, mb, x[i], y[i]);
  }
  if (mb.type != MbType::I16x16) out.put_ue(GVC_T(kCbpToCodeNum)[is_intra(mb.type) ? 0 : 1][mb.cbp & 0x3f]);
  if (cbp_luma == 0 && cbp_chroma == 0 && mb.type != MbType::I16x16) return true;

  out.put(1, 1);  // mb_qp_delta se(0): constant QP
  if (mb.type == MbType::I16x16) {
    put_residual_block(out, mb.luma_dc, 16, luma_nc(map, mx, my, 0));
    if (cbp_luma)
      for (int blk = 0; blk < 16; blk++) put_residual_block(out, mb.luma[blk] + 1, 15, luma_nc(map, mx, my, blk));
  } else {
    for (int blk = 0; blk < 16; blk++)
      if (cbp_luma & (1 << (blk >> 2))) put_residual_block(out, mb.luma[blk], 16, luma_nc(map, mx, my, blk));
  }
  if (cbp_chroma)
    for (int c = 0; c < 2; c++) put_residual_block(out, mb.chroma_dc[c], 4, -1);
  if (cbp_chroma & 2)
    for (int c = 0; c < 2; c++)
      for (int blk = 0; blk < 4; blk++)
        put_residual_block(out, mb.chroma_ac[c][blk] + 1, 15, chroma_nc(map, mx, my, c, blk));
  return true;
}

}  // namespace gvc::h264
