// hevc_mc.cu: HEVC luma 8-tap / chroma 4-tap interpolation and weighted sample prediction (8.5.3.3.3, 8.5.3.3.4) for a picture's PBs in one launch
#include "gpu/hevc_mc.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace gvc {
namespace cuda {

namespace {

using PackedPb = HevcMcCore::PackedPb;

constexpr int kLog2Tile = 3;
constexpr int kTile = 1 << kLog2Tile;  // a warp predicts kTile x kTile samples of one component of one PB
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kMaxPbSize = 64;

// The tiles of a PB, one warp each: its luma tiles, then its Cb tiles, then its Cr tiles, each
// component's row by row. A component has `nx` x `ny` tiles: as far as the PB reaches and as
// far as the plane (plane_w x plane_h) reaches, none where the PB starts outside the plane.
struct TileGrid {
  int nx, ny;
};

__host__ __device__ inline TileGrid tile_grid(int x, int y, int w, int h, int c, int plane_w, int plane_h) {
  const int sh = c ? 1 : 0;
  x >>= sh, y >>= sh, w >>= sh, h >>= sh;
  if (w <= 0 || h <= 0 || x >= plane_w || y >= plane_h) return {0, 0};
  const int cw = w < plane_w - x ? w : plane_w - x, ch = h < plane_h - y ? h : plane_h - y;
  return {(cw + kTile - 1) >> kLog2Tile, (ch + kTile - 1) >> kLog2Tile};
}

// Table 8-11 fL[xFrac][i] (taps at xInt + i - 3) and Table 8-12 fC[xFrac][i] (taps at xInt + i
// - 1). The fraction is the same for a whole warp: constant memory broadcasts the row.
__constant__ int c_luma_filter[4][8] = {{0, 0, 0, 64, 0, 0, 0, 0},
                                        {-1, 4, -10, 58, 17, -5, 1, 0},
                                        {-1, 4, -11, 40, 40, -11, 4, -1},
                                        {0, 1, -5, 17, 58, -10, 4, -1}};
__constant__ int c_chroma_filter[8][4] = {{0, 64, 0, 0},    {-2, 58, 10, -2}, {-4, 54, 16, -2},
                                          {-6, 46, 28, -4}, {-4, 36, 36, -4}, {-4, 28, 46, -6},
                                          {-2, 16, 54, -4}, {-2, 10, 58, -2}};

// Reference reads. A tile's reference samples are gathered once into a shared-memory window
// (up to (kTile + 7) x (kTile + 7) samples, each position clipped into the picture as 8-228,
// 8-229, 8-240, 8-241 clip it), then both filter passes read the window: every sample feeds up
// to 8 horizontal taps and every horizontal result 8 vertical taps, so this is 1 global read per
// window sample instead of up to 64 per output sample, and the horizontal pass runs once per
// window row. The gathers go through __ldg (the read-only L1 path): the windows of neighbouring
// tiles of one PB overlap by 7 columns or rows, and one block's warps are neighbouring tiles.
// Textures would do the clipping in hardware, but HevcPlane allows any stride while a pitched
// 2D texture needs rows aligned to cudaDeviceProp::texturePitchAlignment, and each reference
// plane would need a texture object made per picture.
constexpr int kWinRows = kTile + 7;
constexpr int kWinPitch = 16;  // >= kTile + 7; rows of 32 bytes keep the filter reads conflict-free

struct Scratch {
  uint16_t win[kWinRows * kWinPitch];  // reference window, row r at r * kWinPitch
  int32_t tmp[kWinRows * kTile];       // horizontal pass of the 2D case, row r at r * kTile
};

// The PB list as the kernel finds its way in it: tile (warp) t of the grid belongs to the PB p
// with first_tile[p] <= t < first_tile[p + 1], where p >= block_pb[t / kWarps].
struct Batch {
  const HevcPlane* refs;  // device memory: reference i's plane c at refs[i * 3 + c]
  const PackedPb* pbs;
  const uint32_t* first_tile;  // n_pbs + 1 entries, the last one n_tiles
  const uint32_t* block_pb;    // the PB of the first tile of each block
  int n_tiles;
  HevcPlane dst[3];  // device memory
  int bit_depth_y, bit_depth_c;
};

// b.dst[c] without a dynamic index into the kernel's parameters (which would copy them to the
// stack).
__device__ __forceinline__ HevcPlane dst_plane(const Batch& b, int c) {
  return c == 0 ? b.dst[0] : (c == 1 ? b.dst[1] : b.dst[2]);
}

template <bool kLuma>
__device__ __forceinline__ int filter_coef(int frac, int t) {
  if constexpr (kLuma)
    return c_luma_filter[frac][t];
  else
    return c_chroma_filter[frac][t];
}

__device__ __forceinline__ int clip3(int lo, int hi, int v) { return v < lo ? lo : (v > hi ? hi : v); }

// 8.5.3.3.3.1 (kLuma) / 8.5.3.3.3.2: predSamplesLX of this lane's two samples, column lane % 8
// and rows lane / 8 and lane / 8 + 4 of the tile whose top-left sample is (x0, y0) and whose
// w x h samples belong to the PB, displaced by `mv` (quarter luma or eighth chroma samples).
// A sample depends only on its own position, so a PB cut into tiles gives what the CPU gives for
// the whole PB. As on the CPU, each result is stored as int16_t and the 2D case keeps the
// horizontal pass in 32 bits; for bit depths up to 12 nothing wraps.
// Every lane must call this (it synchronises the warp); lanes outside the w x h samples get 0.
template <bool kLuma>
__device__ __forceinline__ void interpolate(const HevcPlane& ref, int x0, int y0, int w, int h, int mv_x,
                                            int mv_y, int bit_depth, Scratch& s, int lane, int16_t pred[2]) {
  constexpr int kTaps = kLuma ? 8 : 4, kHalf = kLuma ? 3 : 1, kFracBits = kLuma ? 2 : 3;
  const int x_frac = mv_x & ((1 << kFracBits) - 1), y_frac = mv_y & ((1 << kFracBits) - 1);
  const int x_int = x0 + (mv_x >> kFracBits), y_int = y0 + (mv_y >> kFracBits);
  const int shift1 = min(4, bit_depth - 8), shift3 = max(2, 14 - bit_depth);  // shift2 = 6
  const int x_max = ref.width - 1, y_max = ref.height - 1;
  const uint16_t* src = ref.data;
  const int col = lane % kTile, row = lane / kTile;
  pred[0] = pred[1] = 0;
  if (!x_frac && !y_frac) {  // full-sample: no window, each lane reads its own two samples
    const int xs = clip3(0, x_max, x_int + col);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int ys = clip3(0, y_max, y_int + row + 4 * k);
      if (col < w && row + 4 * k < h) pred[k] = int16_t(int(__ldg(src + ptrdiff_t(ys) * ref.stride + xs)) << shift3);
    }
    return;
  }
  // f1: the first (or only) pass, horizontal when x_frac is not 0; f2: the vertical pass after it
  const int frac1 = x_frac ? x_frac : y_frac;
  int f1[kTaps], f2[kTaps];
#pragma unroll
  for (int t = 0; t < kTaps; ++t) {
    f1[t] = filter_coef<kLuma>(frac1, t);
    f2[t] = filter_coef<kLuma>(y_frac, t);
  }
  // The window: kTaps - 1 more columns (rows) where the filter runs horizontally (vertically).
  const int wx = x_frac ? x_int - kHalf : x_int, wy = y_frac ? y_int - kHalf : y_int;
  const int ww = x_frac ? w + kTaps - 1 : w, wh = y_frac ? h + kTaps - 1 : h;
  __syncwarp();  // the warp's reads of the previous window are done
  for (int i = lane; i < wh * kWinPitch; i += 32) {
    const int r = i / kWinPitch, q = i % kWinPitch;
    if (q < ww) s.win[i] = __ldg(src + ptrdiff_t(clip3(0, y_max, wy + r)) * ref.stride + clip3(0, x_max, wx + q));
  }
  __syncwarp();
  if (x_frac && y_frac) {
    // horizontal pass over the h + kTaps - 1 window rows (shift1), then the vertical pass (shift2)
    for (int i = lane; i < wh * kTile; i += 32) {
      const int r = i / kTile, q = i % kTile;
      if (q >= w) continue;
      const uint16_t* p = s.win + r * kWinPitch + q;
      int sum = 0;
#pragma unroll
      for (int t = 0; t < kTaps; ++t) sum += f1[t] * int(p[t]);
      s.tmp[i] = sum >> shift1;
    }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int r = row + 4 * k;
      if (col >= w || r >= h) continue;
      const int32_t* p = s.tmp + r * kTile + col;
      int sum = 0;
#pragma unroll
      for (int t = 0; t < kTaps; ++t) sum += f2[t] * p[t * kTile];
      pred[k] = int16_t(sum >> 6);
    }
    return;
  }
  // one direction only: one pass straight from the window (shift1)
  const int step = x_frac ? 1 : kWinPitch;
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int r = row + 4 * k;
    if (col >= w || r >= h) continue;
    const uint16_t* p = s.win + r * kWinPitch + col;
    int sum = 0;
#pragma unroll
    for (int t = 0; t < kTaps; ++t) sum += f1[t] * int(p[t * step]);
    pred[k] = int16_t(sum >> shift1);
  }
}

