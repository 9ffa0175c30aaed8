// cavlc_bits.h: CAVLC neighbour contexts (nC, predicted Intra_4x4 mode), residual blocks as bit strings and code lengths, shared by CPU and CUDA
//
// The reconstruction stage (recon_mb.h) needs the exact length of an intra macroblock's
// macroblock_layer() to choose I_PCM, on the GPU as on the CPU; the writer (cavlc.cpp) uses
// the same contexts.
#pragma once

#include <cstdint>

#include "common/h264enc/macroblock.h"
#include "common/h264enc/pixel.h"
#include "common/h264enc/tables.h"
#include "common/util/hd.h"

namespace gvc::h264 {

// Length of ue(v) and se(v) (9.1).
GVC_HD int ue_bits(uint32_t v) {
  int n = 0;
  for (uint32_t x = v + 1; x > 1; x >>= 1) n++;
  return 2 * n + 1;
}
GVC_HD int se_bits(int v) { return ue_bits(v > 0 ? uint32_t(2 * v - 1) : uint32_t(-2 * v)); }

GVC_HD int combine_nc(bool a_avail, int na, bool b_avail, int nb) {
  if (a_avail && b_avail) return (na + nb + 1) >> 1;
  if (a_avail) return na;
  if (b_avail) return nb;
  return 0;
}

// TotalCoeff of a neighbouring macroblock's block for nA / nB: P_Skip has none, I_PCM 16.
GVC_HD int nz_luma(const Macroblock& m, int blk) {
  if (m.type == MbType::PSkip) return 0;
  if (m.type == MbType::IPcm) return 16;
  return m.total_coeff_luma[blk];
}

GVC_HD int nz_chroma(const Macroblock& m, int c, int blk) {
  if (m.type == MbType::PSkip) return 0;
  if (m.type == MbType::IPcm) return 16;
  return m.total_coeff_chroma[c][blk];
}

// nC of luma block `blk` (chroma: chroma AC block `blk` of component c) of the macroblock at
// (mx, my), from blocks of already coded macroblocks of the same slice (9.2.1).
GVC_HD int luma_nc(const MbMap& map, int mx, int my, int blk) {
  const Macroblock& cur = *map.at(mx, my);
  int bx = GVC_T(kBlkX)[blk], by = GVC_T(kBlkY)[blk];
  const Macroblock* a = bx ? &cur : map.at(mx - 1, my);
  const Macroblock* b = by ? &cur : map.at(mx, my - 1);
  int na = a ? nz_luma(*a, GVC_T(kBlkIdx)[by][(bx + 3) & 3]) : 0;
  int nb = b ? nz_luma(*b, GVC_T(kBlkIdx)[(by + 3) & 3][bx]) : 0;
  return combine_nc(a != nullptr, na, b != nullptr, nb);
}

GVC_HD int chroma_nc(const MbMap& map, int mx, int my, int c, int blk) {
  const Macroblock& cur = *map.at(mx, my);
  int bx = blk & 1, by = blk >> 1;
  const Macroblock* a = bx ? &cur : map.at(mx - 1, my);
  const Macroblock* b = by ? &cur : map.at(mx, my - 1);
  int na = a ? nz_chroma(*a, c, by * 2 + (bx ^ 1)) : 0;
  int nb = b ? nz_chroma(*b, c, (by ^ 1) * 2 + bx) : 0;
  return combine_nc(a != nullptr, na, b != nullptr, nb);
}

// predIntra4x4PredMode of block `blk` (8.3.1.1) of `cur`, the macroblock at (mx, my): its own
// modes so far are read from `cur`, which need not be the map's copy, the neighbours' from `map`.
GVC_HD int predict_i4_mode(const MbMap& map, const Macroblock& cur, int mx, int my, int blk) {
  int bx = GVC_T(kBlkX)[blk], by = GVC_T(kBlkY)[blk];
  const Macroblock* a = bx ? &cur : map.at(mx - 1, my);
  const Macroblock* b = by ? &cur : map.at(mx, my - 1);
  if (!a || !b) return 2;  // dcPredModePredictedFlag
  // A neighbour that is not Intra_4x4 counts as Intra_4x4_DC (no constrained intra pred).
  int ma = a->type == MbType::I4x4 ? a->i4_mode[GVC_T(kBlkIdx)[by][(bx + 3) & 3]] : 2;
  int mb = b->type == MbType::I4x4 ? b->i4_mode[GVC_T(kBlkIdx)[(by + 3) & 3][bx]] : 2;
  return ma < mb ? ma : mb;
}
GVC_HD int predict_i4_mode(const MbMap& map, int mx, int my, int blk) {
  return predict_i4_mode(map, *map.at(mx, my), mx, my, blk);
}

// Bits of the I4x4 prediction mode syntax: 1 when it equals the predicted mode, else 4.
GVC_HD int i4_mode_bits(int mode, int pred) { return mode == pred ? 1 : 4; }

// Most significant bit first into words[0, capacity); a string longer than the capacity
// keeps counting its length but stores nothing more (overflowed(); capacity 0: a count alone).
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

// level_prefix and level_suffix of levelCode with suffixLength (9.2.2.1): the prefix's zeros,
// then a one, then suffix_size bits of suffix (suffix < 4096: |level| <= kMaxLevel, transform.h).
struct LevelCode {
  int prefix, suffix_size, suffix;
};
GVC_HD LevelCode level_code_parts(int level_code, int suffix_length) {
  if (suffix_length == 0) {
    if (level_code < 14) return {level_code, 0, 0};
    if (level_code < 30) return {14, 4, level_code - 14};
    return {15, 12, level_code - 30};
  }
  if (level_code < (15 << suffix_length))
    return {level_code >> suffix_length, suffix_length, level_code & ((1 << suffix_length) - 1)};
  return {15, 12, level_code - (15 << suffix_length)};
}

GVC_HD void put_level_code(MbBitString& out, int level_code, int suffix_length) {
  const LevelCode c = level_code_parts(level_code, suffix_length);
  out.put(c.prefix, 0);
  out.put(1, 1);
  out.put(c.suffix_size, uint32_t(c.suffix));
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

// Length of residual_block_cavlc() of `max_num_coeff` levels in scan order with nC `nc`
// (-1: chroma DC), exactly as write_residual_block writes it: put_residual_block's, counted.
GVC_HD int residual_block_bits(const int16_t* levels, int max_num_coeff, int nc) {
  MbBitString count(nullptr, 0);
  put_residual_block(count, levels, max_num_coeff, nc);
  return count.length();
}

// Length of macroblock_layer() of the coded Intra_16x16 or Intra_4x4 macroblock at (mx, my)
// (map.at(mx, my), its coded left and upper neighbours in `map`), as write_macroblock writes
// it, in kIntraMbBitParts parts that add up to it (a GPU thread each): part 0 the header
// (mb_type, chroma mode, coded_block_pattern, mb_qp_delta) and Intra_16x16's DC levels; part
// 1 + blk luma block blk (its Intra_4x4 mode and levels); parts 17 and 18 the chroma DC
// levels; 19 + 4 * c + blk chroma AC block blk of component c.
constexpr int kIntraMbBitParts = 27;
// mb_type of a coded macroblock (Tables 7-11 and 7-13: intra types follow the 5 P types in a P
// slice); P_Skip has none (0 here).
GVC_HD uint32_t mb_type_value(const Macroblock& mb, bool p_slice) {
  const uint32_t intra_offset = p_slice ? 5 : 0;
  const int cbp_luma = mb.cbp & 15, cbp_chroma = mb.cbp >> 4;
  switch (mb.type) {
    case MbType::I16x16:
      return intra_offset + 1 + mb.i16_mode + 4 * uint32_t(cbp_chroma) + (cbp_luma ? 12 : 0);
    case MbType::I4x4:
      return intra_offset;
    case MbType::IPcm:
      return intra_offset + 25;
    case MbType::PL0_16x8:
      return 1;
    case MbType::PL0_8x16:
      return 2;
    case MbType::P8x8:
      return 3;
    default:  // P_L0_16x16, P_Skip
      return 0;
  }
}

// mb_type, intra_chroma_pred_mode, coded_block_pattern and mb_qp_delta of a coded Intra_16x16
// or Intra_4x4 macroblock.
GVC_HD int intra_mb_header_bits(const Macroblock& mb, bool p_slice) {
  const int cbp_luma = mb.cbp & 15, cbp_chroma = mb.cbp >> 4;
  const bool i16 = mb.type == MbType::I16x16;
  int bits = ue_bits(mb_type_value(mb, p_slice));
  bits += ue_bits(mb.chroma_mode);
  if (!i16) bits += ue_bits(GVC_T(kCbpToCodeNum)[0][mb.cbp & 0x3f]);
  if (cbp_luma == 0 && cbp_chroma == 0 && !i16) return bits;
  return bits + 1;  // mb_qp_delta se(0)
}

GVC_HD int intra_mb_bits_part(const MbMap& map, int mx, int my, bool p_slice, int part) {
  const Macroblock& mb = *map.at(mx, my);
  const int cbp_luma = mb.cbp & 15, cbp_chroma = mb.cbp >> 4;
  const bool i16 = mb.type == MbType::I16x16;
  if (part == 0)
    return intra_mb_header_bits(mb, p_slice) + (i16 ? residual_block_bits(mb.luma_dc, 16, luma_nc(map, mx, my, 0)) : 0);
  if (part <= 16) {
    const int blk = part - 1;
    if (i16) return cbp_luma ? residual_block_bits(mb.luma[blk] + 1, 15, luma_nc(map, mx, my, blk)) : 0;
    int bits = i4_mode_bits(mb.i4_mode[blk], predict_i4_mode(map, mx, my, blk));
    if (cbp_luma & (1 << (blk >> 2))) bits += residual_block_bits(mb.luma[blk], 16, luma_nc(map, mx, my, blk));
    return bits;
  }
  if (part <= 18) return cbp_chroma ? residual_block_bits(mb.chroma_dc[part - 17], 4, -1) : 0;
  const int c = (part - 19) >> 2, blk = (part - 19) & 3;
  return (cbp_chroma & 2) ? residual_block_bits(mb.chroma_ac[c][blk] + 1, 15, chroma_nc(map, mx, my, c, blk)) : 0;
}
GVC_HD int intra_mb_bits(const MbMap& map, int mx, int my, bool p_slice) {
  int bits = 0;
  for (int part = 0; part < kIntraMbBitParts; part++) bits += intra_mb_bits_part(map, mx, my, p_slice, part);
  return bits;
}

// An upper bound of residual_block_bits(levels, max_num_coeff, nc) for every nC, from the levels
// alone, to spare the exact count where a macroblock is far from I_PCM's length:
// - the longest coeff_token and total_zeros codes for its TotalCoeff (kTokenZerosMaxLen);
// - a level of magnitude 7 or more, 28 bits (the longest escape);
// - a smaller one (whose level_code is below 14, so never escaped), at most |level| +
//   suffixLength bits, or 2 |level| for the one level coded with suffixLength 0; suffixLength
//   goes from 1 to 2 after a level above 3, and further only after a level above 6 (9.2.2.1);
// - each run_before code at most max(3, run_before - 3) bits (Table 9-10: beyond 6 only when
//   zerosLeft is above 6), so all of them at most 3 (TotalCoeff - 1) + total_zeros.
GVC_HD int residual_block_bits_bound(const int16_t* levels, int max_num_coeff) {
  const bool chroma_dc = max_num_coeff == 4;
  int total_coeff = 0, last = -1, above3 = 0, wide = 0, small_sum = 0, small_max = 0;
  for (int i = 0; i < max_num_coeff; i++) {
    const int a = iabs(levels[i]);
    if (!a) continue;
    total_coeff++;
    last = i;
    above3 += a > 3;
    if (a >= 7) {
      wide++;
    } else {
      small_sum += a;
      small_max = a > small_max ? a : small_max;
    }
  }
  const int fixed = chroma_dc ? GVC_T(kTokenZerosMaxLenChromaDc)[total_coeff] : GVC_T(kTokenZerosMaxLen)[total_coeff];
  if (!total_coeff) return fixed;
  const int suffix_length = 1 + (above3 ? 1 : 0) + wide < 6 ? 1 + (above3 ? 1 : 0) + wide : 6;
  const int level_bits = 28 * wide + small_sum + small_max + suffix_length * (total_coeff - wide);
  const int total_zeros = last + 1 - total_coeff;
  return fixed + level_bits + 3 * (total_coeff - 1) + total_zeros;
}

// An upper bound of intra_mb_bits_part from the macroblock alone (no neighbour's nC or
// Intra_4x4 mode: residual_block_bits_bound, 4 bits a mode), the same parts.
GVC_HD int intra_mb_bits_bound_part(const Macroblock& mb, bool p_slice, int part) {
  const int cbp_luma = mb.cbp & 15, cbp_chroma = mb.cbp >> 4;
  const bool i16 = mb.type == MbType::I16x16;
  if (part == 0) return intra_mb_header_bits(mb, p_slice) + (i16 ? residual_block_bits_bound(mb.luma_dc, 16) : 0);
  if (part <= 16) {
    const int blk = part - 1;
    if (i16) return cbp_luma ? residual_block_bits_bound(mb.luma[blk] + 1, 15) : 0;
    return 4 + ((cbp_luma & (1 << (blk >> 2))) ? residual_block_bits_bound(mb.luma[blk], 16) : 0);
  }
  if (part <= 18) return cbp_chroma ? residual_block_bits_bound(mb.chroma_dc[part - 17], 4) : 0;
  const int c = (part - 19) >> 2, blk = (part - 19) & 3;
  return (cbp_chroma & 2) ? residual_block_bits_bound(mb.chroma_ac[c][blk] + 1, 15) : 0;
}
GVC_HD int intra_mb_bits_bound(const Macroblock& mb, bool p_slice) {
  int bits = 0;
  for (int part = 0; part < kIntraMbBitParts; part++) bits += intra_mb_bits_bound_part(mb, p_slice, part);
  return bits;
}

}  // namespace gvc::h264
