// hevc_loopfilter.h (gpu): HEVC deblocking (8.7.2) and SAO (8.7.3) of a whole picture, each in a few CUDA launches
//
// The CUDA counterparts of HevcDeblock::run (common/dsp/hevc_deblock.h) and HevcSao::run
// (common/dsp/hevc_sao.h), bit for bit the same.
//
// Deblocking keeps the picture-wide order of the CPU reference with two launches on one
// stream: every vertical edge (EDGE_VER), then every horizontal edge (EDGE_HOR). Within a
// pass the edges are independent: a luma edge reads 4 samples and writes at most 3 on each
// side, a chroma edge reads 2 and writes 1, and edges are 8 samples apart, so no edge reads
// what another edge of its pass writes; filtering in place in parallel gives what the CPU's
// raster walk gives. The horizontal launch reads the output of the vertical one.
//
// SAO reads the deblocked picture while it writes the output, so it needs a copy: the core
// makes it, on the device, in a buffer of its own (only of the components that have SAO in
// some CTB), then writes the SAO'd samples back into the planes. Samples SAO leaves alone
// are not written.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/dsp/hevc_deblock.h"
#include "common/dsp/hevc_plane.h"
#include "common/dsp/hevc_sao.h"
#include "gpu/device.h"

namespace gvc {
namespace cuda {

class HevcDeblockCore {
 public:
  HevcDeblockCore() = default;
  HevcDeblockCore(const HevcDeblockCore&) = delete;
  HevcDeblockCore& operator=(const HevcDeblockCore&) = delete;

  // Enqueues on `s` the deblocking of `planes` (4:2:0, in device memory: HevcPlane::data a
  // device pointer), in place. The arrays of `f` are host memory, uploaded here as they are
  // (the kernels read them as the CPU does). f.width and f.height must be multiples of 4 (the
  // CPU's 4-sample segments would otherwise reach past the picture;
  // pic_width/height_in_luma_samples are multiples of MinCbSizeY anyway) and the planes at
  // least that large (chroma half of it). Edges on the left and top picture boundary are never
  // filtered (filterEdgeFlag 0), whatever their bS (the decoder leaves it 0 there; the CPU
  // would read outside the picture). Bit depths 8..16.
  // Returns when the work is queued: the planes are complete once `s` is synchronised; the
  // host arguments may change as soon as run() returns. Successive calls on one core must use
  // one stream (they reuse its buffers); a call first waits until the upload of the call before
  // the previous one has left its pinned staging buffer (StagingRing).
  Status run(const HevcDeblockFrame& f, const HevcPlane planes[3], cudaStream_t s);

  // run() in two halves, for a caller that copies the arrays on other threads and uploads them
  // with its own (the HEVC reconstructor: on the decoder's frame lanes). check() refuses what
  // run() refuses of `f`; the arrays take array_bytes(f) bytes, written by copy_arrays (any
  // thread); launch() queues the filter with them at `arrays` in device memory (written before
  // the work queued on `s`; the arrays of `f` are not read).
  static Status check(const HevcDeblockFrame& f);
  static size_t array_bytes(const HevcDeblockFrame& f);
  static void copy_arrays(const HevcDeblockFrame& f, uint8_t* out);
  Status launch(const HevcDeblockFrame& f, const uint8_t* arrays, const HevcPlane planes[3], cudaStream_t s);
  // Device memory the core holds (its arrays).
  size_t device_bytes() const { return arrays_dev_.size(); }

 private:
  StagingRing staging_;      // bs_v, bs_h, no_filter, qp_y, beta, tc offsets, one after another
  DeviceBuffer arrays_dev_;  // the same on the device
};

class HevcSaoCore {
 public:
  HevcSaoCore() = default;
  HevcSaoCore(const HevcSaoCore&) = delete;
  HevcSaoCore& operator=(const HevcSaoCore&) = delete;

  // Enqueues on `s` SAO of `planes` (4:2:0, in device memory), in place: `planes` hold the
  // deblocked picture on entry and the final one once `s` is synchronised. The arrays of `f`
  // are host memory, uploaded here; the plane sizes bound the CTBs as on the CPU. Components
  // without an enabled CTB of SaoTypeIdx 1 or 2 are not touched. log2 CTB size
  // 4..6; SaoTypeIdx 0..2 and, where edge offset is used, SaoEoClass 0..3; bit depths 8..16.
  // Same queuing, stream and staging rules as HevcDeblockCore::run.
  Status run(const HevcSaoFrame& f, const HevcPlane planes[3], cudaStream_t s);

  // SAO of one CTB and component as the kernel reads it, [ctb * 3 + cIdx].
  struct alignas(16) Params {
    int16_t offset_val[5];  // SaoOffsetVal
    uint8_t type_idx;       // SaoTypeIdx, 0 also where the CTB's slice has SAO off for cIdx
    uint8_t band_or_class;  // sao_band_position (band offset) or SaoEoClass (edge offset)
    uint16_t cross_ok;      // bit (dy + 1) * 3 + (dx + 1): HevcSaoFrame::cross_ok of the CTB
    uint16_t pad;
  };

  // Device memory the core holds: its arrays, and (edge_bytes) the deblocked samples of its
  // tiles' edges.
  size_t device_bytes() const { return arrays_dev_.size() + edges_.size(); }
  size_t edge_bytes() const { return edges_.size(); }

 private:
  StagingRing staging_;      // Params of every CTB, then the no_filter rows SAO reads
  DeviceBuffer arrays_dev_;  // the same on the device
  DeviceBuffer edges_;  // the deblocked first and last rows and columns of the kernel's tiles
};

}  // namespace cuda
}  // namespace gvc
