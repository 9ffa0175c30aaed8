// loop_filter.h: the in-loop filter drivers of a decoded picture: deblocking (8.7.2), then SAO (8.7.3)
#pragma once

#include "common/hevcdec/params.h"
#include "common/hevcdec/picture.h"

namespace gvc::hevc {

// Derives edges and boundary strengths from the picture's syntax arrays, deblocks, then
// applies SAO, in place on `pic`.
void apply_loop_filters(const PicParams& pp, const FrameState& fs, Picture& pic);

}  // namespace gvc::hevc
