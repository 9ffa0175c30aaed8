// halfpel.cu: an H.264 luma reference's full- and half-pel planes over a border, one thread per sample of the four planes
#include "gpu/halfpel.h"

namespace gvc {
namespace cuda {

namespace {

struct Args {
  const uint8_t* ref;
  ptrdiff_t ref_stride;
  int width, height;
  HalfPelPlanes out;
};

__device__ __forceinline__ int tap6(int e, int f, int g, int h, int i, int j) {
  return e - 5 * f + 20 * g + 20 * h - 5 * i + j;
}

__device__ __forceinline__ uint8_t clip_pixel(int v) { return uint8_t(min(max(v, 0), 255)); }

// Reads past the picture take the nearest edge sample (the extended picture); j's vertical
// taps over b1 rows beyond the picture then read b1 of the edge row, as the CPU's do.
__global__ void half_pel_kernel(Args a) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= a.out.pw || y >= a.out.ph) return;
  const int sx = x - a.out.pad, sy = y - a.out.pad;
  auto G = [&](int dx, int dy) {
    return int(a.ref[ptrdiff_t(min(max(sy + dy, 0), a.height - 1)) * a.ref_stride +
                     min(max(sx + dx, 0), a.width - 1)]);
  };
  auto b1 = [&](int dy) { return tap6(G(-2, dy), G(-1, dy), G(0, dy), G(1, dy), G(2, dy), G(3, dy)); };
  const ptrdiff_t o = ptrdiff_t(y) * a.out.pitch + x;
  a.out.plane[0][o] = uint8_t(G(0, 0));
  a.out.plane[1][o] = clip_pixel((b1(0) + 16) >> 5);
  a.out.plane[2][o] = clip_pixel((tap6(G(0, -2), G(0, -1), G(0, 0), G(0, 1), G(0, 2), G(0, 3)) + 16) >> 5);
  a.out.plane[3][o] = clip_pixel((tap6(b1(-2), b1(-1), b1(0), b1(1), b1(2), b1(3)) + 512) >> 10);
}

}  // namespace

Status build_half_pel_planes(const uint8_t* ref, ptrdiff_t ref_stride, int width, int height,
                             const HalfPelPlanes& out, cudaStream_t s) {
  if (width <= 0 || height <= 0 || out.pw <= 0 || out.ph <= 0) return Status::error("empty half-pel planes");
  Args a{ref, ref_stride, width, height, out};
  const dim3 block(32, 8), grid((out.pw + 31) / 32, (out.ph + 7) / 8);
  half_pel_kernel<<<grid, block, 0, s>>>(a);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return Status::error(std::string("half-pel plane kernel: ") + cudaGetErrorString(e));
  return {};
}

}  // namespace cuda
}  // namespace gvc
