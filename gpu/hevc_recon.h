// hevc_recon.h (gpu): the reconstruction and loop filters of an HEVC picture on the GPU (hevc::Reconstructor), with the reference pictures kept on the device
//
// The CUDA counterpart of hevc::reconstruct_picture followed by hevc::apply_loop_filters, bit
// for bit the same, behind the decoder's Reconstructor interface (Decoder::set_reconstructor).
// On one stream: the levels are uploaded; HevcMcCore predicts every prediction block from the
// reference pictures, which stay on the device from their own decoding; HevcResidualCore adds
// the inter residuals and computes the intra residuals into a buffer; HevcIntraCore predicts
// the intra blocks in their dependency order and adds those residuals; HevcDeblockCore and
// HevcSaoCore filter the picture; the result is downloaded into the host picture, which the
// decoder outputs. PCM samples are written by the host and uploaded with the picture. A
// reference picture that this reconstructor did not make (decoded before it was set, or
// generated for a missing reference) is uploaded from the host.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/hevcdec/loop_filter.h"
#include "common/hevcdec/recon.h"
#include "gpu/device.h"
#include "gpu/hevc_intra.h"
#include "gpu/hevc_itx.h"
#include "gpu/hevc_loopfilter.h"
#include "gpu/hevc_mc.h"

namespace gvc {
namespace cuda {

class HevcCudaReconstructor : public hevc::Reconstructor {
 public:
  explicit HevcCudaReconstructor(int device_id = 0);

  bool run(const hevc::PicParams& pp, const hevc::FrameState& fs, const hevc::PictureRecon& r,
           hevc::Picture& pic, std::string& err) override;
  void forget_pictures() override { slots_.clear(); }

  Status reconstruct(const hevc::PicParams& pp, const hevc::FrameState& fs, const hevc::PictureRecon& r,
                     hevc::Picture& pic);
  // Device memory held for pictures (the DPB on the GPU), in bytes.
  size_t picture_bytes() const;

 private:
  // A picture on the device: three planes of 16-bit samples in one allocation, tightly packed.
  struct Slot {
    const hevc::Picture* pic = nullptr;
    uint64_t decode_index = 0;
    uint64_t last_use = 0;
    DeviceBuffer buf;
    HevcPlane plane[3];
  };
  // The slot of `p`: its device copy when there is one (`found`), else a slot to fill.
  Slot& slot_for(const hevc::Picture& p, bool& found);
  Status upload(const hevc::Picture& p, Slot& d);
  Status download(const Slot& d, hevc::Picture& p);

  static constexpr size_t kMaxSlots = 24;  // the DPB's 16 pictures, the current one, spares

  int device_id_;
  Stream stream_;
  std::vector<Slot> slots_;
  uint64_t use_counter_ = 0;
  DeviceBuffer levels_, residuals_;
  HevcMcCore mc_;
  HevcResidualCore inter_residual_, intra_residual_;
  HevcIntraCore intra_;
  HevcDeblockCore deblock_;
  HevcSaoCore sao_;
  hevc::LoopFilterPlan plan_;
};

}  // namespace cuda
}  // namespace gvc
