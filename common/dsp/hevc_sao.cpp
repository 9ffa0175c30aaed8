// hevc_sao.cpp: HEVC sample adaptive offset, band and edge offset per CTB (8.7.3), CPU reference
#include "common/dsp/hevc_sao.h"

namespace gvc {
namespace {

// Table 8-13 (hPos, vPos) of the two neighbours per SaoEoClass.
constexpr int kEoPos[4][2][2] = {{{-1, 0}, {1, 0}}, {{0, -1}, {0, 1}}, {{-1, -1}, {1, 1}}, {{1, -1}, {-1, 1}}};

inline int sign(int v) { return (v > 0) - (v < 0); }

// 8.7.3.2 CTB modification process for one colour component.
void sao_ctb(const HevcSaoFrame& f, int rx, int ry, int c, const HevcPlane& src, const HevcPlane& dst) {
  const int ctb = ry * f.width_ctbs + rx;
  const HevcSaoCtb& s = f.ctbs[ctb];
  const int type = s.type_idx[c];
  const int shift = c ? 1 : 0;
  const int size = (1 << f.log2_ctb_size) >> shift;
  const int x0 = rx * size, y0 = ry * size;
  const int x1 = x0 + size < src.width ? x0 + size : src.width;
  const int y1 = y0 + size < src.height ? y0 + size : src.height;
  const int bd = f.bit_depth[c];
  const int maxv = (1 << bd) - 1;
  int band_table[32] = {};
  if (type == 1)
    for (int k = 0; k < 4; ++k) band_table[(k + s.band_position[c]) & 31] = k + 1;
  const int band_shift = bd - 5;
  // Samples SaoTypeIdx leaves alone (pcm/bypass units): looked up only where the CTB has any.
  bool any_no_filter = false;
  for (int yl = (y0 << shift) >> 2; yl < ((y1 << shift) + 3) >> 2 && !any_no_filter; ++yl)
    for (int xl = (x0 << shift) >> 2; xl < ((x1 << shift) + 3) >> 2; ++xl)
      if (f.no_filter[yl * f.no_filter_stride + xl]) {
        any_no_filter = true;
        break;
      }
  const int cls = s.eo_class[c];
  const int dx_a = kEoPos[cls][0][0], dy_a = kEoPos[cls][0][1];
  const int dx_b = kEoPos[cls][1][0], dy_b = kEoPos[cls][1][1];
  for (int y = y0; y < y1; ++y) {
    // Edge offset in the CTB's interior: both neighbours lie inside the CTB and the picture,
    // so none of the checks below can skip the sample.
    const bool inner_row = type == 2 && !any_no_filter && y > y0 && y < y1 - 1;
    for (int x = x0; x < x1; ++x) {
      if (inner_row && x > x0 && x < x1 - 1) {
        const int last = x1 - 1;
        const uint16_t* r = &src.at(0, y);
        uint16_t* out = &dst.at(0, y);
        const ptrdiff_t a = dy_a * src.stride + dx_a, b = dy_b * src.stride + dx_b;
        for (; x < last; ++x) {
          const int rec = r[x];
          const int e = 2 + sign(rec - r[x + a]) + sign(rec - r[x + b]);
          const int edge_idx = (e == 0 || e == 1 || e == 2) ? (e == 2 ? 0 : e + 1) : e;
          out[x] = static_cast<uint16_t>(hevc_clip3(0, maxv, rec + s.offset_val[c][edge_idx]));
        }
      }
      const int xl = x << shift, yl = y << shift;
      if (any_no_filter && f.no_filter[(yl >> 2) * f.no_filter_stride + (xl >> 2)]) continue;
      const int rec = src.at(x, y);
      int offset;
      if (type == 1) {
        offset = s.offset_val[c][band_table[rec >> band_shift]];
      } else {
        bool skip = false;
        int e = 2;
        for (int k = 0; k < 2 && !skip; ++k) {
          const int xn = x + kEoPos[s.eo_class[c]][k][0], yn = y + kEoPos[s.eo_class[c]][k][1];
          if (xn < 0 || yn < 0 || xn >= src.width || yn >= src.height) {
            skip = true;
            break;
          }
          const int dx = xn < x0 ? -1 : (xn >= x0 + size ? 1 : 0);
          const int dy = yn < y0 ? -1 : (yn >= y0 + size ? 1 : 0);
          if ((dx || dy) && !f.cross_ok[ctb * 9 + (dy + 1) * 3 + (dx + 1)]) {
            skip = true;
            break;
          }
          e += sign(rec - src.at(xn, yn));
        }
        if (skip) continue;
        const int edge_idx = (e == 0 || e == 1 || e == 2) ? (e == 2 ? 0 : e + 1) : e;
        offset = s.offset_val[c][edge_idx];
      }
      dst.at(x, y) = static_cast<uint16_t>(hevc_clip3(0, maxv, rec + offset));
    }
  }
}

}  // namespace

void HevcSao::run(const HevcSaoFrame& f, const HevcPlane src[3], const HevcPlane dst[3]) {
  for (int ry = 0; ry < f.height_ctbs; ++ry)
    for (int rx = 0; rx < f.width_ctbs; ++rx)
      for (int c = 0; c < 3; ++c) {
        const int ctb = ry * f.width_ctbs + rx;
        if (!f.enabled[ctb * 3 + c] || !f.ctbs[ctb].type_idx[c]) continue;
        sao_ctb(f, rx, ry, c, src[c], dst[c]);
      }
}

}  // namespace gvc
