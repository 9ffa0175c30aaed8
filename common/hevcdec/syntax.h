// syntax.h: one function per CABAC-coded syntax element (9.3.3 binarisations, 9.3.4.2 ctxInc)
#pragma once

#include "common/hevcdec/cabac.h"

namespace gvc::hevc {

enum PartMode : uint8_t {
  PART_2Nx2N, PART_2NxN, PART_Nx2N, PART_NxN, PART_2NxnU, PART_2NxnD, PART_nLx2N, PART_nRx2N
};

enum InterPredIdc : uint8_t { PRED_L0 = 0, PRED_L1 = 1, PRED_BI = 2 };

struct SyntaxReader {
  CabacEngine eng;
  CabacContexts ctx;

  int decision(int idx) { return eng.decode_decision(ctx.state[idx]); }

  // 7.3.8.3 sample adaptive offset
  int sao_merge_flag() { return decision(kCtxSaoMergeFlag); }
  int sao_type_idx();
  int sao_offset_abs(int bit_depth);
  int sao_offset_sign() { return eng.decode_bypass(); }
  int sao_band_position() { return static_cast<int>(eng.decode_bypass_bits(5)); }
  int sao_eo_class() { return static_cast<int>(eng.decode_bypass_bits(2)); }
  int end_of_slice_segment_flag() { return eng.decode_terminate(); }
  int end_of_subset_one_bit() { return eng.decode_terminate(); }

  // 7.3.8.4-7.3.8.5 coding quadtree and coding unit
  int split_cu_flag(int ctx_inc) { return decision(kCtxSplitCuFlag + ctx_inc); }
  int cu_transquant_bypass_flag() { return decision(kCtxCuTransquantBypassFlag); }
  int cu_skip_flag(int ctx_inc) { return decision(kCtxCuSkipFlag + ctx_inc); }
  int pred_mode_flag() { return decision(kCtxPredModeFlag); }
  PartMode part_mode(bool intra, int log2_cb_size, int log2_min_cb_size, bool amp_enabled);
  int pcm_flag() { return eng.decode_terminate(); }
  int prev_intra_luma_pred_flag() { return decision(kCtxPrevIntraLumaPredFlag); }
  int mpm_idx();
  int rem_intra_luma_pred_mode() { return static_cast<int>(eng.decode_bypass_bits(5)); }
  int intra_chroma_pred_mode();

  // 7.3.8.6-7.3.8.9 prediction unit and motion vector difference
  int merge_flag() { return decision(kCtxMergeFlag); }
  int merge_idx(int max_num_merge_cand);
  InterPredIdc inter_pred_idc(int n_pb_w, int n_pb_h, int ct_depth);
  int ref_idx_lx(int num_ref_idx_active);
  void mvd_coding(int mvd[2]);
  int mvp_lx_flag() { return decision(kCtxMvpFlag); }
  int rqt_root_cbf() { return decision(kCtxRqtRootCbf); }

  // 7.3.8.8-7.3.8.10 transform tree and transform unit
  int split_transform_flag(int log2_trafo_size) {
    return decision(kCtxSplitTransformFlag + 5 - log2_trafo_size);
  }
  int cbf_luma(int trafo_depth) { return decision(kCtxCbfLuma + (trafo_depth == 0 ? 1 : 0)); }
  int cbf_chroma(int trafo_depth) { return decision(kCtxCbfChroma + trafo_depth); }
  int cu_qp_delta_abs();
  int cu_qp_delta_sign_flag() { return eng.decode_bypass(); }
};

// The elements of residual_coding() (7.3.8.11) on a copy of a SyntaxReader's engine, which the
// compiler keeps in registers over the coefficient loops: through the SyntaxReader, every
// context update (a uint8_t store, which may alias anything) would write the engine back to
// memory and read it again. finish() hands the engine back.
struct ResidualSyntax {
  CabacEngine eng;
  uint8_t* state;

  explicit ResidualSyntax(SyntaxReader& rd) : eng(rd.eng), state(rd.ctx.state) {}
  void finish(SyntaxReader& rd) const { rd.eng = eng; }
  int decision(int idx) { return eng.decode_decision(state[idx]); }

  int transform_skip_flag(int c_idx) { return decision(kCtxTransformSkipFlag + (c_idx ? 1 : 0)); }
  // 9.3.4.2.3 last_sig_coeff_x/y_prefix: TR cMax (log2TrafoSize << 1) - 1
  __attribute__((always_inline)) int last_sig_coeff_prefix(bool y, int c_idx, int log2_trafo_size) {
    int offset, shift;
    if (c_idx == 0) {
      offset = 3 * (log2_trafo_size - 2) + ((log2_trafo_size - 1) >> 2);
      shift = (log2_trafo_size + 1) >> 2;
    } else {
      offset = 15;
      shift = log2_trafo_size - 2;
    }
    const int base = (y ? kCtxLastSigCoeffYPrefix : kCtxLastSigCoeffXPrefix) + offset;
    const int c_max = (log2_trafo_size << 1) - 1;
    int v = 0;
    while (v < c_max && decision(base + (v >> shift))) ++v;
    return v;
  }
  int last_sig_coeff_suffix(int prefix) { return static_cast<int>(eng.decode_bypass_bits((prefix >> 1) - 1)); }
  int coded_sub_block_flag(int ctx_inc) { return decision(kCtxCodedSubBlockFlag + ctx_inc); }
  int sig_coeff_flag(int ctx_inc) { return decision(kCtxSigCoeffFlag + ctx_inc); }
  int coeff_abs_level_greater1_flag(int ctx_inc) { return decision(kCtxCoeffAbsLevelGreater1Flag + ctx_inc); }
  int coeff_abs_level_greater2_flag(int ctx_inc) { return decision(kCtxCoeffAbsLevelGreater2Flag + ctx_inc); }
  // 9.3.3.11: prefix TR (cMax 4 << cRiceParam), suffix EGk(k + 1)
  __attribute__((always_inline)) int coeff_abs_level_remaining(int c_rice_param) {
    // usually the whole binarisation lies within the next 16 bins: one division decodes it
    const uint32_t bins = eng.peek_bypass_bits_16();
    const int ones = __builtin_clz((~bins << 16) | 0x8000);  // the prefix, when it ends there
    const int k = ones <= 3 ? c_rice_param : ones - 3 + c_rice_param;
    const int len = ones + 1 + k;
    if (len <= 16) {
      eng.skip_bypass_bits(len, bins);
      const int suffix = int((bins >> (16 - len)) & ((1u << k) - 1));
      return (ones <= 3 ? ones << c_rice_param : ((1 << (ones - 3)) + 3 - 1) << c_rice_param) + suffix;
    }
    CabacEngine e = eng;  // the rare long binarisation out of line, on a copy: `eng` stays in registers
    const int v = coeff_abs_level_remaining_long(e, c_rice_param);
    eng = e;
    return v;
  }
  __attribute__((noinline)) static int coeff_abs_level_remaining_long(CabacEngine& e, int c_rice_param);
  // n coeff_sign_flag bins in one read, the first in the most significant bit
  uint32_t coeff_sign_flags(int n) {  // n <= 16
    const uint32_t bins = eng.peek_bypass_bits_16();
    eng.skip_bypass_bits(n, bins);
    return bins >> (16 - n);
  }
};

}  // namespace gvc::hevc
