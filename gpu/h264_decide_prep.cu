// h264_decide_prep.cu: the decision's preparations on the GPU: prepare_intra, one thread per macroblock with its scratch in shared memory; the SATD caches, a block per macroblock and reference sharing out the 4x4 blocks
#include "gpu/h264_decide_prep.h"

#include "gpu/device.h"

namespace gvc {
namespace cuda {

namespace {

// Threads per block, and the bytes between two threads' scratch in shared memory: an odd
// number of words, so a warp's same-offset accesses hit different banks. The scratch (1.8 KB:
// a macroblock and the Intra_4x4 window) would otherwise be stack, which the driver reserves
// as local memory for every thread the device can hold.
constexpr int kPrepThreads = 16;
constexpr size_t kScratchStride = (sizeof(h264::IntraPrepScratch) / 4 | 1) * 4;
static_assert(sizeof(h264::IntraPrepScratch) % 2 == 0, "IntraPrepScratch stays aligned for its int16 fields");

__global__ void make_stand_ins(h264::Macroblock* mbs, const uint16_t* slice_of_mb, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) h264::make_stand_in(mbs[i], slice_of_mb[i]);
}

__global__ void make_stand_ins_from(h264::Macroblock* mbs, const uint16_t* slice_of_mb, const h264::MbIntraPrep* prep,
                                    int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) h264::make_stand_in_from(mbs[i], slice_of_mb[i], prep[i]);
}

__global__ void __launch_bounds__(kPrepThreads)
    intra_prep(h264::MbAnalysis a, const uint16_t* slice_of_mb, const IntraMbCandidates* cand, h264::MbIntraPrep* out) {
  extern __shared__ __align__(16) unsigned char shared_scratch[];
  auto* s = reinterpret_cast<h264::IntraPrepScratch*>(shared_scratch + threadIdx.x * kScratchStride);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= a.map.mb_width * a.map.mb_height) return;
  a.map.slice = slice_of_mb[i];
  a.mx = i % a.map.mb_width;
  a.my = i / a.map.mb_width;
  a.intra_cand = cand ? &cand[i] : nullptr;
  h264::MbIntraPrep r;
  h264::prepare_intra(a, *s, r);
  out[i] = r;
}

// satd4x4 of the 4x4 source block at `src` (stride ss) against the prediction of the block at
// luma (px, py) displaced by mv in `ref`: what satd_block gives for ref.predict's samples.
// Where the block's reads stay inside the padded planes and the planes are word aligned, the
// rows come in words (two aligned loads and a funnel shift per plane), the two planes of a
// quarter-pel sample averaged four at a time (__vavgu4 rounds up, as Table 8-12's average).
__device__ __forceinline__ int satd4x4_at(const h264::LumaRefView& ref, bool words, const uint8_t* __restrict__ src,
                                          int ss, int px, int py, const int16_t mv[2]) {
  using h264::LumaRefView;
  const int ix = px + (mv[0] >> 2), iy = py + (mv[1] >> 2);
  const h264::QpelTap t = GVC_T(h264::kQpel)[(mv[1] & 3) * 4 + (mv[0] & 3)];
  const int kPad = LumaRefView::kPad;
  if (!words || ix < -kPad || iy < -kPad || ix + 5 > ref.w - kPad || iy + 5 > ref.h - kPad) {
    uint8_t pred[16];
    ref.predict(px, py, 4, 4, mv, pred, 4);
    return h264::satd_block(src, ss, pred, 4, 4, 4);
  }
  const size_t base = size_t(iy + kPad) * size_t(ref.w) + size_t(ix + kPad);
  const uint8_t* p0 = ref.plane[t.p0] + base + size_t(t.dy0) * size_t(ref.w) + size_t(t.dx0);
  // a single plane is averaged with itself: (v + v + 1) >> 1 = v
  const uint8_t* p1 = t.p1 >= 0 ? ref.plane[t.p1] + base + size_t(t.dy1) * size_t(ref.w) + size_t(t.dx1) : p0;
  // A row's word loads reach up to 7 bytes past its start, into the next row at most: the
  // rows read end at iy + 4 <= h - kPad - 1, kPad rows before the plane's end.
  auto row = [&](const uint8_t* p) {
    const uint32_t* w = reinterpret_cast<const uint32_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(3));
    return __funnelshift_r(__ldg(w), __ldg(w + 1), 8 * unsigned(reinterpret_cast<uintptr_t>(p) & 3));
  };
  int16_t d[16];
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const uint32_t pred = __vavgu4(row(p0 + size_t(j) * size_t(ref.w)), row(p1 + size_t(j) * size_t(ref.w)));
#pragma unroll
    for (int i = 0; i < 4; i++) d[4 * j + i] = int16_t(int(__ldg(src + j * ss + i)) - int((pred >> (8 * i)) & 255));
  }
  return h264::satd4x4(d);
}

