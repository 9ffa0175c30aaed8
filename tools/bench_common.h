// bench_common.h: what the kernel benchmarks share: fatal status checks, the test content, its
// panned frames on the GPU and the CUDA-event timing
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include "common/util/status.h"
#include "gpu/device.h"
#include "gpu/me.h"

#define BENCH_CHECK(expr)                                                  \
  do {                                                                     \
    gvc::Status s_ = (expr);                                               \
    if (!s_.ok()) {                                                        \
      std::fprintf(stderr, "bench: %s\n", s_.message().c_str());          \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)
#define BENCH_CUDA(call) BENCH_CHECK(gvc::cuda::check((call), #call))

// Selects device 0, prints its name and creates `stream`; exits with status 77 (meson's
// "skipped") when there is no CUDA device.
inline void open_bench_device(gvc::cuda::Stream& stream) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::fprintf(stderr, "bench: no CUDA device\n");
    std::exit(77);
  }
  BENCH_CUDA(cudaSetDevice(0));
  std::printf("device: %s\n", gvc::cuda::describe_device(0).c_str());
  BENCH_CHECK(stream.create());
}

// The 4096x2304 luma crop of the Elephants painting at `path` (tools/gpu-host-test.sh
// --make-content), or a smooth random texture of that size when it cannot be read.
inline std::vector<uint8_t> load_source(const char* path, int* sw, int* sh) {
  *sw = 4096, *sh = 2304;
  std::vector<uint8_t> src(size_t(*sw) * *sh);
  if (path && *path) {
    std::ifstream f(path, std::ios::binary);
    if (f && f.read(reinterpret_cast<char*>(src.data()), std::streamsize(src.size()))) return src;
    std::fprintf(stderr, "bench: cannot read %s, using smooth random texture\n", path);
  }
  std::mt19937 rng(1);
  std::vector<uint8_t> n(src.size());
  for (auto& v : n) v = uint8_t(rng());
  for (int y = 0; y < *sh; y++)
    for (int x = 0; x < *sw; x++) {
      int s = 0;
      for (int k = -2; k <= 2; k++)
        s += n[size_t(std::clamp(y + k, 0, *sh - 1)) * *sw + std::clamp(x + 2 * k, 0, *sw - 1)];
      src[size_t(y) * *sw + x] = uint8_t(s / 5);
    }
  return src;
}

struct Frames {
  int w, h;
  std::vector<gvc::cuda::DeviceBuffer> bufs;
  std::vector<gvc::cuda::DevicePlane> planes;
};

// `count` frames of w x h, frame t panned by (3t, 2t) samples over the source.
inline Frames make_frames(const std::vector<uint8_t>& src, int sw, int sh, int w, int h, int count,
                          std::vector<std::vector<uint8_t>>* host) {
  Frames f{w, h, {}, {}};
  const size_t pitch = (size_t(w) + 255) & ~size_t(255);
  for (int t = 0; t < count; t++) {
    std::vector<uint8_t> img(size_t(w) * h);
    const int ox = std::min(3 * t, sw - w), oy = std::min(2 * t, sh - h);
    for (int y = 0; y < h; y++) std::memcpy(&img[size_t(y) * w], &src[size_t(oy + y) * sw + ox], w);
    gvc::cuda::DeviceBuffer b;
    BENCH_CHECK(b.reserve(pitch * h));
    BENCH_CUDA(cudaMemcpy2D(b.get(), pitch, img.data(), w, w, h, cudaMemcpyHostToDevice));
    f.planes.push_back({b.get<uint8_t>(), ptrdiff_t(pitch), w, h});
    f.bufs.push_back(std::move(b));
    if (host) host->push_back(std::move(img));
  }
  return f;
}

// Milliseconds per frame of run_frame(i) on stream s: CUDA events around `iters` frames after a
// warm-up of 5, median of `reps` repeats.
template <typename F>
double median_ms_per_frame(F&& run_frame, int iters, int reps, cudaStream_t s) {
  cudaEvent_t e0, e1;
  BENCH_CUDA(cudaEventCreate(&e0));
  BENCH_CUDA(cudaEventCreate(&e1));
  for (int i = 0; i < 5; i++) run_frame(i);
  std::vector<double> t;
  for (int r = 0; r < reps; r++) {
    BENCH_CUDA(cudaEventRecord(e0, s));
    for (int i = 0; i < iters; i++) run_frame(i);
    BENCH_CUDA(cudaEventRecord(e1, s));
    BENCH_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(double(ms) / iters);
  }
  BENCH_CUDA(cudaEventDestroy(e0));
  BENCH_CUDA(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
