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
//
// With set_keep_pictures(true) nothing is downloaded and run() returns without waiting for
// the GPU, so the decoder parses the next picture while the GPU reconstructs this one; the
// decoder hands each output picture to output(), which gives it out as an HevcDeviceFrame
// that reads the picture in place; its copy_to() writes it as NV12 or P010 on a second stream
// that waits only for that picture.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/hevcdec/loop_filter.h"
#include "common/hevcdec/recon.h"
#include "gpu/device.h"
#include "gpu/hevc_intra.h"
#include "gpu/hevc_itx.h"
#include "gpu/hevc_loopfilter.h"
#include "gpu/hevc_mc.h"
#include "gpu/hevc_output.h"
#include "gpu/stage_timer.h"

namespace gvc {
namespace cuda {

// The device buffers of output frames that are gone, for the next ones (a cudaMalloc per
// frame, and a cudaFree, which waits for the whole device, would cost more than the copy).
struct HevcFrameBuffers {
  // A buffer let go before, or an empty one to reserve (counted in `made`).
  DeviceBuffer take();
  void give_back(DeviceBuffer&& b);
  // A frame was copied out or let go, or the caller started waiting for the reconstructor:
  // wakes the reconstructor's wait for frames to be taken (events counts them).
  void notify();

  std::mutex mutex;
  std::condition_variable changed;
  uint64_t events = 0;
  std::vector<DeviceBuffer> free;
  size_t made = 0;  // buffers allocated so far: at most as many as were in use at once
};

// An output picture on the device, cropped; DecodedFrame::device of a picture from
// HevcCudaReconstructor::output. It reads the picture where the reconstructor made it (the
// DPB's memory, whose slot is not written again while the frame reads it), and copy_to()
// converts it straight into the destination. When the reconstructor needs that slot for a
// later picture (the picture has left the DPB and the frame is still not taken), the frame
// becomes a copy of its own in NV12 (8 bits) or P010 (more) first; once it has been copied
// out, it just lets go of the slot.
class HevcDeviceFrame : public hevc::DeviceFrame {
 public:
  ~HevcDeviceFrame() override;
  // Writes the picture into `dst` as NV12 or P010 (device or host memory, any strides) once
  // the GPU has made it; returns when the copy is complete. The frame's CUDA context must be
  // current, and the reconstructor that made the frame must still exist. A second call after
  // one that succeeded may find the picture gone (an error). Let the frame go with the
  // context current too: it may hold the last reference to the picture's memory.
  Status copy_to(const SemiPlanarView& dst) const;

  int width = 0, height = 0, bit_depth = 8;

 private:
  friend class HevcCudaReconstructor;
  void let_go();  // drops the slot, or the copy of its own (back to `home_`); m_ held
  // Writes the picture it reads in its slot as NV12/P010 into `buf` (reserved here), view `v`,
  // on stream_ once the picture is made; m_ held.
  Status write_into(DeviceBuffer& buf, SemiPlanarView& v) const;
  mutable std::mutex m_;  // copy_to() against the reconstructor's thread taking the slot
  mutable bool copied_ = false;
  // In the reconstructor's slot: its planes (and their memory, held), the window, and the
  // slot's event recorded behind the picture's reconstruction. (No CUDA object of the frame's
  // own: it may go on a thread without the context, where releasing one would make the CUDA
  // runtime set up a context of its own.)
  HevcPlane planes_[3];
  int x0_ = 0, y0_ = 0;
  std::shared_ptr<void> memory_;
  std::shared_ptr<std::atomic<int>> readers_;  // the slot's count of frames reading it
  std::shared_ptr<const Event> made_;
  // Or a copy of its own (buf_ set), written on the reconstructor's output stream.
  DeviceBuffer buf_;
  SemiPlanarView view_;
  cudaStream_t stream_ = nullptr;  // the reconstructor's output stream, for copy_to()
  // Where buf_ goes back to, and where copy_to() takes its scratch for a host destination.
  std::weak_ptr<HevcFrameBuffers> home_;
};

// What HevcCudaReconstructor::prepare makes of a picture's records on its lane (host memory
// only, no CUDA call): the cores' packed work, which run() copies with the levels and the
// deblocking arrays into its pinned staging and uploads in one copy.
struct HevcPrepared : hevc::PreparedRecon {
  Status status;              // of prepare(): run() does the work itself when it failed
  uint64_t decode_index = 0;  // the picture prepared for
  HevcMcCore::Packed mc;
  HevcIntraCore::Packed intra;
  bool deblock = false;       // the deblocking arrays were checked (HevcDeblockCore::check)
};

// Device memory for one picture of the DPB: three planes of 16-bit samples (4:2:0), each at
// least as large as the picture's, any strides.
struct PictureMemory {
  HevcPlane plane[3];
  size_t bytes = 0;             // all three, as allocated
  std::shared_ptr<void> owner;  // frees or returns the memory when the last copy goes
};
// Provides the memory of a width x height picture (luma samples), e.g. a GstCudaBufferPool's
// buffer; called on the thread that runs the reconstructor, its context current.
using PictureAllocator = std::function<Status(int width, int height, PictureMemory& out)>;

class HevcCudaReconstructor : public hevc::Reconstructor {
 public:
  explicit HevcCudaReconstructor(int device_id = 0);

