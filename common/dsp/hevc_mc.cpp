// hevc_mc.cpp: HEVC luma 8-tap / chroma 4-tap interpolation and weighted sample prediction (8.5.3.3.3, 8.5.3.3.4)
#include "common/dsp/hevc_mc.h"

#include <algorithm>
#include <vector>

namespace gvc {
namespace {

// Table 8-11 luma interpolation filter coefficients fL[xFrac][i], taps at xInt + i - 3.
constexpr int kLumaFilter[4][8] = {{0, 0, 0, 64, 0, 0, 0, 0},
                                   {-1, 4, -10, 58, 17, -5, 1, 0},
                                   {-1, 4, -11, 40, 40, -11, 4, -1},
                                   {0, 1, -5, 17, 58, -10, 4, -1}};
// Table 8-12 chroma interpolation filter coefficients fC[xFrac][i], taps at xInt + i - 1.
constexpr int kChromaFilter[8][4] = {{0, 64, 0, 0},     {-2, 58, 10, -2}, {-4, 54, 16, -2},
                                     {-6, 46, 28, -4},  {-4, 36, 36, -4}, {-4, 28, 46, -6},
                                     {-2, 16, 54, -4},  {-2, 10, 58, -2}};

// 8.5.3.3.3.1/2 on a clipped reference window of (w + kTaps - 1) x (h + kTaps - 1) samples:
// the integer sample shifted left, one 1-D filter (shift1), or both passes (shift1, then 6).
template <int kTaps>
void filter_window(const uint16_t* win, int w, int h, const int* fx, const int* fy, int x_frac, int y_frac,
                   int shift1, int shift3, int16_t* pred) {
  constexpr int half = kTaps / 2 - 1;  // taps before the integer position
  const int ww = w + kTaps - 1;
  if (!x_frac && !y_frac) {
    for (int j = 0; j < h; ++j)
      for (int i = 0; i < w; ++i) pred[j * w + i] = int16_t(win[(j + half) * ww + i + half] << shift3);
    return;
  }
  if (!y_frac) {
    for (int j = 0; j < h; ++j)
      for (int i = 0; i < w; ++i) {
        const uint16_t* p = win + (j + half) * ww + i;
        int sum = 0;
        for (int t = 0; t < kTaps; ++t) sum += fx[t] * p[t];
        pred[j * w + i] = int16_t(sum >> shift1);
      }
    return;
  }
  if (!x_frac) {
    for (int j = 0; j < h; ++j)
      for (int i = 0; i < w; ++i) {
        const uint16_t* p = win + j * ww + i + half;
        int sum = 0;
        for (int t = 0; t < kTaps; ++t) sum += fy[t] * p[t * ww];
        pred[j * w + i] = int16_t(sum >> shift1);
      }
    return;
  }
  // both fractional: horizontal pass over h + kTaps - 1 rows, then the vertical pass (shift 6)
  int tmp[71 * 64];
  for (int j = 0; j < h + kTaps - 1; ++j)
    for (int i = 0; i < w; ++i) {
      const uint16_t* p = win + j * ww + i;
      int sum = 0;
      for (int t = 0; t < kTaps; ++t) sum += fx[t] * p[t];
      tmp[j * w + i] = sum >> shift1;
    }
  for (int j = 0; j < h; ++j)
    for (int i = 0; i < w; ++i) {
      int sum = 0;
      for (int t = 0; t < kTaps; ++t) sum += fy[t] * tmp[(j + t) * w + i];
      pred[j * w + i] = int16_t(sum >> 6);
    }
}

}  // namespace

void hevc_mc_interpolate(const HevcPlane& ref, int c_idx, int x, int y, int w, int h, int mv_x,
                         int mv_y, int bit_depth, int16_t* pred) {
  const bool luma = c_idx == 0;
  const int frac_bits = luma ? 2 : 3;
  const int taps = luma ? 8 : 4;
  const int half = luma ? 3 : 1;  // taps before the integer position
  const int x_frac = mv_x & ((1 << frac_bits) - 1), y_frac = mv_y & ((1 << frac_bits) - 1);
  const int x_int = x + (mv_x >> frac_bits), y_int = y + (mv_y >> frac_bits);
  const int* fx = luma ? kLumaFilter[x_frac] : kChromaFilter[x_frac];
  const int* fy = luma ? kLumaFilter[y_frac] : kChromaFilter[y_frac];
  const int shift1 = std::min(4, bit_depth - 8), shift3 = std::max(2, 14 - bit_depth);
  // Reference sample padding: coordinates clipped into the picture (8-228, 8-229, 8-240,
  // 8-241), once per sample of the window the filters read, (w + taps - 1) x (h + taps - 1)
  // from (x_int - half, y_int - half).
  const int ww = w + taps - 1, wh = h + taps - 1;
  if (w < 1 || h < 1 || w > 64 || h > 64) return;
  uint16_t win[71 * 71];
  for (int j = 0; j < wh; ++j) {
    const uint16_t* row = &ref.at(0, hevc_clip3(0, ref.height - 1, y_int - half + j));
    for (int i = 0; i < ww; ++i) win[j * ww + i] = row[hevc_clip3(0, ref.width - 1, x_int - half + i)];
  }
  if (luma)
    filter_window<8>(win, w, h, fx, fy, x_frac, y_frac, shift1, shift3, pred);
  else
    filter_window<4>(win, w, h, fx, fy, x_frac, y_frac, shift1, shift3, pred);
}

void HevcMc::run(const HevcMcBatch& b, const HevcPlane dst[3]) {
  std::vector<int16_t> p0, p1;
  for (int n = 0; n < b.n_pbs; ++n) {
    const HevcMcPb& pb = b.pbs[n];
    for (int c = 0; c < 3; ++c) {
      const int sh = c ? 1 : 0;
      const int x = pb.x >> sh, y = pb.y >> sh, w = pb.w >> sh, h = pb.h >> sh;
      const int bd = c ? b.bit_depth_c : b.bit_depth_y;
      const int maxv = (1 << bd) - 1;
      p0.resize(size_t(w) * h);
      p1.resize(size_t(w) * h);
      int16_t* pred[2] = {p0.data(), p1.data()};
      int lists[2], nl = 0;
      for (int l = 0; l < 2; ++l)
        if (pb.pred_flag[l]) {
          hevc_mc_interpolate(b.refs[pb.ref[l]][c], c, x, y, w, h, pb.mv[l][0], pb.mv[l][1], bd,
                              pred[nl]);
          lists[nl++] = l;
        }
      if (!nl) continue;
      const HevcPlane& d = dst[c];
      const int shift1 = 14 - bd;
      const int w_in = std::min(w, d.width - x), h_in = std::min(h, d.height - y);  // inside dst
      // one loop per weighting case, the case chosen once per block
      auto each = [&](auto weigh) {
        for (int j = 0; j < h_in; ++j) {
          const int16_t* a = &p0[size_t(j) * w];
          const int16_t* b1 = &p1[size_t(j) * w];
          uint16_t* out = &d.at(x, y + j);
          for (int i = 0; i < w_in; ++i) out[i] = uint16_t(hevc_clip3(0, maxv, weigh(a[i], b1[i])));
        }
      };
      if (!pb.weighted) {
        // 8.5.3.3.4.2 default weighted sample prediction
        if (nl == 1)
          each([&](int a, int) { return (a + (1 << (shift1 - 1))) >> shift1; });
        else
          each([&](int a, int b1) { return (a + b1 + (1 << shift1)) >> (shift1 + 1); });
      } else {
        // 8.5.3.3.4.3 explicit weighted sample prediction
        const int log2_wd = pb.log2_wd_base[c] + shift1;
        const int l0 = lists[0];
        const int w0 = pb.weight[l0][c], o0 = pb.offset[l0][c] * (1 << (bd - 8));
        if (nl == 1) {
          if (log2_wd >= 1)
            each([&](int a, int) { return ((a * w0 + (1 << (log2_wd - 1))) >> log2_wd) + o0; });
          else
            each([&](int a, int) { return a * w0 + o0; });
        } else {
          const int w1 = pb.weight[1][c], o1 = pb.offset[1][c] * (1 << (bd - 8));
          each([&](int a, int b1) { return (a * w0 + b1 * w1 + ((o0 + o1 + 1) << log2_wd)) >> (log2_wd + 1); });
        }
      }
    }
  }
}

}  // namespace gvc
