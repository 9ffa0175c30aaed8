// hevc_output.h: a window of 16-bit 4:2:0 planes written as NV12 (8-bit samples) or P010 (more bits), the HEVC decoder's output formats
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dsp/hevc_plane.h"

namespace gvc {

// Two planes: luma, then Cb and Cr interleaved. Strides in bytes.
struct SemiPlanarView {
  uint8_t* y = nullptr;
  ptrdiff_t y_stride = 0;
  uint8_t* uv = nullptr;
  ptrdiff_t uv_stride = 0;
};

// Writes the w x h luma window at (x0, y0) of `src` and the chroma window at (x0 / 2, y0 / 2),
// (w + 1) / 2 x (h + 1) / 2, into `dst`: bytes (NV12) when bit_depth is 8, else 16-bit
// little-endian words holding sample << (16 - bit_depth) (P010 for 10 bits). x0 and y0 even.
void hevc_write_semi_planar(const HevcPlane src[3], int x0, int y0, int w, int h, int bit_depth,
                            const SemiPlanarView& dst);

}  // namespace gvc
