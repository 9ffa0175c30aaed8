// decoder.cpp: NAL units -> parameter sets and slice headers (GstH265Parser) -> pictures (8.1.3)
#include "common/hevcdec/decoder.h"

#include <gst/codecparsers/gsth265parser.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>

#include "common/hevcdec/dpb.h"
#include "common/hevcdec/loop_filter.h"
#include "common/hevcdec/params.h"
#include "common/hevcdec/recon.h"
#include "common/hevcdec/slice_decoder.h"
#include "common/util/job_thread.h"
#include "common/util/scope_ns.h"

namespace gvc::hevc {
namespace {

bool is_irap(int t) { return t >= GST_H265_NAL_SLICE_BLA_W_LP && t <= 23; }
bool is_idr(int t) { return t == GST_H265_NAL_SLICE_IDR_W_RADL || t == GST_H265_NAL_SLICE_IDR_N_LP; }
bool is_bla(int t) { return t >= GST_H265_NAL_SLICE_BLA_W_LP && t <= GST_H265_NAL_SLICE_BLA_N_LP; }
bool is_rasl(int t) { return t == GST_H265_NAL_SLICE_RASL_N || t == GST_H265_NAL_SLICE_RASL_R; }
bool is_radl(int t) { return t == GST_H265_NAL_SLICE_RADL_N || t == GST_H265_NAL_SLICE_RADL_R; }
// sub-layer non-reference picture: the even VCL types below 16
bool is_slnr(int t) { return t <= 14 && (t % 2) == 0; }

// Threads for WPP rows: the machine's, at most 16.
int default_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n ? int(std::min(n, 16u)) : 1;
}

// 7.4.2: rbsp from the NAL unit payload (emulation_prevention_three_byte removed); `removed`
// receives the payload positions of the bytes taken out, ascending.
void to_rbsp(const uint8_t* p, size_t n, std::vector<uint8_t>& out, std::vector<size_t>& removed) {
  out.clear();
  out.reserve(n);
  removed.clear();
  int zeros = 0;
  for (size_t i = 0; i < n; ++i) {
    if (zeros >= 2 && p[i] == 3) {
      zeros = 0;
      removed.push_back(i);
      continue;
    }
    out.push_back(p[i]);
    zeros = p[i] == 0 ? zeros + 1 : 0;
  }
}

// A picture in output order; a picture left on the reconstructor's device is complete once
// the stage's job `ticket` is done, and dropped if that job could not hand it out.
struct OutFrame {
  DecodedFrame frame;
  uint64_t ticket = 0;  // 0: complete already
  bool dropped = false;
};

// One slice segment of a picture parsed on a thread of its own (frame threads): what
// decode_slice_segment reads, copied out of the caller's data.
struct SliceJob {
  GstH265SliceHdr hdr{};  // entry_point_offset_minus1 cleared (the entry points are in `substreams`)
  std::vector<uint8_t> rbsp;
  size_t data_offset = 0;
  std::vector<size_t> substreams;
  int slice_idx = 0, slice_addr_rs = 0;
  const Picture* col_pic = nullptr;
};

// A picture's parse on a thread of its own, and what it fills: the syntax arrays and the
// sample work that its run() reads afterwards on the stage's thread. A lane takes its next
// picture once that run() is done.
struct Lane {
  Picture* pic = nullptr;
  FrameState fs;
  PictureRecon recon;
  SegmentCarry carry;
  std::vector<SliceJob> slices;  // the first n_slices are the picture's (kept for their buffers)
  size_t n_slices = 0;
  std::vector<PictureRecon> row_recons;
  std::unique_ptr<Workers> workers;
  // the collocated pictures the parse reads, held until it ends
  std::vector<std::shared_ptr<Picture>> pins;
  uint64_t parse_ticket = 0;  // on `thread`
  uint64_t run_ticket = 0;    // on the decoder's stage
  JobThread thread;
};

// Lets `in` decode its WPP rows on `n` threads when it has several substreams: `workers`
// (made or remade for n) and `row_recons`, kept by the caller from one picture to the next.
void use_row_threads(SliceDecodeInput& in, int n, std::unique_ptr<Workers>& workers,
                     std::vector<PictureRecon>& row_recons) {
  in.threads = n;
  if (n <= 1 || in.substreams->size() <= 1) return;
  if (!workers || workers->max_threads() != n) workers = std::make_unique<Workers>(n);
  in.workers = workers.get();
  in.row_recons = &row_recons;
}

}  // namespace

