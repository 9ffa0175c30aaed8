// dpb.h: picture order count (8.3.1), reference picture sets (8.3.2) and DPB output by bumping (C.5.2)
#pragma once

#include <gst/codecparsers/gsth265parser.h>

#include <memory>
#include <vector>

#include "common/hevcdec/picture.h"

namespace gvc::hevc {

// The five RPS lists of 8.3.2 as pictures of the DPB (null: "no reference picture").
struct RefPicSet {
  std::vector<Picture*> st_curr_before, st_curr_after, st_foll, lt_curr, lt_foll;
};

class Dpb {
 public:
  // 8.3.1: PicOrderCntVal of the current picture. `irap_no_rasl` is an IRAP picture with
  // NoRaslOutputFlag = 1; `tid0_candidate` says whether the picture may become prevTid0Pic.
  int derive_poc(const GstH265SPS& sps, const GstH265SliceHdr& sh, bool irap_no_rasl,
                 bool tid0_candidate);

  // 8.3.2: derives the RPS of the current picture and marks every other picture as unused
  // for reference; missing references are generated (8.3.3.2) so decoding can go on.
  void apply_rps(const GstH265SPS& sps, const GstH265SliceHdr& sh, int poc, bool idr,
                 bool irap_no_rasl, RefPicSet& rps, int width, int height, int bd_y, int bd_c);

  // C.5.2.2: output and removal before the current picture is decoded.
  void before_decode(const GstH265SPS& sps, bool irap_no_rasl_not_first,
                     bool no_output_of_prior_pics);
  // Allocates the current picture in the DPB. A picture of the pool is reused only when
  // nothing but the pool holds it (see share()).
  Picture* new_picture();
  // The DPB's own handle on `p` (null if it is none of its pictures): while a copy is held,
  // `p` is not reused for a new picture, even after it has left the DPB.
  std::shared_ptr<Picture> share(const Picture* p) const;
  // C.5.2.3: the current picture is decoded; marks it and bumps what must be output.
  void after_decode(const GstH265SPS& sps, Picture* cur, bool pic_output_flag);
  // End of stream: every remaining picture is output in POC order.
  void flush();

  // Pictures in output order, ready for the caller to take.
  std::vector<std::shared_ptr<Picture>> output;
  // Pictures removed from the DPB (after their output, if any, was put in `output`), for the
  // caller to take: what a reconstructor keeps of them may go (Reconstructor::release).
  std::vector<std::shared_ptr<Picture>> removed;

 private:
  void bump();
  void remove_unused();
  void remove_all();
  std::shared_ptr<Picture> fresh_picture();
  std::vector<std::shared_ptr<Picture>> pics_;
  std::vector<std::shared_ptr<Picture>> pool_;  // every picture allocated, for reuse
  int prev_tid0_poc_ = 0;
  uint64_t counter_ = 0;
};

}  // namespace gvc::hevc
