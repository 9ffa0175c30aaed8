// bench_hevc.cpp: decoding speed of the HEVC engine (common/hevcdec), reconstruction on the CPU or the GPU: one Annex B file, the median of several runs
//
// Usage: bench-hevc [--cuda [--keep] [--gpu-times] | --host-only] [--threads N] [--frame-threads N] STREAM.hevc [RUNS]
// --cuda runs the reconstruction and loop filters on the GPU (gvc::cuda::HevcCudaReconstructor,
// CUDA builds only); parsing stays on the CPU, and every picture is downloaded. With --keep the
// pictures stay on the GPU (set_keep_pictures, as cudahevcdec with CUDA memory out): each one
// is copied as NV12/P010 into a pitched device buffer, as into a GstCudaMemory.
// --host-only replaces the reconstruction by a reconstructor that only plans the loop filters
// and keeps the pictures (nothing is reconstructed, the frames are empty): what the CPU
// spends per picture besides the GPU's work, i.e. the bound of the GPU path with an infinitely
// fast GPU. Any build.
// --threads N: threads for the rows of WPP slice segments (Decoder::set_threads; default: the
// machine's, at most 16).
// --frame-threads N: pictures parsed at once when the pictures are kept (--keep, --host-only;
// Decoder::set_frame_threads; default 1).
// Each run decodes the whole file with a fresh gvc::hevc::Decoder, access unit by access unit
// with end_access_unit() as cudahevcdec does, and takes every picture (cropped, 16-bit
// planes), so the time covers parsing, reconstruction, loop filters and output; reading the
// file is not timed. Wall time and the process's CPU time are both measured (on a shared
// machine the CPU time is the steadier one). Prints one line per run and a last line
// "frames=N median_s=T fps=F median_cpu_s=C" that tools/bench_hevc.sh parses. With a
// reconstructor (--cuda, --host-only) each run line adds this thread's time in decode() (and
// end_access_unit()), the time of the reconstructor's run() and output() calls per picture,
// and this thread's waiting in take_frame(), and with frame threads the lanes' parse per
// picture, their row threads' waits and run()'s waits for a parse (Decoder::pipeline_times);
// with --cuda a line before the
// last gives run()'s host time by phase (HevcCudaReconstructor::host_times_summary), and with
// --gpu-times one more the GPU's time by stage (gpu_times_summary: timing events on the
// reconstruction's stream; the period over all runs includes the time between runs).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "common/hevcdec/decoder.h"
#include "common/hevcdec/loop_filter.h"
#include "common/hevcdec/recon.h"
#include "gvc-config.h"

#if GVC_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "gpu/hevc_recon.h"
#endif

