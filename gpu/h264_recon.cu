// h264_recon.cu: the H.264 encoder's reconstruction stage on the GPU: inter pass, intra and deblocking wavefronts (one launch each)
#include "gpu/h264_recon.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/h264enc/deblock.h"
#include "common/h264enc/mb_layer_bits.h"
#include "common/h264enc/me_predictor.h"
#include "common/h264enc/recon_mb.h"
#include "common/util/futex.h"
#include "common/util/parallel.h"
#include "gpu/h264_deblock.h"
#include "gpu/h264_decide_prep.h"
#include "gpu/halfpel.h"
#include "gpu/sync.cuh"

namespace gvc {
namespace cuda {

namespace {

using h264::Macroblock;
using h264::ReconPicture;
using h264::ReconRef;

// A frame and its references as one kernel parameter (recon_inter copies the references into
// shared memory and points ReconPicture::refs at them).
struct KernelFrame {
  ReconPicture f;
  ReconRef refs[4];
};

// Every inter macroblock (they read only the references), a warp each, kInterWarps to a block,
// with reconstruct_mb's inter arithmetic shared out in the steps macroblock.h gives for it:
// lanes 0-15 predict and code luma block blk = lane, lanes 16-23 chroma block lane - 16 & 3
// of Cb, then Cr; the macroblock's cbp comes from ballots and the decimation from the blocks'
// scores (shuffled to every lane), each component's DC levels from one lane, and the blocks
// are then reconstructed. (A thread per macroblock, with reconstruct_mb
// whole, took 163 us at 1080p on an H200: two warps an SM, each a macroblock's serial work.)
constexpr int kInterWarps = 4;

__global__ void __launch_bounds__(32 * kInterWarps) recon_inter(KernelFrame k) {
  __shared__ ReconRef refs[4];
  __shared__ uint8_t preds[kInterWarps][256];       // luma prediction, stride 16
  __shared__ uint8_t cpreds[kInterWarps][2][64];    // chroma, stride 8
  for (int r = threadIdx.x; r < k.f.num_refs; r += blockDim.x) refs[r] = k.refs[r];
  __syncthreads();
  ReconPicture f = k.f;
  f.refs = refs;
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;
  const int i = int(blockIdx.x) * kInterWarps + warp;
  if (i >= f.mb_width * f.mb_height) return;
  Macroblock& mb = f.mbs[i];
  if (h264::is_intra(mb.type)) return;  // the whole warp
  const int mx = i % f.mb_width, my = i / f.mb_width;
  const h264::MbPixels px = h264::mb_pixels(f, mx, my);
  uint8_t* const pred = preds[warp];
  uint8_t(*const cpred)[64] = cpreds[warp];
  const bool luma = lane < 16, chroma = lane >= 16 && lane < 24;
  const int c = chroma ? (lane - 16) >> 2 : 0, cblk = (lane - 16) & 3;
  int32_t dc = 0;
  int coded = 0;
  if (luma) {
    mb.luma_dc[lane] = 0;
    const int bx = GVC_T(h264::kBlkX)[lane], by = GVC_T(h264::kBlkY)[lane];
    const ReconRef& ref = f.refs[mb.ref_idx[(by >> 1) * 2 + (bx >> 1)]];
    ref.luma.predict(16 * mx + 4 * bx, 16 * my + 4 * by, 4, 4, mb.mv[4 * by + bx], pred + 64 * by + 4 * bx, 16);
    h264::luma_block_levels(px, pred, f.qp, false, lane, mb);
    coded = mb.total_coeff_luma[lane];
  } else if (chroma) {
    // chroma block cblk covers the 2x2 samples of four luma 4x4 blocks, each with its vector
    for (int sub = 0; sub < 4; sub++) {
      const int bx = 2 * (cblk & 1) + (sub & 1), by = 2 * (cblk >> 1) + (sub >> 1);
      const ReconRef& ref = f.refs[mb.ref_idx[(by >> 1) * 2 + (bx >> 1)]];
      h264::mc_chroma(ref.chroma[c], ref.chroma_stride, ref.chroma_width, ref.chroma_height, 8 * mx + 2 * bx,
                      8 * my + 2 * by, 2, 2, mb.mv[4 * by + bx], cpred[c] + 16 * by + 2 * bx, 8);
    }
    dc = h264::chroma_block_levels(px, cpred[c], f.qpc, false, c, cblk, mb);
    coded = mb.total_coeff_chroma[c][cblk];
  }
  // decimation (code_luma16x16, code_chroma): every lane gathers the blocks' scores
  const int score = luma ? h264::decimate_score(mb.luma[lane], 0)
                         : chroma ? h264::decimate_score(mb.chroma_ac[c][cblk], 1) : 0;
  int scores[16], chroma_score = 0;
  for (int b = 0; b < 16; b++) scores[b] = __shfl_sync(0xffffffffu, score, b);
  for (int b = 0; b < 4; b++) chroma_score += __shfl_sync(0xffffffffu, score, 16 + 4 * c + b);
  if (chroma && chroma_score < h264::kDecimateChromaAc) {
    h264::drop_chroma_ac(c, cblk, mb);
    coded = 0;
  }
  // cbp: luma 8x8 quadrant q is coded when one of its blocks 4q..4q+3 is, and not decimated
  const unsigned luma_coded = __ballot_sync(0xffffffffu, luma && coded);
  int cbp_luma = 0;
  for (int q = 0; q < 4; q++) cbp_luma |= ((luma_coded >> (4 * q)) & 15) ? 1 << q : 0;
  cbp_luma &= h264::decimate_luma_quadrants(scores);
  const unsigned ac_coded = __ballot_sync(0xffffffffu, chroma && coded);
  int32_t dcs[4];
  for (int b = 0; b < 4; b++) dcs[b] = __shfl_sync(0xffffffffu, dc, 16 + 4 * c + b);
  const bool dc_lane = chroma && cblk == 0;  // the component's DC levels
  const int dc_coded = dc_lane ? h264::chroma_dc_levels(dcs, f.qpc, false, c, mb) : 0;
  const int cbp_chroma = ac_coded ? 2 : (__ballot_sync(0xffffffffu, dc_coded != 0) ? 1 : 0);
  __syncwarp();  // the DC levels, for every lane of the component
  if (luma) {
    h264::luma_block_recon(px, pred, f.qp, false, lane, cbp_luma, 0, mb);
  } else if (chroma) {
    int32_t dcc[4];
    h264::dequant_dc_chroma(mb.chroma_dc[c], dcc, f.qpc);
    h264::chroma_block_recon(px, cpred[c], f.qpc, c, cblk, cbp_chroma, dcc[cblk], mb);
  }
  if (lane == 0) {
    mb.cbp = uint8_t(cbp_luma | cbp_chroma << 4);
    h264::finish_skip_candidate(mb);
  }
}

// The intra wavefront: a block per macroblock row, row y's macroblock x waiting for row y - 1
// to have passed x + 1 (its upper-right neighbour, and so its upper and upper-left ones), as
// decoding order allows; inter macroblocks were reconstructed before. progress[y] counts the
// macroblocks of row y done (zero at the launch). A macroblock is shared by two warps: one
// makes its luma (Intra_16x16 a thread per 4x4 block; Intra_4x4 a half-warp per block and a
// thread per sample, two blocks at a time), the other its chroma (a thread per 4x4 block),
// with recon_mb.h's arithmetic (Intra_4x4's transforms and quantisation written out per
// sample below), so the bits are the CPU's; then the I_PCM choice (intra_mb_bits in parts, a
// thread each, where the bound from the macroblock's own levels does not settle it). One
// thread per row, a macroblock at a time, took 92 us per macroblock.
constexpr int kIntraThreads = 64;

// What a macroblock's threads share.
struct IntraShared {
  h264::IntraEdge edge;        // luma: the macroblock's (Intra_16x16)
  h264::IntraEdge edge4[2];    // Intra_4x4: the edge of each half-warp's current block
  h264::IntraEdge cedge[2];    // Cb, Cr
  uint8_t pred[256];           // Intra_16x16's prediction, stride 16
  uint8_t cpred[2][64];        // stride 8
  int32_t dc[16], dcy[16];     // Intra_16x16: the blocks' DC coefficients, their scaled DCs
  int32_t cdc[2][4];           // the chroma blocks' DC coefficients, then their scaled DCs
  int cbp_luma, cbp_chroma;
};

constexpr unsigned kHalfWarp = 0xffffu;

// fdct4x4 of a block held a sample per thread by a half-warp (its lanes base..base + 15 in
// `mask`, sample i = 4 * y + x in lane base + i): each gets its coefficient.
__device__ int fdct4x4_lane(int v, int i, unsigned mask, int base) {
  const int x = i & 3, y = i >> 2, r = base + (i & ~3), c = base + x;
  const int x0 = __shfl_sync(mask, v, r), x1 = __shfl_sync(mask, v, r + 1);
  const int x2 = __shfl_sync(mask, v, r + 2), x3 = __shfl_sync(mask, v, r + 3);
  int s03 = x0 + x3, d03 = x0 - x3, s12 = x1 + x2, d12 = x1 - x2;
  const int t = x == 0 ? s03 + s12 : x == 1 ? 2 * d03 + d12 : x == 2 ? s03 - s12 : d03 - 2 * d12;
  const int c0 = __shfl_sync(mask, t, c), c1 = __shfl_sync(mask, t, c + 4);
  const int c2 = __shfl_sync(mask, t, c + 8), c3 = __shfl_sync(mask, t, c + 12);
  s03 = c0 + c3, d03 = c0 - c3, s12 = c1 + c2, d12 = c1 - c2;
  return y == 0 ? s03 + s12 : y == 1 ? 2 * d03 + d12 : y == 2 ? s03 - s12 : d03 - 2 * d12;
}

// idct4x4 (with its final rounding) of scaled coefficients held as fdct4x4_lane's.
__device__ int idct4x4_lane(int v, int i, unsigned mask, int base) {
  const int x = i & 3, y = i >> 2, r = base + (i & ~3), c = base + x;
  const int x0 = __shfl_sync(mask, v, r), x1 = __shfl_sync(mask, v, r + 1);
  const int x2 = __shfl_sync(mask, v, r + 2), x3 = __shfl_sync(mask, v, r + 3);
  int e0 = x0 + x2, e1 = x0 - x2, e2 = (x1 >> 1) - x3, e3 = x1 + (x3 >> 1);
  const int f = x == 0 ? e0 + e3 : x == 1 ? e1 + e2 : x == 2 ? e1 - e2 : e0 - e3;
  const int f0 = __shfl_sync(mask, f, c), f1 = __shfl_sync(mask, f, c + 4);
  const int f2 = __shfl_sync(mask, f, c + 8), f3 = __shfl_sync(mask, f, c + 12);
  e0 = f0 + f2, e1 = f0 - f2, e2 = (f1 >> 1) - f3, e3 = f1 + (f3 >> 1);
  return ((y == 0 ? e0 + e3 : y == 1 ? e1 + e2 : y == 2 ? e1 - e2 : e0 - e3) + 32) >> 6;
}

// A thread's share of quant4x4 and dequant4x4 of an intra 4x4 block at the frame's QP: the
// factors of its sample's position (i = lane & 15) and where its level goes in scan order.
struct LaneQuant {
  int mf, round, qbits, scale, shift, scan;
};
__device__ LaneQuant lane_quant(int qp, int i) {
  const int cls = GVC_T(h264::kPosClass)[i];
  LaneQuant q;
  q.qbits = 15 + qp / 6;
  q.round = (1 << q.qbits) / 3;
  q.mf = GVC_T(h264::kQuantMf)[qp % 6][cls];
  q.scale = GVC_T(h264::kDequantScale)[qp % 6][cls];
  q.shift = qp / 6;
  q.scan = GVC_T(h264::kZigzag4x4Inverse)[i];
  return q;
}

// The Intra_4x4 blocks (decoding order) of each step, a pair where bx + 2 * by is the same
// (-1: none).
__constant__ int8_t kI4Steps[10][2] = {{0, -1}, {1, -1}, {4, 2}, {5, 3}, {6, 8},
                                       {7, 9}, {12, 10}, {13, 11}, {14, -1}, {15, -1}};

// The luma of an intra macroblock, by one warp (recon_mb.h's reconstruct_mb).
__device__ void intra_luma(const ReconPicture& f, const h264::MbMap& map, int mx, int my, const h264::MbPixels& px,
                           bool up, bool left, bool up_left, const LaneQuant& q, IntraShared& sh, int lane) {
  Macroblock& mb = f.mbs[my * f.mb_width + mx];
  const int qp = f.qp;
  if (mb.type == h264::MbType::I16x16) {  // code_luma16x16, a thread per block
    if (lane == 0)
      h264::load_edge(f.rec[0], f.rec_stride[0], 16 * mx, 16 * my, 16, up, left, up_left, false, sh.edge);
    __syncwarp();
    h264::predict_16x16(mb.i16_mode, sh.edge, sh.pred, lane, 32);
    __syncwarp();
    if (lane < 16) sh.dc[lane] = h264::luma_block_levels(px, sh.pred, qp, true, lane, mb);
    __syncwarp();
    if (lane == 0) {
      int ac_total = 0;
      for (int blk = 0; blk < 16; blk++) ac_total += mb.total_coeff_luma[blk];
      h264::luma_dc_levels(sh.dc, qp, mb, sh.dcy);
      sh.cbp_luma = ac_total ? 15 : 0;
    }
    __syncwarp();
    if (lane < 16) h264::luma_block_recon(px, sh.pred, qp, true, lane, sh.cbp_luma, sh.dcy[lane], mb);
    return;
  }
  // Intra_4x4 (code_luma4x4), a half-warp per block and a thread per sample: a block needs its
  // left, upper, upper-left and upper-right neighbours, so the blocks at (bx, by) with the same
  // bx + 2 * by go at once, two by two, in 10 steps instead of 16
  const int half = lane >> 4, i = lane & 15, x = i & 3, y = i >> 2;
  const unsigned mask = kHalfWarp << (16 * half);
  const int base = 16 * half;  // the half-warp's first lane
  for (int step = 0; step < 10; step++) {
    const int blk = kI4Steps[step][half];
    if (blk >= 0 && i == 0) {
      const int bx = GVC_T(h264::kBlkX)[blk], by = GVC_T(h264::kBlkY)[blk];
      const h264::I4Neighbours n = h264::i4_neighbours(map, mx, my, bx, by);
      h264::load_edge(f.rec[0], f.rec_stride[0], 16 * mx + 4 * bx, 16 * my + 4 * by, 4, n.top, n.left, n.top_left,
                      n.top_right, sh.edge4[half]);
    }
    __syncwarp();
    if (blk >= 0) {
      const int bx = GVC_T(h264::kBlkX)[blk], by = GVC_T(h264::kBlkY)[blk];
      const int p = h264::predict_4x4_at(mb.i4_mode[blk], sh.edge4[half], x, y);
      const int ox = 4 * bx + x, oy = 4 * by + y;
      const int res = int16_t(px.src[0][oy * px.src_stride[0] + ox] - p);
      const int16_t level = h264::quant_one(fdct4x4_lane(res, i, mask, base), q.mf, q.round, q.qbits);
      mb.luma[blk][q.scan] = level;
      const unsigned nz = __ballot_sync(mask, level != 0);
      if (i == 0) mb.total_coeff_luma[blk] = uint8_t(__popc(nz));
      const int d = (level * q.scale) << q.shift;
      px.rec[0][oy * px.rec_stride[0] + ox] = h264::clip1(p + idct4x4_lane(d, i, mask, base));
    }
    __syncwarp();  // the blocks' samples are the next step's edges
  }
  if (lane == 0) {
    int cbp = 0;
    for (int blk = 0; blk < 16; blk++)
      if (mb.total_coeff_luma[blk]) cbp |= 1 << (blk >> 2);
    sh.cbp_luma = cbp;
  }
}

// The chroma of an intra macroblock, by one warp (code_chroma, a thread per 4x4 block).
__device__ void intra_chroma(const ReconPicture& f, int mx, int my, const h264::MbPixels& px, bool up, bool left,
                             bool up_left, IntraShared& sh, int lane) {
  Macroblock& mb = f.mbs[my * f.mb_width + mx];
  if (lane < 2)
    h264::load_edge(f.rec[1 + lane], f.rec_stride[1 + lane], 8 * mx, 8 * my, 8, up, left, up_left, false,
                    sh.cedge[lane]);
  __syncwarp();
  for (int c = 0; c < 2; c++) h264::predict_chroma8x8(mb.chroma_mode, sh.cedge[c], sh.cpred[c], lane, 32);
  __syncwarp();
  const int c = lane >> 2, blk = lane & 3;
  if (lane < 8) sh.cdc[c][blk] = h264::chroma_block_levels(px, sh.cpred[c], f.qpc, true, c, blk, mb);
  __syncwarp();
  if (lane == 0) {
    int ac_nz = 0, dc_nz = 0;
    for (int i = 0; i < 8; i++) ac_nz += mb.total_coeff_chroma[i >> 2][i & 3];
    for (int k = 0; k < 2; k++) {
      dc_nz += h264::chroma_dc_levels(sh.cdc[k], f.qpc, true, k, mb);
      h264::dequant_dc_chroma(mb.chroma_dc[k], sh.cdc[k], f.qpc);  // now the blocks' scaled DCs
    }
    sh.cbp_chroma = ac_nz ? 2 : (dc_nz ? 1 : 0);
  }
  __syncwarp();
  if (lane < 8) h264::chroma_block_recon(px, sh.cpred[c], f.qpc, c, blk, sh.cbp_chroma, sh.cdc[c][blk], mb);
}

__global__ void __launch_bounds__(kIntraThreads) recon_intra_rows(KernelFrame k, unsigned* progress) {
  __shared__ __align__(16) unsigned char shared[sizeof(IntraShared)];  // (IntraEdge's initialisers: raw)
  IntraShared& sh = *reinterpret_cast<IntraShared*>(shared);
  const ReconPicture& f = k.f;
  const int y = blockIdx.x, w = f.mb_width, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const LaneQuant q = lane_quant(f.qp, lane & 15);
  for (int x = 0; x < w; x++) {
    Macroblock& mb = f.mbs[y * w + x];
    if (!h264::is_intra(mb.type)) continue;
    if (threadIdx.x == 0 && y > 0) {
      const unsigned need = unsigned(min(x + 2, w));
      while (load_acquire(&progress[y - 1]) < need) __nanosleep(32);
    }
    if (threadIdx.x == 0) {  // as reconstruct_mb
      if (mb.type != h264::MbType::I16x16)
        for (int i = 0; i < 16; i++) mb.luma_dc[i] = 0;
      mb.cbp = 0;
    }
    __syncthreads();
    const h264::MbMap map{f.mbs, w, f.mb_height, int(mb.slice_id)};
    const h264::MbPixels px = h264::mb_pixels(f, x, y);
    const bool up = map.at(x, y - 1) != nullptr, left = map.at(x - 1, y) != nullptr;
    const bool up_left = map.at(x - 1, y - 1) != nullptr;
    if (warp == 0)
      intra_luma(f, map, x, y, px, up, left, up_left, q, sh, lane);
    else
      intra_chroma(f, x, y, px, up, left, up_left, sh, lane);
    __syncthreads();
    if (threadIdx.x == 0) mb.cbp = uint8_t(sh.cbp_luma | (sh.cbp_chroma << 4));
    __syncthreads();
    if (warp == 0) {  // I_PCM when the coded macroblock would be longer (intra_mb_bits), as reconstruct_mb
      const int pcm_bits = h264::pcm_mb_bits(f.p_slice);
      int bound = lane < h264::kIntraMbBitParts ? h264::intra_mb_bits_bound_part(mb, f.p_slice, lane) : 0;
      for (int d = 16; d > 0; d >>= 1) bound += __shfl_xor_sync(0xffffffffu, bound, d);  // in every lane
      if (bound > pcm_bits) {
        int bits = lane < h264::kIntraMbBitParts ? h264::intra_mb_bits_part(map, x, y, f.p_slice, lane) : 0;
        for (int d = 16; d > 0; d >>= 1) bits += __shfl_down_sync(0xffffffffu, bits, d);
        if (lane == 0 && bits > pcm_bits) {
          mb.type = h264::MbType::IPcm;
          h264::code_pcm(px, mb);
        }
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      store_release(&progress[y], unsigned(x + 1));
    }
  }
  if (threadIdx.x == 0) store_release(&progress[y], unsigned(w));
}

// Returns once rows [first, end) of the intra wavefront are done, so that the copy queued
// behind it on another stream (H264ReconCore::download_rows) reads their macroblocks while
// later rows are still being reconstructed. Each row is waited for: a row whose last intra
// macroblocks come early is done before the row above it.
__global__ void wait_rows_done(const unsigned* progress, int first, int end, unsigned mb_width) {
  for (int row = first; row < end; row++)
    while (load_acquire(&progress[row]) < mb_width) __nanosleep(256);
}

// Each macroblock's macroblock_layer() bits (mb_layer_bits.h) into its kMbBitWords words, a
// thread each; its length into lens, or 0xffff where they do not fit or it is I_PCM, which
// also sets *refused.
__global__ void mb_layer_bits(const Macroblock* mbs, int mb_width, int mb_count, bool p_slice, int num_ref_idx_active,
                              uint32_t* words, uint16_t* lens, unsigned* refused) {
  constexpr int kWords = H264ReconCore::kMbBitWords;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= mb_count) return;
  const h264::MbMap map{mbs, mb_width, mb_count / mb_width, int(mbs[i].slice_id)};
  h264::MbBitString out(words + size_t(i) * kWords, kWords);
  const bool written = h264::put_mb_layer(out, map, i % mb_width, i / mb_width, p_slice, num_ref_idx_active);
  const int len = out.finish();
  const bool fits = written && !out.overflowed();
  lens[i] = fits ? uint16_t(len) : uint16_t(0xffff);
  if (!fits) atomicOr(refused, 1u);
}

// Copies each macroblock's decisions (kDecisionBytes, packed) into the device's macroblocks,
// a word per thread.
static_assert(h264::kDecisionBytes % 4 == 0 && sizeof(Macroblock) % 4 == 0, "macroblocks are copied in words");
__global__ void spread_decisions(const uint32_t* packed, Macroblock* mbs, int mb_count) {
  constexpr int kWords = int(h264::kDecisionBytes / 4);
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= mb_count * kWords) return;
  reinterpret_cast<uint32_t*>(&mbs[t / kWords])[t % kWords] = packed[t];
}

// Copies each staged download (at its offset in `staging`) to its destination, the bytes of
// all of them shared out over the kept threads at once (copy_host_parallel per copy would give
// the 0.5-2 MB planes one or two threads each: the wait for the last reference 0.33 -> 1.3 ms).
void copy_from_staging(const uint8_t* staging, const std::vector<StagedCopy>& copies) {
  size_t total = 0;
  for (const StagedCopy& c : copies) total += c.staged ? c.bytes : 0;
  if (!total) return;
  const int threads = int(std::min<size_t>(8, std::max<size_t>(1, total >> 20)));
  parallel_for(threads, [&](int t) {
    // bytes [lo, hi) of the concatenated copies
    const size_t lo = total * size_t(t) / size_t(threads), hi = total * size_t(t + 1) / size_t(threads);
    size_t at = 0;
    for (const StagedCopy& c : copies) {
      if (!c.staged) continue;
      const size_t a = std::max(lo, at), b = std::min(hi, at + c.bytes);
      if (a < b) std::memcpy(static_cast<uint8_t*>(c.dst) + (a - at), staging + c.offset + (a - at), b - a);
      at += c.bytes;
    }
  });
}

// Whether the host memory [p, p + bytes) is page-locked (cudaHostRegister, cudaMallocHost):
// then copies run straight to and from it, asynchronously.
bool page_locked(const void* p, size_t bytes) {
  auto locked = [](const void* q) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, q) != cudaSuccess) {
      cudaGetLastError();  // not sticky: clear it
      return false;
    }
    return a.type == cudaMemoryTypeHost;
  };
  return p && bytes && locked(p) && locked(static_cast<const uint8_t*>(p) + bytes - 1);
}

