// mc.cpp: inter prediction samples of P macroblock partitions (8.4.2.2) from reference pictures
#include "common/h264enc/mc.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "common/h264enc/pixel.h"
#include "common/util/parallel.h"

namespace gvc::h264 {

namespace {

inline int tap6(int e, int f, int g, int h, int i, int j) { return e - 5 * f + 20 * g + 20 * h - 5 * i + j; }

}  // namespace

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