// One tile of component c (0: luma) of one PB: the prediction of each list in use, then
// 8.5.3.3.4.2 default or 8.5.3.3.4.3 explicit weighting into the destination plane.
template <bool kLuma>
__device__ __forceinline__ void predict_tile(const Batch& b, const PackedPb& pb, int c, int tx, int ty, int lane,
                                             Scratch& s) {
  constexpr int sh = kLuma ? 0 : 1;
  const int x0 = (pb.x >> sh) + tx * kTile, y0 = (pb.y >> sh) + ty * kTile;
  const int w = min(kTile, (pb.w >> sh) - tx * kTile), h = min(kTile, (pb.h >> sh) - ty * kTile);
  const int bd = kLuma ? b.bit_depth_y : b.bit_depth_c;
  const int flags = pb.flags;
  const bool bi = (flags & 3) == 3;
  const int l0 = flags & 1 ? 0 : 1;  // the first list in use, whose weights the single-list formulas take
  int16_t a[2], p1[2] = {0, 0};
  {
    const HevcPlane ref = b.refs[pb.ref[l0] * 3 + c];
    interpolate<kLuma>(ref, x0, y0, w, h, pb.mv[l0][0], pb.mv[l0][1], bd, s, lane, a);
  }
  if (bi) {
    const HevcPlane ref = b.refs[pb.ref[1] * 3 + c];
    interpolate<kLuma>(ref, x0, y0, w, h, pb.mv[1][0], pb.mv[1][1], bd, s, lane, p1);
  }
  const HevcPlane d = dst_plane(b, c);
  const int col = lane % kTile;
  // samples outside the destination plane are not written (the host keeps x0, y0 inside it)
  if (col >= min(w, d.width - x0)) return;
  const int h_dst = min(h, d.height - y0);
  const int shift1 = 14 - bd, max_val = (1 << bd) - 1;
  const bool weighted = flags & 4;
  const int log2_wd = pb.log2_wd_base[c] + shift1;
  const int w0 = pb.weight[l0][c], o0 = pb.offset[l0][c] * (1 << (bd - 8));
  const int w1 = pb.weight[1][c], o1 = pb.offset[1][c] * (1 << (bd - 8));
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int r = lane / kTile + 4 * k;
    if (r >= h_dst) continue;
    const int pa = a[k], pb1 = p1[k];
    int v;
    if (!weighted) {
      v = bi ? (pa + pb1 + (1 << shift1)) >> (shift1 + 1) : (pa + (1 << (shift1 - 1))) >> shift1;
    } else if (!bi) {
      v = log2_wd >= 1 ? ((pa * w0 + (1 << (log2_wd - 1))) >> log2_wd) + o0 : pa * w0 + o0;
    } else {
      v = (pa * w0 + pb1 * w1 + ((o0 + o1 + 1) << log2_wd)) >> (log2_wd + 1);
    }
    d.data[ptrdiff_t(y0 + r) * d.stride + x0 + col] = uint16_t(clip3(0, max_val, v));
  }
}

