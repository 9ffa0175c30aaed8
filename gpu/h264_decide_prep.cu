// h264_decide_prep.cu: the decision's preparations on the GPU: prepare_intra, one thread per macroblock with its scratch in shared memory; the SATD caches, a block per macroblock and reference
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

// Threads per (macroblock, reference) of the SATD caches, each filling every kSatdThreads-th entry.
constexpr int kSatdThreads = 64;

__global__ void __launch_bounds__(kSatdThreads) satd_cache(h264::MbAnalysis a, h264::MbSatdRef* out) {
  __shared__ h264::SatdSlots slots;
  const int mb = blockIdx.x / a.num_refs, r = blockIdx.x % a.num_refs;
  a.mx = mb % a.map.mb_width;
  a.my = mb / a.map.mb_width;
  if (threadIdx.x == 0) slots = h264::satd_slots(a);
  __syncthreads();
  h264::MbSatdRef& c = out[blockIdx.x];
  for (int e = threadIdx.x; e < h264::MbSatdRef::kEntries; e += kSatdThreads) h264::fill_satd_entry(a, slots, r, e, c);
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
