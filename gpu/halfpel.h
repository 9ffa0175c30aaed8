// halfpel.h (gpu): an H.264 luma reference's full- and half-pel planes (G, b, h, j of 8.4.2.2.1) over a border, on the GPU
//
// Sample (x, y) of plane p, for x in -pad..pw-pad-1 and y in -pad..ph-pad-1 of the picture,
// is at plane[p][(y + pad) * pitch + x + pad]: G is the edge-extended picture, b and h the
// 6-tap half-sample positions, j the 6-tap over unrounded b values, each as the CPU's
// h264::LumaRefPlanes::build and me.h's luma_qpel_sample give them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "common/util/status.h"

namespace gvc {
namespace cuda {

struct HalfPelPlanes {
  uint8_t* plane[4] = {};  // G, b, h, j
  ptrdiff_t pitch = 0;
  int pad = 0;
  int pw = 0, ph = 0;  // samples written per row, rows written
};

// Builds `out` from the width x height luma plane at `ref` (device memory, row stride
// ref_stride), asynchronously on stream s.
Status build_half_pel_planes(const uint8_t* ref, ptrdiff_t ref_stride, int width, int height,
                             const HalfPelPlanes& out, cudaStream_t s);

}  // namespace cuda
}  // namespace gvc
