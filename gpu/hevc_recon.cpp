// hevc_recon.cpp: an HEVC picture's recorded reconstruction and its loop filters run on the GPU, stage after stage on one stream
#include "gpu/hevc_recon.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "gpu/hevc_levels.h"

namespace gvc {
namespace cuda {

HevcCudaReconstructor::HevcCudaReconstructor(int device_id) : device_id_(device_id) {
  slots_.reserve(kMaxSlots);  // never reallocated: reconstruct() holds pointers to slots
}

std::function<void()> HevcCudaReconstructor::thread_entry() {
  void* ctx = current_context();
  return [this, ctx] { entry_failed_ = !make_context_current(ctx); };
}

namespace {

using Clock = std::chrono::steady_clock;

// Adds the time since `t` to `acc` and restarts `t`.
void lap(Clock::time_point& t, double& acc) {
  const Clock::time_point now = Clock::now();
  acc += std::chrono::duration<double>(now - t).count();
  t = now;
}

// Device buffers that follow a per-picture size grow with a quarter to spare: cudaFree waits
// for the whole device.
size_t with_headroom(size_t bytes) { return bytes + bytes / 4; }

}  // namespace

DeviceBuffer HevcFrameBuffers::take() {
  std::lock_guard<std::mutex> lock(mutex);
  if (free.empty()) {
    ++made;
    return DeviceBuffer();
  }
  DeviceBuffer b = std::move(free.back());
  free.pop_back();
  return b;
}

void HevcFrameBuffers::give_back(DeviceBuffer&& b) {
  std::lock_guard<std::mutex> lock(mutex);
  free.push_back(std::move(b));
}

void HevcFrameBuffers::notify() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    ++events;
  }
  changed.notify_all();
}

void HevcCudaReconstructor::caller_waits(bool on) {
  caller_waiting_.fetch_add(on ? 1 : -1, std::memory_order_acq_rel);
  if (on) frame_buffers_->notify();
}

void HevcCudaReconstructor::wait_taken(const Slot& d) {
  HevcFrameBuffers& fb = *frame_buffers_;
  const auto deadline = std::chrono::steady_clock::now() + kTakeWait;
  for (;;) {
    uint64_t seen;
    size_t in_use;
    {
      std::lock_guard<std::mutex> lock(fb.mutex);
      seen = fb.events;
      in_use = fb.made - fb.free.size();
    }
    if (in_use < kFreeCopies) return;  // a copy or two cost less than a wait
    if (caller_waiting_.load(std::memory_order_acquire) > 0) return;
    bool pending = false;
    for (const std::weak_ptr<HevcDeviceFrame>& w : d.frames) {
      const std::shared_ptr<HevcDeviceFrame> fp = w.lock();
      if (!fp) continue;
      std::lock_guard<std::mutex> lock(fp->m_);
      pending |= fp->readers_ == d.readers && !fp->copied_;
    }
    if (!pending) return;
    std::unique_lock<std::mutex> lock(fb.mutex);
    if (!fb.changed.wait_until(lock, deadline, [&] { return fb.events != seen; })) return;  // the caller is busy
  }
}

std::string HevcCudaReconstructor::host_times_summary() const {
  const HostTimes& t = host_times_;
  const double k = t.pictures ? 1e3 / t.pictures : 0.0;
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "host ms/picture over %d: refs %.3f levels %.3f mc %.3f inter_residual %.3f intra_residual %.3f "
                "intra %.3f plan %.3f deblock %.3f sao %.3f download %.3f total %.3f (%d prepared on a lane)",
                t.pictures, k * t.refs, k * t.levels, k * t.mc, k * t.inter_residual, k * t.intra_residual,
                k * t.intra, k * t.plan, k * t.deblock, k * t.sao, k * t.download, k * t.total, t.prepared);
  return buf;
}

std::string HevcCudaReconstructor::memory_summary() const {
  const double m = 1.0 / (1 << 20);
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "gpu memory MiB: pictures %.1f (%zu slots), frame buffers %zu, records and levels %.1f "
                "mc %.1f itx %.1f intra %.1f deblock %.1f sao %.1f (its tiles' edges %.1f)",
                m * double(picture_bytes()), slots_.size(), frame_buffers(), m * double(records_.size() + dense_levels_.size()),
                m * double(mc_.device_bytes()),
                m * double(inter_residual_.device_bytes() + intra_residual_.device_bytes()),
                m * double(intra_.device_bytes()), m * double(deblock_.device_bytes()), m * double(sao_.device_bytes()),
                m * double(sao_.edge_bytes()));
  return buf;
}

