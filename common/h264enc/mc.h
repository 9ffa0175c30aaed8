// mc.h: inter prediction samples of P macroblock partitions (8.4.2.2) from reference pictures
#pragma once

#include <cstdint>
#include <vector>

#if defined(__SSE2__) && !defined(__CUDACC__)
#include <emmintrin.h>
#endif

#include "common/dsp/plane.h"
#include "common/h264enc/picture.h"
#include "common/util/hd.h"

namespace gvc::h264 {

// Table 8-12 as two plane reads averaged: {plane, dx, dy} of each; a second plane of -1 means
// the first is used alone. Planes: 0 G (full), 1 b, 2 h, 3 j.
struct QpelTap {
  int8_t p0, dx0, dy0, p1, dx1, dy1;
};
GVC_TABLE(QpelTap, kQpel, [16], {
    {0, 0, 0, -1, 0, 0}, {0, 0, 0, 1, 0, 0}, {1, 0, 0, -1, 0, 0}, {0, 1, 0, 1, 0, 0},   // G a b c
    {0, 0, 0, 2, 0, 0},  {1, 0, 0, 2, 0, 0}, {1, 0, 0, 3, 0, 0},  {1, 0, 0, 2, 1, 0},   // d e f g
    {2, 0, 0, -1, 0, 0}, {2, 0, 0, 3, 0, 0}, {3, 0, 0, -1, 0, 0}, {3, 0, 0, 2, 1, 0},   // h i j k
    {0, 0, 1, 2, 0, 0},  {2, 0, 0, 1, 0, 1}, {3, 0, 0, 1, 0, 1},  {2, 1, 0, 1, 0, 1},   // n p q r
})

// A reference luma plane with its three half-pel planes (b, h, j of 8.4.2.2.1) over a border
// of kPad samples, as raw planes of w x h (the padded size, row stride w) in host or device
// memory. Beyond 3 samples outside the picture every plane is constant along the extension,
// so clamping a coordinate into the padded area reads the sample of the infinitely
// edge-extended picture; quarter-pel samples are rounded averages of two of these planes.
struct LumaRefView {
  static constexpr int kPad = 8;
  // G (full), b, h, j. Where only G is there (b, h and j null: their copies not yet made),
  // predict() computes the half samples it needs from G (on the host only).
  const uint8_t* plane[4] = {};
  int w = 0, h = 0;              // padded size

  // Sample (x, y) of plane p, picture coordinates.
  GVC_HD int at(int p, int x, int y) const {
    x = x < -kPad ? -kPad : (x >= w - kPad ? w - kPad - 1 : x);
    y = y < -kPad ? -kPad : (y >= h - kPad ? h - kPad - 1 : y);
    return plane[p][size_t(y + kPad) * size_t(w) + size_t(x + kPad)];
  }

  // w x h luma prediction (stride dst_stride) of the block at luma (x, y) displaced by the
  // quarter-pel vector mv; equals luma_qpel_sample of me.h sample for sample.
  GVC_HD void predict(int x, int y, int bw, int bh, const int16_t mv[2], uint8_t* dst, int dst_stride) const {
    // xIntL = xAL + (mvLX[0] >> 2) + xL, xFracL = mvLX[0] & 3 (8.4.2.2)
    const int ix = x + (mv[0] >> 2), iy = y + (mv[1] >> 2);
    const QpelTap t = GVC_T(kQpel)[(mv[1] & 3) * 4 + (mv[0] & 3)];
#if !defined(__CUDA_ARCH__)
    if (!plane[1] && (t.p0 || t.p1 >= 0)) {
      predict_from_full(ix, iy, bw, bh, t, dst, dst_stride);
      return;
    }
#endif
    const bool inside = ix >= -kPad && iy >= -kPad && ix + bw + 1 <= w - kPad && iy + bh + 1 <= h - kPad;
#if defined(__SSE2__) && !defined(__CUDACC__)
    if (inside && (bw & 7) == 0) {  // rows of 8 samples: a load, or two averaged (pavgb rounds up)
      const size_t base = size_t(iy + kPad) * size_t(w) + size_t(ix + kPad);
      const uint8_t* p0 = plane[t.p0] + base + size_t(t.dy0) * size_t(w) + size_t(t.dx0);
      const uint8_t* p1 = t.p1 >= 0 ? plane[t.p1] + base + size_t(t.dy1) * size_t(w) + size_t(t.dx1) : nullptr;
      for (int j = 0; j < bh; j++) {
        for (int i = 0; i < bw; i += 8) {
          __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p0 + size_t(j) * size_t(w) + size_t(i)));
          if (p1) v = _mm_avg_epu8(v, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p1 + size_t(j) * size_t(w) + size_t(i))));
          _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + j * dst_stride + i), v);
        }
      }
      return;
    }
