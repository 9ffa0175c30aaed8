// decide_bench.cpp: CPU time of the mode decision on the CUDA backend's path (prepared intra searches and SATD caches) per P frame, and hashes of its decisions
//
// Usage: h264-decide-bench [--check] [--cold] [--wavefront] [--variants] [--full-only] [--frames N] [--reps N] [--qp QP]
//                          [--refs N] [--size WxH] [--preset fast|medium|slow]
// Encodes N frames of a pan over $GVC_ELEPHANTS (raw 4096x2304 luma; a synthetic picture
// without it) on the CPU backend. Each P frame is prepared as the GPU would (prepare_intra_cpu,
// prepare_satd_cpu with the pre-selections), then decided `reps` times on one thread in raster order (decide_mb and
// finish_mb_syntax per macroblock, what the wavefront's threads do between their waits; --cold:
// with the caches evicted before each time, as the CUDA backend's inputs come from the GPU); prints
// the median and fastest time per frame (this thread's CPU time, core-ms) and a hash of the decisions and of the stream.
// --wavefront: also times the CPU reconstructor's wavefront (decide() on all cores, as the
// encoder runs it) `reps` times per P frame on the same prepared inputs: its wall time and the
// process's CPU time, to compare with the one thread's.
// --variants: also times that wavefront (decide_wavefront) on all threads, a half, a quarter
// and 2 of them, taking 1, 2 or 4 consecutive rows at a time that one thread decides together (a
// cross-core hand-over every group, not every row), each with its threads' summed waits for the
// row above and their start delays, their decisions checked against the one thread's; and the
// same thread counts each deciding the whole frame alone, with nothing to hand over, for each
// thread's CPU time beside the others.
// --full-only: the references' half samples computed from their full-sample planes, as the CUDA
// backend's decision does (DecideJob::refs_full_only): the same decisions, in more time.
// --check: several sizes, QPs, slice and reference counts and intra pruning, one decision each,
// and the hashes only, to compare the decisions before and after a change to them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <time.h>

#include "common/dsp/backend.h"
#include "common/h264enc/decide_mb.h"
#include "common/h264enc/encoder.h"
#include "common/h264enc/frame_recon.h"
#include "common/util/parallel.h"
#include "common/util/progress.h"
#include "tests/h264/cpu_backend_with.h"
#include "tools/pan_frame.h"

namespace {

using namespace gvc;
using namespace gvc::h264;

uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// This thread's CPU time: the machine may be shared, and a wall clock would count the time
// other processes took the core.
double thread_ms() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

double process_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

double wall_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// What the timing collected over the P frames of one encode.
struct Results {
  int reps = 1;
  bool cold = false;  // evict the caches before each decision (the CUDA backend's inputs come from the GPU)
  bool wavefront = false;  // time the wavefront too
  bool variants = false;   // and the variants of it
  bool full_only = false;  // DecideJob::refs_full_only
  struct Variant {
    int threads, rows;
    std::vector<double> wall, core, wait, late;  // per P frame: medians over reps (ms)
  };
  std::vector<Variant> variant;
  std::vector<double> wave_ms, wave_core_ms;  // per P frame: the medians over reps
  std::vector<double> ms;  // per P frame: the median over reps
  std::vector<double> best;
  uint64_t decisions = 0xcbf29ce484222325ull;
  int p_frames = 0;
};

// The CPU reconstructor's wavefront (decide_wavefront) into `mbs`, on `threads` threads taking
// `rows` rows at a time: its wall time; `wait` gets the threads' summed time waiting for the row
// above, `late` the last thread's start after the call (ms).
double variant_wavefront(const DecideJob& job, Macroblock* mbs, int threads, int rows, double& wait, double& late) {
  DecideJob j = job;
  j.mbs = mbs;
  j.packed = nullptr;
  j.intra_count = nullptr;
  WavefrontTimes times;
  const double w0 = wall_ms();
  decide_wavefront(j, threads, rows, &times);
  const double ms = wall_ms() - w0;
  wait = times.wait_ms;
  late = times.late_ms;
  return ms;
}

// `threads` threads each decide the whole frame alone, in raster order, into a copy of their own
// (nothing shared but the read-only inputs): the median of their CPU times (ms). Against the one
// thread's time, what running beside the others costs without a hand-over between them.
double independent_decide(const DecideJob& job, int threads) {
  std::vector<double> cpu(size_t(threads), 0.0);
  parallel_for(threads, [&](int i) {
    std::vector<Macroblock> mbs(size_t(job.mb_width) * size_t(job.mb_height));
    DecideJob j = job;
    j.mbs = mbs.data();
    j.packed = nullptr;
    j.intra_count = nullptr;
    const double t0 = thread_ms();
    decide_wavefront(j, 1, 1);  // on this thread, in raster order (a loop of one runs on its caller)
    cpu[size_t(i)] = thread_ms() - t0;
  });
  return median(cpu);
}

// The CPU reconstructor; every P frame is also decided on one thread with the prepared results.
class TimingReconstructor final : public FrameReconstructor {
 public:
  explicit TimingReconstructor(Results& res) : res_(res) {}
  const char* name() const override { return "cpu-timing"; }

