// hevc_loopfilter.cu: HEVC deblocking (8.7.2.5.3-8.7.2.5.8, vertical then horizontal edges) and SAO (8.7.3) of a picture
#include "gpu/hevc_loopfilter.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

namespace gvc {
namespace cuda {

namespace {

using SaoParams = HevcSaoCore::Params;

// Table 8-12: beta' for Q = 0..51 and tC' for Q = 0..53.
__constant__ uint8_t c_beta[52] = {0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  6,  7,
                                   8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 20, 22, 24, 26, 28, 30, 32,
                                   34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64};
__constant__ uint8_t c_tc[54] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0,  0,  0,  0,
                                 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3,  3,  3,  3,  4,
                                 4, 4, 5, 5, 6, 6, 7, 8, 9, 10, 11, 13, 14, 16, 18, 20, 22, 24};
// Table 8-10: QpC for qPi = 30..43 (ChromaArrayType 1).
__constant__ uint8_t c_qpc[14] = {29, 30, 31, 32, 33, 33, 34, 34, 35, 35, 36, 36, 37, 37};

constexpr int kBlockX = 32, kBlockY = 8;  // deblocking: segments per block along x and y

__device__ __forceinline__ int clip3(int lo, int hi, int v) { return v < lo ? lo : (v > hi ? hi : v); }
__device__ __forceinline__ int iabs(int v) { return v < 0 ? -v : v; }

__device__ __forceinline__ int chroma_qp(int qpi) {
  if (qpi < 30) return qpi;
  if (qpi > 43) return qpi - 6;
  return c_qpc[qpi - 30];
}

// The arrays of HevcDeblockFrame on the device, `stride` units per row.
struct DeblockArgs {
  const uint8_t *bs_v, *bs_h, *no_filter;
  const int8_t *qp_y, *beta_offset_div2, *tc_offset_div2;
  int stride;
  int width, height;    // luma samples, multiples of 4
  HevcPlane planes[3];  // device memory
  int bit_depth_y, bit_depth_c;
  int c_qp_pic_offset[2];  // cQpPicOffset of Cb, Cr
};

// One line of samples across an edge: p[i] = p_i, q[i] = q_i.
struct LumaLine {
  int p[4], q[4];
};

__device__ __forceinline__ LumaLine load_line(const uint16_t* q0, ptrdiff_t across) {
  LumaLine l;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    l.p[i] = q0[-(i + 1) * across];
    l.q[i] = q0[i * across];
  }
  return l;
}

// 8.7.2.5.6 decision process for a luma sample (dSam).
__device__ __forceinline__ bool dsam(const LumaLine& l, int dpq, int beta, int tc) {
  return 2 * dpq < (beta >> 2) && iabs(l.p[3] - l.p[0]) + iabs(l.q[0] - l.q[3]) < (beta >> 3) &&
         iabs(l.p[0] - l.q[0]) < ((5 * tc + 1) >> 1);
}

// 8.7.2.5.7 filtering of one line; `q0` points at q0, `across` steps from p_i to q_i.
__device__ __forceinline__ void filter_luma_line(uint16_t* q0, ptrdiff_t across, const LumaLine& l, bool strong,
                                                 bool dep, bool deq, int tc, bool no_p, bool no_q, int maxv) {
  const int p0 = l.p[0], p1 = l.p[1], p2 = l.p[2], p3 = l.p[3];
  const int q0v = l.q[0], q1 = l.q[1], q2 = l.q[2], q3 = l.q[3];
  if (strong) {
    const int t2 = 2 * tc;
    if (!no_p) {
      q0[-1 * across] = uint16_t(clip3(p0 - t2, p0 + t2, (p2 + 2 * p1 + 2 * p0 + 2 * q0v + q1 + 4) >> 3));
      q0[-2 * across] = uint16_t(clip3(p1 - t2, p1 + t2, (p2 + p1 + p0 + q0v + 2) >> 2));
      q0[-3 * across] = uint16_t(clip3(p2 - t2, p2 + t2, (2 * p3 + 3 * p2 + p1 + p0 + q0v + 4) >> 3));
    }
    if (!no_q) {
      q0[0] = uint16_t(clip3(q0v - t2, q0v + t2, (p1 + 2 * p0 + 2 * q0v + 2 * q1 + q2 + 4) >> 3));
      q0[across] = uint16_t(clip3(q1 - t2, q1 + t2, (p0 + q0v + q1 + q2 + 2) >> 2));
      q0[2 * across] = uint16_t(clip3(q2 - t2, q2 + t2, (p0 + q0v + q1 + 3 * q2 + 2 * q3 + 4) >> 3));
    }
    return;
  }
  int delta = (9 * (q0v - p0) - 3 * (q1 - p1) + 8) >> 4;
  if (iabs(delta) >= tc * 10) return;
  delta = clip3(-tc, tc, delta);
  if (!no_p) {
    q0[-1 * across] = uint16_t(clip3(0, maxv, p0 + delta));
    if (dep) {
      const int dpv = clip3(-(tc >> 1), tc >> 1, (((p2 + p0 + 1) >> 1) - p1 + delta) >> 1);
      q0[-2 * across] = uint16_t(clip3(0, maxv, p1 + dpv));
    }
  }
  if (!no_q) {
    q0[0] = uint16_t(clip3(0, maxv, q0v - delta));
    if (deq) {
      const int dqv = clip3(-(tc >> 1), tc >> 1, (((q2 + q0v + 1) >> 1) - q1 - delta) >> 1);
      q0[across] = uint16_t(clip3(0, maxv, q1 + dqv));
    }
  }
}

// 8.7.2.5.3 decisions and 8.7.2.5.7 filtering of the four-line luma segment whose q0 of line 0
// is `q0`; lines are `along` apart.
__device__ __forceinline__ void luma_segment(uint16_t* q0, ptrdiff_t across, ptrdiff_t along, int bs, int qp_p,
                                             int qp_q, int beta_offset_div2, int tc_offset_div2, bool no_p,
                                             bool no_q, int bit_depth) {
  const int qpl = (qp_q + qp_p + 1) >> 1;
  const int qb = clip3(0, 51, qpl + beta_offset_div2 * 2);
  const int beta = c_beta[qb] * (1 << (bit_depth - 8));
  const int qt = clip3(0, 53, qpl + 2 * (bs - 1) + tc_offset_div2 * 2);
  const int tc = c_tc[qt] * (1 << (bit_depth - 8));
  if (!tc && !beta) return;
  const LumaLine l0 = load_line(q0, across), l3 = load_line(q0 + 3 * along, across);
  const int dp0 = iabs(l0.p[2] - 2 * l0.p[1] + l0.p[0]), dp3 = iabs(l3.p[2] - 2 * l3.p[1] + l3.p[0]);
  const int dq0 = iabs(l0.q[2] - 2 * l0.q[1] + l0.q[0]), dq3 = iabs(l3.q[2] - 2 * l3.q[1] + l3.q[0]);
  const int dpq0 = dp0 + dq0, dpq3 = dp3 + dq3;
  const int dp = dp0 + dp3, dq = dq0 + dq3;
  if (dpq0 + dpq3 >= beta) return;  // d >= beta: no filtering
  const bool strong = dsam(l0, dpq0, beta, tc) && dsam(l3, dpq3, beta, tc);  // dE == 2
  const bool dep = dp < ((beta + (beta >> 1)) >> 3);
  const bool deq = dq < ((beta + (beta >> 1)) >> 3);
  const int maxv = (1 << bit_depth) - 1;
  // Lines 1 and 2 are read before anything is written: no line reads another line's samples.
  const LumaLine l1 = load_line(q0 + along, across), l2 = load_line(q0 + 2 * along, across);
  filter_luma_line(q0, across, l0, strong, dep, deq, tc, no_p, no_q, maxv);
  filter_luma_line(q0 + along, across, l1, strong, dep, deq, tc, no_p, no_q, maxv);
  filter_luma_line(q0 + 2 * along, across, l2, strong, dep, deq, tc, no_p, no_q, maxv);
  filter_luma_line(q0 + 3 * along, across, l3, strong, dep, deq, tc, no_p, no_q, maxv);
}

// 8.7.2.5.5 filtering of a two-line chroma edge segment (bS is 2).
__device__ __forceinline__ void chroma_segment(uint16_t* q0, ptrdiff_t across, ptrdiff_t along, int qp_p,
                                               int qp_q, int c_qp_pic_offset, int tc_offset_div2, bool no_p,
                                               bool no_q, int bit_depth) {
  const int qpc = chroma_qp(((qp_q + qp_p + 1) >> 1) + c_qp_pic_offset);
  const int qt = clip3(0, 53, qpc + 2 + tc_offset_div2 * 2);
  const int tc = c_tc[qt] * (1 << (bit_depth - 8));
  if (!tc) return;
  const int maxv = (1 << bit_depth) - 1;
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    uint16_t* q = q0 + k * along;
    const int p0 = q[-across], p1 = q[-2 * across], q0v = q[0], q1 = q[across];
    const int delta = clip3(-tc, tc, ((((q0v - p0) * 4) + p1 - q1 + 4) >> 3));
    if (!no_p) q[-across] = uint16_t(clip3(0, maxv, p0 + delta));
    if (!no_q) q[0] = uint16_t(clip3(0, maxv, q0v - delta));
  }
}

