// picture.h: a decoded HEVC picture and the per-picture syntax arrays the loop filters read
#pragma once

#include <cstdint>
#include <vector>

#include "common/dsp/hevc_plane.h"
#include "common/dsp/hevc_sao.h"

namespace gvc::hevc {

enum PredMode : uint8_t { MODE_NONE = 0, MODE_INTER = 1, MODE_INTRA = 2 };

// A decoded picture and its DPB state (8.3.2, C.5.2).
struct Picture {
  std::vector<uint16_t> buf[3];
  HevcPlane plane[3];
  int bit_depth_y = 8, bit_depth_c = 8;
  int poc = 0;
  bool short_term_ref = false, long_term_ref = false;
  bool needed_for_output = false;
  int pic_latency_count = 0;
  int crop_x = 0, crop_y = 0, crop_w = 0, crop_h = 0;  // conformance window, luma samples
  uint64_t decode_index = 0;

  void allocate(int width, int height, int bd_y, int bd_c) {
    const int cw = (width + 1) / 2, ch = (height + 1) / 2;
    const int w[3] = {width, cw, cw}, h[3] = {height, ch, ch};
    for (int c = 0; c < 3; ++c) {
      buf[c].assign(size_t(w[c]) * h[c], 0);
      plane[c] = {buf[c].data(), w[c], w[c], h[c]};
    }
    bit_depth_y = bd_y;
    bit_depth_c = bd_c;
  }
  bool is_reference() const { return short_term_ref || long_term_ref; }
};

// Slice-segment values the loop filters need, one entry per slice segment of the picture.
struct SliceInfo {
  int slice_addr_rs = 0;  // address of the first CTB of the (independent) slice
  bool deblocking_disabled = false;
  int beta_offset_div2 = 0, tc_offset_div2 = 0;
  bool loop_filter_across_slices = false;
  bool sao_luma = false, sao_chroma = false;
};

// Per-picture syntax arrays at 4x4 luma granularity ("units") and per CTB.
struct FrameState {
  int w4 = 0, h4 = 0;
  std::vector<uint8_t> pred_mode;   // PredMode
  std::vector<uint8_t> skip_flag;   // cu_skip_flag
  std::vector<uint8_t> ct_depth;    // CtDepth
  std::vector<uint8_t> intra_mode;  // IntraPredModeY
  std::vector<uint8_t> no_filter;   // cu_transquant_bypass or PCM with loop filter disabled
  std::vector<uint8_t> pcm;         // pcm_flag
  std::vector<int8_t> qp_y;         // QpY
  std::vector<uint8_t> nz_luma;     // the luma transform block has non-zero levels
  std::vector<uint8_t> edge_v, edge_h;  // 1: transform block edge, 2: prediction block edge (bits)
  std::vector<int16_t> ctb_slice;   // index into slices; -1: CTB not decoded
  std::vector<HevcSaoCtb> sao;      // per CTB
  std::vector<SliceInfo> slices;

  void reset(int width, int height, int n_ctbs) {
    w4 = (width + 63) / 64 * 16 + 16;
    h4 = (height + 63) / 64 * 16 + 16;
    const size_t n = size_t(w4) * h4;
    pred_mode.assign(n, MODE_NONE);
    skip_flag.assign(n, 0);
    ct_depth.assign(n, 0);
    intra_mode.assign(n, 1);
    no_filter.assign(n, 0);
    pcm.assign(n, 0);
    qp_y.assign(n, 0);
    nz_luma.assign(n, 0);
    edge_v.assign(n, 0);
    edge_h.assign(n, 0);
    ctb_slice.assign(n_ctbs, -1);
    sao.assign(n_ctbs, HevcSaoCtb{});
    slices.clear();
  }
  size_t idx(int x_luma, int y_luma) const { return size_t(y_luma >> 2) * w4 + (x_luma >> 2); }
};

}  // namespace gvc::hevc