// One warp per tile; nothing synchronises beyond the warp, so a warp without a tile leaves.
__global__ void __launch_bounds__(kThreads) mc_kernel(const Batch b) {
  __shared__ Scratch scratch[kWarps];
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int tile = int(blockIdx.x) * kWarps + warp;
  if (tile >= b.n_tiles) return;
  // At most kWarps - 1 steps: every PB in the list has a tile.
  int p = int(b.block_pb[blockIdx.x]);
  while (int(b.first_tile[p + 1]) <= tile) ++p;
  const PackedPb& pb = b.pbs[p];
  int j = tile - int(b.first_tile[p]), c = 0;
  TileGrid g = tile_grid(pb.x, pb.y, pb.w, pb.h, 0, b.dst[0].width, b.dst[0].height);
  if (j >= g.nx * g.ny) {
    j -= g.nx * g.ny;
    c = 1;
    g = tile_grid(pb.x, pb.y, pb.w, pb.h, 1, b.dst[1].width, b.dst[1].height);
    if (j >= g.nx * g.ny) {
      j -= g.nx * g.ny;
      c = 2;
      g = tile_grid(pb.x, pb.y, pb.w, pb.h, 2, b.dst[2].width, b.dst[2].height);
    }
  }
  const int tx = j % g.nx, ty = j / g.nx;
  if (c == 0)
    predict_tile<true>(b, pb, 0, tx, ty, lane, scratch[warp]);
  else
    predict_tile<false>(b, pb, c, tx, ty, lane, scratch[warp]);
}

