// encoder.h: the H.264 encoder engine (Constrained Baseline, CAVLC): frames in, Annex-B out
#pragma once

#include <cstdint>
#include <vector>

#include "common/h264enc/headers.h"
#include "common/h264enc/macroblock.h"
#include "common/h264enc/params.h"
#include "common/h264enc/picture.h"
#include "common/util/status.h"

namespace gvc::h264 {

// An I420 input frame of params.width x params.height.
struct FrameIn {
  const uint8_t* plane[3];
  int stride[3];
};

struct EncodedFrame {
  std::vector<uint8_t> annexb;  // one access unit: SPS and PPS before an IDR, then the slices
  bool idr = false;
  int frame_num = 0;
};

class Encoder {
 public:
  // Checks and takes the parameters; the next frame is an IDR.
  Status init(const EncoderParams& params);
  // Encodes one frame; `force_idr` makes it an IDR.
  Status encode(const FrameIn& in, bool force_idr, EncodedFrame& out);
  // The reconstruction of the last encoded frame (after the loop filter), cropped to
  // width x height, as I420 (what a decoder outputs for that frame).
  void recon_i420(std::vector<uint8_t>& out) const;
  // The last frame's macroblocks in raster order.
  const std::vector<Macroblock>& macroblocks() const { return mbs_; }

 private:
  void load_source(const FrameIn& in);

  EncoderParams params_;
  Sps sps_;
  Pps pps_;
  int mb_width_ = 0, mb_height_ = 0;
  Picture src_, rec_, ref_;
  std::vector<Macroblock> mbs_;
  bool have_ref_ = false;
  int frame_num_ = 0;
  int frames_since_idr_ = 0;
  int idr_pic_id_ = 0;
};

}  // namespace gvc::h264
