// plane.h: views of 8-bit sample planes in host or device memory, as passed to the kernels
#pragma once

#include <cstddef>
#include <cstdint>

namespace gvc {

enum class MemoryLocation { Host, Device };

// A read-only 8-bit plane. `stride` is in bytes; rows are `width` samples wide.
struct PlaneView {
  const uint8_t* data = nullptr;
  ptrdiff_t stride = 0;
  int width = 0;
  int height = 0;
  MemoryLocation loc = MemoryLocation::Host;
};

// A writable 8-bit plane.
struct MutablePlaneView {
  uint8_t* data = nullptr;
  ptrdiff_t stride = 0;
  int width = 0;
  int height = 0;
  MemoryLocation loc = MemoryLocation::Host;

  PlaneView view() const { return {data, stride, width, height, loc}; }
};

// Reads outside the plane take the nearest edge sample (the frame is edge-extended without
// limit, as H.264 does for reference pictures).
inline int clamp_coord(int v, int size) { return v < 0 ? 0 : (v >= size ? size - 1 : v); }

inline uint8_t sample_clamped(const PlaneView& p, int x, int y) {
  return p.data[clamp_coord(y, p.height) * p.stride + clamp_coord(x, p.width)];
}

}  // namespace gvc
