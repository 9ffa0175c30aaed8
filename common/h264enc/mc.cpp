// mc.cpp: inter prediction samples of P macroblock partitions (8.4.2.2) from reference pictures
#include "common/h264enc/mc.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "common/h264enc/pixel.h"
#include "common/util/parallel.h"

namespace gvc::h264 {

namespace {

inline int tap6(int e, int f, int g, int h, int i, int j) { return e - 5 * f + 20 * g + 20 * h - 5 * i + j; }

}  // namespace

void LumaRefView::predict_from_full(int ix, int iy, int bw, int bh, const QpelTap& t, uint8_t* dst,
                                    int dst_stride) const {
  constexpr int kMax = 16, kWin = kMax + 6, kOut = kMax + 1;
  if (bw > kMax || bh > kMax) {  // (no caller's block is larger) by tiles of at most 16x16
    for (int ty = 0; ty < bh; ty += kMax)
      for (int tx = 0; tx < bw; tx += kMax)
        predict_from_full(ix + tx, iy + ty, std::min(kMax, bw - tx), std::min(kMax, bh - ty), t,
                          dst + ty * dst_stride + tx, dst_stride);
    return;
  }
  // G over what the taps reach: columns ix - 2 .. ix + bw + 3, rows iy - 2 .. iy + bh + 3 (the
  // half samples at (ix + i + dx, iy + j + dy), i <= bw and j <= bh, and their 6 taps).
  const int ww = bw + 6, wh = bh + 6;
  uint8_t g[kWin * kWin];
  const int x0 = ix - 2, y0 = iy - 2;
  if (x0 >= -kPad && y0 >= -kPad && x0 + ww <= w - kPad && y0 + wh <= h - kPad) {
    for (int j = 0; j < wh; j++)
      std::memcpy(g + j * kWin, plane[0] + size_t(y0 + j + kPad) * size_t(w) + size_t(x0 + kPad), size_t(ww));
  } else {
    for (int j = 0; j < wh; j++)
      for (int i = 0; i < ww; i++) g[j * kWin + i] = uint8_t(at(0, x0 + i, y0 + j));
  }
  // Each plane the taps read, at (ix + i, iy + j) for i <= bw, j <= bh, row stride kOut; G is
  // read from the window itself.
  uint8_t half[3][kOut * kOut];
  const int ow = bw + 1, oh = bh + 1;
  const bool need[3] = {t.p0 == 1 || t.p1 == 1, t.p0 == 2 || t.p1 == 2, t.p0 == 3 || t.p1 == 3};
  if (need[0] || need[2]) {
    // b1 (the horizontal 6-tap before rounding) on rows iy - 2 .. iy + bh + 3, then b and j
    int b1[kWin][kOut];
    for (int j = 0; j < wh; j++) {
      const uint8_t* r = g + j * kWin;
      for (int i = 0; i < ow; i++) b1[j][i] = tap6(r[i], r[i + 1], r[i + 2], r[i + 3], r[i + 4], r[i + 5]);
    }
    if (need[0])
      for (int j = 0; j < oh; j++)
        for (int i = 0; i < ow; i++) half[0][j * kOut + i] = clip1((b1[j + 2][i] + 16) >> 5);
    if (need[2])
      for (int j = 0; j < oh; j++)
        for (int i = 0; i < ow; i++)
          half[2][j * kOut + i] =
              clip1((tap6(b1[j][i], b1[j + 1][i], b1[j + 2][i], b1[j + 3][i], b1[j + 4][i], b1[j + 5][i]) + 512) >> 10);
  }
  if (need[1])
    for (int j = 0; j < oh; j++)
      for (int i = 0; i < ow; i++) {
        const uint8_t* c = g + j * kWin + i + 2;
        half[1][j * kOut + i] =
            clip1((tap6(c[0], c[kWin], c[2 * kWin], c[3 * kWin], c[4 * kWin], c[5 * kWin]) + 16) >> 5);
      }
  auto sample = [&](int p, int i, int j) -> int {
    return p == 0 ? g[(j + 2) * kWin + i + 2] : half[p - 1][j * kOut + i];
  };
  for (int j = 0; j < bh; j++)
    for (int i = 0; i < bw; i++) {
      int v = sample(t.p0, i + t.dx0, j + t.dy0);
      if (t.p1 >= 0) v = (v + sample(t.p1, i + t.dx1, j + t.dy1) + 1) >> 1;
      dst[j * dst_stride + i] = uint8_t(v);
    }
}

// Runs body(y0, y1) over row bands [y0, y1) of [0, rows) on all cores; rows are independent.
template <typename Body>
static void parallel_rows(int rows, Body body) {
  const int n = std::max(1, std::min<int>(parallel_threads(), rows / 16));
  parallel_for(n, [&](int t) { body(rows * t / n, rows * (t + 1) / n); });
}

void LumaRefPlanes::alloc(int width, int height) {
  w_ = width + 2 * kPad;
  h_ = height + 2 * kPad;
  for (auto& p : plane_) p.resize(size_t(w_) * size_t(h_));
}

void LumaRefPlanes::build(const PlaneView& ref) {
  alloc(ref.width, ref.height);
  // Horizontal 6-tap before rounding; every element is written by the first pass.
  std::unique_ptr<int[]> b1(new int[plane_[0].size()]);
  parallel_rows(h_, [&](int y0, int y1) {
    for (int y = y0; y < y1; y++) {
      const int sy = y - kPad;
      const uint8_t* r[6];  // source rows sy - 2 .. sy + 3, clamped
      for (int k = 0; k < 6; k++) r[k] = ref.data + size_t(clamp_coord(sy + k - 2, ref.height)) * size_t(ref.stride);
      for (int x = 0; x < w_; x++) {
        const int sx = x - kPad;
        int c[6];  // source columns sx - 2 .. sx + 3, clamped
        if (sx >= 2 && sx + 3 < ref.width) {
          for (int k = 0; k < 6; k++) c[k] = sx + k - 2;
        } else {
          for (int k = 0; k < 6; k++) c[k] = clamp_coord(sx + k - 2, ref.width);
        }
        const size_t i = size_t(y) * size_t(w_) + size_t(x);
        const uint8_t* row = r[2];
        plane_[0][i] = row[c[2]];
        b1[i] = tap6(row[c[0]], row[c[1]], row[c[2]], row[c[3]], row[c[4]], row[c[5]]);
        plane_[1][i] = clip1((b1[i] + 16) >> 5);
        plane_[2][i] = clip1((tap6(r[0][c[2]], r[1][c[2]], r[2][c[2]], r[3][c[2]], r[4][c[2]], r[5][c[2]]) + 16) >> 5);
      }
    }
  });
  // j: vertical 6-tap over the unrounded b1 (all of it written above); rows past the padded
  // area repeat the edge row, which is what the extended picture holds there.
  parallel_rows(h_, [&](int y0, int y1) {
    for (int y = y0; y < y1; y++) {
      const int* b[6];  // b1 rows y - 2 .. y + 3, clamped
      for (int k = 0; k < 6; k++) b[k] = b1.get() + size_t(clamp_coord(y + k - 2, h_)) * size_t(w_);
      uint8_t* out = plane_[3].data() + size_t(y) * size_t(w_);
      for (int x = 0; x < w_; x++)
        out[x] = clip1((tap6(b[0][x], b[1][x], b[2][x], b[3][x], b[4][x], b[5][x]) + 512) >> 10);
    }
  });
}

}  // namespace gvc::h264