Status copy_plane_up(DeviceBuffer& dst, const std::vector<uint8_t>& src, cudaStream_t s) {
  GVC_TRY(dst.reserve(src.size()));
  GVC_CUDA_TRY(cudaMemcpyAsync(dst.get(), src.data(), src.size(), cudaMemcpyHostToDevice, s));
  return {};
}

}  // namespace

Status H264ReconCore::upload_ref(const h264::RefPicture& ref, uint64_t id, RefEntry& e, cudaStream_t s) {
  const h264::LumaRefView v = ref.luma.view();
  const size_t luma_bytes = size_t(v.w) * size_t(v.h);
  for (int p = 0; p < 4; p++) {
    GVC_TRY(e.luma[p].reserve(luma_bytes));
    GVC_CUDA_TRY(cudaMemcpyAsync(e.luma[p].get(), v.plane[p], luma_bytes, cudaMemcpyHostToDevice, s));
  }
  for (int c = 0; c < 2; c++) GVC_TRY(copy_plane_up(e.chroma[c], ref.pic.plane[1 + c], s));
  const PlaneView sv = ref.search_view();
  const size_t search_bytes = size_t(sv.stride) * size_t(sv.height);
  GVC_TRY(e.search.reserve(search_bytes));
  GVC_CUDA_TRY(cudaMemcpyAsync(e.search.get(), sv.data, search_bytes, cudaMemcpyHostToDevice, s));
  e.id = id;
  return {};
}