bool plane_ok(const HevcPlane& p) {
  return p.data && p.width > 0 && p.height > 0 && p.width <= 65536 && p.height <= 65536 && p.stride >= p.width;
}

size_t tile_count(const HevcMcPb& pb, const int plane_w[3], const int plane_h[3]) {
  size_t n = 0;
  for (int c = 0; c < 3; ++c) {
    const TileGrid g = tile_grid(pb.x, pb.y, pb.w, pb.h, c, plane_w[c], plane_h[c]);
    n += size_t(g.nx) * size_t(g.ny);
  }
  return n;
}

Status bad_pb(int i, const HevcMcPb& pb, const std::string& why) {
  return Status::error("HEVC inter prediction: PB " + std::to_string(i) + " (" + std::to_string(pb.w) + "x" +
                       std::to_string(pb.h) + " at " + std::to_string(pb.x) + "," + std::to_string(pb.y) +
                       "): " + why);
}

// What the CPU reference has no answer for (or would overflow on) in a PB that predicts
// something, or null.
const char* check_pb(const HevcMcPb& pb, int n_refs) {
  if (pb.w < 0 || pb.h < 0 || pb.w > kMaxPbSize || pb.h > kMaxPbSize) return "sizes are up to 64x64";
  if (pb.x < 0 || pb.y < 0) return "negative position";
  for (int l = 0; l < 2; ++l) {
    if (!pb.pred_flag[l]) continue;
    if (pb.ref[l] >= n_refs) return "a reference index beyond n_refs";
    if (!pb.weighted) continue;
    // 7.4.7.3: LumaWeightLX / ChromaWeightLX are 2^denominator + (-128..127), the offsets
    // -128..127 (high_precision_offsets_enabled_flag 0, as the CPU reference has it).
    for (int c = 0; c < 3; ++c) {
      if (pb.weight[l][c] < -128 || pb.weight[l][c] > 255) return "explicit weight outside -128..255";
      if (pb.offset[l][c] < -128 || pb.offset[l][c] > 127) return "explicit offset outside -128..127";
    }
  }
  if (pb.weighted)
    for (int c = 0; c < 3; ++c)
      if (pb.log2_wd_base[c] > 7) return "weight denominator above 7";
  return nullptr;
}

size_t align16(size_t n) { return (n + 15) & ~size_t(15); }

}  // namespace