struct Decoder::Impl {
  GstH265Parser* parser = gst_h265_parser_new();
  Dpb dpb;
  PicParams pp;
  FrameState fs;
  PictureRecon recon;
  LoopFilterPlan loop_filters;  // scratch of apply_loop_filters
  Reconstructor* reconstructor = nullptr;
  // Why `reconstructor` failed (then the CPU reconstructs the rest of the stream), and whether
  // decode() has still to report it.
  std::string reconstructor_error;
  bool reconstructor_error_pending = false;
  SegmentCarry carry;
  Picture* cur = nullptr;
  const GstH265SPS* cur_sps = nullptr;
  bool cur_output = true;
  RefPicSet rps;             // of the current picture (8.3.2)
  RefPicLists ref_lists;     // of the current slice segment (8.3.4)
  GstH265SliceHdr indep{};  // the last independent slice segment header of the picture
  int indep_slice_addr = 0;
  bool first_picture = true;     // the next picture starts a coded video sequence
  bool no_rasl_output = true;    // NoRaslOutputFlag of the associated IRAP picture
  bool skipping = false;         // current picture is skipped (RASL, or no IRAP seen yet)
  bool seen_irap = false;
  std::deque<OutFrame> frames;
  std::vector<DecodedFrame> spare;  // buffers of frames taken earlier, for reuse
  std::vector<uint8_t> rbsp;
  std::vector<size_t> removed;     // emulation prevention bytes of the NAL unit in `rbsp`
  std::vector<size_t> substreams;  // of the current slice segment (SliceDecodeInput)
  // The NAL units of the parameter sets the parser holds, by NAL unit type and id: the same
  // set sent again (before every IRAP picture, as encoders do for streaming) changes nothing,
  // so it neither drains the pipeline nor replaces what queued jobs read.
  std::map<std::pair<int, int>, std::vector<uint8_t>> parameter_sets;
  int threads = default_threads();
  std::unique_ptr<Workers> workers;      // for the WPP rows, made when first needed
  // Frame threads (set_frame_threads): while the reconstructor keeps its pictures, each
  // picture is parsed on a lane of its own, up to `frame_threads` at once, a picture's CTB
  // row waiting only for that row of its collocated picture's motion (Picture::parsed_rows).
  int frame_threads = 1;
  std::vector<std::unique_ptr<Lane>> lanes;
  size_t next_lane = 0;
  Lane* lane = nullptr;  // the current picture's, when it is parsed on one
  std::mutex parse_failed_mutex;
  // Pictures whose parse on a lane failed, to report: POC and Picture::irap_generation.
  std::vector<std::pair<int, uint64_t>> parse_failed;
  uint64_t irap_generation = 0;  // IRAP pictures started so far
  std::vector<int> damaged;       // those reported, for take_damaged_pocs()
  bool draining = false;  // flush() was called, no picture since: take_frame() waits for each
  double lane_wait_s = 0;  // the caller's thread waiting for a free lane
  // pipeline_times(): every lane's parse waits, parse time and count, and the stage's waits
  ParseWaits lane_waits;
  std::atomic<int64_t> parse_ns{0}, stage_wait_ns{0};
  std::atomic<int> parses{0};
  std::vector<PictureRecon> row_recons;  // the rows' records, reused picture after picture

  // While the reconstructor keeps its pictures, its calls are made on `stage`'s thread, run()
  // of picture N while picture N + 1 is parsed: run() reads the flight buffers, swapped with
  // `fs` and `recon` when N is queued, and `pp`, which is re-derived only once the stage is
  // idle (as are parameter sets parsed, which `pp` points into).
  FrameState flight_fs;
  PictureRecon flight_recon;
  uint64_t flight_ticket = 0;  // of the last run() queued
  // The pictures each queued job uses, held (Dpb::share) until the job is done.
  std::deque<std::pair<uint64_t, std::vector<std::shared_ptr<Picture>>>> pins;
  bool stage_failed = false;   // the stage's thread only: a call failed, later jobs do nothing
  std::mutex stage_error_mutex;
  std::string stage_error;     // the first failure on the stage's thread
  std::atomic<uint64_t> caller_ticket{0};  // the stage's job the caller's thread waits for (wait_stage)
  JobThread stage;             // its jobs read the members above

  // The queued jobs read pp, which points into the parser's parameter sets.
  ~Impl() {
    for (auto& l : lanes) l->thread.wait_idle();
    wait_stage(stage.queued());
    gst_h265_parser_free(parser);
  }

  // This (the caller's) thread waits for the stage's jobs up to `ticket`, telling the
  // reconstructor (Reconstructor::caller_waits), which may otherwise wait for frames to be
  // taken. The job of `ticket` ends the wait itself (stage_job_done): the caller, woken, is
  // about to take the frame that job handed out, which the next job may want the slot of.
  void wait_stage(uint64_t ticket) {
    if (stage.done() >= ticket) return;
    Reconstructor* r = reconstructor;
    caller_ticket.store(ticket);
    if (r) r->caller_waits(true);
    stage.wait(ticket);
    if (caller_ticket.exchange(0) && r) r->caller_waits(false);
  }
  // On the stage's thread, at the end of each job: the caller waiting for it is no longer.
  void stage_job_done() {
    uint64_t ticket = stage.done() + 1;  // this job's (jobs run in order)
    if (caller_ticket.compare_exchange_strong(ticket, 0)) reconstructor->caller_waits(false);
  }

  // On the stage's thread: the first failure ends the reconstructor's use.
  void stage_fail(const std::string& why) {
    stage_failed = true;
    std::lock_guard<std::mutex> lock(stage_error_mutex);
    if (stage_error.empty()) stage_error = why;
  }

  // A failure on the stage's thread becomes the reconstructor's error, reported by decode().
  void take_stage_error() {
    std::lock_guard<std::mutex> lock(stage_error_mutex);
    if (stage_error.empty() || !reconstructor_error.empty()) return;
    reconstructor_error = stage_error;
    reconstructor_error_pending = true;
  }

