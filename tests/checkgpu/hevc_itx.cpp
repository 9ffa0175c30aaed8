// hevc_itx.cpp (checkgpu): HEVC scaling + inverse transform + residual addition on the GPU against HevcResidual::run, bit for bit
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "checkgpu.h"
#include "common/dsp/hevc_itx.h"
#include "gpu/device.h"
#include "gpu/hevc_itx.h"

namespace checkgpu {
namespace {

using gvc::HevcPlane;
using gvc::HevcTu;
using gvc::cuda::DeviceBuffer;
using gvc::cuda::HevcResidualCore;
using gvc::cuda::HevcScalingMatrices;


constexpr int kGuardRows = 2, kGuardCols = 5;  // poisoned samples above, below and left of a plane
constexpr uint16_t kPoison = 0xA5A5;           // no 8..12-bit sample has this value

int rand_int(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// Three 4:2:0 planes of 16-bit samples, each in a poisoned frame: guard rows above and below,
// guard columns on the left, a stride tail on the right.
struct Picture {
  std::vector<uint16_t> buf[3];
  int w[3] = {}, h[3] = {}, stride[3] = {};
  HevcPlane plane(int c, uint16_t* base) const {
    return {base + kGuardRows * stride[c] + kGuardCols, stride[c], w[c], h[c]};
  }
};

enum class Pred { Uniform, Extremes, MidGrey };

// Random prediction already in the planes (Extremes: mostly 0 and the maximum, to clip).
Picture make_picture(int w, int h, int bdl, int bdc, Pred pred, std::mt19937_64& rng) {
  Picture p;
  for (int c = 0; c < 3; ++c) {
    p.w[c] = c ? (w + 1) / 2 : w;
    p.h[c] = c ? (h + 1) / 2 : h;
    p.stride[c] = kGuardCols + p.w[c] + rand_int(rng, 0, 24);
    p.buf[c].assign(size_t(p.stride[c]) * size_t(p.h[c] + 2 * kGuardRows), kPoison);
    const int maxv = (1 << (c ? bdc : bdl)) - 1;
    const HevcPlane v = p.plane(c, p.buf[c].data());
    for (int y = 0; y < v.height; ++y)
      for (int x = 0; x < v.width; ++x) {
        int s = rand_int(rng, 0, maxv);
        if (pred == Pred::MidGrey) s = (maxv + 1) / 2;
        if (pred == Pred::Extremes && rng() % 4) s = rng() & 1 ? maxv : 0;
        v.at(x, y) = uint16_t(s);
      }
  }
  return p;
}

// ScalingFactor arrays as the decoder keeps them ([sizeId][matrixId], nTbS*nTbS each).
struct Matrices {
  std::vector<uint8_t> m[4][6];
  HevcScalingMatrices view() const {
    HevcScalingMatrices v;
    for (int s = 0; s < 4; ++s)
      for (int j = 0; j < 6; ++j) v.m[s][j] = m[s][j].data();
    return v;
  }
};

// Random factors 1..255 (odd matrixIds: 8..70, the range of real lists); `extreme`: some
// matrices all 255, some all 1.
Matrices make_matrices(bool extreme, std::mt19937_64& rng) {
  Matrices mm;
  for (int s = 0; s < 4; ++s)
    for (int j = 0; j < 6; ++j) {
      std::vector<uint8_t>& m = mm.m[s][j];
      m.resize(size_t(16) << (2 * s));
      for (auto& v : m) {
        if (extreme && j % 3 != 2)
          v = j % 3 == 0 ? 255 : 1;
        else
          v = uint8_t(j % 2 ? rand_int(rng, 8, 70) : rand_int(rng, 1, 255));
      }
    }
  return mm;
}

struct TuBatch {
  std::vector<HevcTu> tus;
  std::vector<int16_t> levels;
};

enum class Levels { Sparse, Dense, Full, Extreme, Saturate };

void fill_levels(int16_t* lv, int log2_size, Levels kind, std::mt19937_64& rng) {
  const int n = 1 << log2_size;
  const int16_t same = rng() & 1 ? 32767 : -32768;
  static const int16_t kExtremes[] = {-32768, 32767, -32767, 32766, 0, 1, -1};
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      int16_t& v = lv[y * n + x];
      switch (kind) {
        case Levels::Sparse:  // mostly zero, small, towards low frequencies
          v = rand_int(rng, 0, 99) < std::max(2, 40 - 80 * (x + y) / n)
                  ? int16_t(rand_int(rng, 1, 64) * (rng() & 1 ? 1 : -1))
                  : int16_t(0);
          break;
        case Levels::Dense: v = int16_t(rand_int(rng, -2048, 2047)); break;
        case Levels::Full: v = int16_t(rand_int(rng, -32768, 32767)); break;
        case Levels::Extreme: v = kExtremes[rng() % 7]; break;
        case Levels::Saturate: v = rng() % 16 ? same : int16_t(0); break;
      }
    }
}

struct GenParams {
  int min_log2 = 2, max_log2 = 5;
  int split_percent = 50;
  int skip_percent = 10, bypass_percent = 5;
  bool extreme = false;  // extreme levels, maximal qP more often
  bool dct_only = false;
};

Levels pick_levels(bool extreme, std::mt19937_64& rng) {
  const int r = rand_int(rng, 0, 99);
  if (extreme) return r < 20 ? Levels::Full : (r < 60 ? Levels::Extreme : Levels::Saturate);
  if (r < 50) return Levels::Sparse;
  if (r < 80) return Levels::Dense;
  if (r < 90) return Levels::Full;
  return r < 95 ? Levels::Extreme : Levels::Saturate;
}

// One TU with random kind, qP, matrix and levels; its levels follow a few garbage values, so
// that coeff_offset matters.
void add_tu(TuBatch& b, int c, int x, int y, int log2_size, int bit_depth, const GenParams& g,
            const Matrices* m, std::mt19937_64& rng) {
  HevcTu tu;
  tu.x = x;
  tu.y = y;
  tu.c_idx = uint8_t(c);
  tu.log2_size = uint8_t(log2_size);
  const int r = rand_int(rng, 0, 99);
  if (!g.dct_only) {
    tu.transquant_bypass = r < g.bypass_percent;
    // With bypass the flag must be ignored, as on the CPU.
    tu.transform_skip = tu.transquant_bypass ? (rng() & 1) : r < g.bypass_percent + g.skip_percent;
    tu.dst = log2_size == 2 && (rng() & 1);  // chroma too: the kernels do not care
  }
  const int qp_max = 51 + 6 * (bit_depth - 8);
  tu.qp = uint8_t(g.extreme && (rng() & 1) ? qp_max : rand_int(rng, 0, qp_max));
  if (m && rng() % 4) tu.scaling = m->m[log2_size - 2][rng() % 6].data();
  for (int i = rand_int(rng, 0, 3); i > 0; --i) b.levels.push_back(int16_t(rng()));
  tu.coeff_offset = uint32_t(b.levels.size());
  b.levels.resize(b.levels.size() + (size_t(1) << (2 * log2_size)));
  fill_levels(b.levels.data() + tu.coeff_offset, log2_size, pick_levels(g.extreme, rng), rng);
  b.tus.push_back(tu);
}

// Random transform trees over the 32x32 blocks of a plane: TUs of log2 sizes min..max that
// tile it; blocks that cross the right or bottom edge are usually split, else kept (clipped).
struct Tiler {
  TuBatch& b;
  int c, w, h, bit_depth;
  const GenParams& g;
  const Matrices* m;
  std::mt19937_64& rng;

