// bench_common.h: what the kernel benchmarks share: fatal status checks and the test content
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <vector>

#include "common/util/status.h"
#include "gpu/device.h"

#define BENCH_CHECK(expr)                                                  \
  do {                                                                     \
    gvc::Status s_ = (expr);                                               \
    if (!s_.ok()) {                                                        \
      std::fprintf(stderr, "bench: %s\n", s_.message().c_str());          \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)
#define BENCH_CUDA(call) BENCH_CHECK(gvc::cuda::check((call), #call))

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
