// backend.cpp: the CUDA backend: device selection, host/device staging around the gpu/ kernels
#include "gpu/backend.h"

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/h264_recon.h"
#include "gpu/intra_prune.h"
#include "gpu/me.h"

namespace gvc {
namespace {

using cuda::check;

// Shared by the backend and the motion searches it hands out.
struct CudaState {
  int device = 0;
  bool use_current_context = false;  // the creator had a context current: never cudaSetDevice
  cuda::Stream stream;
  // The motion search's: beside the H.264 reconstructor's loop filter on `stream`, which
  // orders the two with events (H264ReconCore::set_analysis_stream). Its blocks start first:
  // the intra search beside it (H264ReconCore::start_intra_search) has until the SATD caches,
  // which follow the search, to end.
  cuda::Stream analysis;

  Status enter() const {
    if (use_current_context) {
      if (!cuda::context_is_current())
        return Status::error("the CUDA backend was created in a CUDA context that is not "
                             "current any more (push it before calling)");
      return {};
    }
    // Created without a context: always this device's primary context.
    return check(cudaSetDevice(device), "cudaSetDevice");
  }
};

// A device view of `v`: itself when it is in device memory, else an uploaded copy.
Status stage_plane(const PlaneView& v, cuda::DeviceBuffer& buf, cuda::DevicePlane* d,
                   cudaStream_t s) {
  if (v.loc == MemoryLocation::Device) {
    *d = {v.data, v.stride, v.width, v.height};
    return {};
  }
  const size_t pitch = (size_t(v.width) + 63) & ~size_t(63);
  GVC_TRY(buf.reserve(pitch * v.height));
  GVC_CUDA_TRY(cudaMemcpy2DAsync(buf.get(), pitch, v.data, size_t(v.stride), size_t(v.width),
                                 size_t(v.height), cudaMemcpyHostToDevice, s));
  *d = {buf.get<uint8_t>(), ptrdiff_t(pitch), v.width, v.height};
  return {};
}

class CudaMotionSearch final : public MotionSearch {
 public:
  explicit CudaMotionSearch(std::shared_ptr<CudaState> state) : state_(std::move(state)) {}

  ~CudaMotionSearch() override {
    // Free in the context the memory belongs to.
    if (!state_->enter().ok()) return;
  }

  Status run(const PlaneView& cur, const PlaneView& ref, const MeParams& p,
             MbPartitionField& out) override {
    if (cur.width != ref.width || cur.height != ref.height || cur.width <= 0 || cur.height <= 0)
      return Status::error("current and reference frames must have the same, non-empty size");
    if (p.range < kMinSearchRange || p.range > kMaxSearchRange)
      return Status::error("search range must be between 8 and 64");
    if (p.lambda > 65535) return Status::error("lambda must be at most 65535");
    if (out.mb_cols != mb_count(cur.width) || out.mb_rows != mb_count(cur.height) || !out.data)
      return Status::error("result field does not match the frame size");
    if (!cur.data || !ref.data) return Status::error("frame views without data");
    GVC_TRY(state_->enter());
    cudaStream_t s = state_->analysis.get();

    cuda::DevicePlane dcur, dref;
    GVC_TRY(stage_plane(cur, cur_buf_, &dcur, s));
    GVC_TRY(stage_plane(ref, ref_buf_, &dref, s));

    const size_t nmb = size_t(out.mb_cols) * out.mb_rows;
    const MvCost* dpred = nullptr;
    if (p.predictors && p.predictors_loc == MemoryLocation::Device) {
      dpred = p.predictors;  // on the device already (FrameReconstructor::me_predictors)
    } else if (p.predictors) {
      GVC_TRY(pred_buf_.reserve(nmb * sizeof(MvCost)));
      GVC_CUDA_TRY(cudaMemcpyAsync(pred_buf_.get(), p.predictors, nmb * sizeof(MvCost),
                                   cudaMemcpyHostToDevice, s));
      dpred = pred_buf_.get<MvCost>();
    }
    MbPartitions* dout = out.data;
    if (out.loc == MemoryLocation::Host) {
      GVC_TRY(out_buf_.reserve(nmb * sizeof(MbPartitions)));
      dout = out_buf_.get<MbPartitions>();
    }
    GVC_TRY(core_.search(dcur, dref, p.range, p.lambda, p.subpel, dpred, dout, s, p.refined_partitions));
    if (out.loc == MemoryLocation::Host)
      return cuda::download_staged(out_staging_, out.data, dout, nmb * sizeof(MbPartitions), s);
    if (p.queue_only) return {};
    return state_->analysis.synchronize("motion search");
  }

