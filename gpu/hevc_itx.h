// hevc_itx.h (gpu): HEVC scaling, inverse transform and residual addition of a whole picture's TUs in one CUDA launch
//
// The CUDA counterpart of HevcResidual::run (common/dsp/hevc_itx.h), bit for bit the same:
// seed 001's method, per TU the scaling (8.6.3), the column pass into shared memory (one
// thread per column), the row pass (one thread per row), then 8.6.7 with clipping.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/dsp/hevc_itx.h"
#include "common/dsp/hevc_plane.h"
#include "gpu/device.h"

namespace gvc {
namespace cuda {

// The scaling matrices HevcTu::scaling of a batch may point at: ScalingFactor (7.4.5) as
// hevc::PicParams::scaling_factor holds it, [sizeId = log2(nTbS) - 2][matrixId], each an
// nTbS*nTbS raster like HevcTu::scaling; null where unused. A TU's `scaling` must be one of
// the six pointers of its size (or null: flat 16); the contents are copied to the device
// (again only when they change).
struct HevcScalingMatrices {
  const uint8_t* m[4][6] = {};
};

class HevcResidualCore {
 public:
  // Enqueues on `s` the reconstruction of every TU of `tus` onto planes[tu.c_idx], which is
  // in device memory (HevcPlane::data a device pointer); `levels` (level_count values) is in
  // device memory too and indexed by HevcTu::coeff_offset as in the CPU reference. TUs must
  // not overlap (the order does not matter); a TU whose top-left lies outside its plane is
  // skipped, one partly outside is clipped, as the CPU does. Bit depths 8..16.
  // Returns when the work is queued: the planes are complete once `s` is synchronised; the
  // host arguments may change as soon as run() returns. Successive calls on one core must use
  // one stream (they reuse its device buffers).
  Status run(const std::vector<HevcTu>& tus, const int16_t* levels, size_t level_count,
             const HevcScalingMatrices& scaling, const HevcPlane planes[3], int bit_depth_luma,
             int bit_depth_chroma, cudaStream_t s);

  // The same, except that nothing is added to the planes: the residual of each TU (8.6.2's
  // resSamples, saturated to 16 bits, which changes no sum clipped to a bit depth of at most 15)
  // is stored at `residuals` + coeff_offset, nTbS*nTbS raster like the levels
  // (device memory, level_count values). The planes only bound the TUs, as in run().
  // `residuals` may be `levels` itself: a TU's levels are all read before its residual is
  // written, and TUs do not share levels (the HEVC reconstructor saves a buffer so).
  Status run_to_residuals(const std::vector<HevcTu>& tus, const int16_t* levels, size_t level_count,
                          const HevcScalingMatrices& scaling, const HevcPlane planes[3],
                          int bit_depth_luma, int bit_depth_chroma, int16_t* residuals, cudaStream_t s);

  // A TU as the kernel reads it.
  struct PackedTu {
    uint32_t coeff_offset;
    uint32_t scaling_offset;  // first of nTbS*nTbS factors in the device table (0: flat 16s)
    uint16_t x, y;
    uint8_t c_idx, qp;
    uint8_t bypass;  // transquant bypass (the direct groups hold bypass and transform-skip TUs)
    uint8_t pad;
  };

  // Device memory the core holds (its TU lists and the scaling table).
  size_t device_bytes() const { return tus_.size() + table_dev_.size(); }

 private:
  Status enqueue(const std::vector<HevcTu>& tus, const int16_t* levels, size_t level_count,
                 const HevcScalingMatrices& scaling, const HevcPlane planes[3], int bit_depth_luma,
                 int bit_depth_chroma, int16_t* residuals, cudaStream_t s);

  StagingRing staging_;                // the PackedTus, grouped by kernel variant
  std::vector<uint8_t> table_;         // host copy of the matrix table last uploaded
  std::vector<uint8_t> table_scratch_;  // this call's table, compared with table_
  DeviceBuffer tus_, table_dev_;
};

}  // namespace cuda
}  // namespace gvc
