// synth_stream.cpp: HEVC parameter sets, slice headers and a CABAC encoder for tiles, dependent slices and PCM
#include "tests/hevc/synth_stream.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "common/hevcdec/cabac.h"

namespace gvc::test {
namespace {

// 7.2 u(n), ue(v), se(v) into RBSP bytes.
class BitWriter {
 public:
  void bit(int b) {
    if (nbits_ % 8 == 0) bytes_.push_back(0);
    if (b) bytes_.back() |= uint8_t(0x80 >> (nbits_ % 8));
    ++nbits_;
  }
  void u(int n, uint32_t v) {
    for (int i = n - 1; i >= 0; --i) bit((v >> i) & 1);
  }
  void ue(uint32_t v) {
    const uint32_t x = v + 1;
    int len = 0;
    while ((x >> len) > 1) ++len;
    u(len, 0);
    u(len + 1, x);
  }
  void se(int v) { ue(v > 0 ? 2 * uint32_t(v) - 1 : 2 * uint32_t(-v)); }
  void align_zero() {
    while (nbits_ % 8) bit(0);
  }
  void trailing_bits() {  // rbsp_trailing_bits(), byte_alignment()
    bit(1);
    align_zero();
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
  size_t nbits_ = 0;
};

// The context variables this writer codes, each the first of its syntax element's contexts.
enum Ctx : int {
  kSaoMerge = 0,     // sao_merge_left_flag, sao_merge_up_flag
  kSaoType = 1,      // sao_type_idx_luma/chroma, first bin
  kSplitCu = 2,      // split_cu_flag, ctxInc 0..2
  kCuSkip = 5,       // cu_skip_flag, ctxInc 0..2
  kPredMode = 8,     // pred_mode_flag
  kPartMode = 9,     // part_mode, first bin
  kPrevIntra = 10,   // prev_intra_luma_pred_flag
  kChromaMode = 11,  // intra_chroma_pred_mode, first bin
  kMergeFlag = 12,
  kMergeIdx = 13,    // first bin
  kMvdGt0 = 14,      // abs_mvd_greater0_flag
  kMvdGt1 = 15,      // abs_mvd_greater1_flag
  kMvpFlag = 16,     // mvp_l0_flag
  kRqtRootCbf = 17,
  kCbfLuma = 18,     // ctxInc trafoDepth == 0 ? 1 : 0
  kCbfChroma = 20,   // ctxInc trafoDepth
  kCuQpDeltaAbs = 24,  // ctxInc 0 (first bin), 1
  kLastXPrefix = 26,   // last_sig_coeff_x_prefix, 18
  kLastYPrefix = 44,   // last_sig_coeff_y_prefix, 18
  kGt1First = 62,      // coeff_abs_level_greater1_flag, ctxInc 1: a luma TU's first (ctxSet 0, greater1Ctx 1)
  kGt2First = 63,      // coeff_abs_level_greater2_flag, ctxInc 0: luma ctxSet 0
  kNumCtx = 64,
};

// initValue by initType 0 (I) and 1 (P), from Tables 9-5..9-37 (154 where a type has none).
constexpr uint8_t kInitValue[2][kNumCtx] = {
    {153, 200, 139, 141, 157, 154, 154, 154, 154, 184, 184, 63,
     154, 154, 154, 154, 154, 154, 111, 141, 94, 138, 182, 154,
     154, 154,
     110, 110, 124, 125, 140, 153, 125, 127, 140, 109, 111, 143, 127, 111, 79, 108, 123, 63,
     110, 110, 124, 125, 140, 153, 125, 127, 140, 109, 111, 143, 127, 111, 79, 108, 123, 63,
     92, 138},
    {153, 185, 107, 139, 126, 197, 185, 201, 149, 154, 154, 152,
     110, 122, 140, 198, 168, 79, 153, 111, 149, 107, 167, 154,
     154, 154,
     125, 110, 94, 110, 95, 79, 125, 111, 110, 78, 110, 111, 111, 95, 94, 108, 123, 108,
     125, 110, 94, 110, 95, 79, 125, 111, 110, 78, 110, 111, 111, 95, 94, 108, 123, 108,
     196, 107},
};

struct Contexts {
  uint8_t state[kNumCtx];  // (pStateIdx << 1) | valMps
};

// 9.3.2.2 initialisation of context variables.
Contexts init_contexts(int init_type, int slice_qp_y) {
  Contexts c;
  const int qp = std::clamp(slice_qp_y, 0, 51);
  for (int i = 0; i < kNumCtx; ++i) {
    const int v = kInitValue[init_type][i];
    const int m = (v >> 4) * 5 - 45, n = ((v & 15) << 3) - 16;
    const int pre = std::clamp(((m * qp) >> 4) + n, 1, 126);
    const int mps = pre <= 63 ? 0 : 1;
    c.state[i] = uint8_t(((mps ? pre - 64 : 63 - pre) << 1) | mps);
  }
  return c;
}

// 9.3.5 (informative) arithmetic encoding: ivlLow / ivlCurrRange with outstanding bits.
class CabacEncoder {
 public:
  explicit CabacEncoder(BitWriter& bw) : bw_(bw) { init(); }
  // 9.3.5.1 InitEncoder
  void init() {
    low_ = 0;
    range_ = 510;
    first_bit_ = true;
    outstanding_ = 0;
  }
  // 9.3.5.2 EncodeDecision
  void decision(uint8_t& state, int bin) {
    int p = state >> 1, mps = state & 1;
    const uint32_t lps = gvc::hevc::kCabacRangeTabLps[p][(range_ >> 6) & 3];
    range_ -= lps;
    if (bin != mps) {
      low_ += range_;
      range_ = lps;
      if (p == 0) mps = 1 - mps;
      p = gvc::hevc::kCabacTransIdxLps[p];
    } else if (p < 62) {
      ++p;
    }
    state = uint8_t((p << 1) | mps);
    renorm();
  }
  // 9.3.5.4 EncodeBypass
  void bypass(int bin) {
    low_ <<= 1;
    if (bin) low_ += range_;
    if (low_ >= 1024) {
      put_bit(1);
      low_ -= 1024;
    } else if (low_ < 512) {
      put_bit(0);
    } else {
      low_ -= 512;
      ++outstanding_;
    }
  }
  void bypass_bits(uint32_t v, int n) {
    for (int i = n - 1; i >= 0; --i) bypass((v >> i) & 1);
  }
  // 9.3.5.5 EncodeTerminate; a bin equal to 1 ends the arithmetic code (9.3.5.6 EncodeFlush),
  // whose last bit written is 1: rbsp_stop_one_bit after end_of_slice_segment_flag,
  // alignment_bit_equal_to_one after end_of_subset_one_bit, before pcm_alignment_zero_bits
  // after pcm_flag.
  void terminate(int bin) {
    range_ -= 2;
    if (!bin) {
      renorm();
      return;
    }
    low_ += range_;
    range_ = 2;
    renorm();
    put_bit((low_ >> 9) & 1);
    bw_.u(2, ((low_ >> 7) & 3) | 1);
  }

