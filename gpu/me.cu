// me.cu: CUDA full-search motion estimation (seed 000), sub-pel refinement and block selection
//
// Integer search, after seed 000 (shared/DESIGN.md §2):
// - a block of 8 warps walks 8 macroblocks of one MB row (4 at ranges over 32); the search
//   window of all of them is loaded once into shared memory (overlapping windows of
//   neighbouring MBs are loaded once), with clamped reads at the frame borders;
// - the window is kept as four copies shifted by 0..3 bytes, so every row of 16 reference
//   samples at any horizontal offset is four aligned 32-bit shared loads;
// - each warp owns one macroblock (the seed's 256-thread block per MB, shrunk to a warp: the
//   per-MB reduction is then one warp's, see docs/performance.md); each thread holds the
//   current MB in registers (64 words) and evaluates columns of kColumn vertically adjacent
//   positions, so each reference row it loads serves kColumn positions; sixteen 4x4 SADs per
//   position (__vsadu4) are summed in registers into all 41 partitions;
// - costs are turned into 32-bit keys (see below) whose unsigned minimum is exactly me.h's
//   order, so each thread keeps 41 keys over all its positions; one warp reduction (REDUX on
//   sm_80+) per MB replaces the seed's second kernel (its per-thread results would be 343 MB
//   per 1080p frame at range 16; see docs/performance.md).
//
// Key of a candidate for one partition, per macroblock:
//   key = (SAD + min(mvc - base, 2^17)) << 14 | rank(position)
// where mvc = lambda * bits(v - pred), base = the least mvc over all positions of the MB, and
// rank = the position's index in the order (dx^2 + dy^2, dy, dx) (a table per range). The
// winner's SAD + mvc - base is at most 65280 (the SAD of the position of least mvc bounds
// it), so it is never clamped and fits 18 bits; a clamped candidate can neither win nor tie.
// Equal keys mean equal position, so min(key) is me.h's order: cost, shortest, raster.
//
// Sub-pel refinement: the reference's half-pel planes (b, h, j of H.264 8.4.2.2.1) are built
// once per call over a border wide enough for every vector, so quarter-pel rows of four
// samples are two aligned loads, a funnel shift and __vavgu4; one block per macroblock sums
// 4x4 SADs of every (partition, candidate) and picks the best of centre + 8 neighbours with
// a 64-bit key in me.h's order.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "gpu/me.h"
#include "gpu/halfpel.h"

