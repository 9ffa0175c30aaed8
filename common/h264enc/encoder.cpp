// encoder.cpp: the H.264 encoder engine: frame types, parameter sets, ME stage, slice loop, DPB
#include "common/h264enc/encoder.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <string>

#include "common/bitstream/bitwriter.h"
#include "common/bitstream/nal.h"
#include "common/h264enc/analyse.h"
#include "common/h264enc/me_predictor.h"
#include "common/h264enc/slice_data.h"
#include "common/h264enc/tables.h"
#include "common/util/parallel.h"
#include "common/util/progress.h"

namespace gvc::h264 {

Status Encoder::init(const EncoderParams& p, Backend* backend) {
  if (p.width < 16 || p.height < 16 || p.width > 4096 || p.height > 4096)
    return Status::error("frame size must be between 16x16 and 4096x4096, got " +
                         std::to_string(p.width) + "x" + std::to_string(p.height));
  if (p.width % 2 || p.height % 2)
    return Status::error("4:2:0 frames need an even width and height");
  if (p.rc.qp < 0 || p.rc.qp > 51) return Status::error("qp must be within 0..51");
  if (p.rc.chroma_qp_index_offset < -12 || p.rc.chroma_qp_index_offset > 12)
    return Status::error("chroma_qp_index_offset must be within -12..12");
  if (p.analyse.search_range < kMinSearchRange || p.analyse.search_range > kMaxSearchRange)
    return Status::error("search range must be within " + std::to_string(kMinSearchRange) + ".." +
                         std::to_string(kMaxSearchRange));
  if (p.ref_frames < 1 || p.ref_frames > 4) return Status::error("ref_frames must be within 1..4");
  if (p.deblock.alpha_c0_offset_div2 < -6 || p.deblock.alpha_c0_offset_div2 > 6 ||
      p.deblock.beta_offset_div2 < -6 || p.deblock.beta_offset_div2 > 6)
    return Status::error("deblocking offsets must be within -6..6");
  if (p.keyint_max < 1) return Status::error("keyint_max must be at least 1");
  if (p.slices < 1 || p.slices > ((p.width + 15) / 16) * ((p.height + 15) / 16))
    return Status::error("slices must be between 1 and the number of macroblocks");
  entropy_.wait_idle();  // its job reads what follows
  // The last reconstructor's copies into what follows are completed, and it goes (a new one
  // comes below), before anything moves.
  if (recon_) (void)recon_->finish();
  unpin_buffers();
  recon_.reset();
  pending_ = EncodedFrame();
  held_ = Held();
  params_ = p;
  mb_width_ = (p.width + 15) / 16;
  mb_height_ = (p.height + 15) / 16;

  sps_ = Sps();
  sps_.level_idc = p.level_idc ? p.level_idc
                               : level_for(mb_width_ * mb_height_, p.fps > 0 ? p.fps : 30.0, p.ref_frames);
  sps_.constraint_set1_flag = p.constrained;
  sps_.log2_max_frame_num_minus4 = 4;  // frame_num cycles through 0..255
  sps_.max_num_ref_frames = p.ref_frames;
  sps_.pic_width_in_mbs_minus1 = mb_width_ - 1;
  sps_.pic_height_in_map_units_minus1 = mb_height_ - 1;
  sps_.frame_crop_right_offset = (16 * mb_width_ - p.width) / 2;
  sps_.frame_crop_bottom_offset = (16 * mb_height_ - p.height) / 2;
  pps_ = Pps();
  pps_.pic_init_qp_minus26 = p.rc.qp - 26;
  pps_.chroma_qp_index_offset = p.rc.chroma_qp_index_offset;
  pps_.num_ref_idx_l0_default_active_minus1 = p.ref_frames - 1;

  src_.alloc(mb_width_, mb_height_);
  rec_.alloc(mb_width_, mb_height_);
  dpb_.clear();
  spare_.clear();
  mbs_.assign(size_t(mb_width_) * mb_height_, Macroblock());
  coded_mbs_ = mbs_;
  slice_of_mb_.resize(mbs_.size());
  for (int s = 0, i = 0; i < int(mbs_.size()); i++) {
    while (int64_t(mbs_.size()) * (s + 1) / p.slices <= i) s++;
    slice_of_mb_[size_t(i)] = uint16_t(s);
  }
  if (!backend) {
    own_backend_ = make_cpu_backend();
    backend = own_backend_.get();
  }
  me_ = backend->motion_search();
  if (!me_) return Status::error(std::string("the ") + backend->name() + " backend has no motion search");
  prune_.reset();
  intra_cand_.clear();
  if (p.analyse.intra_prune != IntraPruneMethod::None) {
    prune_ = backend->intra_prune();
    if (!prune_) return Status::error(std::string("the ") + backend->name() + " backend has no intra pruning");
    intra_cand_.resize(mbs_.size());
  }
  recon_ = backend->h264_reconstructor();
  if (!recon_) recon_ = make_cpu_reconstructor();
  me_pred_.assign(mbs_.size(), MvCost{0, 0, 0});
  me_parts_.assign(size_t(p.ref_frames), std::vector<MbPartitions>(mbs_.size()));
  me_fields_.clear();
  for (auto& parts : me_parts_)
    me_fields_.push_back(MbPartitionField{parts.data(), mb_width_, mb_height_, MemoryLocation::Host});
  frame_num_ = 0;
  frames_since_idr_ = 0;
  idr_pic_id_ = 0;
  pin_buffers();
  return Status();
}

Encoder::~Encoder() {
  entropy_.wait_idle();
  unpin_buffers();
}

void Encoder::pin_buffers() {
  auto pin = [&](void* p, size_t bytes) {
    if (recon_->pin_host_memory(p, bytes)) pinned_.push_back(p);
  };
  // the decisions and the levels, down every frame
  pin(mbs_.data(), mbs_.size() * sizeof(Macroblock));
  pin(coded_mbs_.data(), coded_mbs_.size() * sizeof(Macroblock));
  for (auto& plane : src_.plane) pin(plane.data(), plane.size());  // up, or down from a device frame
  pin(me_pred_.data(), me_pred_.size() * sizeof(MvCost));          // up, when computed here (motion_search)
  pin(slice_of_mb_.data(), slice_of_mb_.size() * sizeof(uint16_t));
  if (!intra_cand_.empty()) pin(intra_cand_.data(), intra_cand_.size() * sizeof(IntraMbCandidates));
}

void Encoder::pin_picture() {
  if (pinned_.empty()) return;  // recon_ does not pin (pin_buffers() found none)
  auto pin_once = [&](void* p, size_t bytes) {
    if (std::find(pinned_.begin(), pinned_.end(), p) == pinned_.end() && recon_->pin_host_memory(p, bytes))
      pinned_.push_back(p);
  };
  for (auto& plane : rec_.plane) pin_once(plane.data(), plane.size());
  const LumaRefView v = rec_luma_.view();
  for (int p = 0; p < 4; p++) pin_once(rec_luma_.data(p), size_t(v.w) * size_t(v.h));
  if (!rec_search_.empty()) pin_once(rec_search_.data(), rec_search_.size());
}

void Encoder::unpin_buffers() {
  for (void* p : pinned_) recon_->unpin_host_memory(p);
  pinned_.clear();
}

// Copies the input, repeating the last column and row out to whole macroblocks, in bands of
// rows on the kept threads.
void Encoder::load_source(const FrameIn& in) {
  const int bands = 8;
  parallel_for(3 * bands, [&](int t) {
    const int p = t / bands, band = t % bands;
    const int w = p ? params_.width / 2 : params_.width, h = p ? params_.height / 2 : params_.height;
    const int rows = src_.height(p);
    for (int y = rows * band / bands; y < rows * (band + 1) / bands; y++) {
      const uint8_t* s = in.plane[p] + size_t(y < h ? y : h - 1) * in.stride[p];
      uint8_t* d = src_.at(p, 0, y);
      std::memcpy(d, s, size_t(w));
      for (int x = w; x < src_.width(p); x++) d[x] = s[w - 1];
    }
  });
}

// The analysis stage (DESIGN.md section 5, seeds 000/002/003): the ME core searches every
// partition of every macroblock of the current frame against each reference before any
// macroblock is coded. It searches the original current frame (that is what the encoder
// codes) against the reconstructed references (what the decoder predicts from): seed 003
// searches original against original frames to run a few frames ahead of coding, but then
// the costs describe a prediction the decoder never makes, which loses quality at high QP;
// x264 also searches reconstructed references. It reads them before their loop filter
// (RefPicture::search_luma), so that on a device the search of the next frame runs beside the
// last one's loop filter: the search only proposes vectors, which the decision then costs on
// the filtered reference (tools/quality.sh, CPU backend: BD-rate against x264 veryfast
// vtest +0.3 -> +0.5 %, Megamind -2.7 -> -3.0 %, tree +5.4 -> +5.4 %). The exact mvpL0 is
// only known during coding, in decoding order, so each macroblock's predictor here is
// approximated as seed 002 does with vectors from an earlier pass (me_predictor.h: the
// median of the previous frame's final vectors of the co-located neighbours); the decision
// re-costs the candidates with the exact predictor. A device backend computes the predictors
// where the last frame's macroblocks are (FrameReconstructor::me_predictors); else they are
// computed here, by rows on the kept threads.
Status Encoder::motion_search(int num_refs, const PlaneView& src_luma) {
  MeParams mp;
  if (const MvCost* there = recon_->me_predictors(mb_width_, mb_height_)) {
    mp.predictors = there;
    mp.predictors_loc = MemoryLocation::Device;
  } else {
    const Status st = recon_->wait_rows(mb_height_);  // the last frame's macroblocks, read here
    if (!st.ok()) return Status::error(std::string("reconstruction failed: ") + st.message());
    parallel_for(mb_height_, [&](int my) {
      for (int mx = 0; mx < mb_width_; mx++)
        me_pred_[size_t(my) * mb_width_ + mx] = me_predictor(coded_mbs_.data(), mb_width_, mx, my);
    });
    mp.predictors = me_pred_.data();
  }
  mp.range = params_.analyse.search_range;
  mp.lambda = uint32_t(lambda_for_qp(params_.rc.qp));  // lambda_motion of seed 003
  mp.subpel = params_.analyse.subpel ? Subpel::Quarter : Subpel::None;
  // Only the shapes the decision reads (pre-selection and choose_inter) are refined.
  mp.refined_partitions = me_partitions_read(decide_flags());
  for (int r = 0; r < num_refs; r++) {
    MbPartitionField& field = me_fields_[size_t(r)];
    if (MbPartitions* there = recon_->motion_results(r, mb_width_ * mb_height_))
      field = MbPartitionField{there, mb_width_, mb_height_, MemoryLocation::Device};
    else
      field = MbPartitionField{me_parts_[size_t(r)].data(), mb_width_, mb_height_, MemoryLocation::Host};
    // Results on the device: the search is only queued; decide() reads them there once its
    // stream has waited for it (me_pred_, on the host path, stays as it is until then).
    mp.queue_only = field.loc == MemoryLocation::Device;
    Status st = me_->run(src_luma, recon_->reference_luma(dpb_[size_t(r)]), mp, field);
    if (!st.ok()) return Status::error("motion search failed: " + st.message());
  }
  return Status();
}

DecideFlags Encoder::decide_flags() const {
  DecideFlags f;
  f.intra4x4 = params_.analyse.intra4x4;
  f.part16x8 = params_.analyse.part16x8;
  f.part8x8 = params_.analyse.part8x8;
  f.sub8x8 = params_.analyse.sub8x8;
  f.refine = params_.analyse.refine;
  f.preselect = params_.analyse.preselect;
  return f;
}

Status Encoder::set_pipelined(bool on) {
  if (on == pipelined_) return Status();
  entropy_.wait_idle();
  if (pending_.present || held_.present) return Status::error("an access unit is still held: drain() it first");
  pipelined_ = on;
  return Status();
}

Status Encoder::drain(EncodedFrame& out) {
  const Status st = start_held_entropy();
  entropy_.wait_idle();
  out = std::move(pending_);
  pending_ = EncodedFrame();
  return st;
}

Status Encoder::start_held_entropy() {
  if (!held_.present) return Status();
  held_.present = false;
  held_rows_ = std::make_unique<Progress>();  // the last frame's coding is done (entropy_ is idle)
  held_bits_ = MbBitsView();
  entropy_.push([this, sh = held_.sh, num_refs = held_.num_refs, rows = held_rows_.get()] {
    code_slices(coded_mbs_, sh, num_refs, pending_, rows, &held_bits_);
    pending_.present = true;
  });
  Status st;
  for (int r = 1; r <= mb_height_ && st.ok(); r++) {
    st = recon_->wait_rows(r);
    if (st.ok() && r == 1)
      if (const MbBitsView* bits = recon_->mb_bits()) {  // read by the coding once row 1 shows
        held_bits_ = *bits;
        bits_frames_++;
      }
    if (st.ok()) held_rows_->set(r);
  }
  if (st.ok()) return Status();
  // The coding must not wait for rows that the failure keeps from coming (wait_rows() has let
  // the copies still under way into coded_mbs_ end); what it writes goes.
  held_rows_->set(mb_height_);
  entropy_.wait_idle();
  pending_ = EncodedFrame();
  return Status::error(std::string("reconstruction failed: ") + st.message());
}

Status Encoder::set_qp(int qp) {
  if (qp < 0 || qp > 51) return Status::error("qp must be within 0..51");
  params_.rc.qp = qp;
  return Status();
}

void Encoder::parameter_sets(std::vector<uint8_t>& sps, std::vector<uint8_t>& pps) const {
  BitWriter bw;
  write_sps(bw, sps_);
  sps.assign(1, uint8_t((3 << 5) | int(NalUnitType::kSps)));
  rbsp_to_ebsp(bw.bytes().data(), bw.bytes().size(), sps);
  bw.clear();
  write_pps(bw, pps_);
  pps.assign(1, uint8_t((3 << 5) | int(NalUnitType::kPps)));
  rbsp_to_ebsp(bw.bytes().data(), bw.bytes().size(), pps);
}

namespace {
double ms_since(std::chrono::steady_clock::time_point& t) {
  const auto now = std::chrono::steady_clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - t).count();
  t = now;
  return ms;
}

// The process's CPU time (all threads) in ms since `t`, which moves to now; 0 unless `on`
// (the kernel sums every thread of the process for it: not free with many encoders' threads).
double cpu_ms_since(double& t, bool on) {
  if (!on) return 0;
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  const double now = double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
  const double ms = now - t;
  t = now;
  return ms;
}
}  // namespace