// The SATD caches of a (macroblock, reference) by one block: every entry's partition is cut
// into its 4x4 blocks, and the threads share out all the blocks of all the entries (816 when
// the pre-selection keeps 16x8, at most about 850), each adding its block's satd4x4 to
// its entry's sum (`owner` says whose a block is: the entries' first blocks are a block-wide
// prefix sum). The sums are those of partition_satd: its satd_block adds the same 4x4 SATDs,
// and predict() gives the same samples whatever the block's size.
// (A thread per entry, up to 16 blocks each, took 0.44 ms per 1080p P frame on an H200;
// blocks shared out by a binary search over a serial prefix sum, with predict() and
// satd_block through local memory, 0.29 ms.)
constexpr int kSatdThreads = 128;
constexpr int kEntries = h264::MbSatdRef::kEntries;
constexpr int kEntriesPerThread = (kEntries + kSatdThreads - 1) / kSatdThreads;  // 2
static_assert(kEntries < 256, "owner holds an entry in a byte");

// Every macroblock's SatdSlots (its pre-selection), a thread each: satd_cache's blocks read
// them rather than each wait on one thread's pre-selection (29 % of its time).
__global__ void satd_slots_of(h264::MbAnalysis a, h264::SatdSlots* out, h264::Preselection* presel) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= a.map.mb_width * a.map.mb_height) return;
  a.mx = i % a.map.mb_width;
  a.my = i / a.map.mb_width;
  out[i] = h264::satd_slots(a, presel ? &presel[i] : nullptr);
}

static_assert(sizeof(h264::SatdSlots) <= kSatdThreads, "satd_cache copies SatdSlots a byte a thread");

__global__ void __launch_bounds__(kSatdThreads) satd_cache(h264::MbAnalysis a, const h264::SatdSlots* mb_slots,
                                                           h264::MbSatdRef* out, int first_cache) {
  __shared__ h264::SatdSlots slots;
  __shared__ int first_block[kEntries];         // each entry's first block in the shared-out list
  __shared__ uint8_t owner[kEntries * 16];      // the entry of each block of the list
  __shared__ int8_t rect[kEntries][3];          // the partition's x, y and width, in 4x4 blocks
  __shared__ int16_t vec[kEntries][2];
  __shared__ unsigned sum[kEntries];
  __shared__ int warp_blocks[kSatdThreads / 32];
  const int block = first_cache + int(blockIdx.x);  // its cache's index in out
  const int mb = block / a.num_refs, r = block % a.num_refs;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  a.mx = mb % a.map.mb_width;
  a.my = mb / a.map.mb_width;
  if (threadIdx.x < sizeof(h264::SatdSlots))
    reinterpret_cast<uint8_t*>(&slots)[threadIdx.x] = reinterpret_cast<const uint8_t*>(&mb_slots[mb])[threadIdx.x];
  __syncthreads();
  h264::MbSatdRef& c = out[block];
  // thread t's entries are kEntriesPerThread * t + i, so that a scan over threads orders them
  int n[kEntriesPerThread], mine = 0;
#pragma unroll
  for (int i = 0; i < kEntriesPerThread; i++) {
    const int e = kEntriesPerThread * int(threadIdx.x) + i;
    n[i] = 0;
    if (e >= kEntries) continue;
    int part = 0, x = 0, y = 0, w = 0, h = 0;
    int16_t mv[2] = {0, 0};
    uint16_t* cell = nullptr;
    if (h264::satd_entry(a, slots, r, e, &part, mv, &cell, c)) h264::me_partition_rect(part, &x, &y, &w, &h);
    n[i] = w * h;
    mine += n[i];
    rect[e][0] = int8_t(x), rect[e][1] = int8_t(y), rect[e][2] = int8_t(w);
    vec[e][0] = mv[0], vec[e][1] = mv[1];
    sum[e] = 0;
  }
  // exclusive prefix sum of the threads' block counts: within each warp, then over the warps
  int incl = mine;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += v;
  }
  if (lane == 31) warp_blocks[warp] = incl;
  __syncthreads();
  int before = incl - mine, total = 0;
  for (int k = 0; k < kSatdThreads / 32; k++) {
    before += k < warp ? warp_blocks[k] : 0;
    total += warp_blocks[k];
  }