  bool run(const hevc::PicParams& pp, const hevc::FrameState& fs, const hevc::PictureRecon& r,
           hevc::Picture& pic, std::string& err) override;
  void forget_pictures() override { slots_.clear(); }
  // Frees the picture's slot for a later picture (its memory kept).
  void release(const hevc::Picture& pic) override;
  bool keeps_pictures() const override { return keep_pictures_; }
  // The decoder's thread for the calls: the queueing thread's CUDA context made current.
  std::function<void()> thread_entry() override;
  bool output(const hevc::Picture& pic, hevc::DecodedFrame& f, std::string& err) override;
  // On a frame lane: checks and packs the inter PBs and the intra blocks (HevcPrepared), so
  // that run() only copies them, the levels and the deblocking arrays into its pinned staging
  // and uploads them in one copy; run() still packs the TU lists, SAO's parameters, the PCM
  // samples and the references' plane table. Host work only.
  void prepare(const hevc::PicParams& pp, const hevc::Picture& pic, hevc::PictureRecon& r) override;
  // The decoder's caller waits for this reconstructor's thread: evict() makes its copies at once.
  void caller_waits(bool on) override;
  // Leave pictures on the device (output() hands them out) rather than downloading each one
  // into its host planes; may change between pictures.
  void set_keep_pictures(bool on) { keep_pictures_ = on; }

  Status reconstruct(const hevc::PicParams& pp, const hevc::FrameState& fs, const hevc::PictureRecon& r,
                     hevc::Picture& pic);
  // Device memory held for pictures (the DPB on the GPU), in bytes, and the number of
  // pictures it was made for: the most that were on the device at once (the DPB, which counts
  // the picture being reconstructed, once the decoder releases what leaves it; and pictures
  // that left it while output frames still read them).
  size_t picture_bytes() const;
  size_t picture_slots() const { return slots_.size(); }
  // Device buffers made for output frames: copies of their own (frames whose slot was
  // needed before they were taken) and the scratch of copy_to() into host memory.
  size_t frame_buffers() const;
  // How many of them may be in use before a slot's frame still to be taken is waited for
  // (wait_taken) rather than made a copy.
  static constexpr size_t kFreeCopies = 2;
  // Where the pictures' memory comes from (default: cudaMalloc); pictures already on the
  // device keep theirs. When the allocator fails, it is not asked again: cudaMalloc serves,
  // and allocator_error() says why. allocations() counts the allocator's pictures.
  void set_picture_allocator(PictureAllocator a) { allocator_ = std::move(a); }
  uint64_t allocations() const { return allocations_; }
  std::string allocator_error() const;

  // Host time of reconstruct() by phase (steady clock, seconds), summed over `pictures` calls
  // that succeeded: what the decoder's reconstruction thread spends per picture, the GPU's
  // work being asynchronous (waits for it included, where a stage must wait).
  struct HostTimes {
    double refs = 0;            // slots, reference and PCM uploads, the wait for output()
    double levels = 0;          // the levels' upload (or the prepared records'), their expansion queued, the scaling matrices
    double mc = 0;              // HevcMcCore::run (prepared: launch)
    double inter_residual = 0;  // HevcResidualCore::run of the inter TUs
    double intra_residual = 0;  // HevcResidualCore::run_to_residuals of the intra TUs
    double intra = 0;           // HevcIntraCore::run (prepared: launch)
    double plan = 0;            // hevc::plan_loop_filters, unless the decoder planned (frame threads)
    double deblock = 0;         // HevcDeblockCore::run (prepared: launch)
    double sao = 0;             // HevcSaoCore::run
    double download = 0;        // the download and wait, without set_keep_pictures(true)
    double total = 0;           // the whole of reconstruct()
    int pictures = 0;
    int prepared = 0;           // of those, with the records prepared on a frame lane (prepare())
  };
  const HostTimes& host_times() const { return host_times_; }
  // One line, ms per picture: "host ms/picture over N: refs 0.01 levels 0.12 ... total 1.10".
  std::string host_times_summary() const;
  // One line, MiB: the device memory held by the pictures and by each core, "gpu memory MiB:
  // pictures 118.7 (5 slots), frame buffers 2, records and levels .. mc .. itx ..
  // intra .. deblock .. sao .. (its tiles' edges ..)". On the reconstruction's thread or once it is idle.
  std::string memory_summary() const;
  // Times the GPU's work of each picture by stage (timing events on the stream: a diagnostic
  // for bench-hevc, off by default). Call before the first picture.
  void set_gpu_timing(bool on);
  // One line, ms per picture: "gpu ms/picture over N: upload .. mc .. inter_residual .. intra ..
  // deblock .. sao .., busy .., period ..": a stage includes the stream's idle time while the
  // host queues it; the period is the time between two pictures' ends on the stream. Waits for
  // the pictures timed; on the reconstruction's thread or once it is idle.
  std::string gpu_times_summary();

