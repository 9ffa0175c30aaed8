// hevc_output.cu: 16-bit 4:2:0 planes to NV12 or P010 on the GPU (the decoder's output into CUDA memory)
#include "gpu/hevc_output.h"

namespace gvc {
namespace cuda {

namespace {

struct OutputArgs {
  const uint16_t* src[3];
  ptrdiff_t src_stride[3];  // samples
  int x0, y0, w, h, shift;
  SemiPlanarView dst;
};

template <bool kWide>
__device__ inline void put(uint8_t* row, int i, unsigned v, int shift) {
  if (kWide)
    reinterpret_cast<uint16_t*>(row)[i] = uint16_t(v << shift);  // little-endian device
  else
    row[i] = uint8_t(v);
}

template <bool kWide>
__global__ void semi_planar_kernel(const OutputArgs a) {
  const int cx = blockIdx.x * blockDim.x + threadIdx.x, cy = blockIdx.y * blockDim.y + threadIdx.y;
  const int cw = (a.w + 1) / 2, ch = (a.h + 1) / 2;
  if (cx >= cw || cy >= ch) return;
  for (int dy = 0; dy < 2; ++dy) {
    const int y = 2 * cy + dy;
    if (y >= a.h) break;
    const uint16_t* s = a.src[0] + (a.y0 + y) * a.src_stride[0] + a.x0;
    uint8_t* d = a.dst.y + y * a.dst.y_stride;
    for (int dx = 0; dx < 2; ++dx) {
      const int x = 2 * cx + dx;
      if (x < a.w) put<kWide>(d, x, __ldg(&s[x]), a.shift);
    }
  }
  uint8_t* d = a.dst.uv + cy * a.dst.uv_stride;
  const ptrdiff_t cb = (a.y0 / 2 + cy) * a.src_stride[1] + a.x0 / 2 + cx;
  const ptrdiff_t cr = (a.y0 / 2 + cy) * a.src_stride[2] + a.x0 / 2 + cx;
  put<kWide>(d, 2 * cx, __ldg(&a.src[1][cb]), a.shift);
  put<kWide>(d, 2 * cx + 1, __ldg(&a.src[2][cr]), a.shift);
}

}  // namespace

Status hevc_write_semi_planar(const HevcPlane src[3], int x0, int y0, int w, int h, int bit_depth,
                              const SemiPlanarView& dst, cudaStream_t s) {
  if (w <= 0 || h <= 0 || (x0 | y0) & 1 || x0 < 0 || y0 < 0 || x0 + w > src[0].width ||
      y0 + h > src[0].height || bit_depth < 8 || bit_depth > 16)
    return Status::error("hevc_write_semi_planar: window or bit depth out of range");
  OutputArgs a;
  for (int c = 0; c < 3; ++c) {
    a.src[c] = src[c].data;
    a.src_stride[c] = src[c].stride;
  }
  a.x0 = x0;
  a.y0 = y0;
  a.w = w;
  a.h = h;
  a.shift = 16 - bit_depth;
  a.dst = dst;
  const dim3 block(32, 8);
  const dim3 grid(unsigned(((w + 1) / 2 + 31) / 32), unsigned(((h + 1) / 2 + 7) / 8));
  if (bit_depth == 8)
    semi_planar_kernel<false><<<grid, block, 0, s>>>(a);
  else
    semi_planar_kernel<true><<<grid, block, 0, s>>>(a);
  return check(cudaGetLastError(), "semi_planar_kernel");
}

}  // namespace cuda
}  // namespace gvc