// One pass over the picture: one thread per edge segment of four luma lines, unit (x, y) on
// the q side: vertical edges x = 8 * i, y = 4 * j; horizontal edges x = 4 * i, y = 8 * j. The
// thread also filters the unit's two-line Cb and Cr segments where the edge lies on the chroma
// 8x8 grid (16 luma samples) and bS is 2, as the CPU does.
template <bool kVertical>
__global__ void __launch_bounds__(kBlockX* kBlockY) deblock_kernel(const DeblockArgs a) {
  const int i = int(blockIdx.x) * kBlockX + int(threadIdx.x);
  const int j = int(blockIdx.y) * kBlockY + int(threadIdx.y);
  const int x = kVertical ? i * 8 : i * 4;
  const int y = kVertical ? j * 4 : j * 8;
  if (x >= a.width || y >= a.height || (kVertical ? x : y) == 0) return;
  const int u = (y >> 2) * a.stride + (x >> 2);
  const int bs = (kVertical ? a.bs_v : a.bs_h)[u];
  if (!bs) return;
  const int up = kVertical ? u - 1 : u - a.stride;  // the unit holding p0
  const int qp_p = a.qp_y[up], qp_q = a.qp_y[u];
  const int tc_offset_div2 = a.tc_offset_div2[u];
  const bool no_p = a.no_filter[up], no_q = a.no_filter[u];
  {
    const HevcPlane& pl = a.planes[0];
    const ptrdiff_t across = kVertical ? 1 : pl.stride, along = kVertical ? pl.stride : 1;
    luma_segment(pl.data + ptrdiff_t(y) * pl.stride + x, across, along, bs, qp_p, qp_q, a.beta_offset_div2[u],
                 tc_offset_div2, no_p, no_q, a.bit_depth_y);
  }
  if (bs != 2 || ((kVertical ? x : y) & 15)) return;
#pragma unroll
  for (int c = 1; c < 3; ++c) {
    const HevcPlane& pl = a.planes[c];
    const ptrdiff_t across = kVertical ? 1 : pl.stride, along = kVertical ? pl.stride : 1;
    chroma_segment(pl.data + ptrdiff_t(y >> 1) * pl.stride + (x >> 1), across, along, qp_p, qp_q,
                   a.c_qp_pic_offset[c - 1], tc_offset_div2, no_p, no_q, a.bit_depth_c);
  }
}