  // Every job done: the reconstructor may be called on this thread, and pp and the parameter
  // sets may change.
  void drain_stage() {
    for (auto& l : lanes) l->thread.wait_idle();
    wait_stage(stage.queued());
    pins.clear();
    take_stage_error();
  }

  void release_pins() {
    const uint64_t done = stage.done();
    while (!pins.empty() && pins.front().first <= done) pins.pop_front();
  }

  // Queues run() of `pic`, whose records are in the flight buffers.
  // Queues run() of `pic`, whose records are in the flight buffers or, once its parse there
  // is done, in lane `l`. The pictures of its reference lists are held meanwhile (a lane's
  // records name their references only once parsed).
  void queue_run(Picture* pic, Lane* l = nullptr) {
    std::vector<std::shared_ptr<Picture>> used{dpb.share(pic)};
    for (const RefPicLists& rl : pic->slice_refs)
      for (int X = 0; X < 2; ++X)
        for (int i = 0; i < rl.n[X]; ++i) used.push_back(dpb.share(rl.pic[X][i]));
    flight_ticket = stage.push(
        [this, pic, l] {
          if (l) {
            const ScopeNs t(&stage_wait_ns);
            l->thread.wait(l->parse_ticket);
          }
          if (stage_failed) return;
          std::string err;
          if (!reconstructor->run(pp, l ? l->fs : flight_fs, l ? l->recon : flight_recon, *pic, err))
            stage_fail("picture reconstruction failed: " + err);
          stage_job_done();
        },
        reconstructor->thread_entry());
    pins.emplace_back(flight_ticket, std::move(used));
    if (l) l->run_ticket = flight_ticket;
  }

  // Queues output() of `pic` into `o` (a frame of `frames`, which keeps its address).
  void queue_output(const std::shared_ptr<Picture>& pic, OutFrame* o) {
    o->ticket = stage.push(
        [this, p = pic.get(), o] {
          std::string err;
          if (stage_failed) {
            o->dropped = true;
          } else if (!reconstructor->output(*p, o->frame, err)) {
            o->dropped = true;
            stage_fail("picture output failed: " + err);
          }
          o->frame.damaged = p->parse_failed;  // final: the picture's run() waited for its parse
          stage_job_done();
        },
        reconstructor->thread_entry());
    pins.emplace_back(o->ticket, std::vector<std::shared_ptr<Picture>>{pic});
  }

  // Queues release() of `pic`, which has left the DPB.
  void queue_release(const std::shared_ptr<Picture>& pic) {
    const uint64_t ticket = stage.push(
        [this, p = pic.get()] {
          if (!stage_failed) reconstructor->release(*p);
          stage_job_done();
        },
        reconstructor->thread_entry());
    pins.emplace_back(ticket, std::vector<std::shared_ptr<Picture>>{pic});
  }

  // The id of the parameter set in `nalu` (VPS, SPS or PPS), parsed without storing it; -1
  // when it does not parse.
  int parameter_set_id(GstH265NalUnit& nalu) {
    switch (nalu.type) {
      case GST_H265_NAL_VPS: {
        GstH265VPS vps;
        return gst_h265_parse_vps(&nalu, &vps) == GST_H265_PARSER_OK ? vps.id : -1;
      }
      case GST_H265_NAL_SPS: {
        GstH265SPS sps;
        return gst_h265_parse_sps(parser, &nalu, &sps, TRUE) == GST_H265_PARSER_OK ? sps.id : -1;
      }
      default: {
        GstH265PPS pps;
        return gst_h265_parse_pps(parser, &nalu, &pps) == GST_H265_PARSER_OK ? pps.id : -1;
      }
    }
  }

  // After the parser took (or refused) the parameter set in `nalu`: what it holds now. A new
  // VPS or SPS may change how the sets that refer to it parse, so those are parsed again.
  void parameter_set_parsed(const GstH265NalUnit& nalu, const std::pair<int, int>& key, bool ok) {
    if (!ok || key.second < 0) {
      parameter_sets.erase(key);
      return;
    }
    for (auto it = parameter_sets.begin(); it != parameter_sets.end();)
      it = it->first.first > key.first ? parameter_sets.erase(it) : std::next(it);
    parameter_sets[key].assign(nalu.data + nalu.offset, nalu.data + nalu.offset + nalu.size);
  }

  bool frame_threaded() const {
    return frame_threads > 1 && reconstructor_ok() && reconstructor->keeps_pictures();
  }

  // The next lane, once the run() of its last picture is done.
  Lane* acquire_lane() {
    while (lanes.size() < size_t(frame_threads)) lanes.emplace_back(new Lane);
    Lane* l = lanes[next_lane++ % lanes.size()].get();
    const auto t0 = std::chrono::steady_clock::now();
    l->thread.wait(l->parse_ticket);
    wait_stage(l->run_ticket);
    lane_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return l;
  }

