// hevc_intra.cpp: HEVC intra sample prediction (8.4.4.2): substitution, filtering, 35 modes
#include "common/dsp/hevc_intra.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace gvc {
namespace {

// Table 8-4 intraPredAngle for predModeIntra 2..34, and Table 8-5 invAngle for 11..25.
constexpr int kIntraPredAngle[35] = {0,   0,   32,  26,  21,  17,  13,  9,  5,  2,  0,  -2,
                                     -5,  -9,  -13, -17, -21, -26, -32, -26, -21, -17, -13, -9,
                                     -5,  -2,  0,   2,   5,   9,   13,  17,  21,  26,  32};
constexpr int kInvAngle[35] = {0,     0,    0,    0,     0,     0,     0,     0,     0,
                               0,     0,    -4096, -1638, -910, -630,  -482,  -390,  -315,
                               -256,  -315, -390, -482,  -630,  -910,  -1638, -4096, 0,
                               0,     0,    0,    0,     0,     0,     0,     0};

// 8.4.4.2.2 substitution process for intra sample prediction.
void substitute(HevcIntraRefs& r, int n_total, int bit_depth) {
  int first = -1;
  for (int i = 0; i < n_total; ++i)
    if (r.avail[i]) {
      first = i;
      break;
    }
  if (first < 0) {
    for (int i = 0; i < n_total; ++i) r.p[i] = static_cast<uint16_t>(1 << (bit_depth - 1));
    return;
  }
  if (!r.avail[0]) r.p[0] = r.p[first];
  for (int i = 1; i < n_total; ++i)
    if (!r.avail[i]) r.p[i] = r.p[i - 1];
}

}  // namespace

void hevc_gather_intra_refs(const HevcIntraBlock& b, const HevcPlane& plane, HevcIntraRefs& refs) {
  const int n = 1 << b.log2_size;
  const int u = b.c_idx ? 2 : 4;  // samples per availability unit
  const int units = 2 * n / u;    // units of the left column, and of the top row
  for (int i = 0; i < 2 * n; ++i) {
    const bool ok = (b.avail >> (i / u)) & 1;
    refs.avail[i] = ok;
    refs.p[i] = ok ? plane.at(b.x - 1, b.y + 2 * n - 1 - i) : 0;
  }
  const bool corner = (b.avail >> units) & 1;
  refs.avail[2 * n] = corner;
  refs.p[2 * n] = corner ? plane.at(b.x - 1, b.y - 1) : 0;
  for (int i = 0; i < 2 * n; ++i) {
    const bool ok = (b.avail >> (units + 1 + i / u)) & 1;
    refs.avail[2 * n + 1 + i] = ok;
    refs.p[2 * n + 1 + i] = ok ? plane.at(b.x + i, b.y - 1) : 0;
  }
}

