// bench_me_seed.cu: seed 000's two-kernel integer search, checked and timed against MeCore's
//
// The seed's layout (shared/DESIGN.md §2, method 000): one 256-thread block per 16x16 MB holds
// the current MB and its (16 + 2R)^2 search window in shared memory (clamped reads at the
// borders); each thread evaluates a 2x2 patch of positions (R = 16: 32x32 positions, one patch
// per thread), sums sixteen 4x4 SADs (__vsadu4) into the 41 partitions, keeps its best per
// partition and writes all 41 to global memory; a second kernel, one block per MB, reduces the
// 256 records of each partition to the best. gpu/me.cu replaces the records and the second
// kernel by an in-warp reduction (docs/performance.md, "Versions"); this program measures the
// two against each other on bench-me's frames (1080p, lambda 4, no predictors) and fails when
// their MbPartitions differ anywhere.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/dsp/me.h"
#include "gpu/device.h"
#include "gpu/me.h"
#include "tools/bench_common.h"

namespace {

using gvc::MbPartitions;
using gvc::MvCost;
using gvc::kNumPartitions;
using gvc::kPart16x16;
using gvc::kPart16x8;
using gvc::kPart8x16;
using gvc::kPart8x8;
using gvc::kPart8x4;
using gvc::kPart4x8;
using gvc::kPart4x4;

constexpr int kThreads = 256;  // the seed's thread group per MB (16 x 16)
constexpr int kReduceThreads = 256;
constexpr int kTieBits = 28;   // (dx^2 + dy^2) << 14 | (dy + R) << 7 | (dx + R), R <= 64

struct SeedArgs {
  const uint8_t* cur;
  const uint8_t* ref;
  ptrdiff_t cur_stride, ref_stride;
  int width, height;
  int mb_cols;
  int range;
  uint32_t lambda;
  const MvCost* preds;
  int win_rows;  // 16 + 2R
  int pitch;     // words per window row: every 16 + 1 bytes from an even offset are 5 words
  MvCost* records;  // [mb][partition][thread]
};

__device__ __forceinline__ int clampi(int v, int lo, int hi) { return min(max(v, lo), hi); }

// Length of se(v), as me.h's se_bits().
__device__ __forceinline__ uint32_t se_bits_dev(int v) {
  const uint32_t code = v > 0 ? 2u * uint32_t(v) - 1u : 2u * uint32_t(-v);
  return 2u * uint32_t(31 - __clz(code + 1u)) + 1u;
}

// me.cpp's better(): lowest cost, then shortest vector, then raster (vy, then vx).
__device__ __forceinline__ bool better(uint32_t cost, int vx, int vy, uint32_t bcost, int bx,
                                       int by) {
  if (cost != bcost) return cost < bcost;
  const int len = vx * vx + vy * vy, blen = bx * bx + by * by;
  if (len != blen) return len < blen;
  if (vy != by) return vy < by;
  return vx < bx;
}

// Inside kernel 1 a candidate is the 64-bit key cost << 32 | tie (kTieBits above): its unsigned
// order is better()'s, since dx^2 + dy^2 orders as (4dx)^2 + (4dy)^2 does.
__device__ __forceinline__ void fold(uint32_t sad, uint32_t mvc, uint32_t tie,
                                     unsigned long long& best) {
  best = min(best, (static_cast<unsigned long long>(sad + mvc) << 32) | tie);
}

// The 41 partition SADs of one position from its sixteen 4x4 SADs (me.cpp's sums and order).
__device__ __forceinline__ void fold_partitions(const uint32_t (&s4)[16], uint32_t mvc,
                                                uint32_t tie,
                                                unsigned long long (&best)[kNumPartitions]) {
  uint32_t s8[4];
#pragma unroll
  for (int k = 0; k < 4; k++) {
    const int bx = (k & 1) * 2, by = (k >> 1) * 2;
    const uint32_t a = s4[by * 4 + bx], b = s4[by * 4 + bx + 1];
    const uint32_t c = s4[(by + 1) * 4 + bx], d = s4[(by + 1) * 4 + bx + 1];
    fold(a, mvc, tie, best[kPart4x4 + 4 * k + 0]);
    fold(b, mvc, tie, best[kPart4x4 + 4 * k + 1]);
    fold(c, mvc, tie, best[kPart4x4 + 4 * k + 2]);
    fold(d, mvc, tie, best[kPart4x4 + 4 * k + 3]);
    fold(a + b, mvc, tie, best[kPart8x4 + 2 * k + 0]);
    fold(c + d, mvc, tie, best[kPart8x4 + 2 * k + 1]);
    fold(a + c, mvc, tie, best[kPart4x8 + 2 * k + 0]);
    fold(b + d, mvc, tie, best[kPart4x8 + 2 * k + 1]);
    s8[k] = a + b + c + d;
    fold(s8[k], mvc, tie, best[kPart8x8 + k]);
  }
  fold(s8[0] + s8[1], mvc, tie, best[kPart16x8 + 0]);
  fold(s8[2] + s8[3], mvc, tie, best[kPart16x8 + 1]);
  fold(s8[0] + s8[2], mvc, tie, best[kPart8x16 + 0]);
  fold(s8[1] + s8[3], mvc, tie, best[kPart8x16 + 1]);
  fold(s8[0] + s8[1] + s8[2] + s8[3], mvc, tie, best[kPart16x16]);
}

// Kernel 1: block (mb_x, mb_y); thread t evaluates the 2x2 patches t, t + 256, ... of the
// R x R patches, patch q covering dx = -R + 2 (q % R) + {0, 1}, dy = -R + 2 (q / R) + {0, 1}.
__global__ void __launch_bounds__(kThreads, 1) seed_search_kernel(SeedArgs a) {
  extern __shared__ uint4 smem4[];
  const uint4* curs = smem4;                                       // [16] rows of 4 words
  uint32_t* win = reinterpret_cast<uint32_t*>(smem4 + 16);         // [win_rows][pitch]
  const int tid = threadIdx.x;
  const int R = a.range;
  const int mb = blockIdx.y * a.mb_cols + blockIdx.x;
  const int x0 = blockIdx.x * 16, y0 = blockIdx.y * 16;

  // Current MB (edge-extended) and window: positions -R..R-1 need samples -R..R+14.
  if (tid < 64) {
    const int r = tid >> 2, w = tid & 3;
    const uint8_t* row = a.cur + ptrdiff_t(clampi(y0 + r, 0, a.height - 1)) * a.cur_stride;
    uint32_t v = 0;
#pragma unroll
    for (int b = 0; b < 4; b++)
      v |= uint32_t(row[clampi(x0 + 4 * w + b, 0, a.width - 1)]) << (8 * b);
    reinterpret_cast<uint32_t*>(smem4)[tid] = v;
  }
  for (int i = tid; i < a.win_rows * a.pitch; i += kThreads) {
    const int r = i / a.pitch, w = i % a.pitch;
    const uint8_t* row = a.ref + ptrdiff_t(clampi(y0 - R + r, 0, a.height - 1)) * a.ref_stride;
    uint32_t v = 0;
#pragma unroll
    for (int b = 0; b < 4; b++)
      v |= uint32_t(row[clampi(x0 - R + 4 * w + b, 0, a.width - 1)]) << (8 * b);
    win[i] = v;
  }
  __syncthreads();

  const int px = a.preds ? a.preds[mb].mvx : 0, py = a.preds ? a.preds[mb].mvy : 0;
  unsigned long long best[kNumPartitions];
#pragma unroll
  for (int p = 0; p < kNumPartitions; p++) best[p] = ~0ull;

  for (int q = tid; q < R * R; q += kThreads) {
    const int dx0 = -R + 2 * (q % R), dy0 = -R + 2 * (q / R);
    const int wx = dx0 + R;  // even, so the shifts below are 0 or 16, then 8 or 24 bits
    const uint32_t sh = 8u * uint32_t(wx & 3);
    const uint32_t* wp = win + (dy0 + R) * a.pitch + (wx >> 2);
    uint32_t acc[2][2][16];  // [dy - dy0][dx - dx0][4x4 block, raster]
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
      for (int i = 0; i < 2; i++)
#pragma unroll
        for (int k = 0; k < 16; k++) acc[j][i][k] = 0;
    // Window row r serves current row r at dy0 and current row r - 1 at dy0 + 1.
#pragma unroll
    for (int r = 0; r < 17; r++) {
      uint32_t w5[5], r0[4], r1[4];
#pragma unroll
      for (int b = 0; b < 5; b++) w5[b] = wp[r * a.pitch + b];
#pragma unroll
      for (int b = 0; b < 4; b++) {
        r0[b] = __funnelshift_r(w5[b], w5[b + 1], sh);
        r1[b] = __funnelshift_r(w5[b], w5[b + 1], sh + 8);
      }
#pragma unroll
      for (int j = 0; j < 2; j++) {
        const int cr = r - j;
        if (cr < 0 || cr >= 16) continue;
        const uint4 c4 = curs[cr];
        const uint32_t c[4] = {c4.x, c4.y, c4.z, c4.w};
#pragma unroll
        for (int b = 0; b < 4; b++) {
          const int k = (cr >> 2) * 4 + b;
          acc[j][0][k] = __vsadu4(c[b], r0[b]) + acc[j][0][k];
          acc[j][1][k] = __vsadu4(c[b], r1[b]) + acc[j][1][k];
        }
      }
    }
#pragma unroll
    for (int j = 0; j < 2; j++) {
      const int dy = dy0 + j;
      const uint32_t by = se_bits_dev(4 * dy - py);
#pragma unroll
      for (int i = 0; i < 2; i++) {
        const int dx = dx0 + i;
        const uint32_t mvc = a.lambda * (se_bits_dev(4 * dx - px) + by);
        const uint32_t tie = uint32_t(dx * dx + dy * dy) << 14 | uint32_t(dy + R) << 7 |
                             uint32_t(dx + R);
        fold_partitions(acc[j][i], mvc, tie, best);
      }
    }
  }

  // Every thread's 41 bests as MvCost (cost, vector in quarter-pel); a thread without a
  // position (R < 16) writes cost UINT32_MAX, which no position reaches.
  uint2* rec = reinterpret_cast<uint2*>(a.records) + size_t(mb) * kNumPartitions * kThreads + tid;
#pragma unroll
  for (int p = 0; p < kNumPartitions; p++) {
    const unsigned long long key = best[p];
    uint2 v = make_uint2(0u, 0xffffffffu);
    if (key != ~0ull) {
      const uint32_t tie = uint32_t(key) & ((1u << kTieBits) - 1);
      const int dx = int(tie & 127) - R, dy = int((tie >> 7) & 127) - R;
      // MvCost's layout: mvx (low 16 bits), mvy (high 16 bits), then cost.
      v.x = uint32_t(uint16_t(int16_t(4 * dx))) | uint32_t(uint16_t(int16_t(4 * dy))) << 16;
      v.y = uint32_t(key >> 32);
    }
    rec[size_t(p) * kThreads] = v;
  }
}

// Kernel 2: one block per MB; warp w reduces partitions w, w + 8, ...: each lane the records
// lane + 32k, then the warp, all with better().
__global__ void __launch_bounds__(kReduceThreads) seed_reduce_kernel(const MvCost* records,
                                                                    MbPartitions* out) {
  const int mb = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint2* rec = reinterpret_cast<const uint2*>(records) + size_t(mb) * kNumPartitions * kThreads;
  for (int p = warp; p < kNumPartitions; p += kReduceThreads / 32) {
    const uint2* rp = rec + size_t(p) * kThreads;
    uint32_t cost = 0xffffffffu;
    int vx = 0, vy = 0;
    bool have = false;
    for (int t = lane; t < kThreads; t += 32) {
      const uint2 v = rp[t];
      const int x = int16_t(v.x & 0xffff), y = int16_t(v.x >> 16);
      if (!have || better(v.y, x, y, cost, vx, vy)) cost = v.y, vx = x, vy = y, have = true;
    }
    for (int o = 16; o > 0; o >>= 1) {
      const uint32_t c = __shfl_xor_sync(0xffffffffu, cost, o);
      const int x = __shfl_xor_sync(0xffffffffu, vx, o);
      const int y = __shfl_xor_sync(0xffffffffu, vy, o);
      if (better(c, x, y, cost, vx, vy)) cost = c, vx = x, vy = y;
    }
    if (lane == 0) {
      MvCost mc;
      mc.mvx = int16_t(vx);
      mc.mvy = int16_t(vy);
      mc.cost = cost;
      out[mb].part[p] = mc;
    }
  }
}

size_t record_bytes(int mb_cols, int mb_rows) {
  return size_t(mb_cols) * mb_rows * kNumPartitions * kThreads * sizeof(MvCost);
}

// Kernel 1 into `records` (record_bytes()), then kernel 2 into `out`; asynchronous on `s`.
// reduce_only: kernel 2 alone, on the records already there (to time it).
gvc::Status seed_search(const gvc::cuda::DevicePlane& cur, const gvc::cuda::DevicePlane& ref,
                        int range, uint32_t lambda, const MvCost* preds, MvCost* records,
                        MbPartitions* out, cudaStream_t s, bool reduce_only = false) {
  if (range < gvc::kMinSearchRange || range > gvc::kMaxSearchRange)
    return gvc::Status::error("search range must be between 8 and 64");
  SeedArgs a{};
  a.cur = cur.data, a.cur_stride = cur.stride;
  a.ref = ref.data, a.ref_stride = ref.stride;
  a.width = cur.width, a.height = cur.height;
  a.mb_cols = gvc::mb_count(cur.width);
  const int mb_rows = gvc::mb_count(cur.height);
  a.range = range;
  a.lambda = lambda;
  a.preds = preds;
  a.win_rows = 16 + 2 * range;
  a.pitch = (a.win_rows + 3) / 4 + 1;
  a.records = records;
  if (!reduce_only) {
    const size_t smem = 16 * sizeof(uint4) + sizeof(uint32_t) * size_t(a.win_rows) * a.pitch;
    seed_search_kernel<<<dim3(a.mb_cols, mb_rows), kThreads, smem, s>>>(a);
    GVC_TRY(gvc::cuda::check(cudaGetLastError(), "seed search kernel"));
  }
  seed_reduce_kernel<<<a.mb_cols * mb_rows, kReduceThreads, 0, s>>>(records, out);
  return gvc::cuda::check(cudaGetLastError(), "seed reduction kernel");
}

}  // namespace