// SAO, in place: tiles of kSaoTile x kSaoTile samples of one component, a block each
// (kSaoTile x kSaoPass threads, kSaoTile / kSaoPass rows a thread); the tiles of the active
// components follow one another in the grid. A tile reads its own deblocked samples from the
// plane before it writes any, and the ring around it from the first and last row and column of
// every tile, saved before (sao_save_edges_kernel): neighbouring tiles write in place meanwhile.
// (A copy of the whole picture took 24 MiB at 2160p; the edges take an eighth of that.)
constexpr int kSaoTile = 32, kSaoPass = 8;

struct SaoArgs {
  const SaoParams* params;    // [ctb * 3 + cIdx]
  const uint8_t* no_filter;   // 4x4 luma units, nf_stride per row
  int nf_stride;
  int log2_ctb_size, width_ctbs, height_ctbs;
  HevcPlane planes[3];  // deblocked on entry, filtered in place
  // Per active component (else null), each tile's first and last row: row k (0 first, 1 last)
  // of tile row j at rows[c] + (2 j + k) * width; its first and last column likewise at
  // cols[c] + (2 i + k) * height. The last tile's last row or column is the plane's.
  uint16_t* rows[3];
  uint16_t* cols[3];
  int bit_depth[3];
  int first_tile[4];  // tiles of component c: first_tile[c] .. first_tile[c + 1] - 1
  int tiles_x[3], tiles_y[3];
};

