// halfpel.cu: an H.264 luma reference's full- and half-pel planes over a border, a block per tile through shared memory
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

// A block makes a kTileW x kTileH tile of all four planes: the edge-extended samples the tile
// reads (G, 2 rows and columns before it, 3 after) go into shared memory once, then the
// unrounded horizontal 6-tap sums b1 of those rows, from which b (b1 of the row), j (the
// vertical 6-tap over b1) and h (the vertical 6-tap over G) follow. Reads past the picture take
// the nearest edge sample (the extended picture); j's vertical taps over b1 rows beyond the
// picture then read b1 of the edge row, as the CPU's do. (A thread per sample reading its 36
// samples of G through the cache for j alone took 0.13-0.18 ms at 1080p on an H200.)
constexpr int kTileW = 64, kTileH = 16, kThreadsX = 32, kThreadsY = 8;
constexpr int kGRows = kTileH + 5, kGCols = kTileW + 5;

__global__ void __launch_bounds__(kThreadsX * kThreadsY) half_pel_kernel(Args a) {
  __shared__ uint8_t g[kGRows][kGCols + 3];  // G at tile rows -2..kTileH+2, columns -2..kTileW+2
  __shared__ int16_t b1[kGRows][kTileW];    // b1 at tile rows -2..kTileH+2
  const int x0 = blockIdx.x * kTileW, y0 = blockIdx.y * kTileH;  // in the padded planes
  const int t = threadIdx.y * kThreadsX + threadIdx.x;
  constexpr int kThreads = kThreadsX * kThreadsY;
  for (int i = t; i < kGRows * kGCols; i += kThreads) {
    const int r = i / kGCols, c = i % kGCols;
    const int sy = min(max(y0 - a.out.pad + r - 2, 0), a.height - 1);
    const int sx = min(max(x0 - a.out.pad + c - 2, 0), a.width - 1);
    g[r][c] = a.ref[ptrdiff_t(sy) * a.ref_stride + sx];
  }
  __syncthreads();
  for (int i = t; i < kGRows * kTileW; i += kThreads) {
    const int r = i / kTileW, c = i % kTileW;
    const uint8_t* row = &g[r][c];  // G at column c - 2
    b1[r][c] = int16_t(tap6(row[0], row[1], row[2], row[3], row[4], row[5]));
  }
  __syncthreads();
  for (int j = 0; j < kTileH; j += kThreadsY) {
    const int ty = threadIdx.y + j, y = y0 + ty;
    if (y >= a.out.ph) break;
    for (int i = 0; i < kTileW; i += kThreadsX) {
      const int tx = threadIdx.x + i, x = x0 + tx;
      if (x >= a.out.pw) break;
      const int r = ty + 2, c = tx + 2;  // the sample's G in the tile
      const ptrdiff_t o = ptrdiff_t(y) * a.out.pitch + x;
      a.out.plane[0][o] = g[r][c];
      a.out.plane[1][o] = clip_pixel((b1[r][tx] + 16) >> 5);
      a.out.plane[2][o] =
          clip_pixel((tap6(g[r - 2][c], g[r - 1][c], g[r][c], g[r + 1][c], g[r + 2][c], g[r + 3][c]) + 16) >> 5);
      a.out.plane[3][o] = clip_pixel(
          (tap6(b1[r - 2][tx], b1[r - 1][tx], b1[r][tx], b1[r + 1][tx], b1[r + 2][tx], b1[r + 3][tx]) + 512) >> 10);
    }
  }
}

}  // namespace

Status build_half_pel_planes(const uint8_t* ref, ptrdiff_t ref_stride, int width, int height,
                             const HalfPelPlanes& out, cudaStream_t s) {
  if (width <= 0 || height <= 0 || out.pw <= 0 || out.ph <= 0) return Status::error("empty half-pel planes");
  Args a{ref, ref_stride, width, height, out};
  const dim3 block(kThreadsX, kThreadsY), grid((out.pw + kTileW - 1) / kTileW, (out.ph + kTileH - 1) / kTileH);
  half_pel_kernel<<<grid, block, 0, s>>>(a);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return Status::error(std::string("half-pel plane kernel: ") + cudaGetErrorString(e));
  return {};
}

}  // namespace cuda
}  // namespace gvc
