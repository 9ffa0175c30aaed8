// intra_prune.cu: CUDA edge-direction intra-mode pruning (Kirsch, seed 003; Sobel, Pan et al.)
//
// As in seed 003, every sample's edge magnitude and direction is computed by its own thread;
// the per-block decisions follow in the same launch:
// - a block of 256 threads covers kMbs macroblocks of one MB row; it loads the luma tile
//   (16 kMbs + 2) x 18 and the two chroma tiles (8 kMbs + 2) x 10 into shared memory with
//   clamped coordinates, so each neighbour read from a tile is exactly intra_prune.h's clamped
//   read (samples past the right and bottom edges included);
// - each thread computes magnitude and bin of 4 luma and 2 chroma samples (intra_prune.h step 1);
// - one thread per 4x4 block (64 luma, 32 chroma) sums its histogram and writes the Intra4x4
//   mask; one thread per macroblock sums the block histograms into the 16x16 and chroma ones.
//   The sums are of unsigned integers, so the grouping does not change a bit.
#include <cuda_runtime.h>

#include "gpu/intra_prune.h"

namespace gvc {
namespace cuda {
namespace {

constexpr int kMbs = 4;          // macroblocks per block
constexpr int kThreads = 256;
constexpr int kLumaW = 16 * kMbs, kChromaW = 8 * kMbs;
constexpr int kLumaPitch = kLumaW + 2, kChromaPitch = kChromaW + 2;

// kIntraPruneBinMode packed as nibbles (bin b at bits 4b..4b+3).
constexpr uint32_t pack_bin_modes() {
  uint32_t r = 0;
  for (int b = 0; b < 8; b++) r |= uint32_t(kIntraPruneBinMode[b]) << (4 * b);
  return r;
}
constexpr uint32_t kBinModes = pack_bin_modes();

__device__ __forceinline__ int bin_mode(int b) { return int(kBinModes >> (4 * b)) & 15; }
__device__ __forceinline__ int clampi(int v, int lo, int hi) { return min(max(v, lo), hi); }
// luma4x4_blk_x / _y of intra_prune.h (6.4.3), for device code.
__device__ __forceinline__ int blk_x(int idx) { return ((idx >> 2) & 1) * 2 + (idx & 1); }
__device__ __forceinline__ int blk_y(int idx) { return ((idx >> 3) & 1) * 2 + ((idx >> 1) & 1); }

struct PruneArgs {
  DevicePlane y, u, v;
  int mb_cols, mb_rows;
  IntraMbCandidates* out;
};

// Step 1 of intra_prune.h for the tile sample at `t` (its neighbours at +-1 and +-pitch).
template <IntraPruneMethod M>
__device__ __forceinline__ void sample(const uint8_t* t, int pitch, int& mag, int& bin) {
  // Ring: E, NE, N, NW, W, SW, S, SE.
  const int a[8] = {t[1], t[1 - pitch], t[-pitch], t[-1 - pitch],
                    t[-1], t[pitch - 1], t[pitch], t[pitch + 1]};
  if constexpr (M == IntraPruneMethod::Kirsch) {
    int sum = 0;
#pragma unroll
    for (int p = 0; p < 8; p++) sum += a[p];
    int k[8];
#pragma unroll
    for (int d = 0; d < 8; d++) k[d] = 8 * (a[(d + 7) & 7] + a[d] + a[(d + 1) & 7]) - 3 * sum;
    int m = 0;
#pragma unroll
    for (int d = 0; d < 8; d++) m = max(m, abs(k[d]));
    // The least d reaching m with both neighbours reaching it, else the least d reaching it.
    int any = 0, mid = -1;
#pragma unroll
    for (int d = 7; d >= 0; d--) {
      if (abs(k[d]) != m) continue;
      any = d;
      if (abs(k[(d + 7) & 7]) == m && abs(k[(d + 1) & 7]) == m) mid = d;
    }
    const int best = mid >= 0 ? mid : any;
    int kb = 0, kl = 0, kr = 0;
#pragma unroll
    for (int d = 0; d < 8; d++)
      if (d == best) kb = k[d], kl = k[(d + 7) & 7], kr = k[(d + 1) & 7];
    const int left = kb < 0 ? -kl : kl, right = kb < 0 ? -kr : kr;
    int b = 2 * (best & 3);
    if (right > left && 6 * right > 5 * m) b = (b + 1) & 7;
    else if (left > right && 6 * left > 5 * m) b = (b + 7) & 7;
    mag = m;
    bin = b;
  } else {
    int gx = (a[1] + 2 * a[0] + a[7]) - (a[3] + 2 * a[4] + a[5]);
    int gy = (a[3] + 2 * a[2] + a[1]) - (a[5] + 2 * a[6] + a[7]);
    mag = abs(gx) + abs(gy);
    if (gx < 0 || (gx == 0 && gy < 0)) gx = -gx, gy = -gy;
    const int ay = abs(gy);
    const int q = (256 * ay >= 51 * gx) + (256 * ay >= 171 * gx) + (256 * ay >= 383 * gx) +
                  (256 * ay >= 1287 * gx);
    bin = mag == 0 ? 0 : (gy >= 0 ? q : (8 - q) & 7);
  }
}

__device__ __forceinline__ void add(uint32_t (&h)[8], int bin, int mag) {
#pragma unroll
  for (int b = 0; b < 8; b++) h[b] += bin == b ? uint32_t(mag) : 0u;
}

// intra_prune.h step 3 for a 4x4 block: dominant bin (ties: least mode number), its two
// neighbours and DC; DC alone when the histogram is empty.
__device__ __forceinline__ uint16_t mask_4x4(const uint32_t (&h)[8]) {
  int best = -1;
  uint32_t hb = 0;
#pragma unroll
  for (int b = 0; b < 8; b++) {
    const bool better = h[b] > hb || (h[b] == hb && hb != 0 && bin_mode(b) < bin_mode(best));
    if (h[b] != 0 && better) best = b, hb = h[b];
  }
  uint32_t m = 1u << kI4Dc;
  if (best >= 0)
    m |= (1u << bin_mode(best)) | (1u << bin_mode((best + 1) & 7)) |
         (1u << bin_mode((best + 7) & 7));
  return uint16_t(m);
}

// Vertical / horizontal / plane cell of greatest sum (ties: that order), -1 when all zero.
__device__ __forceinline__ int dominant_cell(const uint32_t (&h)[8]) {
  const uint32_t c0 = h[7] + h[0] + h[1], c1 = h[3] + h[4] + h[5], c2 = h[2] + h[6];
  int best = c0 ? 0 : -1;
  uint32_t cb = c0;
  if (c1 > cb) best = 1, cb = c1;
  if (c2 > cb) best = 2;
  return best;
}

template <IntraPruneMethod M>
__global__ void __launch_bounds__(kThreads) prune_kernel(PruneArgs a) {
  __shared__ uint8_t tile_y[18][kLumaPitch];
  __shared__ uint8_t tile_c[2][10][kChromaPitch];
  __shared__ uint16_t mag_y[16][kLumaW];
  __shared__ uint8_t bin_y[16][kLumaW];
  __shared__ uint16_t mag_c[2][8][kChromaW];
  __shared__ uint8_t bin_c[2][8][kChromaW];
  __shared__ uint32_t hist_y[16 * kMbs][8];  // [mb * 16 + luma4x4BlkIdx][bin]
  __shared__ uint32_t hist_c[8 * kMbs][8];   // [mb * 8 + plane * 4 + 4x4 block][bin]

  const int tid = threadIdx.x;
  const int mb_x0 = blockIdx.x * kMbs, mb_y = blockIdx.y;
  const int nmb = min(kMbs, a.mb_cols - mb_x0);

  {
    const int x0 = 16 * mb_x0 - 1, y0 = 16 * mb_y - 1;
    for (int i = tid; i < 18 * kLumaPitch; i += kThreads) {
      const int r = i / kLumaPitch, c = i % kLumaPitch;
      tile_y[r][c] = a.y.data[ptrdiff_t(clampi(y0 + r, 0, a.y.height - 1)) * a.y.stride +
                              clampi(x0 + c, 0, a.y.width - 1)];
    }
    const int cx0 = 8 * mb_x0 - 1, cy0 = 8 * mb_y - 1;
    for (int i = tid; i < 2 * 10 * kChromaPitch; i += kThreads) {
      const int p = i / (10 * kChromaPitch), rc = i % (10 * kChromaPitch);
      const int r = rc / kChromaPitch, c = rc % kChromaPitch;
      const DevicePlane& pl = p ? a.v : a.u;
      tile_c[p][r][c] = pl.data[ptrdiff_t(clampi(cy0 + r, 0, pl.height - 1)) * pl.stride +
                                clampi(cx0 + c, 0, pl.width - 1)];
    }
  }
  __syncthreads();

  for (int i = tid; i < 16 * kLumaW; i += kThreads) {
    const int r = i / kLumaW, c = i % kLumaW;
    int m, b;
    sample<M>(&tile_y[r + 1][c + 1], kLumaPitch, m, b);
    mag_y[r][c] = uint16_t(m);
    bin_y[r][c] = uint8_t(b);
  }
  for (int i = tid; i < 2 * 8 * kChromaW; i += kThreads) {
    const int p = i / (8 * kChromaW), rc = i % (8 * kChromaW);
    const int r = rc / kChromaW, c = rc % kChromaW;
    int m, b;
    sample<M>(&tile_c[p][r + 1][c + 1], kChromaPitch, m, b);
    mag_c[p][r][c] = uint16_t(m);
    bin_c[p][r][c] = uint8_t(b);
  }
  __syncthreads();

  if (tid < 16 * kMbs) {
    const int mb = tid / 16, idx = tid % 16;
    const int bx = 16 * mb + 4 * blk_x(idx), by = 4 * blk_y(idx);
    uint32_t h[8] = {};
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
      for (int c = 0; c < 4; c++) add(h, bin_y[by + r][bx + c], mag_y[by + r][bx + c]);
#pragma unroll
    for (int b = 0; b < 8; b++) hist_y[tid][b] = h[b];
    if (mb < nmb) a.out[size_t(mb_y) * a.mb_cols + mb_x0 + mb].i4x4[idx] = mask_4x4(h);
  } else if (tid >= 64 && tid < 64 + 8 * kMbs) {
    const int j = tid - 64, mb = j / 8, p = (j / 4) & 1, blk = j & 3;
    const int bx = 8 * mb + 4 * (blk & 1), by = 4 * (blk >> 1);
    uint32_t h[8] = {};
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
      for (int c = 0; c < 4; c++) add(h, bin_c[p][by + r][bx + c], mag_c[p][by + r][bx + c]);
#pragma unroll
    for (int b = 0; b < 8; b++) hist_c[j][b] = h[b];
  }
  __syncthreads();

  if (tid < nmb) {
    uint32_t hy[8] = {}, hc[8] = {};
    for (int k = 0; k < 16; k++)
#pragma unroll
      for (int b = 0; b < 8; b++) hy[b] += hist_y[16 * tid + k][b];
    for (int k = 0; k < 8; k++)
#pragma unroll
      for (int b = 0; b < 8; b++) hc[b] += hist_c[8 * tid + k][b];
    constexpr uint8_t kI16[3] = {kI16Vertical, kI16Horizontal, kI16Plane};
    constexpr uint8_t kChroma[3] = {kChromaVertical, kChromaHorizontal, kChromaPlane};
    const int cy = dominant_cell(hy), cc = dominant_cell(hc);
    IntraMbCandidates& o = a.out[size_t(mb_y) * a.mb_cols + mb_x0 + tid];
    o.i16x16 = uint8_t((1u << kI16Dc) | (cy >= 0 ? 1u << kI16[cy] : 0u));
    o.chroma = uint8_t((1u << kChromaDc) | (cc >= 0 ? 1u << kChroma[cc] : 0u));
  }
}

// Method None: every mode of every macroblock.
__global__ void all_modes_kernel(IntraMbCandidates* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  IntraMbCandidates& o = out[i];
#pragma unroll
  for (int k = 0; k < 16; k++) o.i4x4[k] = kAllI4Modes;
  o.i16x16 = kAllI16Modes;
  o.chroma = kAllChromaModes;
}

}  // namespace

Status intra_prune(const DevicePlane& y, const DevicePlane& u, const DevicePlane& v,
                   IntraPruneMethod method, IntraMbCandidates* out, cudaStream_t stream) {
  const int mb_cols = mb_count(y.width), mb_rows = mb_count(y.height);
  if (method == IntraPruneMethod::None) {
    const int n = mb_cols * mb_rows;
    all_modes_kernel<<<(n + 127) / 128, 128, 0, stream>>>(out, n);
    return check(cudaGetLastError(), "intra pruning kernel (all modes)");
  }
  const PruneArgs a{y, u, v, mb_cols, mb_rows, out};
  const dim3 grid((mb_cols + kMbs - 1) / kMbs, mb_rows);
  if (method == IntraPruneMethod::Kirsch)
    prune_kernel<IntraPruneMethod::Kirsch><<<grid, kThreads, 0, stream>>>(a);
  else
    prune_kernel<IntraPruneMethod::Sobel><<<grid, kThreads, 0, stream>>>(a);
  return check(cudaGetLastError(), "intra pruning kernel");
}

}  // namespace cuda
}  // namespace gvc
