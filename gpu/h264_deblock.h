// h264_deblock.h (gpu): the H.264 encoder's in-loop deblocking filter on the GPU (deblock.h as a wavefront of one warp per macroblock row)
#pragma once
#include <cuda_runtime_api.h>

#include "common/h264enc/deblock.h"
#include "gpu/device.h"

namespace gvc {
namespace cuda {

// Filters the picture `pic` (device memory) of mb_width x mb_height macroblocks, coded as
// `mbs` (device memory) says, on stream s, with the bits of deblock_picture: every
// macroblock's MbFilters into `filters` (reserved here), then one launch in which a warp
// filters a macroblock row, one macroblock behind the row above. `progress` holds mb_height
// counters in device memory that the caller has zeroed on s. The luma plane and its stride
// must be multiples of 16 bytes, the chroma ones of 8.
Status deblock_frame(const h264::DeblockPlanes& pic, const h264::Macroblock* mbs, int mb_width, int mb_height,
                     const h264::DeblockParams& p, DeviceBuffer& filters, unsigned* progress, cudaStream_t s);

}  // namespace cuda
}  // namespace gvc
