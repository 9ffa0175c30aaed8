// intra_prune.cpp (checkgpu): CUDA intra-mode pruning against the CPU reference, bit for bit
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "checkgpu.h"
#include "common/dsp/intra_prune.h"
#include "common/dsp/me.h"

namespace checkgpu {
namespace {

using gvc::IntraCandidateField;
using gvc::IntraMbCandidates;
using gvc::IntraPruneMethod;
using gvc::MemoryLocation;

constexpr int kGuard = 3;  // guard records on each side of the output
constexpr uint8_t kPoison = 0xA5;

enum class Content { Noise, Smooth, Real, Flat, Edges, Dots, Checker };

const char* content_name(Content c) {
  switch (c) {
    case Content::Noise: return "noise";
    case Content::Smooth: return "smooth";
    case Content::Real: return "real";
    case Content::Flat: return "flat";
    case Content::Edges: return "edges";
    case Content::Dots: return "dots";
    case Content::Checker: return "checker";
  }
  return "?";
}

const char* method_name(IntraPruneMethod m) {
  switch (m) {
    case IntraPruneMethod::None: return "none";
    case IntraPruneMethod::Kirsch: return "kirsch";
    case IntraPruneMethod::Sobel: return "sobel";
  }
  return "?";
}

struct Case {
  int w, h;
  Content content;
  IntraPruneMethod method;
  bool device_io;  // planes and output in device memory instead of host memory
};

std::string case_name(const Case& c) {
  std::ostringstream s;
  s << c.w << "x" << c.h << "_" << content_name(c.content) << "_" << method_name(c.method)
    << (c.device_io ? "_dev" : "_host");
  return s.str();
}

// One plane of w x h with a padded stride whose tail stays poisoned.
Plane make_plane(int w, int h, Content content, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> byte(0, 255), pad(0, 40);
  Plane p;
  p.width = w, p.height = h, p.stride = w + pad(rng);
  p.pix.assign(size_t(p.stride) * h, kPoison);
  auto at = [&](int x, int y) -> uint8_t& { return p.pix[size_t(y) * p.stride + x]; };
  const Plane& e = elephants();
  switch (content) {
    case Content::Noise:
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) at(x, y) = uint8_t(byte(rng));
      break;
    case Content::Smooth: {
      std::vector<uint8_t> n(size_t(w + 4) * (h + 4));
      for (auto& v : n) v = uint8_t(byte(rng));
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
          int s = 0;
          for (int k = 0; k < 5; k++) s += n[size_t(y + k) * (w + 4) + x + (k * 3) % 5];
          at(x, y) = uint8_t(s / 5);
        }
      break;
    }
    case Content::Real: {
      const int ox = std::uniform_int_distribution<int>(0, std::max(0, e.width - w))(rng);
      const int oy = std::uniform_int_distribution<int>(0, std::max(0, e.height - h))(rng);
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
          at(x, y) = e.pix[size_t(std::min(oy + y, e.height - 1)) * e.stride +
                           std::min(ox + x, e.width - 1)];
      break;
    }
    case Content::Flat: {
      const uint8_t v = uint8_t(byte(rng));
      for (int y = 0; y < h; y++) std::fill_n(&at(0, y), w, v);
      break;
    }
    case Content::Edges: {  // several step edges at random angles: every direction, many ties
      for (int y = 0; y < h; y++) std::fill_n(&at(0, y), w, uint8_t(byte(rng) / 2));
      for (int i = 0; i < 6; i++) {
        std::uniform_int_distribution<int> coef(-6, 6);
        const int a = coef(rng), b = coef(rng), c = (a * w + b * h) / 2 + coef(rng) * 4;
        const uint8_t v = uint8_t(byte(rng));
        for (int y = 0; y < h; y++)
          for (int x = 0; x < w; x++)
            if (a * x + b * y > c) at(x, y) = v;
      }
      break;
    }
    case Content::Dots: {  // single samples and one-sample lines on flat ground
      const uint8_t bg = uint8_t(byte(rng));
      for (int y = 0; y < h; y++) std::fill_n(&at(0, y), w, bg);
      std::uniform_int_distribution<int> xs(0, w - 1), ys(0, h - 1);
      for (int i = 0; i < w * h / 24 + 1; i++) at(xs(rng), ys(rng)) = uint8_t(byte(rng));
      const int lx = xs(rng), ly = ys(rng);
      for (int y = 0; y < h; y++) at(lx, y) = 255;
      for (int x = 0; x < w; x++) at(x, ly) = 0;
      break;
    }
    case Content::Checker: {
      const int period = 1 + int(rng() % 3);
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) at(x, y) = ((x / period + y / period) & 1) ? 255 : 0;
      break;
    }
  }
  return p;
}

struct Picture {
  Plane y, u, v;
};

