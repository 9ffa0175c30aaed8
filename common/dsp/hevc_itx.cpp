// hevc_itx.cpp: HEVC scaling and inverse transforms (8.6.2-8.6.4, 8.6.7), the CPU reference
#include "common/dsp/hevc_itx.h"

#include <cstring>

namespace gvc {
namespace {

// 8.6.4.2: the 32x32 transMatrix is 64*sqrt(2)*cos((2n+1)k*pi/64) rounded as the standard
// lists it; c[j] is the coefficient for the angle j*pi/64, j = 0..32 (c[0] only serves k = 0).
constexpr int kCosTable[33] = {64, 90, 90, 90, 89, 88, 87, 85, 83, 82, 80, 78, 75, 73, 70, 67, 64,
                               61, 57, 54, 50, 46, 43, 38, 36, 31, 25, 22, 18, 13, 9,  4,  0};

struct TransMatrix {
  int8_t m[32][32];  // [k = frequency][n = sample]
  TransMatrix() {
    for (int k = 0; k < 32; ++k)
      for (int n = 0; n < 32; ++n) {
        if (k == 0) {
          m[k][n] = 64;
          continue;
        }
        int j = ((2 * n + 1) * k) % 128;
        if (j > 64) j = 128 - j;
        m[k][n] = static_cast<int8_t>(j <= 32 ? kCosTable[j] : -kCosTable[64 - j]);
      }
  }
};
const TransMatrix kTrans;

// 8.6.4.2 equation for nTbS = 4 of an intra luma block (DST-VII).
constexpr int kDst[4][4] = {{29, 55, 74, 84}, {74, 74, 0, -74}, {84, -29, -74, 55},
                            {55, -84, 74, -29}};

constexpr int kLevelScale[6] = {40, 45, 51, 57, 64, 72};

// transMatrix of one size as [k][n] rows of 32 ints (the DST's, or every (32 / nTbS)th row of the
// 32x32 matrix), built once.
struct Matrices {
  int32_t m[5][32][32];  // [0] DST-VII 4x4, [log2 nTbS - 1] DCT 4..32
  Matrices() {
    for (int t = 0; t < 5; ++t)
      for (int k = 0; k < 32; ++k)
        for (int n = 0; n < 32; ++n) m[t][k][n] = 0;
    for (int k = 0; k < 4; ++k)
      for (int n = 0; n < 4; ++n) m[0][k][n] = kDst[k][n];
    for (int log2 = 2; log2 <= 5; ++log2) {
      const int s = 1 << log2;
      for (int k = 0; k < s; ++k)
        for (int n = 0; n < s; ++n) m[log2 - 1][k][n] = kTrans.m[k * (32 / s)][n];
    }
  }
};
const Matrices kMatrices;

}  // namespace

// 8.6.3 scaling process for transform coefficients.
void hevc_scale_coeffs(const int16_t* levels, int32_t* d, int log2_size, int qp, int bit_depth,
                       const uint8_t* scaling) {
  const int n = 1 << (2 * log2_size);
  const int bd_shift = bit_depth + log2_size - 5;
  const int64_t scale = static_cast<int64_t>(kLevelScale[qp % 6]) << (qp / 6);
  const int64_t round = int64_t(1) << (bd_shift - 1);
  for (int i = 0; i < n; ++i) {
    if (!levels[i]) {
      d[i] = 0;
      continue;
    }
    const int m = scaling ? scaling[i] : 16;
    const int64_t v = (levels[i] * m * scale + round) >> bd_shift;
    d[i] = static_cast<int32_t>(v < -32768 ? -32768 : (v > 32767 ? 32767 : v));
  }
}

// 8.6.4.2 transformation process for scaled transform coefficients (plus transform skip).
void hevc_inverse_transform(int32_t* d, int log2_size, bool dst, bool skip, int bit_depth) {
  const int s = 1 << log2_size;
  const int bd_shift = 20 - bit_depth;
  const int round = 1 << (bd_shift - 1);
  if (skip) {
    const int ts_shift = 5 + log2_size;
    for (int i = 0; i < s * s; ++i) d[i] = ((d[i] << ts_shift) + round) >> bd_shift;
    return;
  }
  const int32_t(*m)[32] = kMatrices.m[dst ? 0 : log2_size - 1];  // m[k][n]
  // Coefficients are mostly zero towards high frequencies: the sums below stop at the last
  // non-zero one, and columns without any give zero columns of g, which the row pass skips.
  // |coefficient| <= 90 and |d|, |g| <= 32768 keep each sum of at most 32 terms in 32 bits.
  int32_t g[32 * 32];
  int last_col = -1;
  // 1. one-dimensional transform of every column (d[x][y] lies at d[y * s + x]).
  for (int x = 0; x < s; ++x) {
    int last = -1;
    for (int k = 0; k < s; ++k)
      if (d[k * s + x]) last = k;
    if (last < 0) {
      for (int y = 0; y < s; ++y) g[y * s + x] = 0;
      continue;
    }
    last_col = x;
    for (int y = 0; y < s; ++y) {
      int32_t e = 0;
      for (int k = 0; k <= last; ++k) e += m[k][y] * d[k * s + x];
      const int32_t v = (e + 64) >> 7;
      g[y * s + x] = v < -32768 ? -32768 : (v > 32767 ? 32767 : v);
    }
  }
  // 2. one-dimensional transform of every row of g.
  for (int y = 0; y < s; ++y) {
    const int32_t* row = g + y * s;
    for (int x = 0; x < s; ++x) {
      int32_t r = 0;
      for (int k = 0; k <= last_col; ++k) r += m[k][x] * row[k];
      d[y * s + x] = (r + round) >> bd_shift;
    }
  }
}

// 8.6.7 picture construction: recSamples = Clip1(predSamples + resSamples).
void hevc_add_residual(const HevcPlane& plane, int x0, int y0, int log2_size, const int32_t* r,
                       int bit_depth) {
  const int s = 1 << log2_size;
  const int maxv = (1 << bit_depth) - 1;
  for (int y = 0; y < s && y0 + y < plane.height; ++y) {
    uint16_t* p = plane.data + (y0 + y) * plane.stride + x0;
    for (int x = 0; x < s && x0 + x < plane.width; ++x)
      p[x] = static_cast<uint16_t>(hevc_clip3(0, maxv, p[x] + r[y * s + x]));
  }
}

void hevc_scatter_level_blocks(const uint32_t* blocks, size_t n, const int16_t* packed, int16_t* dense) {
  for (size_t i = 0; i < n; ++i, packed += 16) {
    int16_t* to = dense + (blocks[i] & kHevcLevelBlockOffsetMask);
    const int row = 4 << (blocks[i] >> 30);
    for (int y = 0; y < 4; ++y) std::memcpy(to + y * row, packed + 4 * y, 4 * sizeof(int16_t));
  }
}

void HevcResidual::run_one(const HevcTu& tu, const int16_t* levels, const HevcPlane& plane,
                           int bit_depth) {
  int32_t d[32 * 32];
  const int n = 1 << (2 * tu.log2_size);
  const int16_t* lv = levels + tu.coeff_offset;
  if (tu.transquant_bypass) {
    for (int i = 0; i < n; ++i) d[i] = lv[i];
  } else {
    hevc_scale_coeffs(lv, d, tu.log2_size, tu.qp, bit_depth, tu.scaling);
    hevc_inverse_transform(d, tu.log2_size, tu.dst, tu.transform_skip, bit_depth);
  }
  hevc_add_residual(plane, tu.x, tu.y, tu.log2_size, d, bit_depth);
}

void HevcResidual::run(const std::vector<HevcTu>& tus, const int16_t* levels,
                       const HevcPlane planes[3], int bit_depth_luma, int bit_depth_chroma) {
  for (const HevcTu& tu : tus)
    run_one(tu, levels, planes[tu.c_idx], tu.c_idx ? bit_depth_chroma : bit_depth_luma);
}

}  // namespace gvc
