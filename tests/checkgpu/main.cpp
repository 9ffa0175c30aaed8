// main.cpp: checkgpu's entry: seed and --bench handling, CUDA device discovery, test content
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>

#include "checkgpu.h"
#include "gpu/backend.h"

namespace checkgpu {
namespace {
uint64_t g_seed = 0;
bool g_bench = false;
std::unique_ptr<gvc::Backend> g_backend;
std::string g_why;
bool g_probed = false;
}  // namespace

uint64_t seed() { return g_seed; }
bool bench_mode() { return g_bench; }

std::mt19937_64 rng_for(const std::string& name) {
  return std::mt19937_64(g_seed ^ (std::hash<std::string>{}(name) * 0x9E3779B97F4A7C15ull));
}

gvc::Backend* cuda_backend() {
  if (!g_probed) {
    g_probed = true;
    gvc::Status why;
    g_backend = gvc::make_cuda_backend(0, &why);
    if (!g_backend) g_why = why.message();
  }
  return g_backend.get();
}

const std::string& no_cuda_reason() {
  cuda_backend();
  return g_why;
}

const Plane& elephants() {
  static Plane p = [] {
    Plane e;
    const char* path = std::getenv("GVC_ELEPHANTS");
    if (!path || !*path) return e;
    std::ifstream f(path, std::ios::binary);
    if (!f) return e;
    e.width = e.stride = 4096;
    e.height = 2304;
    e.pix.resize(size_t(e.width) * e.height);
    f.read(reinterpret_cast<char*>(e.pix.data()), std::streamsize(e.pix.size()));
    if (size_t(f.gcount()) != e.pix.size()) e = Plane();
    return e;
  }();
  return p;
}

void run_bench();               // me.cpp
void run_intra_prune_bench();  // intra_prune.cpp

}  // namespace checkgpu

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  checkgpu::g_seed = std::random_device{}() * 0x100000001ull ^ std::random_device{}();
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--seed") && i + 1 < argc)
      checkgpu::g_seed = std::strtoull(argv[++i], nullptr, 0);
    else if (!std::strcmp(argv[i], "--bench"))
      checkgpu::g_bench = true;
    else {
      std::fprintf(stderr, "usage: %s [gtest options] [--seed N] [--bench]\n", argv[0]);
      return 2;
    }
  }
  std::printf("checkgpu: seed %llu (repeat with --seed %llu)\n",
              (unsigned long long)checkgpu::g_seed, (unsigned long long)checkgpu::g_seed);
  if (!checkgpu::cuda_backend())
    std::printf("checkgpu: no CUDA device (%s): every test is skipped\n",
                checkgpu::no_cuda_reason().c_str());
  int rc = RUN_ALL_TESTS();
  if (checkgpu::g_bench && checkgpu::cuda_backend()) {
    checkgpu::run_bench();
    checkgpu::run_intra_prune_bench();
  }
  return rc;
}
