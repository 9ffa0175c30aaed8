// analyse.h: macroblock mode decision (intra modes against the inter choice), before reconstruction, for the CPU and CUDA
//
// Mode decision minimises J = D + lambda * R with D the SATD of the luma prediction residual
// (sum over its 4x4 blocks of the halved absolute 4x4 Hadamard coefficients; intra chroma adds
// its own SATD) and R the length of the prediction syntax (mb_type, sub_mb_type, ref_idx
// te(v), mvd se(v), intra modes) plus a fixed estimate for intra mb_type codes in P slices;
// the residual's bits are not counted. lambda = sqrt(0.85 * 2^((QP - 12) / 3)) (seed 003's
// lambda for SAD-type costs), in integer form.
//
// The decision is GVC_HD code (common/util/hd.h): written once for the CPU and CUDA, so a
// device implementation gives the CPU's bits.
#pragma once

#include <cstdint>

#if defined(__SSE2__) && !defined(__CUDACC__)
#include <emmintrin.h>
#endif

#include "common/dsp/intra_prune.h"
#include "common/h264enc/mc.h"
#include "common/h264enc/macroblock.h"
#include "common/mv/mv_field.h"
#include "common/util/hd.h"

namespace gvc::h264 {

// The analysis switches of EncoderParams::analyse that the decision reads.
struct DecideFlags {
  bool intra4x4 = true;
  bool part16x8 = true;
  bool part8x8 = true;
  bool sub8x8 = true;
  bool refine = true;
  bool preselect = true;
};

// The source picture's three planes (edge-extended to whole macroblocks), host or device.
struct SourcePlanes {
  const uint8_t* plane[3] = {};
  int stride[3] = {};
  int width[3] = {};
  int height[3] = {};
  GVC_HD const uint8_t* at(int p, int x, int y) const { return plane[p] + y * stride[p] + x; }
};

// Everything the analysis of one macroblock reads; pointers are host memory on the CPU and
// device memory on the GPU.
struct MbAnalysis {
  DecideFlags flags;
  SourcePlanes src;
  // P slices: RefPicList0 (refIdxL0 order, most recent first) as luma planes with their
  // half-pel planes (or, on the host, without them: DecideJob::refs_full_only) and, per
  // reference, the ME core's per-partition vectors of the current frame against it
  // (me[r][mb_addr], raster). num_refs is 0 in I slices.
  int num_refs = 0;
  LumaRefView refs[4];
  const MbPartitions* me[4] = {};
  MbMap map;  // macroblocks decided so far (slice-aware); map.at(mx, my) is the one analysed
  int mx = 0, my = 0;
  int qp = 26, qpc = 26;
  int lambda = 1;
  // The intra modes worth trying for this macroblock (common/dsp/intra_prune.h); null: all.
  const IntraMbCandidates* intra_cand = nullptr;
  // P slices: this macroblock's SATD cache (satd_cache.h), one per reference; null: none.
  const struct MbSatdRef* satd = nullptr;
  // P slices: this macroblock's pre-selection (inter_preselect.h) made before the decision's
  // wavefront (on the GPU, with the SATD caches' slots); null: choose_inter makes it.
  const struct Preselection* presel = nullptr;
  int max_mv_y = 2048;  // |vertical vector| limit in quarter-pel (MaxVmvR of the level, Table A-1)
};

int lambda_for_qp(int qp);

// SATD of a w x h block (multiples of 4) of src against pred (stride ps), one 4x4 block at a
// time: the reference for satd_block.
GVC_HD int satd_block_c(const uint8_t* src, int ss, const uint8_t* pred, int ps, int w, int h) {
  int sum = 0;
  for (int by = 0; by < h; by += 4) {
    for (int bx = 0; bx < w; bx += 4) {
      int16_t d[16];
      for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) d[4 * y + x] = int16_t(src[(by + y) * ss + bx + x] - pred[(by + y) * ps + bx + x]);
      sum += satd4x4(d);
    }
  }
  return sum;
}

