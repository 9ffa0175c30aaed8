// me.cpp (checkgpu): CUDA motion search and block selection against the CPU reference, bit for bit
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "checkgpu.h"
#include "common/dsp/me.h"

namespace checkgpu {
namespace {

using gvc::BlockSize;
using gvc::MbPartitionField;
using gvc::MbPartitions;
using gvc::MemoryLocation;
using gvc::MeParams;
using gvc::MvBlockField;
using gvc::MvCost;
using gvc::Subpel;

constexpr int kGuard = 3;        // guard records on each side of an output
constexpr uint8_t kPoison = 0xA5;

enum class Content { Noise, Smooth, Real, Flat, Edges, Checker };
enum class Preds { Zero, Random, Extreme };

const char* content_name(Content c) {
  switch (c) {
    case Content::Noise: return "noise";
    case Content::Smooth: return "smooth";
    case Content::Real: return "real";
    case Content::Flat: return "flat";
    case Content::Edges: return "edges";
    case Content::Checker: return "checker";
  }
  return "?";
}

struct Case {
  int w, h, range;
  uint32_t lambda;
  Subpel subpel;
  Content content;
  Preds preds;
  bool device_io;  // views and output in device memory instead of host memory
  int refined = gvc::kNumPartitions;  // MeParams::refined_partitions
};

std::string case_name(const Case& c) {
  std::ostringstream s;
  s << c.w << "x" << c.h << "_r" << c.range << "_l" << c.lambda << "_sub" << int(c.subpel) << "_"
    << content_name(c.content) << "_pred" << int(c.preds) << (c.device_io ? "_dev" : "_host");
  if (c.refined != gvc::kNumPartitions) s << "_parts" << c.refined;
  return s.str();
}

// Two frames with motion between them: `ref` and `cur` = ref moved by (mx, my) plus noise.
void make_frames(const Case& c, std::mt19937_64& rng, Plane* cur, Plane* ref) {
  std::uniform_int_distribution<int> byte(0, 255), pad(0, 40), small(-2, 2);
  for (Plane* p : {cur, ref}) {
    p->width = c.w, p->height = c.h;
    p->stride = c.w + pad(rng);
    p->pix.assign(size_t(p->stride) * c.h, kPoison);  // the stride's tail stays poisoned
  }
  const int mx = std::uniform_int_distribution<int>(-c.range - 2, c.range + 2)(rng);
  const int my = std::uniform_int_distribution<int>(-c.range - 2, c.range + 2)(rng);
  // A source picture larger than the frames, sampled at two offsets.
  const int sw = c.w + 2 * c.range + 8, sh = c.h + 2 * c.range + 8;
  std::vector<uint8_t> src(size_t(sw) * sh);
  const Plane& e = elephants();
  switch (c.content) {
    case Content::Noise:
      for (auto& v : src) v = uint8_t(byte(rng));
      break;
    case Content::Smooth: {
      std::vector<uint8_t> n(src.size());
      for (auto& v : n) v = uint8_t(byte(rng));
      for (int y = 0; y < sh; y++)
        for (int x = 0; x < sw; x++) {
          int s = 0;
          for (int k = -2; k <= 2; k++)
            s += n[size_t(std::clamp(y + k, 0, sh - 1)) * sw + std::clamp(x + 2 * k, 0, sw - 1)];
          src[size_t(y) * sw + x] = uint8_t(s / 5);
        }
      break;
    }
    case Content::Real: {
      const int ox = std::uniform_int_distribution<int>(0, std::max(0, e.width - sw))(rng);
      const int oy = std::uniform_int_distribution<int>(0, std::max(0, e.height - sh))(rng);
      for (int y = 0; y < sh; y++)
        for (int x = 0; x < sw; x++)
          src[size_t(y) * sw + x] =
              e.pix[size_t(std::min(oy + y, e.height - 1)) * e.stride + std::min(ox + x, e.width - 1)];
      break;
    }
    case Content::Flat: {
      const uint8_t v = uint8_t(byte(rng));
      std::fill(src.begin(), src.end(), v);
      break;
    }
    case Content::Edges: {
      const int ex = std::uniform_int_distribution<int>(0, sw - 1)(rng);
      const int ey = std::uniform_int_distribution<int>(0, sh - 1)(rng);
      for (int y = 0; y < sh; y++)
        for (int x = 0; x < sw; x++)
          src[size_t(y) * sw + x] = uint8_t((x < ex ? 0 : 200) + (y < ey ? 0 : 55));
      break;
    }
    case Content::Checker: {
      const int period = 1 + int(rng() % 3);
      for (int y = 0; y < sh; y++)
        for (int x = 0; x < sw; x++)
          src[size_t(y) * sw + x] = ((x / period + y / period) & 1) ? 255 : 0;
      break;
    }
  }
  const bool noisy = c.content != Content::Flat && c.content != Content::Checker;
  const int bx = c.range + 4, by = c.range + 4;
  for (int y = 0; y < c.h; y++)
    for (int x = 0; x < c.w; x++) {
      ref->pix[size_t(y) * ref->stride + x] = src[size_t(by + y) * sw + bx + x];
      int v = src[size_t(std::clamp(by + y + my, 0, sh - 1)) * sw + std::clamp(bx + x + mx, 0, sw - 1)];
      if (noisy) v += small(rng);
      cur->pix[size_t(y) * cur->stride + x] = uint8_t(std::clamp(v, 0, 255));
    }
  if (c.content == Content::Flat) {  // two different flat levels: every cost ties
    const uint8_t v = uint8_t(byte(rng));
    for (int y = 0; y < c.h; y++) std::fill_n(&cur->pix[size_t(y) * cur->stride], c.w, v);
  }
}

std::vector<MvCost> make_preds(const Case& c, int nmb, std::mt19937_64& rng) {
  std::vector<MvCost> p(nmb, MvCost{0, 0, 0});
  for (auto& v : p) {
    if (c.preds == Preds::Random) {
      std::uniform_int_distribution<int> d(-4 * c.range - 8, 4 * c.range + 8);
      v.mvx = int16_t(d(rng)), v.mvy = int16_t(d(rng));
    } else if (c.preds == Preds::Extreme) {
      v.mvx = int16_t(rng() & 1 ? 32767 : -32768);
      v.mvy = int16_t(std::uniform_int_distribution<int>(-32768, 32767)(rng));
    }
    v.cost = uint32_t(rng());
  }
  return p;
}

// Host copy of `p` in device memory, stride kept.
struct DevicePlaneCopy {
  gvc::Backend* be;
  void* ptr = nullptr;
  DevicePlaneCopy(gvc::Backend* b, const Plane& p) : be(b) {
    ptr = be->allocate(p.pix.size());
    if (ptr) {
      EXPECT_TRUE(be->copy(ptr, MemoryLocation::Device, p.pix.data(), MemoryLocation::Host,
                           p.pix.size()).ok());
    }
  }
  ~DevicePlaneCopy() { be->release(ptr); }
  gvc::PlaneView view(const Plane& p) const {
    return {static_cast<const uint8_t*>(ptr), p.stride, p.width, p.height, MemoryLocation::Device};
  }
};

// Runs the CUDA search into a poisoned, guarded buffer (host or device); returns the
// whole buffer, guards included, as host records.
std::vector<MbPartitions> run_cuda(gvc::Backend* be, const Case& c, const Plane& cur,
                                   const Plane& ref, const MeParams& p, int cols, int rows) {
  const size_t n = size_t(cols) * rows, total = n + 2 * kGuard;
  std::vector<MbPartitions> host(total);
  std::memset(host.data(), kPoison, total * sizeof(MbPartitions));
  auto ms = be->motion_search();
  if (!c.device_io) {
    MbPartitionField f{host.data() + kGuard, cols, rows, MemoryLocation::Host};
    gvc::Status st = ms->run(cur.view(), ref.view(), p, f);
    EXPECT_TRUE(st.ok()) << st.message();
    return host;
  }
  DevicePlaneCopy dcur(be, cur), dref(be, ref);
  void* dout = be->allocate(total * sizeof(MbPartitions));
  EXPECT_NE(dout, nullptr);
  EXPECT_TRUE(be->copy(dout, MemoryLocation::Device, host.data(), MemoryLocation::Host,
                       total * sizeof(MbPartitions)).ok());
  MbPartitionField f{static_cast<MbPartitions*>(dout) + kGuard, cols, rows, MemoryLocation::Device};
  gvc::Status st = ms->run(dcur.view(cur), dref.view(ref), p, f);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(be->copy(host.data(), MemoryLocation::Host, dout, MemoryLocation::Device,
                       total * sizeof(MbPartitions)).ok());
  be->release(dout);
  return host;
}

void expect_guards(const uint8_t* guard, size_t bytes, const char* where) {
  for (size_t i = 0; i < bytes; i++)
    if (guard[i] != kPoison) {
      ADD_FAILURE() << "write outside the output (" << where << " guard, byte " << i << ")";
      return;
    }
}

void compare_fields(const std::vector<MbPartitions>& cpu, const std::vector<MbPartitions>& gpu,
                    int cols) {
  expect_guards(reinterpret_cast<const uint8_t*>(gpu.data()), kGuard * sizeof(MbPartitions), "front");
  expect_guards(reinterpret_cast<const uint8_t*>(gpu.data() + gpu.size() - kGuard),
                kGuard * sizeof(MbPartitions), "back");
  int reported = 0, bad = 0;
  for (size_t i = kGuard; i + kGuard < gpu.size(); i++) {
    for (int p = 0; p < gvc::kNumPartitions; p++) {
      const MvCost& a = cpu[i].part[p];
      const MvCost& b = gpu[i].part[p];
      if (std::memcmp(&a, &b, sizeof a) == 0) continue;
      bad++;
      if (reported++ < 8)
        ADD_FAILURE() << "MB (" << (i - kGuard) % cols << "," << (i - kGuard) / cols
                      << ") partition " << p << ": cpu (" << a.mvx << "," << a.mvy << ") cost "
                      << a.cost << ", cuda (" << b.mvx << "," << b.mvy << ") cost " << b.cost;
    }
  }
  EXPECT_EQ(bad, 0) << "partition records differ";
}

class MeCheck : public testing::TestWithParam<Case> {};

TEST_P(MeCheck, BitExact) {
  gvc::Backend* be = cuda_backend();
  if (!be) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  const Case& c = GetParam();
  if (c.content == Content::Real && elephants().pix.empty())
    GTEST_SKIP() << "no real test content (GVC_ELEPHANTS names the raw 4096x2304 luma file)";
  auto rng = rng_for(case_name(c));
  Plane cur, ref;
  make_frames(c, rng, &cur, &ref);
  const int cols = gvc::mb_count(c.w), rows = gvc::mb_count(c.h);
  const auto preds = make_preds(c, cols * rows, rng);
  MeParams p;
  p.range = c.range;
  p.lambda = c.lambda;
  p.subpel = c.subpel;
  p.refined_partitions = c.refined;
  p.predictors = c.preds == Preds::Zero && (rng() & 1) ? nullptr : preds.data();

  std::vector<MbPartitions> cpu(size_t(cols) * rows + 2 * kGuard);
  MbPartitionField f{cpu.data() + kGuard, cols, rows, MemoryLocation::Host};
  gvc::Status st = gvc::make_cpu_motion_search()->run(cur.view(), ref.view(), p, f);
  ASSERT_TRUE(st.ok()) << st.message();
  compare_fields(cpu, run_cuda(be, c, cur, ref, p, cols, rows), cols);
}

std::vector<Case> me_cases() {
  std::vector<Case> v;
  // Every odd range, lambda, sub-pel mode and predictor kind at QCIF.
  for (int r : {8, 13, 16, 31, 64})
    for (uint32_t l : {0u, 4u})
      for (Subpel s : {Subpel::None, Subpel::Half, Subpel::Quarter})
        v.push_back({176, 144, r, l, s, Content::Smooth, l ? Preds::Random : Preds::Zero,
                     (r + int(s)) % 2 == 1});
  // Crafted content: ties everywhere (flat), edges, maximal contrast, noise, extreme costs.
  for (Content ct : {Content::Flat, Content::Edges, Content::Checker, Content::Noise})
    for (int r : {13, 16}) {
      v.push_back({176, 144, r, 0, Subpel::Quarter, ct, Preds::Zero, false});
      v.push_back({176, 144, r, 9, Subpel::Quarter, ct, Preds::Random, true});
    }
  v.push_back({176, 144, 16, 65535, Subpel::Quarter, Content::Smooth, Preds::Extreme, false});
  v.push_back({176, 144, 64, 65535, Subpel::Quarter, Content::Noise, Preds::Extreme, true});
  v.push_back({176, 144, 31, 1000, Subpel::Half, Content::Flat, Preds::Random, false});
  // Awkward sizes: smaller than one MB, not multiples of 16, one sample.
  for (auto wh : {std::pair{33, 17}, std::pair{17, 33}, std::pair{8, 8}, std::pair{1, 1},
                  std::pair{100, 20}})
    for (int r : {8, 64})
      v.push_back({wh.first, wh.second, r, 3, Subpel::Quarter, Content::Smooth, Preds::Random,
                   r == 64});
  // Real content at the sizes that matter.
  v.push_back({176, 144, 16, 4, Subpel::Quarter, Content::Real, Preds::Random, false});
  v.push_back({1366, 768, 16, 0, Subpel::Quarter, Content::Real, Preds::Zero, true});
  v.push_back({1366, 768, 31, 3, Subpel::Half, Content::Real, Preds::Random, false});
  v.push_back({1920, 1080, 16, 2, Subpel::Quarter, Content::Real, Preds::Random, true});
  v.push_back({1920, 1080, 16, 0, Subpel::None, Content::Smooth, Preds::Zero, false});
  // Only the first partitions refined (the encoder's fast preset: 5), at every boundary of
  // the unit list and between them.
  for (int n : {1, 2, 5, 7, 9, 17, 25, 33})
    v.push_back({176, 144, 16, 4, Subpel::Quarter, Content::Smooth, Preds::Random, n % 2 == 1, n});
  v.push_back({1920, 1080, 8, 4, Subpel::Quarter, Content::Real, Preds::Random, true, 5});
  v.push_back({176, 144, 8, 2, Subpel::Half, Content::Noise, Preds::Random, false, 5});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Me, MeCheck, testing::ValuesIn(me_cases()),
                         [](const testing::TestParamInfo<Case>& i) { return case_name(i.param); });

// --- select_blocks ------------------------------------------------------------------------

struct SelCase {
  BlockSize size;
  bool synthetic;  // random costs from a small set (many ties) instead of a real search
  bool device_io;
};

class SelectCheck : public testing::TestWithParam<SelCase> {};

TEST_P(SelectCheck, BitExact) {
  gvc::Backend* be = cuda_backend();
  if (!be) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  const SelCase& sc = GetParam();
  auto rng = rng_for("select" + std::to_string(int(sc.size)) + std::to_string(sc.synthetic) +
                     std::to_string(sc.device_io));
  const int cols = 23, rows = 9;
  std::vector<MbPartitions> parts(size_t(cols) * rows);
  if (sc.synthetic) {
    for (auto& mb : parts)
      for (auto& pc : mb.part)
        pc = {int16_t(rng() % 64 - 32), int16_t(rng() % 64 - 32), uint32_t(rng() % 4) *
              (rng() % 8 == 0 ? 0xffffffffu / 4 : 1u)};
  } else {
    Case c{cols * 16 - 5, rows * 16 - 3, 16, 4, Subpel::Quarter, Content::Smooth, Preds::Random, false};
    Plane cur, ref;
    make_frames(c, rng, &cur, &ref);
    auto preds = make_preds(c, cols * rows, rng);
    MeParams p;
    p.lambda = 4;
    p.predictors = preds.data();
    MbPartitionField f{parts.data(), cols, rows, MemoryLocation::Host};
    ASSERT_TRUE(gvc::make_cpu_motion_search()->run(cur.view(), ref.view(), p, f).ok());
  }
  int bw, bh, bc, br;
  gvc::block_field_dims(sc.size, cols, rows, &bw, &bh, &bc, &br);
  const size_t n = size_t(bc) * br, total = n + 2 * kGuard;
  std::vector<MvCost> cpu(total), gpu(total);
  std::memset(cpu.data(), kPoison, total * sizeof(MvCost));
  std::memset(gpu.data(), kPoison, total * sizeof(MvCost));
  MbPartitionField pf{parts.data(), cols, rows, MemoryLocation::Host};
  MvBlockField cf{cpu.data() + kGuard, 0, 0, bc, br, MemoryLocation::Host};
  ASSERT_TRUE(gvc::make_cpu_motion_search()->select_blocks(pf, sc.size, cf).ok());

  auto ms = be->motion_search();
  if (!sc.device_io) {
    MvBlockField gf{gpu.data() + kGuard, 0, 0, bc, br, MemoryLocation::Host};
    gvc::Status st = ms->select_blocks(pf, sc.size, gf);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(gf.block_w, cf.block_w);
    EXPECT_EQ(gf.block_h, cf.block_h);
  } else {
    void* dparts = be->allocate(parts.size() * sizeof(MbPartitions));
    void* dout = be->allocate(total * sizeof(MvCost));
    ASSERT_TRUE(dparts && dout);
    ASSERT_TRUE(be->copy(dparts, MemoryLocation::Device, parts.data(), MemoryLocation::Host,
                         parts.size() * sizeof(MbPartitions)).ok());
    ASSERT_TRUE(be->copy(dout, MemoryLocation::Device, gpu.data(), MemoryLocation::Host,
                         total * sizeof(MvCost)).ok());
    MbPartitionField dpf{static_cast<MbPartitions*>(dparts), cols, rows, MemoryLocation::Device};
    MvBlockField gf{static_cast<MvCost*>(dout) + kGuard, 0, 0, bc, br, MemoryLocation::Device};
    gvc::Status st = ms->select_blocks(dpf, sc.size, gf);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_TRUE(be->copy(gpu.data(), MemoryLocation::Host, dout, MemoryLocation::Device,
                         total * sizeof(MvCost)).ok());
    be->release(dparts);
    be->release(dout);
  }
  expect_guards(reinterpret_cast<const uint8_t*>(gpu.data()), kGuard * sizeof(MvCost), "front");
  expect_guards(reinterpret_cast<const uint8_t*>(gpu.data() + kGuard + n), kGuard * sizeof(MvCost),
                "back");
  int bad = 0;
  for (size_t i = kGuard; i < kGuard + n; i++)
    if (std::memcmp(&cpu[i], &gpu[i], sizeof(MvCost)) != 0 && bad++ < 8)
      ADD_FAILURE() << "block " << i - kGuard << ": cpu (" << cpu[i].mvx << "," << cpu[i].mvy
                    << ") " << cpu[i].cost << ", cuda (" << gpu[i].mvx << "," << gpu[i].mvy
                    << ") " << gpu[i].cost;
  EXPECT_EQ(bad, 0);
}

std::vector<SelCase> select_cases() {
  std::vector<SelCase> v;
  for (BlockSize s : {BlockSize::B16x16, BlockSize::B8x8, BlockSize::B4x4, BlockSize::Auto})
    for (bool syn : {false, true})
      for (bool dev : {false, true}) v.push_back({s, syn, dev});
  return v;
}

std::string select_name(const testing::TestParamInfo<SelCase>& i) {
  static const char* const names[] = {"b16x16", "b8x8", "b4x4", "auto"};
  return std::string(names[int(i.param.size)]) + (i.param.synthetic ? "_synthetic" : "_search") +
         (i.param.device_io ? "_dev" : "_host");
}

INSTANTIATE_TEST_SUITE_P(Me, SelectCheck, testing::ValuesIn(select_cases()), select_name);

TEST(BackendCheck, RejectsBadArguments) {
  gvc::Backend* be = cuda_backend();
  if (!be) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  EXPECT_STREQ(be->name(), "cuda");
  Plane a;
  a.width = a.height = a.stride = 32;
  a.pix.assign(32 * 32, 7);
  std::vector<MbPartitions> out(4);
  MbPartitionField f{out.data(), 2, 2, MemoryLocation::Host};
  MeParams p;
  p.range = 7;
  EXPECT_FALSE(be->motion_search()->run(a.view(), a.view(), p, f).ok());
  p.range = 65;
  EXPECT_FALSE(be->motion_search()->run(a.view(), a.view(), p, f).ok());
  p.range = 16;
  p.lambda = 65536;
  EXPECT_FALSE(be->motion_search()->run(a.view(), a.view(), p, f).ok());
  p.lambda = 0;
  for (int n : {0, 42}) {
    p.refined_partitions = n;
    EXPECT_FALSE(be->motion_search()->run(a.view(), a.view(), p, f).ok()) << "refined_partitions " << n;
  }
  p.refined_partitions = gvc::kNumPartitions;
  f.mb_cols = 3;
  EXPECT_FALSE(be->motion_search()->run(a.view(), a.view(), p, f).ok());
}

}  // namespace

// --bench: CPU and CUDA times of MotionSearch::run (host frames in, host field out, as the
// element's system-memory path), median of several runs, 1080p real content.
void run_bench() {
  gvc::Backend* be = cuda_backend();
  const Plane& e = elephants();
  std::printf("\ncheckgpu --bench: MotionSearch::run, 1920x1080, %s content, host in/out\n",
              e.pix.empty() ? "smooth random" : "real");
  std::printf("%-28s %12s %12s %10s\n", "config", "cpu ms", "cuda ms", "ratio");
  for (Subpel s : {Subpel::None, Subpel::Quarter})
    for (int r : {16, 32}) {
      Case c{1920, 1080, r, 4, s, e.pix.empty() ? Content::Smooth : Content::Real, Preds::Random,
             false};
      auto rng = rng_for("bench");
      Plane cur, ref;
      make_frames(c, rng, &cur, &ref);
      const int cols = gvc::mb_count(c.w), rows = gvc::mb_count(c.h);
      auto preds = make_preds(c, cols * rows, rng);
      MeParams p;
      p.range = r;
      p.lambda = 4;
      p.subpel = s;
      p.predictors = preds.data();
      std::vector<MbPartitions> out(size_t(cols) * rows);
      MbPartitionField f{out.data(), cols, rows, MemoryLocation::Host};
      auto time = [&](gvc::MotionSearch& ms, int reps) {
        std::vector<double> t;
        for (int i = 0; i < reps; i++) {
          auto t0 = std::chrono::steady_clock::now();
          if (!ms.run(cur.view(), ref.view(), p, f).ok()) return -1.0;
          t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
      };
      auto cpu = gvc::make_cpu_motion_search();
      auto gpu = be->motion_search();
      time(*gpu, 3);  // warm-up
      const double tg = time(*gpu, 21);
      const double tc = time(*cpu, 3);
      char name[64];
      std::snprintf(name, sizeof name, "range %d, subpel %s", r, s == Subpel::None ? "none" : "quarter");
      std::printf("%-28s %12.2f %12.3f %9.1fx\n", name, tc, tg, tc / tg);
    }
}

}  // namespace checkgpu