 private:
  // 9.3.5.3 RenormE
  void renorm() {
    while (range_ < 256) {
      if (low_ < 256) {
        put_bit(0);
      } else if (low_ >= 512) {
        low_ -= 512;
        put_bit(1);
      } else {
        low_ -= 256;
        ++outstanding_;
      }
      range_ <<= 1;
      low_ <<= 1;
    }
  }
  void put_bit(int b) {
    if (first_bit_)
      first_bit_ = false;
    else
      bw_.bit(b);
    for (; outstanding_ > 0; --outstanding_) bw_.bit(1 - b);
  }
  BitWriter& bw_;
  uint32_t low_ = 0, range_ = 510;
  bool first_bit_ = true;
  int outstanding_ = 0;
};

// 7.4.2.2 NAL unit with start code; emulation_prevention_three_byte inserted.
void put_nal(std::vector<uint8_t>& out, int nal_unit_type, const std::vector<uint8_t>& rbsp) {
  out.insert(out.end(), {0, 0, 0, 1, uint8_t(nal_unit_type << 1), 1});
  int zeros = 0;
  for (uint8_t b : rbsp) {
    if (zeros >= 2 && b <= 3) {
      out.push_back(3);
      zeros = 0;
    }
    out.push_back(b);
    zeros = b ? 0 : zeros + 1;
  }
}

// Size of `bytes` once emulation prevention bytes are inserted (the byte before is not zero).
size_t escaped_size(const uint8_t* bytes, size_t n) {
  size_t out = n;
  int zeros = 0;
  for (size_t i = 0; i < n; ++i) {
    if (zeros >= 2 && bytes[i] <= 3) {
      ++out;
      zeros = 0;
    }
    zeros = bytes[i] ? 0 : zeros + 1;
  }
  return out;
}

constexpr int kNalTrailR = 1, kNalIdrWRadl = 19, kNalVps = 32, kNalSps = 33, kNalPps = 34;

class StreamWriter {
 public:
  StreamWriter(const SynthParams& p, SynthStats& st) : p_(p), st_(st), rng_(p.seed) { derive(); }
  std::vector<uint8_t> run(const std::vector<SynthSource>& frames);

 private:
  int rnd(int n) { return int(rng_() % uint32_t(n)); }
  void derive();
  void profile_tier_level(BitWriter& b) const;
  std::vector<uint8_t> vps() const;
  std::vector<uint8_t> sps() const;
  std::vector<uint8_t> pps() const;

  // per picture
  void picture(int poc, bool idr, bool p_slice, const SynthSource& src, std::vector<uint8_t>& out);
  struct SliceHeader {
    bool sao_luma = true, sao_chroma = true;
    int qp_delta = 0;
    bool dbf_override = false, dbf_disabled = false;
    int beta = 0, tc = 0;
    bool lf_across_slices = true;
    int max_num_merge_cand = 5;
  };
  void segment(int k, const SliceHeader& sh, std::vector<uint8_t>& out);
  void slice_header(BitWriter& b, int k, const SliceHeader& sh, const std::vector<size_t>& entry) const;

  // slice data
  bool available(int xc, int yc, int xn, int yn) const;
  void sao(int rs, int ts);
  void coding_quadtree(int x0, int y0, int log2_size, int depth);
  void coding_unit(int x0, int y0, int log2_size);
  void intra_cu(int x0, int y0, int log2_size);
  void pcm_sample(int x0, int y0, int log2_size);
  void mvd_coding();
  void transform_unit_dc(int log2_size);
  void bin(int ctx, int v) { enc_->decision(ctx_.state[ctx], v); }

  const SynthParams& p_;
  SynthStats& st_;
  std::mt19937 rng_;

  // 6.5.1
  int w_ctb_ = 0, h_ctb_ = 0, n_ctb_ = 0, ctb_ = 16;
  std::vector<int> col_bd_, row_bd_, rs2ts_, ts2rs_, tile_id_;  // tile_id_ by ts
  int addr_bits_ = 0;