Status H264ReconCore::analysis_waits_for(cudaStream_t on, Event& ev) {
  if (!analysis_ || analysis_ == on) return {};
  GVC_TRY(ev.record(on));
  return ev.wait_on(analysis_);
}

H264ReconCore::RefEntry* H264ReconCore::entry_for(uint64_t id, const h264::ReconJob& job, bool* held) {
  if (RefEntry* e = held_entry(id)) {
    *held = true;
    return e;
  }
  *held = false;
  RefEntry* e = nullptr;
  for (RefEntry& c : refs_) {
    const bool in_use = std::find(job.ref_ids, job.ref_ids + job.num_refs, c.id) != job.ref_ids + job.num_refs;
    if (!in_use && c.id != id && (!e || c.last_use < e->last_use)) e = &c;
  }
  return e;
}

Status H264ReconCore::keep_reconstruction(const h264::ReconJob& job, RefEntry& entry, cudaStream_t s) {
  RefEntry* e = &entry;
  const h264::Picture& rec = *job.rec;
  job.rec_luma->alloc(rec.width(0), rec.height(0));
  const h264::LumaRefView v = job.rec_luma->view();
  const size_t luma_bytes = size_t(v.w) * size_t(v.h);
  HalfPelPlanes out;
  for (int p = 0; p < 4; p++) {
    GVC_TRY(e->luma[p].reserve(luma_bytes));
    out.plane[p] = e->luma[p].get<uint8_t>();
  }
  out.pitch = v.w;
  out.pad = h264::LumaRefView::kPad;
  out.pw = v.w;
  out.ph = v.h;
  GVC_TRY(build_half_pel_planes(rec_[0].get<uint8_t>(), rec.stride[0], rec.width(0), rec.height(0), out, s));
  for (int c = 0; c < 2; c++) {
    GVC_TRY(e->chroma[c].reserve(rec.plane[1 + c].size()));
    GVC_CUDA_TRY(cudaMemcpyAsync(e->chroma[c].get(), rec_[1 + c].get(), rec.plane[1 + c].size(),
                                 cudaMemcpyDeviceToDevice, s));
  }
  e->id = job.rec_id;
  e->last_use = ++uses_;
  return {};
}