Status HevcMcCore::pack(const HevcMcBatch& b, const int plane_w[3], const int plane_h[3], Packed& p) {
  if (b.bit_depth_y < 8 || b.bit_depth_y > 12 || b.bit_depth_c < 8 || b.bit_depth_c > 12)
    return Status::error("HEVC inter prediction: bit depths must be 8..12");
  if (b.n_pbs > 0 && !b.pbs) return Status::error("HEVC inter prediction: no PB list");
  p.pbs.clear();
  p.first_tile.clear();
  p.block_pb.clear();
  p.n_tiles = 0;
  p.n_refs = std::min(std::max(b.n_refs, 0), kMaxRefs);  // PBs cannot index further
  std::fill(std::begin(p.used_refs), std::end(p.used_refs), 0u);
  p.bit_depth_y = b.bit_depth_y;
  p.bit_depth_c = b.bit_depth_c;
  for (int c = 0; c < 3; ++c) {
    p.plane_w[c] = plane_w[c];
    p.plane_h[c] = plane_h[c];
  }
  // Check and pack the PBs that write something (PBs without a list predict nothing, as on
  // the CPU); PB k's tiles start at first_tile[k].
  size_t n_tiles = 0;
  for (int i = 0; i < b.n_pbs; ++i) {
    const HevcMcPb& pb = b.pbs[i];
    if (!pb.pred_flag[0] && !pb.pred_flag[1]) continue;
    if (const char* why = check_pb(pb, p.n_refs)) return bad_pb(i, pb, why);
    const size_t tiles = tile_count(pb, plane_w, plane_h);
    if (!tiles) continue;
    if (pb.x > 65535 || pb.y > 65535) return bad_pb(i, pb, "position beyond 65535");
    PackedPb q{};
    q.x = uint16_t(pb.x);
    q.y = uint16_t(pb.y);
    q.w = uint8_t(pb.w);
    q.h = uint8_t(pb.h);
    q.flags = uint8_t((pb.pred_flag[0] ? 1 : 0) | (pb.pred_flag[1] ? 2 : 0) | (pb.weighted ? 4 : 0));
    for (int l = 0; l < 2; ++l) {
      if (!pb.pred_flag[l]) continue;
      q.ref[l] = pb.ref[l];
      p.used_refs[pb.ref[l] / 32] |= 1u << (pb.ref[l] % 32);
      q.mv[l][0] = pb.mv[l][0];
      q.mv[l][1] = pb.mv[l][1];
      if (!pb.weighted) continue;
      for (int c = 0; c < 3; ++c) {
        q.weight[l][c] = pb.weight[l][c];
        q.offset[l][c] = int8_t(pb.offset[l][c]);
      }
    }
    if (pb.weighted)
      for (int c = 0; c < 3; ++c) q.log2_wd_base[c] = pb.log2_wd_base[c];
    p.pbs.push_back(q);
    p.first_tile.push_back(uint32_t(n_tiles));
    n_tiles += tiles;
    if (n_tiles > size_t(1) << 30) return Status::error("HEVC inter prediction: more than 2^30 tiles");
  }
  if (!n_tiles) {
    p.pbs.clear();
    p.first_tile.clear();
    return {};
  }
  p.first_tile.push_back(uint32_t(n_tiles));
  p.n_tiles = uint32_t(n_tiles);
  const uint32_t n_blocks = uint32_t((n_tiles + kWarps - 1) / kWarps);
  p.block_pb.resize(n_blocks);
  for (uint32_t blk = 0, q = 0; blk < n_blocks; ++blk) {
    while (p.first_tile[q + 1] <= blk * kWarps) ++q;
    p.block_pb[blk] = q;
  }
  return {};
}