Picture make_picture(const Case& c, std::mt19937_64& rng) {
  const int cw = (c.w + 1) / 2, ch = (c.h + 1) / 2;
  return {make_plane(c.w, c.h, c.content, rng), make_plane(cw, ch, c.content, rng),
          make_plane(cw, ch, c.content, rng)};
}

// Device copy of a test plane, stride kept.
struct DevicePlaneCopy {
  gvc::Backend* be;
  const Plane& p;
  void* ptr = nullptr;
  DevicePlaneCopy(gvc::Backend* b, const Plane& pl) : be(b), p(pl) {
    ptr = be->allocate(p.pix.size());
    if (ptr) {
      EXPECT_TRUE(be->copy(ptr, MemoryLocation::Device, p.pix.data(), MemoryLocation::Host,
                           p.pix.size()).ok());
    }
  }
  ~DevicePlaneCopy() { be->release(ptr); }
  gvc::PlaneView view() const {
    return {static_cast<const uint8_t*>(ptr), p.stride, p.width, p.height, MemoryLocation::Device};
  }
};

// Runs the CUDA pruning into a poisoned, guarded buffer (host or device); returns the whole
// buffer, guards included, as host records.
std::vector<IntraMbCandidates> run_cuda(gvc::Backend* be, const Case& c, const Picture& pic,
                                        int cols, int rows) {
  const size_t total = size_t(cols) * rows + 2 * kGuard;
  std::vector<IntraMbCandidates> host(total);
  std::memset(host.data(), kPoison, total * sizeof(IntraMbCandidates));
  auto ip = be->intra_prune();
  if (!c.device_io) {
    IntraCandidateField f{host.data() + kGuard, cols, rows, MemoryLocation::Host};
    gvc::Status st = ip->run(pic.y.view(), pic.u.view(), pic.v.view(), c.method, f);
    EXPECT_TRUE(st.ok()) << st.message();
    return host;
  }
  DevicePlaneCopy dy(be, pic.y), du(be, pic.u), dv(be, pic.v);
  void* dout = be->allocate(total * sizeof(IntraMbCandidates));
  EXPECT_NE(dout, nullptr);
  if (!dout) return host;
  EXPECT_TRUE(be->copy(dout, MemoryLocation::Device, host.data(), MemoryLocation::Host,
                       total * sizeof(IntraMbCandidates)).ok());
  IntraCandidateField f{static_cast<IntraMbCandidates*>(dout) + kGuard, cols, rows,
                        MemoryLocation::Device};
  gvc::Status st = ip->run(dy.view(), du.view(), dv.view(), c.method, f);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(be->copy(host.data(), MemoryLocation::Host, dout, MemoryLocation::Device,
                       total * sizeof(IntraMbCandidates)).ok());
  be->release(dout);
  return host;
}

void expect_guards(const IntraMbCandidates* g, const char* where) {
  const uint8_t* b = reinterpret_cast<const uint8_t*>(g);
  for (size_t i = 0; i < kGuard * sizeof(IntraMbCandidates); i++)
    if (b[i] != kPoison) {
      ADD_FAILURE() << "write outside the output (" << where << " guard, byte " << i << ")";
      return;
    }
}

class IntraPruneCheck : public testing::TestWithParam<Case> {};

TEST_P(IntraPruneCheck, BitExact) {
  gvc::Backend* be = cuda_backend();
  if (!be) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  const Case& c = GetParam();
  if (c.content == Content::Real && elephants().pix.empty())
    GTEST_SKIP() << "no real test content (GVC_ELEPHANTS names the raw 4096x2304 luma file)";
  auto rng = rng_for(case_name(c));
  const Picture pic = make_picture(c, rng);
  const int cols = gvc::mb_count(c.w), rows = gvc::mb_count(c.h);

  std::vector<IntraMbCandidates> cpu(size_t(cols) * rows);
  IntraCandidateField f{cpu.data(), cols, rows, MemoryLocation::Host};
  gvc::Status st =
      gvc::make_cpu_intra_prune()->run(pic.y.view(), pic.u.view(), pic.v.view(), c.method, f);
  ASSERT_TRUE(st.ok()) << st.message();

  const auto gpu = run_cuda(be, c, pic, cols, rows);
  expect_guards(gpu.data(), "front");
  expect_guards(gpu.data() + kGuard + cpu.size(), "back");
  int bad = 0;
  for (size_t i = 0; i < cpu.size(); i++) {
    const IntraMbCandidates& a = cpu[i];
    const IntraMbCandidates& b = gpu[kGuard + i];
    if (std::memcmp(&a, &b, sizeof a) == 0) continue;
    if (bad++ >= 8) continue;
    std::ostringstream s;
    s << "MB (" << i % cols << "," << i / cols << "): i16x16 cpu " << int(a.i16x16) << " cuda "
      << int(b.i16x16) << ", chroma cpu " << int(a.chroma) << " cuda " << int(b.chroma)
      << ", i4x4 cpu/cuda";
    for (int k = 0; k < 16; k++) s << " " << a.i4x4[k] << "/" << b.i4x4[k];
    ADD_FAILURE() << s.str();
  }
  EXPECT_EQ(bad, 0) << "macroblock records differ";
}