  Status select_blocks(const MbPartitionField& parts, BlockSize size,
                       MvBlockField& out) override {
    int bw, bh, cols, rows;
    block_field_dims(size, parts.mb_cols, parts.mb_rows, &bw, &bh, &cols, &rows);
    if (out.cols != cols || out.rows != rows || !out.data || !parts.data)
      return Status::error("block field does not match the partition field");
    out.block_w = bw;
    out.block_h = bh;
    GVC_TRY(state_->enter());
    cudaStream_t s = state_->analysis.get();  // behind the searches that filled `parts`
    const size_t nmb = size_t(parts.mb_cols) * parts.mb_rows;
    const size_t nblk = size_t(cols) * rows;
    const MbPartitions* dparts = parts.data;
    if (parts.loc == MemoryLocation::Host) {
      GVC_TRY(out_buf_.reserve(nmb * sizeof(MbPartitions)));
      GVC_CUDA_TRY(cudaMemcpyAsync(out_buf_.get(), parts.data, nmb * sizeof(MbPartitions),
                                   cudaMemcpyHostToDevice, s));
      dparts = out_buf_.get<MbPartitions>();
    }
    MvCost* dout = out.data;
    if (out.loc == MemoryLocation::Host) {
      GVC_TRY(blk_buf_.reserve(nblk * sizeof(MvCost)));
      dout = blk_buf_.get<MvCost>();
    }
    GVC_TRY(core_.select_blocks(dparts, parts.mb_cols, parts.mb_rows, size, dout, s));
    if (out.loc == MemoryLocation::Host)
      GVC_CUDA_TRY(cudaMemcpyAsync(out.data, dout, nblk * sizeof(MvCost),
                                   cudaMemcpyDeviceToHost, s));
    return state_->analysis.synchronize("block selection");
  }

 private:
  std::shared_ptr<CudaState> state_;
  cuda::MeCore core_;
  cuda::DeviceBuffer cur_buf_, ref_buf_, pred_buf_, out_buf_, blk_buf_;
  cuda::PinnedBuffer out_staging_;
};

class CudaIntraPrune final : public IntraPrune {
 public:
  explicit CudaIntraPrune(std::shared_ptr<CudaState> state) : state_(std::move(state)) {}

  ~CudaIntraPrune() override {
    // Free in the context the memory belongs to.
    if (!state_->enter().ok()) return;
  }

  Status run(const PlaneView& y, const PlaneView& u, const PlaneView& v, IntraPruneMethod method,
             IntraCandidateField& out) override {
    GVC_TRY(intra_prune_check_args(y, u, v, out));
    GVC_TRY(state_->enter());
    cudaStream_t s = state_->stream.get();
    cuda::DevicePlane dy, du, dv;
    GVC_TRY(stage_plane(y, y_buf_, &dy, s));
    GVC_TRY(stage_plane(u, u_buf_, &du, s));
    GVC_TRY(stage_plane(v, v_buf_, &dv, s));
    const size_t bytes = size_t(out.mb_cols) * out.mb_rows * sizeof(IntraMbCandidates);
    IntraMbCandidates* dout = out.data;
    if (out.loc == MemoryLocation::Host) {
      GVC_TRY(out_buf_.reserve(bytes));
      dout = out_buf_.get<IntraMbCandidates>();
    }
    GVC_TRY(cuda::intra_prune(dy, du, dv, method, dout, s));
    if (out.loc == MemoryLocation::Host)
      GVC_CUDA_TRY(cudaMemcpyAsync(out.data, dout, bytes, cudaMemcpyDeviceToHost, s));
    return state_->stream.synchronize("intra pruning");
  }

 private:
  std::shared_ptr<CudaState> state_;
  cuda::DeviceBuffer y_buf_, u_buf_, v_buf_, out_buf_;
};

class CudaH264Reconstructor final : public h264::FrameReconstructor {
 public:
  explicit CudaH264Reconstructor(std::shared_ptr<CudaState> state) : state_(std::move(state)) {
    core_.set_analysis_stream(state_->analysis.get());
  }
  ~CudaH264Reconstructor() override {
    // Free in the context the memory belongs to.
    if (!state_->enter().ok()) return;
    if (!pinned_.empty()) {  // a caller that forgot (see pin_host_memory): after every copy into them
      (void)core_.wait_idle(state_->stream.get());
      for (void* p : pinned_) cudaHostUnregister(p);
    }
  }

