// bench_me.cu: benchmark of the CUDA motion-search kernels against the __vsadu4 peak and the CPU
//
// Frames are a real painting panned by integer offsets (GVC_ELEPHANTS or --content: the raw
// 4096x2304 luma crop; smooth random texture without it), resident on the GPU. Each
// configuration is timed with CUDA events over `iters` frames after a warm-up; the median of
// `reps` repeats is reported.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/dsp/me.h"
#include "gpu/device.h"
#include "tools/bench_common.h"
#include "gpu/me.h"

namespace {

using gvc::Status;


constexpr int kChains = 16;

// Each thread runs kChains independent VABSDIFF4 accumulation chains: nothing but __vsadu4.
__global__ void vsad_peak_kernel(uint32_t seed, int iters, uint32_t* sink) {
  uint32_t acc[kChains], b[kChains];
#pragma unroll
  for (int k = 0; k < kChains; k++) {
    acc[k] = seed * (threadIdx.x + k + 1);
    b[k] = seed ^ (0x01010101u * (k + blockIdx.x));
  }
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int k = 0; k < kChains; k++) acc[k] = __vsadu4(acc[k], b[k]) + acc[k];
  }
  uint32_t r = 0;
#pragma unroll
  for (int k = 0; k < kChains; k++) r ^= acc[k];
  if (r == 0x12345678u) sink[0] = r;
}

}  // namespace

int main(int argc, char** argv) {
  const char* content = std::getenv("GVC_ELEPHANTS");
  bool cpu = true;
  int iters = 100, reps = 7;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--content") && i + 1 < argc) content = argv[++i];
    else if (!std::strcmp(argv[i], "--no-cpu")) cpu = false;
    else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--content RAW_4096x2304_LUMA] [--no-cpu] [--iters N]\n", argv[0]);
      return 2;
    }
  }
  gvc::cuda::Stream stream;
  open_bench_device(stream);
  cudaStream_t s = stream.get();

  // __vsadu4 peak: pixel differences per second (4 per instruction).
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  gvc::cuda::DeviceBuffer sink;
  BENCH_CHECK(sink.reserve(4));
  const int peak_blocks = prop.multiProcessorCount * 8, peak_iters = 4096;
  const double peak_ms = median_ms_per_frame(
      [&](int i) { vsad_peak_kernel<<<peak_blocks, 256, 0, s>>>(i + 1, peak_iters, sink.get<uint32_t>()); },
      10, 5, s);
  BENCH_CUDA(cudaGetLastError());
  const double peak = double(peak_blocks) * 256 * peak_iters * kChains * 4 / (peak_ms * 1e-3);
  std::printf("__vsadu4 peak: %.2f T pixel-differences/s (%d SMs)\n", peak * 1e-12,
              prop.multiProcessorCount);

  int sw, sh;
  const auto src = load_source(content, &sw, &sh);
  std::printf("content: %s\n", content && *content ? content : "smooth random texture");

  struct Row { std::string cfg; double ms, fps, frac; };
  std::vector<Row> rows;
  double cpu_fps = 0;
  size_t mem_1080 = 0;
  for (auto [w, h] : {std::pair{1920, 1080}, std::pair{3840, 2160}}) {
    std::vector<std::vector<uint8_t>> host;
    const int nframes = 8;
    Frames fr = make_frames(src, sw, sh, w, h, nframes, w == 1920 ? &host : nullptr);
    const int cols = gvc::mb_count(w), rowsn = gvc::mb_count(h);
    gvc::cuda::DeviceBuffer out;
    BENCH_CHECK(out.reserve(size_t(cols) * rowsn * sizeof(gvc::MbPartitions)));
    for (int range : {16, 32}) {
      for (gvc::Subpel sub : {gvc::Subpel::None, gvc::Subpel::Quarter}) {
        gvc::cuda::MeCore core;
        size_t free0 = 0, free1 = 0, total = 0;
        cudaMemGetInfo(&free0, &total);
        auto frame = [&](int i) {
          const auto& cur = fr.planes[(i + 1) % nframes];
          const auto& ref = fr.planes[i % nframes];
          BENCH_CHECK(core.search(cur, ref, range, 4, sub, nullptr, out.get<gvc::MbPartitions>(), s));
        };
        const double ms = median_ms_per_frame(frame, iters, reps, s);
        cudaMemGetInfo(&free1, &total);
        if (w == 1920 && range == 16 && sub == gvc::Subpel::Quarter)
          mem_1080 = core.device_bytes() + 2 * size_t(fr.planes[0].stride) * h +
                     out.size();
        const double diffs = double(cols) * rowsn * 4.0 * range * range * 256;
        char cfg[96];
        std::snprintf(cfg, sizeof cfg, "%dx%d range %d %s", w, h, range,
                      sub == gvc::Subpel::None ? "integer" : "+quarter-pel");
        rows.push_back({cfg, ms, 1e3 / ms, diffs / (ms * 1e-3) / peak});
      }
    }
    if (w == 1920 && cpu) {
      auto ms = gvc::make_cpu_motion_search();
      gvc::MeParams p;
      p.range = 16;
      p.lambda = 4;
      p.subpel = gvc::Subpel::None;
      std::vector<gvc::MbPartitions> res(size_t(cols) * rowsn);
      gvc::MbPartitionField f{res.data(), cols, rowsn, gvc::MemoryLocation::Host};
      std::vector<double> t;
      for (int i = 0; i < 3; i++) {
        gvc::PlaneView cur{host[i + 1].data(), w, w, h, gvc::MemoryLocation::Host};
        gvc::PlaneView ref{host[i].data(), w, w, h, gvc::MemoryLocation::Host};
        auto t0 = std::chrono::steady_clock::now();
        BENCH_CHECK(ms->run(cur, ref, p, f));
        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(t.begin(), t.end());
      cpu_fps = 1.0 / t[1];
    }
  }
  std::printf("\n%-36s %10s %10s %12s\n", "kernel (frames on the GPU)", "ms/frame", "fps",
              "of vsad peak");
  for (const auto& r : rows)
    std::printf("%-36s %10.4f %10.0f %11.1f%%\n", r.cfg.c_str(), r.ms, r.fps, 100 * r.frac);
  if (cpu)
    std::printf("CPU reference, 1920x1080 range 16 integer, %u threads: %.2f fps (CUDA/CPU %.0fx)\n",
                std::max(1u, std::thread::hardware_concurrency()), cpu_fps,
                rows[0].fps / std::max(cpu_fps, 1e-9));
  std::printf("GPU memory of one 1080p instance (range 16, quarter-pel, 2 frames + field + "
              "planes + tables): %.1f MB\n", mem_1080 / 1e6);
  return 0;
}
