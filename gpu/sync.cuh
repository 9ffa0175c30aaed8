// sync.cuh (gpu): progress flags between the blocks of a launch: a load with acquire and a store with release at device scope, and 64-bit words that carry their own flag
//
// A producer writes its data and, after its warp has synchronised (__syncwarp), one lane
// store_release()s a flag: the release is cumulative, so it orders what every lane wrote
// before the __syncwarp (some kernels also call __threadfence() first, which is not needed).
// A consumer that load_acquire()s the flag then sees the data with plain loads (the acquire
// also keeps them from a stale L1 line). Data of 32 bits can instead travel with its flag in
// one 64-bit word (load_relaxed64, store_relaxed64: h264_deblock.cu), with no fence at all.
// A launch that waits on such flags needs its waited-for blocks resident or finished: they
// must have lower block indices than the waiters, which the hardware schedules first. A kernel
// of another stream may wait on them too (h264_recon.cu's wait_rows_done, launched after the
// producer), and work queued behind it there then reads the data (the copy engine reads
// through the same L2).
#pragma once

namespace gvc {
namespace cuda {

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void store_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// A 64-bit word, seen whole (h264_deblock.cu's posts: samples and a flag in one word, no fence).
__device__ __forceinline__ unsigned long long load_relaxed64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void store_relaxed64(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

}  // namespace cuda
}  // namespace gvc
