// residual.cpp: residual_coding() (7.3.8.11) with the sig_coeff_flag and greater1 contexts (9.3.4.2.5-7)
#include "common/hevcdec/residual.h"

#include <cstring>

#include "common/hevcdec/params.h"

namespace gvc::hevc {
namespace {

// 9.3.4.2.5 ctxIdxMap for 4x4 transform blocks.
constexpr uint8_t kCtxIdxMap[16] = {0, 1, 4, 5, 2, 3, 4, 5, 6, 6, 8, 8, 7, 7, 8, 8};

int sig_coeff_ctx_inc(int c_idx, int log2_size, int scan_idx, int xc, int yc, int prev_csbf) {
  int sig_ctx;
  if (log2_size == 2) {
    sig_ctx = kCtxIdxMap[(yc << 2) + xc];
  } else if (xc + yc == 0) {
    sig_ctx = 0;
  } else {
    const int xp = xc & 3, yp = yc & 3;
    if (prev_csbf == 0)
      sig_ctx = (xp + yp == 0) ? 2 : (xp + yp < 3) ? 1 : 0;
    else if (prev_csbf == 1)
      sig_ctx = yp == 0 ? 2 : (yp == 1 ? 1 : 0);
    else if (prev_csbf == 2)
      sig_ctx = xp == 0 ? 2 : (xp == 1 ? 1 : 0);
    else
      sig_ctx = 2;
    if (c_idx == 0 && ((xc >> 2) > 0 || (yc >> 2) > 0)) sig_ctx += 3;
    if (log2_size == 3)
      sig_ctx += scan_idx == 0 ? 9 : 15;
    else
      sig_ctx += c_idx == 0 ? 21 : 12;
  }
  return c_idx == 0 ? sig_ctx : 27 + sig_ctx;
}

}  // namespace

void residual_coding(SyntaxReader& rd, const ResidualParams& p, int16_t* coeffs,
                     bool* transform_skip_flag) {
  const int log2 = p.log2_trafo_size;
  const int size = 1 << log2;
  const int c_idx = p.c_idx;
  std::memset(coeffs, 0, sizeof(int16_t) * size * size);

  *transform_skip_flag = false;
  if (p.transform_skip_enabled && !p.transquant_bypass && log2 <= 2)
    *transform_skip_flag = rd.transform_skip_flag(c_idx);

  int last_x = rd.last_sig_coeff_prefix(false, c_idx, log2);
  int last_y = rd.last_sig_coeff_prefix(true, c_idx, log2);
  if (last_x > 3) {
    const int suffix = rd.last_sig_coeff_suffix(last_x);
    last_x = (1 << ((last_x >> 1) - 1)) * (2 + (last_x & 1)) + suffix;
  }
  if (last_y > 3) {
    const int suffix = rd.last_sig_coeff_suffix(last_y);
    last_y = (1 << ((last_y >> 1) - 1)) * (2 + (last_y & 1)) + suffix;
  }
  if (p.scan_idx == 2) std::swap(last_x, last_y);

  const int log2_sb = log2 - 2;
  const ScanPos* scan_sb = scan_order(log2_sb, p.scan_idx);
  const ScanPos* scan_pos = scan_order(2, p.scan_idx);

  // find lastSubBlock and lastScanPos
  int last_sub_block = (1 << (2 * log2_sb)) - 1;
  int last_scan_pos = 16;
  for (;;) {
    if (last_scan_pos == 0) {
      last_scan_pos = 16;
      --last_sub_block;
      if (last_sub_block < 0) return;  // corrupt: position outside the block
    }
    --last_scan_pos;
    const int xc = (scan_sb[last_sub_block].x << 2) + scan_pos[last_scan_pos].x;
    const int yc = (scan_sb[last_sub_block].y << 2) + scan_pos[last_scan_pos].y;
    if (xc == last_x && yc == last_y) break;
  }

  uint8_t csbf[8][8];
  std::memset(csbf, 0, sizeof(csbf));
  const int sb_w = 1 << log2_sb;
  int greater1_ctx = 1;
  bool first_sb_done = false;

  for (int i = last_sub_block; i >= 0; --i) {
    const int xs = scan_sb[i].x, ys = scan_sb[i].y;
    bool infer_sb_dc_sig = false;
    if (i < last_sub_block && i > 0) {
      int csbf_ctx = 0;
      if (xs < sb_w - 1) csbf_ctx += csbf[xs + 1][ys];
      if (ys < sb_w - 1) csbf_ctx += csbf[xs][ys + 1];
      csbf[xs][ys] = static_cast<uint8_t>(rd.coded_sub_block_flag((csbf_ctx ? 1 : 0) + (c_idx ? 2 : 0)));
      infer_sb_dc_sig = true;
    } else {
      csbf[xs][ys] = 1;
    }
    int prev_csbf = 0;
    if (xs < sb_w - 1) prev_csbf |= csbf[xs + 1][ys];
    if (ys < sb_w - 1) prev_csbf |= csbf[xs][ys + 1] << 1;

    uint8_t sig[16] = {};
    int n_start = 15;
    if (i == last_sub_block) {
      n_start = last_scan_pos - 1;
      sig[last_scan_pos] = 1;
    }
    if (csbf[xs][ys]) {
      for (int n = n_start; n >= 0; --n) {
        const int xc = (xs << 2) + scan_pos[n].x, yc = (ys << 2) + scan_pos[n].y;
        if (n > 0 || !infer_sb_dc_sig) {
          sig[n] = static_cast<uint8_t>(
              rd.sig_coeff_flag(sig_coeff_ctx_inc(c_idx, log2, p.scan_idx, xc, yc, prev_csbf)));
          if (sig[n]) infer_sb_dc_sig = false;
        } else {
          sig[n] = 1;  // inferred DC of a coded sub-block with no other significant level
        }
      }
    }
    // collect significant positions in decoding order
    int pos[16], n_sig = 0;
    for (int n = 15; n >= 0; --n)
      if (sig[n]) pos[n_sig++] = n;
    if (!n_sig) continue;

    // 9.3.4.2.6 ctxSet for coeff_abs_level_greater1_flag
    int ctx_set = (i == 0 || c_idx > 0) ? 0 : 2;
    if (first_sb_done && greater1_ctx == 0) ++ctx_set;
    first_sb_done = true;
    greater1_ctx = 1;

    uint8_t g1[16] = {}, g2[16] = {};
    int last_greater1_scan_pos = -1;
    const int n_g1 = n_sig < 8 ? n_sig : 8;
    for (int k = 0; k < n_g1; ++k) {
      const int n = pos[k];
      int inc = ctx_set * 4 + (greater1_ctx < 3 ? greater1_ctx : 3);
      if (c_idx > 0) inc += 16;
      g1[n] = static_cast<uint8_t>(rd.coeff_abs_level_greater1_flag(inc));
      if (g1[n]) {
        greater1_ctx = 0;
        if (last_greater1_scan_pos == -1) last_greater1_scan_pos = n;
      } else if (greater1_ctx > 0) {
        ++greater1_ctx;
      }
    }
    const int first_sig_scan_pos = pos[n_sig - 1];
    const int last_sig_scan_pos = pos[0];
    const bool sign_hidden = !p.transquant_bypass && (last_sig_scan_pos - first_sig_scan_pos > 3);
    if (last_greater1_scan_pos != -1)
      g2[last_greater1_scan_pos] = static_cast<uint8_t>(
          rd.coeff_abs_level_greater2_flag(ctx_set + (c_idx > 0 ? 4 : 0)));
    uint8_t sign[16] = {};
    for (int k = 0; k < n_sig; ++k) {
      const int n = pos[k];
      if (!p.sign_data_hiding || !sign_hidden || n != first_sig_scan_pos)
        sign[n] = static_cast<uint8_t>(rd.coeff_sign_flag());
    }
    // coeff_abs_level_remaining with the Rice parameter update of 9.3.3.11
    int num_sig_coeff = 0, sum_abs_level = 0, c_rice_param = 0;
    for (int k = 0; k < n_sig; ++k) {
      const int n = pos[k];
      const int base_level = 1 + g1[n] + g2[n];
      int abs_level = base_level;
      if (base_level == ((num_sig_coeff < 8) ? ((n == last_greater1_scan_pos) ? 3 : 2) : 1)) {
        const int rem = rd.coeff_abs_level_remaining(c_rice_param);
        abs_level = base_level + rem;
        if (abs_level > 3 * (1 << c_rice_param)) c_rice_param = c_rice_param + 1 < 4 ? c_rice_param + 1 : 4;
      }
      int level = sign[n] ? -abs_level : abs_level;
      if (p.sign_data_hiding && sign_hidden) {
        sum_abs_level += abs_level;
        if (n == first_sig_scan_pos && (sum_abs_level & 1)) level = -level;
      }
      const int xc = (xs << 2) + scan_pos[n].x, yc = (ys << 2) + scan_pos[n].y;
      coeffs[yc * size + xc] = static_cast<int16_t>(level < -32768 ? -32768 : (level > 32767 ? 32767 : level));
      ++num_sig_coeff;
    }
  }
}

}  // namespace gvc::hevc
