// nv12_pan.h: the element benchmarks' content: the Elephants painting ($GVC_ELEPHANTS, else hashed noise) and frame k of a pan over it as NV12
#pragma once

#include <gst/video/video.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace gvc::bench {

struct Painting {
  std::vector<uint8_t> pixels;
  int width = 0, height = 0;
  bool real = false;
};

inline Painting load_painting() {
  Painting p;
  const char* path = getenv("GVC_ELEPHANTS");
  p.width = 4096;
  p.height = 2304;
  p.pixels.resize(size_t(p.width) * p.height);
  if (path) {
    FILE* f = fopen(path, "rb");
    if (f && fread(p.pixels.data(), 1, p.pixels.size(), f) == p.pixels.size()) p.real = true;
    if (f) fclose(f);
  }
  if (!p.real) {
    uint32_t s = 12345;
    for (auto& v : p.pixels) {
      s = s * 1664525u + 1013904223u;
      v = uint8_t(s >> 24);
    }
  }
  return p;
}

// Frame k of the pan: the painting cropped at (16 + 3k, 8 + k) (clamped to fit), grey chroma.
inline void fill_nv12(GstVideoFrame* frame, const Painting& p, int k) {
  const int w = GST_VIDEO_FRAME_WIDTH(frame), h = GST_VIDEO_FRAME_HEIGHT(frame);
  const int ox = std::min(16 + 3 * k, p.width - w), oy = std::min(8 + k, p.height - h);
  auto* y = static_cast<uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(frame, 0));
  const int ys = GST_VIDEO_FRAME_PLANE_STRIDE(frame, 0);
  for (int r = 0; r < h; r++)
    memcpy(y + size_t(r) * ys, &p.pixels[size_t(oy + r) * p.width + ox], size_t(w));
  auto* uv = static_cast<uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(frame, 1));
  const int uvs = GST_VIDEO_FRAME_PLANE_STRIDE(frame, 1);
  for (int r = 0; r < h / 2; r++) memset(uv + size_t(r) * uvs, 128, size_t(w));
}

}  // namespace gvc::bench
