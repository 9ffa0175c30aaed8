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

// The SATD caches of a (macroblock, reference) by one block: every entry's partition is cut
// into its 4x4 blocks, and the threads share out all the blocks of all the entries (816 when
// the pre-selection keeps 16x8, at most about 850), each adding its block's satd4x4 to
// its entry's sum. A thread per entry (up to 16 blocks each, entries of every size side by
// side in a warp) took 0.44 ms per 1080p P frame on an H200. The sums are those of
// partition_satd: its satd_block adds the same 4x4 SATDs, and predict() gives the same
// samples whatever the block's size.
constexpr int kSatdThreads = 128;
constexpr int kEntries = h264::MbSatdRef::kEntries;

__global__ void __launch_bounds__(kSatdThreads) satd_cache(h264::MbAnalysis a, h264::MbSatdRef* out) {
  __shared__ h264::SatdSlots slots;
  __shared__ int first_block[kEntries + 1];  // each entry's first block in the shared-out list
  __shared__ int blocks_of[kEntries];        // 4x4 blocks of the entry's partition (0: unused)
  __shared__ int8_t rect[kEntries][3];       // the partition's x, y and width, in 4x4 blocks
  __shared__ int16_t vec[kEntries][2];
  __shared__ unsigned sum[kEntries];
  const int mb = int(blockIdx.x) / a.num_refs, r = int(blockIdx.x) % a.num_refs;
  a.mx = mb % a.map.mb_width;
  a.my = mb / a.map.mb_width;
  if (threadIdx.x == 0) slots = h264::satd_slots(a);
  __syncthreads();
  h264::MbSatdRef& c = out[blockIdx.x];
  for (int e = threadIdx.x; e < kEntries; e += kSatdThreads) {
    int part = 0, x = 0, y = 0, w = 0, h = 0;
    int16_t mv[2] = {0, 0};
    uint16_t* cell = nullptr;
    if (h264::satd_entry(a, slots, r, e, &part, mv, &cell, c)) h264::me_partition_rect(part, &x, &y, &w, &h);
    blocks_of[e] = w * h;
    rect[e][0] = int8_t(x), rect[e][1] = int8_t(y), rect[e][2] = int8_t(w);
    vec[e][0] = mv[0], vec[e][1] = mv[1];
    sum[e] = 0;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int n = 0;
    for (int e = 0; e < kEntries; e++) first_block[e] = n, n += blocks_of[e];
    first_block[kEntries] = n;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < first_block[kEntries]; i += kSatdThreads) {
    int lo = 0, hi = kEntries - 1;  // the last entry starting at or before block i
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (first_block[mid] <= i) lo = mid;
      else hi = mid - 1;
    }
    const int k = i - first_block[lo], w = rect[lo][2];
    const int px = 16 * a.mx + 4 * (rect[lo][0] + k % w), py = 16 * a.my + 4 * (rect[lo][1] + k / w);
    uint8_t pred[16];
    a.refs[r].predict(px, py, 4, 4, vec[lo], pred, 4);
    atomicAdd(&sum[lo], unsigned(h264::satd_block(a.src.at(0, px, py), a.src.stride[0], pred, 4, 4, 4)));
  }
  __syncthreads();
  for (int e = threadIdx.x; e < kEntries; e += kSatdThreads)
    *h264::satd_cell(c, e) = blocks_of[e] && sum[e] < h264::kSatdMiss ? uint16_t(sum[e]) : h264::kSatdMiss;
}

}  // namespace

Status launch_satd_cache(const h264::MbAnalysis& a, h264::MbSatdRef* out, cudaStream_t s) {
  const int blocks = a.map.mb_width * a.map.mb_height * a.num_refs;
  if (blocks <= 0) return {};
  satd_cache<<<blocks, kSatdThreads, 0, s>>>(a, out);
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