#pragma unroll
  for (int i = 0; i < kEntriesPerThread; i++) {
    const int e = kEntriesPerThread * int(threadIdx.x) + i;
    if (e >= kEntries) continue;
    first_block[e] = before;
    for (int k = 0; k < n[i]; k++) owner[before + k] = uint8_t(e);
    before += n[i];
  }
  __syncthreads();
  const h264::LumaRefView& ref = a.refs[r];
  bool words = (reinterpret_cast<uintptr_t>(ref.plane[0]) | reinterpret_cast<uintptr_t>(ref.plane[1]) |
                reinterpret_cast<uintptr_t>(ref.plane[2]) | reinterpret_cast<uintptr_t>(ref.plane[3]) |
                uintptr_t(ref.w)) % 4 == 0;
  for (int i = threadIdx.x; i < total; i += kSatdThreads) {
    const int e = owner[i];
    const int k = i - first_block[e], w = rect[e][2];
    const int px = 16 * a.mx + 4 * (rect[e][0] + k % w), py = 16 * a.my + 4 * (rect[e][1] + k / w);
    atomicAdd(&sum[e], unsigned(satd4x4_at(ref, words, a.src.at(0, px, py), a.src.stride[0], px, py, vec[e])));
  }
  __syncthreads();
  for (int e = threadIdx.x; e < kEntries; e += kSatdThreads) {
    const bool used = first_block[e] < (e + 1 < kEntries ? first_block[e + 1] : total);
    *h264::satd_cell(c, e) = used && sum[e] < h264::kSatdMiss ? uint16_t(sum[e]) : h264::kSatdMiss;
  }
}

}  // namespace

Status launch_satd_slots(const h264::MbAnalysis& a, h264::SatdSlots* slots, h264::Preselection* presel,
                         cudaStream_t s) {
  const int mb_count = a.map.mb_width * a.map.mb_height;
  if (mb_count <= 0 || a.num_refs <= 0) return {};
  satd_slots_of<<<(mb_count + 127) / 128, 128, 0, s>>>(a, slots, presel);
  GVC_CUDA_TRY(cudaGetLastError());
  return {};
}

Status launch_satd_cache(const h264::MbAnalysis& a, const h264::SatdSlots* slots, h264::MbSatdRef* out,
                         cudaStream_t s, int first_row, int end_row) {
  if (end_row < 0) end_row = a.map.mb_height;
  const int blocks = a.map.mb_width * (end_row - first_row) * a.num_refs;
  if (blocks <= 0) return {};
  satd_cache<<<blocks, kSatdThreads, 0, s>>>(a, slots, out, a.map.mb_width * first_row * a.num_refs);
  GVC_CUDA_TRY(cudaGetLastError());
  return {};
}

Status launch_intra_prep(const h264::MbAnalysis& frame, const uint16_t* slice_of_mb, h264::Macroblock* stand_in,
                         const IntraMbCandidates* cand, h264::MbIntraPrep* out, cudaStream_t s) {
  const int n = frame.map.mb_width * frame.map.mb_height;
  if (n <= 0) return {};
  make_stand_ins<<<(n + 255) / 256, 256, 0, s>>>(stand_in, slice_of_mb, n);
  GVC_CUDA_TRY(cudaGetLastError());
  h264::MbAnalysis a = frame;
  a.map.mbs = stand_in;
  const int passes = h264::intra_prep_passes(frame);
  for (int pass = 0; pass < passes; pass++) {
    if (pass > 0) {  // against the last pass's choices (intra_prep.h)
      make_stand_ins_from<<<(n + 255) / 256, 256, 0, s>>>(stand_in, slice_of_mb, out, n);
      GVC_CUDA_TRY(cudaGetLastError());
    }
    intra_prep<<<(n + kPrepThreads - 1) / kPrepThreads, kPrepThreads, kPrepThreads * kScratchStride, s>>>(
        a, slice_of_mb, cand, out);
    GVC_CUDA_TRY(cudaGetLastError());
  }
  return {};
}

}  // namespace cuda
}  // namespace gvc