__device__ __forceinline__ int sign(int v) { return (v > 0) - (v < 0); }

// The edge rows and columns of every tile (SaoArgs::rows, cols) of component blockIdx.y.
__global__ void sao_save_edges_kernel(const SaoArgs a) {
  const int c = int(blockIdx.y);
  if (!a.rows[c]) return;
  const HevcPlane& p = a.planes[c];
  const int64_t n_rows = int64_t(2) * a.tiles_y[c] * p.width;
  const int64_t n = n_rows + int64_t(2) * a.tiles_x[c] * p.height;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if (i < n_rows) {
      const int r = int(i / p.width), x = int(i % p.width);
      const int y = min((r >> 1) * kSaoTile + (r & 1) * (kSaoTile - 1), p.height - 1);
      a.rows[c][i] = p.data[ptrdiff_t(y) * p.stride + x];
    } else {
      const int64_t j = i - n_rows;
      const int q = int(j / p.height), y = int(j % p.height);
      const int x = min((q >> 1) * kSaoTile + (q & 1) * (kSaoTile - 1), p.width - 1);
      a.cols[c][j] = p.data[ptrdiff_t(y) * p.stride + x];
    }
  }
}

// 8.7.3.2 for the samples of one tile.
__global__ void __launch_bounds__(kSaoTile* kSaoPass) sao_kernel(const SaoArgs a) {
  __shared__ uint16_t tile[kSaoTile + 2][kSaoTile + 2];  // [y - y0 + 1][x - x0 + 1]
  const int blk = int(blockIdx.x);
  const int c = blk >= a.first_tile[2] ? 2 : (blk >= a.first_tile[1] ? 1 : 0);
  const int t = blk - a.first_tile[c];
  const int tcol = t % a.tiles_x[c], trow = t / a.tiles_x[c];
  const HevcPlane& p = a.planes[c];
  const int x0 = tcol * kSaoTile, y0 = trow * kSaoTile;
  const int th = int(threadIdx.x), lx = th % kSaoTile;
  for (int ly = th / kSaoTile; ly < kSaoTile; ly += kSaoPass) {
    const int x = x0 + lx, y = y0 + ly;
    if (x < p.width && y < p.height) tile[ly + 1][lx + 1] = p.data[ptrdiff_t(y) * p.stride + x];
  }
  if (th < 2 * (kSaoTile + 2)) {  // the rows above and below, corners included
    const int k = th / (kSaoTile + 2), i = th % (kSaoTile + 2);
    const int x = x0 - 1 + i, y = k ? y0 + kSaoTile : y0 - 1;
    const int r = k ? 2 * (trow + 1) : 2 * trow - 1;  // the next tile row's first, the last one's last
    if (x >= 0 && x < p.width && y >= 0 && y < p.height)
      tile[k ? kSaoTile + 1 : 0][i] = a.rows[c][ptrdiff_t(r) * p.width + x];
  } else if (th < 2 * (kSaoTile + 2) + 2 * kSaoTile) {  // the columns left and right
    const int j = th - 2 * (kSaoTile + 2);
    const int k = j / kSaoTile, i = j % kSaoTile;
    const int x = k ? x0 + kSaoTile : x0 - 1, y = y0 + i;
    const int q = k ? 2 * (tcol + 1) : 2 * tcol - 1;
    if (x >= 0 && x < p.width && y < p.height) tile[i + 1][k ? kSaoTile + 1 : 0] = a.cols[c][ptrdiff_t(q) * p.height + y];
  }
  __syncthreads();

  const int shift = c ? 1 : 0;
  const int log2_size = a.log2_ctb_size - shift;
  const int bd = a.bit_depth[c];
  for (int ly = th / kSaoTile; ly < kSaoTile; ly += kSaoPass) {
    const int x = x0 + lx, y = y0 + ly;
    if (x >= p.width || y >= p.height) continue;
    const int rx = x >> log2_size, ry = y >> log2_size;
    if (rx >= a.width_ctbs || ry >= a.height_ctbs) continue;  // no CTB covers it: the CPU never visits
    const SaoParams* sp = a.params + (ry * a.width_ctbs + rx) * 3 + c;
    const int type = sp->type_idx;
    if (!type) continue;
    if (a.no_filter[((y << shift) >> 2) * a.nf_stride + ((x << shift) >> 2)]) continue;
    const int rec = tile[ly + 1][lx + 1];
    int offset;
    if (type == 1) {
      // bandTable[(k + sao_band_position) & 31] = k + 1 for k = 0..3, else 0
      const int k = ((rec >> (bd - 5)) - sp->band_or_class) & 31;
      offset = sp->offset_val[k < 4 ? k + 1 : 0];
    } else {
      // Table 8-13: (hPos[0], vPos[0]); the second neighbour is the opposite one.
      const int eo_class = sp->band_or_class;
      const int h0 = eo_class == 1 ? 0 : (eo_class == 3 ? 1 : -1);
      const int v0 = eo_class == 0 ? 0 : -1;
      const int size = 1 << log2_size;
      const int cx0 = rx << log2_size, cy0 = ry << log2_size;
      const int cross_ok = sp->cross_ok;
      int edge_idx = 2;
      bool off = false;
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const int hp = k ? -h0 : h0, vp = k ? -v0 : v0;
        const int xn = x + hp, yn = y + vp;
        if (xn < 0 || yn < 0 || xn >= p.width || yn >= p.height) {
          off = true;
          break;
        }
        const int dx = xn < cx0 ? -1 : (xn >= cx0 + size ? 1 : 0);
        const int dy = yn < cy0 ? -1 : (yn >= cy0 + size ? 1 : 0);
        if ((dx || dy) && !((cross_ok >> ((dy + 1) * 3 + (dx + 1))) & 1)) {
          off = true;
          break;
        }
        edge_idx += sign(rec - tile[ly + 1 + vp][lx + 1 + hp]);
      }
      if (off) continue;
      // edgeIdx 0, 1, 2 become 1, 2, 0
      if (edge_idx <= 2) edge_idx = edge_idx == 2 ? 0 : edge_idx + 1;
      offset = sp->offset_val[edge_idx];
    }
    p.data[ptrdiff_t(y) * p.stride + x] = uint16_t(clip3(0, (1 << bd) - 1, rec + offset));
  }
}

