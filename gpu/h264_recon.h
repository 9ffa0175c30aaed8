// h264_recon.h (gpu): the H.264 encoder's reconstruction stage on the GPU (recon_mb.h and deblock.h as CUDA kernels)
//
// gpu/backend.cpp wraps H264ReconCore in an h264::FrameReconstructor; checkgpu calls it
// directly. The same GVC_HD code as the CPU stage runs, so the bits are the CPU's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "common/h264enc/frame_recon.h"
#include "gpu/device.h"
#include "gpu/h264_deblock.h"

namespace gvc {
namespace cuda {

// A download through pinned staging memory: `bytes` from device `src` to host `dst`, staged at
// `offset`; or (staged false) straight to a page-locked `dst`.
struct StagedCopy {
  void* dst;
  const void* src;
  size_t bytes;
  size_t offset;
  bool staged = true;
};

class H264ReconCore {
 public:
  // Runs `job` on stream `s`: uploads the source and the decisions (only
  // the fields the decision sets);
  // reconstructs the inter macroblocks all at once, then the intra ones in a wavefront
  // (a block per macroblock row, (x, y) after (x + 1, y - 1) of the row above, so after its
  // left, upper-left, upper and upper-right neighbours), one launch; deblocks in the same
  // wavefront, a block per macroblock row (H264DeblockCore), one launch, while the
  // coded macroblocks go down on rows_; returns once they are there, the reconstruction
  // following (finish()). Reference pictures
  // are kept on the device by id; one not held yet is uploaded from the job. With
  // job.rec_luma the reconstruction's half-pel planes are built here and kept as the
  // reference of id job.rec_id.
  // With job.mbs_by_rows, when at least a quarter of the macroblocks are intra (the intra
  // wavefront is long), the macroblocks go down in bands of rows behind it, and run() returns
  // at once: wait_rows() completes them; with job.mbs_later it returns at once too.
  Status run(const h264::ReconJob& job, cudaStream_t s);
  // Returns once rows [0, rows) of the last run()'s job.mbs are complete (FrameReconstructor::
  // wait_rows); every row with rows >= the job's height.
  Status wait_rows(int rows);
  // Whether rows of the last run() are still to come (wait_rows()).
  bool rows_later() const { return bands_copied_ < bands_; }
  // After a run() with job.mb_bits (taken up when the macroblocks go down later, not by rows)
  // and wait_rows(1): every macroblock's macroblock_layer() bits (mb_layer_bits.h), made on
  // the GPU after the reconstruction and downloaded instead of the macroblocks; null when a
  // macroblock's did not fit kMbBitWords words or it is I_PCM: job.mbs are then complete.
  const h264::MbBitsView* mb_bits() const { return bits_run_ && bits_valid_ ? &bits_view_ : nullptr; }
  // 3,200 bits a macroblock: every intra one fits (longer than I_PCM's 3,088 bits it is I_PCM).
  static constexpr int kMbBitWords = 100;
  // The rest of the last run(): its loop filter, reference planes and the downloads of
  // job.rec, job.rec_luma and job.rec_search go on after run() returns (job.mbs too, by rows or
  // with job.mbs_later); waits for them and fills those destinations, which must stay where
  // they were; completes load_device_source()'s host copy too. No-op when nothing is pending.
  Status finish();
  // The part of finish() that the next decision's wavefront needs: the macroblocks, the source
  // and job.rec_luma's full-sample plane (which it predicts from where a SATD is not cached,
  // computing the half samples: DecideJob::refs_full_only). job.rec_luma's half-sample planes,
  // job.rec and job.rec_search come down after the decision's preparation (queue_later()), and
  // the next finish() completes them.
  Status finish_planes();
  // What work queued after it on run()'s stream needs of the last run(): the reconstruction
  // kept on the device as a reference (reference_luma()) is made on that stream before it, so
  // this waits only when run() kept none (then finish()). The host copies may still be on their way: prepare_decision()
  // completes those it needs (finish_planes()) before its wait.
  Status finish_on_device();
  // The last finished run()'s uploads, kernels and downloads, timed with events on its stream
  // (the downloads' on aux_: that of the full-sample luma plane; the half-sample planes',
  // job.rec's and job.rec_search's follow the next decision's preparation and are not timed).
  h264::FrameReconstructor::RunTimes last_run_times() const { return times_; }
  ~H264ReconCore();

