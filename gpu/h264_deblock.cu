// h264_deblock.cu: the H.264 encoder's in-loop deblocking filter on the GPU: every macroblock's MbFilters, then a wavefront of a block per macroblock row (a luma warp, a chroma warp), each handing the row below its bottom lines
#include "gpu/h264_deblock.h"

#include <cstddef>
#include <cstdint>

#include "gpu/sync.cuh"

namespace gvc {
namespace cuda {

namespace {

// Every macroblock's MbFilters (bS, tC0, alpha and beta of each line's edges), one thread each.
__global__ void gather_filters(const h264::Macroblock* mbs, int mb_width, int mb_height, h264::DeblockParams p,
                               h264::MbFilters* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= mb_width * mb_height) return;
  h264::MbEdges e;
  h264::mb_edges(h264::MbMap{mbs, mb_width, mb_height, -1}, i % mb_width, i / mb_width, p, e);
  h264::MbFilters f;
  h264::mb_filters(e, p, f);
  out[i] = f;
}

// The samples of a lane's line, in registers: luma 20 (the 4 before the macroblock, its 16),
// chroma in [2, 12) (2 before, 8), so that edge slot k's p3..q3 are v[4k .. 4k + 8) in both.
using Line = int[20];

__device__ __forceinline__ void unpack(uint32_t word, int* v) {
#pragma unroll
  for (int i = 0; i < 4; i++) v[i] = int((word >> (8 * i)) & 255);
}

__device__ __forceinline__ uint32_t pack(const int* v) {
  return uint32_t(v[0]) | uint32_t(v[1]) << 8 | uint32_t(v[2]) << 16 | uint32_t(v[3]) << 24;
}

// A line's samples in registers for filter_edge: q0 and the samples after and before it.
struct SamplesInLine {
  int* q0;
  __device__ int& operator()(int i) const { return q0[i]; }
};

// Filters a line's edges of one direction, slot after slot, as LineFilter `f` (as 4 words) says.
__device__ __forceinline__ void filter_line(Line& v, uint4 f, bool chroma) {
#pragma unroll
  for (int slot = 0; slot < 4; slot++) {
    const int sh = 8 * slot;
    const int bs = int((f.x >> sh) & 255);
    if (bs)
      h264::filter_edge(SamplesInLine{v + 4 * slot + 4}, bs, int((f.z >> sh) & 255), int((f.w >> sh) & 255),
                        int((f.y >> sh) & 255), chroma);
  }
}

__device__ __forceinline__ uint4 load_filter(const h264::MbFilters* filters, size_t mb, int dir, int cls, int group) {
  return __ldg(reinterpret_cast<const uint4*>(&filters[mb].f[dir][cls][group]));
}

constexpr int kLumaRowWords = 5;  // the luma tile's rows 20 bytes apart (16 used): no bank conflicts by rows
constexpr int kChromaRowWords = 2;

// What a macroblock row hands the row below for each macroblock (its "post"): the lines the
// top edge below reads, final, as 32-bit words of samples, each in a 64-bit word with the
// launch's epoch above it: luma lines 12..15 (words 0..15, 4 a line), then Cb and Cr lines
// 6..7 (words 16..23, 2 a line). A reader polls its words until all carry the epoch: a 64-bit
// store is seen whole, so no fence orders the samples before a flag (as NCCL's LL protocol).
constexpr int kPostWords = 24;

__device__ __forceinline__ int post_word(bool luma, int plane, int line) {
  return luma ? 4 * line : 16 + 4 * (plane - 1) + 2 * line;
}

// Posts a line of a macroblock, final: its 4 words (luma) or 2 (chroma) under `flag`.
__device__ __forceinline__ void post_line(unsigned long long* out, unsigned long long flag, uint4 line, bool luma) {
  store_relaxed64(out, flag | line.x);
  store_relaxed64(out + 1, flag | line.y);
  if (luma) {
    store_relaxed64(out + 2, flag | line.z);
    store_relaxed64(out + 3, flag | line.w);
  }
}

// The loop filter, a block of two warps per macroblock row, each macroblock in two phases that
// keep the order of the standard's macroblock loop (8.7): its vertical edges, then its
// horizontal ones. Lane k < 16 of the first warp holds luma line k of the macroblock, lanes
// 0-7 and 8-15 of the second Cb and Cr line k & 7 (the other lanes leave at once): a row for
// the vertical edges, a column for the horizontal ones. Luma and chroma are filtered apart
// (8.7.2 filters each plane from its own samples), each warp on its path of filter_edge.
// - The vertical edges read and change only the macroblock's rows and the 4 (2) columns left
//   of it, this warp's: a lane filters its row in registers, its macroblock samples loaded a
//   macroblock ahead (no one changes them before), the left ones kept from the last
//   macroblock. They go into a shared tile of the macroblock with 4 (2) rows above it.
// - The horizontal edges read those rows above, final once row y - 1 has filtered the vertical
//   edges of macroblock x + 1 (whose left edge changes the bottom-right samples of the
//   macroblock above): row y - 1 then posts them (kPostWords) into `posts`, and row y polls
//   for them, requested before its vertical edges. A row thus runs one macroblock behind the
//   row above (W + H steps). A lane filters its column of the tile in registers; the tile's
//   rows then go to the picture (the macroblock's last 4 (2) columns again after the next
//   macroblock's vertical edges, from the same lane).
// - Each sample is written by one warp: a row's bottom 3 luma lines and last chroma line, which
//   the top edge below changes, by the row below (the last row writes its own).
// The filter parameters come per line from gather_filters, loaded a macroblock ahead.
// (checkgpu --bench, 1080p on an H200: 0.46 ms. Before: one warp for luma and chroma, whose
// lanes took both paths of filter_edge: 0.52 ms; before that, the rows above came through the
// picture, behind a progress counter per row stored with release and polled with acquire at
// device scope, two fences a macroblock: 0.62 ms; and before that, the lanes filtered in a
// shared tile loaded and stored whole for each phase, with the parameters computed in the
// wavefront: 0.85 ms, timed in the encoder.)
__global__ void __launch_bounds__(64) deblock_rows(h264::DeblockPlanes pic, const h264::MbFilters* filters,
                                                   int mb_width, unsigned long long* posts, unsigned epoch) {
  __shared__ uint32_t luma_tile[20 * kLumaRowWords];           // rows -4..15 of the macroblock
  __shared__ uint32_t chroma_tile[2][10 * kChromaRowWords];     // rows -2..7, per plane
  const int y = blockIdx.x, lane = threadIdx.x & 31, w = mb_width;
  if (lane >= 16) return;
  const bool luma = threadIdx.x < 32;
  const int c = luma ? 0 : 1 + (lane >> 3);  // plane
  const int k = luma ? lane : lane & 7;      // line
  const int size = luma ? 16 : 8;                   // macroblock samples per line
  const int above = luma ? 4 : 2;                   // tile rows above the macroblock
  const int words = luma ? 4 : 2;                   // 32-bit words per line
  const int row_words = luma ? kLumaRowWords : kChromaRowWords;
  const int cls = luma ? 0 : 1, group = luma ? k >> 2 : k >> 1;
  const bool last_row = y + 1 == int(gridDim.x);
  // this lane's line goes to the picture from here (the row below writes the bottom ones)
  const bool stores_line = last_row || k <= size - above;
  // ... to the row below, as line `k - (size - above)` of its rows above
  const bool posts_line = !last_row && k >= size - above;
  // ... and row k of the tile comes from the row above
  const bool reads_above = y > 0 && k < above;
  const ptrdiff_t stride = pic.stride[c];
  uint8_t* const row = pic.plane[c] + ptrdiff_t(size * y + k) * stride;  // line k of macroblock 0
  // lanes k < above: row k - above of macroblock 0 (used where y > 0)
  uint8_t* const above_row = pic.plane[c] + ptrdiff_t(size * y + k - above) * stride;
  uint32_t* const tile = luma ? luma_tile : chroma_tile[c - 1];
  uint32_t* const tile_row = tile + (above + k) * row_words;
  // column k of the tile as Line v[r]: tile row r - lo (chroma: rows from v[2])
  uint8_t* const col = reinterpret_cast<uint8_t*>(tile) + k;
  const int col_bytes = 4 * row_words, lo = luma ? 0 : 2, hi = luma ? 20 : 12;

  const size_t first = size_t(y) * size_t(w);
  unsigned long long* const post_out =
      posts_line ? posts + first * kPostWords + post_word(luma, c, k - (size - above)) : nullptr;
  const unsigned long long* const post_in =
      reads_above ? posts + (first - size_t(w)) * kPostWords + post_word(luma, c, k) : nullptr;
  const unsigned long long flag = static_cast<unsigned long long>(epoch) << 32;
  uint4 own = luma ? *reinterpret_cast<const uint4*>(row) : uint4{0, 0, 0, 0};
  if (!luma) {
    const uint2 o = *reinterpret_cast<const uint2*>(row);
    own.x = o.x;
    own.y = o.y;
  }
  uint4 fv = load_filter(filters, first, 0, cls, group), fh = load_filter(filters, first, 1, cls, group);
  if (k < above)  // the rows above the first row's macroblocks: never filtered, but read
    for (int i = 0; i < (luma ? 4 : 2); i++) tile[k * row_words + i] = 0;
  uint4 prev{0, 0, 0, 0};  // the last macroblock's line after its horizontal edges
  for (int x = 0; x < w; x++) {
    const uint4 cur = own, cv = fv, ch = fh;
    // the row above's post of this macroblock, requested now: the vertical edges hide its wait
    unsigned long long up[4] = {flag, flag, flag, flag};
    if (reads_above)
#pragma unroll
      for (int i = 0; i < 4; i++)
        if (i < words) up[i] = load_relaxed64(post_in + size_t(x) * kPostWords + i);
    if (x + 1 < w) {  // the next macroblock's samples and parameters, for its turn
      if (luma) {
        own = *reinterpret_cast<const uint4*>(row + 16 * (x + 1));
      } else {
        const uint2 o = *reinterpret_cast<const uint2*>(row + 8 * (x + 1));
        own.x = o.x;
        own.y = o.y;
      }
      fv = load_filter(filters, first + size_t(x + 1), 0, cls, group);
      fh = load_filter(filters, first + size_t(x + 1), 1, cls, group);
    }
    // the vertical edges: this lane's row
    Line v;
    unpack(luma ? prev.w : prev.y, v);
    unpack(cur.x, v + 4);
    unpack(cur.y, v + 8);
    unpack(cur.z, v + 12);
    unpack(cur.w, v + 16);
    filter_line(v, cv, !luma);
    tile_row[0] = pack(v + 4);
    tile_row[1] = pack(v + 8);
    if (luma) {
      tile_row[2] = pack(v + 12);
      tile_row[3] = pack(v + 16);
    }
    // the last macroblock's last 4 (2) samples of the line are final now (chroma: with the 2
    // before them, which are unchanged): to the picture, and to the row below
    if (x > 0) {
      const uint32_t last = pack(v);
      if (stores_line) *reinterpret_cast<uint32_t*>(row + size_t(size) * size_t(x) - 4) = last;
      if (posts_line)
        post_line(post_out + size_t(x - 1) * kPostWords, flag,
                  luma ? uint4{prev.x, prev.y, prev.z, last} : uint4{prev.x, last, 0, 0}, luma);
    }
    if (reads_above) {
      for (;;) {
        bool ready = true;
#pragma unroll
        for (int i = 0; i < 4; i++) ready &= (up[i] & ~0xffffffffull) == flag;
        if (ready) break;
        __nanosleep(20);
#pragma unroll
        for (int i = 0; i < 4; i++)
          if (i < words) up[i] = load_relaxed64(post_in + size_t(x) * kPostWords + i);
      }
#pragma unroll
      for (int i = 0; i < 4; i++)
        if (i < words) tile[k * row_words + i] = uint32_t(up[i]);
    }
    __syncwarp(0xffff);
    // the horizontal edges: this lane's column
#pragma unroll
    for (int r = 0; r < 20; r++) v[r] = r >= lo && r < hi ? col[(r - lo) * col_bytes] : 0;
    filter_line(v, ch, !luma);
#pragma unroll
    for (int r = 1; r < 19; r++)
      if (r >= lo && r < hi) col[(r - lo) * col_bytes] = uint8_t(v[r]);
    __syncwarp(0xffff);
    // to the picture: this lane's row of the macroblock, and the rows above that the top edge
    // changed (luma -3..-1, chroma -1), which no one else writes
    if (luma) {
      prev = uint4{tile_row[0], tile_row[1], tile_row[2], tile_row[3]};
      if (stores_line) *reinterpret_cast<uint4*>(row + 16 * x) = prev;
      if (y > 0 && k >= 1 && k < 4) {
        const uint32_t* a = luma_tile + k * kLumaRowWords;
        *reinterpret_cast<uint4*>(above_row + 16 * x) = uint4{a[0], a[1], a[2], a[3]};
      }
    } else {
      prev = uint4{tile_row[0], tile_row[1], 0, 0};
      if (stores_line) *reinterpret_cast<uint2*>(row + 8 * x) = uint2{prev.x, prev.y};
      if (y > 0 && k == 1) *reinterpret_cast<uint2*>(above_row + 8 * x) = uint2{tile[2], tile[3]};
    }
  }
  // the last macroblock's line has no right neighbour to change it: final as it is
  if (posts_line) post_line(post_out + size_t(w - 1) * kPostWords, flag, prev, luma);
}

}  // namespace

Status H264DeblockCore::run(const h264::DeblockPlanes& pic, const h264::Macroblock* mbs, int mb_width,
                            int mb_height, const h264::DeblockParams& p, cudaStream_t s) {
  // deblock_rows moves luma lines in 16-byte words and chroma lines in 8-byte ones
  if (pic.stride[0] % 16 || pic.stride[1] % 8 || pic.stride[2] % 8 || reinterpret_cast<uintptr_t>(pic.plane[0]) % 16 ||
      reinterpret_cast<uintptr_t>(pic.plane[1]) % 8 || reinterpret_cast<uintptr_t>(pic.plane[2]) % 8)
    return Status::error("the loop filter needs luma planes and strides of 16-byte words, chroma of 8-byte ones");
  if (mb_width <= 0 || mb_height <= 0) return Status();
  if (pic.stride[0] < 16 * mb_width || pic.stride[1] < 8 * mb_width || pic.stride[2] < 8 * mb_width)
    return Status::error("the loop filter's planes are narrower than the picture");
  const int mb_count = mb_width * mb_height;
  GVC_TRY(filters_.reserve(size_t(mb_count) * sizeof(h264::MbFilters)));
  // The posts of a launch carry its epoch; those of earlier launches (any size) a smaller one,
  // except in fresh memory or after the epoch wraps: then they are cleared first.
  const size_t post_bytes = size_t(mb_count) * kPostWords * sizeof(unsigned long long);
  if (posts_.size() < post_bytes || ++epoch_ == 0) {
    GVC_TRY(posts_.reserve(post_bytes));
    const Status cleared = check(cudaMemsetAsync(posts_.get(), 0, posts_.size(), s), "cudaMemsetAsync");
    if (!cleared.ok()) {
      posts_.reset();  // cleared by the next call
      return cleared;
    }
    epoch_ = 1;
  }
  gather_filters<<<(mb_count + 127) / 128, 128, 0, s>>>(mbs, mb_width, mb_height, p, filters_.get<h264::MbFilters>());
  GVC_CUDA_TRY(cudaGetLastError());
  deblock_rows<<<mb_height, 64, 0, s>>>(pic, filters_.get<h264::MbFilters>(), mb_width,
                                        posts_.get<unsigned long long>(), epoch_);
  GVC_CUDA_TRY(cudaGetLastError());
  return Status();
}

}  // namespace cuda
}  // namespace gvc