std::vector<Case> prune_cases() {
  std::vector<Case> v;
  const IntraPruneMethod methods[] = {IntraPruneMethod::Kirsch, IntraPruneMethod::Sobel};
  for (IntraPruneMethod m : methods) {
    for (Content ct : {Content::Noise, Content::Smooth, Content::Flat, Content::Edges,
                       Content::Dots, Content::Checker})
      for (bool dev : {false, true}) v.push_back({176, 144, ct, m, dev});
    // Sizes that are not multiples of 16 (edge extension), smaller than one MB, one sample.
    for (auto wh : {std::pair{33, 17}, std::pair{17, 33}, std::pair{8, 8}, std::pair{1, 1},
                    std::pair{2, 3}, std::pair{100, 20}, std::pair{1366, 768}})
      v.push_back({wh.first, wh.second, Content::Edges, m, wh.first % 2 == 1});
    v.push_back({1366, 768, Content::Real, m, false});
    v.push_back({1920, 1080, Content::Real, m, true});
    v.push_back({1921, 1081, Content::Noise, m, false});
  }
  v.push_back({176, 144, Content::Noise, IntraPruneMethod::None, false});
  v.push_back({33, 17, Content::Smooth, IntraPruneMethod::None, true});
  return v;
}

INSTANTIATE_TEST_SUITE_P(IntraPrune, IntraPruneCheck, testing::ValuesIn(prune_cases()),
                         [](const testing::TestParamInfo<Case>& i) { return case_name(i.param); });

TEST(IntraPruneBackendCheck, RejectsBadArguments) {
  gvc::Backend* be = cuda_backend();
  if (!be) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::vector<uint8_t> pix(64 * 64, 9);
  const gvc::PlaneView y{pix.data(), 32, 32, 32, MemoryLocation::Host};
  const gvc::PlaneView c{pix.data(), 16, 16, 16, MemoryLocation::Host};
  const gvc::PlaneView bad_c{pix.data(), 16, 15, 16, MemoryLocation::Host};
  std::vector<IntraMbCandidates> out(4);
  IntraCandidateField f{out.data(), 2, 2, MemoryLocation::Host};
  auto ip = be->intra_prune();
  EXPECT_TRUE(ip->run(y, c, c, IntraPruneMethod::Kirsch, f).ok());
  EXPECT_FALSE(ip->run(y, bad_c, c, IntraPruneMethod::Kirsch, f).ok());
  EXPECT_FALSE(ip->run(y, c, bad_c, IntraPruneMethod::Sobel, f).ok());
  f.mb_cols = 3;
  EXPECT_FALSE(ip->run(y, c, c, IntraPruneMethod::Kirsch, f).ok());
}

}  // namespace

// --bench: CPU and CUDA times of IntraPrune::run (host planes in, host field out, as the
// element's system-memory path), median of several runs, 1080p.
void run_intra_prune_bench() {
  gvc::Backend* be = cuda_backend();
  const bool real = !elephants().pix.empty();
  std::printf("\ncheckgpu --bench: IntraPrune::run, 1920x1080, %s content, host in/out\n",
              real ? "real" : "smooth random");
  std::printf("%-28s %12s %12s %10s\n", "method", "cpu ms", "cuda ms", "ratio");
  for (IntraPruneMethod m : {IntraPruneMethod::Kirsch, IntraPruneMethod::Sobel}) {
    Case c{1920, 1080, real ? Content::Real : Content::Smooth, m, false};
    auto rng = rng_for("intra bench");
    const Picture pic = make_picture(c, rng);
    const int cols = gvc::mb_count(c.w), rows = gvc::mb_count(c.h);
    std::vector<IntraMbCandidates> out(size_t(cols) * rows);
    IntraCandidateField f{out.data(), cols, rows, MemoryLocation::Host};
    auto time = [&](gvc::IntraPrune& ip, int reps) {
      std::vector<double> t;
      for (int i = 0; i < reps; i++) {
        auto t0 = std::chrono::steady_clock::now();
        if (!ip.run(pic.y.view(), pic.u.view(), pic.v.view(), m, f).ok()) return -1.0;
        t.push_back(std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(t.begin(), t.end());
      return t[t.size() / 2];
    };
    auto cpu = gvc::make_cpu_intra_prune();
    auto gpu = be->intra_prune();
    time(*gpu, 3);  // warm-up
    const double tg = time(*gpu, 21);
    const double tc = time(*cpu, 3);
    std::printf("%-28s %12.2f %12.3f %9.1fx\n", method_name(m), tc, tg, tc / tg);
  }
}

}  // namespace checkgpu
