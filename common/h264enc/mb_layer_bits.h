// mb_layer_bits.h: macroblock_layer() of a CAVLC slice (7.3.5, 9.2) into a bit string of fixed capacity, shared by CPU and CUDA
//
// The bits write_macroblock (cavlc.cpp) writes for the same macroblock, with the same
// neighbour contexts (cavlc_bits.h), from code a GPU thread can run: the reconstruction, which
// holds every macroblock's levels and those of its neighbours, can hand the host the coded
// macroblocks' bits instead of their levels. I_PCM macroblocks are left out (their
// pcm_alignment_zero_bits depend on where the macroblock lands in the slice). The CPU's writer
// keeps its own, faster code (SSE masks, precomputed run codes); residual_block_bits
// (cavlc_bits.h) counts what put_residual_block writes. cavlc_test.cpp holds all three to the
// same bits.
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

// Most significant bit first into words[0, capacity); a string longer than the capacity
// keeps counting its length but stores nothing more (overflowed()).
class MbBitString {
 public:
  GVC_HD MbBitString(uint32_t* words, int capacity_words) : words_(words), capacity_(capacity_words) {}
  // The n (0..32) low bits of `value`, which has no others set.
  GVC_HD void put(int n, uint32_t value) {
    if (n == 0) return;
    acc_ = acc_ << n | value;
    fill_ += n;
    len_ += n;
    if (fill_ >= 32) {
      fill_ -= 32;
      store(uint32_t(acc_ >> fill_));
    }
  }
  GVC_HD void put_ue(uint32_t v) {  // ue(v) (9.1)
    const uint32_t code = v + 1;
    int n = 0;
    for (uint32_t c = code; c > 1; c >>= 1) n++;
    put(n, 0);
    put(n + 1, code);
  }
  GVC_HD void put_se(int v) { put_ue(v > 0 ? uint32_t(2 * v - 1) : uint32_t(-2 * v)); }
  // The last bits into the last word (left-aligned, zeros after them). Returns the length.
  GVC_HD int finish() {
    if (fill_ > 0) store(uint32_t(acc_ << (32 - fill_)));
    fill_ = 0;
    return len_;
  }
  GVC_HD int length() const { return len_; }
  GVC_HD bool overflowed() const { return len_ > 32 * capacity_; }

 private:
  GVC_HD void store(uint32_t w) {
    if (stored_ < capacity_) words_[stored_] = w;
    stored_++;
  }
  uint32_t* words_;
  int capacity_;
  int stored_ = 0;
  uint64_t acc_ = 0;  // the low fill_ bits not stored yet (the bits above them are stale)
  int fill_ = 0;
  int len_ = 0;
};

// level_prefix, its stop bit and level_suffix of levelCode with suffixLength (9.2.2.1).
GVC_HD void put_level_code(MbBitString& out, int level_code, int suffix_length) {
  int prefix, suffix_size, suffix;
  if (suffix_length == 0) {
    if (level_code < 14) {
      prefix = level_code, suffix_size = 0, suffix = 0;
    } else if (level_code < 30) {
      prefix = 14, suffix_size = 4, suffix = level_code - 14;
    } else {
      prefix = 15, suffix_size = 12, suffix = level_code - 30;
    }
  } else if (level_code < (15 << suffix_length)) {
    prefix = level_code >> suffix_length;
    suffix_size = suffix_length;
    suffix = level_code & ((1 << suffix_length) - 1);
  } else {
    prefix = 15, suffix_size = 12, suffix = level_code - (15 << suffix_length);
  }
  out.put(prefix, 0);
  out.put(1, 1);
  out.put(suffix_size, uint32_t(suffix));
}

// residual_block_cavlc() of levels[0, max_num_coeff) in scan order with nC `nc` (-1: chroma
// DC), as write_residual_block.
GVC_HD void put_residual_block(MbBitString& out, const int16_t* levels, int max_num_coeff, int nc) {
  int level[16], run[16];
  int total_coeff = 0, last = -1;
  for (int i = max_num_coeff - 1; i >= 0; i--) {
    if (levels[i]) {
      if (last < 0) last = i;
      level[total_coeff] = levels[i];
      run[total_coeff] = 0;
      total_coeff++;
    } else if (total_coeff) {
      run[total_coeff - 1]++;
    }
  }
  int trailing_ones = 0;
  while (trailing_ones < total_coeff && trailing_ones < 3 && iabs(level[trailing_ones]) == 1) trailing_ones++;
  const int token = 4 * total_coeff + trailing_ones;
  const Vlc t = nc < 0 ? GVC_T(kCoeffTokenChromaDc)[token]
                       : GVC_T(kCoeffToken)[nc < 2 ? 0 : nc < 4 ? 1 : nc < 8 ? 2 : 3][token];
  out.put(t.len, t.bits);
  if (!total_coeff) return;
  for (int i = 0; i < trailing_ones; i++) out.put(1, level[i] < 0 ? 1u : 0u);  // trailing_ones_sign_flag
  int suffix_length = (total_coeff > 10 && trailing_ones < 3) ? 1 : 0;
  for (int i = trailing_ones; i < total_coeff; i++) {
    const int v = level[i];
    int level_code = v > 0 ? 2 * v - 2 : -2 * v - 1;
    if (i == trailing_ones && trailing_ones < 3) level_code -= 2;
    put_level_code(out, level_code, suffix_length);
    if (suffix_length == 0) suffix_length = 1;
    if (iabs(v) > (3 << (suffix_length - 1)) && suffix_length < 6) suffix_length++;
  }
  if (total_coeff < max_num_coeff) {
    const int total_zeros = last + 1 - total_coeff;
    const Vlc tz = max_num_coeff == 4 ? GVC_T(kTotalZerosChromaDc)[total_coeff - 1][total_zeros]
                                      : GVC_T(kTotalZeros)[total_coeff - 1][total_zeros];
    out.put(tz.len, tz.bits);
    int zeros_left = total_zeros;
    for (int i = 0; i < total_coeff - 1 && zeros_left > 0; i++) {
      const Vlc rb = GVC_T(kRunBefore)[(zeros_left < 7 ? zeros_left : 7) - 1][run[i]];
      out.put(rb.len, rb.bits);
      zeros_left -= run[i];
    }
  }
}

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
  const int intra_offset = p_slice ? 5 : 0;  // Table 7-13
  const int cbp_luma = mb.cbp & 15, cbp_chroma = mb.cbp >> 4;
  switch (mb.type) {
    case MbType::IPcm:
      return false;
    case MbType::PSkip:
      return true;
    case MbType::I16x16:
      out.put_ue(uint32_t(intra_offset + 1 + mb.i16_mode + 4 * cbp_chroma + (cbp_luma ? 12 : 0)));
      break;
    case MbType::I4x4:
      out.put_ue(uint32_t(intra_offset));
      break;
    case MbType::PL0_16x16:
      out.put_ue(0);
      break;
    case MbType::PL0_16x8:
      out.put_ue(1);
      break;
    case MbType::PL0_8x16:
      out.put_ue(2);
      break;
    case MbType::P8x8:
      out.put_ue(3);
      break;
  }
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