int main(int argc, char** argv) {
  const char* content = std::getenv("GVC_ELEPHANTS");
  int iters = 100, reps = 7, range = 16;
  const int w = 1920, h = 1080, nframes = 8;
  const uint32_t lambda = 4;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--content") && i + 1 < argc) content = argv[++i];
    else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--range") && i + 1 < argc) range = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--content RAW_4096x2304_LUMA] [--iters N] [--range R]\n",
                   argv[0]);
      return 2;
    }
  }
  if (iters < 1 || range < gvc::kMinSearchRange || range > gvc::kMaxSearchRange) {
    std::fprintf(stderr, "bench: --iters must be positive and --range in 8..64\n");
    return 2;
  }
  gvc::cuda::Stream stream;
  open_bench_device(stream);
  cudaStream_t s = stream.get();

  int sw, sh;
  const auto src = load_source(content, &sw, &sh);
  std::printf("content: %s\n", content && *content ? content : "smooth random texture");
  Frames fr = make_frames(src, sw, sh, w, h, nframes, nullptr);
  const int cols = gvc::mb_count(w), rows = gvc::mb_count(h), nmb = cols * rows;
  const size_t field_bytes = size_t(nmb) * sizeof(MbPartitions);
  gvc::cuda::DeviceBuffer out_core, out_seed, records;
  BENCH_CHECK(out_core.reserve(field_bytes));
  BENCH_CHECK(out_seed.reserve(field_bytes));
  BENCH_CHECK(records.reserve(record_bytes(cols, rows)));
  gvc::cuda::MeCore core;

  // Every frame pair once; the outputs are pre-filled with different bytes so that a
  // partition left unwritten by either shows.
  std::vector<MbPartitions> hc(nmb), hs(nmb);
  long mismatches = 0;
  for (int i = 0; i < nframes; i++) {
    const auto& cur = fr.planes[(i + 1) % nframes];
    const auto& ref = fr.planes[i % nframes];
    BENCH_CUDA(cudaMemsetAsync(out_core.get(), 0xff, field_bytes, s));
    BENCH_CUDA(cudaMemsetAsync(out_seed.get(), 0xfe, field_bytes, s));
    BENCH_CHECK(core.integer_search(cur, ref, range, lambda, nullptr,
                                    out_core.get<MbPartitions>(), s));
    BENCH_CHECK(seed_search(cur, ref, range, lambda, nullptr, records.get<MvCost>(),
                            out_seed.get<MbPartitions>(), s));
    BENCH_CUDA(cudaMemcpyAsync(hc.data(), out_core.get(), field_bytes, cudaMemcpyDeviceToHost, s));
    BENCH_CUDA(cudaMemcpyAsync(hs.data(), out_seed.get(), field_bytes, cudaMemcpyDeviceToHost, s));
    BENCH_CHECK(stream.synchronize("check"));
    for (int m = 0; m < nmb; m++)
      for (int p = 0; p < kNumPartitions; p++) {
        const MvCost& c = hc[m].part[p];
        const MvCost& v = hs[m].part[p];
        if (c.mvx == v.mvx && c.mvy == v.mvy && c.cost == v.cost) continue;
        if (mismatches++ < 10)
          std::printf("mismatch: frame %d MB (%d, %d) partition %d: MeCore (%d, %d) cost %u, "
                      "seed (%d, %d) cost %u\n", i, m % cols, m / cols, p, c.mvx, c.mvy, c.cost,
                      v.mvx, v.mvy, v.cost);
      }
  }
  std::printf("check: %d frames x %d MBs x %d partitions, %ld mismatches\n", nframes, nmb,
              kNumPartitions, mismatches);

  auto cur = [&](int i) -> const gvc::cuda::DevicePlane& { return fr.planes[(i + 1) % nframes]; };
  auto ref = [&](int i) -> const gvc::cuda::DevicePlane& { return fr.planes[i % nframes]; };
  const double ms_core = median_ms_per_frame(
      [&](int i) {
        BENCH_CHECK(core.integer_search(cur(i), ref(i), range, lambda, nullptr,
                                        out_core.get<MbPartitions>(), s));
      },
      iters, reps, s);
  const double ms_seed = median_ms_per_frame(
      [&](int i) {
        BENCH_CHECK(seed_search(cur(i), ref(i), range, lambda, nullptr, records.get<MvCost>(),
                                out_seed.get<MbPartitions>(), s));
      },
      iters, reps, s);
  const double ms_reduce = median_ms_per_frame(
      [&](int i) {
        BENCH_CHECK(seed_search(cur(i), ref(i), range, lambda, nullptr, records.get<MvCost>(),
                                out_seed.get<MbPartitions>(), s, true));
      },
      iters, reps, s);

  std::printf("\n%dx%d range %d integer, lambda %u, no predictors, %d frames x %d repeats (median)\n",
              w, h, range, lambda, iters, reps);
  std::printf("%-48s %8.4f ms/frame %8.0f fps\n", "MeCore (warp per MB, in-warp reduction)",
              ms_core, 1e3 / ms_core);
  std::printf("%-48s %8.4f ms/frame %8.0f fps  %.2fx MeCore's time (kernel 2: %.4f ms)\n",
              "seed 000 (block per MB, records, kernel 2)", ms_seed, 1e3 / ms_seed,
              ms_seed / ms_core, ms_reduce);
  std::printf("per-thread records of the seed variant: %.1f MB of global memory "
              "(%d MBs x %d threads x %d partitions x %zu B)\n", record_bytes(cols, rows) / 1e6,
              nmb, kThreads, kNumPartitions, sizeof(MvCost));
  return mismatches ? 1 : 0;
}
