// hevc_deblock.cpp: HEVC luma and chroma edge filters with their decisions (8.7.2.5.3-8.7.2.5.8)
#include "common/dsp/hevc_deblock.h"

#include <cstdlib>

namespace gvc {

const uint8_t kHevcBeta[52] = {0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  6,  7,
                               8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 20, 22, 24, 26, 28, 30, 32,
                               34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64};
const uint8_t kHevcTc[54] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0,  0,  0,  0,
                             1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3,  3,  3,  3,  4,
                             4, 4, 5, 5, 6, 6, 7, 8, 9, 10, 11, 13, 14, 16, 18, 20, 22, 24};

int hevc_chroma_qp(int qpi) {
  static const int kTab[14] = {29, 30, 31, 32, 33, 33, 34, 34, 35, 35, 36, 36, 37, 37};
  if (qpi < 30) return qpi;
  if (qpi > 43) return qpi - 6;
  return kTab[qpi - 30];
}

namespace {

// A line of samples across an edge: at(i) is p_i for i < 0 (p0 = at(-1)) and q_i for i >= 0.
struct Line {
  uint16_t* p;
  ptrdiff_t step;  // distance between samples across the edge
  int at(int i) const { return p[i * step]; }
  void set(int i, int v) { p[i * step] = static_cast<uint16_t>(v); }
};

// 8.7.2.5.3 decisions and 8.7.2.5.7 filtering of one four-line luma edge segment.
void filter_luma_segment(const HevcPlane& pl, int x, int y, bool vertical, int bs, int qp_p,
                         int qp_q, int beta_offset_div2, int tc_offset_div2, bool no_p, bool no_q,
                         int bit_depth) {
  const int qpl = (qp_q + qp_p + 1) >> 1;
  const int qb = hevc_clip3(0, 51, qpl + (beta_offset_div2 * 2));
  const int beta = kHevcBeta[qb] * (1 << (bit_depth - 8));
  const int qt = hevc_clip3(0, 53, qpl + 2 * (bs - 1) + (tc_offset_div2 * 2));
  const int tc = kHevcTc[qt] * (1 << (bit_depth - 8));
  if (!tc && !beta) return;
  auto line = [&](int k) {
    return vertical ? Line{&pl.at(x, y + k), 1} : Line{&pl.at(x + k, y), pl.stride};
  };
  const Line l0 = line(0), l3 = line(3);
  // p_i = at(-1 - i), q_i = at(i)
  auto P = [](const Line& l, int i) { return l.at(-1 - i); };
  auto Q = [](const Line& l, int i) { return l.at(i); };
  const int dp0 = std::abs(P(l0, 2) - 2 * P(l0, 1) + P(l0, 0));
  const int dp3 = std::abs(P(l3, 2) - 2 * P(l3, 1) + P(l3, 0));
  const int dq0 = std::abs(Q(l0, 2) - 2 * Q(l0, 1) + Q(l0, 0));
  const int dq3 = std::abs(Q(l3, 2) - 2 * Q(l3, 1) + Q(l3, 0));
  const int dpq0 = dp0 + dq0, dpq3 = dp3 + dq3;
  const int dp = dp0 + dp3, dq = dq0 + dq3;
  const int d = dpq0 + dpq3;
  if (d >= beta) return;
  // 8.7.2.5.6 decision process for a luma sample
  auto dsam = [&](const Line& l, int dpq) {
    return 2 * dpq < (beta >> 2) && std::abs(P(l, 3) - P(l, 0)) + std::abs(Q(l, 0) - Q(l, 3)) < (beta >> 3) &&
           std::abs(P(l, 0) - Q(l, 0)) < ((5 * tc + 1) >> 1);
  };
  const int de = (dsam(l0, dpq0) && dsam(l3, dpq3)) ? 2 : 1;
  const bool dep = dp < ((beta + (beta >> 1)) >> 3);
  const bool deq = dq < ((beta + (beta >> 1)) >> 3);
  const int maxv = (1 << bit_depth) - 1;
  for (int k = 0; k < 4; ++k) {
    Line l = line(k);
    const int p0 = P(l, 0), p1 = P(l, 1), p2 = P(l, 2), p3 = P(l, 3);
    const int q0 = Q(l, 0), q1 = Q(l, 1), q2 = Q(l, 2), q3 = Q(l, 3);
    if (de == 2) {
      const int t2 = 2 * tc;
      if (!no_p) {
        l.set(-1, hevc_clip3(p0 - t2, p0 + t2, (p2 + 2 * p1 + 2 * p0 + 2 * q0 + q1 + 4) >> 3));
        l.set(-2, hevc_clip3(p1 - t2, p1 + t2, (p2 + p1 + p0 + q0 + 2) >> 2));
        l.set(-3, hevc_clip3(p2 - t2, p2 + t2, (2 * p3 + 3 * p2 + p1 + p0 + q0 + 4) >> 3));
      }
      if (!no_q) {
        l.set(0, hevc_clip3(q0 - t2, q0 + t2, (p1 + 2 * p0 + 2 * q0 + 2 * q1 + q2 + 4) >> 3));
        l.set(1, hevc_clip3(q1 - t2, q1 + t2, (p0 + q0 + q1 + q2 + 2) >> 2));
        l.set(2, hevc_clip3(q2 - t2, q2 + t2, (p0 + q0 + q1 + 3 * q2 + 2 * q3 + 4) >> 3));
      }
    } else {
      int delta = (9 * (q0 - p0) - 3 * (q1 - p1) + 8) >> 4;
      if (std::abs(delta) >= tc * 10) continue;
      delta = hevc_clip3(-tc, tc, delta);
      if (!no_p) {
        l.set(-1, hevc_clip3(0, maxv, p0 + delta));
        if (dep) {
          const int dpv = hevc_clip3(-(tc >> 1), tc >> 1, (((p2 + p0 + 1) >> 1) - p1 + delta) >> 1);
          l.set(-2, hevc_clip3(0, maxv, p1 + dpv));
        }
      }
      if (!no_q) {
        l.set(0, hevc_clip3(0, maxv, q0 - delta));
        if (deq) {
          const int dqv = hevc_clip3(-(tc >> 1), tc >> 1, (((q2 + q0 + 1) >> 1) - q1 - delta) >> 1);
          l.set(1, hevc_clip3(0, maxv, q1 + dqv));
        }
      }
    }
  }
}

// 8.7.2.5.5 filtering of a chroma edge segment of `n` lines (bS is 2).
void filter_chroma_segment(const HevcPlane& pl, int x, int y, bool vertical, int n, int qp_p,
                           int qp_q, int c_qp_pic_offset, int tc_offset_div2, bool no_p,
                           bool no_q, int bit_depth) {
  const int qpc = hevc_chroma_qp(((qp_q + qp_p + 1) >> 1) + c_qp_pic_offset);
  const int qt = hevc_clip3(0, 53, qpc + 2 + (tc_offset_div2 * 2));
  const int tc = kHevcTc[qt] * (1 << (bit_depth - 8));
  if (!tc) return;
  const int maxv = (1 << bit_depth) - 1;
  for (int k = 0; k < n; ++k) {
    Line l = vertical ? Line{&pl.at(x, y + k), 1} : Line{&pl.at(x + k, y), pl.stride};
    const int p0 = l.at(-1), p1 = l.at(-2), q0 = l.at(0), q1 = l.at(1);
    const int delta = hevc_clip3(-tc, tc, ((((q0 - p0) * 4) + p1 - q1 + 4) >> 3));
    if (!no_p) l.set(-1, hevc_clip3(0, maxv, p0 + delta));
    if (!no_q) l.set(0, hevc_clip3(0, maxv, q0 - delta));
  }
}

}  // namespace

