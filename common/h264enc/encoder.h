// encoder.h: the H.264 encoder engine (Constrained Baseline, CAVLC): frames in, Annex-B out
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "common/dsp/backend.h"
#include "common/dsp/me.h"
#include "common/h264enc/analyse.h"
#include "common/h264enc/frame_recon.h"
#include "common/h264enc/headers.h"
#include "common/h264enc/macroblock.h"
#include "common/h264enc/mc.h"
#include "common/h264enc/params.h"
#include "common/h264enc/picture.h"
#include "common/h264enc/slice_data.h"
#include "common/util/job_thread.h"
#include "common/util/progress.h"
#include "common/util/status.h"

namespace gvc::h264 {

// What the frame's macroblocks used.
struct FrameStats : MbCounts {  // mb_type, sub_mb_type, ref_idx
  int num_ref_idx_active = 0;  // P slices: num_ref_idx_l0_active_minus1 + 1; 0 for an IDR

  int count(MbType t) const { return mb_type[int(t)]; }
};

// Wall-clock milliseconds of the stages of one encode() call.
struct StageTimes {
  double wait = 0;       // the source's copy and upload (host input), then what the analysis
                         // needs of the last frame's reconstruction (finish_for_analysis(): on
                         // the GPU, nothing; the decision waits for the host copies it reads)
  double analysis = 0;   // the source's upload, intra pruning and motion search (the backend's)
  double analysis_upload = 0;  // of which the source's upload (device input)
  double decision = 0;   // decide_mb over the frame (CPU), with its preparation
  double decision_prep = 0;  // of which the preparation before the wavefront (the GPU's, and
                             // the last reconstruction's full-sample luma completed meanwhile)
  double recon = 0;      // the reconstructor: residual coding, reconstruction, loop filter,
                         // the new reference's half-pel planes
  // The last frame's reconstruction by part, where the reconstructor measures them (complete
  // once this frame's decide() has completed it).
  FrameReconstructor::RunTimes recon_parts;
  double entropy = 0;    // CAVLC of the slices (CPU, all cores; pipelined: behind the next frame)
  double reference = 0;  // the sliding window's update
  // The process's CPU time in milliseconds (every thread's) during wait, analysis, decision,
  // recon and entropy: the cores each stage keeps busy (0 unless Encoder::set_cpu_times).
  // Meaningful where nothing else runs in the process, and not pipelined (the entropy coding
  // then overlaps the next frame's stages).
  struct {
    double wait = 0, analysis = 0, decision = 0, recon = 0, entropy = 0;
  } cpu;
};

struct EncodedFrame {
  bool present = false;         // false: no access unit (a pipelined encoder's first frame)
  std::vector<uint8_t> annexb;  // one access unit: SPS and PPS before an IDR, then the slices
  bool idr = false;
  int frame_num = 0;
  int qp = 0;  // the QP of every slice
  FrameStats stats;
  StageTimes times;
};

class Encoder {
 public:
  Encoder() = default;
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;
  ~Encoder();
  // Checks and takes the parameters; the next frame is an IDR. Motion search runs on
  // `backend` (which must outlive the encoder), or on a CPU backend of its own when null.
  Status init(const EncoderParams& params, Backend* backend = nullptr);
  // Encodes one frame; `force_idr` makes it an IDR. `out` receives its access unit, or when
  // pipelined, the previous frame's (none after the first frame, out.present false).
  Status encode(const FrameIn& in, bool force_idr, EncodedFrame& out);
  // Seed 003's frame-level pipeline: when on, encode() returns once the frame is
  // reconstructed, without waiting for its macroblocks to come down from a device; a thread of
  // the encoder's own codes them while the next frame is analysed and decided (on a device,
  // handed over by the next encode() once its analysis is queued; on the CPU, at once); each
  // access unit then comes out of the next encode() or drain(). Same bits either way. Off by default (no frame held
  // back: tune=zerolatency). Fails while an access unit is held (drain() first).
  Status set_pipelined(bool on);
  bool pipelined() const { return pipelined_; }
  // Measures StageTimes::cpu of the following frames (off: zeros). Set it while no frame is
  // being coded (before encoding, or after drain()): the entropy thread reads it.
  void set_cpu_times(bool on) { cpu_times_ = on; }
  // The access unit a pipelined encoder still holds (out.present false: none); fails (out
  // then without it) when its macroblocks could not be had from the device. init() drops it.
  Status drain(EncodedFrame& out);
  // Whether the next frame is an IDR even when none is forced (first frame, key-int-max).
  bool idr_due() const {
    return dpb_.empty() || !params_.analyse.inter || frames_since_idr_ >= params_.keyint_max;
  }
  // Sets the QP of the next frames (rate control); a per-slice slice_qp_delta carries it.
  Status set_qp(int qp);
  // The SPS and PPS NAL units (header byte and escaped payload, no start code), as sent
  // before every IDR: for an avcC record.
  void parameter_sets(std::vector<uint8_t>& sps, std::vector<uint8_t>& pps) const;
  int level_idc() const { return sps_.level_idc; }
  // The reconstruction of the last encoded frame (after the loop filter), cropped to
  // width x height, as I420 (what a decoder outputs for that frame); empty if the
  // reconstructor failed.
  void recon_i420(std::vector<uint8_t>& out) const;
  // Which reconstruction stage runs ("cpu" or the backend's).
  const char* reconstructor_name() const { return recon_ ? recon_->name() : ""; }
  // The last frame's macroblocks in raster order (pipelined, complete once the next encode()
  // or drain() has returned; when its slices came from the reconstructor's bits, only their
  // decisions: bits_frames()).
  const std::vector<Macroblock>& macroblocks() const { return coded_mbs_; }
  // Pipelined: the frames whose slices were joined from the bits the reconstructor made
  // (FrameReconstructor::mb_bits) instead of written from their levels here.
  int bits_frames() const { return bits_frames_; }