void HevcCudaReconstructor::set_gpu_timing(bool on) {
  gpu_timer_.reset(on ? new StageTimer(kGpuStages) : nullptr);
}

std::string HevcCudaReconstructor::gpu_times_summary() {
  if (!gpu_timer_) return "gpu ms/picture: not timed";
  const Status st = gpu_timer_->collect();
  if (!st.ok()) return "gpu ms/picture: " + st.message();
  const StageTimer& g = *gpu_timer_;
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "gpu ms/picture over %d: upload %.3f mc %.3f inter_residual %.3f intra %.3f deblock %.3f sao %.3f, "
                "busy %.3f, period %.3f",
                g.rounds(), g.stage_ms(kGpuUpload), g.stage_ms(kGpuMc), g.stage_ms(kGpuInterResidual),
                g.stage_ms(kGpuIntra), g.stage_ms(kGpuDeblock), g.stage_ms(kGpuSao), g.busy_ms(), g.span_ms());
  return buf;
}

std::string HevcCudaReconstructor::allocator_error() const {
  std::lock_guard<std::mutex> lock(allocator_error_mutex_);
  return allocator_error_;
}

size_t HevcCudaReconstructor::picture_bytes() const {
  size_t n = 0;
  for (const Slot& s : slots_) n += s.mem.bytes;
  return n;
}

size_t HevcCudaReconstructor::frame_buffers() const {
  std::lock_guard<std::mutex> lock(frame_buffers_->mutex);
  return frame_buffers_->made;
}

void HevcCudaReconstructor::release(const hevc::Picture& pic) {
  for (Slot& s : slots_)
    if (s.pic == &pic && s.decode_index == pic.decode_index) s.pic = nullptr;
}

Status HevcCudaReconstructor::slot_for(const hevc::Picture& p, Slot*& out, bool& found) {
  found = false;
  out = nullptr;
  Slot *unused = nullptr, *evictable = nullptr;
  const auto fits = [&p](const Slot& s) {
    return s.mem.owner && s.mem_width == p.plane[0].width && s.mem_height == p.plane[0].height;
  };
  for (Slot& s : slots_) {
    if (s.pic == &p && s.decode_index == p.decode_index) {
      found = true;
      s.last_use = ++use_counter_;
      out = &s;
      return {};
    }
    if (s.pic == &p) s.pic = nullptr;  // a picture that lived at this address before (not released)
    if (s.pic) continue;
    if (!s.read()) {
      if (!unused || (!fits(*unused) && fits(s))) unused = &s;
    } else if (!evictable || s.last_use < evictable->last_use) {
      evictable = &s;
    }
  }
  Slot* s = unused;
  if (!s && slots_.size() < std::min(dpb_slots_, kMaxSlots)) {
    slots_.emplace_back();
    s = &slots_.back();
  }
  if (!s && evictable) {
    GVC_TRY(evict(*evictable));
    s = evictable;
  }
  if (!s && slots_.size() < kMaxSlots) {
    slots_.emplace_back();
    s = &slots_.back();
  }
  if (!s) {  // the least recently used one that no output frame reads (a DPB picture)
    for (Slot& t : slots_)
      if (!t.read() && (!s || t.last_use < s->last_use)) s = &t;
    if (!s) return Status::error("HEVC reconstruction: no picture slot left, output frames read them all");
  }
  s->pic = &p;
  s->decode_index = p.decode_index;
  s->last_use = ++use_counter_;
  out = s;
  return {};
}

