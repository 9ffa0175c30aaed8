// mc.cpp: inter prediction samples of P macroblock partitions (8.4.2.2) from reference pictures
#include "common/h264enc/mc.h"

namespace gvc::h264 {

namespace {

inline int tap6(int e, int f, int g, int h, int i, int j) { return e - 5 * f + 20 * g + 20 * h - 5 * i + j; }
inline uint8_t clip1(int v) { return uint8_t(v < 0 ? 0 : (v > 255 ? 255 : v)); }

// Table 8-12 as two plane reads averaged: {plane, dx, dy} of each; a second plane of -1 means
// the first is used alone. Planes: 0 G (full), 1 b, 2 h, 3 j.
struct QpelTap {
  int8_t p0, dx0, dy0, p1, dx1, dy1;
};
constexpr QpelTap kQpel[16] = {
    {0, 0, 0, -1, 0, 0}, {0, 0, 0, 1, 0, 0}, {1, 0, 0, -1, 0, 0}, {0, 1, 0, 1, 0, 0},   // G a b c
    {0, 0, 0, 2, 0, 0},  {1, 0, 0, 2, 0, 0}, {1, 0, 0, 3, 0, 0},  {1, 0, 0, 2, 1, 0},   // d e f g
    {2, 0, 0, -1, 0, 0}, {2, 0, 0, 3, 0, 0}, {3, 0, 0, -1, 0, 0}, {3, 0, 0, 2, 1, 0},   // h i j k
    {0, 0, 1, 2, 0, 0},  {2, 0, 0, 1, 0, 1}, {3, 0, 0, 1, 0, 1},  {2, 1, 0, 1, 0, 1},   // n p q r
};

}  // namespace

void LumaRefPlanes::build(const PlaneView& ref) {
  w_ = ref.width + 2 * kPad;
  h_ = ref.height + 2 * kPad;
  for (auto& p : plane_) p.resize(size_t(w_) * size_t(h_));
  std::vector<int> b1(plane_[0].size());  // horizontal 6-tap before rounding
  for (int y = 0; y < h_; y++) {
    for (int x = 0; x < w_; x++) {
      int sx = x - kPad, sy = y - kPad;
      auto s = [&](int dx, int dy) { return int(sample_clamped(ref, sx + dx, sy + dy)); };
      size_t i = size_t(y) * size_t(w_) + size_t(x);
      plane_[0][i] = uint8_t(s(0, 0));
      b1[i] = tap6(s(-2, 0), s(-1, 0), s(0, 0), s(1, 0), s(2, 0), s(3, 0));
      plane_[1][i] = clip1((b1[i] + 16) >> 5);
      plane_[2][i] = clip1((tap6(s(0, -2), s(0, -1), s(0, 0), s(0, 1), s(0, 2), s(0, 3)) + 16) >> 5);
    }
  }
  // j: vertical 6-tap over the unrounded b1; rows past the padded area repeat the edge row,
  // which is what the extended picture holds there.
  for (int y = 0; y < h_; y++) {
    auto row = [&](int dy) { return size_t(clamp_coord(y + dy, h_)) * size_t(w_); };
    for (int x = 0; x < w_; x++) {
      auto b = [&](int dy) { return b1[row(dy) + size_t(x)]; };
      plane_[3][size_t(y) * size_t(w_) + size_t(x)] =
          clip1((tap6(b(-2), b(-1), b(0), b(1), b(2), b(3)) + 512) >> 10);
    }
  }
}

void LumaRefPlanes::predict(int x, int y, int w, int h, const int16_t mv[2], uint8_t* dst,
                            int dst_stride) const {
  // xIntL = xAL + (mvLX[0] >> 2) + xL, xFracL = mvLX[0] & 3 (8.4.2.2)
  const int ix = x + (mv[0] >> 2), iy = y + (mv[1] >> 2);
  const QpelTap& t = kQpel[(mv[1] & 3) * 4 + (mv[0] & 3)];
  const bool inside = ix >= -kPad && iy >= -kPad && ix + w + 1 <= w_ - kPad && iy + h + 1 <= h_ - kPad;
  for (int j = 0; j < h; j++) {
    for (int i = 0; i < w; i++) {
      int v;
      if (inside) {
        size_t base = size_t(iy + j + kPad) * size_t(w_) + size_t(ix + i + kPad);
        v = plane_[t.p0][base + size_t(t.dy0) * size_t(w_) + size_t(t.dx0)];
        if (t.p1 >= 0) v = (v + plane_[t.p1][base + size_t(t.dy1) * size_t(w_) + size_t(t.dx1)] + 1) >> 1;
      } else {
        v = at(t.p0, ix + i + t.dx0, iy + j + t.dy0);
        if (t.p1 >= 0) v = (v + at(t.p1, ix + i + t.dx1, iy + j + t.dy1) + 1) >> 1;
      }
      dst[j * dst_stride + i] = uint8_t(v);
    }
  }
}

void mc_chroma(const PlaneView& ref, int x, int y, int w, int h, const int16_t mv[2],
               uint8_t* dst, int dst_stride) {
  int ix = x + (mv[0] >> 3), iy = y + (mv[1] >> 3);
  int fx = mv[0] & 7, fy = mv[1] & 7;
  for (int j = 0; j < h; j++) {
    for (int i = 0; i < w; i++) {
      int a = sample_clamped(ref, ix + i, iy + j), b = sample_clamped(ref, ix + i + 1, iy + j);
      int c = sample_clamped(ref, ix + i, iy + j + 1), d = sample_clamped(ref, ix + i + 1, iy + j + 1);
      dst[j * dst_stride + i] = uint8_t(((8 - fx) * (8 - fy) * a + fx * (8 - fy) * b +
                                         (8 - fx) * fy * c + fx * fy * d + 32) >> 6);
    }
  }
}

}  // namespace gvc::h264
