// hevc_intra.cu: HEVC intra sample prediction (8.4.4.2) plus residual of a picture's intra blocks, one warp per block in dependency order
#include "gpu/hevc_intra.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "gpu/sync.cuh"

namespace gvc {
namespace cuda {

namespace {

using PackedBlock = HevcIntraCore::PackedBlock;

constexpr int kWarps = 8;  // per thread block
constexpr int kThreads = kWarps * 32;
constexpr int kRefs = 4 * 32 + 1;     // 4N+1 reference samples at most
constexpr int kAngRef = 3 * 32 + 1;   // ref[-N..2N] of the angular modes

// Tables 8-4 and 8-5, as in common/dsp/hevc_intra.cpp.
__constant__ int8_t c_angle[35] = {0,   0,   32,  26,  21,  17,  13,  9,  5,  2,  0,  -2,
                                   -5,  -9,  -13, -17, -21, -26, -32, -26, -21, -17, -13, -9,
                                   -5,  -2,  0,   2,   5,   9,   13,  17,  21,  26,  32};
__constant__ int16_t c_inv_angle[35] = {0,     0,     0,     0,     0,     0,     0,    0,    0,
                                        0,     0,     -4096, -1638, -910,  -630,  -482, -390, -315,
                                        -256,  -315,  -390,  -482,  -630,  -910,  -1638, -4096, 0,
                                        0,     0,     0,     0,     0,     0,     0,    0};

struct Batch {
  const PackedBlock* blocks;
  const uint32_t* deps;
  unsigned* done;    // one flag per block, then the ticket counter
  const int16_t* residuals;
  HevcPlane planes[3];
  int bit_depth[3];
  int n_blocks;
  bool strong;
};

// Samples written by other warps of the launch are read from L2 (ld.global.cg), never from a
// possibly stale L1 line.
__device__ __forceinline__ int plane_at(const HevcPlane& p, int x, int y) {
  return __ldcg(reinterpret_cast<const unsigned short*>(p.data) + ptrdiff_t(y) * p.stride + x);
}

// Position of reference index i (the order of HevcIntraRefs) relative to the block.
__device__ __forceinline__ void ref_pos(int i, int n, int& dx, int& dy) {
  if (i < 2 * n) {
    dx = -1;
    dy = 2 * n - 1 - i;
  } else {
    dx = i - 2 * n - 1;  // -1 for the corner
    dy = -1;
  }
}

__device__ __forceinline__ int unit_of(int i, int n, int u) {
  const int units = 2 * n / u;
  if (i < 2 * n) return i / u;
  if (i == 2 * n) return units;
  return units + 1 + (i - 2 * n - 1) / u;
}

__device__ __forceinline__ int first_of_unit(int k, int n, int u) {
  const int units = 2 * n / u;
  if (k < units) return k * u;
  if (k == units) return 2 * n;
  return 2 * n + 1 + (k - units - 1) * u;
}

__device__ __forceinline__ int last_of_unit(int k, int n, int u) {
  const int units = 2 * n / u;
  if (k < units) return k * u + u - 1;
  if (k == units) return 2 * n;
  return 2 * n + 1 + (k - units - 1) * u + u - 1;
}

__device__ __forceinline__ int clip_to(int v, int maxv) { return v < 0 ? 0 : (v > maxv ? maxv : v); }

// One block by one warp: 8.4.4.2.2 substitution (each sample takes its value from the sample
// the CPU's sequential substitution would copy), 8.4.4.2.3 filtering, 8.4.4.2.4-6 prediction,
// then the residual with clipping (8.6.7).
__device__ void predict_block(const Batch& b, const PackedBlock& blk, int lane, int* sp, int* spf, int* sref) {
  const int n = 1 << blk.log2_size;
  const int c = blk.c_idx;
  const int u = c ? 2 : 4;
  const int bd = b.bit_depth[c];
  const int maxv = (1 << bd) - 1;
  const HevcPlane& pl = b.planes[c];
  const uint64_t mask = blk.avail;
  const int n_total = 4 * n + 1;

  for (int i = lane; i < n_total; i += 32) {
    const int k = unit_of(i, n, u);
    int src = -1;
    if ((mask >> k) & 1) {
      src = i;
    } else {
      const uint64_t below = mask & ((uint64_t(1) << k) - 1);
      if (below)
        src = last_of_unit(63 - __clzll(static_cast<long long>(below)), n, u);
      else if (mask)
        src = first_of_unit(__ffsll(static_cast<long long>(mask)) - 1, n, u);
    }
    int v = 1 << (bd - 1);
    if (src >= 0) {
      int dx, dy;
      ref_pos(src, n, dx, dy);
      v = plane_at(pl, blk.x + dx, blk.y + dy);
    }
    sp[i] = v;
  }
  __syncwarp();

  const int mode = blk.mode;
  const int* p = sp;
  if (c == 0 && mode != 1 && n != 4) {
    const int min_dist = min(abs(mode - 26), abs(mode - 10));
    const int thres = n == 8 ? 7 : (n == 16 ? 1 : 0);
    if (min_dist > thres) {
      const int corner = sp[2 * n], bottom = sp[0], right = sp[4 * n];
      const int thr = 1 << (bd - 5);
      const bool bilinear = b.strong && n == 32 && abs(corner + right - 2 * sp[2 * n + n]) < thr &&
                            abs(corner + bottom - 2 * sp[2 * n - n]) < thr;
      for (int i = lane; i < n_total; i += 32) {
        int v;
        if (bilinear) {
          if (i == 0)
            v = bottom;
          else if (i == 4 * n)
            v = right;
          else if (i == 2 * n)
            v = corner;
          else if (i < 2 * n)
            v = ((63 - (2 * n - 1 - i)) * corner + (2 * n - i) * bottom + 32) >> 6;
          else
            v = ((63 - (i - 2 * n - 1)) * corner + (i - 2 * n) * right + 32) >> 6;
        } else {
          v = (i == 0 || i == n_total - 1) ? sp[i] : (sp[i - 1] + 2 * sp[i] + sp[i + 1] + 2) >> 2;
        }
        spf[i] = v;
      }
      __syncwarp();
      p = spf;
    }
  }
  // left(y) = p[-1][y], top(x) = p[x][-1], for -1..2N-1
#define LEFT(y) p[2 * n - 1 - (y)]
#define TOP(x) p[2 * n + 1 + (x)]

  int dc = 0;
  const int angle = c_angle[mode];
  const bool vertical = mode >= 18;
  int* ref = sref + n;  // ref[-n..2n]
  if (mode == 1) {
    int sum = 0;
    for (int i = lane; i < 2 * n; i += 32) sum += i < n ? TOP(i) : LEFT(i - n);
    for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    dc = (sum + n) >> (blk.log2_size + 1);
  } else if (mode >= 2) {
    for (int x = lane; x <= 2 * n; x += 32) {
      if (x <= n || angle >= 0) ref[x] = vertical ? TOP(x - 1) : LEFT(x - 1);
    }
    if (angle < 0 && ((n * angle) >> 5) < -1) {
      const int lo = (n * angle) >> 5;
      for (int x = lo + lane; x <= -1; x += 32) {
        const int s = (x * c_inv_angle[mode] + 128) >> 8;
        ref[x] = vertical ? LEFT(s - 1) : TOP(s - 1);
      }
    }
    __syncwarp();
  }

  const int edge = c == 0 && n < 32;
  const int16_t* res = blk.residual >= 0 ? b.residuals + blk.residual : nullptr;
  for (int s = lane; s < n * n; s += 32) {
    const int x = s & (n - 1), y = s >> blk.log2_size;
    int v;
    if (mode == 0) {
      v = ((n - 1 - x) * LEFT(y) + (x + 1) * TOP(n) + (n - 1 - y) * TOP(x) + (y + 1) * LEFT(n) + n) >>
          (blk.log2_size + 1);
    } else if (mode == 1) {
      v = dc;
      if (edge) {
        if (x == 0 && y == 0)
          v = (LEFT(0) + 2 * dc + TOP(0) + 2) >> 2;
        else if (y == 0)
          v = (TOP(x) + 3 * dc + 2) >> 2;
        else if (x == 0)
          v = (LEFT(y) + 3 * dc + 2) >> 2;
      }
    } else {
      const int j = vertical ? y : x, i = vertical ? x : y;
      const int i_idx = ((j + 1) * angle) >> 5, i_fact = ((j + 1) * angle) & 31;
      v = i_fact ? ((32 - i_fact) * ref[i + i_idx + 1] + i_fact * ref[i + i_idx + 2] + 16) >> 5
                 : ref[i + i_idx + 1];
      if (edge && mode == 26 && x == 0) v = clip_to(TOP(0) + ((LEFT(y) - LEFT(-1)) >> 1), maxv);
      if (edge && mode == 10 && y == 0) v = clip_to(LEFT(0) + ((TOP(x) - TOP(-1)) >> 1), maxv);
    }
#undef LEFT
#undef TOP
    const int px = blk.x + x, py = blk.y + y;
    if (px < pl.width && py < pl.height) {
      if (res) v = clip_to(v + res[s], maxv);
      pl.data[ptrdiff_t(py) * pl.stride + px] = static_cast<uint16_t>(v);
    }
  }
}

__global__ void __launch_bounds__(kThreads) intra_kernel(const Batch b) {
  __shared__ int s_p[kWarps][kRefs], s_pf[kWarps][kRefs], s_ref[kWarps][kAngRef];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned* ticket = b.done + b.n_blocks;
  for (;;) {
    int i = 0;
    if (lane == 0) i = int(atomicAdd(ticket, 1u));
    i = __shfl_sync(0xffffffffu, i, 0);
    if (i >= b.n_blocks) return;
    const PackedBlock blk = b.blocks[i];
    for (uint32_t d = blk.dep_begin + lane; d < blk.dep_end; d += 32) {
      const unsigned* flag = b.done + b.deps[d];
      while (!load_acquire(flag)) __nanosleep(20);
    }
    __syncwarp();
    predict_block(b, blk, lane, s_p[warp], s_pf[warp], s_ref[warp]);
    __threadfence();
    __syncwarp();
    if (lane == 0) store_release(b.done + i, 1u);
  }
}

Status bad_block(size_t i, const HevcIntraBlock& blk, const char* why) {
  return Status::error("HEVC intra: block " + std::to_string(i) + " (c_idx " + std::to_string(blk.c_idx) +
                       ", log2 size " + std::to_string(blk.log2_size) + ", at " + std::to_string(blk.x) + "," +
                       std::to_string(blk.y) + "): " + why);
}

}  // namespace

Status HevcIntraCore::pack(const std::vector<HevcIntraBlock>& blocks, const std::vector<HevcTu>& tus,
                           const int plane_w[3], const int plane_h[3], int log2_ctb_size, Packed& pk) {
  if (log2_ctb_size < 3 || log2_ctb_size > 6) return Status::error("HEVC intra: log2 CTB size must be 3..6");
  pk.blocks.clear();
  pk.deps.clear();
  if (blocks.empty()) return {};
  if (blocks.size() >= (size_t(1) << 31)) return Status::error("HEVC intra: too many blocks");
  int uw[3], uh[3];
  for (int c = 0; c < 3; ++c) {
    if (plane_w[c] <= 0 || plane_h[c] <= 0 || plane_w[c] > 65535 || plane_h[c] > 65535)
      return Status::error("HEVC intra: plane " + std::to_string(c) + " is missing or malformed");
    pk.plane_w[c] = plane_w[c];
    pk.plane_h[c] = plane_h[c];
    const int u = c ? 2 : 4;
    uw[c] = (plane_w[c] + u - 1) / u;
    uh[c] = (plane_h[c] + u - 1) / u;
    if (pk.owner_w[c] != uw[c] || pk.owner_h[c] != uh[c]) {
      pk.owner[c].assign(size_t(uw[c]) * uh[c], -1);
      pk.owner_w[c] = uw[c];
      pk.owner_h[c] = uh[c];
    }
  }

  // Dependencies: the distinct earlier intra blocks that own an available reference unit.
  std::vector<PackedBlock>& packed = pk.blocks;
  std::vector<uint32_t>& deps = pk.deps;
  packed.resize(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    const HevcIntraBlock& blk = blocks[i];
    if (blk.c_idx > 2) return bad_block(i, blk, "c_idx must be 0..2");
    if (blk.log2_size < 2 || blk.log2_size > (blk.c_idx ? 4 : 5)) return bad_block(i, blk, "size out of range");
    if (blk.mode > 34) return bad_block(i, blk, "predModeIntra above 34");
    const int c = blk.c_idx, u = c ? 2 : 4, n = 1 << blk.log2_size, units = 2 * n / u;
    if (blk.x % u || blk.y % u || blk.x >= plane_w[c] || blk.y >= plane_h[c])
      return bad_block(i, blk, "position outside its plane or off the unit grid");
    if (blk.avail >> (2 * units + 1)) return bad_block(i, blk, "availability bits beyond 4N+1 samples");
    int32_t res = -1;
    if (blk.tu >= 0) {
      if (size_t(blk.tu) >= tus.size()) return bad_block(i, blk, "residual index beyond the TU list");
      const HevcTu& tu = tus[size_t(blk.tu)];
      if (tu.x != blk.x || tu.y != blk.y || tu.c_idx != blk.c_idx || tu.log2_size != blk.log2_size)
        return bad_block(i, blk, "its TU covers another block");
      res = int32_t(tu.coeff_offset);
    }
    const uint32_t dep_begin = uint32_t(deps.size());
    std::vector<int32_t>& own = pk.owner[c];
    const int ux = blk.x / u, uy = blk.y / u;
    int32_t last_dep = -1;  // the owner last found valid: neighbouring units mostly share one
    for (int k = 0; k <= 2 * units; ++k) {
      if (!((blk.avail >> k) & 1)) continue;
      int x, y;  // the unit, in units
      if (k < units) {
        x = ux - 1;
        y = uy + units - 1 - k;
      } else if (k == units) {
        x = ux - 1;
        y = uy - 1;
      } else {
        x = ux + (k - units - 1);
        y = uy - 1;
      }
      if (x < 0 || y < 0 || x >= uw[c] || y >= uh[c]) return bad_block(i, blk, "an available sample lies outside the plane");
      // The owner map is not cleared between calls: an entry counts only if it names an
      // earlier block of this call that covers the unit (else no earlier block does: it
      // would have overwritten the entry).
      const int32_t o = own[size_t(y) * uw[c] + x];
      if (o == last_dep || o < 0 || size_t(o) >= i) continue;  // last_dep is in the list already
      const HevcIntraBlock& ob = blocks[size_t(o)];
      const int on = (1 << ob.log2_size) / u, ox = ob.x / u, oy = ob.y / u;
      if (ob.c_idx != c || x < ox || x >= ox + on || y < oy || y >= oy + on) continue;
      last_dep = o;
      if (std::find(deps.begin() + dep_begin, deps.end(), uint32_t(o)) == deps.end()) deps.push_back(uint32_t(o));
    }
    for (int y = uy; y < std::min(uy + n / u, uh[c]); ++y)
      for (int x = ux; x < std::min(ux + n / u, uw[c]); ++x) own[size_t(y) * uw[c] + x] = int32_t(i);
    PackedBlock& p = packed[i];
    p.avail = blk.avail;
    p.dep_begin = dep_begin;
    p.dep_end = uint32_t(deps.size());
    p.residual = res;
    p.x = blk.x;
    p.y = blk.y;
    p.c_idx = blk.c_idx;
    p.log2_size = blk.log2_size;
    p.mode = blk.mode;
    p.pad = 0;
  }
  return order_by_wavefront(blocks, log2_ctb_size, pk);
}

Status HevcIntraCore::launch(const Packed& p, const PackedBlock* blocks, const uint32_t* deps,
                             const int16_t* residuals, const HevcPlane planes[3], int bit_depth_luma,
                             int bit_depth_chroma, bool strong_intra_smoothing, cudaStream_t s) {
  if (bit_depth_luma < 8 || bit_depth_luma > 12 || bit_depth_chroma < 8 || bit_depth_chroma > 12)
    return Status::error("HEVC intra: bit depths must be 8..12");
  if (p.blocks.empty()) return {};
  for (int c = 0; c < 3; ++c) {
    const HevcPlane& pl = planes[c];
    if (!pl.data || pl.width != p.plane_w[c] || pl.height != p.plane_h[c] || pl.stride < pl.width)
      return Status::error("HEVC intra: plane " + std::to_string(c) +
                           " is missing or malformed, or not of the size packed for");
  }
  if (!sm_count_) {
    int dev = 0;
    GVC_CUDA_TRY(cudaGetDevice(&dev));
    GVC_CUDA_TRY(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, dev));
  }
  const size_t flag_bytes = (p.blocks.size() + 1) * sizeof(unsigned);
  // grown with a quarter to spare: cudaFree waits for the whole device
  if (flags_dev_.size() < flag_bytes) GVC_TRY(flags_dev_.reserve(flag_bytes + flag_bytes / 4));
  GVC_CUDA_TRY(cudaMemsetAsync(flags_dev_.get(), 0, flag_bytes, s));