  const char* name() const override { return "cuda"; }

  // The intra search and the SATDs of the likely inter candidates of every macroblock on the
  // GPU (intra_prep.h, satd_cache.h), then the decision on the CPU's wavefront, which takes
  // them where they hold.
  MbPartitions* motion_results(int r, int mb_count) override {
    if (!state_->enter().ok()) return nullptr;
    return core_.motion_results(r, mb_count);
  }

  Status start_intra_search(const h264::DecideJob& job) override {
    GVC_TRY(state_->enter());
    return core_.start_intra_search(job);
  }

  Status decide(const h264::DecideJob& job) override {
    GVC_TRY(state_->enter());
    h264::DecideJob j = job;
    const auto t0 = std::chrono::steady_clock::now();
    // The wavefront starts on the rows whose SATD caches are down (j.inputs_rows); the first of
    // its threads to need another row waits for the rest, without a CUDA call (the pool's
    // threads hold no context).
    GVC_TRY(core_.prepare_decision(job, state_->stream.get(), &j.intra_prep, &j.satd, &j.presel, me_host_,
                                   &j.inputs_rows));
    bool rest_came = true;
    if (j.inputs_rows < job.mb_height) j.wait_inputs = [&] { rest_came = core_.rest_prepared(kRestTimeoutMs); };
    if (job.me) j.me = me_host_;  // the wavefront reads host copies
    j.refs_full_only = true;      // (the last reconstruction's b, h and j come down after it: run())
    prepare_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    Status st = core_.decision_staging(job.mb_width * job.mb_height, &j.packed);  // packed by the wavefront
    int intra = -1;  // (a decision that does not count them leaves run() to)
    j.intra_count = &intra;
    if (st.ok()) st = cpu_->decide(j);
    // Nothing is copied into the caches once decide() returns; a failure on the device shows here.
    GVC_TRY(core_.wait_prepared());
    if (st.ok() && !rest_came) {
      // The wavefront went on without the second band (read while it came, or stale): a slow
      // device, not a failed one. Decided again, with every cache there.
      j.inputs_rows = job.mb_height;
      j.wait_inputs = nullptr;
      intra = -1;
      st = cpu_->decide(j);
    }
    GVC_TRY(st);
    core_.decisions_packed(job.mbs, job.mb_width * job.mb_height, intra);
    return Status();
  }
  double last_prepare_ms() const override { return prepare_ms_; }
  RunTimes last_run_times() const override { return core_.last_run_times(); }

  Status upload_source(const h264::Picture& src, PlaneView out[3]) override {
    GVC_TRY(state_->enter());
    return core_.upload_source(src, state_->stream.get(), out);
  }

  Status load_device_source(const h264::FrameIn& in, int width, int height, h264::Picture& src,
                            PlaneView out[3]) override {
    GVC_TRY(state_->enter());
    return core_.load_device_source(in, width, height, src, state_->stream.get(), out);
  }

  PlaneView reference_luma(const h264::RefPicture& ref) override {
    PlaneView v;
    if (state_->enter().ok() && core_.reference_luma(ref.id, ref.pic.width(0), ref.pic.height(0), &v)) return v;
    return ref.search_view();  // as the CPU's (run() fills search_luma on both)
  }

  Status finish() override {
    GVC_TRY(state_->enter());
    return core_.finish();
  }

  // The reference is kept on the device, where the motion search (on the analysis stream)
  // reads its luma before the loop filter once run() has made it (search_ready_); decide()'s
  // preparation completes the host copies.
  Status finish_for_analysis() override {
    GVC_TRY(state_->enter());
    return core_.finish_on_device();
  }

  Status run(const h264::ReconJob& job) override {
    GVC_TRY(state_->enter());
    return core_.run(job, state_->stream.get());
  }

  Status wait_rows(int rows) override {
    GVC_TRY(state_->enter());
    return core_.wait_rows(rows);
  }

  const MvCost* me_predictors(int mb_width, int mb_height) override {
    if (!state_->enter().ok()) return nullptr;
    return core_.me_predictors(mb_width, mb_height, state_->stream.get());
  }