namespace {

// Start of each access unit (7.4.2.4.4): an AUD, VPS, SPS, PPS or prefix SEI after a slice, or a
// slice with first_slice_segment_in_pic_flag after a slice; positions of their start codes.
std::vector<size_t> access_unit_starts(const std::vector<uint8_t>& s) {
  std::vector<size_t> starts;
  bool after_slice = true;
  for (size_t i = 0; i + 5 < s.size(); ++i) {
    if (s[i] || s[i + 1] || s[i + 2] != 1) continue;
    const int type = (s[i + 3] >> 1) & 0x3f;
    const bool slice = type < 32;
    const bool begins = after_slice && (slice ? (s[i + 5] & 0x80) != 0
                                              : (type >= 32 && type <= 35) || type == 39);
    if (begins) starts.push_back(i > 0 && !s[i - 1] ? i - 1 : i);
    if (slice)
      after_slice = true;
    else if (begins)
      after_slice = false;
  }
  return starts;
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// The host's share of the GPU path: plans the loop filters as HevcCudaReconstructor does,
// reconstructs nothing, keeps every picture (an empty DeviceFrame out).
struct HostOnlyReconstructor : gvc::hevc::Reconstructor {
  gvc::hevc::LoopFilterPlan plan;
  bool run(const gvc::hevc::PicParams& pp, const gvc::hevc::FrameState& fs, const gvc::hevc::PictureRecon& r,
           gvc::hevc::Picture& pic, std::string&) override {
    if (!r.loop_filters_planned) gvc::hevc::plan_loop_filters(pp, fs, pic, plan);
    return true;
  }
  bool keeps_pictures() const override { return true; }
  bool output(const gvc::hevc::Picture&, gvc::hevc::DecodedFrame& f, std::string&) override {
    if (!f.device) f.device = std::make_shared<gvc::hevc::DeviceFrame>();
    return true;
  }
};

// Times the calls of the reconstructor it wraps: with a reconstructor that keeps its
// pictures they are made on the decoder's reconstruction thread, behind the parse, and the
// decoder is bound by that thread once run() takes longer than a picture's parse.
struct TimedReconstructor : gvc::hevc::Reconstructor {
  gvc::hevc::Reconstructor* inner = nullptr;
  double run_s = 0, output_s = 0;
  int runs = 0, outputs = 0;
  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  bool run(const gvc::hevc::PicParams& pp, const gvc::hevc::FrameState& fs, const gvc::hevc::PictureRecon& r,
           gvc::hevc::Picture& pic, std::string& err) override {
    const double t = now();
    const bool ok = inner->run(pp, fs, r, pic, err);
    run_s += now() - t;
    ++runs;
    return ok;
  }
  bool keeps_pictures() const override { return inner->keeps_pictures(); }
  bool output(const gvc::hevc::Picture& pic, gvc::hevc::DecodedFrame& f, std::string& err) override {
    const double t = now();
    const bool ok = inner->output(pic, f, err);
    output_s += now() - t;
    ++outputs;
    return ok;
  }
  std::function<void()> thread_entry() override { return inner->thread_entry(); }
  void prepare(const gvc::hevc::PicParams& pp, const gvc::hevc::Picture& pic, gvc::hevc::PictureRecon& r) override {
    inner->prepare(pp, pic, r);
  }
  void release(const gvc::hevc::Picture& pic) override { inner->release(pic); }
  void forget_pictures() override { inner->forget_pictures(); }
  void caller_waits(bool on) override { inner->caller_waits(on); }
};

}  // namespace

int main(int argc, char** argv) {
  bool cuda = false, keep = false, host_only = false;
  [[maybe_unused]] bool gpu_times = false;
  HostOnlyReconstructor host_recon;
  int threads = 0, frame_threads = 1;
  for (;;) {
    if (argc > 1 && std::string(argv[1]) == "--cuda") {
      cuda = true;
      --argc;
      ++argv;
    } else if (argc > 1 && std::string(argv[1]) == "--host-only") {
      host_only = true;
      --argc;
      ++argv;
    } else if (argc > 1 && std::string(argv[1]) == "--keep") {
      keep = true;
      --argc;
      ++argv;
    } else if (argc > 1 && std::string(argv[1]) == "--gpu-times") {
      gpu_times = true;
      --argc;
      ++argv;
    } else if (argc > 2 && std::string(argv[1]) == "--threads") {
      threads = std::max(1, std::atoi(argv[2]));
      argc -= 2;
      argv += 2;
    } else if (argc > 2 && std::string(argv[1]) == "--frame-threads") {
      frame_threads = std::max(1, std::atoi(argv[2]));
      argc -= 2;
      argv += 2;
    } else {
      break;
    }
  }
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s [--cuda [--keep] [--gpu-times] | --host-only] [--threads N] [--frame-threads N] STREAM.hevc [RUNS]\n",
                 argv[0]);
    return 2;
  }
#if GVC_HAVE_CUDA
  std::unique_ptr<gvc::cuda::HevcCudaReconstructor> recon;
  size_t free_before = 0, total = 0;  // device memory before the reconstructor's first use
  if (cuda) {
    cudaFree(nullptr);  // the context first: its memory is not the decoder's
    cudaMemGetInfo(&free_before, &total);
    recon.reset(new gvc::cuda::HevcCudaReconstructor(0));
  }
  if (recon) recon->set_keep_pictures(keep);
  if (recon) recon->set_gpu_timing(gpu_times);
  gvc::cuda::DeviceBuffer out_buf;  // where --keep copies each picture
  // takes a kept picture as cudahevcdec does into CUDA memory; false on a CUDA error
  auto take = [&](const gvc::hevc::DecodedFrame& p) {
    if (!p.device || !recon) return true;  // --host-only hands out empty frames
    const size_t bps = p.bit_depth > 8 ? 2 : 1, pitch = (size_t(p.width + 1) * bps + 511) / 512 * 512;
    if (!out_buf.reserve(pitch * size_t(p.height + (p.height + 1) / 2)).ok()) return false;
    uint8_t* y = out_buf.get<uint8_t>();
    const gvc::SemiPlanarView dst{y, ptrdiff_t(pitch), y + pitch * size_t(p.height), ptrdiff_t(pitch)};
    const gvc::Status st = static_cast<const gvc::cuda::HevcDeviceFrame&>(*p.device).copy_to(dst);
    if (!st.ok()) std::fprintf(stderr, "bench-hevc: %s\n", st.message().c_str());
    return st.ok();
  };
