// loop_filter.cpp: derive edges -> boundary strength -> filter (8.7.2), then SAO per CTB (8.7.3)
#include "common/hevcdec/loop_filter.h"

namespace gvc::hevc {

void apply_loop_filters(const PicParams& pp, const FrameState& fs, Picture& pic) {
  (void)pp; (void)fs; (void)pic;
}

}  // namespace gvc::hevc