namespace gvc {
namespace cuda {
namespace {

constexpr int kMaxThreads = 256;  // 8 warps: 8 macroblocks per block
constexpr int kColumn = 4;       // vertically adjacent positions per thread task
constexpr int kTileX = 32;       // horizontal positions per window load
constexpr int kRankBits = 14;    // (2 * kMaxSearchRange)^2 = 16384 positions
constexpr uint32_t kClampC = 1u << 17;
constexpr uint32_t kInvalidKey = (kClampC << kRankBits) | ((1u << kRankBits) - 1);

struct SearchArgs {
  const uint8_t* cur;
  const uint8_t* ref;
  ptrdiff_t cur_stride, ref_stride;
  int width, height;
  int mb_cols, mb_rows;
  int range;
  uint32_t lambda;
  const MvCost* preds;
  const uint16_t* rank_of_pos;  // [(dy + R) * 2R + dx + R]
  const uint16_t* pos_of_rank;  // (dy + R) << 8 | (dx + R)
  MbPartitions* out;
  int mbs_per_block;
  int rows;         // window rows: 4 * groups + 15
  int pitch;        // window words per row (per copy)
  int copy_stride;  // words between the four shifted copies
};

__device__ __forceinline__ int clampi(int v, int lo, int hi) { return min(max(v, lo), hi); }

// Length of se(v), as me.h's se_bits().
__device__ __forceinline__ uint32_t se_bits_dev(int v) {
  uint32_t code = v > 0 ? 2u * uint32_t(v) - 1u : 2u * uint32_t(-v);
  return 2u * uint32_t(31 - __clz(code + 1u)) + 1u;
}

// The least se_bits(4 * d - p) over d in [-R, R-1]: bits grow with |4d - p|.
__device__ __forceinline__ uint32_t min_bits(int p, int R) {
  int d0 = clampi(p >> 2, -R, R - 1), d1 = clampi((p >> 2) + 1, -R, R - 1);
  return min(se_bits_dev(4 * d0 - p), se_bits_dev(4 * d1 - p));
}

__device__ __forceinline__ uint32_t warp_min(uint32_t v) {
#if __CUDA_ARCH__ >= 800
  return __reduce_min_sync(0xffffffffu, v);
#else
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
#endif
}

__device__ __forceinline__ void update(uint32_t& best, uint32_t sad, uint32_t ckey) {
  best = min(best, (sad << kRankBits) + ckey);
}

// The 41 partition SADs of one position (me.cpp's order) folded into the running keys.
__device__ __forceinline__ void fold_partitions(const uint32_t (&s4)[16], uint32_t ck,
                                                uint32_t (&best)[kNumPartitions]) {
  uint32_t s8[4];
#pragma unroll
  for (int k = 0; k < 4; k++) {
    const int bx = (k & 1) * 2, by = (k >> 1) * 2;
    const uint32_t a = s4[by * 4 + bx], b = s4[by * 4 + bx + 1];
    const uint32_t c = s4[(by + 1) * 4 + bx], d = s4[(by + 1) * 4 + bx + 1];
    update(best[kPart4x4 + 4 * k + 0], a, ck);
    update(best[kPart4x4 + 4 * k + 1], b, ck);
    update(best[kPart4x4 + 4 * k + 2], c, ck);
    update(best[kPart4x4 + 4 * k + 3], d, ck);
    update(best[kPart8x4 + 2 * k + 0], a + b, ck);
    update(best[kPart8x4 + 2 * k + 1], c + d, ck);
    update(best[kPart4x8 + 2 * k + 0], a + c, ck);
    update(best[kPart4x8 + 2 * k + 1], b + d, ck);
    s8[k] = a + b + c + d;
    update(best[kPart8x8 + k], s8[k], ck);
  }
  update(best[kPart16x8 + 0], s8[0] + s8[1], ck);
  update(best[kPart16x8 + 1], s8[2] + s8[3], ck);
  update(best[kPart8x16 + 0], s8[0] + s8[2], ck);
  update(best[kPart8x16 + 1], s8[1] + s8[3], ck);
  update(best[kPart16x16], s8[0] + s8[1] + s8[2] + s8[3], ck);
}

// One warp per macroblock: warp w of the block searches MB mb_x0 + w, over every tile.
__global__ void __launch_bounds__(kMaxThreads, 1) integer_search_kernel(SearchArgs a) {
  extern __shared__ uint32_t smem[];
  uint32_t* win = smem;                                   // [4][copy_stride]
  uint32_t* curs = win + 4 * a.copy_stride;               // [16][4 * mbs_per_block]

  const int tid = threadIdx.x, lane = tid & 31, m = tid >> 5;
  const int R = a.range;
  const int M = a.mbs_per_block;
  const int mb_y = blockIdx.y;
  const int mb_x0 = blockIdx.x * M;
  const int nmb = min(M, a.mb_cols - mb_x0);
  const int x0 = mb_x0 * 16, y0 = mb_y * 16;
  const int groups = (2 * R + kColumn - 1) / kColumn;
  const int cur_words = 4 * M;
  const int nthreads = blockDim.x;

  // Current MBs (edge-extended).
  for (int i = tid; i < 16 * cur_words; i += nthreads) {
    const int r = i / cur_words, w = i % cur_words;
    const int y = clampi(y0 + r, 0, a.height - 1);
    const uint8_t* row = a.cur + ptrdiff_t(y) * a.cur_stride;
    uint32_t v = 0;
#pragma unroll
    for (int b = 0; b < 4; b++) v |= uint32_t(row[clampi(x0 + 4 * w + b, 0, a.width - 1)]) << (8 * b);
    curs[i] = v;
  }

  const int mb = mb_y * a.mb_cols + mb_x0 + min(m, nmb - 1);
  const int px = a.preds ? a.preds[mb].mvx : 0, py = a.preds ? a.preds[mb].mvy : 0;
  const uint32_t base = a.lambda * (min_bits(px, R) + min_bits(py, R));
  uint32_t best[kNumPartitions];
#pragma unroll
  for (int p = 0; p < kNumPartitions; p++) best[p] = 0xffffffffu;

  for (int tile_dx = -R; tile_dx < R; tile_dx += kTileX) {
    const int tx = min(kTileX, R - tile_dx);
    // Window of this tile: columns x0 + tile_dx + [0, 4 * pitch + 3), rows y0 - R + [0, rows).
    __syncthreads();  // the previous tile's readers are done
    const int wx = x0 + tile_dx, wy = y0 - R;
    for (int i = tid; i < a.rows * a.pitch; i += nthreads) {
      const int r = i / a.pitch, w = i % a.pitch;
      const uint8_t* row = a.ref + ptrdiff_t(clampi(wy + r, 0, a.height - 1)) * a.ref_stride;
      const int xb = wx + 4 * w;
      uint32_t lo = 0, hi = 0;
      if (xb >= 0 && xb + 7 <= a.width) {
#pragma unroll
        for (int b = 0; b < 4; b++) lo |= uint32_t(row[xb + b]) << (8 * b);
#pragma unroll
        for (int b = 0; b < 3; b++) hi |= uint32_t(row[xb + 4 + b]) << (8 * b);
      } else {
#pragma unroll
        for (int b = 0; b < 4; b++) lo |= uint32_t(row[clampi(xb + b, 0, a.width - 1)]) << (8 * b);
#pragma unroll
        for (int b = 0; b < 3; b++)
          hi |= uint32_t(row[clampi(xb + 4 + b, 0, a.width - 1)]) << (8 * b);
      }
      const int o = r * a.pitch + w;
      win[o] = lo;
      win[a.copy_stride + o] = __byte_perm(lo, hi, 0x4321);
      win[2 * a.copy_stride + o] = __byte_perm(lo, hi, 0x5432);
      win[3 * a.copy_stride + o] = __byte_perm(lo, hi, 0x6543);
    }
    __syncthreads();

    const int ntasks = tx * groups;
    if (m < nmb && lane < ntasks) {
      uint32_t c[16][4];
#pragma unroll
      for (int r = 0; r < 16; r++) {
        const uint4 v = *reinterpret_cast<const uint4*>(&curs[r * cur_words + 4 * m]);
        c[r][0] = v.x, c[r][1] = v.y, c[r][2] = v.z, c[r][3] = v.w;
      }
      for (int t = lane; t < ntasks; t += 32) {
        const int col = t % tx, g = t / tx;
        const int dx = tile_dx + col, dy0 = -R + kColumn * g;
        const uint32_t bx = se_bits_dev(4 * dx - px);
        uint32_t ck[kColumn];
#pragma unroll
        for (int k = 0; k < kColumn; k++) {
          const int dy = dy0 + k;
          if (dy < R) {
            const uint32_t mvc = a.lambda * (bx + se_bits_dev(4 * dy - py)) - base;
            ck[k] = (min(mvc, kClampC) << kRankBits) |
                    __ldg(&a.rank_of_pos[(dy + R) * 2 * R + dx + R]);
          } else {
            ck[k] = kInvalidKey;
          }
        }
        const uint32_t* wp = win + (col & 3) * a.copy_stride + kColumn * g * a.pitch +
                             ((16 * m + col) >> 2);
        uint32_t acc[kColumn][16];
#pragma unroll
        for (int k = 0; k < kColumn; k++)
#pragma unroll
          for (int i = 0; i < 16; i++) acc[k][i] = 0;
#pragma unroll
        for (int j = 0; j < 16 + kColumn - 1; j++) {
          uint32_t r[4];
#pragma unroll
          for (int b = 0; b < 4; b++) r[b] = wp[j * a.pitch + b];
#pragma unroll
          for (int k = 0; k < kColumn; k++) {
            const int cr = j - k;
            if (cr < 0 || cr >= 16) continue;
#pragma unroll
            for (int b = 0; b < 4; b++)
              acc[k][(cr >> 2) * 4 + b] = __vsadu4(c[cr][b], r[b]) + acc[k][(cr >> 2) * 4 + b];
          }
        }
#pragma unroll
        for (int k = 0; k < kColumn; k++) fold_partitions(acc[k], ck[k], best);
      }
    }
  }
  if (m >= nmb) return;

  // Reduction over the warp; lane p % 32 writes partition p.
  uint32_t mine[2] = {0xffffffffu, 0xffffffffu};
#pragma unroll
  for (int p = 0; p < kNumPartitions; p++) {
    const uint32_t v = warp_min(best[p]);
    if (lane == (p & 31)) mine[p >> 5] = v;
  }
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int p = lane + 32 * h;
    if (p >= kNumPartitions) break;
    const uint32_t key = mine[h];
    const uint32_t pos = __ldg(&a.pos_of_rank[key & ((1u << kRankBits) - 1)]);
    MvCost mc;
    mc.mvx = int16_t(4 * (int(pos & 0xff) - R));
    mc.mvy = int16_t(4 * (int(pos >> 8) - R));
    mc.cost = (key >> kRankBits) + base;
    a.out[mb].part[p] = mc;
  }
}

// --- Sub-pel ------------------------------------------------------------------------------

constexpr int kPlanes = 4;  // 0: full (G), 1: b (half x), 2: h (half y), 3: j (half x and y)

// Table 8-12 as (plane, dx, dy) of one or two samples averaged; plane -1: none.
struct QpelSource {
  int8_t p0, dx0, dy0, p1, dx1, dy1;
};
__constant__ QpelSource kQpelSource[16] = {
    {0, 0, 0, -1, 0, 0},  // G
    {0, 0, 0, 1, 0, 0},   // a
    {1, 0, 0, -1, 0, 0},  // b
    {0, 1, 0, 1, 0, 0},   // c
    {0, 0, 0, 2, 0, 0},   // d
    {1, 0, 0, 2, 0, 0},   // e
    {1, 0, 0, 3, 0, 0},   // f
    {1, 0, 0, 2, 1, 0},   // g
    {2, 0, 0, -1, 0, 0},  // h
    {2, 0, 0, 3, 0, 0},   // i
    {3, 0, 0, -1, 0, 0},  // j
    {3, 0, 0, 2, 1, 0},   // k
    {0, 0, 1, 2, 0, 0},   // n
    {2, 0, 0, 1, 0, 1},   // p
    {3, 0, 0, 1, 0, 1},   // q
    {2, 1, 0, 1, 0, 1},   // r
};

struct RefineArgs {
  const uint8_t* cur;
  ptrdiff_t cur_stride;
  int width, height;
  int mb_cols;
  const uint8_t* planes;  // origin of the full plane's sample (0, 0)
  ptrdiff_t pitch;
  size_t plane_bytes;
  uint32_t lambda;
  int steps;  // 1: half, 2: half then quarter
  int parts;  // partitions [0, parts) are refined (MeParams::refined_partitions)
  const MvCost* preds;
  MbPartitions* out;
};

constexpr int kRefineThreads = 128;
constexpr int kUnits = 112;  // 4x4 blocks over all 41 partitions (7 x 16)

// First 4x4-block index of each partition in the 112-unit list.
__device__ __forceinline__ int unit_partition(int q, int* sub) {
  int p, s;
  if (q < 16) p = 0, s = q;
  else if (q < 48) p = 1 + (q - 16) / 8, s = (q - 16) % 8;
  else if (q < 64) p = 5 + (q - 48) / 4, s = (q - 48) % 4;
  else if (q < 96) p = 9 + (q - 64) / 2, s = (q - 64) % 2;
  else p = 25 + (q - 96), s = 0;
  *sub = s;
  return p;
}

// How many of the 112 units belong to partitions [0, parts): a prefix of the list.
__device__ __forceinline__ int units_of_partitions(int parts) {
  if (parts <= 1) return 16;
  if (parts <= 5) return 16 + 8 * (parts - 1);
  if (parts <= 9) return 48 + 4 * (parts - 5);
  if (parts <= 25) return 64 + 2 * (parts - 9);
  return kUnits - (kNumPartitions - parts);
}

// Geometry in 4x4 blocks (x, y, w, h) of partition p, as common/mv/mv_field.cpp.
__device__ __forceinline__ void partition_geometry4(int i, int* x, int* y, int* w, int* h) {
  if (i == kPart16x16) { *x = 0, *y = 0, *w = 4, *h = 4; return; }
  if (i < kPart8x16) { *x = 0, *y = 2 * (i - kPart16x8), *w = 4, *h = 2; return; }
  if (i < kPart8x8) { *x = 2 * (i - kPart8x16), *y = 0, *w = 2, *h = 4; return; }
  if (i < kPart8x4) {
    const int k = i - kPart8x8;
    *x = 2 * (k & 1), *y = 2 * (k >> 1), *w = 2, *h = 2;
    return;
  }
  if (i < kPart4x8) {
    const int k = (i - kPart8x4) >> 1, j = (i - kPart8x4) & 1;
    *x = 2 * (k & 1), *y = 2 * (k >> 1) + j, *w = 2, *h = 1;
    return;
  }
  if (i < kPart4x4) {
    const int k = (i - kPart4x8) >> 1, j = (i - kPart4x8) & 1;
    *x = 2 * (k & 1) + j, *y = 2 * (k >> 1), *w = 1, *h = 2;
    return;
  }
  const int k = (i - kPart4x4) >> 2, s = (i - kPart4x4) & 3;
  *x = 2 * (k & 1) + (s & 1), *y = 2 * (k >> 1) + (s >> 1), *w = 1, *h = 1;
}

// Four bytes at any address of a 4-byte aligned plane: two aligned loads and a funnel shift.
__device__ __forceinline__ uint32_t load4(const uint8_t* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uint32_t* w = reinterpret_cast<const uint32_t*>(a & ~uintptr_t(3));
  return __funnelshift_r(__ldg(w), __ldg(w + 1), 8 * uint32_t(a & 3));
}

// Order of me.h: cost, then length, then vy, then vx.
__device__ __forceinline__ unsigned long long subpel_key(uint32_t cost, int vx, int vy) {
  const uint32_t len = uint32_t(vx * vx + vy * vy);
  return (static_cast<unsigned long long>(cost) << 38) |
         (static_cast<unsigned long long>(len) << 20) | (uint32_t(vy + 512) << 10) |
         uint32_t(vx + 512);
}

__global__ void __launch_bounds__(kRefineThreads) refine_kernel(RefineArgs a) {
  __shared__ uint32_t scur[16][4];
  __shared__ uint32_t ssad[kNumPartitions][8];
  __shared__ MvCost sbest[kNumPartitions];
  const int tid = threadIdx.x;
  const int mb = blockIdx.x;
  const int x0 = (mb % a.mb_cols) * 16, y0 = (mb / a.mb_cols) * 16;
  const int px = a.preds ? a.preds[mb].mvx : 0, py = a.preds ? a.preds[mb].mvy : 0;
  const int parts = a.parts, units = units_of_partitions(parts);

  if (tid < 64) {
    const int r = tid >> 2, w = tid & 3;
    const uint8_t* row = a.cur + ptrdiff_t(clampi(y0 + r, 0, a.height - 1)) * a.cur_stride;
    uint32_t v = 0;
#pragma unroll
    for (int b = 0; b < 4; b++) v |= uint32_t(row[clampi(x0 + 4 * w + b, 0, a.width - 1)]) << (8 * b);
    scur[r][w] = v;
  }
  if (tid < parts) sbest[tid] = a.out[mb].part[tid];

  for (int step = 2; step >= 3 - a.steps; step--) {
    const int dist = step == 2 ? 2 : 1;
    for (int i = tid; i < parts * 8; i += kRefineThreads) (&ssad[0][0])[i] = 0;
    __syncthreads();
    for (int u = tid; u < 8 * units; u += kRefineThreads) {
      const int cand = u / units;
      int sub;
      const int p = unit_partition(u % units, &sub);
      int gx, gy, gw, gh;
      partition_geometry4(p, &gx, &gy, &gw, &gh);
      const int bx = gx + sub % gw, by = gy + sub / gw;
      const int c = cand < 4 ? cand : cand + 1;  // 3x3 raster without the centre
      const int vx = sbest[p].mvx + dist * (c % 3 - 1), vy = sbest[p].mvy + dist * (c / 3 - 1);
      const QpelSource src = kQpelSource[(vy & 3) * 4 + (vx & 3)];
      const int sx = x0 + 4 * bx + (vx >> 2), sy = y0 + 4 * by + (vy >> 2);
      const uint8_t* p0 = a.planes + src.p0 * a.plane_bytes + ptrdiff_t(sy + src.dy0) * a.pitch +
                          (sx + src.dx0);
      const uint8_t* p1 = a.planes + max(int(src.p1), 0) * a.plane_bytes +
                          ptrdiff_t(sy + src.dy1) * a.pitch + (sx + src.dx1);
      uint32_t sad = 0;
#pragma unroll
      for (int r = 0; r < 4; r++) {
        uint32_t v = load4(p0 + r * a.pitch);
        if (src.p1 >= 0) v = __vavgu4(v, load4(p1 + r * a.pitch));
        sad = __vsadu4(scur[4 * by + r][bx], v) + sad;
      }
      atomicAdd(&ssad[p][cand], sad);
    }
    __syncthreads();
    if (tid < parts) {
      const MvCost centre = sbest[tid];
      unsigned long long best = subpel_key(centre.cost, centre.mvx, centre.mvy);
      for (int cand = 0; cand < 8; cand++) {
        const int c = cand < 4 ? cand : cand + 1;
        const int vx = centre.mvx + dist * (c % 3 - 1), vy = centre.mvy + dist * (c / 3 - 1);
        const uint32_t cost = ssad[tid][cand] +
                              a.lambda * (se_bits_dev(vx - px) + se_bits_dev(vy - py));
        best = min(best, subpel_key(cost, vx, vy));
      }
      MvCost mc;
      mc.cost = uint32_t(best >> 38);
      mc.mvy = int16_t(int((best >> 10) & 1023) - 512);
      mc.mvx = int16_t(int(best & 1023) - 512);
      sbest[tid] = mc;
    }
    __syncthreads();
  }
  if (tid < parts) a.out[mb].part[tid] = sbest[tid];
}

// --- Block selection ----------------------------------------------------------------------

__device__ void assign(int part, int (&owner)[16]) {
  int x, y, w, h;
  partition_geometry4(part, &x, &y, &w, &h);
  for (int yy = y; yy < y + h; yy++)
    for (int xx = x; xx < x + w; xx++) owner[yy * 4 + xx] = part;
}

// First minimum of four, as std::min_element.
__device__ __forceinline__ int first_min(const unsigned long long (&m)[4]) {
  int k = 0;
  for (int i = 1; i < 4; i++)
    if (m[i] < m[k]) k = i;
  return k;
}

__global__ void select_blocks_kernel(const MbPartitions* parts, int mb_cols, int mb_rows,
                                     int mode, MvCost* out) {
  const int mb = blockIdx.x * blockDim.x + threadIdx.x;
  if (mb >= mb_cols * mb_rows) return;
  const MvCost* c = parts[mb].part;
  int owner[16];
  if (mode == int(BlockSize::B16x16)) {
    assign(kPart16x16, owner);
  } else if (mode == int(BlockSize::B8x8)) {
    for (int k = 0; k < 4; k++) assign(kPart8x8 + k, owner);
  } else if (mode == int(BlockSize::B4x4)) {
    for (int k = 0; k < 16; k++) assign(kPart4x4 + k, owner);
  } else {
    unsigned long long sub_cost[4];
    int sub_mode[4];
    for (int k = 0; k < 4; k++) {
      const unsigned long long m[4] = {
          c[kPart8x8 + k].cost,
          (unsigned long long)c[kPart8x4 + 2 * k].cost + c[kPart8x4 + 2 * k + 1].cost,
          (unsigned long long)c[kPart4x8 + 2 * k].cost + c[kPart4x8 + 2 * k + 1].cost,
          (unsigned long long)c[kPart4x4 + 4 * k].cost + c[kPart4x4 + 4 * k + 1].cost +
              c[kPart4x4 + 4 * k + 2].cost + c[kPart4x4 + 4 * k + 3].cost,
      };
      sub_mode[k] = first_min(m);
      sub_cost[k] = m[sub_mode[k]];
    }
    const unsigned long long m[4] = {
        c[kPart16x16].cost,
        (unsigned long long)c[kPart16x8].cost + c[kPart16x8 + 1].cost,
        (unsigned long long)c[kPart8x16].cost + c[kPart8x16 + 1].cost,
        sub_cost[0] + sub_cost[1] + sub_cost[2] + sub_cost[3],
    };
    switch (first_min(m)) {
      case 0: assign(kPart16x16, owner); break;
      case 1: assign(kPart16x8, owner), assign(kPart16x8 + 1, owner); break;
      case 2: assign(kPart8x16, owner), assign(kPart8x16 + 1, owner); break;
      default:
        for (int k = 0; k < 4; k++) {
          switch (sub_mode[k]) {
            case 0: assign(kPart8x8 + k, owner); break;
            case 1: assign(kPart8x4 + 2 * k, owner), assign(kPart8x4 + 2 * k + 1, owner); break;
            case 2: assign(kPart4x8 + 2 * k, owner), assign(kPart4x8 + 2 * k + 1, owner); break;
            default:
              for (int s = 0; s < 4; s++) assign(kPart4x4 + 4 * k + s, owner);
          }
        }
    }
  }
  const int b = mode == int(BlockSize::B16x16) ? 16 : (mode == int(BlockSize::B8x8) ? 8 : 4);
  const int per_mb = 16 / b, cols = mb_cols * per_mb;
  const int mbx = mb % mb_cols, mby = mb / mb_cols;
  for (int by = 0; by < per_mb; by++)
    for (int bx = 0; bx < per_mb; bx++) {
      const int b4 = (by * b / 4) * 4 + (bx * b / 4);
      out[(mby * per_mb + by) * cols + mbx * per_mb + bx] = c[owner[b4]];
    }
}

// Warps (= macroblocks) per block: the window of 8 MBs at range 64 would need 89 KB.
int mbs_per_block_for(int range) { return range <= 32 ? 8 : 4; }

}  // namespace

Status MeCore::prepare_tables(int range) {
  if (tables_range_ == range) return {};
  const int n = 2 * range;
  std::vector<uint16_t> host(2 * size_t(n) * n);
  uint16_t* rank_of_pos = host.data();
  uint16_t* pos_of_rank = host.data() + size_t(n) * n;
  std::vector<int> order(size_t(n) * n);
  for (int i = 0; i < n * n; i++) order[i] = i;
  auto len = [&](int i) {
    const int dx = i % n - range, dy = i / n - range;
    return dx * dx + dy * dy;
  };
  // Raster index i = (dy + R) * 2R + (dx + R) already orders (dy, dx).
  std::stable_sort(order.begin(), order.end(), [&](int p, int q) { return len(p) < len(q); });
  for (int r = 0; r < n * n; r++) {
    const int i = order[r];
    rank_of_pos[i] = uint16_t(r);
    pos_of_rank[r] = uint16_t(((i / n) << 8) | (i % n));
  }
  GVC_TRY(tables_.reserve(host.size() * sizeof(uint16_t)));
  GVC_CUDA_TRY(cudaMemcpy(tables_.get(), host.data(), host.size() * sizeof(uint16_t),
                          cudaMemcpyHostToDevice));
  tables_range_ = range;
  return {};
}

Status MeCore::integer_search(const DevicePlane& cur, const DevicePlane& ref, int range,
                              uint32_t lambda, const MvCost* predictors, MbPartitions* out,
                              cudaStream_t stream) {
  if (range < kMinSearchRange || range > kMaxSearchRange)
    return Status::error("search range must be between 8 and 64");
  if (cur.width != ref.width || cur.height != ref.height || cur.width <= 0 || cur.height <= 0)
    return Status::error("current and reference frames must have the same, non-empty size");
  GVC_TRY(prepare_tables(range));

  SearchArgs a{};
  a.cur = cur.data, a.cur_stride = cur.stride;
  a.ref = ref.data, a.ref_stride = ref.stride;
  a.width = cur.width, a.height = cur.height;
  a.mb_cols = mb_count(cur.width), a.mb_rows = mb_count(cur.height);
  a.range = range;
  a.lambda = lambda;
  a.preds = predictors;
  a.rank_of_pos = tables_.get<uint16_t>();
  a.pos_of_rank = tables_.get<uint16_t>() + 4 * range * range;
  a.out = out;
  a.mbs_per_block = mbs_per_block_for(range);
  const int groups = (2 * range + kColumn - 1) / kColumn;
  a.rows = kColumn * groups + 15;
  // Largest word read: ((16 * (M - 1) + kTileX - 1) >> 2) + 3.
  a.pitch = 4 * a.mbs_per_block + 7;
  // Copies 8 banks apart, so the four byte-shifts of a warp's 32 columns hit 32 banks.
  a.copy_stride = a.rows * a.pitch;
  a.copy_stride += (8 - a.copy_stride % 32 + 32) % 32;
  const size_t smem = sizeof(uint32_t) * (4 * size_t(a.copy_stride) + 64 * a.mbs_per_block);
  if (smem > 48 * 1024)
    GVC_CUDA_TRY(cudaFuncSetAttribute(integer_search_kernel,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const dim3 grid((a.mb_cols + a.mbs_per_block - 1) / a.mbs_per_block, a.mb_rows);
  integer_search_kernel<<<grid, 32 * a.mbs_per_block, smem, stream>>>(a);
  return check(cudaGetLastError(), "integer motion search kernel");
}

Status MeCore::build_qpel_planes(const DevicePlane& ref, int range, cudaStream_t stream) {
  // Vectors reach range + 1 samples past the MB (half-pel step), the MB reaches 15 samples
  // past the picture (edge extension), the filters' second sample one more: a border of
  // range + 20 keeps every read inside the planes.
  const int pad = range + 20;
  const int pw = ref.width + 2 * pad, ph = ref.height + 2 * pad + 1;
  const ptrdiff_t pitch = (pw + 4 + 15) & ~15;  // +4: load4() reads the next word
  const size_t plane_bytes = size_t(pitch) * ph;
  GVC_TRY(planes_.reserve(kPlanes * plane_bytes));
  planes_pad_ = pad;
  planes_pitch_ = pitch;
  planes_plane_bytes_ = plane_bytes;
  planes_w_ = ref.width, planes_h_ = ref.height;

  HalfPelPlanes out;
  for (int p = 0; p < kPlanes; p++) out.plane[p] = planes_.get<uint8_t>() + p * plane_bytes;
  out.pitch = pitch;
  out.pad = pad;
  out.pw = pw, out.ph = ph;
  return build_half_pel_planes(ref.data, ref.stride, ref.width, ref.height, out, stream);
}

Status MeCore::refine(const DevicePlane& cur, uint32_t lambda, Subpel subpel,
                      const MvCost* predictors, MbPartitions* inout, cudaStream_t stream,
                      int refined_partitions) {
  if (subpel == Subpel::None) return {};
  if (refined_partitions < 1 || refined_partitions > kNumPartitions)
    return Status::error("refined_partitions must be between 1 and 41");
  if (!planes_.get() || planes_w_ != cur.width || planes_h_ != cur.height)
    return Status::error("sub-pel refinement needs the reference planes of this frame size");
  RefineArgs a{};
  a.cur = cur.data, a.cur_stride = cur.stride;
  a.width = cur.width, a.height = cur.height;
  a.mb_cols = mb_count(cur.width);
  a.planes = planes_.get<uint8_t>() + ptrdiff_t(planes_pad_) * planes_pitch_ + planes_pad_;
  a.pitch = planes_pitch_;
  a.plane_bytes = planes_plane_bytes_;
  a.lambda = lambda;
  a.steps = subpel == Subpel::Quarter ? 2 : 1;
  a.preds = predictors;
  a.parts = refined_partitions;
  a.out = inout;
  const int nmb = a.mb_cols * mb_count(cur.height);
  refine_kernel<<<nmb, kRefineThreads, 0, stream>>>(a);
  return check(cudaGetLastError(), "sub-pel refinement kernel");
}

Status MeCore::search(const DevicePlane& cur, const DevicePlane& ref, int range,
                      uint32_t lambda, Subpel subpel, const MvCost* predictors,
                      MbPartitions* out, cudaStream_t stream, int refined_partitions) {
  if (lambda > 65535) return Status::error("lambda must be at most 65535");
  if (refined_partitions < 1 || refined_partitions > kNumPartitions)  // nothing queued for it
    return Status::error("refined_partitions must be between 1 and 41");
  GVC_TRY(integer_search(cur, ref, range, lambda, predictors, out, stream));
  if (subpel == Subpel::None) return {};
  GVC_TRY(build_qpel_planes(ref, range, stream));
  return refine(cur, lambda, subpel, predictors, out, stream, refined_partitions);
}

Status MeCore::select_blocks(const MbPartitions* parts, int mb_cols, int mb_rows,
                             BlockSize size, MvCost* out, cudaStream_t stream) {
  const int n = mb_cols * mb_rows;
  if (n <= 0) return {};
  select_blocks_kernel<<<(n + 127) / 128, 128, 0, stream>>>(parts, mb_cols, mb_rows, int(size),
                                                             out);
  return check(cudaGetLastError(), "block selection kernel");
}

}  // namespace cuda
}  // namespace gvc