  // On the lane's thread: its picture's slice segments, in order; a failed one ends the
  // picture's parse (as a failure ends it on the caller's thread).
  void parse_lane(Lane& l, bool prepare) {
    const ScopeNs timed(&parse_ns);
    std::vector<SliceInfo> slices;  // given by the caller's thread
    slices.swap(l.fs.slices);
    l.fs.reset(pp.width, pp.height, pp.pic_size_in_ctbs);
    l.fs.slices.swap(slices);
    l.pic->reset_motion();
    LoopFilterPlan& lf = l.recon.loop_filters;
    begin_loop_filter_plan(pp, l.fs, lf);  // WPP rows plan theirs as they end (plan_rows)
    for (size_t i = 0; i < l.n_slices; ++i) {
      const SliceJob& j = l.slices[i];
      SliceDecodeInput in;
      in.pp = &pp;
      in.sh = &j.hdr;
      in.slice_idx = j.slice_idx;
      in.slice_addr_rs = j.slice_addr_rs;
      in.pic = l.pic;
      in.fs = &l.fs;
      in.carry = &l.carry;
      in.refs = &l.pic->slice_refs[size_t(j.slice_idx)];
      in.col_pic = j.col_pic;
      in.recon = &l.recon;
      in.substreams = &j.substreams;
      in.waits = &lane_waits;
      // the threads shared among the lanes (at least 2 each: a lane's rows are its speed)
      use_row_threads(in, threads > 1 ? std::max(2, threads / frame_threads) : 1, l.workers, l.row_recons);
      in.plan_rows = true;
      if (!decode_slice_segment(in, j.rbsp.data(), j.rbsp.size(), j.data_offset)) {
        l.pic->parse_failed = true;
        std::lock_guard<std::mutex> lock(parse_failed_mutex);
        parse_failed.emplace_back(l.pic->poc, l.pic->irap_generation);
        break;
      }
    }
    l.pic->parsed_rows->set(INT_MAX);  // also after a failure: nobody waits for more
    l.pins.clear();
    // the boundary strengths here, on this picture's lane, rather than on the reconstructor's
    // one thread for every picture: of the rows that were not planned as they ended
    complete_loop_filter_plan(pp, l.fs, *l.pic, lf);
    l.recon.loop_filters_planned = true;
    // and what the reconstructor can do ahead of its run() (its one thread is the pipeline's
    // narrowest stage), when the picture goes to it with the lane's records
    if (prepare) reconstructor->prepare(pp, *l.pic, l.recon);
    parses.fetch_add(1, std::memory_order_relaxed);
  }

  // The current picture, parsed on `l`: its parse queued, and behind it (on the stage) its
  // run(); the pictures it makes ready are queued for output before that run(), as in
  // finish_picture.
  void finish_on_lane(Lane* l) {
    l->parse_ticket = l->thread.push([this, l] { parse_lane(*l, true); });
    cur->samples_on_host = false;
    dpb.after_decode(*cur_sps, cur, cur_output);
    Picture* pic = cur;
    cur = nullptr;
    OutFrame* own = nullptr;
    collect(pic, &own);
    queue_run(pic, l);
    if (own) queue_output(dpb.share(pic), own);
  }

  void finish_picture() {
    if (!cur) return;
    if (lane) {
      Lane* l = lane;
      lane = nullptr;
      take_stage_error();
      if (reconstructor_ok() && reconstructor->keeps_pictures()) return finish_on_lane(l);
      // the reconstructor failed, or stopped keeping pictures, since the picture started:
      // its parse here, then the path below
      l->thread.push([this, l] { parse_lane(*l, false); });
      l->thread.wait_idle();
      std::swap(fs, l->fs);
      std::swap(recon, l->recon);
    }
    wait_stage(flight_ticket);  // the flight buffers are free again
    take_stage_error();
    if (reconstructor_ok() && reconstructor->keeps_pictures()) {
      // run() behind the parse of the next picture; the pictures this one makes ready are
      // queued before it, so that taking them need not wait for it
      cur->samples_on_host = false;
      std::swap(fs, flight_fs);
      std::swap(recon, flight_recon);
      dpb.after_decode(*cur_sps, cur, cur_output);
      Picture* pic = cur;
      cur = nullptr;
      OutFrame* own = nullptr;
      collect(pic, &own);
      queue_run(pic);
      if (own) queue_output(dpb.share(pic), own);
      return;
    }
    drain_stage();
    // the host planes, of the references too, where a picture started while the
    // reconstructor kept its pictures (it failed, or stopped keeping them, since); the
    // stage is idle, and the lanes parse without reading samples
    cur->ensure_samples();
    for (const Picture* ref : recon.refs) const_cast<Picture*>(ref)->ensure_samples();
    std::string err;
    if (reconstructor_ok() && !reconstructor->run(pp, fs, recon, *cur, err)) {
      reconstructor_error = "picture reconstruction failed: " + err;
      reconstructor_error_pending = true;
    }
    if (reconstructor_ok()) {
      cur->samples_on_host = !reconstructor->keeps_pictures();
    } else {
      reconstruct_picture(pp, recon, *cur);
      apply_loop_filters(pp, fs, *cur, loop_filters);
      // a reference that was left on a failed device makes this picture's samples wrong too
      cur->samples_on_host = true;
      for (const Picture* ref : recon.refs) cur->samples_on_host &= ref->samples_on_host;
    }
    dpb.after_decode(*cur_sps, cur, cur_output);
    cur = nullptr;
    collect();
  }

  bool reconstructor_ok() const { return reconstructor && reconstructor_error.empty(); }