  Batch b{};
  b.blocks = blocks;
  b.deps = deps;
  b.done = flags_dev_.get<unsigned>();
  b.residuals = residuals;
  for (int c = 0; c < 3; ++c) b.planes[c] = planes[c];
  b.bit_depth[0] = bit_depth_luma;
  b.bit_depth[1] = b.bit_depth[2] = bit_depth_chroma;
  b.n_blocks = int(p.blocks.size());
  b.strong = strong_intra_smoothing;
  const int needed = (b.n_blocks + kWarps - 1) / kWarps;
  const int grid = std::max(1, std::min(needed, sm_count_ * 4));
  intra_kernel<<<grid, kThreads, 0, s>>>(b);
  GVC_CUDA_TRY(cudaGetLastError());
  return {};
}

Status HevcIntraCore::run(const std::vector<HevcIntraBlock>& blocks, const std::vector<HevcTu>& tus,
                          const int16_t* residuals, const HevcPlane planes[3], int bit_depth_luma,
                          int bit_depth_chroma, bool strong_intra_smoothing, int log2_ctb_size,
                          cudaStream_t s) {
  if (log2_ctb_size < 3 || log2_ctb_size > 6) return Status::error("HEVC intra: log2 CTB size must be 3..6");
  if (bit_depth_luma < 8 || bit_depth_luma > 12 || bit_depth_chroma < 8 || bit_depth_chroma > 12)
    return Status::error("HEVC intra: bit depths must be 8..12");
  if (blocks.empty()) return {};
  for (int c = 0; c < 3; ++c) {
    const HevcPlane& p = planes[c];
    if (!p.data || p.width <= 0 || p.height <= 0 || p.width > 65535 || p.height > 65535 || p.stride < p.width)
      return Status::error("HEVC intra: plane " + std::to_string(c) + " is missing or malformed");
  }
  const int w[3] = {planes[0].width, planes[1].width, planes[2].width};
  const int h[3] = {planes[0].height, planes[1].height, planes[2].height};
  GVC_TRY(pack(blocks, tus, w, h, log2_ctb_size, packed_));

  const size_t block_bytes = packed_.blocks.size() * sizeof(PackedBlock);
  const size_t dep_bytes = std::max<size_t>(packed_.deps.size(), 1) * sizeof(uint32_t);
  // grown with a quarter to spare: cudaFree waits for the whole device
  if (blocks_dev_.size() < block_bytes) GVC_TRY(blocks_dev_.reserve(block_bytes + block_bytes / 4));
  if (deps_dev_.size() < dep_bytes) GVC_TRY(deps_dev_.reserve(dep_bytes + dep_bytes / 4));
  // through pinned staging: pageable copies would be staged synchronously on this thread
  uint8_t* staging = nullptr;
  GVC_TRY(staging_.acquire(block_bytes + dep_bytes, staging));
  std::memcpy(staging, packed_.blocks.data(), block_bytes);
  if (!packed_.deps.empty()) std::memcpy(staging + block_bytes, packed_.deps.data(), packed_.deps.size() * sizeof(uint32_t));
  GVC_CUDA_TRY(cudaMemcpyAsync(blocks_dev_.get(), staging, block_bytes, cudaMemcpyHostToDevice, s));
  if (!packed_.deps.empty())
    GVC_CUDA_TRY(cudaMemcpyAsync(deps_dev_.get(), staging + block_bytes, packed_.deps.size() * sizeof(uint32_t),
                                 cudaMemcpyHostToDevice, s));
  GVC_TRY(staging_.release(s));
  return launch(packed_, blocks_dev_.get<PackedBlock>(), deps_dev_.get<uint32_t>(), residuals, planes, bit_depth_luma,
                bit_depth_chroma, strong_intra_smoothing, s);
}

// Decoding order serialises the launch: the warps in flight hold consecutive tickets, which
// lie in one or two CTB rows, and each row waits for the one above. Ordered by CTB wavefront
// (CTB column + 2 * CTB row, seed 001's schedule) and decoding order within a wave, the
// tickets in flight spread over every CTB row that can progress. The dependencies of a block
// lie in its own CTB or in the CTBs left, above-left, above and above-right of it (6.4.1), all
// on earlier waves, so they keep smaller tickets; the order is checked, and decoding order is
// kept where it does not hold (then the launch is slower, never stuck).
Status HevcIntraCore::order_by_wavefront(const std::vector<HevcIntraBlock>& blocks, int log2_ctb_size, Packed& pk) {
  const size_t n = blocks.size();
  pk.wave.resize(n);
  int waves = 0;
  for (size_t i = 0; i < n; ++i) {
    const int sh = blocks[i].c_idx ? 1 : 0;
    pk.wave[i] = ((blocks[i].x << sh) >> log2_ctb_size) + 2 * ((blocks[i].y << sh) >> log2_ctb_size);
    waves = std::max(waves, pk.wave[i] + 1);
  }
  // counting sort, stable: pk.pos[i] is block i's ticket
  std::vector<uint32_t>& start = pk.wave_start;
  start.assign(size_t(waves) + 1, 0);
  for (size_t i = 0; i < n; ++i) ++start[size_t(pk.wave[i]) + 1];
  for (int w = 0; w < waves; ++w) start[size_t(w) + 1] += start[size_t(w)];
  pk.pos.resize(n);
  for (size_t i = 0; i < n; ++i) pk.pos[i] = start[size_t(pk.wave[i])]++;
  for (size_t i = 0; i < n; ++i)
    for (uint32_t d = pk.blocks[i].dep_begin; d < pk.blocks[i].dep_end; ++d)
      if (pk.pos[pk.deps[d]] >= pk.pos[i]) return {};  // keep decoding order
  pk.reordered.resize(n);
  pk.reordered_deps.clear();
  for (size_t i = 0; i < n; ++i) {
    PackedBlock& p = pk.reordered[pk.pos[i]];
    p = pk.blocks[i];
    p.dep_begin = 0;  // set below, in ticket order
  }
  std::vector<uint32_t>& order = pk.order;
  order.resize(n);
  for (size_t i = 0; i < n; ++i) order[pk.pos[i]] = uint32_t(i);
  for (size_t k = 0; k < n; ++k) {
    const PackedBlock& src = pk.blocks[order[k]];
    PackedBlock& p = pk.reordered[k];
    p.dep_begin = uint32_t(pk.reordered_deps.size());
    for (uint32_t d = src.dep_begin; d < src.dep_end; ++d) pk.reordered_deps.push_back(pk.pos[pk.deps[d]]);
    p.dep_end = uint32_t(pk.reordered_deps.size());
  }
  pk.blocks.swap(pk.reordered);
  pk.deps.swap(pk.reordered_deps);
  return {};
}

}  // namespace cuda
}  // namespace gvc