Status HevcCudaReconstructor::place(const hevc::Picture& p, Slot& d) {
  const int w = p.plane[0].width, h = p.plane[0].height;
  if (!d.mem.owner || d.mem_width != w || d.mem_height != h) {
    d.mem = PictureMemory();
    if (allocator_) {
      const Status st = allocator_(w, h, d.mem);
      if (st.ok()) {
        ++allocations_;
      } else {
        std::lock_guard<std::mutex> lock(allocator_error_mutex_);
        allocator_error_ = st.message();
        allocator_ = nullptr;
        d.mem = PictureMemory();
      }
    }
    if (!d.mem.owner) {  // one allocation, planes tightly packed
      auto buf = std::make_shared<DeviceBuffer>();
      size_t bytes = 0;
      for (int c = 0; c < 3; ++c) bytes += size_t(p.plane[c].width) * p.plane[c].height * sizeof(uint16_t);
      GVC_TRY(buf->reserve(bytes));
      uint16_t* base = buf->get<uint16_t>();
      for (int c = 0; c < 3; ++c) {
        d.mem.plane[c] = {base, p.plane[c].width, p.plane[c].width, p.plane[c].height};
        base += size_t(p.plane[c].width) * p.plane[c].height;
      }
      d.mem.bytes = bytes;
      d.mem.owner = buf;
    }
    for (int c = 0; c < 3; ++c)
      if (!d.mem.plane[c].data || d.mem.plane[c].width < p.plane[c].width ||
          d.mem.plane[c].height < p.plane[c].height || d.mem.plane[c].stride < p.plane[c].width) {
        d.mem = PictureMemory();
        return Status::error("HEVC reconstruction: the picture allocator gave planes smaller than the picture");
      }
    d.mem_width = w;
    d.mem_height = h;
  }
  for (int c = 0; c < 3; ++c)
    d.plane[c] = {d.mem.plane[c].data, d.mem.plane[c].stride, p.plane[c].width, p.plane[c].height};
  return {};
}

Status HevcCudaReconstructor::upload(const hevc::Picture& p, Slot& d) {
  for (int c = 0; c < 3; ++c) {
    const HevcPlane& h = p.plane[c];
    GVC_CUDA_TRY(cudaMemcpy2DAsync(d.plane[c].data, size_t(d.plane[c].stride) * sizeof(uint16_t), h.data,
                                   size_t(h.stride) * sizeof(uint16_t), size_t(h.width) * sizeof(uint16_t),
                                   size_t(h.height), cudaMemcpyHostToDevice, stream_.get()));
  }
  return {};
}

Status HevcCudaReconstructor::download(const Slot& d, hevc::Picture& p) {
  for (int c = 0; c < 3; ++c) {
    const HevcPlane& h = p.plane[c];
    GVC_CUDA_TRY(cudaMemcpy2DAsync(h.data, size_t(h.stride) * sizeof(uint16_t), d.plane[c].data,
                                   size_t(d.plane[c].stride) * sizeof(uint16_t), size_t(h.width) * sizeof(uint16_t),
                                   size_t(h.height), cudaMemcpyDeviceToHost, stream_.get()));
  }
  return stream_.synchronize("HEVC reconstruction");
}

