// sync.cuh (gpu): progress flags between the blocks of a launch: a load with acquire and a store with release at device scope
//
// A producer writes its data and, after its warp has synchronised (__syncwarp), one lane
// store_release()s a flag: the release is cumulative, so it orders what every lane wrote
// before the __syncwarp (some kernels also call __threadfence() first, which is not needed).
// A consumer that load_acquire()s the flag then sees the data with plain loads (the acquire
// also keeps them from a stale L1 line); or it polls with load_relaxed() and calls
// fence_acquire() once the flag is there (h264_deblock.cu), which invalidates L1 once instead of
// at every poll. A launch that waits
// on such flags needs its waited-for blocks resident or finished: they must have lower block
// indices than the waiters, which the hardware schedules first. A kernel of another stream may
// wait on them too (h264_recon.cu's wait_rows_done, launched after the producer), and work
// queued behind it there then reads the data (the copy engine reads through the same L2).
#pragma once

namespace gvc {
namespace cuda {

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// A flag's value without ordering (a waiter's polls; fence_acquire() after the one that
// satisfies it makes it an acquire without invalidating L1 at every poll).
__device__ __forceinline__ unsigned load_relaxed(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void fence_acquire() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

__device__ __forceinline__ void store_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

}  // namespace cuda
}  // namespace gvc
