// bench_intra.cu: benchmark of the CUDA intra-pruning kernel (Kirsch, Sobel) against the CPU
//
// Pictures are 4:2:0 crops of a real painting (GVC_ELEPHANTS or --content: the raw 4096x2304
// luma crop; chroma is its 2x2 box-downscaled luma, shifted; smooth random texture without
// it), resident on the GPU. Each configuration is timed with CUDA events over `iters` frames
// after a warm-up; the median of `reps` repeats is reported. The CPU reference (one thread)
// runs on the same 1080p pictures in host memory.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/dsp/intra_prune.h"
#include "common/dsp/me.h"
#include "gpu/device.h"
#include "tools/bench_common.h"
#include "gpu/intra_prune.h"

namespace {

using gvc::Status;


// One host plane: a w x h crop of the source at (ox, oy), downscaled by `scale` (1 or 2).
std::vector<uint8_t> crop(const std::vector<uint8_t>& src, int sw, int sh, int w, int h, int ox,
                          int oy, int scale) {
  std::vector<uint8_t> p(size_t(w) * h);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int s = 0;
      for (int j = 0; j < scale; j++)
        for (int i = 0; i < scale; i++)
          s += src[size_t(std::min(oy + scale * y + j, sh - 1)) * sw +
                   std::min(ox + scale * x + i, sw - 1)];
      p[size_t(y) * w + x] = uint8_t(s / (scale * scale));
    }
  return p;
}

struct DevicePicture {
  gvc::cuda::DeviceBuffer buf[3];
  gvc::cuda::DevicePlane plane[3];
};

void upload(const std::vector<uint8_t>& host, int w, int h, gvc::cuda::DeviceBuffer* b,
            gvc::cuda::DevicePlane* d) {
  const size_t pitch = (size_t(w) + 255) & ~size_t(255);
  BENCH_CHECK(b->reserve(pitch * h));
  BENCH_CUDA(cudaMemcpy2D(b->get(), pitch, host.data(), w, w, h, cudaMemcpyHostToDevice));
  *d = {b->get<uint8_t>(), ptrdiff_t(pitch), w, h};
}

const char* method_name(gvc::IntraPruneMethod m) {
  return m == gvc::IntraPruneMethod::Kirsch ? "kirsch"
         : m == gvc::IntraPruneMethod::Sobel ? "sobel"
                                             : "none";
}

}  // namespace

int main(int argc, char** argv) {
  const char* content = std::getenv("GVC_ELEPHANTS");
  bool cpu = true;
  int iters = 200, reps = 7;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--content") && i + 1 < argc) content = argv[++i];
    else if (!std::strcmp(argv[i], "--no-cpu")) cpu = false;
    else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: %s [--content RAW_4096x2304_LUMA] [--no-cpu] [--iters N]\n", argv[0]);
      return 2;
    }
  }
  gvc::cuda::Stream stream;
  open_bench_device(stream);
  cudaStream_t s = stream.get();
  cudaEvent_t e0, e1;
  BENCH_CUDA(cudaEventCreate(&e0));
  BENCH_CUDA(cudaEventCreate(&e1));

  int sw, sh;
  const auto src = load_source(content, &sw, &sh);
  std::printf("content: %s\n", content && *content ? content : "smooth random texture");
  std::printf("\n%-36s %10s %10s %18s\n", "intra pruning (planes on the GPU)", "ms/frame", "fps",
              "CPU fps, 1 thread");
  for (auto [w, h] : {std::pair{1920, 1080}, std::pair{3840, 2160}}) {
    const int cw = (w + 1) / 2, ch = (h + 1) / 2;
    const int cols = gvc::mb_count(w), rows = gvc::mb_count(h);
    // Four pictures panned over the source, so caches do not hold one picture.
    const int npic = 4;
    std::vector<DevicePicture> pics(npic);
    std::vector<std::vector<uint8_t>> host[3];
    for (int t = 0; t < npic; t++) {
      const int ox = std::min(16 * t, sw - w), oy = std::min(8 * t, sh - h);
      host[0].push_back(crop(src, sw, sh, w, h, ox, oy, 1));
      host[1].push_back(crop(src, sw, sh, cw, ch, std::max(0, ox - 7), oy, 2));
      host[2].push_back(crop(src, sw, sh, cw, ch, ox, std::max(0, oy - 5), 2));
      upload(host[0][t], w, h, &pics[t].buf[0], &pics[t].plane[0]);
      upload(host[1][t], cw, ch, &pics[t].buf[1], &pics[t].plane[1]);
      upload(host[2][t], cw, ch, &pics[t].buf[2], &pics[t].plane[2]);
    }
    gvc::cuda::DeviceBuffer out;
    BENCH_CHECK(out.reserve(size_t(cols) * rows * sizeof(gvc::IntraMbCandidates)));
    for (gvc::IntraPruneMethod m : {gvc::IntraPruneMethod::Kirsch, gvc::IntraPruneMethod::Sobel}) {
      auto frame = [&](int i) {
        const DevicePicture& p = pics[i % npic];
        BENCH_CHECK(gvc::cuda::intra_prune(p.plane[0], p.plane[1], p.plane[2], m,
                                           out.get<gvc::IntraMbCandidates>(), s));
      };
      for (int i = 0; i < 10; i++) frame(i);
      std::vector<double> t;
      for (int r = 0; r < reps; r++) {
        BENCH_CUDA(cudaEventRecord(e0, s));
        for (int i = 0; i < iters; i++) frame(i);
        BENCH_CUDA(cudaEventRecord(e1, s));
        BENCH_CUDA(cudaEventSynchronize(e1));
        float ms = 0;
        BENCH_CUDA(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(double(ms) / iters);
      }
      std::sort(t.begin(), t.end());
      const double ms = t[t.size() / 2];

      double cpu_fps = 0;
      if (cpu && w == 1920) {
        auto ip = gvc::make_cpu_intra_prune();
        std::vector<gvc::IntraMbCandidates> res(size_t(cols) * rows);
        gvc::IntraCandidateField f{res.data(), cols, rows, gvc::MemoryLocation::Host};
        std::vector<double> ct;
        for (int i = 0; i < 3; i++) {
          const gvc::PlaneView y{host[0][i].data(), w, w, h, gvc::MemoryLocation::Host};
          const gvc::PlaneView u{host[1][i].data(), cw, cw, ch, gvc::MemoryLocation::Host};
          const gvc::PlaneView v{host[2][i].data(), cw, cw, ch, gvc::MemoryLocation::Host};
          auto t0 = std::chrono::steady_clock::now();
          BENCH_CHECK(ip->run(y, u, v, m, f));
          ct.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(ct.begin(), ct.end());
        cpu_fps = 1.0 / ct[1];
      }
      char cfg[96];
      std::snprintf(cfg, sizeof cfg, "%dx%d %s", w, h, method_name(m));
      if (cpu_fps > 0)
        std::printf("%-36s %10.4f %10.0f %18.1f  (CUDA/CPU %.0fx)\n", cfg, ms, 1e3 / ms, cpu_fps,
                    1e3 / ms / cpu_fps);
      else
        std::printf("%-36s %10.4f %10.0f %18s\n", cfg, ms, 1e3 / ms, "-");
    }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return 0;
}