namespace {

size_t align16(size_t n) { return (n + 15) & ~size_t(15); }

// The host half of the cores' work for `r` into `p` (HevcCudaReconstructor::prepare).
Status prepare_picture(const hevc::PicParams& pp, const hevc::Picture& pic, const hevc::PictureRecon& r,
                       HevcPrepared& p) {
  const int w[3] = {pic.plane[0].width, pic.plane[1].width, pic.plane[2].width};
  const int h[3] = {pic.plane[0].height, pic.plane[1].height, pic.plane[2].height};
  p.mc = HevcMcCore::Packed{};
  if (!r.pbs.empty()) GVC_TRY(HevcMcCore::pack(hevc::mc_batch(pp, r, nullptr), w, h, p.mc));
  p.intra.blocks.clear();
  p.intra.deps.clear();
  if (!r.intra.empty()) GVC_TRY(HevcIntraCore::pack(r.intra, r.intra_tus, w, h, pp.log2_ctb_size, p.intra));
  p.deblock = r.loop_filters_planned && r.loop_filters.deblock;
  if (p.deblock) GVC_TRY(HevcDeblockCore::check(r.loop_filters.deblock_frame));
  return {};
}

// Where run() puts a prepared picture's parts in its staging and on the device, one after
// another, each 16-byte aligned.
struct PreparedLayout {
  size_t levels = 0, level_blocks = 0, mc_pbs = 0, mc_first = 0, mc_block = 0, intra_blocks = 0, intra_deps = 0, deblock = 0, bytes = 0;
};

PreparedLayout prepared_layout(const hevc::PictureRecon& r, const HevcPrepared& p) {
  PreparedLayout l;
  size_t at = 0;
  auto place = [&at](size_t bytes) {
    const size_t here = at;
    at = align16(at + bytes);
    return here;
  };
  l.levels = place(r.level_count() * sizeof(int16_t));
  l.level_blocks = place(r.level_blocks.size() * sizeof(uint32_t));
  l.mc_pbs = place(p.mc.pbs.size() * sizeof(HevcMcCore::PackedPb));
  l.mc_first = place(p.mc.first_tile.size() * sizeof(uint32_t));
  l.mc_block = place(p.mc.block_pb.size() * sizeof(uint32_t));
  l.intra_blocks = place(p.intra.blocks.size() * sizeof(HevcIntraCore::PackedBlock));
  l.intra_deps = place(p.intra.deps.size() * sizeof(uint32_t));
  l.deblock = place(p.deblock ? HevcDeblockCore::array_bytes(r.loop_filters.deblock_frame) : 0);
  l.bytes = at;
  return l;
}

// Copies the parts of `l` into `base`.
void copy_prepared(const hevc::PictureRecon& r, const HevcPrepared& p, const PreparedLayout& l, uint8_t* base) {
  auto put = [base](size_t at, const void* src, size_t bytes) {
    if (bytes) std::memcpy(base + at, src, bytes);
  };
  r.copy_levels(reinterpret_cast<int16_t*>(base + l.levels));
  put(l.level_blocks, r.level_blocks.data(), r.level_blocks.size() * sizeof(uint32_t));
  put(l.mc_pbs, p.mc.pbs.data(), p.mc.pbs.size() * sizeof(HevcMcCore::PackedPb));
  put(l.mc_first, p.mc.first_tile.data(), p.mc.first_tile.size() * sizeof(uint32_t));
  put(l.mc_block, p.mc.block_pb.data(), p.mc.block_pb.size() * sizeof(uint32_t));
  put(l.intra_blocks, p.intra.blocks.data(), p.intra.blocks.size() * sizeof(HevcIntraCore::PackedBlock));
  put(l.intra_deps, p.intra.deps.data(), p.intra.deps.size() * sizeof(uint32_t));
  if (p.deblock) HevcDeblockCore::copy_arrays(r.loop_filters.deblock_frame, base + l.deblock);
}

}  // namespace

void HevcCudaReconstructor::prepare(const hevc::PicParams& pp, const hevc::Picture& pic, hevc::PictureRecon& r) {
  auto* p = dynamic_cast<HevcPrepared*>(r.prepared.get());
  if (!p) {
    r.prepared = std::make_unique<HevcPrepared>();
    p = static_cast<HevcPrepared*>(r.prepared.get());
  }
  p->decode_index = pic.decode_index;
  p->status = prepare_picture(pp, pic, r, *p);
  r.prepared_ready = true;
}