  // Moves what the DPB outputs into `frames`; a picture on the reconstructor's device is handed
  // out by a job of the stage, except `unqueued` (its run() is not queued yet), whose frame is
  // returned in `unqueued_frame` for the caller to queue.
  void collect(const Picture* unqueued = nullptr, OutFrame** unqueued_frame = nullptr) {
    for (auto& p : dpb.output) {
      DecodedFrame f;
      if (!spare.empty()) {
        f = std::move(spare.back());
        spare.pop_back();
      }
      f.width = p->crop_w;
      f.height = p->crop_h;
      f.bit_depth = p->bit_depth_y;
      f.poc = p->poc;
      f.damaged = false;  // (a picture on a lane: set by its output job)
      if (!p->samples_on_host) {
        // on the device only: the reconstructor hands it over, or it is lost with the device
        // (or made from references that were)
        for (auto& plane : f.planes) plane.clear();
        if (!reconstructor_ok()) continue;
        frames.push_back(OutFrame{std::move(f)});
        if (p.get() == unqueued)
          *unqueued_frame = &frames.back();
        else
          queue_output(p, &frames.back());
        continue;
      }
      f.device.reset();
      for (int c = 0; c < 3; ++c) {
        const int sx = c ? p->crop_x / 2 : p->crop_x, sy = c ? p->crop_y / 2 : p->crop_y;
        const int w = f.plane_width(c), h = f.plane_height(c);
        f.planes[c].resize(size_t(w) * h);
        for (int y = 0; y < h; ++y)
          std::memcpy(&f.planes[c][size_t(y) * w], &p->plane[c].data[(sy + y) * p->plane[c].stride + sx],
                      sizeof(uint16_t) * w);
      }
      frames.push_back(OutFrame{std::move(f)});
    }
    dpb.output.clear();
    // and what left the DPB, behind the outputs and the run()s that read it
    for (auto& p : dpb.removed)
      if (reconstructor_ok()) queue_release(p);
    dpb.removed.clear();
  }

  bool start_picture(const GstH265NalUnit& nalu, const GstH265SliceHdr& sh, std::string& err) {
    const int t = nalu.type;
    if (is_irap(t)) {
      ++irap_generation;
      seen_irap = true;
      no_rasl_output = is_idr(t) || is_bla(t) || first_picture;
    }
    skipping = !seen_irap || (is_rasl(t) && no_rasl_output);
    if (skipping) return true;
    const GstH265PPS* pps = sh.pps;
    const GstH265SPS* sps = pps ? pps->sps : nullptr;
    release_pins();  // pictures of jobs done may be reused
    if (!pp.derived_from(pps)) drain_stage();  // a queued run() reads pp
    if (!sps || !pp.derive(sps, pps)) {
      err = "unsupported, invalid or missing SPS/PPS (only 4:2:0, 8/10 bit, CTB 16..64, a conformance window "
            "inside the picture)";
      skipping = true;
      return false;
    }
    cur_sps = sps;
    const bool irap_no_rasl = is_irap(t) && no_rasl_output;
    const bool tid0 = nalu.temporal_id_plus1 == 1 && !is_rasl(t) && !is_radl(t) && !is_slnr(t);
    const int poc = dpb.derive_poc(*sps, sh, irap_no_rasl, tid0);
    dpb.apply_rps(*sps, sh, poc, is_idr(t), irap_no_rasl, rps, pp.width, pp.height, pp.bit_depth_y,
                  pp.bit_depth_c);
    const bool no_output_prior = t == GST_H265_NAL_SLICE_CRA_NUT ? true : sh.no_output_of_prior_pics_flag;
    dpb.before_decode(*sps, irap_no_rasl && !first_picture, no_output_prior);
    collect();
    first_picture = false;

    cur = dpb.new_picture();
    const bool on_lane = frame_threaded();
    // a picture the reconstructor keeps gets its host planes only where it needs them
    const bool kept = reconstructor_ok() && reconstructor->keeps_pictures();
    cur->allocate(pp.width, pp.height, pp.bit_depth_y, pp.bit_depth_c, !on_lane, !kept);
    cur->poc = poc;
    cur->crop_x = sps->crop_rect_x;
    cur->crop_y = sps->crop_rect_y;
    cur->crop_w = sps->crop_rect_width ? sps->crop_rect_width : pp.width;
    cur->crop_h = sps->crop_rect_height ? sps->crop_rect_height : pp.height;
    cur_output = pps->output_flag_present_flag ? sh.pic_output_flag : true;
    cur->ctb_slice.assign(size_t(pp.pic_size_in_ctbs), -1);
    cur->irap_generation = irap_generation;
    draining = false;
    if (on_lane) {  // its motion field and syntax arrays are reset there
      lane = acquire_lane();
      lane->pic = cur;
      lane->n_slices = 0;
      lane->fs.slices.clear();  // the arrays are reset on the lane (parse_lane)
      lane->recon.clear();
      lane->carry = SegmentCarry{};
      cur->parsed_rows = std::make_shared<Progress>();
      return true;
    }
    fs.reset(pp.width, pp.height, pp.pic_size_in_ctbs);
    recon.clear();
    carry = SegmentCarry{};
    return true;
  }

