// mvdraw.cpp: per-frame motion statistics and arrow drawing of a block vector field (host side)
#include "gst/cudamv/mvdraw.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace gvc {
namespace {

void put(const MutablePlaneView& p, int x, int y, uint8_t v) {
  if (x >= 0 && y >= 0 && x < p.width && y < p.height) p.data[y * p.stride + x] = v;
}

// Bresenham line from (x0, y0) to (x1, y1), both ends included.
void line(const MutablePlaneView& p, int x0, int y0, int x1, int y1, uint8_t v) {
  int dx = std::abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
  int dy = -std::abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
  int err = dx + dy;
  for (;;) {
    put(p, x0, y0, v);
    if (x0 == x1 && y0 == y1) break;
    int e2 = 2 * err;
    if (e2 >= dy) { err += dy; x0 += sx; }
    if (e2 <= dx) { err += dx; y0 += sy; }
  }
}

}  // namespace

MvStats mv_stats(const MvCost* field, size_t n) {
  MvStats s;
  if (n == 0) return s;
  double sum = 0;
  size_t moving = 0;
  for (size_t i = 0; i < n; i++) {
    double len = std::hypot(double(field[i].mvx), double(field[i].mvy)) / 4.0;
    sum += len;
    s.max_length = std::max(s.max_length, len);
    if (len >= kMovingThresholdPel) moving++;
  }
  s.mean_length = sum / double(n);
  s.moving_fraction = double(moving) / double(n);
  return s;
}

void draw_mv_arrows(const MutablePlaneView& luma, const MvCost* field, int block_w,
                    int block_h, int cols, int rows) {
  const uint8_t white = 235;
  for (int r = 0; r < rows; r++) {
    for (int c = 0; c < cols; c++) {
      const MvCost& v = field[size_t(r) * cols + c];
      if (v.mvx == 0 && v.mvy == 0) continue;
      int x1 = c * block_w + block_w / 2, y1 = r * block_h + block_h / 2;
      int x0 = x1 + v.mvx / 4, y0 = y1 + v.mvy / 4;
      line(luma, x0, y0, x1, y1, white);
      // Head: two strokes of 3 pixels at +-30 degrees around the reversed direction.
      double len = std::hypot(double(x0 - x1), double(y0 - y1));
      if (len < 1.0) {
        put(luma, x1, y1, white);
        continue;
      }
      double ux = (x0 - x1) / len, uy = (y0 - y1) / len;
      const double c30 = 0.8660254, s30 = 0.5, head = 3.0;
      line(luma, x1, y1, x1 + int(std::lround(head * (ux * c30 - uy * s30))),
           y1 + int(std::lround(head * (ux * s30 + uy * c30))), white);
      line(luma, x1, y1, x1 + int(std::lround(head * (ux * c30 + uy * s30))),
           y1 + int(std::lround(head * (-ux * s30 + uy * c30))), white);
    }
  }
}

}  // namespace gvc