H264ReconCore::RefEntry* H264ReconCore::held_entry(uint64_t id) {
  for (RefEntry& c : refs_)
    if (c.id == id && id != 0) return &c;
  return nullptr;
}

Status H264ReconCore::upload_source(const h264::Picture& src, cudaStream_t s, PlaneView out[3]) {
  // Through pinned memory (src_staging_), or straight from page-locked planes (the caller
  // rewrites them only after the next decision, which waits for s). On the source's own
  // stream, not behind the loop filter on s, but behind the last run()'s kernels that read the
  // source (src_read_): s and the motion search's stream wait for the copies. A device
  // frame's download still pending (its frame never decided) is dropped: `src` is this one.
  cudaStream_t own = nullptr;
  GVC_TRY(source_stream(&own));
  size_t total = 0;
  for (int p = 0; p < 3; p++) total += src.plane[p].size();
  GVC_TRY(src_staging_.reserve(total));
  size_t offset = 0;
  for (int p = 0; p < 3; p++) {
    GVC_TRY(src_[p].reserve(src.plane[p].size()));
    if (page_locked(src.plane[p].data(), src.plane[p].size()))
      GVC_CUDA_TRY(cudaMemcpyAsync(src_[p].get(), src.plane[p].data(), src.plane[p].size(), cudaMemcpyHostToDevice, own));
    else
      GVC_TRY(upload_staged(src_staging_, offset, src_[p].get(), src.plane[p].data(), src.plane[p].size(), own));
    offset += src.plane[p].size();
    out[p] = {src_[p].get<uint8_t>(), src.stride[p], src.width(p), src.height(p), MemoryLocation::Device};
  }
  GVC_TRY(source_loaded(own, s));
  return {};
}

// Plane p of the source from a device frame: the picture's w x h samples (every `step`-th
// byte of a row: 2 for a chroma plane of NV12), the last column and row repeated out to the
// padded plane's out_w x out_h, as Encoder::load_source does on the host. A row per block row.
__global__ void load_source_plane(const uint8_t* in, int in_stride, int step, int w, int h, uint8_t* out,
                                  int out_stride, int out_w) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= out_w) return;
  out[size_t(y) * size_t(out_stride) + size_t(x)] = in[size_t(min(y, h - 1)) * size_t(in_stride) + size_t(min(x, w - 1) * step)];
}

Status H264ReconCore::load_device_source(const h264::FrameIn& in, int width, int height, h264::Picture& src,
                                         cudaStream_t s, PlaneView out[3]) {
  // On a stream of its own, so that neither the copy nor its download queue behind the last
  // frame's loop filter on `s` (which does not read the source), only behind the last run()'s
  // kernels that do (src_read_); `s` then waits for the copy, and the decision for the
  // download (complete_source()), which meanwhile runs beside the analysis. One still
  // pending (its frame never decided) is dropped.
  cudaStream_t own = nullptr;
  GVC_TRY(source_stream(&own));
  size_t total = 0;
  for (int p = 0; p < 3; p++) total += src.plane[p].size();
  GVC_TRY(src_staging_.reserve(total));
  std::vector<StagedCopy> copies;
  size_t offset = 0;
  for (int p = 0; p < 3; p++) {
    const int w = p ? width / 2 : width, h = p ? height / 2 : height;
    const uint8_t* plane = in.nv12 && p ? in.plane[1] + (p - 1) : in.plane[p];
    const int stride = in.nv12 && p ? in.stride[1] : in.stride[p];
    if (!plane) return Status::error("device frame without plane " + std::to_string(p));
    GVC_TRY(src_[p].reserve(src.plane[p].size()));
    const dim3 grid(unsigned((src.width(p) + 127) / 128), unsigned(src.height(p)));
    load_source_plane<<<grid, 128, 0, own>>>(plane, stride, in.nv12 && p ? 2 : 1, w, h, src_[p].get<uint8_t>(),
                                          src.stride[p], src.width(p));
    GVC_CUDA_TRY(cudaGetLastError());
    out[p] = {src_[p].get<uint8_t>(), src.stride[p], src.width(p), src.height(p), MemoryLocation::Device};
  }
  GVC_TRY(source_loaded(own, s));
  // The caller's frame is read by now: it may go once this returns. (Read later, after the
  // element had unmapped it, a CUDA-memory buffer without a video meta coded other pictures
  // in H264EncGpu.CudaMemoryReadAtItsOwnPitchWithOrWithoutVideoMeta once the encoder got to the
  // next frame sooner; what changed the memory was not traced.)
  GVC_TRY(src_loaded_.synchronize("source copy"));
  // The host copy the decision reads: straight into page-locked planes, else through staging.
  for (int p = 0; p < 3; p++) {
    if (page_locked(src.plane[p].data(), src.plane[p].size())) {
      GVC_CUDA_TRY(cudaMemcpyAsync(src.plane[p].data(), src_[p].get(), src.plane[p].size(), cudaMemcpyDeviceToHost, own));
      continue;
    }
    GVC_CUDA_TRY(cudaMemcpyAsync(src_staging_.get<uint8_t>() + offset, src_[p].get(), src.plane[p].size(),
                                 cudaMemcpyDeviceToHost, own));
    copies.push_back({src.plane[p].data(), src_[p].get(), src.plane[p].size(), offset});
    offset += src.plane[p].size();
  }
  GVC_TRY(src_ready_.record(own));
  src_pending_ = std::move(copies);
  src_down_ = true;
  return end_after_downloads(own);
}

Status H264ReconCore::source_stream(cudaStream_t* own) {
  GVC_TRY(complete_source(false));
  GVC_TRY(src_stream_.create());
  *own = src_stream_.get();
  GVC_TRY(src_read_.wait_on(*own));
  // an intra search that a failure left unjoined to s (start_intra_search() without its
  // prepare_decision()) may still read src_
  return intra_.get() ? intra_done_.wait_on(*own) : Status();
}

Status H264ReconCore::source_loaded(cudaStream_t own, cudaStream_t s) {
  GVC_TRY(src_loaded_.record(own));
  GVC_TRY(src_loaded_.wait_on(s));
  if (analysis_ && analysis_ != s) GVC_TRY(src_loaded_.wait_on(analysis_));
  return {};
}

Status H264ReconCore::complete_source(bool copy) {
  if (!src_down_) return {};
  src_down_ = false;
  const std::vector<StagedCopy> copies = std::move(src_pending_);
  src_pending_.clear();
  GVC_TRY(src_ready_.synchronize("source download"));
  if (copy) copy_from_staging(src_staging_.get<uint8_t>(), copies);
  return {};
}

// Writes v into the word at `word`, page-locked host memory (the same address on the device
// under unified addressing): what a host thread that may not call CUDA (it holds no context)
// polls (H264ReconCore::rest_prepared()). The kernel starts once the copies before it on its
// stream have completed, so the word is written after their data.
__global__ void signal_host(volatile unsigned* word, unsigned v) { *word = v; }

// Does nothing: queued after a stream's downloads, so that its next work does not start behind
// another stream's download (end_after_downloads()).
__global__ void after_downloads() {}

__global__ void me_predictors_kernel(const Macroblock* mbs, int mb_width, int mb_count, MvCost* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < mb_count) out[i] = h264::me_predictor(mbs, mb_width, i % mb_width, i / mb_width);
}

// A stream whose last command was a device-to-host copy began its next work (a wait for another
// stream's event, then the motion search's kernels) only once the copy engine had finished
// whatever was queued there meanwhile: the next frame's motion search waited 0.25 ms behind the
// last frame's 11 MB download of the macroblocks, on another stream (H200; an empty kernel there
// moved it from 0.55 to 0.29 ms after run()'s start).
Status H264ReconCore::end_after_downloads(cudaStream_t on) {
  after_downloads<<<1, 32, 0, on>>>();
  return check(cudaGetLastError(), "after_downloads");
}

Status H264ReconCore::decision_staging(int mb_count, uint8_t** out) {
  packed_mbs_ = nullptr;
  GVC_TRY(decisions_host_.reserve(size_t(mb_count) * h264::kDecisionBytes));
  *out = decisions_host_.get<uint8_t>();
  return {};
}

const MvCost* H264ReconCore::me_predictors(int mb_width, int mb_height, cudaStream_t s) {
  const int mb_count = mb_width * mb_height;
  const size_t bytes = size_t(mb_count) * sizeof(Macroblock);
  if (mb_count <= 0 || mbs_.size() < bytes || !me_pred_.reserve(size_t(mb_count) * sizeof(MvCost)).ok())
    return nullptr;
  // Behind the last run()'s kernels (search_ready_) and before the next preparation, which
  // writes mbs_ and makes s wait for this stream first.
  const cudaStream_t on = analysis_ ? analysis_ : s;
  me_predictors_kernel<<<(mb_count + 127) / 128, 128, 0, on>>>(mbs_.get<Macroblock>(), mb_width, mb_count,
                                                                me_pred_.get<MvCost>());
  if (cudaGetLastError() != cudaSuccess) return nullptr;
  return me_pred_.get<MvCost>();
}