 private:
  // A picture on the device: three planes of 16-bit samples in `mem` (from the allocator, or
  // one cudaMalloc'd block, tightly packed).
  struct Slot {
    const hevc::Picture* pic = nullptr;  // null: free (released)
    uint64_t decode_index = 0;
    uint64_t last_use = 0;
    PictureMemory mem;
    int mem_width = 0, mem_height = 0;  // the picture size `mem` was made for
    HevcPlane plane[3];                 // the picture's planes in `mem`
    std::shared_ptr<Event> done = std::make_shared<Event>();  // recorded after the picture's last filter
    // output frames reading the slot (HevcDeviceFrame; some may be gone or copied out): it is
    // not written again before they let go of it
    std::shared_ptr<std::atomic<int>> readers = std::make_shared<std::atomic<int>>(0);
    std::vector<std::weak_ptr<HevcDeviceFrame>> frames;
    bool read() const { return readers->load(std::memory_order_acquire) > 0; }
  };
  // The slot of `p` in `out`: its device copy when there is one (`found`), else a slot to fill:
  // a free one (of the same size first); a new one while there are fewer than the DPB's size;
  // one whose picture has left the DPB, taken from the output frames that read it (evict); a
  // new one; the least recently used that no frame reads. Fails when there is none.
  Status slot_for(const hevc::Picture& p, Slot*& out, bool& found);
  // Makes the output frames that read `d` let go of it, each first made a copy of its own
  // unless it was copied out already; the next picture's work waits for those copies.
  // First waits (wait_taken) for the caller to copy them out, unless it waits for this thread.
  Status evict(Slot& d);
  // Unless fewer than kFreeCopies frames hold copies of their own (or scratch) now: until no
  // frame reading `d` is still to be copied out, the caller waits for this thread
  // (caller_waits), or kTakeWait has passed. A slot is needed while frames read it when the
  // pictures after them were decoded ahead of the caller: behind a sink that takes a 2160p
  // frame every 33 ms, up to 8 copies (100 MiB) of frames the caller took later. Frames taken
  // as they come leave at most a copy or two, which then cost no wait. A frame the caller took
  // and let lie without copying it out (a damaged picture it drops) costs the whole kTakeWait.
  void wait_taken(const Slot& d);
  static constexpr std::chrono::milliseconds kTakeWait{100};
  // Gives `d` memory for `p` (keeping what it has when the size is the same) and sets its planes.
  Status place(const hevc::Picture& p, Slot& d);
  Status upload(const hevc::Picture& p, Slot& d);
  Status download(const Slot& d, hevc::Picture& p);
  Status write_output(const hevc::Picture& pic, const std::shared_ptr<HevcDeviceFrame>& f);

  static constexpr size_t kMaxSlots = 24;  // the DPB's 16 pictures and spares

  int device_id_;
  std::atomic<bool> keep_pictures_{false};  // set by the element's thread, read on the decoder's
  std::atomic<int> caller_waiting_{0};      // caller_waits(): how many times on, not yet off
  std::atomic<bool> entry_failed_{false};   // thread_entry() could not make the context current
  Stream stream_;
  Stream output_stream_;  // the frames' copies: each waits for its picture's `done`
  Event output_done_;     // after the last copy evict() made; the next picture waits for it
  size_t dpb_slots_ = 0;  // the current SPS's DPB size (sps_max_dec_pic_buffering)
  std::shared_ptr<HevcFrameBuffers> frame_buffers_ = std::make_shared<HevcFrameBuffers>();
  std::vector<Slot> slots_;
  uint64_t use_counter_ = 0;
  PictureAllocator allocator_;
  std::atomic<uint64_t> allocations_{0};
  mutable std::mutex allocator_error_mutex_;  // read by the element while run() may set it
  std::string allocator_error_;
  StagingRing prepared_staging_;  // a prepared picture's records, the levels and the deblocking arrays
  StagingRing level_staging_;     // or (not prepared) the levels and their sub-blocks' places alone
  // Either of those on the device (one buffer: a stream's first pictures, before frame threads,
  // are not prepared).
  DeviceBuffer records_;
  DeviceBuffer dense_levels_;  // the levels made dense (hevc_expand_levels), then over the intra TUs' their residuals
  std::vector<Slot*> ref_slots_;          // reconstruct()'s scratch: the slot of each reference
  std::unique_ptr<HevcPlane[][3]> ref_planes_;  // and its planes (HevcMcBatch::refs)
  size_t ref_planes_size_ = 0;
  HostTimes host_times_;
  // set_gpu_timing's stages: upload (references, PCM, levels made dense), mc, inter_residual, intra
  // (residuals and prediction), deblock, sao
  enum GpuStage { kGpuUpload, kGpuMc, kGpuInterResidual, kGpuIntra, kGpuDeblock, kGpuSao, kGpuStages };
  std::unique_ptr<StageTimer> gpu_timer_;
  HevcMcCore mc_;
  HevcResidualCore inter_residual_, intra_residual_;
  HevcIntraCore intra_;
  HevcDeblockCore deblock_;
  HevcSaoCore sao_;
  hevc::LoopFilterPlan plan_;
};

}  // namespace cuda
}  // namespace gvc
