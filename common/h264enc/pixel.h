// pixel.h: small integer helpers (clipping, absolute value) for code shared by CPU and CUDA
#pragma once

#include <cstdint>

#include "common/util/hd.h"

namespace gvc::h264 {

GVC_HD int iabs(int v) { return v < 0 ? -v : v; }
GVC_HD int clip3(int lo, int hi, int v) { return v < lo ? lo : (v > hi ? hi : v); }
GVC_HD uint8_t clip1(int v) { return uint8_t(v < 0 ? 0 : (v > 255 ? 255 : v)); }

}  // namespace gvc::h264
