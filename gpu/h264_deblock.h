// h264_deblock.h (gpu): the H.264 encoder's in-loop deblocking filter on the GPU (deblock.h as a wavefront of a block per macroblock row)
#pragma once
#include <cuda_runtime_api.h>

#include "common/h264enc/deblock.h"
#include "gpu/device.h"

namespace gvc {
namespace cuda {

// The loop filter with its device buffers: every macroblock's MbFilters, and the posts through
// which each macroblock row hands the row below the lines its top edges read.
class H264DeblockCore {
 public:
  H264DeblockCore() = default;
  H264DeblockCore(const H264DeblockCore&) = delete;
  H264DeblockCore& operator=(const H264DeblockCore&) = delete;

  // Filters the picture `pic` (device memory) of mb_width x mb_height macroblocks, coded as
  // `mbs` (device memory) says, on stream s, with the bits of deblock_picture: every
  // macroblock's MbFilters, then one launch in which a block (a warp for luma, one for chroma)
  // filters a macroblock row, one macroblock behind the row above. The luma plane and its
  // stride must be multiples of 16 bytes, the chroma ones of 8. Successive calls on one core
  // must use one stream (they reuse its buffers).
  Status run(const h264::DeblockPlanes& pic, const h264::Macroblock* mbs, int mb_width, int mb_height,
             const h264::DeblockParams& p, cudaStream_t s);

 private:
  DeviceBuffer filters_;
  DeviceBuffer posts_;  // kPostWords 64-bit words per macroblock (h264_deblock.cu)
  unsigned epoch_ = 0;  // the last launch's, in the posts it wrote
};

}  // namespace cuda
}  // namespace gvc
