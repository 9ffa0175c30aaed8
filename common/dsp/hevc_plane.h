// hevc_plane.h: 16-bit sample planes (8- and 10-bit HEVC pictures) as passed to the HEVC kernels
#pragma once

#include <cstddef>
#include <cstdint>

namespace gvc {

// A writable plane of samples stored in 16 bits; `stride` is in samples, not bytes.
struct HevcPlane {
  uint16_t* data = nullptr;
  ptrdiff_t stride = 0;
  int width = 0;
  int height = 0;

  uint16_t& at(int x, int y) const { return data[y * stride + x]; }
};

inline int hevc_clip3(int lo, int hi, int v) { return v < lo ? lo : (v > hi ? hi : v); }

}  // namespace gvc
