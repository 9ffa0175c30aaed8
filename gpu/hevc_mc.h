// hevc_mc.h (gpu): HEVC inter sample prediction (8.5.3.3) of a whole picture's prediction blocks in one CUDA launch
//
// The CUDA counterpart of HevcMc::run (common/dsp/hevc_mc.h), bit for bit the same: each warp
// predicts one 8x8 tile of one component of one PB (both lists, then the weighting), so a
// picture of any mix of 4x8..64x64 PBs is one grid of tiles.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/dsp/hevc_mc.h"
#include "common/dsp/hevc_plane.h"
#include "gpu/device.h"

namespace gvc {
namespace cuda {

class HevcMcCore {
 public:
  HevcMcCore() = default;
  HevcMcCore(const HevcMcCore&) = delete;
  HevcMcCore& operator=(const HevcMcCore&) = delete;

  // Enqueues on `s` the prediction of every PB of `b` into `dst` (three planes, 4:2:0). The
  // planes of b.refs and of `dst` are in device memory (HevcPlane::data a device pointer); the
  // batch itself (refs array, PB list) is host memory and may change as soon as run() returns.
  // As on the CPU: samples of a PB outside its destination plane are not written, reference
  // sample positions are clipped into the reference plane, PBs without a prediction list are
  // skipped. PBs must not overlap (the order of their writes is not defined).
  // Refused (nothing written into `dst`): bit depths outside 8..12, PBs larger than 64x64 or at
  // negative positions, a reference index beyond n_refs, a missing plane of a reference that a
  // PB predicting something inside `dst` reads, explicit weights outside 7.4.7.3's ranges
  // (denominators 0..7, weights -128..255, offsets -128..127).
  // Returns when the work is queued: `dst` is complete once `s` is synchronised. Successive
  // calls on one core must use one stream (they reuse its buffers); a call first waits until
  // the upload of the call before the previous one has left the pinned staging buffers
  // (StagingRing).
  Status run(const HevcMcBatch& b, const HevcPlane dst[3], cudaStream_t s);

  // A PB as the kernel reads it.
  struct PackedPb {
    uint16_t x, y;  // luma samples
    uint8_t w, h;   // luma samples, 1..64
    uint8_t flags;  // bit 0 predFlagL0, bit 1 predFlagL1, bit 2 explicit weighting
    uint8_t ref[2];
    uint8_t log2_wd_base[3];
    int16_t mv[2][2];
    int16_t weight[2][3];  // explicit weighting only (else 0), as the offsets
    int8_t offset[2][3];
  };

  // run() in two halves, for a caller that packs on other threads and uploads the packed
  // arrays with its own (the HEVC reconstructor: on the decoder's frame lanes).
  static constexpr int kMaxRefs = 256;  // HevcMcPb::ref has 8 bits
  struct Packed {
    std::vector<PackedPb> pbs;         // the PBs that write something, checked
    std::vector<uint32_t> first_tile;  // where the tiles of each start: pbs.size() + 1 entries
    std::vector<uint32_t> block_pb;    // the PB of each block's first tile
    uint32_t n_tiles = 0;
    int n_refs = 0;                    // b.n_refs, clamped to 0..kMaxRefs
    uint32_t used_refs[kMaxRefs / 32] = {};  // bit i: a PB reads reference i
    int bit_depth_y = 8, bit_depth_c = 8;
    int plane_w[3] = {}, plane_h[3] = {};   // the destination planes packed for
  };
  // The host half: checks and packs the PBs of `b` for destination planes of plane_w x plane_h
  // samples (b.refs is not read; launch() checks the planes of the references used). Any
  // thread, several at once for different `p`; refuses what run() refuses.
  static Status pack(const HevcMcBatch& b, const int plane_w[3], const int plane_h[3], Packed& p);
  // The device half: queues on `s` the prediction of `p`, whose pbs, first_tile and block_pb
  // are at `pbs`, `first_tile` and `block_pb` in device memory (written before the work queued
  // on `s`), from the n_refs x 3 device planes `refs` (a host array) into `dst` (device
  // planes of the sizes packed for). Same stream and staging rules as run().
  Status launch(const Packed& p, const HevcPlane (*refs)[3], int n_refs, const PackedPb* pbs,
                const uint32_t* first_tile, const uint32_t* block_pb, const HevcPlane dst[3], cudaStream_t s);

  // Device memory the core holds (its packed arrays and the reference planes' table).
  size_t device_bytes() const { return dev_.size() + refs_dev_.size(); }

 private:
  Packed packed_;              // run()'s
  StagingRing staging_;        // run()'s packed arrays
  StagingRing refs_staging_;   // the reference planes
  DeviceBuffer dev_;           // run()'s packed arrays on the device
  DeviceBuffer refs_dev_;      // the reference planes on the device
};

}  // namespace cuda
}  // namespace gvc