#if defined(__SSE2__) && !defined(__CUDACC__)
// Two horizontally adjacent 4x4 blocks (8 x 4 samples) at once in SSE2, each block's sum
// halved and rounded as satd4x4 does: the same value as satd_block_c.
inline int satd_8x4_sse2(const uint8_t* src, int ss, const uint8_t* pred, int ps) {
  const __m128i zero = _mm_setzero_si128();
  __m128i r[4];
  for (int y = 0; y < 4; y++) {
    const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + y * ss));
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(pred + y * ps));
    r[y] = _mm_sub_epi16(_mm_unpacklo_epi8(a, zero), _mm_unpacklo_epi8(b, zero));
  }
  // Vertical 4-point Hadamard (rows), both blocks' columns in the lanes.
  __m128i s01 = _mm_add_epi16(r[0], r[1]), d01 = _mm_sub_epi16(r[0], r[1]);
  __m128i s23 = _mm_add_epi16(r[2], r[3]), d23 = _mm_sub_epi16(r[2], r[3]);
  const __m128i h0 = _mm_add_epi16(s01, s23), h1 = _mm_sub_epi16(s01, s23);
  const __m128i h2 = _mm_sub_epi16(d01, d23), h3 = _mm_add_epi16(d01, d23);
  // Transpose each block so that column c of both blocks is one register, then the
  // horizontal Hadamard the same way (the sum of magnitudes does not depend on the order).
  const __m128i t0 = _mm_unpacklo_epi16(h0, h1), t1 = _mm_unpackhi_epi16(h0, h1);
  const __m128i t2 = _mm_unpacklo_epi16(h2, h3), t3 = _mm_unpackhi_epi16(h2, h3);
  const __m128i u0 = _mm_unpacklo_epi32(t0, t2), u1 = _mm_unpackhi_epi32(t0, t2);
  const __m128i u2 = _mm_unpacklo_epi32(t1, t3), u3 = _mm_unpackhi_epi32(t1, t3);
  const __m128i c0 = _mm_unpacklo_epi64(u0, u2), c1 = _mm_unpackhi_epi64(u0, u2);
  const __m128i c2 = _mm_unpacklo_epi64(u1, u3), c3 = _mm_unpackhi_epi64(u1, u3);
  s01 = _mm_add_epi16(c0, c1), d01 = _mm_sub_epi16(c0, c1);
  s23 = _mm_add_epi16(c2, c3), d23 = _mm_sub_epi16(c2, c3);
  auto mag = [&](__m128i v) { return _mm_max_epi16(v, _mm_sub_epi16(zero, v)); };
  const __m128i sum = _mm_add_epi16(_mm_add_epi16(mag(_mm_add_epi16(s01, s23)), mag(_mm_sub_epi16(s01, s23))),
                                    _mm_add_epi16(mag(_mm_sub_epi16(d01, d23)), mag(_mm_add_epi16(d01, d23))));
  // Lanes 0..3: the first block (16320 at most each), 4..7: the second.
  alignas(16) int32_t q[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(q), _mm_madd_epi16(sum, _mm_set1_epi16(1)));
  return ((q[0] + q[1] + 1) >> 1) + ((q[2] + q[3] + 1) >> 1);
}
#endif

// SATD of a w x h block (multiples of 4) of src against pred (stride ps): satd_block_c's value.
GVC_HD int satd_block(const uint8_t* src, int ss, const uint8_t* pred, int ps, int w, int h) {
#if defined(__SSE2__) && !defined(__CUDACC__)
  if ((w & 7) == 0) {
    int sum = 0;
    for (int by = 0; by < h; by += 4)
      for (int bx = 0; bx < w; bx += 8) sum += satd_8x4_sse2(src + by * ss + bx, ss, pred + by * ps + bx, ps);
    return sum;
  }
#endif
  return satd_block_c(src, ss, pred, ps, w, h);
}

// Whether the macroblock at (a.mx + dx, a.my + dy) is available for prediction (6.4.8: inside
// the picture, already coded, in the same slice).
GVC_HD bool mb_available(const MbAnalysis& a, int dx, int dy) { return a.map.at(a.mx + dx, a.my + dy) != nullptr; }

}  // namespace gvc::h264
