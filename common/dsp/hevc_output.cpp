// hevc_output.cpp: 16-bit 4:2:0 planes to NV12 or P010 on the CPU (the reference for gpu/hevc_output.cu)
#include "common/dsp/hevc_output.h"

namespace gvc {

namespace {

inline void put16le(uint8_t* p, unsigned v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}

}  // namespace

void hevc_write_semi_planar(const HevcPlane src[3], int x0, int y0, int w, int h, int bit_depth,
                            const SemiPlanarView& dst) {
  const int cw = (w + 1) / 2, ch = (h + 1) / 2, cx0 = x0 / 2, cy0 = y0 / 2;
  if (bit_depth == 8) {
    for (int y = 0; y < h; ++y) {
      uint8_t* d = dst.y + y * dst.y_stride;
      const uint16_t* s = &src[0].at(x0, y0 + y);
      for (int x = 0; x < w; ++x) d[x] = uint8_t(s[x]);
    }
    for (int y = 0; y < ch; ++y) {
      uint8_t* d = dst.uv + y * dst.uv_stride;
      const uint16_t* cb = &src[1].at(cx0, cy0 + y);
      const uint16_t* cr = &src[2].at(cx0, cy0 + y);
      for (int x = 0; x < cw; ++x) {
        d[2 * x] = uint8_t(cb[x]);
        d[2 * x + 1] = uint8_t(cr[x]);
      }
    }
    return;
  }
  const int shift = 16 - bit_depth;
  for (int y = 0; y < h; ++y) {
    uint8_t* d = dst.y + y * dst.y_stride;
    const uint16_t* s = &src[0].at(x0, y0 + y);
    for (int x = 0; x < w; ++x) put16le(d + 2 * x, unsigned(s[x]) << shift);
  }
  for (int y = 0; y < ch; ++y) {
    uint8_t* d = dst.uv + y * dst.uv_stride;
    const uint16_t* cb = &src[1].at(cx0, cy0 + y);
    const uint16_t* cr = &src[2].at(cx0, cy0 + y);
    for (int x = 0; x < cw; ++x) {
      put16le(d + 4 * x, unsigned(cb[x]) << shift);
      put16le(d + 4 * x + 2, unsigned(cr[x]) << shift);
    }
  }
}

}  // namespace gvc