  // Uploads the source of the frame about to be coded, for every stage: device views of its
  // planes in `out` (valid until the next call). Jobs that say src_on_device read it.
  Status upload_source(const h264::Picture& src, cudaStream_t s, PlaneView out[3]);
  // The same from a frame in device memory (FrameReconstructor::load_device_source): work
  // queued on s after it reads the device copy, which is made before it returns (the caller's
  // frame is not read after that); `src` is filled from it on a stream of its own (straight
  // there when it is page-locked), completed by prepare_decision() (or the next call, or
  // wait_idle()).
  Status load_device_source(const h264::FrameIn& in, int width, int height, h264::Picture& src,
                            cudaStream_t s, PlaneView out[3]);
  // Waits for everything the core has queued, on s and on its own streams, and completes the
  // host copies pending (before the host memory they write is unpinned or let go).
  Status wait_idle(cudaStream_t s);
  // A device view of the luma of reference `id` (width x height) before its loop filter (the
  // motion search's, FrameReconstructor::reference_luma), if held.
  bool reference_luma(uint64_t id, int width, int height, PlaneView* out);
  // me_predictor() of every macroblock of the last run()'s job.mbs (mb_width x mb_height), on
  // the motion search's stream (or s), in device memory valid until the next call; null if it
  // cannot be had.
  const MvCost* me_predictors(int mb_width, int mb_height, cudaStream_t s);
  // The stream the motion search runs on (null: the calls' stream s), which then reads the
  // source and the unfiltered references beside the loop filter on s: the calls make it wait
  // for what it reads (run() for the reference before its loop filter, the source's loads),
  // and prepare_decision() makes s wait for it.
  void set_analysis_stream(cudaStream_t a) { analysis_ = a; }

  // The intra search of prepare_decision(job) queued ahead, where a motion search stream is
  // set and the source is on the device (job.src_on_device): on a stream of its own, behind the
  // source's copy alone, so that it runs beside the last run()'s work and the motion search.
  // The next prepare_decision() takes it (and makes s wait for it): `job` as that call will get
  // it, but for job.me. The next start_intra_search() forgets one not taken.
  Status start_intra_search(const h264::DecideJob& job);
  // What the decision of `job` can take from before its wavefront, computed on the GPU on stream
  // s (the intra search where start_intra_search() has not queued it) and waited for:
  // prepare_intra of every macroblock (intra_prep.h) into *intra and, for a P slice whose
  // references the device holds, the SATD caches (satd_cache.h) into *satd and, with
  // job.analysis.flags.preselect, every macroblock's pre-selection (inter_preselect.h, made with
  // the caches' slots) into *presel (else null). They point at host memory valid until the next
  // call. The source goes up here unless job.src_on_device. me_host[0, job.num_refs) receive
  // host views of job.me: fields in device memory (motion_results()) are read there and
  // downloaded meanwhile (only the partitions the decision reads, me_partitions_read: the
  // others of those views are stale), host ones are uploaded for the SATD caches and passed on
  // as they are.
  // With `satd_rows`, it may return with only the SATD caches of the first *satd_rows rows of
  // macroblocks there; the others are there once rest_prepared() has returned true or
  // wait_prepared() has returned, and the caller calls wait_prepared() before the next call in
  // any case.
  Status prepare_decision(const h264::DecideJob& job, cudaStream_t s, const h264::MbIntraPrep** intra,
                          const h264::MbSatdRef** satd, const h264::Preselection** presel,
                          MbPartitionField me_host[4], int* satd_rows = nullptr);
  Status wait_prepared() const { return satd_rest_.synchronize("decision preparation (SATD caches)"); }
  // Whether the last prepare_decision()'s other SATD caches are there, waiting for them at most
  // timeout_ms (false: they did not come, which wait_prepared() then explains). It makes no CUDA
  // call: any thread may wait so, the decision's wavefront's too, which hold no context.
  bool rest_prepared(int timeout_ms) const;
  // Pinned memory for mb_count macroblocks' decisions, packed (DecideJob::packed), in *out;
  // decisions_packed() then says they are job.mbs's, `intra` of them intra
  // (DecideJob::intra_count; negative: not counted), and the next run() of those macroblocks
  // uploads them as they are instead of packing and counting them again.
  Status decision_staging(int mb_count, uint8_t** out);
  void decisions_packed(const h264::Macroblock* mbs, int mb_count, int intra) {
    packed_mbs_ = mbs;
    packed_count_ = mb_count;
    packed_intra_ = intra;
  }
  // A device buffer for the motion search's results against reference r (mb_count
  // macroblocks), which prepare_decision then reads where it is; null if it cannot be had.
  MbPartitions* motion_results(int r, int mb_count);