 private:
  void load_source(const FrameIn& in);
  Status encode_frame(const FrameIn& in, bool force_idr, EncodedFrame& out);  // encode()'s work
  // The host buffers the reconstructor copies to and from every frame, pinned by it
  // (FrameReconstructor::pin_host_memory) after init() made them, unpinned before they move.
  void pin_buffers();
  void unpin_buffers();
  // rec_'s planes and rec_luma_, where the reconstructor's downloads land every frame, pinned
  // the first time they come round (the DPB's pictures take turns as rec_ and are never freed
  // before unpin_buffers()).
  void pin_picture();
  Status motion_search(int num_refs, const PlaneView& src_luma);
  // Stage 3: the CAVLC slices of the frame whose macroblocks are `mbs`, appended to
  // out.annexb, with out.stats and out.times.entropy; rows_ready as write_slices_data's.
  void code_slices(const std::vector<Macroblock>& mbs, const SliceHeader& sh, int num_refs, EncodedFrame& out,
                   const Progress* rows_ready = nullptr, const MbBitsView* bits = nullptr);
  DecideFlags decide_flags() const;
  // Pipelined: starts the held frame's entropy coding on entropy_, into pending_, and completes
  // its macroblocks (FrameReconstructor::wait_rows) by rows meanwhile, handing each row to the
  // coding as it comes.
  Status start_held_entropy();

  EncoderParams params_;
  Sps sps_;
  Pps pps_;
  int mb_width_ = 0, mb_height_ = 0;
  Picture src_, rec_;
  LumaRefPlanes rec_luma_;  // rec_'s half-pel planes, from the reconstructor
  std::vector<uint8_t> rec_search_;  // rec_'s luma before the loop filter (RefPicture::search_luma)
  // Short-term reference frames, most recent first (RefPicList0's default order for P
  // frames); a sliding window of params.ref_frames (8.2.5.3). Empty until the first IDR.
  std::deque<RefPicture> dpb_;
  // Pictures an IDR took out of the DPB, whose buffers the next reconstructions reuse (they
  // stay allocated, and pinned: pin_picture).
  std::vector<RefPicture> spare_;
  std::vector<Macroblock> mbs_;        // this frame's, as decided
  std::vector<Macroblock> coded_mbs_;  // the last frame's (the ME predictors; pipelined: being coded)
  std::vector<uint16_t> slice_of_mb_;   // slice index of each macroblock
  std::unique_ptr<Backend> own_backend_;
  std::unique_ptr<MotionSearch> me_;
  std::unique_ptr<FrameReconstructor> recon_;
  std::unique_ptr<IntraPrune> prune_;                // when params.analyse.intra_prune != None
  std::vector<IntraMbCandidates> intra_cand_;        // per macroblock, this frame's candidates
  std::vector<MvCost> me_pred_;                      // per macroblock, the ME core's predictor
  std::vector<std::vector<MbPartitions>> me_parts_;  // per reference, the ME core's results
  // per reference, where they are: me_parts_, or the reconstructor's motion_results()
  std::vector<MbPartitionField> me_fields_;
  int frame_num_ = 0;
  int frames_since_idr_ = 0;
  uint64_t next_pic_id_ = 1;  // RefPicture::id of the next reconstruction
  int idr_pic_id_ = 0;
  bool cpu_times_ = false;  // set_cpu_times
  std::vector<void*> pinned_;  // pin_buffers(), pin_picture(): what recon_ pinned
  bool pipelined_ = false;
  EncodedFrame frame_;    // pipelined: the frame being encoded, until its entropy coding starts
  // Pipelined: the last frame, whose macroblocks (coded_mbs_) may still be coming down and
  // whose entropy coding start_held_entropy() starts.
  struct Held {
    bool present = false;
    SliceHeader sh;
    int num_refs = 0;
  } held_;
  // The held frame's rows of coded_mbs_ complete, for its entropy coding (a new count each
  // frame: a Progress only grows).
  std::unique_ptr<Progress> held_rows_;
  // The held frame's bits (FrameReconstructor::mb_bits), set before its first row shows in
  // held_rows_; no words: its coded_mbs_ hold the levels.
  MbBitsView held_bits_;
  int bits_frames_ = 0;
  EncodedFrame pending_;  // pipelined: the frame the entropy thread codes (or coded)
  JobThread entropy_;     // last: destroyed first, finishing its job
};

}  // namespace gvc::h264