Status HevcCudaReconstructor::reconstruct(const hevc::PicParams& pp, const hevc::FrameState& fs,
                                          const hevc::PictureRecon& r, hevc::Picture& pic) {
  const Clock::time_point start = Clock::now();
  Clock::time_point t = start;
  HostTimes times;  // this picture's, added to host_times_ when it succeeds
  if (entry_failed_) return Status::error("the caller's CUDA context could not be made current on this thread");
  GVC_TRY(enter_device(device_id_));
  if (!stream_.get()) GVC_TRY(stream_.create());
  const cudaStream_t s = stream_.get();
  if (gpu_timer_) GVC_TRY(gpu_timer_->begin(s));
  // the DPB's size, for slot_for
  const int htid = pp.sps->max_sub_layers_minus1;
  dpb_slots_ = size_t(pp.sps->max_dec_pic_buffering_minus1[htid]) + 1;

  // the reference pictures first, so that the current picture's slot cannot evict one
  ref_slots_.assign(r.refs.size(), nullptr);
  for (size_t i = 0; i < r.refs.size(); ++i) {
    bool found = false;
    GVC_TRY(slot_for(*r.refs[i], ref_slots_[i], found));
    if (!found) {
      if (!r.refs[i]->samples_on_host)
        return Status::error("reference picture POC " + std::to_string(r.refs[i]->poc) +
                             " is no longer on the device");
      GVC_TRY(place(*r.refs[i], *ref_slots_[i]));
      GVC_TRY(upload(*r.refs[i], *ref_slots_[i]));
    }
  }
  bool found = false;
  Slot* cur_slot = nullptr;
  GVC_TRY(slot_for(pic, cur_slot, found));
  Slot& cur = *cur_slot;
  GVC_TRY(place(pic, cur));
  if (!r.pcm.empty()) {
    pic.ensure_samples();  // (a kept picture may have none on the host)
    hevc::write_pcm_blocks(r, pic);
    GVC_TRY(upload(pic, cur));
  }
  lap(t, times.refs);

  // What the picture's lane prepared (HevcPrepared), when it did for this picture and
  // succeeded: uploaded in one copy; else the levels through pinned staging here (a pageable
  // copy would be staged by the driver on this thread, synchronously) and each core packing
  // its own work.
  auto* prep = r.prepared_ready ? dynamic_cast<HevcPrepared*>(r.prepared.get()) : nullptr;
  if (prep && (prep->decode_index != pic.decode_index || !prep->status.ok())) prep = nullptr;
  uint8_t* prep_dev = nullptr;
  PreparedLayout at;
  if (prep) {
    at = prepared_layout(r, *prep);
    uint8_t* staging = nullptr;
    GVC_TRY(prepared_staging_.acquire(at.bytes, staging));
    copy_prepared(r, *prep, at, staging);
    if (records_.size() < at.bytes) GVC_TRY(records_.reserve(with_headroom(at.bytes)));
    GVC_CUDA_TRY(cudaMemcpyAsync(records_.get(), staging, at.bytes, cudaMemcpyHostToDevice, s));
    GVC_TRY(prepared_staging_.release(s));
    prep_dev = records_.get<uint8_t>();
  }
  // the levels as the parse kept them, only the TUs' coded sub-blocks (a fifth of the dense
  // levels at 1080p and 6 Mbit/s), then made dense on the device
  if (r.level_blocks.size() * 16 != r.level_count())
    return Status::error("the picture's levels do not match their sub-blocks");
  size_t packed_at = at.levels, blocks_at = at.level_blocks;
  if (!prep && !r.level_blocks.empty()) {
    packed_at = 0;
    blocks_at = align16(r.level_count() * sizeof(int16_t));
    const size_t bytes = blocks_at + r.level_blocks.size() * sizeof(uint32_t);
    if (records_.size() < bytes) GVC_TRY(records_.reserve(with_headroom(bytes)));
    uint8_t* staging = nullptr;
    GVC_TRY(level_staging_.acquire(bytes, staging));
    r.copy_levels(reinterpret_cast<int16_t*>(staging));
    std::memcpy(staging + blocks_at, r.level_blocks.data(), r.level_blocks.size() * sizeof(uint32_t));
    GVC_CUDA_TRY(cudaMemcpyAsync(records_.get(), staging, bytes, cudaMemcpyHostToDevice, s));
    GVC_TRY(level_staging_.release(s));
  }
  const size_t n_levels = r.dense_levels;
  if (dense_levels_.size() < n_levels * sizeof(int16_t))
    GVC_TRY(dense_levels_.reserve(with_headroom(n_levels * sizeof(int16_t))));
  // (the intra TUs' residuals are then written over their dense levels)
  int16_t* levels = dense_levels_.get<int16_t>();
  GVC_TRY(hevc_expand_levels(reinterpret_cast<const uint32_t*>(records_.get<uint8_t>() + blocks_at), r.level_blocks.size(),
                             reinterpret_cast<const int16_t*>(records_.get<uint8_t>() + packed_at), levels, n_levels, s));
  HevcScalingMatrices scaling;
  for (int size_id = 0; size_id < 4; ++size_id)
    for (int j = 0; j < 6; ++j)
      if (!pp.scaling_factor[size_id][j].empty()) scaling.m[size_id][j] = pp.scaling_factor[size_id][j].data();
  lap(t, times.levels);
  if (gpu_timer_) GVC_TRY(gpu_timer_->mark(kGpuUpload, s));

  if (!r.pbs.empty()) {
    if (ref_planes_size_ < r.refs.size()) {
      ref_planes_.reset(new HevcPlane[r.refs.size()][3]);
      ref_planes_size_ = r.refs.size();
    }
    for (size_t i = 0; i < r.refs.size(); ++i)
      for (int c = 0; c < 3; ++c) ref_planes_[i][c] = ref_slots_[i]->plane[c];
    if (prep) {
      GVC_TRY(mc_.launch(prep->mc, ref_planes_.get(), int(r.refs.size()),
                         reinterpret_cast<const HevcMcCore::PackedPb*>(prep_dev + at.mc_pbs),
                         reinterpret_cast<const uint32_t*>(prep_dev + at.mc_first),
                         reinterpret_cast<const uint32_t*>(prep_dev + at.mc_block), cur.plane, s));
    } else {
      GVC_TRY(mc_.run(hevc::mc_batch(pp, r, ref_planes_.get()), cur.plane, s));
    }
  }
  lap(t, times.mc);
  if (gpu_timer_) GVC_TRY(gpu_timer_->mark(kGpuMc, s));
  GVC_TRY(inter_residual_.run(r.inter_tus, levels, n_levels, scaling, cur.plane,
                              pp.bit_depth_y, pp.bit_depth_c, s));
  lap(t, times.inter_residual);
  if (gpu_timer_) GVC_TRY(gpu_timer_->mark(kGpuInterResidual, s));
  if (!r.intra.empty()) {
    if (!r.intra_tus.empty()) {
      GVC_TRY(intra_residual_.run_to_residuals(r.intra_tus, levels, n_levels, scaling,
                                               cur.plane, pp.bit_depth_y, pp.bit_depth_c,
                                               levels, s));
    }
    lap(t, times.intra_residual);
    if (prep)
      GVC_TRY(intra_.launch(prep->intra, reinterpret_cast<const HevcIntraCore::PackedBlock*>(prep_dev + at.intra_blocks),
                            reinterpret_cast<const uint32_t*>(prep_dev + at.intra_deps), levels,
                            cur.plane, pp.bit_depth_y, pp.bit_depth_c, pp.sps->strong_intra_smoothing_enabled_flag, s));
    else
      GVC_TRY(intra_.run(r.intra, r.intra_tus, levels, cur.plane, pp.bit_depth_y,
                         pp.bit_depth_c, pp.sps->strong_intra_smoothing_enabled_flag, pp.log2_ctb_size, s));
    lap(t, times.intra);
  }

  if (gpu_timer_) GVC_TRY(gpu_timer_->mark(kGpuIntra, s));
  // the decoder's plan when its lane made one (frame threads), else ours
  const hevc::LoopFilterPlan* plan = &r.loop_filters;
  if (!r.loop_filters_planned) {
    hevc::plan_loop_filters(pp, fs, pic, plan_);
    plan = &plan_;
  }
  lap(t, times.plan);
  if (plan->deblock) {
    if (prep && prep->deblock && plan == &r.loop_filters)
      GVC_TRY(deblock_.launch(plan->deblock_frame, prep_dev + at.deblock, cur.plane, s));
    else
      GVC_TRY(deblock_.run(plan->deblock_frame, cur.plane, s));
  }
  lap(t, times.deblock);
  if (gpu_timer_) GVC_TRY(gpu_timer_->mark(kGpuDeblock, s));
  if (plan->sao) GVC_TRY(sao_.run(plan->sao_frame, cur.plane, s));
  if (gpu_timer_) GVC_TRY(gpu_timer_->mark(kGpuSao, s));
  GVC_TRY(cur.done->record(s));
  lap(t, times.sao);
  if (!keep_pictures_) {  // else the decoder parses on while the GPU works
    pic.ensure_samples();  // (started while the pictures were kept)
    GVC_TRY(download(cur, pic));
    lap(t, times.download);
  }
  times.total = std::chrono::duration<double>(t - start).count();
  HostTimes& a = host_times_;
  a.refs += times.refs;
  a.levels += times.levels;
  a.mc += times.mc;
  a.inter_residual += times.inter_residual;
  a.intra_residual += times.intra_residual;
  a.intra += times.intra;
  a.plan += times.plan;
  a.deblock += times.deblock;
  a.sao += times.sao;
  a.download += times.download;
  a.total += times.total;
  ++a.pictures;
  a.prepared += prep ? 1 : 0;
  return {};
}