Status H264ReconCore::wait_idle(cudaStream_t s) {
  Status st = wait_rows(rows_height_);
  if (!st.ok()) drop_rows();
  Status src = complete_source();
  Status fin = finish();  // the last run()'s copies (on aux_)
  Status own = src_stream_.get() ? src_stream_.synchronize("source copy") : Status();
  Status search = analysis_ ? check(cudaStreamSynchronize(analysis_), "cudaStreamSynchronize") : Status();
  Status intra = intra_.get() ? intra_.synchronize("intra search") : Status();
  // copies queued before a failure left them untracked (finish() and drop_rows() skip them)
  Status down = aux_.get() ? aux_.synchronize("reconstruction downloads") : Status();
  Status rows = rows_.get() ? rows_.synchronize("reconstruction levels") : Status();
  Status all = check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  for (const Status* x : {&st, &src, &fin, &own, &search, &intra, &down, &rows})
    if (!x->ok()) return *x;
  return all;
}

bool H264ReconCore::reference_luma(uint64_t id, int width, int height, PlaneView* out) {
  const RefEntry* e = held_entry(id);
  if (!e || e->search.size() < size_t(width) * size_t(height)) return false;
  *out = {e->search.get<uint8_t>(), width, width, height, MemoryLocation::Device};
  return true;
}

MbPartitions* H264ReconCore::motion_results(int r, int mb_count) {
  if (r < 0 || r >= 4 || mb_count <= 0) return nullptr;
  if (!me_[r].reserve(size_t(mb_count) * sizeof(MbPartitions)).ok()) return nullptr;
  return me_[r].get<MbPartitions>();
}

// The analysis of `job` as the kernels read it: its source in src_ (copied there on s where it is
// not on the device yet).
Status H264ReconCore::device_analysis(const h264::DecideJob& job, cudaStream_t s, h264::MbAnalysis* out) {
  if (job.num_refs < 0 || job.num_refs > 4) return Status::error("at most 4 reference pictures");
  h264::MbAnalysis& a = *out;
  a = job.analysis;
  for (int p = 0; p < 3; p++) {
    if (!job.src_on_device) GVC_TRY(copy_plane_up(src_[p], job.src->plane[p], s));
    a.src.plane[p] = src_[p].get<uint8_t>();
    a.src.stride[p] = job.src->stride[p];
    a.src.width[p] = job.src->width(p);
    a.src.height[p] = job.src->height(p);
  }
  a.num_refs = job.num_refs;  // the intra search reads only whether it is a P slice
  a.map = h264::MbMap{nullptr, job.mb_width, job.mb_height, 0};
  return {};
}

// What the wavefront reads goes down on a stream of its own (prep_down_), each part as soon as
// it is made: on the stream that made it, a download held that stream's next kernel (the SATD
// caches' slots behind the intra search's results, and those behind the last frame's half-pel
// planes in the copy engine); on aux_ it waited behind those.
Status H264ReconCore::download_prep(void* dst, const void* src, size_t bytes, cudaStream_t made_on, size_t rows,
                                    size_t pitch) {
  GVC_TRY(prep_down_.create());
  GVC_TRY(prep_made_.record(made_on));
  GVC_TRY(prep_made_.wait_on(prep_down_.get()));
  if (rows > 1)
    return check(cudaMemcpy2DAsync(dst, pitch, src, pitch, bytes, rows, cudaMemcpyDeviceToHost, prep_down_.get()),
                 "cudaMemcpy2DAsync");
  return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, prep_down_.get()), "cudaMemcpyAsync");
}

Status H264ReconCore::queue_intra(const h264::DecideJob& job, const h264::MbAnalysis& a, cudaStream_t ip) {
  const int mb_count = job.mb_width * job.mb_height;
  GVC_TRY(slice_of_mb_.reserve(size_t(mb_count) * sizeof(uint16_t)));
  GVC_CUDA_TRY(cudaMemcpyAsync(slice_of_mb_.get(), job.slice_of_mb, size_t(mb_count) * sizeof(uint16_t),
                               cudaMemcpyHostToDevice, ip));
  const IntraMbCandidates* cand = nullptr;
  if (job.intra_cand) {
    const size_t bytes = size_t(mb_count) * sizeof(IntraMbCandidates);
    GVC_TRY(intra_cand_.reserve(bytes));
    GVC_CUDA_TRY(cudaMemcpyAsync(intra_cand_.get(), job.intra_cand, bytes, cudaMemcpyHostToDevice, ip));
    cand = intra_cand_.get<IntraMbCandidates>();
  }
  const size_t prep_bytes = size_t(mb_count) * sizeof(h264::MbIntraPrep);
  GVC_TRY(intra_prep_.reserve(prep_bytes));
  GVC_TRY(intra_prep_host_.reserve(prep_bytes));
  GVC_TRY(stand_ins_.reserve(size_t(mb_count) * sizeof(Macroblock)));
  GVC_TRY(launch_intra_prep(a, slice_of_mb_.get<uint16_t>(), stand_ins_.get<Macroblock>(), cand,
                            intra_prep_.get<h264::MbIntraPrep>(), ip));
  return download_prep(intra_prep_host_.get(), intra_prep_.get(), prep_bytes, ip);
}

Status H264ReconCore::start_intra_search(const h264::DecideJob& job) {
  intra_queued_ = false;
  if (!analysis_ || !job.src_on_device) return {};  // prepare_decision() searches, on s
  h264::MbAnalysis a;
  GVC_TRY(device_analysis(job, nullptr, &a));  // (no copy: the source is on the device)
  GVC_TRY(intra_.create());
  GVC_TRY(src_loaded_.wait_on(intra_.get()));  // the source's copy (source_loaded())
  GVC_TRY(queue_intra(job, a, intra_.get()));
  GVC_TRY(intra_done_.record(intra_.get()));
  intra_queued_ = true;
  return {};
}

