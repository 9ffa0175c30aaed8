// recon.h: the sample reconstruction of one picture, recorded while its slices are parsed and run afterwards (seed 001)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/dsp/hevc_intra.h"
#include "common/dsp/hevc_itx.h"
#include "common/dsp/hevc_mc.h"
#include "common/hevcdec/decoder.h"
#include "common/hevcdec/loop_filter.h"
#include "common/hevcdec/params.h"
#include "common/hevcdec/picture.h"

namespace gvc::hevc {

// One PCM coding block (7.3.8.7): samples already shifted to the picture's bit depths (8.4.4.1
// with pcm_flag), luma nCbS*nCbS then Cb and Cr (nCbS/2)^2 each, raster.
struct PcmBlock {
  uint16_t x = 0, y = 0;  // luma
  uint8_t log2_size = 3;
  uint32_t offset = 0;    // into PictureRecon::pcm_samples
};

// What a reconstructor made of a picture's records ahead of its run() (Reconstructor::prepare).
struct PreparedRecon {
  virtual ~PreparedRecon() = default;
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
  std::vector<HevcIntraBlock> intra;  // HevcIntraBlock::tu indexes intra_tus
  // The levels of every TU, as their 4x4 sub-blocks that hold nonzero levels (hevc_scatter_level_blocks):
  // 16 levels per sub-block in `levels`, then in the first n_level_rows arrays of `level_rows`,
  // and one entry each in `level_blocks`, which places it in the dense levels (nTbS*nTbS per TU
  // at HevcTu::coeff_offset, `dense_levels` in all). WPP rows parsed on threads of their own
  // leave their levels in level_rows (append_recon moves them in), rather than copying them
  // once more; level_count(), copy_levels() and flatten_levels() read them as one.
  std::vector<int16_t> levels;
  std::vector<std::vector<int16_t>> level_rows;  // kept from one picture to the next for their capacity
  size_t n_level_rows = 0;
  std::vector<uint32_t> level_blocks;
  uint32_t dense_levels = 0;
  std::vector<PcmBlock> pcm;
  std::vector<uint16_t> pcm_samples;
  // The loop filters' plan (plan_loop_filters of the picture's FrameState), when the decoder
  // made it already: with frame threads each picture's lane plans after its parse, so that the
  // reconstructor's thread need not. A reconstructor uses it when `loop_filters_planned`.
  LoopFilterPlan loop_filters;
  bool loop_filters_planned = false;
  // Reconstructor::prepare's work on these records, kept from one picture to the next for its
  // buffers; it is this picture's while `prepared_ready` (which clear() resets).
  std::unique_ptr<PreparedRecon> prepared;
  bool prepared_ready = false;

  void clear();
  size_t level_count() const;  // 16 per entry of level_blocks
  // Copies the sub-blocks' levels, in order, to `to` (level_count() of them).
  void copy_levels(int16_t* to) const;
  // Writes the dense levels to `to` (dense_levels of them): zeros where no sub-block lies.
  void expand_levels(int16_t* to) const;
  // Moves the levels of level_rows into `levels`, after those it has.
  void flatten_levels();
  // The index of `p` in `refs`, adding it when it is new.
  uint8_t ref_index(const Picture* p);
};

// The inter prediction of `r`'s PBs as one batch, reading the reference planes `refs`
// (r.refs.size() x 3; null for a batch only packed, whose planes are given later).
HevcMcBatch mc_batch(const PicParams& pp, const PictureRecon& r, const HevcPlane (*refs)[3]);

// Runs the recorded reconstruction of `pic` on the CPU (the reference for the CUDA version).
void reconstruct_picture(const PicParams& pp, const PictureRecon& r, Picture& pic);

// Writes the PCM blocks of `r` into `pic` (the first step of reconstruct_picture).
void write_pcm_blocks(const PictureRecon& r, Picture& pic);

// Another place to run the work of reconstruct_picture and apply_loop_filters, such as a GPU
// (gpu/hevc_recon.h). It must give the same samples.
class Reconstructor {
 public:
  virtual ~Reconstructor() = default;
  // Reconstructs and loop-filters `pic`, leaving the result in its host planes as
  // reconstruct_picture and apply_loop_filters do, or only on the device while
  // keeps_pictures() is true (the work may then still be running when run() returns); false
  // with a message in `err` when the device fails.
  virtual bool run(const PicParams& pp, const FrameState& fs, const PictureRecon& r, Picture& pic,
                   std::string& err) = 0;
  // Whether run() leaves the samples on the device only. The decoder then hands every output
  // picture that run() made to output() instead of copying its host planes, and makes its
  // calls of run() and output() on a thread of its own, in decoding order, while it parses the
  // next picture (no two calls at once; the Picture objects a call is given are not reused
  // before it returns).
  virtual bool keeps_pictures() const { return false; }
  // Called on the decoder's thread when it queues a call for that thread of its own: what that
  // thread runs just before the call, so that it works as on the caller's thread (the
  // caller's CUDA context current, say). Empty: nothing.
  virtual std::function<void()> thread_entry() { return {}; }
  // Sets f.device to `pic`, cropped to its conformance window (the decoder fills the other
  // fields of `f`). Called when the DPB outputs `pic`, before a later picture is
  // reconstructed; false with a message in `err` when the picture is not on the device.
  virtual bool output(const Picture& pic, DecodedFrame& f, std::string& err) {
    (void)pic;
    (void)f;
    err = "this reconstructor keeps no pictures";
    return false;
  }
  // With frame threads: called on the lane of `pic` once its parse is done and its loop
  // filters planned (r.loop_filters_planned), before run() of `pic`, for several pictures at
  // once, each with its own `r`, with no device context made current. Host work that run()
  // would do on its one thread may be done here and kept in r.prepared (setting
  // r.prepared_ready); run() must give the same result with or without it, and reports what
  // is wrong with the records itself.
  virtual void prepare(const PicParams& pp, const Picture& pic, PictureRecon& r) {
    (void)pp;
    (void)pic;
    (void)r;
  }
  // `pic` has left the DPB (C.5.2): no later run() reads it, and its output(), if it had one,
  // was called before. What the reconstructor keeps of it may go, or serve a later picture.
  // Called in decoding order with run() and output(), on the same thread as they are.
  virtual void release(const Picture& pic) { (void)pic; }
  // Drops what it keeps of earlier pictures (a new decoder starts using it).
  virtual void forget_pictures() {}
  // The caller's thread waits for the calls queued on the decoder's thread (`on`), or no
  // longer: a reconstructor that would wait on that thread for the caller to take an output
  // frame must not wait meanwhile. Called on the caller's thread.
  virtual void caller_waits(bool on) { (void)on; }
};

}  // namespace gvc::hevc
