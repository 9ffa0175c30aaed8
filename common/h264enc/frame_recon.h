// frame_recon.h: the decision and reconstruction stages of the H.264 encoder (mode decision; residual coding, reconstruction, deblocking)
//
// A backend may bring its own (the CUDA backend's runs on the GPU: gpu/h264_recon.h); every
// implementation gives the bits of the CPU one, which decides the macroblocks in a wavefront on
// all cores (decide_mb.h), then runs recon_mb.h in raster order and deblock.h's deblock_picture.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/h264enc/analyse.h"
#include "common/h264enc/deblock.h"
#include "common/h264enc/intra_prep.h"
#include "common/h264enc/macroblock.h"
#include "common/h264enc/mb_layer_bits.h"
#include "common/h264enc/mc.h"
#include "common/h264enc/picture.h"
#include "common/h264enc/satd_cache.h"
#include "common/util/status.h"

namespace gvc::h264 {

// The leading bytes of a Macroblock that the decision sets and the reconstruction reads.
constexpr size_t kDecisionBytes = offsetof(Macroblock, total_coeff_luma);

struct ReconJob {
  const Picture* src = nullptr;  // the source, edge-extended to whole macroblocks
  bool src_on_device = false;    // src went up with FrameReconstructor::upload_source
  Picture* rec = nullptr;        // out: the reconstruction after the loop filter (if enabled)
  // RefPicList0: num_refs pictures. Each has an id that stays with its samples as long as it
  // is a reference, so an implementation may keep its own copy of them (the GPU's DPB).
  const RefPicture* const* refs = nullptr;
  const uint64_t* ref_ids = nullptr;
  int num_refs = 0;
  uint64_t rec_id = 0;           // the id `rec` will have as a reference
  // out, optional: the luma half-pel planes of `rec` (LumaRefPlanes::build of its luma), for
  // `rec` as a reference; an implementation keeping its own copy keeps it under rec_id.
  LumaRefPlanes* rec_luma = nullptr;
  // out, optional: rec's luma before the loop filter (rec->plane[0]'s size, or left empty
  // without one): the motion search's reference (RefPicture::search_luma), which it may read
  // while the loop filter still runs. An implementation keeping its own copy (under rec_id,
  // reference_luma()) may leave this one out.
  std::vector<uint8_t>* rec_search = nullptr;
  // Decisions in (the fields before total_coeff_luma: kDecisionBytes); levels, cbp,
  // TotalCoeff, final mb_type out. What the decision left in the other fields is not read.
  Macroblock* mbs = nullptr;
  int mb_width = 0, mb_height = 0;
  int qp = 26, qpc = 26;
  bool p_slice = false;
  bool deblock = true;
  DeblockParams deblock_params;
  // run() may return before job.mbs are complete, which wait_rows() then completes row by row
  // (an implementation that finishes rows over time, the GPU's intra wavefront, hands them
  // over as they come, so entropy coding can start on the first rows).
  bool mbs_by_rows = false;
  // run() may return before job.mbs are complete, whatever the frame, and wait_rows() then
  // completes them: a caller with other work first (the frame-level pipeline, whose next
  // frame's analysis does not read them) need not wait for them to come down.
  bool mbs_later = false;
  // With mbs_later: run() may hand over each coded macroblock's macroblock_layer() bits
  // (mb_bits()) instead of completing job.mbs's levels (an implementation that makes them
  // where the levels are, the GPU's, so that only the bits come down and the entropy coding
  // joins them).
  bool mb_bits = false;
};

struct DecideJob {
  // flags, qp, qpc, lambda, max_mv_y of every macroblock's analysis; its pointers and map are
  // set by the implementation from the fields below.
  MbAnalysis analysis;
  const Picture* src = nullptr;
  bool src_on_device = false;  // src went up with FrameReconstructor::upload_source
  const RefPicture* const* refs = nullptr;  // RefPicList0, as ReconJob
  const uint64_t* ref_ids = nullptr;
  int num_refs = 0;
  // Per reference: the ME core's field (host, or the device memory of motion_results()).
  const MbPartitionField* me = nullptr;
  const IntraMbCandidates* intra_cand = nullptr;    // per macroblock (host), or null: every mode
  const uint16_t* slice_of_mb = nullptr;            // per macroblock: its slice
  // Per macroblock (host), or null: prepare_intra's results (intra_prep.h), which an
  // implementation may compute elsewhere (the GPU) before deciding; the decisions are the same.
  const MbIntraPrep* intra_prep = nullptr;
  // P slices, or null: the SATD caches (satd_cache.h) of every macroblock and reference, at
  // [mb_addr * num_refs + r] (host), computed elsewhere (the GPU); the decisions are the same.
  const MbSatdRef* satd = nullptr;
  // P slices with a pre-selection (flags.preselect), or null: every macroblock's (host),
  // computed elsewhere (the GPU, beside the SATD caches' slots); the decisions are the same.
  const Preselection* presel = nullptr;
  Macroblock* mbs = nullptr;                        // out: the decisions
  int mb_width = 0, mb_height = 0;
  // out, optional: each macroblock's decision (its first kDecisionBytes) also here, packed in
  // raster order, written as it is decided (what a device's run() uploads).
  uint8_t* packed = nullptr;
  // out, optional: how many of the macroblocks the decision made intra (counted as they are
  // decided, so that a device's run() need not read them all again).
  int* intra_count = nullptr;
  // Optional: called on decide()'s thread once the decision's inputs are ready, just before its
  // wavefront takes every core (the pipelined encoder waits there for the last frame's entropy
  // coding); called again if the same job is decided again.
  std::function<void()> before_wavefront;
  // Optional: the inputs of only the first inputs_rows rows of macroblocks are ready when the
  // wavefront starts (an implementation that prepares them elsewhere); wait_inputs() returns once
  // the others are (or could not be: the implementation reports that itself). The first of the
  // wavefront's threads to reach a row past them calls it, once; the others wait for it.
  int inputs_rows = 0;
  std::function<void()> wait_inputs;
  // The references' half-sample planes (LumaRefPlanes' b, h and j) are not to be read: their
  // host copies may still be on their way (the CUDA backend's), and the decision computes the
  // half samples it needs from the full-sample plane instead (LumaRefView::predict).
  bool refs_full_only = false;
};

// The CPU decision: job's macroblocks decided (decide_mb, then finish_mb_syntax) into job.mbs
// (packed into job.packed and the intra ones counted into *job.intra_count where those are
// set) in a wavefront on `threads` threads. Each takes the next group of `rows` rows and steps
// through them together: macroblock x of the group's row i at step x + 2i, so that (x + 1, y - 1)
// is its own but for the group's first row, which waits for the row above (taken before, so
// under way). That covers every neighbour decide_mb and finish_mb_syntax read; the result does
// not depend on the threads or the groups. `times`, where given, gets the threads' summed waits
// for the row above and the last thread's start after the call (ms).
struct WavefrontTimes {
  double wait_ms = 0, late_ms = 0;
};
void decide_wavefront(const DecideJob& job, int threads, int rows, WavefrontTimes* times = nullptr);
// How many consecutive rows one thread of the CPU decision's wavefront takes at a time.
int wavefront_group_rows(int mb_height, int threads);

// job.analysis with the frame's planes, references and ME results set (host pointers); map,
// mx, my and intra_cand are each macroblock's.
MbAnalysis frame_analysis(const DecideJob& job);

// prepare_intra of every macroblock of the job into out (raster order), on all cores: what
// the CUDA backend computes on the GPU, for tests.
void prepare_intra_cpu(const DecideJob& job, MbIntraPrep* out);

// The SATD caches of every macroblock and reference of a P slice's job into out
// ([mb_addr * num_refs + r]), and where `presel` is not null each macroblock's pre-selection
// into it (raster order; with job.analysis.flags.preselect), on all cores: what the CUDA
// backend computes on the GPU, for tests.
void prepare_satd_cpu(const DecideJob& job, MbSatdRef* out, Preselection* presel = nullptr);

class FrameReconstructor {
 public:
  virtual ~FrameReconstructor() = default;
  virtual const char* name() const = 0;
  // Views of the source planes of the frame about to be coded, for every stage to read (the
  // analysis included): an implementation on a device uploads them now, once, and returns
  // device views (the frame's jobs then say src_on_device); the CPU's returns the host planes.
  virtual Status upload_source(const Picture& src, PlaneView out[3]) {
    for (int p = 0; p < 3; p++) out[p] = src.view(p);
    return Status();
  }
  // upload_source for a source in device memory: copies it into the device planes every
  // stage reads, the last column and row repeated out to whole macroblocks (as the encoder
  // loads a host frame), and into `src` (the host copy the decision reads), which may be
  // completed later, by the next decide(): until then `src` must stay where it is and nothing
  // may read it. The frame `in` itself is read before it returns: the caller may let it go
  // then (an element unmaps its input buffer). Only an implementation on that device can.
  virtual Status load_device_source(const FrameIn& in, int width, int height, Picture& src,
                                    PlaneView out[3]) {
    (void)in, (void)width, (void)height, (void)src, (void)out;
    return Status::error(std::string("the ") + name() + " backend takes no frames in device memory");
  }
  // The luma of reference `ref` for the motion search, before the loop filter (the search is
  // a guess at the vectors; the decision costs them on the filtered reference, so searching
  // the unfiltered one lets the search of the next frame start beside the loop filter): a
  // device copy the implementation keeps, else the host's (RefPicture::search_view()).
  virtual PlaneView reference_luma(const RefPicture& ref) { return ref.search_view(); }
  // Where the motion search of reference r (mb_count macroblocks) may leave its results for
  // decide() to read them there: device memory of the backend whose motion search fills it
  // (nothing goes down and up again between the two), or null: the encoder's host fields.
  // Valid until the next call for r.
  virtual MbPartitions* motion_results(int r, int mb_count) {
    (void)r, (void)mb_count;
    return nullptr;
  }
  // Starts what of decide(job)'s preparation reads the source alone, where the implementation
  // prepares on a device (the intra search: the CUDA backend's, beside the motion search); the
  // next decide() takes it. `job` as that decide() will get it, but for the motion search's
  // results, which need not be there yet.
  virtual Status start_intra_search(const DecideJob& job) {
    (void)job;
    return Status();
  }
  // Decides every macroblock (decide_mb.h: decide_mb, then finish_mb_syntax) into job.mbs.
  // Completes the last run() first where it reads what that run() writes later (finish()).
  virtual Status decide(const DecideJob& job) = 0;
  // Milliseconds of the last decide() spent preparing before the wavefront (0 if none).
  virtual double last_prepare_ms() const { return 0; }
  // Milliseconds of the last finished run() by part, where the implementation measures them
  // (the GPU's, with events): uploads; inter, intra and loop-filter kernels; the reference
  // planes (half-pel planes, chroma copies); downloads.
  struct RunTimes {
    double upload = 0, inter = 0, intra = 0, deblock = 0, planes = 0, download = 0;
  };
  virtual RunTimes last_run_times() const { return {}; }
  // Codes and reconstructs job's macroblocks: job.mbs are complete on return (with
  // job.mbs_by_rows or job.mbs_later: after wait_rows()); job.rec, job.rec_luma and
  // job.rec_search may be written later, until finish() (the GPU's loop filter runs
  // meanwhile), and must stay where they are until then.
  virtual Status run(const ReconJob& job) = 0;
  // For a run() with job.mbs_by_rows or job.mbs_later: returns once rows [0, rows) of its
  // job.mbs are complete. Called on the thread that called run() (a device's context current);
  // all rows are complete, at the latest, by the next decide(), run() or finish(). After a
  // failure nothing more is written into job.mbs.
  virtual Status wait_rows(int rows) {
    (void)rows;
    return Status();
  }
  // Whether the last run() returned before its job.mbs were complete (job.mbs_by_rows taken
  // up, or job.mbs_later).
  virtual bool rows_later() const { return false; }
  // After a run() with job.mb_bits, once wait_rows(1) has returned: the macroblocks' bits that
  // stand for job.mbs's levels (valid until the next run()), or null: job.mbs are complete, as
  // without job.mb_bits (the CPU's; and a device's picture with an I_PCM macroblock, or one
  // too long for its bits' room).
  virtual const MbBitsView* mb_bits() const { return nullptr; }
  // Completes the last run() and load_device_source() (nothing to do for the CPU's).
  virtual Status finish() { return Status(); }
  // The motion search's predictors of the next frame (me_predictor.h over the last run()'s
  // macroblocks, mb_width x mb_height), computed where those are: a device's, in its memory,
  // for its own motion search (MeParams::predictors_loc Device; valid until the next call);
  // or null: the caller computes them from the macroblocks run() handed back.
  virtual const MvCost* me_predictors(int mb_width, int mb_height) {
    (void)mb_width, (void)mb_height;
    return nullptr;
  }
  // Makes the host memory [p, p + bytes) quicker for the implementation to copy to and from
  // (a device's: page-locked, so that its transfers run straight there, beside the caller,
  // rather than through staging memory and a copy) and returns whether it did. The caller
  // keeps the memory where it is and calls unpin_host_memory(p) before it frees it and before
  // it destroys the implementation. Only a speed-up: every call works on memory not pinned.
  virtual bool pin_host_memory(void* p, size_t bytes) {
    (void)p, (void)bytes;
    return false;
  }
  virtual void unpin_host_memory(void* p) { (void)p; }
  // Completes the last run() as far as the analysis needs it: the backend's own motion search
  // may then read the new reference where reference_luma() gives it (on a device, work queued
  // after it); its host copies may still be on their way: decide() completes those it reads
  // (on a device, the full-sample luma plane), the next run() or finish() all of them.
  virtual Status finish_for_analysis() { return finish(); }
};

std::unique_ptr<FrameReconstructor> make_cpu_reconstructor();

}  // namespace gvc::h264
