// hevc_levels.cu: the parse's coded 4x4 sub-blocks scattered into a picture's dense levels on the GPU
#include "gpu/hevc_levels.h"

namespace gvc {
namespace cuda {

namespace {

__global__ void scatter_kernel(const uint32_t* __restrict__ blocks, unsigned n, const uint2* __restrict__ packed,
                               int16_t* __restrict__ dense) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;  // row i & 3 of sub-block i >> 2
  if (i >= 4 * n) return;
  const uint32_t e = __ldg(&blocks[i >> 2]);
  const unsigned row = 4u << (e >> 30);
  int16_t* to = dense + (e & kHevcLevelBlockOffsetMask) + (i & 3) * row;
  *reinterpret_cast<uint2*>(to) = __ldg(&packed[i]);  // 4 levels: the sub-block's rows are 16 packed
}

}  // namespace

Status hevc_expand_levels(const uint32_t* blocks, size_t n, const int16_t* packed, int16_t* dense,
                          size_t dense_count, cudaStream_t s) {
  if (n > dense_count / 16 || dense_count > size_t(kHevcLevelBlockOffsetMask) + 1 ||
      (reinterpret_cast<uintptr_t>(packed) | reinterpret_cast<uintptr_t>(dense)) & 7)
    return Status::error("hevc_expand_levels: more sub-blocks than the dense levels hold, or misaligned");
  if (dense_count) GVC_CUDA_TRY(cudaMemsetAsync(dense, 0, dense_count * sizeof(int16_t), s));
  if (!n) return {};
  const unsigned threads = 256, rows = unsigned(4 * n);
  scatter_kernel<<<(rows + threads - 1) / threads, threads, 0, s>>>(blocks, unsigned(n),
                                                                     reinterpret_cast<const uint2*>(packed), dense);
  return check(cudaGetLastError(), "hevc scatter_kernel");
}

}  // namespace cuda
}  // namespace gvc