 private:
  struct RefEntry {
    uint64_t id = 0;  // 0: free
    uint64_t last_use = 0;
    DeviceBuffer luma[4];  // LumaRefPlanes' G, b, h, j (padded)
    DeviceBuffer chroma[2];
    DeviceBuffer search;   // the luma before the loop filter (RefPicture::search_luma)
  };
  // The entry holding picture `id` (*held true), else the least recently used one holding no
  // reference of `job` (*held false); null when there is none.
  RefEntry* entry_for(uint64_t id, const h264::ReconJob& job, bool* held);
  Status upload_ref(const h264::RefPicture& ref, uint64_t id, RefEntry& e, cudaStream_t s);
  // For job.rec_luma: builds the reconstruction's half-pel planes on the device into entry e
  // (whose `search` run() filled before the loop filter), kept under job.rec_id (the next
  // frames find their reference there instead of uploading it).
  Status keep_reconstruction(const h264::ReconJob& job, RefEntry& e, cudaStream_t s);
  // Makes the analysis stream (if any) wait for the work queued so far on `on`.
  Status analysis_waits_for(cudaStream_t on, Event& ev);
  // Queues an empty kernel on `on` after its downloads (h264_recon.cu says why).
  Status end_after_downloads(cudaStream_t on);
  // prepare_decision()'s parts: job's analysis for the kernels, a download to the host on
  // prep_down_ behind the work queued on made_on, and the intra search queued on ip.
  Status device_analysis(const h264::DecideJob& job, cudaStream_t s, h264::MbAnalysis* out);
  // With rows > 1: `bytes` of each of `rows` rows `pitch` apart (the same pitch on both sides).
  Status download_prep(void* dst, const void* src, size_t bytes, cudaStream_t made_on, size_t rows = 1,
                       size_t pitch = 0);
  Status queue_intra(const h264::DecideJob& job, const h264::MbAnalysis& a, cudaStream_t ip);
  // The entry holding picture `id`, or null.
  RefEntry* held_entry(uint64_t id);
  // Queues the downloads of run()'s macroblocks on rows_: bands of kBandRows rows, each
  // behind the intra wavefront's progress (job.mbs_by_rows, intra_progress given), or behind
  // the reconstruction's kernels (intra_progress null) bands of kLaterBandRows where the
  // caller takes them by rows later (job.mbs_later), else one band of the whole frame.
  // With `bits`, the macroblocks' bits go down instead (mb_bits()), made first on rows_.
  Status download_rows(const h264::ReconJob& job, const unsigned* intra_progress, bool direct, bool bits);
  // mb_bits()'s fallback: the macroblocks the last run() kept on the device, into its job.mbs now.
  Status download_macroblocks_now();
  // Waits for load_device_source()'s download of the host copy and completes it (copy false:
  // drops it).
  Status complete_source(bool copy = true);
  // The source's own stream in *own, behind the last run()'s kernels that read src_
  // (src_read_); a download still pending (its frame never decided) is dropped.
  Status source_stream(cudaStream_t* own);
  // Makes s and the motion search's stream wait for the source's copies queued on `own`.
  Status source_loaded(cudaStream_t own, cudaStream_t s);
  // Waits for the bands still queued and forgets them, copying nothing (after a failure).
  void drop_rows();