Status H264ReconCore::prepare_decision(const h264::DecideJob& job, cudaStream_t s, const h264::MbIntraPrep** intra,
                                       const h264::MbSatdRef** satd, const h264::Preselection** presel,
                                       MbPartitionField me_host[4], int* satd_rows) {
  *intra = nullptr;
  *satd = nullptr;
  *presel = nullptr;
  const bool intra_queued = intra_queued_;  // by start_intra_search(), for this job
  intra_queued_ = false;
  GVC_TRY(wait_rows(rows_height_));  // the last run()'s rows read mbs_, which run() writes next
  const int mb_count = job.mb_width * job.mb_height;
  h264::MbAnalysis a;
  GVC_TRY(device_analysis(job, s, &a));
  GVC_TRY(prep_down_.create());
  const cudaStream_t dn = prep_down_.get();
  // The motion search's results left on the device first, behind the search (and the intra
  // search's download, queued before where start_intra_search() queued it).
  // Only the partitions the decision reads come down, a copy by rows (fast: 5 of the 41, 40 of
  // each record's 328 bytes; all 41: the rows are contiguous): the others of the host view are
  // stale.
  const size_t me_bytes = size_t(mb_count) * sizeof(MbPartitions);
  const int me_read = h264::me_partitions_read(job.analysis.flags);
  if (job.me && job.num_refs) GVC_TRY(me_staging_.reserve(me_bytes * size_t(job.num_refs)));
  for (int r = 0; job.me && r < job.num_refs; r++) {
    me_host[r] = job.me[r];
    if (job.me[r].loc != MemoryLocation::Device) continue;
    uint8_t* const staged = me_staging_.get<uint8_t>() + me_bytes * size_t(r);
    GVC_TRY(download_prep(staged, job.me[r].data, size_t(me_read) * sizeof(MvCost), analysis_ ? analysis_ : s,
                          size_t(mb_count), sizeof(MbPartitions)));
    me_host[r] = {reinterpret_cast<MbPartitions*>(staged), job.me[r].mb_cols, job.me[r].mb_rows,
                  MemoryLocation::Host};
  }
  // The intra search reads no reference: queued by start_intra_search() where the source is
  // on the device already, on a stream of its own as soon as the source is there, beside the
  // last frame's reconstruction, its loop filter (the search's stand-ins are in a buffer of
  // their own) and the motion search; s then waits for it. (Queued here on the motion
  // search's stream, it began only once that search was done, and the SATD caches' slots
  // behind it: 0.15 ms later on an H200 at 1080p; on a stream of its own from here, it shared
  // the device with that search and the loop filter and ended later still.) It is over long
  // before the motion search (0.49 against 0.70 ms after the last run()'s start, H200, 1080p).
  // Not queued there (a caller that did not call it: tests, benches), it runs on the motion
  // search's stream where the source is on the device, which s then waits for, else on s;
  // either way behind any search that start_intra_search() queued and no prepare_decision()
  // took (after a failure), which writes the same buffers.
  if (intra_queued) {
    GVC_TRY(intra_done_.wait_on(s));
  } else {
    const cudaStream_t ip = analysis_ && job.src_on_device ? analysis_ : s;
    if (intra_.get()) GVC_TRY(intra_done_.wait_on(ip));
    GVC_TRY(queue_intra(job, a, ip));
  }
  // The SATD caches' slots read only the motion search's results: where these are on the
  // device, on the search's stream (which wrote them), beside the loop filter too.
  bool me_on_device = job.me && job.num_refs > 0;
  for (int r = 0; me_on_device && r < job.num_refs; r++) me_on_device = job.me[r].loc == MemoryLocation::Device;
  // With the slots, each macroblock's pre-selection, which the wavefront then need not make.
  const bool want_presel = job.num_refs > 0 && job.analysis.flags.preselect;
  const size_t presel_bytes = size_t(mb_count) * sizeof(h264::Preselection);
  const auto slots = [&](const h264::MbAnalysis& sa, cudaStream_t on) -> Status {
    GVC_TRY(satd_slots_.reserve(size_t(mb_count) * sizeof(h264::SatdSlots)));
    if (want_presel) {
      GVC_TRY(presel_.reserve(presel_bytes));
      GVC_TRY(presel_host_.reserve(presel_bytes));
    }
    GVC_TRY(launch_satd_slots(sa, satd_slots_.get<h264::SatdSlots>(),
                              want_presel ? presel_.get<h264::Preselection>() : nullptr, on));
    if (want_presel) GVC_TRY(download_prep(presel_host_.get(), presel_.get(), presel_bytes, on));
    return {};
  };
  bool presel_made = false;
  if (me_on_device) {
    h264::MbAnalysis sa = a;
    for (int r = 0; r < job.num_refs; r++) sa.me[r] = job.me[r].data;
    GVC_TRY(slots(sa, analysis_ ? analysis_ : s));
    presel_made = want_presel;
  }
  if (analysis_ && analysis_ != s) {  // the motion search's results, its reads of src_, the slots
    GVC_TRY(analysis_done_.record(analysis_));
    GVC_TRY(analysis_done_.wait_on(s));
  }

  // The SATD caches, from the references the device holds (all of them, normally: each
  // reconstruction is kept) and the ME core's results.
  bool refs_held = job.num_refs > 0 && job.ref_ids && job.me;
  for (int r = 0; refs_held && r < job.num_refs; r++) {
    const RefEntry* e = held_entry(job.ref_ids[r]);
    if (!e) {
      refs_held = false;
      break;
    }
    const h264::LumaRefView hv = job.refs[r]->luma.view();
    for (int p = 0; p < 4; p++) a.refs[r].plane[p] = e->luma[p].get<uint8_t>();
    a.refs[r].w = hv.w;
    a.refs[r].h = hv.h;
    if (job.me[r].loc == MemoryLocation::Device) {
      a.me[r] = job.me[r].data;
      continue;
    }
    GVC_TRY(me_[r].reserve(me_bytes));
    GVC_TRY(upload_staged(me_staging_, me_bytes * size_t(r), me_[r].get(), job.me[r].data, me_bytes, s));
    a.me[r] = me_[r].get<MbPartitions>();
  }
  const size_t satd_bytes = size_t(mb_count) * size_t(job.num_refs) * sizeof(h264::MbSatdRef);
  // The SATD caches by bands of rows, each down as soon as it is made: where the caller takes
  // the rows past *satd_rows later, its wavefront starts on the first band's rows while the
  // second is made and comes down (the wavefront reaches row mb_height / 2 some 0.2 ms after
  // its start at 1080p, the second band is there 0.1 ms after the first).
  const size_t row_bytes = size_t(job.mb_width) * size_t(job.num_refs) * sizeof(h264::MbSatdRef);
  const int split = refs_held && satd_rows && job.mb_height >= kSatdSplitRows ? job.mb_height / 2 : job.mb_height;
  const auto satd_band = [&](int y0, int y1) -> Status {
    GVC_TRY(launch_satd_cache(a, satd_slots_.get<h264::SatdSlots>(), satd_.get<h264::MbSatdRef>(), s, y0, y1));
    return check(cudaMemcpyAsync(satd_host_.get<uint8_t>() + size_t(y0) * row_bytes,
                                 satd_.get<uint8_t>() + size_t(y0) * row_bytes, size_t(y1 - y0) * row_bytes,
                                 cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync");
  };
  // On every way out from here, satd_rest_ follows what this call queued on s: wait_prepared()
  // and the destructor wait for it before satd_host_ may be written again or freed.
  struct RestMark {
    Event& e;
    cudaStream_t s;
    bool recorded = false;
    ~RestMark() {
      if (!recorded) (void)e.record(s);
    }
  } rest_mark{satd_rest_, s};
  if (refs_held) {
    GVC_TRY(satd_.reserve(satd_bytes));
    GVC_TRY(satd_host_.reserve(satd_bytes));
    if (!me_on_device) {
      GVC_TRY(slots(a, s));
      presel_made = want_presel;
    }
    GVC_TRY(satd_band(0, split));
  }
  GVC_TRY(prep_on_host_.record(dn));  // after the last download queued there (the pre-selections)
  GVC_TRY(synced_.record(s));
  if (refs_held && split < job.mb_height) {
    GVC_TRY(satd_band(split, job.mb_height));
    if (!rest_word_.get()) {
      GVC_TRY(rest_word_.reserve(sizeof(unsigned)));
      *rest_word_.get<volatile unsigned>() = rest_seq_;
    }
    signal_host<<<1, 1, 0, s>>>(rest_word_.get<volatile unsigned>(), ++rest_seq_);
    GVC_CUDA_TRY(cudaGetLastError());
  }
  GVC_TRY(satd_rest_.record(s));
  rest_mark.recorded = true;
  GVC_TRY(queue_later(&satd_rest_));
  // the wavefront reads the last reconstruction's full-sample luma on the host: its copy out
  // of staging (where it is not page-locked) while the kernels above run
  GVC_TRY(finish_planes());
  GVC_TRY(complete_source());  // the wavefront reads the source on the host
  GVC_TRY(synced_.synchronize("decision preparation"));
  GVC_TRY(prep_on_host_.synchronize("decision preparation's downloads"));
  if (satd_rows)
    *satd_rows = split;
  else
    GVC_TRY(wait_prepared());
  *intra = intra_prep_host_.get<h264::MbIntraPrep>();
  if (refs_held) *satd = satd_host_.get<h264::MbSatdRef>();
  if (presel_made) *presel = presel_host_.get<h264::Preselection>();
  return {};
}

bool H264ReconCore::rest_prepared(int timeout_ms) const {
  const volatile unsigned* word = rest_word_.get<volatile unsigned>();
  if (!word) return true;  // never banded
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (int spins = 0; *word != rest_seq_; spins++) {
    if (spins < 1024) {
      cpu_relax();
      continue;
    }
    std::this_thread::yield();
    if ((spins & 255) == 0 && std::chrono::steady_clock::now() > until) return false;
  }
  std::atomic_thread_fence(std::memory_order_acquire);  // the copies before the word
  return true;
}

H264ReconCore::~H264ReconCore() {
  // Downloads still under way write into staging_ and levels_staging_, which are freed next.
  if (!pending_.empty()) cudaEventSynchronize(marks_[7]);
  if (later_queued_) (void)later_done_.synchronize("reconstruction downloads");
  drop_rows();
  if (src_down_) (void)src_ready_.synchronize("source download");  // into src_staging_ (or the caller's planes)
  if (analysis_) cudaStreamSynchronize(analysis_);  // a motion search queued on it writes me_
  if (intra_.get()) (void)intra_.synchronize("intra search");  // writes stand_ins_ and intra_prep_
  // copies a failure left untracked, into staging or the caller's page-locked memory
  if (aux_.get()) (void)aux_.synchronize("reconstruction downloads");
  if (prep_down_.get()) (void)prep_down_.synchronize("decision preparation's downloads");
  (void)satd_rest_.synchronize("decision preparation (SATD caches)");  // into satd_host_
  if (rows_.get()) (void)rows_.synchronize("reconstruction levels");
  for (cudaEvent_t& e : marks_)
    if (e) cudaEventDestroy(e);
}

Status H264ReconCore::run(const h264::ReconJob& job, cudaStream_t s) {
  if (job.num_refs < 0 || job.num_refs > 4) return Status::error("at most 4 reference pictures");
  GVC_TRY(finish());  // (the last run()'s rows too)
  for (cudaEvent_t& e : marks_)
    if (!e) GVC_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventBlockingSync));
  GVC_CUDA_TRY(cudaEventRecord(marks_[0], s));
  const int mb_count = job.mb_width * job.mb_height;
  KernelFrame k{};
  ReconPicture& f = k.f;

  // References: the device copies by id, uploading the ones not held (least recently used
  // entries that are not references of this frame make room).
  for (int r = 0; r < job.num_refs; r++) {
    const uint64_t id = job.ref_ids[r];
    bool held = false;
    RefEntry* e = entry_for(id, job, &held);
    if (!e) return Status::error("no room for a reference picture on the device");
    if (!held) GVC_TRY(upload_ref(*job.refs[r], id, *e, s));
    e->last_use = ++uses_;
    const h264::Picture& pic = job.refs[r]->pic;
    const h264::LumaRefView hv = job.refs[r]->luma.view();
    ReconRef& d = k.refs[r];
    for (int p = 0; p < 4; p++) d.luma.plane[p] = e->luma[p].get<uint8_t>();
    d.luma.w = hv.w;
    d.luma.h = hv.h;
    d.chroma[0] = e->chroma[0].get<uint8_t>();
    d.chroma[1] = e->chroma[1].get<uint8_t>();
    d.chroma_stride = pic.stride[1];
    d.chroma_width = pic.width(1);
    d.chroma_height = pic.height(1);
  }

  for (int p = 0; p < 3; p++) {
    if (!job.src_on_device) GVC_TRY(copy_plane_up(src_[p], job.src->plane[p], s));
    GVC_TRY(rec_[p].reserve(job.rec->plane[p].size()));
    f.src[p] = src_[p].get<uint8_t>();
    f.src_stride[p] = job.src->stride[p];
    f.rec[p] = rec_[p].get<uint8_t>();
    f.rec_stride[p] = job.rec->stride[p];
  }
  // Only the decisions go up (160 of the 1,384 bytes of a macroblock), packed in pinned
  // memory and spread on the device; everything after them is written by the kernels.
  const size_t mb_bytes = size_t(mb_count) * sizeof(Macroblock);
  const size_t held = mbs_.size();
  GVC_TRY(mbs_.reserve(mb_bytes));
  if (mbs_.size() != held) GVC_CUDA_TRY(cudaMemsetAsync(mbs_.get(), 0, mbs_.size(), s));
  const size_t decision_bytes = size_t(mb_count) * h264::kDecisionBytes;
  GVC_TRY(decisions_host_.reserve(decision_bytes));
  GVC_TRY(decisions_.reserve(decision_bytes));
  // Packed on several threads, which count the intra macroblocks on the way, unless the
  // decision packed and counted them as it made them (decision_staging(), decisions_packed()).
  int intra_count = 0;
  if (packed_mbs_ == job.mbs && packed_count_ == mb_count && packed_intra_ >= 0) {
    intra_count = packed_intra_;
  } else {
    int intra_counts[8] = {};
    parallel_for(8, [&](int t) {
      int n = 0;
      for (int i = mb_count * t / 8; i < mb_count * (t + 1) / 8; i++) {
        std::memcpy(decisions_host_.get<uint8_t>() + size_t(i) * h264::kDecisionBytes, &job.mbs[i],
                    h264::kDecisionBytes);
        n += h264::is_intra(job.mbs[i].type);
      }
      intra_counts[t] = n;
    });
    for (int n : intra_counts) intra_count += n;
  }
  packed_mbs_ = nullptr;
  GVC_CUDA_TRY(cudaMemcpyAsync(decisions_.get(), decisions_host_.get(), decision_bytes, cudaMemcpyHostToDevice, s));
  const int words = mb_count * int(h264::kDecisionBytes / 4);
  spread_decisions<<<(words + 255) / 256, 256, 0, s>>>(decisions_.get<uint32_t>(), mbs_.get<Macroblock>(), mb_count);
  GVC_CUDA_TRY(cudaGetLastError());
  GVC_CUDA_TRY(cudaEventRecord(marks_[1], s));
  f.mbs = mbs_.get<Macroblock>();
  f.mb_width = job.mb_width;
  f.mb_height = job.mb_height;
  f.refs = nullptr;
  f.num_refs = job.num_refs;
  f.qp = job.qp;
  f.qpc = job.qpc;
  f.p_slice = job.p_slice;

  const bool any_intra = intra_count > 0;
  GVC_TRY(progress_.reserve(size_t(job.mb_height) * sizeof(unsigned)));
  unsigned* intra_progress = progress_.get<unsigned>();
  GVC_CUDA_TRY(cudaMemsetAsync(intra_progress, 0, size_t(job.mb_height) * sizeof(unsigned), s));
  // By rows where the wavefront is long: a P frame's few intra macroblocks take it through
  // the picture quickly, and then one copy is quicker than the bands'.
  const bool by_rows = job.mbs_by_rows && 4 * intra_count >= mb_count;
  const bool later = by_rows || job.mbs_later;
  if (by_rows) GVC_TRY(rows_start_.record(s));  // before the kernels: download_rows' waits start here
  if (job.num_refs > 0) {
    recon_inter<<<(mb_count + kInterWarps - 1) / kInterWarps, 32 * kInterWarps, 0, s>>>(k);
    GVC_CUDA_TRY(cudaGetLastError());
  }
  GVC_CUDA_TRY(cudaEventRecord(marks_[2], s));
  if (any_intra) {
    recon_intra_rows<<<job.mb_height, kIntraThreads, 0, s>>>(k, intra_progress);
    GVC_CUDA_TRY(cudaGetLastError());
  }
  GVC_CUDA_TRY(cudaEventRecord(marks_[3], s));
  GVC_TRY(src_read_.record(s));  // the last kernels that read src_ (run() may return before them)
  // The macroblocks' levels, which entropy coding needs, go down on a stream of their own
  // (rows_), beside the loop filter, which the next frame's preparation waits for (straight
  // into job.mbs when it is page-locked, else through pinned staging: pageable destinations
  // make copies synchronous and slow); run() returns once they are there (by rows, or
  // job.mbs_later: at once), and the loop filter, the reference planes and their downloads go
  // on meanwhile.
  const bool direct = page_locked(job.mbs, mb_bytes);
  if (!direct) GVC_TRY(levels_staging_.reserve(mb_bytes));
  // A failure from here on drops the bands queued (the wavefront is launched: they end), so
  // that nothing is copied later into job.mbs, which the caller may have let go.
  struct DropRows {
    H264ReconCore* core;
    bool armed;
    ~DropRows() {
      if (armed) core->drop_rows();
    }
  } drop{this, true};
  GVC_TRY(download_rows(job, by_rows ? intra_progress : nullptr, direct, job.mb_bits && !by_rows && job.mbs_later));
  GVC_CUDA_TRY(cudaEventRecord(marks_[4], s));
  // The entry the reconstruction is kept in (that of rec_id, or the least recently used one
  // that is no reference of the job), and there its luma before the loop filter, which the
  // next frame's motion search reads beside the loop filter (analysis_).
  RefEntry* kept = nullptr;
  if (job.rec_luma) {
    bool held = false;
    kept = entry_for(job.rec_id, job, &held);
    if (!kept) return Status::error("no room for the reconstruction on the device");
    kept->id = 0;  // until it is complete
    const size_t search_bytes = job.rec->plane[0].size();
    GVC_TRY(kept->search.reserve(search_bytes));
    GVC_CUDA_TRY(cudaMemcpyAsync(kept->search.get(), rec_[0].get(), search_bytes, cudaMemcpyDeviceToDevice, s));
  }
  GVC_TRY(analysis_waits_for(s, search_ready_));  // (me_predictors() reads mbs_ too)
  if (job.deblock) {
    h264::DeblockPlanes dp;
    for (int p = 0; p < 3; p++) {
      dp.plane[p] = f.rec[p];
      dp.stride[p] = f.rec_stride[p];
    }
    GVC_TRY(deblock_.run(dp, f.mbs, job.mb_width, job.mb_height, job.deblock_params, s));
  }
  GVC_CUDA_TRY(cudaEventRecord(marks_[5], s));
  if (kept) GVC_TRY(keep_reconstruction(job, *kept, s));
  GVC_CUDA_TRY(cudaEventRecord(marks_[6], s));
  // The full-sample luma first (the next decision reads it, and computes the few half samples
  // it needs from it: DecideJob::refs_full_only); the rest, the half-sample planes among it,
  // after that decision's preparation (queue_later()), out of the copy engine's way.
  std::vector<StagedCopy> copies, deferred;
  size_t staged = 0;
  // Page-locked destinations (the encoder's reference pictures) take their copy straight.
  auto stage = [&](std::vector<StagedCopy>& to, void* dst, const void* src, size_t bytes) {
    if (page_locked(dst, bytes)) {
      to.push_back({dst, src, bytes, 0, false});
      return;
    }
    to.push_back({dst, src, bytes, staged});
    staged += (bytes + 255) / 256 * 256;
  };
  for (int p = 0; p < 3; p++) stage(deferred, job.rec->plane[p].data(), rec_[p].get(), job.rec->plane[p].size());
  if (job.rec_luma) {
    const RefEntry* e = held_entry(job.rec_id);
    if (!e) return Status::error("the reconstruction's half-pel planes are not on the device");
    const h264::LumaRefView v = job.rec_luma->view();
    for (int p = 0; p < 4; p++) stage(p ? deferred : copies, job.rec_luma->data(p), e->luma[p].get(), size_t(v.w) * size_t(v.h));
    // the luma before the loop filter, as the CPU's run() leaves it (RefPicture::search_luma)
    if (job.rec_search && job.deblock) {
      job.rec_search->resize(job.rec->plane[0].size());
      stage(deferred, job.rec_search->data(), e->search.get(), job.rec_search->size());
    } else if (job.rec_search) {
      job.rec_search->clear();
    }
  }
  GVC_TRY(staging_.reserve(staged));
  // The downloads on a stream of their own, so that the next frame's analysis on `s` (which
  // reads the reference on the device) runs beside them rather than behind them.
  GVC_TRY(aux_.create());
  GVC_CUDA_TRY(cudaStreamWaitEvent(aux_.get(), marks_[6], 0));
  for (const StagedCopy& c : copies)
    GVC_CUDA_TRY(cudaMemcpyAsync(c.staged ? staging_.get<uint8_t>() + c.offset : c.dst, c.src, c.bytes,
                                 cudaMemcpyDeviceToHost, aux_.get()));
  GVC_CUDA_TRY(cudaEventRecord(marks_[7], aux_.get()));
  pending_ = std::move(copies);  // only once every copy is under way
  later_ = std::move(deferred);
  later_queued_ = false;
  pending_on_device_ = job.rec_luma != nullptr;  // the reference is kept there (keep_reconstruction)
  drop.armed = false;
  if (later) return {};
  return wait_rows(job.mb_height);
}