#endif
    for (int j = 0; j < bh; j++) {
      for (int i = 0; i < bw; i++) {
        int v;
        if (inside) {
          size_t base = size_t(iy + j + kPad) * size_t(w) + size_t(ix + i + kPad);
          v = plane[t.p0][base + size_t(t.dy0) * size_t(w) + size_t(t.dx0)];
          if (t.p1 >= 0) v = (v + plane[t.p1][base + size_t(t.dy1) * size_t(w) + size_t(t.dx1)] + 1) >> 1;
        } else {
          v = at(t.p0, ix + i + t.dx0, iy + j + t.dy0);
          if (t.p1 >= 0) v = (v + at(t.p1, ix + i + t.dx1, iy + j + t.dy1) + 1) >> 1;
        }
        dst[j * dst_stride + i] = uint8_t(v);
      }
    }
  }

  // predict() of a bw x bh block (at most 16 x 16) at integer position (ix, iy) with the taps t,
  // its half samples computed from G as LumaRefPlanes::build computes the planes (mc.cpp).
  void predict_from_full(int ix, int iy, int bw, int bh, const QpelTap& t, uint8_t* dst, int dst_stride) const;
};

// The four planes of LumaRefView, owned, built from a picture on the CPU.
class LumaRefPlanes {
 public:
  static constexpr int kPad = LumaRefView::kPad;

  void build(const PlaneView& ref);
  // Sizes the planes for a width x height picture, contents undefined, for a builder
  // elsewhere (the GPU's) to fill through data() with what build() would write.
  void alloc(int width, int height);
  uint8_t* data(int p) { return plane_[p].data(); }
  LumaRefView view() const {
    LumaRefView v;
    for (int p = 0; p < 4; p++) v.plane[p] = plane_[p].data();
    v.w = w_;
    v.h = h_;
    return v;
  }
  void predict(int x, int y, int w, int h, const int16_t mv[2], uint8_t* dst, int dst_stride) const {
    view().predict(x, y, w, h, mv, dst, dst_stride);
  }

 private:
  int w_ = 0, h_ = 0;  // padded size
  std::vector<uint8_t> plane_[4];
};

// A reconstructed picture in the decoded picture buffer, with its luma half-pel planes.
struct RefPicture {
  Picture pic;
  LumaRefPlanes luma;
  uint64_t id = 0;  // the encoder's number of the frame: ReconJob::ref_ids
  // pic's luma before the loop filter (pic.stride[0]), which the motion search reads
  // (ReconJob::rec_search); empty: pic's own (no loop filter, or kept elsewhere).
  std::vector<uint8_t> search_luma;
  PlaneView search_view() const {
    if (search_luma.empty()) return pic.view(0);
    return {search_luma.data(), pic.stride[0], pic.width(0), pic.height(0), MemoryLocation::Host};
  }
};

// w x h chroma prediction (stride dst_stride) of the block at chroma (x, y) with the luma
// vector mv, i.e. an eighth-pel chroma vector, bilinear from the edge-extended plane
// (8.4.2.2.2) of width x height samples at `data` (row stride `stride`).
GVC_HD void mc_chroma(const uint8_t* data, int stride, int width, int height, int x, int y, int w,
                      int h, const int16_t mv[2], uint8_t* dst, int dst_stride) {
  const int ix = x + (mv[0] >> 3), iy = y + (mv[1] >> 3);
  const int fx = mv[0] & 7, fy = mv[1] & 7;
  auto s = [&](int sx, int sy) -> int {
    sx = sx < 0 ? 0 : (sx >= width ? width - 1 : sx);
    sy = sy < 0 ? 0 : (sy >= height ? height - 1 : sy);
    return data[size_t(sy) * size_t(stride) + size_t(sx)];
  };
  for (int j = 0; j < h; j++) {
    for (int i = 0; i < w; i++) {
      int a = s(ix + i, iy + j), b = s(ix + i + 1, iy + j);
      int c = s(ix + i, iy + j + 1), d = s(ix + i + 1, iy + j + 1);
      dst[j * dst_stride + i] = uint8_t(((8 - fx) * (8 - fy) * a + fx * (8 - fy) * b +
                                         (8 - fx) * fy * c + fx * fy * d + 32) >> 6);
    }
  }
}

inline void mc_chroma(const PlaneView& ref, int x, int y, int w, int h, const int16_t mv[2],
                      uint8_t* dst, int dst_stride) {
  mc_chroma(ref.data, ref.stride, ref.width, ref.height, x, y, w, h, mv, dst, dst_stride);
}

}  // namespace gvc::h264