Status HevcCudaReconstructor::write_output(const hevc::Picture& pic, const std::shared_ptr<HevcDeviceFrame>& fp) {
  Slot* slot = nullptr;
  for (Slot& t : slots_)
    if (t.pic == &pic && t.decode_index == pic.decode_index) slot = &t;
  if (!slot) return Status::error("output picture POC " + std::to_string(pic.poc) + " is not on the device");
  if (entry_failed_) return Status::error("the caller's CUDA context could not be made current on this thread");
  GVC_TRY(enter_device(device_id_));
  if (!output_stream_.get()) GVC_TRY(output_stream_.create());
  HevcDeviceFrame& f = *fp;
  std::lock_guard<std::mutex> lock(f.m_);
  f.let_go();
  f.copied_ = false;
  f.width = pic.crop_w;
  f.height = pic.crop_h;
  f.bit_depth = pic.bit_depth_y;
  f.home_ = frame_buffers_;
  f.stream_ = output_stream_.get();
  for (int c = 0; c < 3; ++c) f.planes_[c] = slot->plane[c];
  f.x0_ = pic.crop_x;
  f.y0_ = pic.crop_y;
  f.memory_ = slot->mem.owner;
  f.made_ = slot->done;
  slot->readers->fetch_add(1, std::memory_order_acq_rel);
  f.readers_ = slot->readers;
  // (frames gone or taken off since are dropped from the list as it grows)
  auto& list = slot->frames;
  list.erase(std::remove_if(list.begin(), list.end(), [](const std::weak_ptr<HevcDeviceFrame>& w) { return w.expired(); }),
             list.end());
  list.push_back(fp);
  return {};
}