Status HevcMcCore::launch(const Packed& p, const HevcPlane (*refs)[3], int n_refs, const PackedPb* pbs,
                          const uint32_t* first_tile, const uint32_t* block_pb, const HevcPlane dst[3],
                          cudaStream_t s) {
  if (!p.n_tiles) return {};
  for (int c = 0; c < 3; ++c)
    if (!plane_ok(dst[c]) || dst[c].width != p.plane_w[c] || dst[c].height != p.plane_h[c])
      return Status::error("HEVC inter prediction: destination plane " + std::to_string(c) +
                           " is missing or malformed, or not of the size packed for");
  if (n_refs < p.n_refs || (p.n_refs && !refs))
    return Status::error("HEVC inter prediction: fewer references than packed for");
  for (int i = 0; i < p.n_refs; ++i)
    if (((p.used_refs[i / 32] >> (i % 32)) & 1) &&
        !(plane_ok(refs[i][0]) && plane_ok(refs[i][1]) && plane_ok(refs[i][2])))
      return Status::error("HEVC inter prediction: reference " + std::to_string(i) +
                           " has a missing or malformed plane");
  const size_t refs_bytes = std::max<size_t>(size_t(p.n_refs), 1) * 3 * sizeof(HevcPlane);
  uint8_t* host = nullptr;
  GVC_TRY(refs_staging_.acquire(refs_bytes, host));
  if (p.n_refs) std::memcpy(host, refs, size_t(p.n_refs) * 3 * sizeof(HevcPlane));
  // grown with a quarter to spare: cudaFree waits for the whole device
  if (refs_dev_.size() < refs_bytes) GVC_TRY(refs_dev_.reserve(refs_bytes + refs_bytes / 4));
  GVC_CUDA_TRY(cudaMemcpyAsync(refs_dev_.get(), host, refs_bytes, cudaMemcpyHostToDevice, s));
  GVC_TRY(refs_staging_.release(s));
  Batch batch{};
  batch.refs = refs_dev_.get<const HevcPlane>();
  batch.pbs = pbs;
  batch.first_tile = first_tile;
  batch.block_pb = block_pb;
  batch.n_tiles = int(p.n_tiles);
  for (int c = 0; c < 3; ++c) batch.dst[c] = dst[c];
  batch.bit_depth_y = p.bit_depth_y;
  batch.bit_depth_c = p.bit_depth_c;
  const uint32_t n_blocks = uint32_t(p.block_pb.size());
  mc_kernel<<<n_blocks, kThreads, 0, s>>>(batch);
  GVC_CUDA_TRY(cudaGetLastError());
  return {};
}

Status HevcMcCore::run(const HevcMcBatch& b, const HevcPlane dst[3], cudaStream_t s) {
  if (b.bit_depth_y < 8 || b.bit_depth_y > 12 || b.bit_depth_c < 8 || b.bit_depth_c > 12)
    return Status::error("HEVC inter prediction: bit depths must be 8..12");
  if (b.n_pbs <= 0) return {};
  if (!b.pbs) return Status::error("HEVC inter prediction: no PB list");
  for (int c = 0; c < 3; ++c)
    if (!plane_ok(dst[c]))
      return Status::error("HEVC inter prediction: destination plane " + std::to_string(c) +
                           " is missing or malformed");
  if (b.n_refs > 0 && !b.refs) return Status::error("HEVC inter prediction: n_refs without refs");
  const int w[3] = {dst[0].width, dst[1].width, dst[2].width}, h[3] = {dst[0].height, dst[1].height, dst[2].height};
  GVC_TRY(pack(b, w, h, packed_));
  if (!packed_.n_tiles) return {};
  // the three arrays one after another, through pinned staging
  const size_t pbs_bytes = packed_.pbs.size() * sizeof(PackedPb);
  const size_t first_at = align16(pbs_bytes);
  const size_t block_at = align16(first_at + packed_.first_tile.size() * sizeof(uint32_t));
  const size_t bytes = block_at + packed_.block_pb.size() * sizeof(uint32_t);
  uint8_t* host = nullptr;
  GVC_TRY(staging_.acquire(bytes, host));
  std::memcpy(host, packed_.pbs.data(), pbs_bytes);
  std::memcpy(host + first_at, packed_.first_tile.data(), packed_.first_tile.size() * sizeof(uint32_t));
  std::memcpy(host + block_at, packed_.block_pb.data(), packed_.block_pb.size() * sizeof(uint32_t));
  // grown with a quarter to spare: cudaFree waits for the whole device
  if (dev_.size() < bytes) GVC_TRY(dev_.reserve(bytes + bytes / 4));
  uint8_t* base = dev_.get<uint8_t>();
  GVC_CUDA_TRY(cudaMemcpyAsync(base, host, bytes, cudaMemcpyHostToDevice, s));
  GVC_TRY(staging_.release(s));
  return launch(packed_, b.refs, b.n_refs, reinterpret_cast<const PackedPb*>(base),
                reinterpret_cast<const uint32_t*>(base + first_at), reinterpret_cast<const uint32_t*>(base + block_at),
                dst, s);
}

}  // namespace cuda
}  // namespace gvc
