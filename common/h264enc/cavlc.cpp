// cavlc.cpp: CAVLC residual blocks (9.2) and the macroblock layer of CAVLC slices (7.3.5)
#include "common/h264enc/cavlc.h"

#include <cstdlib>

#include "common/h264enc/tables.h"

namespace gvc::h264 {

static inline void put_vlc(BitWriter& bw, const Vlc& v) { bw.put_bits(v.len, v.bits); }

// level_prefix / level_suffix of one levelCode with the current suffixLength (9.2.2.1).
static void write_level_code(BitWriter& bw, int level_code, int suffix_length) {
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
  // suffix < 4096 holds because |level| <= kMaxLevel (transform.h).
  bw.put_bits(prefix, 0);
  bw.put_bit(1);
  if (suffix_size) bw.put_bits(suffix_size, uint32_t(suffix));
}

int write_residual_block(BitWriter& bw, const int16_t* levels, int max_num_coeff, int nc) {
  // Non-zero levels from the highest frequency down, and the zeros before each of them.
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
  while (trailing_ones < total_coeff && trailing_ones < 3 && std::abs(level[trailing_ones]) == 1)
    trailing_ones++;

  int token = 4 * total_coeff + trailing_ones;
  if (nc < 0)
    put_vlc(bw, kCoeffTokenChromaDc[token]);
  else
    put_vlc(bw, kCoeffToken[nc < 2 ? 0 : nc < 4 ? 1 : nc < 8 ? 2 : 3][token]);
  if (!total_coeff) return 0;

  for (int i = 0; i < trailing_ones; i++) bw.put_bit(level[i] < 0);  // trailing_ones_sign_flag
  int suffix_length = (total_coeff > 10 && trailing_ones < 3) ? 1 : 0;
  for (int i = trailing_ones; i < total_coeff; i++) {
    int v = level[i];
    int level_code = v > 0 ? 2 * v - 2 : -2 * v - 1;
    if (i == trailing_ones && trailing_ones < 3) level_code -= 2;
    write_level_code(bw, level_code, suffix_length);
    if (suffix_length == 0) suffix_length = 1;
    if (std::abs(v) > (3 << (suffix_length - 1)) && suffix_length < 6) suffix_length++;
  }

  if (total_coeff < max_num_coeff) {
    // total_zeros: zeros before the last non-zero level in scan order
    int total_zeros = last + 1 - total_coeff;
    if (max_num_coeff == 4)
      put_vlc(bw, kTotalZerosChromaDc[total_coeff - 1][total_zeros]);
    else
      put_vlc(bw, kTotalZeros[total_coeff - 1][total_zeros]);
    int zeros_left = total_zeros;
    for (int i = 0; i < total_coeff - 1 && zeros_left > 0; i++) {
      put_vlc(bw, kRunBefore[(zeros_left < 7 ? zeros_left : 7) - 1][run[i]]);
      zeros_left -= run[i];
    }
  }
  return total_coeff;
}

// te(v) of ref_idx_l0 with cMax = num_ref_idx_l0_active - 1 (9.1.2): one inverted bit when
// cMax is 1, else ue(v).
static void put_ref_idx(BitWriter& bw, int ref_idx, int num_ref_idx_active) {
  if (num_ref_idx_active == 2)
    bw.put_bit(!ref_idx);
  else
    bw.put_ue(uint32_t(ref_idx));
}

// Position (4x4-block units) and size of mbPartIdx `part` of a P macroblock type, or of
// subMbPartIdx `part` of sub_mb_type `sub` (Tables 7-13, 7-17).
static void put_mvd(BitWriter& bw, const Macroblock& mb, int x, int y) {
  bw.put_se(mb.mvd[4 * y + x][0]);  // mvd_l0[][][0]
  bw.put_se(mb.mvd[4 * y + x][1]);  // mvd_l0[][][1]
}

void write_macroblock(BitWriter& bw, const MbMap& map, int mx, int my, bool p_slice,
                      int num_ref_idx_active) {
  const Macroblock& mb = *map.at(mx, my);
  int intra_offset = p_slice ? 5 : 0;  // mb_type of intra macroblocks in P slices (Table 7-13)
  int cbp_luma = mb.cbp & 15, cbp_chroma = mb.cbp >> 4;
  switch (mb.type) {
    case MbType::IPcm:
      bw.put_ue(uint32_t(intra_offset + 25));
      bw.align_zero();  // pcm_alignment_zero_bit
      for (int i = 0; i < 384; i++) bw.put_bits(8, mb.pcm[i]);
      return;
    case MbType::I16x16:
      bw.put_ue(uint32_t(intra_offset + 1 + mb.i16_mode + 4 * cbp_chroma + (cbp_luma ? 12 : 0)));
      break;
    case MbType::I4x4:
      bw.put_ue(uint32_t(intra_offset));
      break;
    case MbType::PL0_16x16:
      bw.put_ue(0);
      break;
    case MbType::PL0_16x8:
      bw.put_ue(1);
      break;
    case MbType::PL0_8x16:
      bw.put_ue(2);
      break;
    case MbType::P8x8:
      bw.put_ue(3);
      break;
    case MbType::PSkip:
      return;  // coded as part of mb_skip_run
  }

  if (mb.type == MbType::I4x4) {
    for (int blk = 0; blk < 16; blk++) {
      int pred = predict_i4_mode(map, mx, my, blk);
      int mode = mb.i4_mode[blk];
      bw.put_bit(mode == pred);  // prev_intra4x4_pred_mode_flag
      if (mode != pred) bw.put_bits(3, uint32_t(mode < pred ? mode : mode - 1));
    }
  }
  if (is_intra(mb.type)) {
    bw.put_ue(mb.chroma_mode);
  } else if (mb.type == MbType::P8x8) {
    // sub_mb_pred() (7.3.5.2)
    for (int i = 0; i < 4; i++) bw.put_ue(mb.sub_mb_type[i]);
    if (num_ref_idx_active > 1)
      for (int i = 0; i < 4; i++) put_ref_idx(bw, mb.ref_idx[i], num_ref_idx_active);
    for (int i = 0; i < 4; i++) {
      for (int j = 0; j < num_sub_mb_part(mb.sub_mb_type[i]); j++) {
        int x, y, w, h;
        sub_partition_rect(mb.sub_mb_type[i], j, &x, &y, &w, &h);
        put_mvd(bw, mb, 2 * (i & 1) + x, 2 * (i >> 1) + y);
      }
    }
  } else {
    // mb_pred() (7.3.5.1)
    const int parts = num_mb_part(mb.type);
    int x[2], y[2], w, h;
    for (int i = 0; i < parts; i++) partition_rect(mb.type, i, &x[i], &y[i], &w, &h);
    if (num_ref_idx_active > 1)
      for (int i = 0; i < parts; i++)
        put_ref_idx(bw, mb.ref_idx[(y[i] >> 1) * 2 + (x[i] >> 1)], num_ref_idx_active);
    for (int i = 0; i < parts; i++) put_mvd(bw, mb, x[i], y[i]);
  }
  if (mb.type != MbType::I16x16) bw.put_ue(kCbpToCodeNum[is_intra(mb.type) ? 0 : 1][mb.cbp & 0x3f]);
  if (cbp_luma == 0 && cbp_chroma == 0 && mb.type != MbType::I16x16) return;

  bw.put_se(0);  // mb_qp_delta: constant QP
  if (mb.type == MbType::I16x16) {
    write_residual_block(bw, mb.luma_dc, 16, luma_nc(map, mx, my, 0));
    if (cbp_luma)
      for (int blk = 0; blk < 16; blk++)
        write_residual_block(bw, mb.luma[blk] + 1, 15, luma_nc(map, mx, my, blk));
  } else {
    for (int blk = 0; blk < 16; blk++)
      if (cbp_luma & (1 << (blk >> 2)))
        write_residual_block(bw, mb.luma[blk], 16, luma_nc(map, mx, my, blk));
  }
  if (cbp_chroma) {
    for (int c = 0; c < 2; c++) write_residual_block(bw, mb.chroma_dc[c], 4, -1);
  }
  if (cbp_chroma & 2) {
    for (int c = 0; c < 2; c++)
      for (int blk = 0; blk < 4; blk++)
        write_residual_block(bw, mb.chroma_ac[c][blk] + 1, 15, chroma_nc(map, mx, my, c, blk));
  }
}

}  // namespace gvc::h264
