// frame_recon.h: the reconstruction stage of the H.264 encoder (residual coding, reconstruction, deblocking of a decided frame)
//
// A backend may bring its own (the CUDA backend's runs on the GPU: gpu/h264_recon.h); every
// implementation gives the bits of the CPU one, which runs recon_mb.h in raster order and
// deblock.h's deblock_picture.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/h264enc/deblock.h"
#include "common/h264enc/macroblock.h"
#include "common/h264enc/mc.h"
#include "common/h264enc/picture.h"
#include "common/util/status.h"

namespace gvc::h264 {

struct ReconJob {
  const Picture* src = nullptr;  // the source, edge-extended to whole macroblocks
  Picture* rec = nullptr;        // out: the reconstruction after the loop filter (if enabled)
  // RefPicList0: num_refs pictures. Each has an id that stays with its samples as long as it
  // is a reference, so an implementation may keep its own copy of them (the GPU's DPB).
  const RefPicture* const* refs = nullptr;
  const uint64_t* ref_ids = nullptr;
  int num_refs = 0;
  uint64_t rec_id = 0;           // the id `rec` will have as a reference
  Macroblock* mbs = nullptr;     // decisions in; levels, cbp, TotalCoeff, final mb_type out
  int mb_width = 0, mb_height = 0;
  int qp = 26, qpc = 26;
  bool p_slice = false;
  bool deblock = true;
  DeblockParams deblock_params;
};

class FrameReconstructor {
 public:
  virtual ~FrameReconstructor() = default;
  virtual const char* name() const = 0;
  virtual Status run(const ReconJob& job) = 0;
};

std::unique_ptr<FrameReconstructor> make_cpu_reconstructor();

}  // namespace gvc::h264
