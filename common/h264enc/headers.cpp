// headers.cpp: sequence and picture parameter sets and slice headers (7.3.2.1, 7.3.2.2, 7.3.3)
#include "common/h264enc/headers.h"

namespace gvc::h264 {

void write_sps(BitWriter& bw, const Sps& s) {
  bw.put_bits(8, uint32_t(s.profile_idc));
  bw.put_bit(s.constraint_set0_flag);
  bw.put_bit(s.constraint_set1_flag);
  bw.put_bits(4, 0);  // constraint_set2..5_flag
  bw.put_bits(2, 0);  // reserved_zero_2bits
  bw.put_bits(8, uint32_t(s.level_idc));
  bw.put_ue(uint32_t(s.seq_parameter_set_id));
  bw.put_ue(uint32_t(s.log2_max_frame_num_minus4));
  bw.put_ue(uint32_t(s.pic_order_cnt_type));
  bw.put_ue(uint32_t(s.max_num_ref_frames));
  bw.put_bit(0);  // gaps_in_frame_num_value_allowed_flag
  bw.put_ue(uint32_t(s.pic_width_in_mbs_minus1));
  bw.put_ue(uint32_t(s.pic_height_in_map_units_minus1));
  bw.put_bit(1);  // frame_mbs_only_flag
  bw.put_bit(1);  // direct_8x8_inference_flag
  bool crop = s.frame_crop_right_offset || s.frame_crop_bottom_offset;
  bw.put_bit(crop);  // frame_cropping_flag
  if (crop) {
    bw.put_ue(0);  // frame_crop_left_offset
    bw.put_ue(uint32_t(s.frame_crop_right_offset));
    bw.put_ue(0);  // frame_crop_top_offset
    bw.put_ue(uint32_t(s.frame_crop_bottom_offset));
  }
  bw.put_bit(0);  // vui_parameters_present_flag
  bw.rbsp_trailing_bits();
}

void write_pps(BitWriter& bw, const Pps& p) {
  bw.put_ue(uint32_t(p.pic_parameter_set_id));
  bw.put_ue(uint32_t(p.seq_parameter_set_id));
  bw.put_bit(0);  // entropy_coding_mode_flag: CAVLC
  bw.put_bit(0);  // bottom_field_pic_order_in_frame_present_flag
  bw.put_ue(0);   // num_slice_groups_minus1
  bw.put_ue(uint32_t(p.num_ref_idx_l0_default_active_minus1));
  bw.put_ue(0);      // num_ref_idx_l1_default_active_minus1
  bw.put_bit(0);     // weighted_pred_flag
  bw.put_bits(2, 0); // weighted_bipred_idc
  bw.put_se(p.pic_init_qp_minus26);
  bw.put_se(0);  // pic_init_qs_minus26
  bw.put_se(p.chroma_qp_index_offset);
  bw.put_bit(p.deblocking_filter_control_present_flag);
  bw.put_bit(0);  // constrained_intra_pred_flag
  bw.put_bit(0);  // redundant_pic_cnt_present_flag
  bw.rbsp_trailing_bits();
}

void write_slice_header(BitWriter& bw, const Sps& sps, const Pps& pps, const SliceHeader& sh) {
  bw.put_ue(uint32_t(sh.first_mb_in_slice));
  bw.put_ue(uint32_t(sh.slice_type + 5));
  bw.put_ue(uint32_t(pps.pic_parameter_set_id));
  bw.put_bits(sps.log2_max_frame_num_minus4 + 4, uint32_t(sh.frame_num));
  if (sh.idr) bw.put_ue(uint32_t(sh.idr_pic_id));
  // pic_order_cnt_type 2: no POC syntax; no redundant_pic_cnt
  if (sh.slice_type == kSliceP) {
    bool override = sh.num_ref_idx_l0_active != pps.num_ref_idx_l0_default_active_minus1 + 1;
    bw.put_bit(override);  // num_ref_idx_active_override_flag
    if (override) bw.put_ue(uint32_t(sh.num_ref_idx_l0_active - 1));
    bw.put_bit(0);  // ref_pic_list_modification_flag_l0
  }
  if (sh.nal_ref_idc != 0) {  // dec_ref_pic_marking()
    if (sh.idr) {
      bw.put_bit(0);  // no_output_of_prior_pics_flag
      bw.put_bit(0);  // long_term_reference_flag
    } else {
      bw.put_bit(0);  // adaptive_ref_pic_marking_mode_flag: sliding window
    }
  }
  bw.put_se(sh.slice_qp_delta);
  if (pps.deblocking_filter_control_present_flag) {
    bw.put_ue(uint32_t(sh.disable_deblocking_filter_idc));
    if (sh.disable_deblocking_filter_idc != 1) {
      bw.put_se(sh.slice_alpha_c0_offset_div2);
      bw.put_se(sh.slice_beta_offset_div2);
    }
  }
}

int level_for(int mb_count, double fps, int ref_frames) {
  struct Level { int idc, max_fs, max_mbps, max_dpb_mbs; };
  static const Level kLevels[] = {
      {10, 99, 1485, 396},          {11, 396, 3000, 900},          {12, 396, 6000, 2376},
      {13, 396, 11880, 2376},       {20, 396, 11880, 2376},        {21, 792, 19800, 4752},
      {22, 1620, 20250, 8100},      {30, 1620, 40500, 8100},       {31, 3600, 108000, 18000},
      {32, 5120, 216000, 20480},    {40, 8192, 245760, 32768},     {41, 8192, 245760, 32768},
      {42, 8704, 522240, 34816},    {50, 22080, 589824, 110400},   {51, 36864, 983040, 184320},
      {52, 36864, 2073600, 184320},
  };
  for (const Level& l : kLevels)
    if (mb_count <= l.max_fs && mb_count * fps <= l.max_mbps && mb_count * ref_frames <= l.max_dpb_mbs)
      return l.idc;
  return 52;
}

}  // namespace gvc::h264