  std::vector<RefEntry> refs_ = std::vector<RefEntry>(5);
  uint64_t uses_ = 0;
  DeviceBuffer src_[3], rec_[3], mbs_;
  DeviceBuffer stand_ins_;  // prepare_intra's stand-in neighbours (queue_intra)
  DeviceBuffer progress_;  // per macroblock row: the intra wavefront's progress
  H264DeblockCore deblock_;
  DeviceBuffer slice_of_mb_, intra_cand_, intra_prep_, me_[4], satd_;
  DeviceBuffer satd_slots_;  // per macroblock: the SATD caches' slots (launch_satd_slots)
  DeviceBuffer presel_;      // per macroblock: its pre-selection (launch_satd_slots), down to presel_host_
  DeviceBuffer me_pred_;  // me_predictors()
  PinnedBuffer intra_prep_host_, satd_host_, presel_host_, me_staging_, src_staging_;
  PinnedBuffer levels_staging_, staging_;  // run()'s downloads: the macroblocks, the rest
  std::vector<StagedCopy> pending_;         // what finish_planes() copies out of staging_
  bool pending_on_device_ = false;          // the pending run() kept its reconstruction
  // What the decision does not read (job.rec, job.rec_search): queued on aux_ by queue_later()
  // behind the preparation's downloads, which would otherwise wait behind them in the copy
  // engine; completed by finish().
  std::vector<StagedCopy> later_;
  bool later_queued_ = false;
  Event later_done_;
  Status queue_later(const Event* after);
  // run(): start, uploads, inter, intra, the macroblocks' download queued (on rows_: its time
  // is not measured), loop filter, reference planes,
  // downloads done (on aux_)
  cudaEvent_t marks_[8] = {};
  Event synced_;  // the waits for the decision's source and preparation (the first band's SATD caches)
  Event satd_rest_;  // on s after the other band's SATD caches (prepare_decision)
  // Page-locked: the device writes rest_seq_ there once the other band is down (signal_host).
  PinnedBuffer rest_word_;
  unsigned rest_seq_ = 0;
  // Frames of fewer rows of macroblocks get their SATD caches in one band.
  static constexpr int kSatdSplitRows = 16;
  Stream aux_;     // the reconstruction's downloads
  Stream src_stream_;  // load_device_source's copy and download
  Event src_loaded_;   // its device copy made (the work on s waits for it)
  Event src_read_;     // on s, after the last run()'s kernels that read src_ (which may still
                       // run when it returns): the next source's copies wait for it
  Event src_ready_;    // its download done
  std::vector<StagedCopy> src_pending_;  // what complete_source() copies out of src_staging_
  bool src_down_ = false;                // a download not yet waited for
  Stream prep_down_;  // prepare_decision()'s downloads, each behind the kernel that made it
  Event prep_made_;    // on the stream of the part to go down next (prepare_decision)
  Event prep_on_host_;  // on prep_down_, after them all
  cudaStream_t analysis_ = nullptr;  // set_analysis_stream
  Event search_ready_;   // run()'s copy of the reconstruction before its loop filter
  // start_intra_search()'s intra search, beside the motion search (it reads no reference), and
  // after it
  Stream intra_;
  Event intra_done_;
  bool intra_queued_ = false;  // by start_intra_search(), for the next prepare_decision()
  Event analysis_done_;  // the motion search queued on analysis_ (prepare_decision)
  h264::FrameReconstructor::RunTimes times_;
  // The macroblocks by rows (run() with job.mbs_by_rows or job.mbs_later): band b holds rows
  // [b * band_rows_, (b + 1) * band_rows_), down in levels_staging_ (or straight in rows_dst_,
  // page-locked: rows_direct_) once band_ready_[b] has passed; wait_rows() copies them to
  // rows_dst_ in order. Behind the intra wavefront (job.mbs_by_rows, a quarter of the macroblocks
  // intra), bands of kBandRows follow its progress; else, with job.mbs_later (pipelined, every
  // frame), bands of kLaterBandRows behind the kernels, so that the entropy coding starts on the
  // first while the others come down.
  static constexpr int kBandRows = 4;
  static constexpr int kLaterBandRows = 16;
  Stream rows_;
  Event rows_start_;  // on run()'s stream, after the wavefront's progress was reset
  std::vector<Event> band_ready_;
  int bands_ = 0, bands_copied_ = 0, rows_width_ = 0, rows_height_ = 0;
  h264::Macroblock* rows_dst_ = nullptr;
  bool rows_direct_ = false;
  int band_rows_ = kBandRows;  // rows of a band: kBandRows, kLaterBandRows or the whole frame
  // The macroblocks' bits (download_rows with bits): on the device, and on the host the
  // refusal word (a macroblock I_PCM or too long), the lengths, the words, 256-byte aligned.
  DeviceBuffer bits_dev_;
  PinnedBuffer bits_host_;
  static constexpr size_t kBitsLensAt = 256;
  static size_t bits_words_at(int mb_count) {
    return (kBitsLensAt + size_t(mb_count) * sizeof(uint16_t) + 255) / 256 * 256;
  }
  bool bits_run_ = false, bits_valid_ = false;
  h264::MbBitsView bits_view_;
  PinnedBuffer decisions_host_;  // the job's decisions, packed (kDecisionBytes each)
  const h264::Macroblock* packed_mbs_ = nullptr;  // decisions_packed(): whose they are
  int packed_count_ = 0, packed_intra_ = 0;
  DeviceBuffer decisions_;
};

}  // namespace cuda
}  // namespace gvc
