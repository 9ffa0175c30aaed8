// params.cpp: derivation of picture-level values from the SPS/PPS (6.5, 7.4.3, 7.4.5)
#include "common/hevcdec/params.h"

#include <cstring>

#include "common/dsp/hevc_itx.h"

namespace gvc::hevc {
namespace {

struct ScanTables {
  // [log2 size 0..3][scanIdx 0..2][pos]
  ScanPos pos[4][3][64];
  ScanTables() {
    for (int log2 = 0; log2 < 4; ++log2) {
      const int s = 1 << log2;
      // 6.5.3 up-right diagonal scan
      int i = 0, x = 0, y = 0;
      while (i < s * s) {
        while (y >= 0) {
          if (x < s && y < s) pos[log2][0][i++] = {uint8_t(x), uint8_t(y)};
          --y;
          ++x;
        }
        y = x;
        x = 0;
      }
      // 6.5.4 horizontal and 6.5.5 vertical scans
      for (int k = 0; k < s * s; ++k) {
        pos[log2][1][k] = {uint8_t(k % s), uint8_t(k / s)};
        pos[log2][2][k] = {uint8_t(k / s), uint8_t(k % s)};
      }
    }
  }
};
const ScanTables kScan;

// Table 7-6 default values of ScalingList[1..3][matrixId][i] (intra: 0..2, inter: 3..5).
constexpr uint8_t kDefaultIntra[64] = {
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 17, 16, 17, 16, 17, 18, 17, 18, 18, 17, 18, 21,
    19, 20, 21, 20, 19, 21, 24, 22, 22, 24, 24, 22, 22, 24, 25, 25, 27, 30, 27, 25, 25, 29,
    31, 35, 35, 31, 29, 36, 41, 44, 41, 36, 47, 54, 54, 47, 65, 70, 65, 88, 88, 115};
constexpr uint8_t kDefaultInter[64] = {
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 17, 17, 17, 17, 17, 18, 18, 18, 18, 18, 18, 20,
    20, 20, 20, 20, 20, 20, 24, 24, 24, 24, 24, 24, 24, 24, 25, 25, 25, 25, 25, 25, 25, 28,
    28, 28, 28, 28, 28, 33, 33, 33, 33, 33, 41, 41, 41, 41, 54, 54, 54, 71, 71, 91};

// 7.4.5: ScalingFactor from the coded lists (in up-right diagonal order, as GstH265Parser keeps
// them). `sl` null means the default lists of Tables 7-5 and 7-6.
void derive_scaling(const GstH265ScalingList* sl, std::vector<uint8_t> out[4][6]) {
  for (int size_id = 0; size_id < 4; ++size_id)
    for (int matrix_id = 0; matrix_id < 6; ++matrix_id) {
      const int n = 4 << size_id;
      std::vector<uint8_t>& m = out[size_id][matrix_id];
      m.assign(n * n, 16);
      const uint8_t* list;
      int dc = -1;
      if (size_id == 0) {
        list = sl ? sl->scaling_lists_4x4[matrix_id] : nullptr;
      } else if (size_id == 1) {
        list = sl ? sl->scaling_lists_8x8[matrix_id] : (matrix_id < 3 ? kDefaultIntra : kDefaultInter);
      } else if (size_id == 2) {
        list = sl ? sl->scaling_lists_16x16[matrix_id] : (matrix_id < 3 ? kDefaultIntra : kDefaultInter);
        if (sl) dc = sl->scaling_list_dc_coef_minus8_16x16[matrix_id] + 8;
      } else {
        // 4:2:0 uses matrixId 0 and 3 only; GstH265Parser keeps them at index 0 and 1.
        const int gi = matrix_id < 3 ? 0 : 1;
        list = sl ? sl->scaling_lists_32x32[gi] : (matrix_id < 3 ? kDefaultIntra : kDefaultInter);
        if (sl) dc = sl->scaling_list_dc_coef_minus8_32x32[gi] + 8;
      }
      if (!list) continue;  // flat 16 (Table 7-5)
      const int coded = size_id == 0 ? 4 : 8;
      const int rep = n / coded;
      const ScanPos* sp = scan_order(size_id == 0 ? 2 : 3, 0);
      for (int i = 0; i < coded * coded; ++i)
        for (int j = 0; j < rep; ++j)
          for (int k = 0; k < rep; ++k)
            m[(sp[i].y * rep + j) * n + sp[i].x * rep + k] = list[i];
      if (dc >= 0) m[0] = static_cast<uint8_t>(dc);
    }
}

}  // namespace

const ScanPos* scan_order(int log2_block_size, int scan_idx) {
  return kScan.pos[log2_block_size][scan_idx];
}

bool PicParams::derive(const GstH265SPS* s, const GstH265PPS* p) {
  // per picture: the tables cost more than the comparison (the parser zeroes its structures
  // before filling them, so padding compares equal too)
  if (derived_ && s == sps && p == pps && std::memcmp(s, &derived_sps_, sizeof *s) == 0 &&
      std::memcmp(p, &derived_pps_, sizeof *p) == 0)
    return true;
  derived_ = derive_anew(s, p);
  if (derived_) {
    derived_sps_ = *s;
    derived_pps_ = *p;
  }
  return derived_;
}

bool PicParams::derived_from(const GstH265PPS* p) const {
  return derived_ && p == pps && p->sps == sps && std::memcmp(p, &derived_pps_, sizeof *p) == 0 &&
         std::memcmp(sps, &derived_sps_, sizeof *sps) == 0;
}

bool PicParams::derive_anew(const GstH265SPS* s, const GstH265PPS* p) {
  sps = s;
  pps = p;
  width = s->pic_width_in_luma_samples;
  height = s->pic_height_in_luma_samples;
  chroma_format_idc = s->chroma_format_idc;
  if (chroma_format_idc != 1 || s->separate_colour_plane_flag) return false;  // 4:2:0 only
  sub_width_c = sub_height_c = 2;
  bit_depth_y = 8 + s->bit_depth_luma_minus8;
  bit_depth_c = 8 + s->bit_depth_chroma_minus8;
  if (bit_depth_y > 10 || bit_depth_c > 10) return false;
  qp_bd_offset_y = 6 * s->bit_depth_luma_minus8;
  qp_bd_offset_c = 6 * s->bit_depth_chroma_minus8;
  log2_min_cb_size = s->log2_min_luma_coding_block_size_minus3 + 3;
  log2_ctb_size = log2_min_cb_size + s->log2_diff_max_min_luma_coding_block_size;
  ctb_size = 1 << log2_ctb_size;
  log2_min_tb_size = s->log2_min_transform_block_size_minus2 + 2;
  log2_max_tb_size = log2_min_tb_size + s->log2_diff_max_min_transform_block_size;
  if (log2_ctb_size < 4 || log2_ctb_size > 6 || log2_max_tb_size > 5) return false;
  // 7.4.3.2.1: MinTbLog2SizeY < MinCbLog2SizeY, MaxTbLog2SizeY <= CtbLog2SizeY (the TB grid
  // sizes below shift by their difference; GstH265Parser does not check)
  if (log2_min_tb_size >= log2_min_cb_size || log2_max_tb_size > log2_ctb_size) return false;
  // 7.4.3.3.1: diff_cu_qp_delta_depth is at most log2_diff_max_min_luma_coding_block_size
  if (p->diff_cu_qp_delta_depth > s->log2_diff_max_min_luma_coding_block_size) return false;
  // 7.4.3.2.1: the picture is whole minimum coding blocks (the CU walk and the 8x8 deblocking
  // grid rely on it; GstH265Parser does not check)
  const int min_cb_mask = (1 << log2_min_cb_size) - 1;
  if (width <= 0 || height <= 0 || (width & min_cb_mask) || (height & min_cb_mask)) return false;
  // a picture's levels are placed by 30-bit offsets (hevc_level_block): its TUs' 1.5 dense
  // levels per luma sample in 4:2:0 (the parse refuses more) stay below 2^30 up to 715 M luma
  // samples (level 6.2 allows 35.7 M)
  if (int64_t(width) * height * 3 / 2 > int64_t(kHevcLevelBlockOffsetMask)) return false;
  // 7.4.3.2.1: the conformance window lies inside the picture (GstH265Parser computes it
  // without checking, from offsets up to 2^32 - 2 that may wrap; a window past the picture
  // made an output frame of negative size; the sums in 64 bits, where they cannot overflow)
  if (s->conformance_window_flag &&
      (s->crop_rect_width <= 0 || s->crop_rect_height <= 0 || s->crop_rect_x < 0 || s->crop_rect_y < 0 ||
       int64_t(s->crop_rect_x) + s->crop_rect_width > width || int64_t(s->crop_rect_y) + s->crop_rect_height > height))
    return false;
  pic_width_in_ctbs = (width + ctb_size - 1) >> log2_ctb_size;
  pic_height_in_ctbs = (height + ctb_size - 1) >> log2_ctb_size;
  pic_size_in_ctbs = pic_width_in_ctbs * pic_height_in_ctbs;
  log2_min_cu_qp_delta_size = log2_ctb_size - p->diff_cu_qp_delta_depth;
  if (s->pcm_enabled_flag) {
    log2_min_pcm_cb_size = s->log2_min_pcm_luma_coding_block_size_minus3 + 3;
    log2_max_pcm_cb_size = log2_min_pcm_cb_size + s->log2_diff_max_min_pcm_luma_coding_block_size;
    // 7.4.3.2.1: PCM samples are no deeper than the picture's, PCM blocks at most 32x32
    if (s->pcm_sample_bit_depth_luma_minus1 + 1 > bit_depth_y ||
        s->pcm_sample_bit_depth_chroma_minus1 + 1 > bit_depth_c ||
        log2_max_pcm_cb_size > (log2_ctb_size < 5 ? log2_ctb_size : 5))
      return false;
  }

  // 6.5.1 tiles
  const int cols = p->tiles_enabled_flag ? p->num_tile_columns_minus1 + 1 : 1;
  const int rows = p->tiles_enabled_flag ? p->num_tile_rows_minus1 + 1 : 1;
  std::vector<int> col_width(cols), row_height(rows);
  if (!p->tiles_enabled_flag || p->uniform_spacing_flag) {
    for (int i = 0; i < cols; ++i)
      col_width[i] = ((i + 1) * pic_width_in_ctbs) / cols - (i * pic_width_in_ctbs) / cols;
    for (int j = 0; j < rows; ++j)
      row_height[j] = ((j + 1) * pic_height_in_ctbs) / rows - (j * pic_height_in_ctbs) / rows;
  } else {
    int rest = pic_width_in_ctbs;
    for (int i = 0; i < cols - 1; ++i) rest -= (col_width[i] = p->column_width_minus1[i] + 1);
    col_width[cols - 1] = rest;
    rest = pic_height_in_ctbs;
    for (int j = 0; j < rows - 1; ++j) rest -= (row_height[j] = p->row_height_minus1[j] + 1);
    row_height[rows - 1] = rest;
    if (col_width[cols - 1] <= 0 || row_height[rows - 1] <= 0) return false;
  }
  col_bd.assign(cols + 1, 0);
  row_bd.assign(rows + 1, 0);
  for (int i = 0; i < cols; ++i) col_bd[i + 1] = col_bd[i] + col_width[i];
  for (int j = 0; j < rows; ++j) row_bd[j + 1] = row_bd[j] + row_height[j];
  ctb_addr_rs_to_ts.assign(pic_size_in_ctbs, 0);
  ctb_addr_ts_to_rs.assign(pic_size_in_ctbs, 0);
  tile_id.assign(pic_size_in_ctbs, 0);
  for (int rs = 0; rs < pic_size_in_ctbs; ++rs) {
    const int tbx = rs % pic_width_in_ctbs, tby = rs / pic_width_in_ctbs;
    int tile_x = 0, tile_y = 0;
    for (int i = 0; i < cols; ++i)
      if (tbx >= col_bd[i]) tile_x = i;
    for (int j = 0; j < rows; ++j)
      if (tby >= row_bd[j]) tile_y = j;
    int v = 0;
    for (int i = 0; i < tile_x; ++i) v += row_height[tile_y] * col_width[i];
    for (int j = 0; j < tile_y; ++j) v += pic_width_in_ctbs * row_height[j];
    v += (tby - row_bd[tile_y]) * col_width[tile_x] + tbx - col_bd[tile_x];
    ctb_addr_rs_to_ts[rs] = v;
    ctb_addr_ts_to_rs[v] = rs;
  }
  for (int j = 0, t = 0; j < rows; ++j)
    for (int i = 0; i < cols; ++i, ++t)
      for (int y = row_bd[j]; y < row_bd[j + 1]; ++y)
        for (int x = col_bd[i]; x < col_bd[i + 1]; ++x)
          tile_id[ctb_addr_rs_to_ts[y * pic_width_in_ctbs + x]] = t;

  for (auto& a : scaling_factor)
    for (auto& b : a) b.clear();
  if (s->scaling_list_enabled_flag) {
    const GstH265ScalingList* sl = nullptr;
    if (p->scaling_list_data_present_flag)
      sl = &p->scaling_list;
    else if (s->scaling_list_data_present_flag)
      sl = &s->scaling_list;
    derive_scaling(sl, scaling_factor);
  }
  return true;
}

}  // namespace gvc::hevc
