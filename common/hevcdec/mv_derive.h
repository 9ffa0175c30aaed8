// mv_derive.h: luma motion vector derivation: merge mode and AMVP with temporal prediction (8.5.3.2)
#pragma once

#include <gst/codecparsers/gsth265parser.h>

#include "common/hevcdec/params.h"
#include "common/hevcdec/picture.h"
#include "common/hevcdec/syntax.h"

namespace gvc::hevc {

// What the derivation reads besides the prediction block: the slice, its reference lists,
// the current picture's motion field so far and the collocated picture.
struct MvEnv {
  const PicParams* pp = nullptr;
  const GstH265SliceHdr* sh = nullptr;
  const RefPicLists* refs = nullptr;
  const Picture* cur = nullptr;
  const Picture* col = nullptr;   // ColPic; null when slice_temporal_mvp_enabled_flag is 0
  int max_num_merge_cand = 5;     // MaxNumMergeCand
  bool no_backward_pred = false;  // NoBackwardPredFlag
  // 6.4.1 z-scan order availability of (xNbY, yNbY) from (xCurr, yCurr), given `zscan_self`.
  bool (*zscan_available)(const void* self, int x_curr, int y_curr, int x_nb, int y_nb) = nullptr;
  const void* zscan_self = nullptr;
};

// A prediction block inside its coding block (8.5.3.2.1 inputs).
struct PbPos {
  int x_cb, y_cb, n_cb_s;
  int x_pb, y_pb, w, h;
  int part_idx;
  PartMode part_mode;
};

// 8.5.3.2.2 merge mode: the motion of candidate merge_idx.
MvField derive_merge(const MvEnv& env, const PbPos& pb, int merge_idx);

// 8.5.3.2.6 luma motion vector predictor mvpLX for list X, refIdxLX and mvp_lX_flag.
void derive_amvp(const MvEnv& env, const PbPos& pb, int X, int ref_idx, int mvp_flag, int mvp[2]);

}  // namespace gvc::hevc