  bool slice(GstH265NalUnit& nalu, std::string& err) {
    GstH265SliceHdr sh;
    std::memset(&sh, 0, sizeof(sh));
    if (gst_h265_parser_parse_slice_hdr(parser, &nalu, &sh) != GST_H265_PARSER_OK) {
      err = "slice header could not be parsed";
      return false;
    }
    bool ok = true;
    if (sh.first_slice_segment_in_pic_flag) {
      finish_picture();
      ok = start_picture(nalu, sh, err);
    } else if (!cur && !skipping) {
      // the picture was ended (end_access_unit) or never started: its first slice segment
      // is missing, or the access unit was split
      err = "slice segment without the first slice segment of its picture";
      ok = false;
    }
    if (ok && !skipping && cur) ok = slice_data(nalu, sh, err);
    gst_h265_slice_hdr_free(&sh);
    return ok;
  }

  // 8.3.4 decoding process for reference picture lists construction.
  bool build_ref_lists(const GstH265SliceHdr& sh, std::string& err) {
    std::vector<Picture*> temp[2];
    std::vector<uint8_t> temp_lt[2];
    const int num_pic_total_curr =
        int(rps.st_curr_before.size() + rps.st_curr_after.size() + rps.lt_curr.size());
    if (num_pic_total_curr == 0) {
      err = "P or B slice without reference pictures";
      return false;
    }
    const int n_active[2] = {sh.num_ref_idx_l0_active_minus1 + 1,
                             sh.type == GST_H265_B_SLICE ? sh.num_ref_idx_l1_active_minus1 + 1 : 0};
    for (int X = 0; X < 2; ++X) {
      if (!n_active[X]) continue;
      const int num_rps_curr_temp = std::max(n_active[X], num_pic_total_curr);
      const std::vector<Picture*>& first = X ? rps.st_curr_after : rps.st_curr_before;
      const std::vector<Picture*>& second = X ? rps.st_curr_before : rps.st_curr_after;
      while (int(temp[X].size()) < num_rps_curr_temp) {
        for (Picture* p : first)
          if (int(temp[X].size()) < num_rps_curr_temp) temp[X].push_back(p), temp_lt[X].push_back(0);
        for (Picture* p : second)
          if (int(temp[X].size()) < num_rps_curr_temp) temp[X].push_back(p), temp_lt[X].push_back(0);
        for (Picture* p : rps.lt_curr)
          if (int(temp[X].size()) < num_rps_curr_temp) temp[X].push_back(p), temp_lt[X].push_back(1);
      }
      const GstH265RefPicListModification& m = sh.ref_pic_list_modification;
      const bool modified = X ? m.ref_pic_list_modification_flag_l1 : m.ref_pic_list_modification_flag_l0;
      ref_lists.n[X] = std::min(n_active[X], 16);
      for (int i = 0; i < ref_lists.n[X]; ++i) {
        const int e = modified ? int(X ? m.list_entry_l1[i] : m.list_entry_l0[i]) : i;
        if (e >= int(temp[X].size()) || !temp[X][e]) {
          err = "reference picture list entry out of range";
          return false;
        }
        ref_lists.pic[X][i] = temp[X][e];
        ref_lists.poc[X][i] = temp[X][e]->poc;
        ref_lists.long_term[X][i] = temp_lt[X][e];
      }
    }
    return true;
  }