  Status decide(const DecideJob& job) override {
    if (!job.num_refs) return cpu_->decide(job);
    const size_t n = size_t(job.mb_width) * size_t(job.mb_height);
    std::vector<MbIntraPrep> prep(n);
    prepare_intra_cpu(job, prep.data());
    std::vector<MbSatdRef> satd(n * size_t(job.num_refs));
    std::vector<Preselection> presel(n);
    prepare_satd_cpu(job, satd.data(), presel.data());
    std::vector<Macroblock> mbs(n);
    DecideJob j = job;
    j.refs_full_only = res_.full_only;
    const MbAnalysis a = frame_analysis(j);
    std::vector<double> times;
    for (int rep = 0; rep < res_.reps; rep++) {
      if (res_.cold) {
        for (size_t i = 0; i < evict_.size(); i += 64) evict_[i]++;
      }
      const double t0 = thread_ms();
      MbAnalysis t = a;
      for (int my = 0; my < job.mb_height; my++) {
        for (int mx = 0; mx < job.mb_width; mx++) {
          const size_t addr = size_t(my) * size_t(job.mb_width) + size_t(mx);
          t.map = MbMap{mbs.data(), job.mb_width, job.mb_height, job.slice_of_mb[addr]};
          t.mx = mx;
          t.my = my;
          t.intra_cand = job.intra_cand ? &job.intra_cand[addr] : nullptr;
          t.satd = &satd[addr * size_t(job.num_refs)];
          t.presel = &presel[addr];
          decide_mb(t, mbs[addr], &prep[addr]);
          finish_mb_syntax(t.map, mx, my, mbs[addr]);
        }
      }
      times.push_back(thread_ms() - t0);
    }
    res_.ms.push_back(median(times));
    res_.best.push_back(*std::min_element(times.begin(), times.end()));
    for (const Macroblock& m : mbs) res_.decisions = fnv1a(res_.decisions, &m, kDecisionBytes);
    res_.p_frames++;
    // The encoder goes on with the wavefront's decisions (the same ones).
    j.intra_prep = prep.data();
    j.satd = satd.data();
    j.presel = presel.data();
    if (res_.wavefront) {
      std::vector<double> wall, core;
      for (int rep = 0; rep < res_.reps; rep++) {
        if (res_.cold) {
          for (size_t i = 0; i < evict_.size(); i += 64) evict_[i]++;
        }
        const double w0 = wall_ms(), c0 = process_ms();
        const Status st = cpu_->decide(j);
        wall.push_back(wall_ms() - w0);
        core.push_back(process_ms() - c0);
        if (!st.ok()) return st;
        for (size_t i = 0; i < n; i++)  // the wavefront decides as the one thread did
          if (std::memcmp(&job.mbs[i], &mbs[i], kDecisionBytes) != 0)
            return Status::error("decide-bench: the wavefront's decision of macroblock " + std::to_string(i) +
                                 " differs from the one thread's");
      }
      res_.wave_ms.push_back(median(wall));
      res_.wave_core_ms.push_back(median(core));
      if (res_.variants && res_.variant.empty()) {
        const int all = parallel_threads();
        for (int threads : {all, all / 2, all / 4, 2}) {
          bool seen = threads < 2;
          for (const Results::Variant& v : res_.variant) seen = seen || v.threads == threads;
          if (seen) continue;
          for (int rows : {1, 2, 4}) res_.variant.push_back({threads, rows, {}, {}, {}, {}});
          res_.variant.push_back({threads, 0, {}, {}, {}, {}});
        }
      }
      for (Results::Variant& v : res_.variant) {
        std::vector<Macroblock> vm(n);
        std::vector<double> vwall, vcore, vwait, vlate;
        for (int rep = 0; rep < res_.reps; rep++) {
          if (res_.cold) {
            for (size_t i = 0; i < evict_.size(); i += 64) evict_[i]++;
          }
          if (v.rows == 0) {
            vcore.push_back(independent_decide(j, v.threads));
            continue;
          }
          double wait = 0, late = 0;
          const double c0 = process_ms();
          vwall.push_back(variant_wavefront(j, vm.data(), v.threads, v.rows, wait, late));
          vcore.push_back(process_ms() - c0);
          vwait.push_back(wait);
          vlate.push_back(late);
          for (size_t i = 0; i < n; i++)
            if (std::memcmp(&vm[i], &mbs[i], kDecisionBytes) != 0)
              return Status::error("decide-bench: a variant's decision of macroblock " + std::to_string(i) +
                                   " differs from the one thread's");
        }
        v.wall.push_back(median(vwall));
        v.core.push_back(median(vcore));
        v.wait.push_back(median(vwait));
        v.late.push_back(median(vlate));
      }
      return Status();
    }
    return cpu_->decide(j);
  }
  Status run(const ReconJob& job) override { return cpu_->run(job); }

