// headers.h: sequence and picture parameter sets and slice headers (7.3.2.1, 7.3.2.2, 7.3.3)
#pragma once

#include <cstdint>

#include "common/bitstream/bitwriter.h"

namespace gvc::h264 {

// The SPS fields this encoder sets (Constrained Baseline, 4:2:0, 8 bits, frames only).
struct Sps {
  int profile_idc = 66;
  bool constraint_set0_flag = true;  // with set1: Constrained Baseline
  bool constraint_set1_flag = true;
  int level_idc = 30;
  int seq_parameter_set_id = 0;
  int log2_max_frame_num_minus4 = 0;
  int pic_order_cnt_type = 2;  // output order = decoding order
  int max_num_ref_frames = 1;
  int pic_width_in_mbs_minus1 = 0;
  int pic_height_in_map_units_minus1 = 0;
  // frame_crop_*_offset in units of 2 luma samples (CropUnitX, CropUnitY for 4:2:0 frames)
  int frame_crop_right_offset = 0;
  int frame_crop_bottom_offset = 0;
};

struct Pps {
  int pic_parameter_set_id = 0;
  int seq_parameter_set_id = 0;
  int num_ref_idx_l0_default_active_minus1 = 0;
  int pic_init_qp_minus26 = 0;
  int chroma_qp_index_offset = 0;
  bool deblocking_filter_control_present_flag = true;
};

enum SliceType { kSliceP = 0, kSliceI = 2 };

struct SliceHeader {
  int first_mb_in_slice = 0;
  int slice_type = kSliceI;  // written + 5: every slice of the picture has this type
  int frame_num = 0;
  bool idr = true;
  int idr_pic_id = 0;
  int nal_ref_idc = 3;
  int num_ref_idx_l0_active = 1;  // P slices; overrides the PPS default when different
  int slice_qp_delta = 0;
  int disable_deblocking_filter_idc = 0;
  int slice_alpha_c0_offset_div2 = 0;
  int slice_beta_offset_div2 = 0;
};

void write_sps(BitWriter& bw, const Sps& sps);
void write_pps(BitWriter& bw, const Pps& pps);
void write_slice_header(BitWriter& bw, const Sps& sps, const Pps& pps, const SliceHeader& sh);

// The smallest level (Table A-1) whose MaxFS, MaxMBPS and MaxDpbMbs hold the frame at `fps`
// with `ref_frames` reference frames.
int level_for(int mb_count, double fps, int ref_frames = 1);

}  // namespace gvc::h264