void hevc_intra_predict(HevcIntraRefs& refs, const HevcIntraParams& prm, const HevcPlane& plane,
                        int x0, int y0) {
  const int n = 1 << prm.log2_size;
  const int n_total = 4 * n + 1;
  const int mode = prm.mode;
  substitute(refs, n_total, prm.bit_depth);

  // 8.4.4.2.3 filtering process of neighbouring samples (luma only in 4:2:0).
  uint16_t pf[4 * 32 + 1];
  const uint16_t* p = refs.p;
  if (prm.c_idx == 0 && mode != 1 && n != 4) {
    const int min_dist = std::min(std::abs(mode - 26), std::abs(mode - 10));
    const int thres = n == 8 ? 7 : (n == 16 ? 1 : 0);
    if (min_dist > thres) {
      const int corner = p[2 * n];
      const int bottom = p[0];           // p[-1][2N-1]
      const int right = p[4 * n];        // p[2N-1][-1]
      const int thr = 1 << (prm.bit_depth - 5);
      if (prm.strong_intra_smoothing && n == 32 &&
          std::abs(corner + right - 2 * p[2 * n + n]) < thr &&
          std::abs(corner + bottom - 2 * p[2 * n - n]) < thr) {
        // biIntFlag: bilinear references between the corner and the far ends.
        pf[2 * n] = static_cast<uint16_t>(corner);
        for (int i = 0; i < 63; ++i) {
          pf[2 * n - 1 - i] = static_cast<uint16_t>(((63 - i) * corner + (i + 1) * bottom + 32) >> 6);
          pf[2 * n + 1 + i] = static_cast<uint16_t>(((63 - i) * corner + (i + 1) * right + 32) >> 6);
        }
        pf[0] = static_cast<uint16_t>(bottom);
        pf[4 * n] = static_cast<uint16_t>(right);
      } else {
        pf[0] = p[0];
        pf[n_total - 1] = p[n_total - 1];
        for (int i = 1; i < n_total - 1; ++i)
          pf[i] = static_cast<uint16_t>((p[i - 1] + 2 * p[i] + p[i + 1] + 2) >> 2);
      }
      p = pf;
    }
  }

  auto left = [&](int y) -> int { return p[2 * n - 1 - y]; };  // p[-1][y], y = -1..2N-1
  auto top = [&](int x) -> int { return p[2 * n + 1 + x]; };   // p[x][-1], x = -1..2N-1
  const int maxv = (1 << prm.bit_depth) - 1;
  auto out = [&](int x, int y, int v) {
    if (x0 + x < plane.width && y0 + y < plane.height)
      plane.at(x0 + x, y0 + y) = static_cast<uint16_t>(v);
  };

  if (mode == 0) {  // 8.4.4.2.5 INTRA_PLANAR
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x)
        out(x, y, ((n - 1 - x) * left(y) + (x + 1) * top(n) + (n - 1 - y) * top(x) +
                   (y + 1) * left(n) + n) >> (prm.log2_size + 1));
    return;
  }
  if (mode == 1) {  // 8.4.4.2.6 INTRA_DC
    int sum = n;
    for (int i = 0; i < n; ++i) sum += top(i) + left(i);
    const int dc = sum >> (prm.log2_size + 1);
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) out(x, y, dc);
    if (prm.c_idx == 0 && n < 32) {
      out(0, 0, (left(0) + 2 * dc + top(0) + 2) >> 2);
      for (int x = 1; x < n; ++x) out(x, 0, (top(x) + 3 * dc + 2) >> 2);
      for (int y = 1; y < n; ++y) out(0, y, (left(y) + 3 * dc + 2) >> 2);
    }
    return;
  }

  // 8.4.4.2.6 INTRA_ANGULAR2..34: ref[] runs along the main direction, ref[0] the corner.
  const int angle = kIntraPredAngle[mode];
  int ref_buf[3 * 32 + 1];
  int* ref = ref_buf + n;  // ref[-n..2n]
  const bool vertical = mode >= 18;
  auto main_ref = [&](int i) { return vertical ? top(i - 1) : left(i - 1); };
  auto side_ref = [&](int i) { return vertical ? left(i - 1) : top(i - 1); };
  for (int x = 0; x <= n; ++x) ref[x] = main_ref(x);
  if (angle < 0) {
    if (((n * angle) >> 5) < -1)
      for (int x = (n * angle) >> 5; x <= -1; ++x)
        ref[x] = side_ref((x * kInvAngle[mode] + 128) >> 8);
  } else {
    for (int x = n + 1; x <= 2 * n; ++x) ref[x] = main_ref(x);
  }
  for (int j = 0; j < n; ++j) {  // j runs across the main direction (y if vertical)
    const int i_idx = ((j + 1) * angle) >> 5;
    const int i_fact = ((j + 1) * angle) & 31;
    for (int i = 0; i < n; ++i) {
      const int v = i_fact ? ((32 - i_fact) * ref[i + i_idx + 1] + i_fact * ref[i + i_idx + 2] + 16) >> 5
                           : ref[i + i_idx + 1];
      if (vertical)
        out(i, j, v);
      else
        out(j, i, v);
    }
  }
  if (prm.c_idx == 0 && n < 32) {
    if (mode == 26)
      for (int y = 0; y < n; ++y) out(0, y, hevc_clip3(0, maxv, top(0) + ((left(y) - left(-1)) >> 1)));
    else if (mode == 10)
      for (int x = 0; x < n; ++x) out(x, 0, hevc_clip3(0, maxv, left(0) + ((top(x) - top(-1)) >> 1)));
  }
}

}  // namespace gvc