// Called after the wavefront's launch: under serialised launches (CUDA_LAUNCH_BLOCKING, a
// sanitizer) the waits below then find its rows done instead of waiting for a launch behind
// them. The bands count as they are queued, so a failure part-way leaves those to wait_rows()
// or drop_rows().
Status H264ReconCore::download_rows(const h264::ReconJob& job, const unsigned* intra_progress, bool direct, bool bits) {
  bands_ = bands_copied_ = 0;
  rows_width_ = job.mb_width;
  rows_height_ = job.mb_height;
  rows_dst_ = job.mbs;
  rows_direct_ = direct;
  bits_run_ = bits_valid_ = false;
  band_rows_ = intra_progress ? kBandRows : job.mbs_later ? kLaterBandRows : job.mb_height;
  uint8_t* dst = direct ? reinterpret_cast<uint8_t*>(job.mbs) : levels_staging_.get<uint8_t>();
  GVC_TRY(rows_.create());
  const size_t row_bytes = size_t(job.mb_width) * sizeof(Macroblock);
  if (intra_progress)
    GVC_TRY(rows_start_.wait_on(rows_.get()));
  else  // behind the reconstruction's kernels (marks_[3])
    GVC_CUDA_TRY(cudaStreamWaitEvent(rows_.get(), marks_[3], 0));
  const int mb_count = job.mb_width * job.mb_height;
  const size_t words_row = size_t(job.mb_width) * kMbBitWords * sizeof(uint32_t);
  const size_t lens_row = size_t(job.mb_width) * sizeof(uint16_t);
  if (bits) {
    // The bits beside the loop filter on s (they only read the macroblocks); the refusal word
    // comes down before the first band, so that wait_rows() knows at once which ones to take.
    const size_t bytes = bits_words_at(mb_count) + size_t(mb_count) * kMbBitWords * sizeof(uint32_t);
    GVC_TRY(bits_dev_.reserve(bytes));
    GVC_TRY(bits_host_.reserve(bytes));
    uint8_t* const d = bits_dev_.get<uint8_t>();
    uint8_t* const h = bits_host_.get<uint8_t>();
    GVC_CUDA_TRY(cudaMemsetAsync(d, 0, sizeof(unsigned), rows_.get()));
    mb_layer_bits<<<(mb_count + 63) / 64, 64, 0, rows_.get()>>>(
        mbs_.get<Macroblock>(), job.mb_width, mb_count, job.p_slice, job.num_refs,
        reinterpret_cast<uint32_t*>(d + bits_words_at(mb_count)), reinterpret_cast<uint16_t*>(d + kBitsLensAt),
        reinterpret_cast<unsigned*>(d));
    GVC_CUDA_TRY(cudaGetLastError());
    GVC_CUDA_TRY(cudaMemcpyAsync(h, d, sizeof(unsigned), cudaMemcpyDeviceToHost, rows_.get()));
    bits_view_ = {reinterpret_cast<const uint32_t*>(h + bits_words_at(mb_count)),
                  reinterpret_cast<const uint16_t*>(h + kBitsLensAt), kMbBitWords};
    bits_run_ = true;
  }
  const int bands = (job.mb_height + band_rows_ - 1) / band_rows_;
  if (band_ready_.size() < size_t(bands)) band_ready_.resize(size_t(bands));
  for (int b = 0; b < bands; b++) {
    const int y0 = b * band_rows_, y1 = std::min(job.mb_height, y0 + band_rows_);
    if (intra_progress) {
      wait_rows_done<<<1, 1, 0, rows_.get()>>>(intra_progress, y0, y1, unsigned(job.mb_width));
      GVC_CUDA_TRY(cudaGetLastError());
    }
    if (bits) {
      for (const auto& [at, row] : {std::pair<size_t, size_t>{kBitsLensAt, lens_row}, {bits_words_at(mb_count), words_row}})
        GVC_CUDA_TRY(cudaMemcpyAsync(bits_host_.get<uint8_t>() + at + size_t(y0) * row, bits_dev_.get<uint8_t>() + at + size_t(y0) * row,
                                     size_t(y1 - y0) * row, cudaMemcpyDeviceToHost, rows_.get()));
    } else {
      GVC_CUDA_TRY(cudaMemcpyAsync(dst + size_t(y0) * row_bytes, mbs_.get<uint8_t>() + size_t(y0) * row_bytes,
                                   size_t(y1 - y0) * row_bytes, cudaMemcpyDeviceToHost, rows_.get()));
    }
    GVC_TRY(band_ready_[size_t(b)].record(rows_.get()));
    bands_ = b + 1;
  }
  return {};
}

