// loop_filter.h: the in-loop filter drivers of a decoded picture: deblocking (8.7.2), then SAO (8.7.3)
#pragma once

#include <cstdint>
#include <vector>

#include "common/dsp/hevc_deblock.h"
#include "common/dsp/hevc_sao.h"
#include "common/hevcdec/params.h"
#include "common/hevcdec/picture.h"

namespace gvc::hevc {

// What the filters of one picture need (the frames point into this struct and into the
// FrameState it was planned from; both must outlive its use).
struct LoopFilterPlan {
  std::vector<uint8_t> bs_v, bs_h;  // 8.7.2.4 bS of each unit's left and top edge
  std::vector<int8_t> beta, tc;     // slice_beta_offset_div2 / slice_tc_offset_div2 per unit
  std::vector<uint8_t> enabled, cross;
  int planned_width = -1, planned_height = -1;  // the picture size the per-unit arrays were cleared for
  // Per CTB row, for a plan made row by row as the rows are parsed (begin_loop_filter_plan): 0
  // not planned yet, else 1, plus 2 when one of its edges has bS > 0. Each row's parse writes
  // its own entry.
  std::vector<uint8_t> row_planned;
  bool deblock = false;             // some edge has bS > 0
  bool sao = false;                 // some CTB has SAO
  HevcDeblockFrame deblock_frame;
  HevcSaoFrame sao_frame;
  std::vector<uint16_t> sao_src[3];  // apply_loop_filters: the deblocked picture SAO reads
};

// Derives edges and boundary strengths from the picture's syntax arrays (8.7.2.2-8.7.2.4) and
// the SAO boundary rules (8.7.3), for HevcDeblock and HevcSao or their CUDA versions.
void plan_loop_filters(const PicParams& pp, const FrameState& fs, const Picture& pic, LoopFilterPlan& lf);

// plan_loop_filters in parts, for a caller that plans CTB rows as they are parsed, while their
// syntax arrays are still in the caches: begin_loop_filter_plan sizes the per-unit arrays for
// the picture; plan_deblocking_rows plans CTB rows [ctb_row_begin, ctb_row_end) (row_planned),
// each once it and the row above are parsed, several at once on other threads;
// complete_loop_filter_plan plans the rows left (in bands on the kept threads when none was
// planned), then SAO, and sets the frames' pointers.
void begin_loop_filter_plan(const PicParams& pp, const FrameState& fs, LoopFilterPlan& lf);
void plan_deblocking_rows(const PicParams& pp, const FrameState& fs, const Picture& pic, LoopFilterPlan& lf,
                          int ctb_row_begin, int ctb_row_end);
void complete_loop_filter_plan(const PicParams& pp, const FrameState& fs, const Picture& pic, LoopFilterPlan& lf);

// Plans into `lf`, deblocks, then applies SAO, in place on `pic`, on the CPU. `lf` is scratch
// that a caller keeps from picture to picture, so its buffers are not allocated anew.
void apply_loop_filters(const PicParams& pp, const FrameState& fs, Picture& pic, LoopFilterPlan& lf);

}  // namespace gvc::hevc
