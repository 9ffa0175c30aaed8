// picture.h: an I420 picture of whole macroblocks, owned by the encoder (source copy, reconstruction)
#pragma once

#include <cstdint>
#include <vector>

#include "common/dsp/plane.h"

namespace gvc::h264 {

// An input frame of params.width x params.height: I420 in host memory, or in the memory of
// the backend's device (loc Device; then NV12 too, Cb and Cr interleaved in plane[1]).
struct FrameIn {
  const uint8_t* plane[3];
  int stride[3];
  MemoryLocation loc = MemoryLocation::Host;
  bool nv12 = false;  // device frames only
};

struct Picture {
  int mb_width = 0;
  int mb_height = 0;
  std::vector<uint8_t> plane[3];  // [0] Y (16 * mb_width wide), [1] Cb, [2] Cr (8 * mb_width)
  int stride[3] = {0, 0, 0};

  void alloc(int mbw, int mbh) {
    mb_width = mbw;
    mb_height = mbh;
    stride[0] = 16 * mbw;
    stride[1] = stride[2] = 8 * mbw;
    plane[0].assign(size_t(stride[0]) * 16 * mbh, 0);
    plane[1].assign(size_t(stride[1]) * 8 * mbh, 0);
    plane[2].assign(size_t(stride[2]) * 8 * mbh, 0);
  }
  int width(int p) const { return p ? 8 * mb_width : 16 * mb_width; }
  int height(int p) const { return p ? 8 * mb_height : 16 * mb_height; }
  uint8_t* at(int p, int x, int y) { return plane[p].data() + size_t(y) * stride[p] + x; }
  const uint8_t* at(int p, int x, int y) const { return plane[p].data() + size_t(y) * stride[p] + x; }
  PlaneView view(int p) const { return {plane[p].data(), stride[p], width(p), height(p), MemoryLocation::Host}; }
};

}  // namespace gvc::h264