  void node(int x, int y, int log2_size) {
    if (x >= w || y >= h) return;
    const int n = 1 << log2_size;
    const bool crosses = x + n > w || y + n > h;
    const bool split = log2_size > g.min_log2 &&
                       (log2_size > g.max_log2 || (crosses ? rng() % 4 != 0 : rand_int(rng, 0, 99) < g.split_percent));
    if (!split) {
      add_tu(b, c, x, y, log2_size, bit_depth, g, m, rng);
      return;
    }
    const int half = n / 2;
    node(x, y, log2_size - 1);
    node(x + half, y, log2_size - 1);
    node(x, y + half, log2_size - 1);
    node(x + half, y + half, log2_size - 1);
  }
  void plane() {
    for (int y = 0; y < h; y += 32)
      for (int x = 0; x < w; x += 32) node(x, y, 5);
  }
};

TuBatch make_batch(const Picture& pic, int bdl, int bdc, const GenParams& g, const Matrices* m,
                   std::mt19937_64& rng) {
  TuBatch b;
  for (int c = 0; c < 3; ++c) Tiler{b, c, pic.w[c], pic.h[c], c ? bdc : bdl, g, m, rng}.plane();
  std::shuffle(b.tus.begin(), b.tus.end(), rng);  // the order must not matter
  return b;
}

std::string describe(const HevcTu& tu) {
  std::ostringstream s;
  const int n = 1 << tu.log2_size;
  s << n << "x" << n << " TU at (" << tu.x << "," << tu.y << ") qP " << int(tu.qp)
    << (tu.transquant_bypass ? " bypass" : "") << (tu.transform_skip ? " skip" : "") << (tu.dst ? " dst" : "")
    << (tu.scaling ? " list" : " flat") << " levels@" << tu.coeff_offset;
  return s.str();
}

// Where buffer sample i of plane c lies: a guard, or a sample of a TU.
std::string where(const Picture& pic, int c, size_t i, const TuBatch& b) {
  const int row = int(i / size_t(pic.stride[c])) - kGuardRows, col = int(i % size_t(pic.stride[c])) - kGuardCols;
  std::ostringstream s;
  s << "(" << col << "," << row << ")";
  if (col < 0 || row < 0 || col >= pic.w[c] || row >= pic.h[c]) return s.str() + " in the guard";
  for (const HevcTu& tu : b.tus) {
    const int n = 1 << tu.log2_size;
    if (tu.c_idx == c && col >= tu.x && col < tu.x + n && row >= tu.y && row < tu.y + n)
      return s.str() + " of the " + describe(tu);
  }
  return s.str() + " of no TU";
}

// The CUDA core on device copies of `pic`; `out` gets the whole buffers back, guards included.
void run_cuda(HevcResidualCore& core, cudaStream_t stream, const Picture& pic, const TuBatch& b,
              const Matrices* m, int bdl, int bdc, std::vector<uint16_t> out[3]) {
  DeviceBuffer levels, planes[3];
  const size_t level_bytes = b.levels.size() * sizeof(int16_t);
  CHECK_OK(levels.reserve(level_bytes));
  if (level_bytes) CHECK_CUDA(cudaMemcpy(levels.get(), b.levels.data(), level_bytes, cudaMemcpyHostToDevice));
  HevcPlane views[3];
  for (int c = 0; c < 3; ++c) {
    const size_t bytes = pic.buf[c].size() * sizeof(uint16_t);
    CHECK_OK(planes[c].reserve(bytes));
    CHECK_CUDA(cudaMemcpy(planes[c].get(), pic.buf[c].data(), bytes, cudaMemcpyHostToDevice));
    views[c] = pic.plane(c, planes[c].get<uint16_t>());
  }
  const HevcScalingMatrices sm = m ? m->view() : HevcScalingMatrices{};
  CHECK_OK(core.run(b.tus, levels.get<int16_t>(), b.levels.size(), sm, views, bdl, bdc, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int c = 0; c < 3; ++c) {
    out[c].resize(pic.buf[c].size());
    CHECK_CUDA(cudaMemcpy(out[c].data(), planes[c].get(), out[c].size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  }
}

// HevcResidual::run and the CUDA core on copies of `pic`: every sample of the buffers must
// agree, guards included.
void check_batch(HevcResidualCore& core, cudaStream_t stream, const Picture& pic, const TuBatch& b,
                 const Matrices* m, int bdl, int bdc, const std::string& what) {
  std::vector<uint16_t> cpu[3], gpu[3];
  HevcPlane views[3];
  for (int c = 0; c < 3; ++c) {
    cpu[c] = pic.buf[c];
    views[c] = pic.plane(c, cpu[c].data());
  }
  gvc::HevcResidual::run(b.tus, b.levels.data(), views, bdl, bdc);
  run_cuda(core, stream, pic, b, m, bdl, bdc, gpu);
  if (testing::Test::HasFatalFailure()) return;
  size_t changed = 0;
  for (int c = 0; c < 3; ++c) {
    int bad = 0;
    for (size_t i = 0; i < cpu[c].size(); ++i) {
      changed += cpu[c][i] != pic.buf[c][i];
      if (cpu[c][i] == gpu[c][i]) continue;
      if (bad++ < 6)
        ADD_FAILURE() << what << ": plane " << c << " sample " << where(pic, c, i, b) << ": cpu " << cpu[c][i]
                      << ", cuda " << gpu[c][i] << " (prediction " << pic.buf[c][i] << ")";
    }
    EXPECT_EQ(bad, 0) << what << ": plane " << c << " differs";
  }
  if (b.tus.size() >= 50) {
    EXPECT_GT(changed, 0u) << what << ": the batch changed nothing (a vacuous test)";
  }
}

struct Case {
  const char* name;
  int w, h, bdl, bdc;
  bool lists;
  bool extreme;
};

class HevcItxCheck : public testing::TestWithParam<Case> {};

// Random transform trees over whole planes: every size, DST and DCT, transform skip at every
// size, bypass, with and without scaling lists, every qP of the bit depth. Three rounds on one
// core: small TUs, large TUs with many skips, many bypasses (the matrices change between the
// first two rounds and stay for the third, so the table is uploaded and reused).
TEST_P(HevcItxCheck, MatchesCpu) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  const Case& c = GetParam();
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  HevcResidualCore core;
  auto rng = rng_for(std::string("hevc itx ") + c.name);
  Matrices m;
  for (int round = 0; round < 3; ++round) {
    GenParams g;
    g.extreme = c.extreme;
    g.split_percent = round == 0 ? 70 : (round == 1 ? 25 : 50);
    g.skip_percent = round == 1 ? 40 : 10;
    g.bypass_percent = round == 2 ? 30 : 5;
    if (round < 2) m = make_matrices(c.extreme, rng);
    const Picture pic = make_picture(c.w, c.h, c.bdl, c.bdc, c.extreme ? Pred::Extremes : Pred::Uniform, rng);
    const TuBatch b = make_batch(pic, c.bdl, c.bdc, g, c.lists ? &m : nullptr, rng);
    check_batch(core, stream.get(), pic, b, c.lists ? &m : nullptr, c.bdl, c.bdc,
                "round " + std::to_string(round) + " (" + std::to_string(b.tus.size()) + " TUs)");
    if (HasFailure()) return;
  }
}

std::vector<Case> itx_cases() {
  return {
      {"200x136_8bit", 200, 136, 8, 8, false, false},
      {"200x136_8bit_lists", 200, 136, 8, 8, true, false},
      {"200x136_10bit", 200, 136, 10, 10, false, false},
      {"200x136_10bit_lists", 200, 136, 10, 10, true, false},
      // Not a multiple of 8: TUs clipped at the right and bottom edges.
      {"203x139_8bit_luma_10bit_chroma_lists", 203, 139, 8, 10, true, false},
      {"200x136_12bit_luma_16bit_chroma_lists", 200, 136, 12, 16, true, false},
      {"5x3_8bit_lists", 5, 3, 8, 8, true, false},
      // Levels at -32768/32767, qP at its maximum, factors 255 and 1, prediction at 0 and the
      // maximum: the clamps after scaling and after the column pass, and the final clip.
      {"200x136_8bit_extremes", 200, 136, 8, 8, true, true},
      {"200x136_10bit_extremes", 200, 136, 10, 10, true, true},
      {"203x139_10bit_extremes_flat", 203, 139, 10, 10, false, true},
  };
}

INSTANTIATE_TEST_SUITE_P(Hevc, HevcItxCheck, testing::ValuesIn(itx_cases()),
                         [](const testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// Kernel variants one at a time: DST 4x4, DCT 4..32, transform skip and bypass 4..32, each TU
// with one nonzero level at its own position, so that every coefficient of every matrix row
// shows in some output unclipped (a wrong table entry points at itself). 8 and 10 bits, on
// mid-grey.
TEST(HevcItx, ImpulseResponses) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  HevcResidualCore core;
  auto rng = rng_for("hevc itx impulses");
  enum Kind { Dst, Dct, Skip, Bypass };
  static const char* const kKindNames[] = {"dst", "dct", "skip", "bypass"};
  for (int bd : {8, 10})
    for (int kind = Dst; kind <= Bypass; ++kind)
      for (int log2_size = 2; log2_size <= (kind == Dst ? 2 : 5); ++log2_size) {
        const int n = 1 << log2_size;
        const Picture pic = make_picture(n * n, n * n, bd, bd, Pred::MidGrey, rng);
        TuBatch b;
        for (int i = 0; i < n * n; ++i) {
          HevcTu tu;
          tu.x = (i % n) * n;
          tu.y = (i / n) * n;
          tu.log2_size = uint8_t(log2_size);
          tu.dst = kind == Dst;
          tu.transform_skip = kind == Skip;
          tu.transquant_bypass = kind == Bypass;
          // qP 4 + QpBdOffset scales a level by 2^(7 - log2(nTbS)) at every bit depth; up to
          // 8000 after scaling, the residual stays within +-127 at 8 bits and +-511 at 10.
          tu.qp = uint8_t(4 + 6 * (bd - 8));
          tu.coeff_offset = uint32_t(b.levels.size());
          b.levels.resize(b.levels.size() + size_t(n * n), 0);
          const int level = rand_int(rng, 1, 8000 >> (7 - log2_size));
          b.levels[tu.coeff_offset + size_t(i)] = int16_t(rng() & 1 ? level : -level);
          b.tus.push_back(tu);
        }
        check_batch(core, stream.get(), pic, b, nullptr, bd, bd,
                    std::string(kKindNames[kind]) + " " + std::to_string(n) + "x" + std::to_string(n) + ", " +
                        std::to_string(bd) + "-bit");
        if (HasFailure()) return;
      }
}

// Arguments the CPU reference has no answer for are refused before anything is queued; what
// the CPU ignores (TUs outside the plane, flags of bypass TUs, an empty list) is accepted.
TEST(HevcItx, RejectsBadTusAndIgnoresWhatTheCpuIgnores) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  HevcResidualCore core;
  auto rng = rng_for("hevc itx rejects");
  const Picture pic = make_picture(64, 64, 8, 8, Pred::Uniform, rng);
  Matrices m = make_matrices(false, rng);
  const HevcScalingMatrices sm = m.view();
  std::vector<int16_t> host_levels(1024 + 16, 0);
  host_levels[1] = 100;
  DeviceBuffer levels, planes[3];
  CHECK_OK(levels.reserve(host_levels.size() * sizeof(int16_t)));
  CHECK_CUDA(cudaMemcpy(levels.get(), host_levels.data(), host_levels.size() * sizeof(int16_t), cudaMemcpyHostToDevice));
  HevcPlane views[3];
  for (int c = 0; c < 3; ++c) {
    CHECK_OK(planes[c].reserve(pic.buf[c].size() * sizeof(uint16_t)));
    CHECK_CUDA(cudaMemcpy(planes[c].get(), pic.buf[c].data(), pic.buf[c].size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
    views[c] = pic.plane(c, planes[c].get<uint16_t>());
  }
  auto run = [&](const HevcTu& tu, int bdl = 8, int bdc = 8, const HevcPlane* v = nullptr) {
    return core.run({tu}, levels.get<int16_t>(), host_levels.size(), sm, v ? v : views, bdl, bdc, stream.get());
  };
  HevcTu good;
  good.x = 8;
  good.y = 8;
  good.log2_size = 3;
  good.qp = 30;
  const std::vector<uint8_t> foreign(64, 16);
  struct Bad {
    const char* why;
    HevcTu tu;
    int bdl, bdc;
  };
  std::vector<Bad> bad;
  auto with = [&](const char* why, auto change, int bdl = 8, int bdc = 8) {
    HevcTu tu = good;
    change(tu);
    bad.push_back({why, tu, bdl, bdc});
  };
  with("c_idx 3", [](HevcTu& t) { t.c_idx = 3; });
  with("log2 size 1", [](HevcTu& t) { t.log2_size = 1; });
  with("log2 size 6", [](HevcTu& t) { t.log2_size = 6; });
  with("negative x", [](HevcTu& t) { t.x = -8; });
  with("negative y", [](HevcTu& t) { t.y = -4; });
  with("levels past the end", [](HevcTu& t) { t.coeff_offset = 1024 + 16 - 63; });
  with("qP 52 at 8 bits", [](HevcTu& t) { t.qp = 52; });
  with("qP 64 at 10 bits", [](HevcTu& t) { t.qp = 64; }, 10, 10);
  with("DST 8x8", [](HevcTu& t) { t.dst = true; });
  with("unknown matrix", [&](HevcTu& t) { t.scaling = foreign.data(); });
  with("matrix of another size", [&](HevcTu& t) { t.scaling = m.m[0][0].data(); });
  with("bit depth 7", [](HevcTu&) {}, 7, 8);
  with("bit depth 17", [](HevcTu&) {}, 8, 17);
  for (const Bad& b : bad) EXPECT_FALSE(run(b.tu, b.bdl, b.bdc).ok()) << b.why;
  HevcPlane no_chroma[3] = {views[0], HevcPlane{}, views[2]};
  HevcTu chroma = good;
  chroma.c_idx = 1;
  EXPECT_FALSE(run(chroma, 8, 8, no_chroma).ok()) << "missing plane";
  EXPECT_TRUE(run(good, 8, 8, no_chroma).ok()) << "a missing plane no TU uses";

  HevcTu outside = good;
  outside.x = 64;
  EXPECT_TRUE(run(outside).ok()) << "a TU outside its plane is skipped";
  outside.x = 8;
  outside.y = 64;
  outside.coeff_offset = 1u << 30;
  EXPECT_TRUE(run(outside).ok()) << "a TU outside its plane is skipped before its levels are checked";
  EXPECT_TRUE(core.run({}, nullptr, 0, HevcScalingMatrices{}, views, 8, 8, stream.get()).ok()) << "empty list";
  CHECK_CUDA(cudaStreamSynchronize(stream.get()));
  std::vector<uint16_t> after(pic.buf[0].size());
  CHECK_CUDA(cudaMemcpy(after.data(), planes[0].get(), after.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  std::vector<uint16_t> expect = pic.buf[0];
  HevcPlane ev = pic.plane(0, expect.data());
  gvc::HevcResidual::run({good}, host_levels.data(), &ev, 8, 8);  // only the good TU (run once above) acted
  EXPECT_TRUE(after == expect) << "refused calls changed the plane";

  // What the CPU ignores: DST on a skipped 8x8, qP and matrix of a bypass TU.
  TuBatch b;
  b.levels = host_levels;
  HevcTu t = good;
  t.dst = true;
  t.transform_skip = true;
  b.tus.push_back(t);
  t = good;
  t.x = 32;
  t.transquant_bypass = true;
  t.qp = 200;
  t.scaling = foreign.data();
  b.tus.push_back(t);
  check_batch(core, stream.get(), pic, b, &m, 8, 8, "ignored fields");
}

// --bench: HevcResidual::run against the CUDA core on a 1080p 4:2:0 8-bit picture tiled with
// 8x8..32x32 luma DCT TUs (their 4x4..16x16 chroma TUs), sparse low-frequency levels, flat
// scaling. CUDA: levels and planes already on the device; with the level upload too.
TEST(HevcItxBench, Picture1080p) {
  if (!bench_mode()) GTEST_SKIP() << "only with --bench";
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  HevcResidualCore core;
  auto rng = rng_for("hevc itx bench");
  const int w = 1920, h = 1080;
  const Picture pic = make_picture(w, h, 8, 8, Pred::Uniform, rng);
  GenParams g;
  g.min_log2 = 3;
  g.dct_only = true;
  TuBatch b;
  Tiler{b, 0, w, h, 8, g, nullptr, rng}.plane();
  const size_t luma_tus = b.tus.size();
  for (size_t i = 0; i < luma_tus; ++i) {
    const HevcTu l = b.tus[i];
    for (int c = 1; c <= 2; ++c) add_tu(b, c, l.x / 2, l.y / 2, l.log2_size - 1, 8, g, nullptr, rng);
  }
  for (HevcTu& tu : b.tus) {
    tu.qp = uint8_t(rand_int(rng, 22, 37));
    fill_levels(b.levels.data() + tu.coeff_offset, tu.log2_size, Levels::Sparse, rng);
  }
  check_batch(core, stream.get(), pic, b, nullptr, 8, 8, "1080p bench picture");
  if (HasFailure()) return;

  std::vector<uint16_t> host[3];
  HevcPlane hv[3];
  DeviceBuffer levels, planes[3];
  HevcPlane dv[3];
  const size_t level_bytes = b.levels.size() * sizeof(int16_t);
  CHECK_OK(levels.reserve(level_bytes));
  CHECK_CUDA(cudaMemcpy(levels.get(), b.levels.data(), level_bytes, cudaMemcpyHostToDevice));
  for (int c = 0; c < 3; ++c) {
    host[c] = pic.buf[c];
    hv[c] = pic.plane(c, host[c].data());
    CHECK_OK(planes[c].reserve(host[c].size() * sizeof(uint16_t)));
    CHECK_CUDA(cudaMemcpy(planes[c].get(), host[c].data(), host[c].size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
    dv[c] = pic.plane(c, planes[c].get<uint16_t>());
  }
  auto median_ms = [](int reps, auto&& fn) {
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      if (!fn()) return -1.0;
      t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  auto gpu = [&](bool upload) {
    if (upload && cudaMemcpyAsync(levels.get(), b.levels.data(), level_bytes, cudaMemcpyHostToDevice,
                                  stream.get()) != cudaSuccess)
      return false;
    return core.run(b.tus, levels.get<int16_t>(), b.levels.size(), HevcScalingMatrices{}, dv, 8, 8, stream.get()).ok() &&
           cudaStreamSynchronize(stream.get()) == cudaSuccess;
  };
  const double tc = median_ms(5, [&] {
    gvc::HevcResidual::run(b.tus, b.levels.data(), hv, 8, 8);
    return true;
  });
  median_ms(3, [&] { return gpu(false); });  // warm-up
  const double tg = median_ms(21, [&] { return gpu(false); });
  const double tgu = median_ms(21, [&] { return gpu(true); });
  ASSERT_GT(tg, 0.0) << "the CUDA run failed";
  std::printf("\ncheckgpu --bench: HEVC dequantisation + inverse transform + add, 1920x1080 4:2:0 8-bit,\n"
              "%zu TUs (luma 8x8..32x32), %.1f MB of levels\n",
              b.tus.size(), double(level_bytes) / 1e6);
  std::printf("%-34s %10s %10s %9s\n", "", "cpu ms", "cuda ms", "ratio");
  std::printf("%-34s %10.2f %10.3f %8.1fx\n", "levels on the device", tc, tg, tc / tg);
  std::printf("%-34s %10.2f %10.3f %8.1fx\n", "levels uploaded (pageable) first", tc, tgu, tc / tgu);
}

}  // namespace
}  // namespace checkgpu
