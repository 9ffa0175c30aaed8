// mc.h: inter prediction samples of P macroblock partitions (8.4.2.2) from reference pictures
#pragma once

#include <cstdint>
#include <vector>

#include "common/dsp/plane.h"
#include "common/h264enc/picture.h"

namespace gvc::h264 {

// A reference luma plane with its three half-pel planes (b, h, j of 8.4.2.2.1) over a border
// of kPad samples. Beyond 3 samples outside the picture every plane is constant along the
// extension, so clamping a coordinate into the padded area reads the sample of the infinitely
// edge-extended picture; quarter-pel samples are rounded averages of two of these planes.
class LumaRefPlanes {
 public:
  static constexpr int kPad = 8;

  void build(const PlaneView& ref);

  // w x h luma prediction (stride dst_stride) of the block at luma (x, y) displaced by the
  // quarter-pel vector mv; equals luma_qpel_sample of me.h sample for sample.
  void predict(int x, int y, int w, int h, const int16_t mv[2], uint8_t* dst, int dst_stride) const;

 private:
  // Sample (x, y) of plane p (0 full, 1 b, 2 h, 3 j), picture coordinates.
  int at(int p, int x, int y) const {
    x = x < -kPad ? -kPad : (x >= w_ - kPad ? w_ - kPad - 1 : x);
    y = y < -kPad ? -kPad : (y >= h_ - kPad ? h_ - kPad - 1 : y);
    return plane_[p][size_t(y + kPad) * size_t(w_) + size_t(x + kPad)];
  }

  int w_ = 0, h_ = 0;  // padded size
  std::vector<uint8_t> plane_[4];
};

// A reconstructed picture in the decoded picture buffer, with its luma half-pel planes.
struct RefPicture {
  Picture pic;
  LumaRefPlanes luma;
};

// w x h chroma prediction (stride dst_stride) of the block at chroma (x, y) with the luma
// vector mv, i.e. an eighth-pel chroma vector, bilinear from the edge-extended plane (8.4.2.2.2).
void mc_chroma(const PlaneView& ref, int x, int y, int w, int h, const int16_t mv[2],
               uint8_t* dst, int dst_stride);

}  // namespace gvc::h264