  // Page-locked in place (portable: every context may copy to and from it asynchronously).
  bool pin_host_memory(void* p, size_t bytes) override {
    if (!p || !bytes || !state_->enter().ok()) return false;
    if (cudaHostRegister(p, bytes, cudaHostRegisterPortable) != cudaSuccess) {
      cudaGetLastError();  // not sticky: clear it
      return false;
    }
    pinned_.push_back(p);
    return true;
  }
  // After every copy the core has queued, to or from it (the next run or a failure's
  // leftovers).
  void unpin_host_memory(void* p) override {
    for (size_t i = 0; i < pinned_.size(); i++) {
      if (pinned_[i] != p) continue;
      if (!state_->enter().ok()) return;  // kept: the destructor tries again
      (void)core_.wait_idle(state_->stream.get());
      cudaHostUnregister(p);
      pinned_.erase(pinned_.begin() + ptrdiff_t(i));
      return;
    }
  }
  bool rows_later() const override { return core_.rows_later(); }
  const h264::MbBitsView* mb_bits() const override { return core_.mb_bits(); }

 private:
  std::shared_ptr<CudaState> state_;
  cuda::H264ReconCore core_;
  std::unique_ptr<h264::FrameReconstructor> cpu_ = h264::make_cpu_reconstructor();
  MbPartitionField me_host_[4];  // the decision's host view of the motion search's results
  double prepare_ms_ = 0;
  // How long the decision's wavefront waits for the second band of SATD caches before it goes on
  // without them (decide() then decides again once they are there, or fails with the device).
  static constexpr int kRestTimeoutMs = 2000;
  std::vector<void*> pinned_;  // pin_host_memory's, until unpinned
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(std::shared_ptr<CudaState> state) : state_(std::move(state)) {}

  const char* name() const override { return "cuda"; }
  MemoryLocation location() const override { return MemoryLocation::Device; }

  std::unique_ptr<MotionSearch> motion_search() override {
    return std::make_unique<CudaMotionSearch>(state_);
  }

  std::unique_ptr<IntraPrune> intra_prune() override {
    return std::make_unique<CudaIntraPrune>(state_);
  }

  std::unique_ptr<h264::FrameReconstructor> h264_reconstructor() override {
    return std::make_unique<CudaH264Reconstructor>(state_);
  }

  void* allocate(size_t bytes) override {
    if (!state_->enter().ok()) return nullptr;
    void* p = nullptr;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) return nullptr;
    return p;
  }

  void release(void* p) override {
    if (p && state_->enter().ok()) cudaFree(p);
  }

  Status copy(void* dst, MemoryLocation dst_loc, const void* src, MemoryLocation src_loc,
              size_t bytes) override {
    GVC_TRY(state_->enter());
    cudaMemcpyKind kind;
    if (dst_loc == MemoryLocation::Host)
      kind = src_loc == MemoryLocation::Host ? cudaMemcpyHostToHost : cudaMemcpyDeviceToHost;
    else
      kind = src_loc == MemoryLocation::Host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice;
    GVC_TRY(state_->analysis.synchronize("motion search"));  // results it may copy (queue_only)
    GVC_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kind, state_->stream.get()));
    return state_->stream.synchronize("copy");
  }

  Status synchronize() override {
    GVC_TRY(state_->enter());
    GVC_TRY(state_->analysis.synchronize("motion search"));
    return state_->stream.synchronize("synchronize");
  }

 private:
  std::shared_ptr<CudaState> state_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device_id, Status* why) {
  auto fail = [&](std::string msg) -> std::unique_ptr<Backend> {
    if (why) *why = Status::error(std::move(msg));
    return nullptr;
  };
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return fail(std::string("no usable CUDA driver or device: ") + cudaGetErrorString(e));
  if (count <= 0) return fail("no CUDA device found");

  auto state = std::make_shared<CudaState>();
  if (cuda::context_is_current()) {
    int current = -1;
    Status st = check(cudaGetDevice(&current), "cudaGetDevice");
    if (!st.ok()) return fail(st.message());
    if (device_id >= 0 && device_id != current)
      return fail("the current CUDA context is on device " + std::to_string(current) +
                  ", not on the requested device " + std::to_string(device_id));
    state->device = current;
    state->use_current_context = true;
  } else {
    if (device_id < 0) device_id = 0;
    if (device_id >= count)
      return fail("CUDA device " + std::to_string(device_id) + " does not exist (" +
                  std::to_string(count) + " found)");
    state->device = device_id;
    Status st = cuda::enter_device(device_id);
    if (!st.ok()) return fail(st.message());
  }
  Status st = state->stream.create();
  if (st.ok()) st = state->analysis.create(/*first=*/true);
  if (!st.ok()) return fail(st.message());
  if (why) *why = Status();
  return std::make_unique<CudaBackend>(std::move(state));
}

}  // namespace gvc
