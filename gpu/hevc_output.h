// hevc_output.h (gpu): a window of 16-bit 4:2:0 planes on the device written as NV12 or P010, the CUDA counterpart of hevc_write_semi_planar
#pragma once

#include <cuda_runtime_api.h>

#include "common/dsp/hevc_output.h"
#include "common/dsp/hevc_plane.h"
#include "gpu/device.h"

namespace gvc {
namespace cuda {

// Enqueues on `s` what hevc_write_semi_planar (common/dsp/hevc_output.h) does, with `src` and
// `dst` in device memory; one thread per chroma sample pair and its 2x2 luma samples.
Status hevc_write_semi_planar(const HevcPlane src[3], int x0, int y0, int w, int h, int bit_depth,
                              const SemiPlanarView& dst, cudaStream_t s);

}  // namespace cuda
}  // namespace gvc
