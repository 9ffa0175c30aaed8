// residual.cpp: residual_coding() (7.3.8.11) with the sig_coeff_flag and greater1 contexts (9.3.4.2.5-7)
#include "common/hevcdec/residual.h"

#include <cstring>
#include <utility>

#include "common/hevcdec/params.h"

namespace gvc::hevc {
namespace {

// The 4x4 scans of 6.5.3-6.5.5 and the sig_coeff_flag sigCtx of 9.3.4.2.5 by scan position, so
// that the coefficient loop looks its context up instead of deriving it from xC, yC.
struct SubBlockTables {
  uint8_t x[3][16] = {}, y[3][16] = {};  // [scanIdx][n] -> xP, yP
  uint8_t n_of[3][16] = {};              // [scanIdx][(yP << 2) + xP] -> n
  // [scanIdx][prevCsbf 0..3, or 4 for a 4x4 transform block (ctxIdxMap)][n] -> sigCtx before
  // the offsets for the block size, for luma sub-blocks other than the first and for chroma
  uint8_t sig_ctx[3][5][16] = {};
};

constexpr SubBlockTables make_sub_block_tables() {
  constexpr uint8_t kCtxIdxMap[16] = {0, 1, 4, 5, 2, 3, 4, 5, 6, 6, 8, 8, 7, 7, 8, 8};
  SubBlockTables t;
  int i = 0, x = 0, y = 0;
  while (i < 16) {  // 6.5.3 up-right diagonal
    for (; y >= 0; --y, ++x)
      if (x < 4 && y < 4) {
        t.x[0][i] = uint8_t(x);
        t.y[0][i] = uint8_t(y);
        ++i;
      }
    y = x;
    x = 0;
  }
  for (int k = 0; k < 16; ++k) {  // 6.5.4 horizontal, 6.5.5 vertical
    t.x[1][k] = uint8_t(k & 3);
    t.y[1][k] = uint8_t(k >> 2);
    t.x[2][k] = uint8_t(k >> 2);
    t.y[2][k] = uint8_t(k & 3);
  }
  for (int s = 0; s < 3; ++s)
    for (int n = 0; n < 16; ++n) {
      const int xp = t.x[s][n], yp = t.y[s][n];
      t.n_of[s][(yp << 2) + xp] = uint8_t(n);
      t.sig_ctx[s][0][n] = uint8_t(xp + yp == 0 ? 2 : (xp + yp < 3 ? 1 : 0));
      t.sig_ctx[s][1][n] = uint8_t(yp == 0 ? 2 : (yp == 1 ? 1 : 0));
      t.sig_ctx[s][2][n] = uint8_t(xp == 0 ? 2 : (xp == 1 ? 1 : 0));
      t.sig_ctx[s][3][n] = 2;
      t.sig_ctx[s][4][n] = kCtxIdxMap[(yp << 2) + xp];
    }
  return t;
}

constexpr SubBlockTables kSubBlock = make_sub_block_tables();

// greater1Ctx after a coeff_abs_level_greater1_flag (9.3.4.2.6), capped at 3 as ctxInc uses it:
// [flag][greater1Ctx before]
constexpr uint8_t kNextGreater1Ctx[2][4] = {{0, 2, 3, 3}, {0, 0, 0, 0}};

// 7.4.9.11 LastSignificantCoeffX/Y from the prefix (and the suffix it needs)
__attribute__((always_inline)) inline int last_sig_coeff_position(ResidualSyntax& rd, int prefix) {
  if (prefix <= 3) return prefix;
  const int suffix = rd.last_sig_coeff_suffix(prefix);
  return (1 << ((prefix >> 1) - 1)) * (2 + (prefix & 1)) + suffix;
}

}  // namespace

uint64_t residual_coding(SyntaxReader& reader, const ResidualParams& p, int16_t* coeffs,
                         bool* transform_skip_flag) {
  ResidualSyntax rd(reader);
  const int log2 = p.log2_trafo_size;
  const int size = 1 << log2;
  const int c_idx = p.c_idx;
  const int scan = p.scan_idx;

  *transform_skip_flag = false;
  if (p.transform_skip_enabled && !p.transquant_bypass && log2 <= 2)
    *transform_skip_flag = rd.transform_skip_flag(c_idx);

  const int x_prefix = rd.last_sig_coeff_prefix(false, c_idx, log2);
  const int y_prefix = rd.last_sig_coeff_prefix(true, c_idx, log2);
  int last_x = last_sig_coeff_position(rd, x_prefix);
  int last_y = last_sig_coeff_position(rd, y_prefix);
  if (scan == 2) std::swap(last_x, last_y);

  // lastSubBlock and lastScanPos: the prefix and suffix keep the position inside the block
  const int log2_sb = log2 - 2;
  const int sb_w = 1 << log2_sb;
  const ScanPos* scan_sb = scan_order(log2_sb, scan);
  int last_sub_block = (1 << (2 * log2_sb)) - 1;
  while (scan_sb[last_sub_block].x != (last_x >> 2) || scan_sb[last_sub_block].y != (last_y >> 2))
    --last_sub_block;
  const int last_scan_pos = kSubBlock.n_of[scan][((last_y & 3) << 2) + (last_x & 3)];

  const uint8_t* scan_x = kSubBlock.x[scan];
  const uint8_t* scan_y = kSubBlock.y[scan];
  // sig_coeff_flag ctxInc = sig_base (+ size_off (+ 3 for luma sub-blocks after the first))
  // + the table's sigCtx; 0 + sig_base at the DC of blocks larger than 4x4
  const int sig_base = c_idx ? 27 : 0;
  const int size_off = log2 == 3 ? (scan == 0 ? 9 : 15) : (c_idx ? 12 : 21);
  const bool hiding = p.sign_data_hiding && !p.transquant_bypass;

  uint8_t csbf[8][8];  // coded_sub_block_flag[xS][yS]
  std::memset(csbf, 0, sizeof(csbf));
  bool last_greater1_ctx_zero = false;  // of the previous sub-block with levels (9.3.4.2.6)
  uint64_t written = 0;                 // the sub-blocks given levels, bit (yS << log2_sb) + xS

  for (int i = last_sub_block; i >= 0; --i) {
    const int xs = scan_sb[i].x, ys = scan_sb[i].y;
    int prev_csbf = 0;
    if (xs < sb_w - 1) prev_csbf |= csbf[xs + 1][ys];
    if (ys < sb_w - 1) prev_csbf |= csbf[xs][ys + 1] << 1;

    uint8_t pos[16];  // scan positions n of the significant levels, in decoding order
    int n_sig = 0;
    int n = 15;
    bool infer_sb_dc_sig = false;
    if (i == last_sub_block) {
      pos[n_sig++] = uint8_t(last_scan_pos);
      n = last_scan_pos - 1;
      csbf[xs][ys] = 1;
    } else if (i > 0) {
      const int coded = rd.coded_sub_block_flag((prev_csbf ? 1 : 0) + (c_idx ? 2 : 0));
      csbf[xs][ys] = uint8_t(coded);
      if (!coded) continue;
      infer_sb_dc_sig = true;
    } else {
      csbf[xs][ys] = 1;
    }

    const uint8_t* sig_ctx;
    int ctx_off = sig_base;
    if (log2 == 2) {
      sig_ctx = kSubBlock.sig_ctx[scan][4];
    } else {
      sig_ctx = kSubBlock.sig_ctx[scan][prev_csbf];
      ctx_off += size_off + (c_idx == 0 && i > 0 ? 3 : 0);
    }
    for (; n > 0; --n) {  // written always, kept when significant: no branch on the bin
      pos[n_sig] = uint8_t(n);
      n_sig += rd.sig_coeff_flag(ctx_off + sig_ctx[n]);
    }
    if (n == 0) {
      if (infer_sb_dc_sig && n_sig == 0)
        pos[n_sig++] = 0;  // a coded sub-block's only significant level: inferred
      else if (rd.sig_coeff_flag(i == 0 ? sig_base : ctx_off + sig_ctx[0]))
        pos[n_sig++] = 0;
    }
    if (!n_sig) continue;
    written |= uint64_t(1) << ((ys << log2_sb) + xs);

    // 9.3.4.2.6 ctxSet and greater1Ctx of coeff_abs_level_greater1_flag
    int ctx_set = (i == 0 || c_idx > 0) ? 0 : 2;
    if (last_greater1_ctx_zero) ++ctx_set;
    const int g1_off = ctx_set * 4 + (c_idx > 0 ? 16 : 0);
    int abs_level[16];  // baseLevel, then absolute levels, in decoding order
    int greater1_ctx = 1;
    int first_greater1 = 16;  // index into pos of lastGreater1ScanPos; 16: none
    const int n_g1 = n_sig < 8 ? n_sig : 8;
    for (int k = 0; k < n_g1; ++k) {  // selects, not branches, on the bins
      const int g1 = rd.coeff_abs_level_greater1_flag(g1_off + greater1_ctx);
      abs_level[k] = 1 + g1;
      first_greater1 = g1 && first_greater1 == 16 ? k : first_greater1;
      greater1_ctx = kNextGreater1Ctx[g1][greater1_ctx];
    }
    for (int k = n_g1; k < n_sig; ++k) abs_level[k] = 1;
    last_greater1_ctx_zero = greater1_ctx == 0;
    if (first_greater1 < 16)
      abs_level[first_greater1] += rd.coeff_abs_level_greater2_flag(ctx_set + (c_idx > 0 ? 4 : 0));

    // signHidden: the sign of the last level in decoding order (firstSigScanPos) is not coded
    const bool sign_hidden = hiding && pos[0] - pos[n_sig - 1] > 3;
    const int n_signs = n_sig - (sign_hidden ? 1 : 0);
    uint32_t signs = rd.coeff_sign_flags(n_signs) << (32 - n_signs);

    // coeff_abs_level_remaining with the Rice parameter update of 9.3.3.11
    int16_t* block = coeffs + (ys << 2) * size + (xs << 2);
    int c_rice_param = 0, sum_abs_level = 0;
    for (int k = 0; k < n_sig; ++k) {
      int abs = abs_level[k];
      if (abs == (k < 8 ? (k == first_greater1 ? 3 : 2) : 1)) {
        abs += rd.coeff_abs_level_remaining(c_rice_param);
        c_rice_param += abs > 3 * (1 << c_rice_param) && c_rice_param < 4;
      }
      int level = (signs & 0x80000000u) ? -abs : abs;
      signs <<= 1;
      sum_abs_level += abs;
      if (sign_hidden && k == n_sig - 1 && (sum_abs_level & 1)) level = -level;
      const int np = pos[k];
      block[scan_y[np] * size + scan_x[np]] =
          static_cast<int16_t>(level < -32768 ? -32768 : (level > 32767 ? 32767 : level));
    }
  }
  rd.finish(reader);
  return written;
}

}  // namespace gvc::hevc