#else
  auto take = [](const gvc::hevc::DecodedFrame&) { return true; };
  if (cuda || keep) {
    std::fprintf(stderr, "%s: this build has no CUDA\n", argv[0]);
    return 2;
  }
#endif
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  std::ifstream f(argv[1], std::ios::binary);
  const std::vector<uint8_t> stream((std::istreambuf_iterator<char>(f)), {});
  if (stream.empty()) {
    std::fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
    return 1;
  }
  std::vector<size_t> starts = access_unit_starts(stream);
  starts.push_back(stream.size());

  std::vector<double> seconds, cpu;
  int frames = 0;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    TimedReconstructor timed;
    gvc::hevc::Decoder dec;
    if (threads) dec.set_threads(threads);
    dec.set_frame_threads(frame_threads);
#if GVC_HAVE_CUDA
    timed.inner = recon.get();
#endif
    if (host_only) timed.inner = &host_recon;
    if (timed.inner) dec.set_reconstructor(&timed);
    double take_s = 0;    // this thread waiting in take_frame() (for the reconstruction thread)
    double decode_s = 0;  // in decode() and end_access_unit() (with frame threads, waits for a lane)
    gvc::hevc::DecodedFrame pic;
    int n = 0;
    for (size_t a = 0; a + 1 < starts.size(); ++a) {
      const double t0 = TimedReconstructor::now();
      if (!dec.decode(stream.data() + starts[a], starts[a + 1] - starts[a])) {
        std::fprintf(stderr, "%s: decoding error: %s\n", argv[0], dec.error().c_str());
        return 1;
      }
      dec.end_access_unit();
      decode_s += TimedReconstructor::now() - t0;
      if (!dec.reconstructor_error().empty()) {
        std::fprintf(stderr, "%s: %s\n", argv[0], dec.reconstructor_error().c_str());
        return 1;
      }
      for (;;) {
        const double t = TimedReconstructor::now();
        const bool got = dec.take_frame(pic);
        take_s += TimedReconstructor::now() - t;
        if (!got) break;
        if (!take(pic)) return 1;
        ++n;
      }
    }
    dec.flush();
    for (; dec.take_frame(pic); ++n)
      if (!take(pic)) return 1;
    const double c = cpu_seconds() - c0;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("run %d: %d frames in %.3f s (%.2f fps), %.3f s CPU", r + 1, n, s, n / s, c);
    if (timed.runs)
      std::printf("; per picture: decode() %.2f ms (%.2f waiting for a lane), run() %.2f ms, output() %.2f ms, "
                  "take_frame() %.2f ms",
                  1e3 * decode_s / n, 1e3 * dec.lane_wait_seconds() / n, 1e3 * timed.run_s / timed.runs,
                  timed.outputs ? 1e3 * timed.output_s / timed.outputs : 0.0, 1e3 * take_s / n);
    const gvc::hevc::Decoder::PipelineTimes pt = dec.pipeline_times();
    if (pt.parses)
      std::printf("; lanes: parse %.2f ms (row threads waiting: collocated rows %.2f, row above %.2f), "
                  "run() waiting for it %.2f ms",
                  1e3 * pt.parse_s / pt.parses, 1e3 * pt.col_wait_s / pt.parses, 1e3 * pt.row_wait_s / pt.parses,
                  1e3 * pt.stage_wait_s / pt.parses);
    std::printf("\n");
    seconds.push_back(s);
    cpu.push_back(c);
    frames = n;
  }
  std::sort(seconds.begin(), seconds.end());
  std::sort(cpu.begin(), cpu.end());
  const double median = seconds[seconds.size() / 2];
#if GVC_HAVE_CUDA
  if (recon) {  // what decoding left allocated on the device (the cores' buffers and the pictures)
    size_t free_after = 0;
    cudaDeviceSynchronize();
    cudaMemGetInfo(&free_after, &total);
    std::printf("gpu_memory_mib=%.1f pictures_mib=%.1f pictures=%zu frame_buffers=%zu\n",
                double(free_before - free_after) / (1 << 20), double(recon->picture_bytes()) / (1 << 20),
                recon->picture_slots(), recon->frame_buffers());
    std::printf("%s\n", recon->memory_summary().c_str());
    std::printf("%s\n", recon->host_times_summary().c_str());  // every run's run() calls
    if (gpu_times) std::printf("%s\n", recon->gpu_times_summary().c_str());
  }
#endif
  std::printf("frames=%d median_s=%.4f fps=%.2f median_cpu_s=%.4f\n", frames, median, frames / median,
              cpu[cpu.size() / 2]);
  return 0;
}
