// hevc_sao.h: HEVC sample adaptive offset (8.7.3), frame-level interface and CPU reference
#pragma once

#include <cstdint>
#include <vector>

#include "common/dsp/hevc_plane.h"

namespace gvc {

// SAO parameters of one CTB (7.4.9.3): per component cIdx.
struct HevcSaoCtb {
  uint8_t type_idx[3] = {0, 0, 0};   // SaoTypeIdx: 0 off, 1 band offset, 2 edge offset
  uint8_t band_position[3] = {0, 0, 0};
  uint8_t eo_class[3] = {0, 0, 0};   // SaoEoClass: 0 horizontal, 1 vertical, 2 135°, 3 45°
  int16_t offset_val[3][5] = {};     // SaoOffsetVal[cIdx][i], i = 0..4 (index 0 is 0)
};

struct HevcSaoFrame {
  int log2_ctb_size = 4;
  int width_ctbs = 0, height_ctbs = 0;
  const HevcSaoCtb* ctbs = nullptr;  // raster order
  // Per CTB and component: SAO is applied (slice_sao_luma/chroma_flag of its slice).
  const uint8_t* enabled = nullptr;  // [ctb * 3 + cIdx]
  // Samples that SAO leaves untouched (pcm/transquant bypass), at 4x4 luma granularity.
  const uint8_t* no_filter = nullptr;
  int no_filter_stride = 0;
  // For each CTB and each of its 8 neighbours (dy+1)*3+(dx+1), whether edge offset may read
  // across into that neighbour (picture, slice and tile boundary rules of 8.7.3.2).
  const uint8_t* cross_ok = nullptr;  // [ctb * 9 + k]
  int bit_depth[3] = {8, 8, 8};
};

// `src` holds the deblocked picture (read only); `dst` receives the result and must already
// contain a copy of it (CTBs without SAO stay as they are).
struct HevcSao {
  static void run(const HevcSaoFrame& f, const HevcPlane src[3], const HevcPlane dst[3]);
};

}  // namespace gvc
