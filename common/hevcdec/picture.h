// picture.h: a decoded HEVC picture and the per-picture syntax arrays the loop filters read
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/dsp/hevc_plane.h"
#include "common/dsp/hevc_sao.h"
#include "common/util/progress.h"

namespace gvc::hevc {

enum PredMode : uint8_t { MODE_NONE = 0, MODE_INTER = 1, MODE_INTRA = 2 };

struct Picture;

// Motion of one 4x4 luma unit (8.5.3.2 outputs): pred_flag bit X is predFlagLX; a list that is
// not used has mv 0 and ref_idx -1, so two fields compare member by member. pred_flag 0: intra.
struct MvField {
  int16_t mv[2][2] = {{0, 0}, {0, 0}};  // [list][0 = x, 1 = y], quarter luma samples
  int8_t ref_idx[2] = {-1, -1};
  uint8_t pred_flag = 0;
  bool operator==(const MvField& o) const {
    return pred_flag == o.pred_flag && ref_idx[0] == o.ref_idx[0] && ref_idx[1] == o.ref_idx[1] &&
           mv[0][0] == o.mv[0][0] && mv[0][1] == o.mv[0][1] && mv[1][0] == o.mv[1][0] &&
           mv[1][1] == o.mv[1][1];
  }
};

// RefPicList0/1 of one slice (8.3.4), with what the collocated-picture process of a later
// picture needs once these pictures may have left the DPB: their POC and whether they were
// long-term references when this slice was decoded (LongTermRefPic, 8.5.3.2.8).
struct RefPicLists {
  int n[2] = {0, 0};  // num_ref_idx_lX_active_minus1 + 1 (0 for unused lists)
  Picture* pic[2][16] = {};
  int poc[2][16] = {};
  uint8_t long_term[2][16] = {};
};

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
  // False while the samples exist only on a reconstructor's device (keeps_pictures).
  bool samples_on_host = true;

  // Motion field at 4x4 luma units, kept with the picture for TMVP in later pictures (read
  // at ((x >> 4) << 4, (y >> 4) << 4), the 16x16 compression of 8.5.3.2.8).
  std::vector<MvField> mvf;
  int mvf_stride = 0;
  std::vector<int16_t> ctb_slice;         // slice segment index of each CTB (raster)
  std::vector<RefPicLists> slice_refs;    // per slice segment index
  // While the picture is parsed on a thread of its own (Decoder::set_frame_threads): how many
  // luma rows of `mvf` and `ctb_slice` are complete, for a later picture's TMVP to wait on
  // (INT_MAX once the parse has ended, also when it failed). Null: all of them.
  std::shared_ptr<Progress> parsed_rows;
  bool parse_failed = false;  // set by its lane before parsed_rows ends
  uint64_t irap_generation = 0;  // Decoder's count of IRAP pictures started before it

  // `clear_motion` false leaves the motion field's contents for the caller to reset
  // (reset_motion(), on the thread that parses the picture). `host_samples` false gives the
  // planes their sizes but no host memory (data null) unless they have it already, for a
  // picture that a reconstructor keeps on its device (Reconstructor::keeps_pictures): zeroing
  // 25 MB for each 2160p picture in flight, never read, was a tenth of a short stream's parse.
  // ensure_samples() makes them where they are needed after all.
  void allocate(int width, int height, int bd_y, int bd_c, bool clear_motion = true, bool host_samples = true) {
    const int cw = (width + 1) / 2, ch = (height + 1) / 2;
    const int w[3] = {width, cw, cw}, h[3] = {height, ch, ch};
    // A reused picture keeps its old samples when they have the new picture's bit depths
    // (zeroing 3 MB per 1080p picture was 6 % of the parse): decoding writes every sample of an
    // intact picture, and what a damaged one leaves unwritten is still in range for the loop
    // filters. The depths must be those the samples were written with: Dpb::fresh_picture
    // keeps them (it once reset them to 8 with the samples of a 10-bit picture kept, and SAO's
    // band table was indexed with 277: the fuzzer's sao-band-stale-samples-out-of-range).
    const bool keep = bd_y == bit_depth_y && bd_c == bit_depth_c;
    for (int c = 0; c < 3; ++c) {
      const size_t n = size_t(w[c]) * h[c];
      if (!keep || buf[c].size() != n) {
        if (host_samples) {
          buf[c].assign(n, 0);
        } else {
          buf[c].clear();
          buf[c].shrink_to_fit();
        }
      }
      plane[c] = {buf[c].empty() ? nullptr : buf[c].data(), w[c], w[c], h[c]};
    }
    bit_depth_y = bd_y;
    bit_depth_c = bd_c;
    mvf_stride = (width + 63) / 64 * 16 + 16;  // FrameState::w4
    mvf.resize(size_t(mvf_stride) * ((height + 63) / 64 * 16 + 16));
    if (clear_motion) reset_motion();
    ctb_slice.clear();
    slice_refs.clear();
  }
  // The host sample planes of a picture allocated without them (zeroed), where it needs them
  // after all: its PCM samples, its download, the CPU taking over from a failed device.
  void ensure_samples() {
    for (int c = 0; c < 3; ++c) {
      const size_t n = size_t(plane[c].width) * plane[c].height;
      if (buf[c].size() != n) buf[c].assign(n, 0);
      plane[c].data = buf[c].data();
    }
  }
  void reset_motion() { std::fill(mvf.begin(), mvf.end(), MvField{}); }
  const MvField& mv_at(int x_luma, int y_luma) const {
    return mvf[size_t(y_luma >> 2) * mvf_stride + (x_luma >> 2)];
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
