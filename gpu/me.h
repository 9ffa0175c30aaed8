// me.h (gpu): the CUDA motion search on device buffers, asynchronous on a caller's stream
//
// gpu/backend.cpp wraps this in gvc::MotionSearch (host/device staging, synchronisation);
// the benchmark and checkgpu call it directly with frames resident on the GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "common/dsp/me.h"
#include "gpu/device.h"

namespace gvc {
namespace cuda {

struct DevicePlane {
  const uint8_t* data = nullptr;  // device memory
  ptrdiff_t stride = 0;
  int width = 0;
  int height = 0;
};

// Scratch and tables of one motion-search instance (one per element instance). All calls
// are asynchronous on `stream`; none of them synchronises.
class MeCore {
 public:
  // Integer full search, then sub-pel refinement when params.subpel asks for it, of
  // partitions [0, refined_partitions) (MeParams::refined_partitions).
  // `predictors`: device memory, one per MB, or nullptr for (0,0). `out`: device memory,
  // mb_count(width) x mb_count(height) macroblocks.
  Status search(const DevicePlane& cur, const DevicePlane& ref, int range, uint32_t lambda,
                Subpel subpel, const MvCost* predictors, MbPartitions* out,
                cudaStream_t stream, int refined_partitions = kNumPartitions);

  // The stages one by one, for tests and benchmarks.
  Status integer_search(const DevicePlane& cur, const DevicePlane& ref, int range,
                        uint32_t lambda, const MvCost* predictors, MbPartitions* out,
                        cudaStream_t stream);
  Status build_qpel_planes(const DevicePlane& ref, int range, cudaStream_t stream);
  Status refine(const DevicePlane& cur, uint32_t lambda, Subpel subpel,
                const MvCost* predictors, MbPartitions* inout, cudaStream_t stream,
                int refined_partitions = kNumPartitions);

  // `out`: device memory of block_field_dims(size, ...) cols x rows.
  Status select_blocks(const MbPartitions* parts, int mb_cols, int mb_rows, BlockSize size,
                       MvCost* out, cudaStream_t stream);

  // Device memory held now, in bytes.
  size_t device_bytes() const { return tables_.size() + planes_.size(); }

 private:
  Status prepare_tables(int range);

  DeviceBuffer tables_;  // rank of each position, position of each rank (uint16 each)
  int tables_range_ = 0;
  DeviceBuffer planes_;  // full, b, h, j planes, padded (see me.cu)
  int planes_pad_ = 0;
  ptrdiff_t planes_pitch_ = 0;
  size_t planes_plane_bytes_ = 0;
  int planes_w_ = 0, planes_h_ = 0;
};

}  // namespace cuda
}  // namespace gvc