 private:
  Results& res_;
  std::vector<uint8_t> evict_ = std::vector<uint8_t>(size_t(64) << 20);
  std::unique_ptr<FrameReconstructor> cpu_ = make_cpu_reconstructor();
};


// The painting, or a stand-in: smooth waves with some texture.
std::vector<uint8_t> load_picture() {
  std::vector<uint8_t> pic(size_t(4096) * 2304);
  const char* path = std::getenv("GVC_ELEPHANTS");
  std::ifstream f(path ? path : "", std::ios::binary);
  if (f && f.read(reinterpret_cast<char*>(pic.data()), std::streamsize(pic.size()))) return pic;
  std::fprintf(stderr, "decide-bench: GVC_ELEPHANTS not readable, a synthetic picture instead\n");
  for (size_t y = 0; y < 2304; y++)
    for (size_t x = 0; x < 4096; x++)
      pic[y * 4096 + x] = uint8_t(128 + 60 * ((x * 7 + y * 3) % 97 < 48 ? 1 : -1) * int((x ^ y) & 3) / 3);
  return pic;
}

// Frame i of tools/bench_h264enc.cpp's pan.
std::vector<uint8_t> pan_frame(const std::vector<uint8_t>& pic, int w, int h, int i) {
  return gvc::bench::pan_frame([&](int x, int y) { return pic[size_t(y) * 4096 + size_t(x)]; }, w, h, i);
}

struct Case {
  int w = 1920, h = 1080, qp = 26, refs = 1, slices = 1, frames = 4;
  IntraPruneMethod prune = IntraPruneMethod::None;
  std::optional<SpeedPreset> preset = std::nullopt;  // cudah264enc's speed-preset, or the engine's defaults
};

// Encodes the case; false on an encoder error. `stream` gets the hash of the access units.
bool encode(const std::vector<uint8_t>& pic, const Case& c, Results& res, uint64_t& stream) {
  CpuBackendWith backend([&] { return std::make_unique<TimingReconstructor>(res); });
  EncoderParams p;
  p.width = c.w;
  p.height = c.h;
  p.rc.qp = c.qp;
  p.ref_frames = c.refs;
  p.slices = c.slices;
  p.analyse.intra_prune = c.prune;
  if (c.preset) apply_speed_preset(*c.preset, p);
  Encoder enc;
  if (!enc.init(p, &backend).ok()) return false;
  stream = 0xcbf29ce484222325ull;
  for (int i = 0; i < c.frames; i++) {
    const std::vector<uint8_t> fr = pan_frame(pic, c.w, c.h, i);
    EncodedFrame out;
    if (!enc.encode(gvc::bench::i420_frame_in(fr.data(), c.w, c.h), false, out).ok()) return false;
    stream = fnv1a(stream, out.annexb.data(), out.annexb.size());
  }
  return true;
}

int usage() {
  std::fprintf(stderr, "usage: h264-decide-bench [--check] [--cold] [--wavefront] [--variants] [--full-only] [--frames N] "
                       "[--reps N] [--qp QP] [--refs N] [--size WxH] [--preset fast|medium|slow]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Case c;
  int reps = 10;
  bool check = false, cold = false, wavefront = false, variants = false, full_only = false;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--check" || a == "--cold" || a == "--wavefront" || a == "--variants" || a == "--full-only") {
      (a == "--check" ? check : a == "--cold" ? cold : a == "--wavefront" ? wavefront : a == "--variants" ? variants : full_only) = true;
      continue;
    }
    const char* v = i + 1 < argc ? argv[++i] : nullptr;
    if (!v) return usage();
    if (a == "--frames") c.frames = std::atoi(v);
    else if (a == "--reps") reps = std::atoi(v);
    else if (a == "--qp") c.qp = std::atoi(v);
    else if (a == "--refs") c.refs = std::atoi(v);
    else if (a == "--size") { if (std::sscanf(v, "%dx%d", &c.w, &c.h) != 2) return usage(); }
    else if (a == "--preset") {
      if (!parse_speed_preset(v, &c.preset.emplace())) return usage();
    }
    else return usage();
  }
  const std::vector<uint8_t> pic = load_picture();
  if (check) {
    std::vector<Case> cases;
    for (int qp : {16, 26, 36, 46}) cases.push_back({1920, 1080, qp, 1, 1, 3, IntraPruneMethod::None});
    cases.push_back({1920, 1080, 30, 2, 4, 3, IntraPruneMethod::Kirsch});
    cases.push_back({960, 544, 22, 3, 3, 4, IntraPruneMethod::Sobel});
    cases.push_back({352, 288, 40, 4, 7, 5, IntraPruneMethod::None});
    cases.push_back({208, 120, 10, 2, 11, 4, IntraPruneMethod::None});
    uint64_t all = 0xcbf29ce484222325ull;
    for (const Case& k : cases) {
      Results res;
      res.full_only = full_only;
      uint64_t stream = 0;
      if (!encode(pic, k, res, stream)) return 1;
      std::printf("%4dx%-4d qp %2d refs %d slices %2d prune %d: decisions %016llx stream %016llx\n", k.w, k.h, k.qp,
                  k.refs, k.slices, int(k.prune), (unsigned long long)res.decisions, (unsigned long long)stream);
      all = fnv1a(all, &res.decisions, sizeof res.decisions);
      all = fnv1a(all, &stream, sizeof stream);
    }
    std::printf("all: %016llx\n", (unsigned long long)all);
    return 0;
  }
  Results res;
  res.reps = reps;
  res.cold = cold;
  wavefront = wavefront || variants;
  res.wavefront = wavefront;
  res.variants = variants;
  res.full_only = full_only;
  uint64_t stream = 0;
  if (!encode(pic, c, res, stream)) return 1;
  for (int i = 0; i < res.p_frames; i++) {
    std::printf("P frame %d: decide %.2f ms median, %.2f fastest (one thread)", i + 1, res.ms[size_t(i)],
                res.best[size_t(i)]);
    if (wavefront)
      std::printf("; wavefront on %d threads %.3f ms, %.2f core-ms (medians)", parallel_threads(),
                  res.wave_ms[size_t(i)], res.wave_core_ms[size_t(i)]);
    std::printf("\n");
  }
  std::printf("%dx%d qp %d refs %d: %.2f ms per P frame (median of the frames' medians), %.2f fastest, decisions "
              "%016llx stream %016llx\n",
              c.w, c.h, c.qp, c.refs, median(res.ms), *std::min_element(res.best.begin(), res.best.end()),
              (unsigned long long)res.decisions, (unsigned long long)stream);
  if (wavefront)
    std::printf("wavefront on %d threads: %.3f ms per P frame, %.2f core-ms (median of the frames' medians)\n",
                parallel_threads(), median(res.wave_ms), median(res.wave_core_ms));
  for (const Results::Variant& v : res.variant)
    if (v.rows == 0)
      std::printf("variant: %2d threads, each the whole frame alone: %.2f ms of CPU a thread (medians)\n", v.threads,
                  median(v.core));
    else
      std::printf("variant: %2d threads, %d rows a claim: %.3f ms, %.2f core-ms, waits %.2f ms summed, last start %.3f ms "
                "(medians)\n",
                v.threads, v.rows, median(v.wall), median(v.core), median(v.wait), median(v.late));
  return 0;
}
