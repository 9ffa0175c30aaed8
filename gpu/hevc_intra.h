// hevc_intra.h (gpu): HEVC intra prediction plus residual of a whole picture's intra blocks in one CUDA launch, as a dataflow over their dependencies
//
// The CUDA counterpart of the intra step of hevc::reconstruct_picture (hevc_gather_intra_refs,
// hevc_intra_predict, then the residual), bit for bit the same.
//
// Scheme: an intra block reads reference samples of blocks that precede it in decoding order.
// The host finds, for each block, the earlier intra blocks that wrote the samples its
// availability mask lets it read (an owner map at the mask's granularity); samples of inter,
// PCM or absent blocks need no wait because they are complete before the launch. On the
// device, one warp per block: warps take blocks in decoding order from an atomic ticket, wait
// for the done flags of the block's dependencies, predict, add the residual, and raise the
// block's flag. Tickets follow the CTB wavefront of seed 001 (CTB column + 2 * CTB row), then
// decoding order. A warp only ever waits for blocks with smaller tickets, all of which were
// taken by warps that are running, so the launch cannot deadlock whatever the grid size. The
// parallelism is that of the picture's dependency graph: seed 001's wavefront over CTBs,
// refined down to single transform blocks and across slices and tiles, with no launch per wave.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "common/dsp/hevc_intra.h"
#include "common/dsp/hevc_itx.h"
#include "common/dsp/hevc_plane.h"
#include "gpu/device.h"

namespace gvc {
namespace cuda {

class HevcIntraCore {
 public:
  // Enqueues on `s` the prediction of every block of `blocks` (decoding order) into
  // planes[b.c_idx] (device memory), each followed by its residual when b.tu >= 0: the
  // nTbS*nTbS int16 residual (raster, saturated to 16 bits) at tus[b.tu].coeff_offset of
  // `residuals` (device memory; HevcResidualCore::run_to_residuals makes it). Blocks of 4x4 to
  // 32x32, bit depths 8..12; `log2_ctb_size` (CtbLog2SizeY) orders the work by CTB wavefront.
  // Returns when the work is queued; successive calls must use one stream.
  Status run(const std::vector<HevcIntraBlock>& blocks, const std::vector<HevcTu>& tus,
             const int16_t* residuals, const HevcPlane planes[3], int bit_depth_luma,
             int bit_depth_chroma, bool strong_intra_smoothing, int log2_ctb_size, cudaStream_t s);

  // A block as the kernel reads it.
  struct PackedBlock {
    uint64_t avail;
    uint32_t dep_begin, dep_end;  // its dependencies in the device dependency list
    int32_t residual;             // offset in `residuals`, or -1
    uint16_t x, y;
    uint8_t c_idx, log2_size, mode, pad;
  };

  // run() in two halves, for a caller that packs on other threads and uploads the packed
  // arrays with its own (the HEVC reconstructor: on the decoder's frame lanes).
  struct Packed {
    std::vector<PackedBlock> blocks;  // in the order of the launch
    std::vector<uint32_t> deps;
    int plane_w[3] = {}, plane_h[3] = {};  // the planes packed for
    // pack()'s scratch, kept for its buffers
    std::vector<PackedBlock> reordered;
    std::vector<uint32_t> reordered_deps;
    std::vector<int> wave;
    std::vector<uint32_t> pos, wave_start, order;
    // The block that wrote each unit of each plane, or -1: cleared only when the plane's size
    // changes, so an entry may be left from an earlier call (pack() tells those apart).
    std::vector<int32_t> owner[3];
    int owner_w[3] = {}, owner_h[3] = {};
  };
  // The host half: checks `blocks` against `tus` and planes of plane_w x plane_h samples,
  // finds each block's dependencies and orders them for the launch. Any thread, several at
  // once for different `p`; refuses what run() refuses.
  static Status pack(const std::vector<HevcIntraBlock>& blocks, const std::vector<HevcTu>& tus,
                     const int plane_w[3], const int plane_h[3], int log2_ctb_size, Packed& p);
  // The device half: queues on `s` the blocks of `p`, whose blocks and deps are at `blocks`
  // and `deps` in device memory (written before the work queued on `s`), into `planes` (of the
  // sizes packed for). Same stream rules as run().
  Status launch(const Packed& p, const PackedBlock* blocks, const uint32_t* deps, const int16_t* residuals,
                const HevcPlane planes[3], int bit_depth_luma, int bit_depth_chroma, bool strong_intra_smoothing,
                cudaStream_t s);

  // Device memory the core holds (its blocks, dependency lists and progress flags).
  size_t device_bytes() const { return blocks_dev_.size() + deps_dev_.size() + flags_dev_.size(); }

 private:
  static Status order_by_wavefront(const std::vector<HevcIntraBlock>& blocks, int log2_ctb_size, Packed& p);

  Packed packed_;        // run()'s
  StagingRing staging_;  // the packed blocks, then the dependency list
  DeviceBuffer blocks_dev_, deps_dev_, flags_dev_;
  int sm_count_ = 0;
};

}  // namespace cuda
}  // namespace gvc
