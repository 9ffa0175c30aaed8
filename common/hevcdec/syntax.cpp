// syntax.cpp: binarisations of the CABAC syntax elements that need more than one bin (9.3.3)
#include "common/hevcdec/syntax.h"

namespace gvc::hevc {

// TR cMax = 2, first bin context coded, second bypass: 0 = not applied, 1 = band, 2 = edge.
int SyntaxReader::sao_type_idx() {
  if (!decision(kCtxSaoTypeIdx)) return 0;
  return eng.decode_bypass() ? 2 : 1;
}

// TR, cMax = (1 << (Min(bitDepth, 10) - 5)) - 1, bypass.
int SyntaxReader::sao_offset_abs(int bit_depth) {
  const int c_max = (1 << ((bit_depth < 10 ? bit_depth : 10) - 5)) - 1;
  int v = 0;
  while (v < c_max && eng.decode_bypass()) ++v;
  return v;
}

// 9.3.3.7 part_mode binarisation (Table 9-43), ctxInc of Table 9-41.
PartMode SyntaxReader::part_mode(bool intra, int log2_cb_size, int log2_min_cb_size,
                                 bool amp_enabled) {
  if (decision(kCtxPartMode + 0)) return PART_2Nx2N;
  if (intra) return PART_NxN;
  if (log2_cb_size == log2_min_cb_size) {
    if (decision(kCtxPartMode + 1)) return PART_2NxN;
    if (log2_cb_size == 3) return PART_Nx2N;
    return decision(kCtxPartMode + 2) ? PART_Nx2N : PART_NxN;
  }
  if (!amp_enabled) return decision(kCtxPartMode + 1) ? PART_2NxN : PART_Nx2N;
  if (decision(kCtxPartMode + 1)) {
    if (decision(kCtxPartMode + 3)) return PART_2NxN;
    return eng.decode_bypass() ? PART_2NxnD : PART_2NxnU;
  }
  if (decision(kCtxPartMode + 3)) return PART_Nx2N;
  return eng.decode_bypass() ? PART_nRx2N : PART_nLx2N;
}

// TR cMax = 2, bypass.
int SyntaxReader::mpm_idx() {
  if (!eng.decode_bypass()) return 0;
  return eng.decode_bypass() ? 2 : 1;
}

// 9.3.3.8: "0" = 4 (derived from luma), "1xx" = 0..3.
int SyntaxReader::intra_chroma_pred_mode() {
  if (!decision(kCtxIntraChromaPredMode)) return 4;
  return static_cast<int>(eng.decode_bypass_bits(2));
}

// TR cMax = MaxNumMergeCand - 1, first bin context coded.
int SyntaxReader::merge_idx(int max_num_merge_cand) {
  if (max_num_merge_cand <= 1) return 0;
  int v = 0;
  if (!decision(kCtxMergeIdx)) return 0;
  ++v;
  while (v < max_num_merge_cand - 1 && eng.decode_bypass()) ++v;
  return v;
}

// 9.3.3.9 inter_pred_idc; bin 0 ctxInc = CtDepth, the last bin ctxInc 4.
InterPredIdc SyntaxReader::inter_pred_idc(int n_pb_w, int n_pb_h, int ct_depth) {
  if (n_pb_w + n_pb_h != 12 && decision(kCtxInterPredIdc + ct_depth)) return PRED_BI;
  return decision(kCtxInterPredIdc + 4) ? PRED_L1 : PRED_L0;
}

// TR cMax = num_ref_idx_active - 1; bins 0 and 1 context coded, the rest bypass.
int SyntaxReader::ref_idx_lx(int num_ref_idx_active) {
  const int c_max = num_ref_idx_active - 1;
  int v = 0;
  while (v < c_max) {
    const int bin = v < 2 ? decision(kCtxRefIdx + v) : eng.decode_bypass();
    if (!bin) break;
    ++v;
  }
  return v;
}

// 7.3.8.9 mvd_coding: abs_mvd_greater0/1_flag, abs_mvd_minus2 (EG1), mvd_sign_flag.
void SyntaxReader::mvd_coding(int mvd[2]) {
  int g0[2], g1[2] = {0, 0};
  g0[0] = decision(kCtxAbsMvdGreater0Flag);
  g0[1] = decision(kCtxAbsMvdGreater0Flag);
  if (g0[0]) g1[0] = decision(kCtxAbsMvdGreater1Flag);
  if (g0[1]) g1[1] = decision(kCtxAbsMvdGreater1Flag);
  for (int c = 0; c < 2; ++c) {
    int abs = 0;
    if (g0[c]) {
      abs = 1;
      if (g1[c]) {
        // 9.3.3.3 k-th order Exp-Golomb, k = 1
        // abs_mvd_minus2 + 2 is at most 2^15 (7.4.9.9): a longer prefix is a damaged stream
        int k = 1, v = 0;
        while (eng.decode_bypass()) {
          v += 1 << k;
          ++k;
          if (k > 16) break;
        }
        v += static_cast<int>(eng.decode_bypass_bits(k));
        abs = v + 2;
      }
      if (eng.decode_bypass()) abs = -abs;
    }
    mvd[c] = abs;
  }
}

// prefix TU cMax 5 (bin 0 ctxInc 0, bins 1..4 ctxInc 1), suffix EG0 bypass.
int SyntaxReader::cu_qp_delta_abs() {
  int v = 0;
  while (v < 5 && decision(kCtxCuQpDeltaAbs + (v ? 1 : 0))) ++v;
  if (v == 5) {
    int k = 0, s = 0;
    while (eng.decode_bypass()) {
      s += 1 << k;
      ++k;
      if (k > 31) break;
    }
    s += static_cast<int>(eng.decode_bypass_bits(k));
    v += s;
  }
  return v;
}

// 9.3.3.11 bin by bin, for the binarisations longer than the 16 bins coeff_abs_level_remaining()
// decodes at once.
int ResidualSyntax::coeff_abs_level_remaining_long(CabacEngine& e, int c_rice_param) {
  // TransCoeffLevel lies in -32768..32767 (7.4.9.11), so the prefix is at most 17: a longer one
  // is a damaged stream (and would overflow the int value)
  int prefix = 0;
  while (prefix < 18 && e.decode_bypass()) ++prefix;
  if (prefix <= 3)  // never from coeff_abs_level_remaining(), kept for the whole binarisation
    return (prefix << c_rice_param) + static_cast<int>(e.decode_bypass_bits(c_rice_param));
  const int k = prefix - 3 + c_rice_param;
  return (((1 << (prefix - 3)) + 3 - 1) << c_rice_param) + static_cast<int>(e.decode_bypass_bits(k));
}

}  // namespace gvc::hevc
