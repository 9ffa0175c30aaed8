// params.h: parameters of the H.264 encoder engine, grouped as x264 groups them
#pragma once

#include <cstdint>

namespace gvc::h264 {

struct EncoderParams {
  int width = 0;   // luma samples, even, 16..4096 (cropped from whole macroblocks in the SPS)
  int height = 0;  // luma samples, even, 16..4096

  struct {
    int qp = 26;                    // constant QP of every slice (0..51)
    int chroma_qp_index_offset = 0; // -12..12
  } rc;

  struct {
    bool intra4x4 = true;   // try Intra_4x4 besides Intra_16x16
    bool inter = true;      // P frames (P_L0_16x16, P_Skip); false: every frame is an IDR
    int search_range = 16;  // integer full search, positions -range..range-1 (4..64)
    bool subpel = true;     // quarter-pel refinement of the 16x16 vector
  } analyse;

  struct {
    bool enabled = true;  // in-loop deblocking filter (disable_deblocking_filter_idc 0 or 1)
    int alpha_c0_offset_div2 = 0;  // slice_alpha_c0_offset_div2, -6..6
    int beta_offset_div2 = 0;      // slice_beta_offset_div2, -6..6
  } deblock;

  int slices = 1;        // slices per picture (1..number of macroblocks), equal macroblock counts
  int keyint_max = 250;  // an IDR at least every keyint_max frames
  int level_idc = 0;     // 0: the smallest level whose frame size and MB rate fit (30 fps)
};

}  // namespace gvc::h264