Status Encoder::encode(const FrameIn& in, bool force_idr, EncodedFrame& out) {
  if (mb_width_ == 0 || !me_ || !recon_) return Status::error("encoder used before a successful init");
  const Status st = encode_frame(in, force_idr, out);
  // A failure part-way may leave the reconstructor's copies queued (a device frame's still
  // read, its host copy still coming into src_): completed before the caller lets the frame go.
  if (!st.ok()) (void)recon_->finish();
  return st;
}

Status Encoder::encode_frame(const FrameIn& in, bool force_idr, EncodedFrame& out) {
  auto clock = std::chrono::steady_clock::now();
  double cpu = 0;
  cpu_ms_since(cpu, cpu_times_);
  // this frame's access unit: in `out`, or when pipelined in frame_ until its entropy coding
  EncodedFrame& cur = pipelined_ ? frame_ : out;
  cur = EncodedFrame();
  // The source first: copied and (on a device) queued for upload while the GPU still filters
  // the last frame (on a stream of its own, behind the last frame's kernels that read the
  // source, not behind the filter).
  PlaneView src_view[3];
  if (in.loc == MemoryLocation::Host) {
    load_source(in);
    Status st = recon_->upload_source(src_, src_view);
    if (!st.ok()) return Status::error(std::string("source upload failed: ") + st.message());
  }
  {
    // The last frame's reconstruction, which the analysis reads as a reference (on a device,
    // behind its loop filter) and the decision on the host (decide() completes it).
    Status st = recon_->finish_for_analysis();
    if (!st.ok()) return Status::error(std::string("reconstruction failed: ") + st.message());
    cur.times.wait = ms_since(clock);
    cur.times.cpu.wait = cpu_ms_since(cpu, cpu_times_);
  }
  if (in.loc != MemoryLocation::Host) {
    Status st = recon_->load_device_source(in, params_.width, params_.height, src_, src_view);
    if (!st.ok()) return Status::error(std::string("source upload failed: ") + st.message());
  }
  const auto after_upload = std::chrono::steady_clock::now();
  const bool src_on_device = src_view[0].loc == MemoryLocation::Device;
  bool idr = force_idr || idr_due();
  if (idr) {
    frame_num_ = 0;
    frames_since_idr_ = 0;
  }
  cur.idr = idr;
  cur.frame_num = frame_num_;
  cur.qp = params_.rc.qp;
  // An IDR marks every reference unused (8.2.5.1); then the list holds what the window has.
  const int num_refs = idr ? 0 : std::min(int(dpb_.size()), params_.ref_frames);
  cur.stats.num_ref_idx_active = num_refs;
  if (prune_) {
    // Candidates from the edge-extended source, so every macroblock is covered.
    IntraCandidateField field{intra_cand_.data(), mb_width_, mb_height_, MemoryLocation::Host};
    Status st = prune_->run(src_view[0], src_view[1], src_view[2], params_.analyse.intra_prune, field);
    if (!st.ok()) return Status::error("intra pruning failed: " + st.message());
  }
  // Stage 1, decision: every macroblock's coding, in a wavefront (mvpL0 needs the partitions
  // decided before), from the source and the references, on the backend's FrameReconstructor.
  const RefPicture* refs[4] = {};
  uint64_t ref_ids[4] = {};
  for (int r = 0; r < num_refs; r++) {
    refs[r] = &dpb_[size_t(r)];
    ref_ids[r] = dpb_[size_t(r)].id;
  }
  DecideJob dj;
  dj.analysis.flags = decide_flags();
  dj.analysis.qp = params_.rc.qp;
  dj.analysis.qpc = chroma_qp(params_.rc.qp, params_.rc.chroma_qp_index_offset);
  dj.analysis.lambda = lambda_for_qp(dj.analysis.qp);
  dj.analysis.max_mv_y = 4 * (sps_.level_idc <= 10 ? 64 : sps_.level_idc <= 20 ? 128 : sps_.level_idc <= 30 ? 256 : 512);
  dj.src = &src_;
  dj.src_on_device = src_on_device;
  dj.refs = refs;
  dj.ref_ids = ref_ids;
  dj.num_refs = num_refs;
  dj.me = me_fields_.data();
  dj.intra_cand = prune_ ? intra_cand_.data() : nullptr;
  dj.slice_of_mb = slice_of_mb_.data();
  dj.mbs = mbs_.data();
  dj.mb_width = mb_width_;
  dj.mb_height = mb_height_;
  {
    // The intra search, where the backend starts it now, runs beside the motion search.
    Status st = recon_->start_intra_search(dj);
    if (!st.ok()) return Status::error(std::string("decision preparation failed: ") + st.message());
  }
  if (num_refs) {
    Status st = motion_search(num_refs, src_view[0]);
    if (!st.ok()) return st;
  }

  cur.times.analysis_upload = std::chrono::duration<double, std::milli>(after_upload - clock).count();
  cur.times.analysis = ms_since(clock);
  cur.times.cpu.analysis = cpu_ms_since(cpu, cpu_times_);

  BitWriter bw;
  if (params_.aud) {
    // 7.3.2.4: primary_pic_type 0 (I slices only) for an IDR, 1 (I or P) otherwise
    bw.put_bits(3, idr ? 0 : 1);
    bw.rbsp_trailing_bits();
    write_annexb_nal(cur.annexb, 0, NalUnitType::kAud, bw.bytes());
    bw.clear();
  }
  if (idr) {
    write_sps(bw, sps_);
    write_annexb_nal(cur.annexb, 3, NalUnitType::kSps, bw.bytes());
    bw.clear();
    write_pps(bw, pps_);
    write_annexb_nal(cur.annexb, 3, NalUnitType::kPps, bw.bytes());
    bw.clear();
  }

  SliceHeader sh;
  sh.slice_type = idr ? kSliceI : kSliceP;
  sh.frame_num = frame_num_;
  sh.idr = idr;
  sh.idr_pic_id = idr_pic_id_;
  sh.nal_ref_idc = idr ? 3 : 2;
  sh.num_ref_idx_l0_active = idr ? 1 : num_refs;
  sh.slice_qp_delta = params_.rc.qp - (26 + pps_.pic_init_qp_minus26);
  sh.disable_deblocking_filter_idc = params_.deblock.enabled ? 0 : 1;
  sh.slice_alpha_c0_offset_div2 = params_.deblock.alpha_c0_offset_div2;
  sh.slice_beta_offset_div2 = params_.deblock.beta_offset_div2;

  // Pipelined, the last frame's entropy coding must not share the cores with the wavefront,
  // whose rows stall all the rows below them when one of its threads waits for a core.
  if (pipelined_) dj.before_wavefront = [this] { entropy_.wait_idle(); };
  {
    // The last frame's entropy coding, on its macroblocks' rows as they come down, while the
    // GPU prepares this frame's decision.
    Status st = start_held_entropy();
    if (!st.ok()) return st;
    st = recon_->decide(dj);
    if (!st.ok()) return Status::error(std::string("mode decision failed: ") + st.message());
  }
  cur.times.recon_parts = recon_->last_run_times();  // the last frame's, complete by now
  cur.times.decision = ms_since(clock);
  cur.times.cpu.decision = cpu_ms_since(cpu, cpu_times_);
  cur.times.decision_prep = recon_->last_prepare_ms();

  // Stage 2, reconstruction: residual coding, reconstruction and the loop filter, on the
  // backend's reconstructor (the GPU on a CUDA backend).
  ReconJob job;
  job.src = &src_;
  job.src_on_device = src_on_device;
  job.rec = &rec_;
  job.refs = refs;
  job.ref_ids = ref_ids;
  job.num_refs = num_refs;
  job.rec_id = next_pic_id_;
  job.rec_luma = &rec_luma_;
  job.rec_search = &rec_search_;
  // sized here, so that what is pinned stays put
  rec_luma_.alloc(rec_.width(0), rec_.height(0));
  if (params_.deblock.enabled) rec_search_.resize(rec_.plane[0].size());
  pin_picture();
  job.mbs = mbs_.data();
  job.mb_width = mb_width_;
  job.mb_height = mb_height_;
  job.qp = dj.analysis.qp;
  job.qpc = dj.analysis.qpc;
  job.p_slice = !idr;
  job.deblock = params_.deblock.enabled;
  job.deblock_params.qp = params_.rc.qp;
  job.deblock_params.chroma_qp_index_offset = params_.rc.chroma_qp_index_offset;
  job.deblock_params.alpha_c0_offset = 2 * params_.deblock.alpha_c0_offset_div2;
  job.deblock_params.beta_offset = 2 * params_.deblock.beta_offset_div2;
  job.mbs_by_rows = !pipelined_;  // entropy coding follows the rows here (below)
  job.mbs_later = pipelined_;     // the next encode() completes them (start_held_entropy)
  job.mb_bits = pipelined_;       // or hands over their bits
  Status st = recon_->run(job);
  if (!st.ok()) return Status::error(std::string("reconstruction failed: ") + st.message());

  cur.times.recon = ms_since(clock);
  cur.times.cpu.recon = cpu_ms_since(cpu, cpu_times_);

  // Sliding window (8.2.5.3): the new reference enters in front, the oldest leaves.
  if (idr) {
    for (RefPicture& r : dpb_) spare_.push_back(std::move(r));
    dpb_.clear();
  }
  RefPicture entering;
  if (int(dpb_.size()) >= params_.ref_frames) {
    entering = std::move(dpb_.back());
    dpb_.pop_back();
  } else if (!spare_.empty()) {
    entering = std::move(spare_.back());
    spare_.pop_back();
  }
  std::swap(entering.pic, rec_);
  if (rec_.mb_width != mb_width_ || rec_.mb_height != mb_height_) rec_.alloc(mb_width_, mb_height_);
  std::swap(entering.luma, rec_luma_);
  std::swap(entering.search_luma, rec_search_);
  entering.id = next_pic_id_++;
  cur.times.reference = ms_since(clock);
  dpb_.push_front(std::move(entering));
  if (idr) idr_pic_id_ = (idr_pic_id_ + 1) % 65536;
  frame_num_ = (frame_num_ + 1) % (1 << (sps_.log2_max_frame_num_minus4 + 4));
  frames_since_idr_++;

  // Stage 3, entropy coding, here or (pipelined) on the entropy thread while the next frame
  // goes through stages 1 and 2; this frame's decisions become the last frame's.
  if (!pipelined_) {
    if (!recon_->rows_later()) {
      code_slices(mbs_, sh, num_refs, out);
    } else {
      // The entropy thread codes each macroblock row as this one hands it over (an IDR's
      // intra wavefront finishes its first row halfway through); the writers must not wait
      // for rows that a failure keeps from coming.
      Progress rows;
      entropy_.push([&] { code_slices(mbs_, sh, num_refs, out, &rows); });
      for (int r = 1; r <= mb_height_ && st.ok(); r++) {
        st = recon_->wait_rows(r);
        if (st.ok()) rows.set(r);
      }
      rows.set(mb_height_);
      entropy_.wait_idle();
      if (!st.ok()) return Status::error(std::string("reconstruction failed: ") + st.message());
    }
    out.present = true;
    std::swap(mbs_, coded_mbs_);
    return Status();
  }
  entropy_.wait_idle();  // the last frame's, done while this one was decided
  out = std::move(pending_);
  pending_ = std::move(frame_);
  frame_ = EncodedFrame();
  std::swap(mbs_, coded_mbs_);
  held_ = Held{true, sh, num_refs};
  // Macroblocks complete already (the CPU's): their coding starts now, beside the next
  // frame's analysis, as before there was anything to wait for.
  if (!recon_->rows_later()) return start_held_entropy();
  return Status();
}