Status HevcCudaReconstructor::evict(Slot& d) {
  wait_taken(d);
  bool copies = false;
  for (const std::weak_ptr<HevcDeviceFrame>& w : d.frames) {
    const std::shared_ptr<HevcDeviceFrame> fp = w.lock();
    if (!fp) continue;
    HevcDeviceFrame& f = *fp;
    std::lock_guard<std::mutex> lock(f.m_);
    if (f.readers_ != d.readers) continue;  // reads another slot now, or a copy of its own
    if (f.copied_) {  // taken and copied out: nobody reads it again
      f.let_go();
      continue;
    }
    DeviceBuffer buf = frame_buffers_->take();
    SemiPlanarView v;
    GVC_TRY(f.write_into(buf, v));
    copies = true;
    const cudaStream_t stream = f.stream_;
    f.let_go();  // the slot (and buf_, empty)
    f.buf_ = std::move(buf);
    f.view_ = v;
    f.stream_ = stream;
  }
  d.frames.clear();
  // a frame still counted is one whose last owner is letting it go (its weak_ptr expired
  // first): only this thread adds readers
  while (d.read()) std::this_thread::yield();
  if (!copies) return {};
  // the slot is written once the copies are made
  GVC_TRY(output_done_.record(output_stream_.get()));
  return output_done_.wait_on(stream_.get());
}

bool HevcCudaReconstructor::output(const hevc::Picture& pic, hevc::DecodedFrame& f, std::string& err) {
  std::shared_ptr<HevcDeviceFrame> frame = std::dynamic_pointer_cast<HevcDeviceFrame>(f.device);
  if (!frame) {
    frame = std::make_shared<HevcDeviceFrame>();
    f.device = frame;
  }
  const Status st = write_output(pic, frame);
  if (st.ok()) return true;
  err = st.message();
  return false;
}

void HevcDeviceFrame::let_go() {
  if (readers_) readers_->fetch_sub(1, std::memory_order_acq_rel);
  readers_.reset();
  memory_.reset();
  made_.reset();
  stream_ = nullptr;
  if (!buf_.get()) return;
  if (const std::shared_ptr<HevcFrameBuffers> home = home_.lock()) home->give_back(std::move(buf_));
  buf_.reset();  // (freed here when the reconstructor is gone)
}