bool plane_ok(const HevcPlane& p, int w, int h) {
  return p.data && p.width >= w && p.height >= h && p.stride >= p.width;
}

}  // namespace

Status HevcDeblockCore::check(const HevcDeblockFrame& f) {
  if (f.width <= 0 || f.height <= 0 || f.width % 4 || f.height % 4 || f.width > 65536 || f.height > 65536)
    return Status::error("HEVC deblocking: the picture size must be a positive multiple of 4 (got " +
                         std::to_string(f.width) + "x" + std::to_string(f.height) + ")");
  if (f.stride < f.width / 4) return Status::error("HEVC deblocking: unit stride smaller than the picture's width / 4");
  if (!f.bs_v || !f.bs_h || !f.qp_y || !f.beta_offset_div2 || !f.tc_offset_div2 || !f.no_filter)
    return Status::error("HEVC deblocking: a per-unit array is missing");
  if (f.bit_depth_y < 8 || f.bit_depth_y > 16 || f.bit_depth_c < 8 || f.bit_depth_c > 16)
    return Status::error("HEVC deblocking: bit depths must be 8..16");
  return {};
}

// The six arrays, each as far as the picture reaches, one after another.
size_t HevcDeblockCore::array_bytes(const HevcDeblockFrame& f) {
  const size_t count = size_t(f.height / 4 - 1) * size_t(f.stride) + size_t(f.width / 4);
  return 6 * count;
}