  // picture state
  const SynthSource* src_ = nullptr;
  int poc_ = 0;
  bool idr_ = false, p_slice_ = false;
  std::vector<int> ctb_slice_addr_;     // SliceAddrRs of each coded CTB (raster), -1: not coded
  std::vector<uint8_t> depth_, skip_;  // CtDepth, cu_skip_flag per 8x8 unit
  int w8_ = 0;
  Contexts wpp_{}, ds_{};  // TableStateIdxWpp, TableStateIdxDs
  int slice_addr_rs_ = 0, slice_qp_y_ = 26;
  bool is_cu_qp_delta_coded_ = false;  // IsCuQpDeltaCoded
  SliceHeader cur_sh_;

  // slice segment data
  Contexts ctx_{};
  BitWriter* data_ = nullptr;
  CabacEncoder* enc_ = nullptr;
};

void StreamWriter::derive() {
  ctb_ = 1 << p_.log2_ctb_size;
  w_ctb_ = (p_.width + ctb_ - 1) / ctb_;
  h_ctb_ = (p_.height + ctb_ - 1) / ctb_;
  n_ctb_ = w_ctb_ * h_ctb_;
  while ((1 << addr_bits_) < n_ctb_) ++addr_bits_;  // Ceil(Log2(PicSizeInCtbsY))
  const int cols = p_.tiles.enabled ? p_.tiles.columns : 1, rows = p_.tiles.enabled ? p_.tiles.rows : 1;
  col_bd_.assign(cols + 1, 0);
  row_bd_.assign(rows + 1, 0);
  for (int i = 0; i < cols; ++i) {
    const int w = !p_.tiles.enabled || p_.tiles.uniform
                      ? ((i + 1) * w_ctb_) / cols - (i * w_ctb_) / cols
                      : (i < cols - 1 ? p_.tiles.column_widths[i] : w_ctb_ - col_bd_[i]);
    col_bd_[i + 1] = col_bd_[i] + w;
  }
  for (int j = 0; j < rows; ++j) {
    const int h = !p_.tiles.enabled || p_.tiles.uniform
                      ? ((j + 1) * h_ctb_) / rows - (j * h_ctb_) / rows
                      : (j < rows - 1 ? p_.tiles.row_heights[j] : h_ctb_ - row_bd_[j]);
    row_bd_[j + 1] = row_bd_[j] + h;
  }
  // tile scan: tiles in raster order, CTBs in raster order inside each tile
  for (int j = 0, t = 0; j < rows; ++j)
    for (int i = 0; i < cols; ++i, ++t)
      for (int y = row_bd_[j]; y < row_bd_[j + 1]; ++y)
        for (int x = col_bd_[i]; x < col_bd_[i + 1]; ++x) {
          ts2rs_.push_back(y * w_ctb_ + x);
          tile_id_.push_back(t);
        }
  rs2ts_.assign(n_ctb_, 0);
  for (int ts = 0; ts < n_ctb_; ++ts) rs2ts_[ts2rs_[ts]] = ts;
  w8_ = w_ctb_ * ctb_ / 8;
}

// 7.3.3 profile_tier_level(1, 0): Main or Main 10, level 4.
void StreamWriter::profile_tier_level(BitWriter& b) const {
  const int profile = p_.bit_depth > 8 ? 2 : 1;
  b.u(2, 0);  // general_profile_space
  b.u(1, 0);  // general_tier_flag
  b.u(5, uint32_t(profile));
  for (int j = 0; j < 32; ++j) b.u(1, j == profile || (profile == 1 && j == 2));
  b.u(1, 1);  // general_progressive_source_flag
  b.u(1, 0);  // general_interlaced_source_flag
  b.u(1, 0);  // general_non_packed_constraint_flag
  b.u(1, 1);  // general_frame_only_constraint_flag
  b.u(32, 0);  // general_reserved_zero_43bits, general_inbld_flag
  b.u(12, 0);
  b.u(8, 120);  // general_level_idc
}

// 7.3.2.1
std::vector<uint8_t> StreamWriter::vps() const {
  BitWriter b;
  b.u(4, 0);       // vps_video_parameter_set_id
  b.u(1, 1);       // vps_base_layer_internal_flag
  b.u(1, 1);       // vps_base_layer_available_flag
  b.u(6, 0);       // vps_max_layers_minus1
  b.u(3, 0);       // vps_max_sub_layers_minus1
  b.u(1, 1);       // vps_temporal_id_nesting_flag
  b.u(16, 0xffff);
  profile_tier_level(b);
  b.u(1, 1);  // vps_sub_layer_ordering_info_present_flag
  b.ue(1);    // vps_max_dec_pic_buffering_minus1
  b.ue(0);    // vps_max_num_reorder_pics
  b.ue(0);    // vps_max_latency_increase_plus1
  b.u(6, 0);  // vps_max_layer_id
  b.ue(0);    // vps_num_layer_sets_minus1
  b.u(1, 0);  // vps_timing_info_present_flag
  b.u(1, 0);  // vps_extension_flag
  b.trailing_bits();
  return b.bytes();
}

// 7.3.2.2
std::vector<uint8_t> StreamWriter::sps() const {
  BitWriter b;
  b.u(4, 0);  // sps_video_parameter_set_id
  b.u(3, 0);  // sps_max_sub_layers_minus1
  b.u(1, 1);  // sps_temporal_id_nesting_flag
  profile_tier_level(b);
  b.ue(0);  // sps_seq_parameter_set_id
  b.ue(1);  // chroma_format_idc
  b.ue(uint32_t(p_.width));
  b.ue(uint32_t(p_.height));
  b.u(1, 0);  // conformance_window_flag
  b.ue(uint32_t(p_.bit_depth - 8));
  b.ue(uint32_t(p_.bit_depth - 8));
  b.ue(4);    // log2_max_pic_order_cnt_lsb_minus4
  b.u(1, 1);  // sps_sub_layer_ordering_info_present_flag
  b.ue(1);    // sps_max_dec_pic_buffering_minus1
  b.ue(0);    // sps_max_num_reorder_pics
  b.ue(0);    // sps_max_latency_increase_plus1
  b.ue(0);    // log2_min_luma_coding_block_size_minus3
  b.ue(uint32_t(p_.log2_ctb_size - 3));
  b.ue(0);    // log2_min_luma_transform_block_size_minus2
  b.ue(uint32_t(std::min(p_.log2_ctb_size, 5) - 2));  // MaxTbLog2SizeY = Min(CtbLog2SizeY, 5)
  b.ue(0);    // max_transform_hierarchy_depth_inter
  b.ue(0);    // max_transform_hierarchy_depth_intra
  b.u(1, 0);  // scaling_list_enabled_flag
  b.u(1, 0);  // amp_enabled_flag
  b.u(1, p_.sao);
  b.u(1, p_.pcm.enabled);
  if (p_.pcm.enabled) {
    b.u(4, uint32_t(p_.pcm.bit_depth_luma - 1));
    b.u(4, uint32_t(p_.pcm.bit_depth_chroma - 1));
    b.ue(uint32_t(p_.pcm.log2_min_size - 3));
    b.ue(uint32_t(p_.pcm.log2_max_size - p_.pcm.log2_min_size));
    b.u(1, p_.pcm.loop_filter_disabled);
  }
  b.ue(1);  // num_short_term_ref_pic_sets: st_ref_pic_set(0) = {-1}
  b.ue(1);  // num_negative_pics
  b.ue(0);  // num_positive_pics
  b.ue(0);  // delta_poc_s0_minus1
  b.u(1, 1);  // used_by_curr_pic_s0_flag
  b.u(1, 0);  // long_term_ref_pics_present_flag
  b.u(1, 1);  // sps_temporal_mvp_enabled_flag
  b.u(1, 1);  // strong_intra_smoothing_enabled_flag
  b.u(1, 0);  // vui_parameters_present_flag
  b.u(1, 0);  // sps_extension_present_flag
  b.trailing_bits();
  return b.bytes();
}

// 7.3.2.3
std::vector<uint8_t> StreamWriter::pps() const {
  BitWriter b;
  b.ue(0);  // pps_pic_parameter_set_id
  b.ue(0);  // pps_seq_parameter_set_id
  b.u(1, p_.dependent_slices_enabled);
  b.u(1, 0);  // output_flag_present_flag
  b.u(3, 0);  // num_extra_slice_header_bits
  b.u(1, 0);  // sign_data_hiding_enabled_flag
  b.u(1, 0);  // cabac_init_present_flag
  b.ue(0);    // num_ref_idx_l0_default_active_minus1
  b.ue(0);    // num_ref_idx_l1_default_active_minus1
  b.se(p_.init_qp - 26);
  b.u(1, 0);  // constrained_intra_pred_flag
  b.u(1, 0);  // transform_skip_enabled_flag
  b.u(1, p_.cu_qp_delta.enabled);
  if (p_.cu_qp_delta.enabled) b.ue(uint32_t(p_.cu_qp_delta.diff_depth));
  b.se(0);    // pps_cb_qp_offset
  b.se(0);    // pps_cr_qp_offset
  b.u(1, 0);  // pps_slice_chroma_qp_offsets_present_flag
  b.u(1, 0);  // weighted_pred_flag
  b.u(1, 0);  // weighted_bipred_flag
  b.u(1, 0);  // transquant_bypass_enabled_flag
  b.u(1, p_.tiles.enabled);
  b.u(1, p_.wpp);
  if (p_.tiles.enabled) {
    b.ue(uint32_t(p_.tiles.columns - 1));
    b.ue(uint32_t(p_.tiles.rows - 1));
    b.u(1, p_.tiles.uniform);
    if (!p_.tiles.uniform) {
      for (int i = 0; i < p_.tiles.columns - 1; ++i) b.ue(uint32_t(p_.tiles.column_widths[i] - 1));
      for (int j = 0; j < p_.tiles.rows - 1; ++j) b.ue(uint32_t(p_.tiles.row_heights[j] - 1));
    }
    b.u(1, p_.tiles.loop_filter_across);
  }
  b.u(1, p_.loop_filter_across_slices);
  b.u(1, 1);  // deblocking_filter_control_present_flag
  b.u(1, 1);  // deblocking_filter_override_enabled_flag
  b.u(1, 0);  // pps_deblocking_filter_disabled_flag
  b.se(p_.beta_offset_div2);
  b.se(p_.tc_offset_div2);
  b.u(1, 0);  // pps_scaling_list_data_present_flag
  b.u(1, 0);  // lists_modification_present_flag
  b.ue(0);    // log2_parallel_merge_level_minus2
  b.u(1, 0);  // slice_segment_header_extension_present_flag
  b.u(1, 0);  // pps_extension_present_flag
  b.trailing_bits();
  return b.bytes();
}

std::vector<uint8_t> StreamWriter::run(const std::vector<SynthSource>& frames) {
  std::vector<uint8_t> out;
  put_nal(out, kNalVps, vps());
  put_nal(out, kNalSps, sps());
  put_nal(out, kNalPps, pps());
  for (size_t i = 0; i < frames.size(); ++i) {
    const bool p_slice = int(i) >= int(frames.size()) - p_.p_pictures && i > 0;
    picture(int(i), i == 0, p_slice, frames[i], out);
  }
  return out;
}

void StreamWriter::picture(int poc, bool idr, bool p_slice, const SynthSource& src, std::vector<uint8_t>& out) {
  src_ = &src;
  poc_ = poc;
  idr_ = idr;
  p_slice_ = p_slice;
  ctb_slice_addr_.assign(n_ctb_, -1);
  depth_.assign(size_t(w8_) * (h_ctb_ * ctb_ / 8), 0);
  skip_.assign(depth_.size(), 0);
  // The deblocking offsets are the picture's, in every slice: FFmpeg 5.1 filters some edges of
  // a CTB with the offsets of the CTB to its left (synth_test.cpp).
  const bool dbf_override = rnd(2) == 0;
  const int beta = rnd(13) - 6, tc = rnd(13) - 6;
  SliceHeader sh;
  for (int k = 0; k < int(p_.segments.size()); ++k) {
    const SynthParams::Segment& s = p_.segments[k];
    if (!s.dependent) {
      sh = SliceHeader{};
      sh.sao_luma = p_.sao && rnd(5) != 0;
      sh.sao_chroma = p_.sao && rnd(5) != 0;
      sh.qp_delta = s.qp_delta;
      sh.dbf_override = dbf_override;
      if (sh.dbf_override) {
        sh.dbf_disabled = rnd(5) == 0;
        sh.beta = beta;
        sh.tc = tc;
      }
      sh.lf_across_slices = p_.loop_filter_across_slices;
      sh.max_num_merge_cand = 1 + rnd(5);
      slice_addr_rs_ = ts2rs_[s.first_ctb_ts];
      slice_qp_y_ = p_.init_qp + s.qp_delta;
    }
    segment(k, sh, out);
  }
}

// 7.3.6.1 slice_segment_header() with the entry points of `entry` (sizes of the substreams
// after emulation prevention).
void StreamWriter::slice_header(BitWriter& b, int k, const SliceHeader& sh, const std::vector<size_t>& entry) const {
  const SynthParams::Segment& s = p_.segments[k];
  b.u(1, k == 0);  // first_slice_segment_in_pic_flag
  if (idr_) b.u(1, 0);  // no_output_of_prior_pics_flag
  b.ue(0);  // slice_pic_parameter_set_id
  if (k != 0) {
    if (p_.dependent_slices_enabled) b.u(1, s.dependent);
    b.u(addr_bits_, uint32_t(ts2rs_[s.first_ctb_ts]));  // slice_segment_address
  }
  if (!s.dependent) {
    b.ue(p_slice_ ? 1 : 2);  // slice_type
    if (!idr_) {
      b.u(8, uint32_t(poc_ & 255));  // slice_pic_order_cnt_lsb
      b.u(1, 1);  // short_term_ref_pic_set_sps_flag (the only set: idx not coded)
      b.u(1, 1);  // slice_temporal_mvp_enabled_flag
    }
    if (p_.sao) {
      b.u(1, sh.sao_luma);
      b.u(1, sh.sao_chroma);
    }
    if (p_slice_) {
      b.u(1, 0);  // num_ref_idx_active_override_flag
      // slice_temporal_mvp_enabled_flag: collocated_from_l0 and collocated_ref_idx inferred
      b.ue(uint32_t(5 - sh.max_num_merge_cand));
    }
    b.se(sh.qp_delta);
    b.u(1, sh.dbf_override);  // deblocking_filter_override_flag
    if (sh.dbf_override) {
      b.u(1, sh.dbf_disabled);
      if (!sh.dbf_disabled) {
        b.se(sh.beta);
        b.se(sh.tc);
      }
    }
    if (p_.loop_filter_across_slices && (sh.sao_luma || sh.sao_chroma || !sh.dbf_disabled))
      b.u(1, sh.lf_across_slices);
  }
  if (p_.tiles.enabled || p_.wpp) {
    b.ue(uint32_t(entry.size() - 1));  // num_entry_point_offsets
    if (entry.size() > 1) {
      size_t max = 0;
      for (size_t i = 0; i + 1 < entry.size(); ++i) max = std::max(max, entry[i] - 1);
      int len = 1;
      while ((size_t(1) << len) <= max) ++len;
      b.ue(uint32_t(len - 1));  // offset_len_minus1
      for (size_t i = 0; i + 1 < entry.size(); ++i) b.u(len, uint32_t(entry[i] - 1));
    }
  }
  b.trailing_bits();  // byte_alignment()
}

// 7.3.8.1 slice_segment_data() with the context handling of 9.3.1 and 9.3.2.
void StreamWriter::segment(int k, const SliceHeader& sh, std::vector<uint8_t>& out) {
  const SynthParams::Segment& s = p_.segments[k];
  const int end = k + 1 < int(p_.segments.size()) ? p_.segments[k + 1].first_ctb_ts : n_ctb_;
  cur_sh_ = sh;
  BitWriter data;
  CabacEncoder enc(data);
  data_ = &data;
  enc_ = &enc;
  const int init_type = p_slice_ ? 1 : 0;
  std::vector<size_t> starts = {0};
  ++st_.slice_segments;
  for (int ts = s.first_ctb_ts; ts < end; ++ts) {
    const int rs = ts2rs_[ts];
    const int cx = rs % w_ctb_, cy = rs / w_ctb_;
    int tcol = 0, trow = 0;
    while (cx >= col_bd_[tcol + 1]) ++tcol;
    while (cy >= row_bd_[trow + 1]) ++trow;
    const bool tile_start = ts == 0 || tile_id_[ts] != tile_id_[ts - 1];
    const bool row_start = cx == col_bd_[tcol];
    ctb_slice_addr_[rs] = slice_addr_rs_;
    if (tile_start) {
      ctx_ = init_contexts(init_type, slice_qp_y_);
    } else if (p_.wpp && row_start) {
      // 9.3.1: synchronise with the CTB above and to the right when it is available
      const bool tr = cy > row_bd_[trow] && cx + 1 < col_bd_[tcol + 1] &&
                      ctb_slice_addr_[rs - w_ctb_ + 1] == slice_addr_rs_;
      if (tr) {
        ctx_ = wpp_;
        ++st_.wpp_syncs;
      } else {
        ctx_ = init_contexts(init_type, slice_qp_y_);
      }
    } else if (ts == s.first_ctb_ts) {
      if (s.dependent) {
        ctx_ = ds_;
        ++st_.dependent_carries;
      } else {
        ctx_ = init_contexts(init_type, slice_qp_y_);
      }
    }
    if (s.dependent && ts == s.first_ctb_ts) ++st_.dependent_segments;
    sao(rs, ts);
    coding_quadtree(cx * ctb_, cy * ctb_, p_.log2_ctb_size, 0);
    if (p_.wpp && (cx == col_bd_[tcol] + 1 || col_bd_[tcol + 1] - col_bd_[tcol] == 1)) wpp_ = ctx_;  // 9.3.2.3
    const bool last = ts + 1 == end;
    enc.terminate(last);  // end_of_slice_segment_flag
    if (last) {
      data.align_zero();  // rbsp_slice_segment_trailing_bits(): the stop bit ended the flush
      break;
    }
    const int nrs = ts2rs_[ts + 1];
    const bool next_tile = tile_id_[ts + 1] != tile_id_[ts];
    bool next_row = false;
    for (int i = 0; i < int(col_bd_.size()) - 1; ++i) next_row |= nrs % w_ctb_ == col_bd_[i];
    if ((p_.tiles.enabled && next_tile) || (p_.wpp && (next_row || next_tile))) {
      enc.terminate(1);  // end_of_subset_one_bit
      data.align_zero();  // byte_alignment(): the flush wrote alignment_bit_equal_to_one
      starts.push_back(data.bytes().size());
      enc.init();
    }
  }
  if (p_.dependent_slices_enabled) ds_ = ctx_;
  starts.push_back(data.bytes().size());
  std::vector<size_t> entry;
  for (size_t i = 0; i + 1 < starts.size(); ++i)
    entry.push_back(escaped_size(data.bytes().data() + starts[i], starts[i + 1] - starts[i]));
  st_.entry_points += int(entry.size()) - 1;
  BitWriter hdr;
  slice_header(hdr, k, sh, entry);
  std::vector<uint8_t> rbsp = hdr.bytes();
  rbsp.insert(rbsp.end(), data.bytes().begin(), data.bytes().end());
  put_nal(out, idr_ ? kNalIdrWRadl : kNalTrailR, rbsp);
  data_ = nullptr;
  enc_ = nullptr;
}

// 6.4.1 for the left and above neighbours of a block (always earlier in z-scan order): in the
// picture, already coded, in the same slice and the same tile.
bool StreamWriter::available(int xc, int yc, int xn, int yn) const {
  if (xn < 0 || yn < 0 || xn >= p_.width || yn >= p_.height) return false;
  const int rc = (yc / ctb_) * w_ctb_ + xc / ctb_, rn = (yn / ctb_) * w_ctb_ + xn / ctb_;
  if (ctb_slice_addr_[rn] < 0 || ctb_slice_addr_[rn] != ctb_slice_addr_[rc]) return false;
  return tile_id_[rs2ts_[rn]] == tile_id_[rs2ts_[rc]];
}

// 7.3.8.3 sao(): merges where allowed, otherwise random band or edge offsets.
void StreamWriter::sao(int rs, int ts) {
  if (!cur_sh_.sao_luma && !cur_sh_.sao_chroma) return;
  ++st_.sao_ctbs;
  const int rx = rs % w_ctb_, ry = rs / w_ctb_;
  if (rx > 0) {
    const bool left_in_slice = rs > slice_addr_rs_;
    const bool left_in_tile = tile_id_[ts] == tile_id_[rs2ts_[rs - 1]];
    if (left_in_slice && left_in_tile) {
      const int merge = rnd(4) == 0;
      bin(kSaoMerge, merge);
      if (merge) {
        ++st_.sao_merges;
        return;
      }
    }
  }
  if (ry > 0) {
    const bool up_in_slice = rs - w_ctb_ >= slice_addr_rs_;
    const bool up_in_tile = tile_id_[ts] == tile_id_[rs2ts_[rs - w_ctb_]];
    if (up_in_slice && up_in_tile) {
      const int merge = rnd(4) == 0;
      bin(kSaoMerge, merge);
      if (merge) {
        ++st_.sao_merges;
        return;
      }
    }
  }
  int type[3] = {0, 0, 0};
  for (int c = 0; c < 3; ++c) {
    if ((c == 0 && !cur_sh_.sao_luma) || (c > 0 && !cur_sh_.sao_chroma)) continue;
    if (c < 2) {
      type[c] = rnd(3);  // sao_type_idx: TR cMax 2, first bin context coded, second bypass
      bin(kSaoType, type[c] != 0);
      if (type[c]) enc_->bypass(type[c] == 2);
    } else {
      type[2] = type[1];
    }
    if (!type[c]) continue;
    const int c_max = (1 << (std::min(p_.bit_depth, 10) - 5)) - 1;
    int abs[4];
    for (int i = 0; i < 4; ++i) {
      abs[i] = rnd(4) == 0 ? rnd(c_max + 1) : rnd(4);  // sao_offset_abs: TR, bypass
      for (int j = 0; j < abs[i]; ++j) enc_->bypass(1);
      if (abs[i] < c_max) enc_->bypass(0);
    }
    if (type[c] == 1) {
      for (int i = 0; i < 4; ++i)
        if (abs[i]) enc_->bypass(rnd(2));  // sao_offset_sign
      enc_->bypass_bits(uint32_t(rnd(32)), 5);  // sao_band_position
    } else if (c < 2) {
      enc_->bypass_bits(uint32_t(rnd(4)), 2);  // sao_eo_class_luma/chroma
    }
  }
}

// 7.3.8.4
void StreamWriter::coding_quadtree(int x0, int y0, int log2_size, int depth) {
  const int size = 1 << log2_size;
  int split;
  if (x0 + size <= p_.width && y0 + size <= p_.height && log2_size > 3) {
    split = rnd(100) < (log2_size == 6 ? 70 : log2_size == 5 ? 55 : 45);
    // 9.3.4.2.2 ctxInc: neighbours deeper than this node
    int inc = 0;
    if (available(x0, y0, x0 - 1, y0) && depth_[size_t(y0 / 8) * w8_ + (x0 - 1) / 8] > depth) ++inc;
    if (available(x0, y0, x0, y0 - 1) && depth_[size_t((y0 - 1) / 8) * w8_ + x0 / 8] > depth) ++inc;
    bin(kSplitCu + inc, split);
  } else {
    split = log2_size > 3;
  }
  if (p_.cu_qp_delta.enabled && log2_size >= p_.log2_ctb_size - p_.cu_qp_delta.diff_depth)
    is_cu_qp_delta_coded_ = false;  // a quantization group starts
  if (split) {
    const int h = size / 2;
    coding_quadtree(x0, y0, log2_size - 1, depth + 1);
    if (x0 + h < p_.width) coding_quadtree(x0 + h, y0, log2_size - 1, depth + 1);
    if (y0 + h < p_.height) coding_quadtree(x0, y0 + h, log2_size - 1, depth + 1);
    if (x0 + h < p_.width && y0 + h < p_.height) coding_quadtree(x0 + h, y0 + h, log2_size - 1, depth + 1);
    return;
  }
  for (int y = y0; y < y0 + size; y += 8)
    for (int x = x0; x < x0 + size; x += 8) depth_[size_t(y / 8) * w8_ + x / 8] = uint8_t(depth);
  coding_unit(x0, y0, log2_size);
}

// 7.3.8.5 coding_unit() with no residual: skipped, AMVP with rqt_root_cbf 0, intra or PCM.
void StreamWriter::coding_unit(int x0, int y0, int log2_size) {
  const int size = 1 << log2_size;
  int skip = 0;
  if (p_slice_) {
    const int kind = rnd(100);
    skip = kind < 45;
    int inc = 0;
    if (available(x0, y0, x0 - 1, y0) && skip_[size_t(y0 / 8) * w8_ + (x0 - 1) / 8]) ++inc;
    if (available(x0, y0, x0, y0 - 1) && skip_[size_t((y0 - 1) / 8) * w8_ + x0 / 8]) ++inc;
    bin(kCuSkip + inc, skip);
    for (int y = y0; y < y0 + size; y += 8)
      for (int x = x0; x < x0 + size; x += 8) skip_[size_t(y / 8) * w8_ + x / 8] = uint8_t(skip);
    if (skip) {
      ++st_.skip_cus;
      if (cur_sh_.max_num_merge_cand > 1) {  // merge_idx: TR, first bin context coded
        const int idx = rnd(cur_sh_.max_num_merge_cand);
        bin(kMergeIdx, idx > 0);
        for (int i = 1; i < cur_sh_.max_num_merge_cand - 1 && i <= idx; ++i) enc_->bypass(idx > i);
      }
      return;
    }
    const bool intra = kind >= 65;
    bin(kPredMode, intra);  // pred_mode_flag
    if (!intra) {
      ++st_.amvp_cus;
      bin(kPartMode, 1);   // PART_2Nx2N
      bin(kMergeFlag, 0);  // merge_flag
      mvd_coding();
      bin(kMvpFlag, rnd(2));  // mvp_l0_flag
      bin(kRqtRootCbf, 0);
      return;
    }
  }
  intra_cu(x0, y0, log2_size);
}

void StreamWriter::intra_cu(int x0, int y0, int log2_size) {
  const bool nxn = log2_size == 3 && rnd(4) == 0;
  if (log2_size == 3) bin(kPartMode, !nxn);
  if (!nxn && p_.pcm.enabled && log2_size >= p_.pcm.log2_min_size && log2_size <= p_.pcm.log2_max_size) {
    const int pcm = rnd(100) < p_.pcm.percent;
    enc_->terminate(pcm);  // pcm_flag
    if (pcm) {
      pcm_sample(x0, y0, log2_size);
      return;
    }
  }
  ++st_.intra_cus[log2_size];
  st_.intra_nxn_cus += nxn;
  const int n = nxn ? 4 : 1;
  int prev[4], value[4];
  for (int i = 0; i < n; ++i) {
    prev[i] = rnd(2);
    value[i] = prev[i] ? rnd(3) : rnd(32);
    bin(kPrevIntra, prev[i]);
  }
  for (int i = 0; i < n; ++i) {
    if (prev[i]) {  // mpm_idx: TR cMax 2, bypass
      enc_->bypass(value[i] > 0);
      if (value[i] > 0) enc_->bypass(value[i] > 1);
    } else {
      enc_->bypass_bits(uint32_t(value[i]), 5);  // rem_intra_luma_pred_mode
    }
  }
  const int chroma = rnd(5);  // intra_chroma_pred_mode: 4 is "0", 0..3 "1" + 2 bypass bins
  bin(kChromaMode, chroma != 4);
  if (chroma != 4) enc_->bypass_bits(uint32_t(chroma), 2);
  // transform_tree(): no split_transform_flag (max_transform_hierarchy_depth_intra 0; the split
  // of NxN and of 64x64 above MaxTbLog2SizeY 5 inferred), cbf_cb and cbf_cr 0 at depth 0,
  // cbf_luma 0 in every transform block
  bin(kCbfChroma + 0, 0);
  bin(kCbfChroma + 0, 0);
  const int blocks = nxn || log2_size > 5 ? 4 : 1;
  const int cbf_luma = blocks == 1 && rnd(100) < p_.residual_percent;
  for (int i = 0; i < blocks; ++i) bin(kCbfLuma + (blocks == 4 ? 0 : 1), cbf_luma);
  if (cbf_luma) transform_unit_dc(log2_size);
}

// 7.3.8.10 transform_unit() of a luma block with one coefficient, at DC: cu_qp_delta_abs first
// in a quantization group, then residual_coding() (7.3.8.11) with the last position (0, 0).
void StreamWriter::transform_unit_dc(int log2_size) {
  ++st_.residual_tus;
  if (p_.cu_qp_delta.enabled && !is_cu_qp_delta_coded_) {
    is_cu_qp_delta_coded_ = true;
    const int delta = rnd(17) - 8, a = std::abs(delta);
    // cu_qp_delta_abs: prefix TU cMax 5 (bin 0 ctxInc 0, bins 1..4 ctxInc 1), suffix EG0
    for (int i = 0; i < std::min(a, 5); ++i) bin(kCuQpDeltaAbs + (i ? 1 : 0), 1);
    if (a < 5) {
      bin(kCuQpDeltaAbs + (a ? 1 : 0), 0);
    } else {
      int v = a - 5, k = 0;
      while (v >= (1 << k)) {
        enc_->bypass(1);
        v -= 1 << k;
        ++k;
      }
      enc_->bypass(0);
      enc_->bypass_bits(uint32_t(v), k);
    }
    if (a) enc_->bypass(delta < 0);  // cu_qp_delta_sign_flag
    st_.qp_deltas += a != 0;
  }
  // last_sig_coeff_x_prefix and _y_prefix 0: the first bin, ctxOffset 3 * (log2 - 2) +
  // ((log2 - 1) >> 2) for luma (9.3.4.2.3)
  const int offset = 3 * (log2_size - 2) + ((log2_size - 1) >> 2);
  bin(kLastXPrefix + offset, 0);
  bin(kLastYPrefix + offset, 0);
  // the only coefficient: no coded_sub_block_flag or sig_coeff_flag; level 1..6 as
  // greater1, greater2 and coeff_abs_level_remaining (cRiceParam 0: unary up to 3)
  const int level = 1 + rnd(6);
  bin(kGt1First, level > 1);
  if (level > 1) bin(kGt2First, level > 2);
  enc_->bypass(rnd(2));  // coeff_sign_flag
  if (level > 2) {
    for (int i = 0; i < level - 3; ++i) enc_->bypass(1);
    enc_->bypass(0);
  }
}

// 7.3.8.7 pcm_sample() after pcm_alignment_zero_bits; the encoder starts anew after it (9.3.2.5).
void StreamWriter::pcm_sample(int x0, int y0, int log2_size) {
  ++st_.pcm_cus[log2_size];
  data_->align_zero();  // pcm_alignment_zero_bit
  const int size = 1 << log2_size;
  const int bd[2] = {p_.pcm.bit_depth_luma, p_.pcm.bit_depth_chroma};
  for (int c = 0; c < 3; ++c) {
    const int s = c ? size / 2 : size, xs = c ? x0 / 2 : x0, ys = c ? y0 / 2 : y0;
    const int stride = c ? (src_->width + 1) / 2 : src_->width;
    const int b = bd[c ? 1 : 0];
    for (int y = 0; y < s; ++y)
      for (int x = 0; x < s; ++x) {
        const int v = src_->plane[c][size_t(ys + y) * stride + xs + x];
        data_->u(b, uint32_t(b <= 8 ? v >> (8 - b) : v << (b - 8)));
      }
  }
  enc_->init();
}

// 7.3.8.9 mvd_coding(): small random differences, abs_mvd_minus2 as EG1 (9.3.3.3).
void StreamWriter::mvd_coding() {
  int mvd[2];
  for (int c = 0; c < 2; ++c) mvd[c] = rnd(3) == 0 ? 0 : rnd(41) - 20;
  for (int c = 0; c < 2; ++c) bin(kMvdGt0, mvd[c] != 0);
  for (int c = 0; c < 2; ++c)
    if (mvd[c]) bin(kMvdGt1, std::abs(mvd[c]) > 1);
  for (int c = 0; c < 2; ++c) {
    if (!mvd[c]) continue;
    const int a = std::abs(mvd[c]);
    if (a > 1) {
      int v = a - 2, k = 1;
      while (v >= (1 << k)) {
        enc_->bypass(1);
        v -= 1 << k;
        ++k;
      }
      enc_->bypass(0);
      enc_->bypass_bits(uint32_t(v), k);
    }
    enc_->bypass(mvd[c] < 0);  // mvd_sign_flag
  }
}

}  // namespace

std::vector<uint8_t> synth_write_stream(const SynthParams& p, const std::vector<SynthSource>& frames,
                                        SynthStats* stats) {
  SynthStats local;
  StreamWriter w(p, stats ? *stats : local);
  return w.run(frames);
}

}  // namespace gvc::test
