// recon.h: the sample reconstruction of one picture, recorded while its slices are parsed and run afterwards (seed 001)
#pragma once

#include <cstdint>
#include <vector>

#include "common/dsp/hevc_intra.h"
#include "common/dsp/hevc_itx.h"
#include "common/dsp/hevc_mc.h"
#include "common/hevcdec/params.h"
#include "common/hevcdec/picture.h"

namespace gvc::hevc {

// One intra transform block (8.4.4.1) of one component, in decoding order. The availability
// of its 4N+1 reference samples (8.4.4.2.1: 6.4.1 plus constrained_intra_pred_flag) is decided
// at parse time, per unit of 4 luma samples (2 chroma samples in 4:2:0), the granularity at
// which it can change: bit k is unit k of the reference array in the order of HevcIntraRefs
// (left column bottom up, then the corner p[-1][-1] as its own unit, then the top row).
struct IntraBlock {
  uint16_t x = 0, y = 0;  // top-left sample in the component's plane
  uint8_t c_idx = 0;
  uint8_t log2_size = 2;  // log2(nTbS)
  uint8_t mode = 0;       // predModeIntra
  uint64_t avail = 0;
  int32_t tu = -1;        // its residual in PictureRecon::intra_tus, or -1 (cbf 0)
};

// One PCM coding block (7.3.8.7): samples already shifted to the picture's bit depths (8.4.4.1
// with pcm_flag), luma nCbS*nCbS then Cb and Cr (nCbS/2)^2 each, raster.
struct PcmBlock {
  uint16_t x = 0, y = 0;  // luma
  uint8_t log2_size = 3;
  uint32_t offset = 0;    // into PictureRecon::pcm_samples
};

// Everything the sample reconstruction of a picture needs besides its reference pictures. The
// steps are independent of each other in this order: PCM blocks, inter prediction of every
// prediction block, the residuals of inter coding units (any order), then the intra blocks in
// decoding order, each followed by its residual. An intra block only reads samples of blocks
// that precede it in decoding order (6.4.1), which the earlier steps or earlier intra blocks
// have completed, so the result is that of the block-by-block order of 8.4 and 8.5.
struct PictureRecon {
  std::vector<const Picture*> refs;  // HevcMcPb::ref indexes this list
  std::vector<HevcMcPb> pbs;
  std::vector<HevcTu> inter_tus;
  std::vector<HevcTu> intra_tus;
  std::vector<IntraBlock> intra;
  std::vector<int16_t> levels;  // of every TU (HevcTu::coeff_offset)
  std::vector<PcmBlock> pcm;
  std::vector<uint16_t> pcm_samples;

  void clear();
  // The index of `p` in `refs`, adding it when it is new.
  uint8_t ref_index(const Picture* p);
};

// Runs the recorded reconstruction of `pic` on the CPU (the reference for the CUDA version).
void reconstruct_picture(const PicParams& pp, const PictureRecon& r, Picture& pic);

// Reference samples of an intra block as the availability mask describes them (unavailable
// samples 0, as 8.4.4.2.2 substitutes them); what the CUDA intra kernel gathers on the device.
void gather_intra_refs(const IntraBlock& b, const HevcPlane& plane, HevcIntraRefs& refs);

}  // namespace gvc::hevc
