// mc.cpp: inter prediction samples of P macroblock partitions (8.4.2.2) from reference pictures
#include "common/h264enc/mc.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "common/h264enc/pixel.h"

namespace gvc::h264 {

namespace {

inline int tap6(int e, int f, int g, int h, int i, int j) { return e - 5 * f + 20 * g + 20 * h - 5 * i + j; }

}  // namespace

// Runs body(y0, y1) over row bands [y0, y1) of [0, rows) on all cores; rows are independent.
template <typename Body>
static void parallel_rows(int rows, Body body) {
  const int n = std::max(1, std::min<int>(int(std::thread::hardware_concurrency()), rows / 16));
  std::vector<std::thread> workers;
  for (int t = 1; t < n; t++) workers.emplace_back(body, rows * t / n, rows * (t + 1) / n);
  body(0, rows / n);
  for (auto& w : workers) w.join();
}

void LumaRefPlanes::build(const PlaneView& ref) {
  w_ = ref.width + 2 * kPad;
  h_ = ref.height + 2 * kPad;
  for (auto& p : plane_) p.resize(size_t(w_) * size_t(h_));
  std::vector<int> b1(plane_[0].size());  // horizontal 6-tap before rounding
  parallel_rows(h_, [&](int y0, int y1) {
    for (int y = y0; y < y1; y++) {
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
  });
  // j: vertical 6-tap over the unrounded b1 (all of it written above); rows past the padded
  // area repeat the edge row, which is what the extended picture holds there.
  parallel_rows(h_, [&](int y0, int y1) {
    for (int y = y0; y < y1; y++) {
      auto row = [&](int dy) { return size_t(clamp_coord(y + dy, h_)) * size_t(w_); };
      for (int x = 0; x < w_; x++) {
        auto b = [&](int dy) { return b1[row(dy) + size_t(x)]; };
        plane_[3][size_t(y) * size_t(w_) + size_t(x)] =
            clip1((tap6(b(-2), b(-1), b(0), b(1), b(2), b(3)) + 512) >> 10);
      }
    }
  });
}

}  // namespace gvc::h264