void HevcDeblockCore::copy_arrays(const HevcDeblockFrame& f, uint8_t* out) {
  const size_t count = array_bytes(f) / 6;
  const void* arrays[6] = {f.bs_v, f.bs_h, f.no_filter, f.qp_y, f.beta_offset_div2, f.tc_offset_div2};
  for (int k = 0; k < 6; ++k) std::memcpy(out + k * count, arrays[k], count);
}

Status HevcDeblockCore::launch(const HevcDeblockFrame& f, const uint8_t* arrays, const HevcPlane planes[3],
                               cudaStream_t s) {
  if (!plane_ok(planes[0], f.width, f.height) || !plane_ok(planes[1], f.width / 2, f.height / 2) ||
      !plane_ok(planes[2], f.width / 2, f.height / 2))
    return Status::error("HEVC deblocking: a plane is missing or smaller than the picture");
  const int w4 = f.width / 4, h4 = f.height / 4;
  const size_t count = array_bytes(f) / 6;
  DeblockArgs a{};
  a.bs_v = arrays;
  a.bs_h = arrays + count;
  a.no_filter = arrays + 2 * count;
  a.qp_y = reinterpret_cast<const int8_t*>(arrays + 3 * count);
  a.beta_offset_div2 = reinterpret_cast<const int8_t*>(arrays + 4 * count);
  a.tc_offset_div2 = reinterpret_cast<const int8_t*>(arrays + 5 * count);
  a.stride = f.stride;
  a.width = f.width;
  a.height = f.height;
  for (int c = 0; c < 3; ++c) a.planes[c] = planes[c];
  a.bit_depth_y = f.bit_depth_y;
  a.bit_depth_c = f.bit_depth_c;
  a.c_qp_pic_offset[0] = f.cb_qp_offset;
  a.c_qp_pic_offset[1] = f.cr_qp_offset;
  const dim3 block(kBlockX, kBlockY);
  // EDGE_VER: (width / 8 rounded up) edge columns x (height / 4) unit rows.
  const dim3 grid_v(unsigned((f.width + 8 * kBlockX - 1) / (8 * kBlockX)), unsigned((h4 + kBlockY - 1) / kBlockY));
  deblock_kernel<true><<<grid_v, block, 0, s>>>(a);
  GVC_CUDA_TRY(cudaGetLastError());
  // EDGE_HOR, on the output of EDGE_VER: (width / 4) unit columns x (height / 8 rounded up) edge rows.
  const int edge_rows = (f.height + 7) / 8;
  const dim3 grid_h(unsigned((w4 + kBlockX - 1) / kBlockX), unsigned((edge_rows + kBlockY - 1) / kBlockY));
  deblock_kernel<false><<<grid_h, block, 0, s>>>(a);
  GVC_CUDA_TRY(cudaGetLastError());
  return {};
}

