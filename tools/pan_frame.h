// pan_frame.h: frame i of the H.264 benchmarks' pan over a picture (I420), its chroma taken from other parts of the picture
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/h264enc/picture.h"

namespace gvc::bench {

// Frame i of a pan of (2, 1) samples per frame over the luma picture px(x, y) reads (the
// Elephants painting, 4096x2304), as a w x h I420 frame whose Cb and Cr planes are two other
// parts of the same picture (so that chroma has real texture and motion too).
template <class Px>
std::vector<uint8_t> pan_frame(Px px, int w, int h, int i) {
  std::vector<uint8_t> fr(size_t(w) * size_t(h) * 3 / 2);
  const int ox = 2 * i, oy = i;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) fr[size_t(y) * size_t(w) + size_t(x)] = px(ox + x, oy + y);
  uint8_t* u = fr.data() + size_t(w) * size_t(h);
  uint8_t* v = u + size_t(w / 2) * size_t(h / 2);
  for (int y = 0; y < h / 2; y++)
    for (int x = 0; x < w / 2; x++) {
      u[size_t(y) * size_t(w / 2) + size_t(x)] = uint8_t(64 + px(ox + 2 * x + 2000 - w / 2, oy + 2 * y + 1100 - h / 2) / 2);
      v[size_t(y) * size_t(w / 2) + size_t(x)] = uint8_t(192 - px(ox / 2 + x + 100, oy / 2 + y + 1200) / 2);
    }
  return fr;
}

// The encoder's view of a contiguous w x h I420 frame at `fr` (pan_frame's layout; host
// memory, or device memory with loc set by the caller).
inline h264::FrameIn i420_frame_in(const uint8_t* fr, int w, int h) {
  h264::FrameIn in;
  in.plane[0] = fr;
  in.plane[1] = fr + size_t(w) * size_t(h);
  in.plane[2] = in.plane[1] + size_t(w / 2) * size_t(h / 2);
  in.stride[0] = w;
  in.stride[1] = in.stride[2] = w / 2;
  return in;
}

}  // namespace gvc::bench