void Encoder::code_slices(const std::vector<Macroblock>& mbs, const SliceHeader& sh, int num_refs,
                          EncodedFrame& out, const Progress* rows_ready, const MbBitsView* bits) {
  auto clock = std::chrono::steady_clock::now();
  double cpu = 0;
  cpu_ms_since(cpu, cpu_times_);
  const int mb_count = mb_width_ * mb_height_;
  // Slice `slice` holds macroblocks [first, last) in raster order.
  auto slice_first = [&](int slice) { return int(int64_t(mb_count) * slice / params_.slices); };
  // CAVLC of each slice, in pieces of a macroblock row on all cores (slice_data.h), each
  // slice's NAL units then joined in order.
  std::vector<BitWriter> slice_bits(static_cast<size_t>(params_.slices));
  std::vector<SliceOut> slices(static_cast<size_t>(params_.slices));
  for (int slice = 0; slice < params_.slices; slice++) {
    SliceHeader ssh = sh;
    ssh.first_mb_in_slice = slice_first(slice);
    write_slice_header(slice_bits[size_t(slice)], sps_, pps_, ssh);
    slices[size_t(slice)] = SliceOut{slice_first(slice), slice_first(slice + 1), &slice_bits[size_t(slice)]};
  }
  write_slices_data(mbs.data(), mb_width_, mb_height_, slices.data(), params_.slices, !sh.idr, num_refs, 0,
                    rows_ready, &out.stats, bits);
  for (BitWriter& sw : slice_bits) {
    sw.rbsp_trailing_bits();
    write_annexb_nal(out.annexb, sh.nal_ref_idc, sh.idr ? NalUnitType::kSliceIdr : NalUnitType::kSliceNonIdr,
                     sw.bytes());
  }
  out.times.entropy = ms_since(clock);
  out.times.cpu.entropy = cpu_ms_since(cpu, cpu_times_);
}

void Encoder::recon_i420(std::vector<uint8_t>& out) const {
  // The last reconstruction is the most recent reference (pushed by encode()).
  out.clear();
  if (dpb_.empty() || !recon_->finish().ok()) return;
  const Picture& pic = dpb_.front().pic;
  for (int p = 0; p < 3; p++) {
    int w = p ? params_.width / 2 : params_.width, h = p ? params_.height / 2 : params_.height;
    for (int y = 0; y < h; y++) out.insert(out.end(), pic.at(p, 0, y), pic.at(p, 0, y) + w);
  }
}

}  // namespace gvc::h264