Status HevcDeviceFrame::write_into(DeviceBuffer& buf, SemiPlanarView& v) const {
  const size_t bytes_per_sample = bit_depth > 8 ? 2 : 1;
  const size_t pitch = (size_t((width + 1) / 2) * 2 * bytes_per_sample + 255) / 256 * 256;  // rows 256-byte aligned
  GVC_TRY(buf.reserve(pitch * size_t(height + (height + 1) / 2)));
  uint8_t* y = buf.get<uint8_t>();
  v = SemiPlanarView{y, ptrdiff_t(pitch), y + pitch * size_t(height), ptrdiff_t(pitch)};
  GVC_TRY(made_->wait_on(stream_));
  return hevc_write_semi_planar(planes_, x0_, y0_, width, height, bit_depth, v, stream_);
}

HevcDeviceFrame::~HevcDeviceFrame() {
  const std::shared_ptr<HevcFrameBuffers> home = home_.lock();
  {
    std::lock_guard<std::mutex> lock(m_);
    let_go();
  }
  if (home) home->notify();  // (a frame never copied out may have been waited for: evict)
}

namespace {

// Whether a kernel may write `p` (device or managed memory), rather than host memory.
bool device_writable(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // (older runtimes fail on pageable memory)
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

// Copies the NV12/P010 picture `src` (w x h) into `dst` on `s` and waits for it.
Status copy_semi_planar(const SemiPlanarView& src, const SemiPlanarView& dst, int w, int h, int bit_depth,
                        cudaStream_t s) {
  const size_t bytes_per_sample = bit_depth > 8 ? 2 : 1;
  const size_t luma_bytes = size_t(w) * bytes_per_sample;
  const size_t chroma_bytes = size_t((w + 1) / 2) * 2 * bytes_per_sample;
  GVC_CUDA_TRY(cudaMemcpy2DAsync(dst.y, size_t(dst.y_stride), src.y, size_t(src.y_stride), luma_bytes, size_t(h),
                                 cudaMemcpyDefault, s));
  GVC_CUDA_TRY(cudaMemcpy2DAsync(dst.uv, size_t(dst.uv_stride), src.uv, size_t(src.uv_stride), chroma_bytes,
                                 size_t((h + 1) / 2), cudaMemcpyDefault, s));
  return check(cudaStreamSynchronize(s), "HEVC output copy");
}

}  // namespace

Status HevcDeviceFrame::copy_to(const SemiPlanarView& dst) const {
  std::lock_guard<std::mutex> lock(m_);
  if (!stream_)
    return Status::error(copied_ ? "HEVC output frame: its picture was reused after it was copied out"
                                 : "HEVC output frame: never written");
  const cudaStream_t s = stream_;
  Status st;
  const std::shared_ptr<HevcFrameBuffers> home = home_.lock();
  DeviceBuffer scratch;  // into host memory: the conversion's, on the device
  if (buf_.get()) {  // a copy of its own
    st = copy_semi_planar(view_, dst, width, height, bit_depth, s);
  } else if (device_writable(dst.y) && device_writable(dst.uv)) {
    st = made_->wait_on(s);
    if (st.ok()) st = hevc_write_semi_planar(planes_, x0_, y0_, width, height, bit_depth, dst, s);
    if (st.ok()) st = check(cudaStreamSynchronize(s), "HEVC output conversion");
  } else {  // into host memory: converted into a scratch buffer on the device, then copied down
    if (home) scratch = home->take();
    SemiPlanarView v;
    st = write_into(scratch, v);
    if (st.ok()) st = copy_semi_planar(v, dst, width, height, bit_depth, s);
  }
  if (!st.ok()) cudaStreamSynchronize(s);  // nothing queued may outlive the scratch or the picture it read
  if (home && scratch.get()) home->give_back(std::move(scratch));
  if (!st.ok()) return st;
  copied_ = true;  // (taken back without a copy of its own when its slot is needed: evict)
  if (home) home->notify();
  return st;
}

bool HevcCudaReconstructor::run(const hevc::PicParams& pp, const hevc::FrameState& fs, const hevc::PictureRecon& r,
                                hevc::Picture& pic, std::string& err) {
  const Status st = reconstruct(pp, fs, r, pic);
  if (st.ok()) return true;
  slots_.clear();  // the device's copies can no longer be trusted
  err = st.message();
  return false;
}

}  // namespace cuda
}  // namespace gvc
