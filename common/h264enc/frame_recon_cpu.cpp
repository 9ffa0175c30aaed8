// frame_recon_cpu.cpp: the CPU decision (a wavefront on all cores) and reconstruction stages: recon_mb.h in raster order, then the loop filter
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/h264enc/decide_mb.h"
#include "common/h264enc/frame_recon.h"
#include "common/h264enc/recon_mb.h"
#include "common/util/parallel.h"
#include "common/util/progress.h"

namespace gvc::h264 {

namespace {

class CpuReconstructor final : public FrameReconstructor {
 public:
  const char* name() const override { return "cpu"; }

  // The decisions in a wavefront over rows on all cores (decide_wavefront).
  Status decide(const DecideJob& job) override {
    if (job.before_wavefront) job.before_wavefront();
    const int threads = parallel_threads();
    decide_wavefront(job, threads, wavefront_group_rows(job.mb_height, threads));
    return Status();
  }

  Status run(const ReconJob& job) override {
    ReconRef refs[4];
    for (int r = 0; r < job.num_refs; r++) {
      const Picture& pic = job.refs[r]->pic;
      refs[r].luma = job.refs[r]->luma.view();
      refs[r].chroma[0] = pic.plane[1].data();
      refs[r].chroma[1] = pic.plane[2].data();
      refs[r].chroma_stride = pic.stride[1];
      refs[r].chroma_width = pic.width(1);
      refs[r].chroma_height = pic.height(1);
    }
    ReconPicture f;
    for (int p = 0; p < 3; p++) {
      f.src[p] = job.src->plane[p].data();
      f.src_stride[p] = job.src->stride[p];
      f.rec[p] = job.rec->plane[p].data();
      f.rec_stride[p] = job.rec->stride[p];
    }
    f.mbs = job.mbs;
    f.mb_width = job.mb_width;
    f.mb_height = job.mb_height;
    f.refs = refs;
    f.num_refs = job.num_refs;
    f.qp = job.qp;
    f.qpc = job.qpc;
    f.p_slice = job.p_slice;
    MbScratch scratch;
    for (int my = 0; my < job.mb_height; my++)
      for (int mx = 0; mx < job.mb_width; mx++) reconstruct_mb(f, mx, my, scratch);
    if (job.rec_search) {
      if (job.deblock)
        *job.rec_search = job.rec->plane[0];
      else
        job.rec_search->clear();
    }
    if (job.deblock)
      deblock_picture(*job.rec, MbMap{job.mbs, job.mb_width, job.mb_height, -1}, job.deblock_params);
    if (job.rec_luma) job.rec_luma->build(job.rec->view(0));
    return Status();
  }
};

}  // namespace

void decide_wavefront(const DecideJob& job, int threads, int rows, WavefrontTimes* times) {
  const MbAnalysis a = frame_analysis(job);
  const int w = job.mb_width, h = job.mb_height;
  // Each row's count of decided macroblocks on a cache line of its own (its writer updates it
  // with every macroblock while the next group's thread waits on it).
  struct alignas(64) RowDone {
    Progress v;
  };
  std::vector<RowDone> row_done(static_cast<size_t>(h));
  std::atomic<int> next_group{0}, intra{0};
  std::atomic<int64_t> wait_ns{0}, late_ns{0};
  using Clock = std::chrono::steady_clock;
  const auto ns_since = [](Clock::time_point t) {
    return int64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
  };
  const Clock::time_point t0 = times ? Clock::now() : Clock::time_point();
  // Rows past job.inputs_rows: job.wait_inputs(), called by the first thread to reach one.
  std::atomic<bool> inputs_claimed{false};
  Progress inputs_ready;
  if (!job.wait_inputs) inputs_ready.set(1);
  const auto need_inputs = [&] {
    if (inputs_ready.get()) return;
    if (!inputs_claimed.exchange(true)) {
      job.wait_inputs();
      inputs_ready.set(1);
    }
    inputs_ready.wait_for(1);
  };
  parallel_for(std::min(threads, (h + rows - 1) / rows), [&](int) {
    if (times) {
      const int64_t late = ns_since(t0);
      for (int64_t seen = late_ns.load(); seen < late && !late_ns.compare_exchange_weak(seen, late);) {
      }
    }
    MbAnalysis t = a;
    int my_intra = 0;
    int64_t my_wait = 0;
    for (int g; (g = next_group.fetch_add(1)) * rows < h;) {
      const int y0 = g * rows, n = std::min(rows, h - y0);
      if (y0 + n > job.inputs_rows) need_inputs();
      for (int step = 0; step < w + 2 * (n - 1); step++) {
        for (int i = 0; i < n; i++) {
          const int mx = step - 2 * i, my = y0 + i;
          if (mx < 0 || mx >= w) continue;
          const int addr = my * w + mx;
          if (i == 0 && my > 0) {
            const Progress& above = row_done[size_t(my - 1)].v;
            const int need = std::min(mx + 2, w);
            if (times && above.get() < need) {
              const Clock::time_point w0 = Clock::now();
              above.wait_for(need);
              my_wait += ns_since(w0);
            } else {
              above.wait_for(need);
            }
          }
          t.map = MbMap{job.mbs, w, h, job.slice_of_mb[addr]};
          t.mx = mx;
          t.my = my;
          t.intra_cand = job.intra_cand ? &job.intra_cand[addr] : nullptr;
          t.satd = job.satd && job.num_refs ? &job.satd[size_t(addr) * size_t(job.num_refs)] : nullptr;
          t.presel = job.presel && job.num_refs ? &job.presel[addr] : nullptr;
          decide_mb(t, job.mbs[addr], job.intra_prep ? &job.intra_prep[addr] : nullptr);
          finish_mb_syntax(t.map, mx, my, job.mbs[addr]);
          if (job.packed) std::memcpy(job.packed + size_t(addr) * kDecisionBytes, &job.mbs[addr], kDecisionBytes);
          my_intra += is_intra(job.mbs[addr].type);
          row_done[size_t(my)].v.set(mx + 1);
        }
      }
    }
    intra += my_intra;
    wait_ns += my_wait;
  });
  if (job.intra_count) *job.intra_count = intra.load();
  if (times) {
    times->wait_ms = double(wait_ns.load()) * 1e-6;
    times->late_ms = double(late_ns.load()) * 1e-6;
  }
}

int wavefront_group_rows(int mb_height, int threads) {
  // Pairs of rows where there are enough of them to keep every thread busy: half as many
  // hand-overs between cores. On the H200 host's Xeon two threads deciding a 1080p P frame one
  // row each took 3.5 times one thread's CPU, pairs 2.8 times (h264-decide-bench --variants).
  return (mb_height + 1) / 2 >= threads ? 2 : 1;
}

MbAnalysis frame_analysis(const DecideJob& job) {
  MbAnalysis a = job.analysis;
  for (int p = 0; p < 3; p++) {
    a.src.plane[p] = job.src->plane[p].data();
    a.src.stride[p] = job.src->stride[p];
    a.src.width[p] = job.src->width(p);
    a.src.height[p] = job.src->height(p);
  }
  a.num_refs = job.num_refs;
  for (int r = 0; r < job.num_refs; r++) {
    a.refs[r] = job.refs[r]->luma.view();
    if (job.refs_full_only) a.refs[r].plane[1] = a.refs[r].plane[2] = a.refs[r].plane[3] = nullptr;
    a.me[r] = job.me[r].data;
  }
  return a;
}

void prepare_intra_cpu(const DecideJob& job, MbIntraPrep* out) {
  const int w = job.mb_width, h = job.mb_height;
  std::vector<Macroblock> stand_in(size_t(w) * size_t(h));
  for (size_t i = 0; i < stand_in.size(); i++) make_stand_in(stand_in[i], job.slice_of_mb[i]);
  const MbAnalysis a = frame_analysis(job);
  const int passes = intra_prep_passes(a);
  for (int pass = 0; pass < passes; pass++) {
    if (pass > 0)
      for (size_t i = 0; i < stand_in.size(); i++) make_stand_in_from(stand_in[i], job.slice_of_mb[i], out[i]);
    parallel_for(h, [&](int my) {
      MbAnalysis t = a;
      IntraPrepScratch s;
      for (int mx = 0; mx < w; mx++) {
        const int addr = my * w + mx;
        t.map = MbMap{stand_in.data(), w, h, job.slice_of_mb[addr]};
        t.mx = mx;
        t.my = my;
        t.intra_cand = job.intra_cand ? &job.intra_cand[addr] : nullptr;
        prepare_intra(t, s, out[addr]);
      }
    });
  }
}

void prepare_satd_cpu(const DecideJob& job, MbSatdRef* out, Preselection* presel) {
  const int w = job.mb_width, h = job.mb_height;
  const MbAnalysis a = frame_analysis(job);
  parallel_for(h, [&](int my) {
    MbAnalysis t = a;
    for (int mx = 0; mx < w; mx++) {
      const int addr = my * w + mx;
      t.map = MbMap{nullptr, w, h, job.slice_of_mb[addr]};
      t.mx = mx;
      t.my = my;
      const SatdSlots slots = satd_slots(t, presel ? &presel[addr] : nullptr);
      for (int r = 0; r < job.num_refs; r++)
        for (int e = 0; e < MbSatdRef::kEntries; e++)
          fill_satd_entry(t, slots, r, e, out[size_t(addr) * size_t(job.num_refs) + size_t(r)]);
    }
  });
}

std::unique_ptr<FrameReconstructor> make_cpu_reconstructor() { return std::make_unique<CpuReconstructor>(); }

}  // namespace gvc::h264
