// hevc_itx.h: HEVC scaling (dequantisation) and inverse transforms, 8.6.2-8.6.4, CPU reference
#pragma once

#include <cstdint>
#include <vector>

#include "common/dsp/hevc_plane.h"

namespace gvc {

// One transform block to reconstruct: its levels are scaled, inverse transformed and added to
// the prediction already in the picture (8.6.2 steps 1-4, then 8.6.7).
struct HevcTu {
  int x = 0, y = 0;           // top-left sample in its plane
  uint8_t c_idx = 0;          // 0 = Y, 1 = Cb, 2 = Cr
  uint8_t log2_size = 2;      // log2(nTbS), 2..5
  uint8_t qp = 0;             // qP of 8.6.2 (Qp'Y, Qp'Cb or Qp'Cr)
  bool transquant_bypass = false;
  bool transform_skip = false;
  bool dst = false;           // 4x4 luma of an intra CU: DST-VII instead of DCT (8.6.4.2)
  const uint8_t* scaling = nullptr;  // m[x][y] raster (nTbS*nTbS), or null for flat 16
  uint32_t coeff_offset = 0;  // first of nTbS*nTbS levels (raster, x fastest) in the batch
};

// Per-block entries (the CPU reference loops these; the CUDA version batches them).
// levels -> d[] scaled transform coefficients (8.6.3).
void hevc_scale_coeffs(const int16_t* levels, int32_t* d, int log2_size, int qp, int bit_depth,
                       const uint8_t* scaling);
// d[] -> residual r[] (8.6.4.2), in place; `skip` is transform_skip_flag.
void hevc_inverse_transform(int32_t* d, int log2_size, bool dst, bool skip, int bit_depth);
// r[] added to the plane with clipping to the bit depth (8.6.7).
void hevc_add_residual(const HevcPlane& plane, int x, int y, int log2_size, const int32_t* r,
                       int bit_depth);

// A picture's levels as the parse keeps them: of each TU only the 4x4 sub-blocks that hold
// nonzero levels, 16 levels each (4x4 raster, x fastest), with one entry per sub-block saying
// where it lies in the dense levels that HevcTu::coeff_offset indexes (nTbS*nTbS per TU): the
// offset of its first level in the low 30 bits, log2(nTbS) - 2 (the dense row length) in the
// top 2. At 1080p and 6 Mbit/s one sub-block in five holds levels.
constexpr uint32_t kHevcLevelBlockOffsetMask = (uint32_t(1) << 30) - 1;
inline uint32_t hevc_level_block(uint32_t dense_offset, int log2_size) {
  return dense_offset | uint32_t(log2_size - 2) << 30;
}
// Writes the n sub-blocks `blocks` (entries as above), whose levels are `packed` (16 each, in
// the same order), into `dense`, leaving its other values as they are.
void hevc_scatter_level_blocks(const uint32_t* blocks, size_t n, const int16_t* packed, int16_t* dense);

// Frame-level entry: every TU of `tus` (whose levels lie in `levels`) onto its plane.
// Blocks must not overlap; the order does not matter (intra pictures call it per TU instead,
// because prediction depends on the reconstructed neighbours).
struct HevcResidual {
  static void run(const std::vector<HevcTu>& tus, const int16_t* levels,
                  const HevcPlane planes[3], int bit_depth_luma, int bit_depth_chroma);
  static void run_one(const HevcTu& tu, const int16_t* levels, const HevcPlane& plane,
                      int bit_depth);
};

}  // namespace gvc
