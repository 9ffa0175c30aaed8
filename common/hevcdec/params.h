// params.h: values derived from the active SPS and PPS (7.4.3, 6.5 scanning arrays, 7.4.5 scaling)
#pragma once

#include <gst/codecparsers/gsth265parser.h>

#include <cstdint>
#include <vector>

namespace gvc::hevc {

// 6.5.3-6.5.5 scan orders: [log2 block size 0..3][scanIdx 0 = diagonal, 1 = horizontal,
// 2 = vertical][sPos] -> (x, y).
struct ScanPos {
  uint8_t x, y;
};
const ScanPos* scan_order(int log2_block_size, int scan_idx);

// Everything the slice-data decoder needs from one SPS/PPS pair.
struct PicParams {
  const GstH265SPS* sps = nullptr;
  const GstH265PPS* pps = nullptr;

  int width = 0, height = 0;  // pic_width/height_in_luma_samples
  int chroma_format_idc = 1;
  int sub_width_c = 2, sub_height_c = 2;
  int bit_depth_y = 8, bit_depth_c = 8;
  int qp_bd_offset_y = 0, qp_bd_offset_c = 0;
  int log2_ctb_size = 4, ctb_size = 16;
  int log2_min_cb_size = 3;
  int log2_min_tb_size = 2, log2_max_tb_size = 5;
  int pic_width_in_ctbs = 0, pic_height_in_ctbs = 0, pic_size_in_ctbs = 0;
  int log2_min_cu_qp_delta_size = 0;
  int log2_min_pcm_cb_size = 0, log2_max_pcm_cb_size = 0;

  // 6.5.1 CTB raster and tile scanning conversion.
  std::vector<int> col_bd, row_bd;  // tile boundaries in CTBs (num + 1 entries)
  std::vector<int> ctb_addr_rs_to_ts, ctb_addr_ts_to_rs, tile_id;  // tile_id by ts address

  // 7.4.5 ScalingFactor m[x][y] (raster, x fastest) per [sizeId 0..3][matrixId 0..5]; empty
  // when scaling_list_enabled_flag is 0.
  std::vector<uint8_t> scaling_factor[4][6];

 private:
  bool derive_anew(const GstH265SPS* sps, const GstH265PPS* pps);
  bool derived_ = false;
  GstH265SPS derived_sps_{};  // the contents derive_anew() last succeeded with
  GstH265PPS derived_pps_{};

 public:

  // Derives everything above from `sps` and `pps`; false when they are unsupported. The same
  // parameter sets as the last successful call (same storage, same contents) derive nothing.
  bool derive(const GstH265SPS* sps, const GstH265PPS* pps);
  // Whether `pps` and its SPS are still, in storage and contents, those of the last derive()
  // (a parameter set of the same id may have replaced them since).
  bool derived_from(const GstH265PPS* pps) const;
  // 6.5.2 MinTbAddrZs of the minimum transform block at (x_luma, y_luma) less its CTB's part
  // (CtbAddrRsToTs << 2 * (CtbLog2SizeY - MinTbLog2SizeY)): the bits of the block's column and
  // row inside its CTB interleaved, the column's first. Two blocks in one CTB compare by this;
  // in different CTBs, by the CTBs' tile scan addresses.
  int zscan_in_ctb(int x_luma, int y_luma) const {
    static constexpr uint8_t kSpread[16] = {0, 1, 4, 5, 16, 17, 20, 21, 64, 65, 68, 69, 80, 81, 84, 85};
    const int mask = (1 << (log2_ctb_size - log2_min_tb_size)) - 1;
    return kSpread[(x_luma >> log2_min_tb_size) & mask] | kSpread[(y_luma >> log2_min_tb_size) & mask] << 1;
  }
};

}  // namespace gvc::hevc