  bool slice_data(const GstH265NalUnit& nalu, const GstH265SliceHdr& sh, std::string& err) {
    GstH265SliceHdr hdr;
    if (sh.dependent_slice_segment_flag) {
      hdr = indep;
      hdr.dependent_slice_segment_flag = 1;
      hdr.first_slice_segment_in_pic_flag = sh.first_slice_segment_in_pic_flag;
      hdr.segment_address = sh.segment_address;
      hdr.num_entry_point_offsets = sh.num_entry_point_offsets;
    } else {
      hdr = sh;
      hdr.entry_point_offset_minus1 = nullptr;
      indep = hdr;
      indep_slice_addr = sh.segment_address;
    }
    if (!hdr.pps || hdr.pps->sps != cur_sps) {
      err = "slice refers to another SPS than its picture";
      return false;
    }
    if (!pp.derived_from(hdr.pps)) {  // same ids, new contents: what was derived is stale
      err = "the picture's SPS or PPS changed between its slices";
      return false;
    }
    ref_lists = RefPicLists{};
    const Picture* col_pic = nullptr;
    if (hdr.type != GST_H265_I_SLICE) {
      if (!build_ref_lists(hdr, err)) return false;
      // 8.5.3.2.8 ColPic
      if (hdr.temporal_mvp_enabled_flag) {
        const int l = hdr.type == GST_H265_B_SLICE && !hdr.collocated_from_l0_flag ? 1 : 0;
        if (hdr.collocated_ref_idx < ref_lists.n[l]) col_pic = ref_lists.pic[l][hdr.collocated_ref_idx];
      }
    }
    cur->slice_refs.push_back(ref_lists);
    const GstH265PPS& pps = *hdr.pps;
    SliceInfo si;
    si.slice_addr_rs = indep_slice_addr;
    const bool override_dbf = pps.deblocking_filter_override_enabled_flag && hdr.deblocking_filter_override_flag;
    si.deblocking_disabled = override_dbf ? hdr.deblocking_filter_disabled_flag : pps.deblocking_filter_disabled_flag;
    si.beta_offset_div2 = override_dbf ? hdr.beta_offset_div2 : pps.beta_offset_div2;
    si.tc_offset_div2 = override_dbf ? hdr.tc_offset_div2 : pps.tc_offset_div2;
    si.sao_luma = cur_sps->sample_adaptive_offset_enabled_flag && hdr.sao_luma_flag;
    si.sao_chroma = cur_sps->sample_adaptive_offset_enabled_flag && hdr.sao_chroma_flag;
    const bool lf_present = pps.loop_filter_across_slices_enabled_flag &&
                            (si.sao_luma || si.sao_chroma || !si.deblocking_disabled);
    si.loop_filter_across_slices = pps.loop_filter_across_slices_enabled_flag &&
                                   (lf_present ? hdr.loop_filter_across_slices_enabled_flag : true);
    FrameState& pfs = lane ? lane->fs : fs;
    pfs.slices.push_back(si);

    const uint8_t* payload = nalu.data + nalu.offset + nalu.header_bytes;
    to_rbsp(payload, nalu.size - nalu.header_bytes, rbsp, removed);
    // slice data begins after byte_alignment(); GstH265Parser counts header_size with the
    // emulation prevention bytes and, depending on its version, with or without the alignment.
    const size_t pos = sh.header_size - 8 * sh.n_emulation_prevention_bytes;
    const size_t offset = (pos % 8) ? (pos + 8) / 8 : pos / 8;
    SliceDecodeInput in;
    in.pp = &pp;
    in.sh = &hdr;
    in.slice_idx = int(pfs.slices.size()) - 1;
    in.slice_addr_rs = indep_slice_addr;
    in.pic = cur;
    in.fs = &fs;
    in.carry = &carry;
    in.refs = &cur->slice_refs.back();
    in.col_pic = col_pic;
    in.recon = &recon;
    // 7.4.7.1: entry points count slice data bytes with their emulation prevention bytes;
    // substreams holds them as rbsp positions (only when every one lies inside the data)
    substreams.clear();
    if (threads > 1 && sh.num_entry_point_offsets && sh.entry_point_offset_minus1) {
      size_t ep = 0, pos = offset;  // payload position of the slice data: skip removed bytes
      while (ep < removed.size() && removed[ep] <= pos) ++pos, ++ep;
      substreams.push_back(offset);
      for (guint32 i = 0; i < sh.num_entry_point_offsets; ++i) {
        pos += size_t(sh.entry_point_offset_minus1[i]) + 1;
        const size_t before = size_t(std::lower_bound(removed.begin(), removed.end(), pos) - removed.begin());
        if (pos - before >= rbsp.size()) {
          substreams.clear();
          break;
        }
        substreams.push_back(pos - before);
      }
    }
    if (lane) {  // parsed on the lane when the picture is complete
      if (lane->slices.size() <= lane->n_slices) lane->slices.emplace_back();
      SliceJob& j = lane->slices[lane->n_slices++];
      j.hdr = hdr;
      j.rbsp.swap(rbsp);  // (this NAL unit's; the job's old buffer serves the next one)
      j.data_offset = offset;
      j.substreams.swap(substreams);
      j.slice_idx = in.slice_idx;
      j.slice_addr_rs = indep_slice_addr;
      j.col_pic = col_pic;
      if (col_pic) lane->pins.push_back(dpb.share(col_pic));
      return true;
    }
    in.substreams = &substreams;
    use_row_threads(in, threads, workers, row_recons);
    if (!decode_slice_segment(in, rbsp.data(), rbsp.size(), offset)) {
      err = "slice data could not be decoded";
      return false;
    }
    return true;
  }
};

Decoder::Decoder() : impl_(new Impl) {}
Decoder::~Decoder() = default;

bool Decoder::decode(const uint8_t* data, size_t size) {
  Impl& d = *impl_;
  GstH265NalUnit nalu;
  guint offset = 0;
  bool ok = true;
  while (offset < size) {
    GstH265ParserResult r = gst_h265_parser_identify_nalu(d.parser, data, offset, size, &nalu);
    if (r != GST_H265_PARSER_OK && r != GST_H265_PARSER_NO_NAL_END) break;
    offset = nalu.offset + nalu.size;
    std::string err;
    bool nal_ok = true;
    // a parameter set may replace the one a queued run() reads (PicParams points into them)
    std::pair<int, int> ps_key{-1, -1};
    if (nalu.type >= GST_H265_NAL_VPS && nalu.type <= GST_H265_NAL_PPS) {
      // a picture on a lane is parsed once complete, with the parameter sets it began with:
      // a parameter set after its slices starts the next access unit (7.4.2.4.4)
      if (d.lane) d.finish_picture();
      ps_key = {nalu.type, d.parameter_set_id(nalu)};
      const auto held = d.parameter_sets.find(ps_key);
      if (ps_key.second >= 0 && held != d.parameter_sets.end() && held->second.size() == nalu.size &&
          std::memcmp(held->second.data(), nalu.data + nalu.offset, nalu.size) == 0)
        continue;  // the set the parser holds, again
      d.drain_stage();
    }
    switch (nalu.type) {
      case GST_H265_NAL_VPS: {
        GstH265VPS vps;
        nal_ok = gst_h265_parser_parse_vps(d.parser, &nalu, &vps) == GST_H265_PARSER_OK;
        break;
      }
      case GST_H265_NAL_SPS: {
        GstH265SPS sps;
        nal_ok = gst_h265_parser_parse_sps(d.parser, &nalu, &sps, TRUE) == GST_H265_PARSER_OK;
        break;
      }
      case GST_H265_NAL_PPS: {
        GstH265PPS pps;
        nal_ok = gst_h265_parser_parse_pps(d.parser, &nalu, &pps) == GST_H265_PARSER_OK;
        break;
      }
      case GST_H265_NAL_EOS:
        d.finish_picture();
        d.first_picture = true;
        break;
      default:
        if (nalu.type <= GST_H265_NAL_SLICE_CRA_NUT && (nalu.type <= 9 || nalu.type >= 16))
          nal_ok = d.slice(nalu, err);
        break;
    }
    if (ps_key.first >= 0) d.parameter_set_parsed(nalu, ps_key, nal_ok);
    if (!nal_ok) {
      error_ = err.empty() ? "parameter set could not be parsed" : err;
      ok = false;
      if (d.cur) d.skipping = true;  // the rest of this picture is dropped
      d.seen_irap = false;            // resume at the next IRAP
    }
  }
  d.take_stage_error();
  {
    std::lock_guard<std::mutex> lock(d.parse_failed_mutex);
    if (!d.parse_failed.empty()) {  // pictures parsed on lanes (set_frame_threads)
      error_ = "slice data could not be decoded (picture POC " + std::to_string(d.parse_failed.front().first) + ")";
      ok = false;
      for (const auto& [poc, generation] : d.parse_failed) {
        d.damaged.push_back(poc);
        // resume at the next IRAP, unless one has started since the damaged picture
        if (generation == d.irap_generation) d.seen_irap = false;
      }
      d.parse_failed.clear();
    }
  }
  if (d.reconstructor_error_pending) {
    error_ = d.reconstructor_error;
    d.reconstructor_error_pending = false;
    ok = false;
  }
  return ok;
}

