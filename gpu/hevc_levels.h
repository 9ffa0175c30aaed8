// hevc_levels.h (gpu): a picture's levels from the parse's coded 4x4 sub-blocks into the dense TU layout the residual cores read
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "common/dsp/hevc_itx.h"
#include "gpu/device.h"

namespace gvc {
namespace cuda {

// Enqueues on `s`: `dense` (dense_count values) cleared, then hevc_scatter_level_blocks
// (common/dsp/hevc_itx.h) of the n entries `blocks` with their levels `packed` (16 each) into
// it; all in device memory, `packed` and `dense` 8-byte aligned. Every entry must lie inside
// `dense`: the decoder's do, as it places each TU after the last and refuses a picture whose
// TUs outgrow it (SliceDecoder::reconstruct_block); this checks n and dense_count, not each
// entry. One thread per row of 4 levels.
Status hevc_expand_levels(const uint32_t* blocks, size_t n, const int16_t* packed, int16_t* dense,
                          size_t dense_count, cudaStream_t s);

}  // namespace cuda
}  // namespace gvc