void HevcDeblock::run(const HevcDeblockFrame& f, const HevcPlane planes[3]) {
  for (int dir = 0; dir < 2; ++dir) {  // 0: vertical edges (EDGE_VER), 1: horizontal (EDGE_HOR)
    const bool vertical = dir == 0;
    const uint8_t* bs_arr = vertical ? f.bs_v : f.bs_h;
    for (int y = 0; y < f.height; y += 4)
      for (int x = 0; x < f.width; x += 4) {
        if (vertical ? (x & 7) : (y & 7)) continue;
        const int u = (y >> 2) * f.stride + (x >> 2);
        const int bs = bs_arr[u];
        if (!bs) continue;
        const int up = vertical ? u - 1 : u - f.stride;  // the unit holding p0
        const int qp_p = f.qp_y[up], qp_q = f.qp_y[u];
        const bool no_p = f.no_filter[up], no_q = f.no_filter[u];
        filter_luma_segment(planes[0], x, y, vertical, bs, qp_p, qp_q, f.beta_offset_div2[u],
                            f.tc_offset_div2[u], no_p, no_q, f.bit_depth_y);
        // chroma: edges on the 8x8 chroma sample grid with bS equal to 2
        if (bs == 2 && (vertical ? (x & 15) : (y & 15)) == 0) {
          for (int c = 1; c < 3; ++c)
            filter_chroma_segment(planes[c], x >> 1, y >> 1, vertical, 2, qp_p, qp_q,
                                  c == 1 ? f.cb_qp_offset : f.cr_qp_offset, f.tc_offset_div2[u],
                                  no_p, no_q, f.bit_depth_c);
        }
      }
  }
}

}  // namespace gvc