void Decoder::set_threads(int n) {
  impl_->drain_stage();  // the lanes' parses read it
  impl_->threads = std::max(1, n);
}

void Decoder::set_frame_threads(int n) {
  impl_->finish_picture();
  impl_->drain_stage();
  impl_->frame_threads = std::clamp(n, 1, 32);
  impl_->lanes.clear();  // idle: made again as needed
  impl_->next_lane = 0;
}

void Decoder::set_reconstructor(Reconstructor* r) {
  impl_->drain_stage();
  impl_->stage_failed = false;  // the stage is idle: its thread reads this only in a job
  impl_->stage_error.clear();
  impl_->reconstructor = r;
  impl_->reconstructor_error.clear();
  impl_->reconstructor_error_pending = false;
  if (r) r->forget_pictures();
}

const std::string& Decoder::reconstructor_error() const { return impl_->reconstructor_error; }

double Decoder::lane_wait_seconds() const { return impl_->lane_wait_s; }

Decoder::PipelineTimes Decoder::pipeline_times() const {
  const Impl& d = *impl_;
  PipelineTimes t;
  t.parses = d.parses.load();
  t.parse_s = 1e-9 * double(d.parse_ns.load());
  t.col_wait_s = 1e-9 * double(d.lane_waits.col_ns.load());
  t.row_wait_s = 1e-9 * double(d.lane_waits.row_ns.load());
  t.stage_wait_s = 1e-9 * double(d.stage_wait_ns.load());
  return t;
}

bool Decoder::waiting_for_irap() const { return !impl_->seen_irap; }

std::vector<int> Decoder::take_damaged_pocs() {
  std::vector<int> out;
  out.swap(impl_->damaged);
  return out;
}

void Decoder::end_access_unit() { impl_->finish_picture(); }

void Decoder::flush() {
  impl_->finish_picture();
  impl_->dpb.flush();
  impl_->collect();
  impl_->draining = true;
}

bool Decoder::take_frame(DecodedFrame& out, bool wait) {
  Impl& d = *impl_;
  while (!d.frames.empty()) {
    OutFrame& o = d.frames.front();
    if (o.ticket && d.stage.done() < o.ticket) {  // handed out by the stage's thread
      // with frame threads, only once the pipeline is full: the caller gives the next
      // picture meanwhile (a lane is free), so that pictures are parsed at once; and at most
      // frame_threads - 1 frames are left waiting
      if (d.frame_threads > 1 && !d.draining && !wait) {
        const uint64_t done = d.stage.done();
        size_t busy = 0, waiting = 0;
        for (auto& l : d.lanes) busy += done < l->run_ticket;
        for (const OutFrame& f : d.frames) waiting += done < f.ticket;
        if (busy < size_t(d.frame_threads) && waiting < size_t(d.frame_threads)) return false;
      }
      d.wait_stage(o.ticket);
    }
    if (o.dropped) {  // that failed: the error is reported by the next decode()
      d.frames.pop_front();
      continue;
    }
    std::swap(out, o.frame);
    // what `out` held serves a later picture (its pages are mapped already), one for each
    // picture that may be in flight; a device frame goes back to its reconstructor, which
    // reuses its memory for the next one it hands out (kept here, frames that are taken at
    // once would hold as many device buffers as there are spares)
    o.frame.device.reset();
    if (d.spare.size() < size_t(4 + d.frame_threads) && !o.frame.planes[0].empty())
      d.spare.push_back(std::move(o.frame));
    d.frames.pop_front();
    return true;
  }
  return false;
}

}  // namespace gvc::hevc