Status HevcDeblockCore::run(const HevcDeblockFrame& f, const HevcPlane planes[3], cudaStream_t s) {
  GVC_TRY(check(f));
  if (!plane_ok(planes[0], f.width, f.height) || !plane_ok(planes[1], f.width / 2, f.height / 2) ||
      !plane_ok(planes[2], f.width / 2, f.height / 2))
    return Status::error("HEVC deblocking: a plane is missing or smaller than the picture");
  // through pinned staging
  const size_t bytes = array_bytes(f);
  uint8_t* staging = nullptr;
  GVC_TRY(staging_.acquire(bytes, staging));
  copy_arrays(f, staging);
  GVC_TRY(arrays_dev_.reserve(bytes));
  GVC_CUDA_TRY(cudaMemcpyAsync(arrays_dev_.get(), staging, bytes, cudaMemcpyHostToDevice, s));
  GVC_TRY(staging_.release(s));
  return launch(f, arrays_dev_.get<uint8_t>(), planes, s);
}

Status HevcSaoCore::run(const HevcSaoFrame& f, const HevcPlane planes[3], cudaStream_t s) {
  if (f.log2_ctb_size < 4 || f.log2_ctb_size > 6) return Status::error("HEVC SAO: log2 CTB size must be 4..6");
  if (f.width_ctbs <= 0 || f.height_ctbs <= 0 || f.width_ctbs > 4096 || f.height_ctbs > 4096)
    return Status::error("HEVC SAO: bad picture size in CTBs");
  if (!f.ctbs || !f.enabled || !f.no_filter || !f.cross_ok)
    return Status::error("HEVC SAO: a per-CTB or per-unit array is missing");
  for (int c = 0; c < 3; ++c)
    if (f.bit_depth[c] < 8 || f.bit_depth[c] > 16) return Status::error("HEVC SAO: bit depths must be 8..16");

  // SaoTypeIdx as the kernel applies it (0 where the slice has SAO off), validated first:
  // nothing is queued for a refused frame.
  const int n = f.width_ctbs * f.height_ctbs;
  bool active[3] = {};
  for (int ctb = 0; ctb < n; ++ctb)
    for (int c = 0; c < 3; ++c) {
      const int type = f.enabled[ctb * 3 + c] ? f.ctbs[ctb].type_idx[c] : 0;
      if (type > 2) return Status::error("HEVC SAO: SaoTypeIdx must be 0..2 (CTB " + std::to_string(ctb) + ")");
      if (type == 2 && f.ctbs[ctb].eo_class[c] > 3)
        return Status::error("HEVC SAO: SaoEoClass must be 0..3 (CTB " + std::to_string(ctb) + ")");
      active[c] |= type != 0;
    }
  if (!active[0] && !active[1] && !active[2]) return {};

  // Planes of active components, and the no_filter rows and columns their samples reach.
  int nf_rows = 0, nf_cols = 0;
  size_t edge_samples = 0;
  for (int c = 0; c < 3; ++c) {
    if (!active[c]) continue;
    const HevcPlane& p = planes[c];
    if (!p.data || p.width <= 0 || p.height <= 0 || p.width > 65536 || p.height > 65536 || p.stride < p.width)
      return Status::error("HEVC SAO: the plane of component " + std::to_string(c) + " is missing or malformed");
    const int shift = c ? 1 : 0;
    nf_rows = std::max(nf_rows, (((p.height - 1) << shift) >> 2) + 1);
    nf_cols = std::max(nf_cols, (((p.width - 1) << shift) >> 2) + 1);
    const size_t tiles_x = size_t(p.width + kSaoTile - 1) / kSaoTile, tiles_y = size_t(p.height + kSaoTile - 1) / kSaoTile;
    edge_samples += 2 * tiles_y * size_t(p.width) + 2 * tiles_x * size_t(p.height);
  }
  if (f.no_filter_stride < nf_cols) return Status::error("HEVC SAO: no_filter stride smaller than the picture");

  // Staging: the Params of every CTB, then the no_filter rows.
  const size_t param_bytes = size_t(n) * 3 * sizeof(SaoParams);
  const size_t nf_bytes = size_t(nf_rows - 1) * size_t(f.no_filter_stride) + size_t(nf_cols);
  uint8_t* staging = nullptr;
  GVC_TRY(staging_.acquire(param_bytes + nf_bytes, staging));
  SaoParams* params = reinterpret_cast<SaoParams*>(staging);
  for (int ctb = 0; ctb < n; ++ctb) {
    const HevcSaoCtb& in = f.ctbs[ctb];
    uint16_t cross = 0;
    for (int k = 0; k < 9; ++k) cross = uint16_t(cross | (f.cross_ok[ctb * 9 + k] ? 1u << k : 0u));
    for (int c = 0; c < 3; ++c) {
      SaoParams& p = params[size_t(ctb) * 3 + size_t(c)];
      p = SaoParams{};
      p.type_idx = f.enabled[ctb * 3 + c] ? in.type_idx[c] : 0;
      p.band_or_class = p.type_idx == 1 ? uint8_t(in.band_position[c] & 31) : in.eo_class[c];
      for (int i = 0; i < 5; ++i) p.offset_val[i] = in.offset_val[c][i];
      p.cross_ok = cross;
    }
  }
  std::memcpy(staging + param_bytes, f.no_filter, nf_bytes);
  GVC_TRY(arrays_dev_.reserve(param_bytes + nf_bytes));
  GVC_TRY(edges_.reserve(edge_samples * sizeof(uint16_t)));
  GVC_CUDA_TRY(cudaMemcpyAsync(arrays_dev_.get(), staging, param_bytes + nf_bytes, cudaMemcpyHostToDevice, s));
  GVC_TRY(staging_.release(s));

  SaoArgs a{};
  a.params = arrays_dev_.get<SaoParams>();
  a.no_filter = arrays_dev_.get<uint8_t>() + param_bytes;
  a.nf_stride = f.no_filter_stride;
  a.log2_ctb_size = f.log2_ctb_size;
  a.width_ctbs = f.width_ctbs;
  a.height_ctbs = f.height_ctbs;
  int tiles = 0;
  uint16_t* edges = edges_.get<uint16_t>();
  for (int c = 0; c < 3; ++c) {
    a.first_tile[c] = tiles;
    a.tiles_x[c] = a.tiles_y[c] = 1;
    a.bit_depth[c] = f.bit_depth[c];
    if (!active[c]) continue;
    const HevcPlane& p = planes[c];
    a.planes[c] = p;
    a.tiles_x[c] = (p.width + kSaoTile - 1) / kSaoTile;
    a.tiles_y[c] = (p.height + kSaoTile - 1) / kSaoTile;
    a.rows[c] = edges;
    edges += size_t(2) * a.tiles_y[c] * size_t(p.width);
    a.cols[c] = edges;
    edges += size_t(2) * a.tiles_x[c] * size_t(p.height);
    tiles += a.tiles_x[c] * a.tiles_y[c];
  }
  a.first_tile[3] = tiles;
  sao_save_edges_kernel<<<dim3(unsigned(std::min<size_t>((edge_samples + 255) / 256, 1024)), 3), 256, 0, s>>>(a);
  GVC_CUDA_TRY(cudaGetLastError());
  sao_kernel<<<unsigned(tiles), kSaoTile * kSaoPass, 0, s>>>(a);
  GVC_CUDA_TRY(cudaGetLastError());
  return {};
}

}  // namespace cuda
}  // namespace gvc