Status H264ReconCore::download_macroblocks_now() {
  const size_t bytes = size_t(rows_width_) * size_t(rows_height_) * sizeof(Macroblock);
  uint8_t* const dst = rows_direct_ ? reinterpret_cast<uint8_t*>(rows_dst_) : levels_staging_.get<uint8_t>();
  GVC_CUDA_TRY(cudaMemcpyAsync(dst, mbs_.get(), bytes, cudaMemcpyDeviceToHost, rows_.get()));
  GVC_TRY(rows_.synchronize("reconstruction levels"));
  if (!rows_direct_) copy_host_parallel(reinterpret_cast<uint8_t*>(rows_dst_), dst, bytes);
  return {};
}

void H264ReconCore::drop_rows() {
  if (bands_copied_ < bands_) (void)rows_.synchronize("dropped reconstruction levels");
  bands_ = bands_copied_ = 0;
}

Status H264ReconCore::wait_rows(int rows) {
  const size_t row_bytes = size_t(rows_width_) * sizeof(Macroblock);
  while (bands_copied_ < bands_ && bands_copied_ * band_rows_ < rows) {
    const int y0 = bands_copied_ * band_rows_, y1 = std::min(rows_height_, y0 + band_rows_);
    const Status st = band_ready_[size_t(bands_copied_)].synchronize("reconstruction levels");
    if (!st.ok()) {  // the bands still queued end before the caller may read or free rows_dst_
      drop_rows();
      return st;
    }
    if (bits_run_ && bands_copied_ == 0) {
      // the refusal word came down before this band: the bits stand, or every macroblock
      // comes down now (the bands then only complete the bits, which go unread)
      bits_valid_ = *bits_host_.get<volatile unsigned>() == 0;
      if (!bits_valid_) {
        const Status down = download_macroblocks_now();
        if (!down.ok()) {
          drop_rows();
          return down;
        }
      }
    }
    if (!rows_direct_ && !bits_run_)
      copy_host_parallel(reinterpret_cast<uint8_t*>(rows_dst_) + size_t(y0) * row_bytes,
                         levels_staging_.get<uint8_t>() + size_t(y0) * row_bytes, size_t(y1 - y0) * row_bytes);
    bands_copied_++;
  }
  if (bands_copied_ == bands_) bands_ = bands_copied_ = 0;
  return {};
}

Status H264ReconCore::finish_on_device() {
  return (pending_.empty() && later_.empty()) || pending_on_device_ ? Status() : finish();
}

Status H264ReconCore::queue_later(const Event* after) {
  if (later_.empty() || later_queued_) return {};
  Status st = after ? after->wait_on(aux_.get()) : Status();
  for (const StagedCopy& c : later_)
    if (st.ok())
      st = check(cudaMemcpyAsync(c.staged ? staging_.get<uint8_t>() + c.offset : c.dst, c.src, c.bytes,
                                 cudaMemcpyDeviceToHost, aux_.get()),
                 "cudaMemcpyAsync");
  if (st.ok()) st = later_done_.record(aux_.get());
  if (st.ok()) {
    later_queued_ = true;
    return {};
  }
  // The copies queued end before their destinations may go; what they fill is not complete.
  (void)aux_.synchronize("reconstruction downloads");
  later_.clear();
  return st;
}

Status H264ReconCore::finish() {
  GVC_TRY(finish_planes());
  GVC_TRY(queue_later(nullptr));
  if (later_.empty()) return {};
  const std::vector<StagedCopy> copies = std::move(later_);
  later_.clear();
  later_queued_ = false;
  GVC_TRY(later_done_.synchronize("reconstruction downloads"));
  copy_from_staging(staging_.get<uint8_t>(), copies);
  return {};
}

Status H264ReconCore::finish_planes() {
  GVC_TRY(wait_rows(rows_height_));
  GVC_TRY(complete_source());
  if (pending_.empty()) return {};
  const std::vector<StagedCopy> copies = std::move(pending_);
  pending_.clear();
  GVC_TRY(wait_event(marks_[7], "reconstruction"));
  copy_from_staging(staging_.get<uint8_t>(), copies);
  float ms[7] = {};
  for (int i = 0; i < 7; i++) GVC_CUDA_TRY(cudaEventElapsedTime(&ms[i], marks_[i], marks_[i + 1]));
  times_ = {ms[0], ms[1], ms[2], ms[4], ms[5], ms[3] + ms[6]};
  return {};
}

}  // namespace cuda
}  // namespace gvc
