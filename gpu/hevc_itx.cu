// hevc_itx.cu: HEVC scaling, inverse transforms and residual addition (8.6.2-8.6.4, 8.6.7) for a picture's TUs in one launch
#include "gpu/hevc_itx.h"

#include <cstring>
#include <string>

namespace gvc {
namespace cuda {

namespace {

using PackedTu = HevcResidualCore::PackedTu;

constexpr int kThreads = 128;  // per block: kThreads / nTbS TUs of one group, nTbS threads each

// Kernel variants, one group of TUs each: 0 = 4x4 DST-VII; 1..4 = DCT, log2(nTbS) 2..5;
// 5..8 = no transform (transform skip or transquant bypass), log2(nTbS) 2..5.
constexpr int kGroups = 9;
constexpr int kGroupDst = 0;
constexpr int kGroupDct = 1;     // + log2(nTbS) - 2
constexpr int kGroupDirect = 5;  // + log2(nTbS) - 2

// The matrix table on the device: the flat 16s of the largest TU, then ScalingFactor
// [sizeId][matrixId], sizes ascending.
constexpr size_t kFlatBytes = 32 * 32;

constexpr size_t matrix_offset(int size_id, int matrix_id) {
  size_t o = kFlatBytes;
  for (int s = 0; s < size_id; ++s) o += 6 * (size_t(16) << (2 * s));
  return o + size_t(matrix_id) * (size_t(16) << (2 * size_id));
}
constexpr size_t kTableBytes = matrix_offset(4, 0);

// 8.6.4.2: transMatrix, built as common/dsp/hevc_itx.cpp builds it; m[k = frequency][n = sample].
struct TransMatrix {
  int32_t m[32][32];  // 32 bits: IMAD takes the constant bank operand directly
};

constexpr TransMatrix make_trans_matrix() {
  // 64*sqrt(2)*cos(j*pi/64) as the standard rounds it, j = 0..32.
  constexpr int cos_table[33] = {64, 90, 90, 90, 89, 88, 87, 85, 83, 82, 80, 78, 75, 73, 70, 67, 64,
                                 61, 57, 54, 50, 46, 43, 38, 36, 31, 25, 22, 18, 13, 9,  4,  0};
  TransMatrix t{};
  for (int k = 0; k < 32; ++k)
    for (int n = 0; n < 32; ++n) {
      if (k == 0) {
        t.m[k][n] = 64;
        continue;
      }
      int j = ((2 * n + 1) * k) % 128;
      if (j > 64) j = 128 - j;
      t.m[k][n] = j <= 32 ? cos_table[j] : -cos_table[64 - j];
    }
  return t;
}

struct DstMatrix {
  int32_t m[4][4];
};

// Coefficient indices are compile-time constants in the unrolled passes and the same for every
// thread of a warp: constant memory serves them as operands.
__constant__ TransMatrix c_trans = make_trans_matrix();
__constant__ DstMatrix c_dst = {{{29, 55, 74, 84}, {74, 74, 0, -74}, {84, -29, -74, 55}, {55, -84, 74, -29}}};
__constant__ int c_level_scale[6] = {40, 45, 51, 57, 64, 72};

struct Group {
  int first_block;  // first block of the grid that works on this group
  int first_tu;     // first of its TUs in Batch::tus
  int count;
};

struct Batch {
  const PackedTu* tus;
  const int16_t* levels;
  const uint8_t* matrices;
  HevcPlane planes[3];  // device memory
  int16_t* residuals;   // null: add to the planes; else store each TU's residual at coeff_offset
  int bit_depth[3];     // by c_idx
  Group groups[kGroups];
};

template <int kLog2, bool kDst>
__device__ __forceinline__ int coef(int k, int n) {
  if (kDst) return c_dst.m[k][n];
  return c_trans.m[k << (5 - kLog2)][n];
}

__device__ __forceinline__ int32_t clip16(int32_t v) { return v < -32768 ? -32768 : (v > 32767 ? 32767 : v); }

// 8.6.3 for one TU: levelScale << (qP / 6), and bdShift with its rounding.
struct Scale {
  int64_t factor;
  int64_t round;
  int shift;
};

__device__ __forceinline__ Scale make_scale(int qp, int bit_depth, int log2_size) {
  Scale s;
  s.shift = bit_depth + log2_size - 5;
  s.factor = int64_t(c_level_scale[qp % 6]) << (qp / 6);
  s.round = int64_t(1) << (s.shift - 1);
  return s;
}

// A level of 0 gives (round >> shift) = 0, as the CPU's shortcut does.
__device__ __forceinline__ int32_t scale_level(int level, int m, const Scale& s) {
  const int64_t v = (int64_t(level * m) * s.factor + s.round) >> s.shift;
  return static_cast<int32_t>(v < -32768 ? -32768 : (v > 32767 ? 32767 : v));
}

// 8.6.7: column x of a TU whose residual r[y * pitch] starts at row y0, clipped to the plane.
__device__ __forceinline__ void add_column(const HevcPlane& p, int x, int y0, int n, int bit_depth,
                                           const int32_t* r, int pitch) {
  if (x >= p.width) return;
  const int maxv = (1 << bit_depth) - 1;
  uint16_t* dst = p.data + ptrdiff_t(y0) * p.stride + x;
  for (int y = 0; y < n && y0 + y < p.height; ++y, dst += p.stride) {
    const int v = *dst + r[y * pitch];
    *dst = static_cast<uint16_t>(v < 0 ? 0 : (v > maxv ? maxv : v));
  }
}

// One group of transformed TUs: thread `lane` of a TU scales column `lane` and runs the column
// pass on it, then runs the row pass on row `lane`, then adds column `lane` to the plane.
// Shared memory rows have nTbS + 1 words so that both passes are free of bank conflicts.
template <int kLog2, bool kDst>
__device__ void transform_group(const Batch& b, const Group& grp, int block, int32_t* smem) {
  constexpr int N = 1 << kLog2, kPerBlock = kThreads / N, kPitch = N + 1;
  const int slot = threadIdx.x / N, lane = threadIdx.x % N;
  const int t = block * kPerBlock + slot;
  const bool active = t < grp.count;  // inactive threads still meet every __syncthreads
  int32_t* s = smem + slot * N * kPitch;  // s[y * kPitch + x]
  PackedTu tu{};
  int bit_depth = 8;
  if (active) {
    tu = b.tus[grp.first_tu + t];
    bit_depth = b.bit_depth[tu.c_idx];
    const int16_t* lv = b.levels + tu.coeff_offset;  // raster, x fastest: d[x][y] at y * N + x
    const uint8_t* m = b.matrices + tu.scaling_offset;
    const Scale sc = make_scale(tu.qp, bit_depth, kLog2);
    int32_t d[N];  // column `lane`: d[k] = d[lane][k]
#pragma unroll
    for (int k = 0; k < N; ++k) d[k] = scale_level(lv[k * N + lane], m[k * N + lane], sc);
    // 8.6.4.2 step 1-2: e[x][y] = sum_k transMatrix[k][y] * d[x][k] (|e| < 2^27 fits 32 bits),
    // g = Clip3(coeffMin, coeffMax, (e + 64) >> 7).
#pragma unroll
    for (int y = 0; y < N; ++y) {
      int32_t e = 0;
#pragma unroll
      for (int k = 0; k < N; ++k) e += coef<kLog2, kDst>(k, y) * d[k];
      s[y * kPitch + lane] = clip16((e + 64) >> 7);
    }
  }
  __syncthreads();
  if (active) {
    // 8.6.4.2 step 3-4 on row `lane`: r[x][y] = (sum_k transMatrix[k][x] * g[k][y] + round) >>
    // bdShift; |g| <= 32768 bounds the sum as in the column pass.
    const int bd_shift = 20 - bit_depth;
    const int32_t round = 1 << (bd_shift - 1);
    int32_t* row = s + lane * kPitch;
    int32_t g[N];
#pragma unroll
    for (int k = 0; k < N; ++k) g[k] = row[k];
#pragma unroll
    for (int x = 0; x < N; ++x) {
      int32_t r = 0;
#pragma unroll
      for (int k = 0; k < N; ++k) r += coef<kLog2, kDst>(k, x) * g[k];
      row[x] = (r + round) >> bd_shift;
    }
  }
  __syncthreads();
  if (!active) return;
  if (b.residuals) {
    int16_t* out = b.residuals + tu.coeff_offset + lane;
    for (int y = 0; y < N; ++y) out[y * N] = static_cast<int16_t>(clip16(s[y * kPitch + lane]));
  } else {
    add_column(b.planes[tu.c_idx], tu.x + lane, tu.y, N, bit_depth, s + lane, kPitch);
  }
}

// One group of TUs without transform, one thread per column: transquant bypass (the levels are
// the residual) or transform skip (8.6.4.2: r = ((d << tsShift) + round) >> bdShift, tsShift =
// 5 + log2(nTbS) as the CPU reference has it).
template <int kLog2>
__device__ void direct_group(const Batch& b, const Group& grp, int block) {
  constexpr int N = 1 << kLog2, kPerBlock = kThreads / N;
  const int slot = threadIdx.x / N, lane = threadIdx.x % N;
  const int t = block * kPerBlock + slot;
  if (t >= grp.count) return;
  const PackedTu tu = b.tus[grp.first_tu + t];
  const HevcPlane& p = b.planes[tu.c_idx];
  const int x = tu.x + lane;
  if (x >= p.width) return;
  const int bit_depth = b.bit_depth[tu.c_idx];
  const int maxv = (1 << bit_depth) - 1;
  const int16_t* lv = b.levels + tu.coeff_offset + lane;
  const uint8_t* m = b.matrices + tu.scaling_offset + lane;
  const Scale sc = make_scale(tu.qp, bit_depth, kLog2);
  const int bd_shift = 20 - bit_depth;
  const int32_t round = 1 << (bd_shift - 1);
  if (b.residuals) {
    int16_t* out = b.residuals + tu.coeff_offset + lane;
    for (int y = 0; y < N; ++y) {
      const int level = lv[y * N];
      const int32_t r = tu.bypass ? level : (scale_level(level, m[y * N], sc) * (1 << (5 + kLog2)) + round) >> bd_shift;
      out[y * N] = static_cast<int16_t>(clip16(r));
    }
    return;
  }
  uint16_t* dst = p.data + ptrdiff_t(tu.y) * p.stride + x;
  for (int y = 0; y < N && tu.y + y < p.height; ++y, dst += p.stride) {
    const int level = lv[y * N];
    const int32_t r = tu.bypass ? level : (scale_level(level, m[y * N], sc) * (1 << (5 + kLog2)) + round) >> bd_shift;
    const int v = *dst + r;
    *dst = static_cast<uint16_t>(v < 0 ? 0 : (v > maxv ? maxv : v));
  }
}

constexpr int kSharedWords = kThreads * (32 + 1);  // the 32x32 group's need, the largest

// The whole batch: each block finds its group (block-uniform, so __syncthreads inside is safe).
__global__ void __launch_bounds__(kThreads) residual_kernel(const Batch b) {
  __shared__ int32_t smem[kSharedWords];
  int g = 0;
  while (g + 1 < kGroups && int(blockIdx.x) >= b.groups[g + 1].first_block) ++g;
  const Group& grp = b.groups[g];
  const int block = int(blockIdx.x) - grp.first_block;
  switch (g) {
    case kGroupDst: transform_group<2, true>(b, grp, block, smem); break;
    case kGroupDct + 0: transform_group<2, false>(b, grp, block, smem); break;
    case kGroupDct + 1: transform_group<3, false>(b, grp, block, smem); break;
    case kGroupDct + 2: transform_group<4, false>(b, grp, block, smem); break;
    case kGroupDct + 3: transform_group<5, false>(b, grp, block, smem); break;
    case kGroupDirect + 0: direct_group<2>(b, grp, block); break;
    case kGroupDirect + 1: direct_group<3>(b, grp, block); break;
    case kGroupDirect + 2: direct_group<4>(b, grp, block); break;
    default: direct_group<5>(b, grp, block); break;
  }
}

int group_of(const HevcTu& tu) {
  if (tu.transquant_bypass || tu.transform_skip) return kGroupDirect + tu.log2_size - 2;
  if (tu.dst) return kGroupDst;
  return kGroupDct + tu.log2_size - 2;
}

// Offset of the TU's scaling factors in the device table, or -1 when `scaling` does not hold
// its matrix. Bypass TUs are not scaled.
long scaling_offset(const HevcTu& tu, const HevcScalingMatrices& scaling) {
  if (tu.transquant_bypass || !tu.scaling) return 0;
  const int size_id = tu.log2_size - 2;
  for (int j = 0; j < 6; ++j)
    if (scaling.m[size_id][j] == tu.scaling) return long(matrix_offset(size_id, j));
  return -1;
}

Status bad_tu(size_t i, const HevcTu& tu, const char* why) {
  return Status::error("HEVC residual: TU " + std::to_string(i) + " (c_idx " + std::to_string(tu.c_idx) +
                       ", log2 size " + std::to_string(tu.log2_size) + ", at " + std::to_string(tu.x) + "," +
                       std::to_string(tu.y) + "): " + why);
}

}  // namespace

Status HevcResidualCore::run(const std::vector<HevcTu>& tus, const int16_t* levels, size_t level_count,
                             const HevcScalingMatrices& scaling, const HevcPlane planes[3],
                             int bit_depth_luma, int bit_depth_chroma, cudaStream_t s) {
  return enqueue(tus, levels, level_count, scaling, planes, bit_depth_luma, bit_depth_chroma, nullptr, s);
}

Status HevcResidualCore::run_to_residuals(const std::vector<HevcTu>& tus, const int16_t* levels,
                                          size_t level_count, const HevcScalingMatrices& scaling,
                                          const HevcPlane planes[3], int bit_depth_luma,
                                          int bit_depth_chroma, int16_t* residuals, cudaStream_t s) {
  if (!residuals) return Status::error("HEVC residual: no residual buffer");
  return enqueue(tus, levels, level_count, scaling, planes, bit_depth_luma, bit_depth_chroma, residuals, s);
}

Status HevcResidualCore::enqueue(const std::vector<HevcTu>& tus, const int16_t* levels, size_t level_count,
                                 const HevcScalingMatrices& scaling, const HevcPlane planes[3],
                                 int bit_depth_luma, int bit_depth_chroma, int16_t* residuals, cudaStream_t s) {
  if (bit_depth_luma < 8 || bit_depth_luma > 16 || bit_depth_chroma < 8 || bit_depth_chroma > 16)
    return Status::error("HEVC residual: bit depths must be 8..16");
  if (tus.empty()) return {};
  const int bit_depth[3] = {bit_depth_luma, bit_depth_chroma, bit_depth_chroma};
  bool plane_ok[3] = {};
  for (int c = 0; c < 3; ++c) {
    const HevcPlane& p = planes[c];
    plane_ok[c] = p.data && p.width > 0 && p.height > 0 && p.width <= 65536 && p.height <= 65536 &&
                  p.stride >= p.width;
  }

  // Validate and count per group; TUs starting outside their plane change nothing (as on the CPU).
  int count[kGroups] = {};
  for (size_t i = 0; i < tus.size(); ++i) {
    const HevcTu& tu = tus[i];
    if (tu.c_idx > 2) return bad_tu(i, tu, "c_idx must be 0..2");
    if (tu.log2_size < 2 || tu.log2_size > 5) return bad_tu(i, tu, "sizes are 4x4 to 32x32");
    if (tu.x < 0 || tu.y < 0) return bad_tu(i, tu, "negative position");
    if (!plane_ok[tu.c_idx]) return bad_tu(i, tu, "its plane is missing or malformed");
    if (tu.x >= planes[tu.c_idx].width || tu.y >= planes[tu.c_idx].height) continue;
    if (uint64_t(tu.coeff_offset) + (uint64_t(1) << (2 * tu.log2_size)) > level_count)
      return bad_tu(i, tu, "levels beyond level_count");
    if (!tu.transquant_bypass) {
      if (tu.qp > 51 + 6 * (bit_depth[tu.c_idx] - 8)) return bad_tu(i, tu, "qP above 51 + QpBdOffset");
      if (tu.dst && !tu.transform_skip && tu.log2_size != 2) return bad_tu(i, tu, "DST is 4x4 only");
      if (scaling_offset(tu, scaling) < 0)
        return bad_tu(i, tu, "its scaling matrix is not one of the batch's matrices of its size");
    }
    ++count[group_of(tu)];
  }

  Batch b{};
  int blocks = 0, first_tu = 0, cursor[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    const int log2_size = g == kGroupDst ? 2 : (g < kGroupDirect ? g - kGroupDct + 2 : g - kGroupDirect + 2);
    const int per_block = kThreads >> log2_size;
    b.groups[g] = {blocks, first_tu, count[g]};
    cursor[g] = first_tu;
    blocks += (count[g] + per_block - 1) / per_block;
    first_tu += count[g];
  }
  if (first_tu == 0) return {};
  const size_t tu_bytes = size_t(first_tu) * sizeof(PackedTu);
  uint8_t* staging = nullptr;
  GVC_TRY(staging_.acquire(tu_bytes, staging));
  PackedTu* packed = reinterpret_cast<PackedTu*>(staging);
  for (const HevcTu& tu : tus) {
    if (tu.x >= planes[tu.c_idx].width || tu.y >= planes[tu.c_idx].height) continue;
    PackedTu& p = packed[size_t(cursor[group_of(tu)]++)];
    p.coeff_offset = tu.coeff_offset;
    p.scaling_offset = uint32_t(scaling_offset(tu, scaling));
    p.x = uint16_t(tu.x);
    p.y = uint16_t(tu.y);
    p.c_idx = tu.c_idx;
    p.qp = tu.qp;
    p.bypass = tu.transquant_bypass;
    p.pad = 0;
  }

  // The matrix table, uploaded when it differs from the last one (pageable copies: the host
  // data is staged before cudaMemcpyAsync returns; this is rare).
  std::vector<uint8_t>& table = table_scratch_;
  table.assign(kTableBytes, 0);
  std::memset(table.data(), 16, kFlatBytes);
  for (int size_id = 0; size_id < 4; ++size_id)
    for (int j = 0; j < 6; ++j)
      if (scaling.m[size_id][j])
        std::memcpy(table.data() + matrix_offset(size_id, j), scaling.m[size_id][j], size_t(16) << (2 * size_id));
  if (table != table_) {
    GVC_TRY(table_dev_.reserve(kTableBytes));
    GVC_CUDA_TRY(cudaMemcpyAsync(table_dev_.get(), table.data(), kTableBytes, cudaMemcpyHostToDevice, s));
    table_.swap(table);
  }
  if (tus_.size() < tu_bytes) GVC_TRY(tus_.reserve(tu_bytes + tu_bytes / 4));
  GVC_CUDA_TRY(cudaMemcpyAsync(tus_.get(), staging, tu_bytes, cudaMemcpyHostToDevice, s));
  GVC_TRY(staging_.release(s));

  b.tus = tus_.get<PackedTu>();
  b.levels = levels;
  b.matrices = table_dev_.get<uint8_t>();
  b.residuals = residuals;
  for (int c = 0; c < 3; ++c) {
    b.planes[c] = planes[c];
    b.bit_depth[c] = bit_depth[c];
  }
  residual_kernel<<<blocks, kThreads, 0, s>>>(b);
  GVC_CUDA_TRY(cudaGetLastError());
  return {};
}

}  // namespace cuda
}  // namespace gvc
