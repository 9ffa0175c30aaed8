// hevc_loopfilter.cpp (checkgpu): HEVC deblocking and SAO on the GPU against HevcDeblock::run and HevcSao::run, bit for bit
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "checkgpu.h"
#include "common/dsp/hevc_deblock.h"
#include "common/dsp/hevc_sao.h"
#include "gpu/device.h"
#include "gpu/hevc_loopfilter.h"

namespace checkgpu {
namespace {

using gvc::HevcDeblockFrame;
using gvc::HevcPlane;
using gvc::HevcSaoCtb;
using gvc::HevcSaoFrame;
using gvc::cuda::DeviceBuffer;
using gvc::cuda::HevcDeblockCore;
using gvc::cuda::HevcSaoCore;


constexpr int kGuardRows = 4, kGuardCols = 5;  // poisoned samples above, below and left of a plane
constexpr uint16_t kPoison = 0xA5A5;           // no 8..12-bit sample has this value

int rand_int(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
bool percent(std::mt19937_64& rng, int p) { return rand_int(rng, 0, 99) < p; }

// Three 4:2:0 planes of 16-bit samples, each in a poisoned frame: guard rows above and below,
// guard columns on the left, a stride tail of at least 4 samples on the right.
struct Picture {
  std::vector<uint16_t> buf[3];
  int w[3] = {}, h[3] = {}, stride[3] = {};
  HevcPlane plane(int c, uint16_t* base) const {
    return {base + kGuardRows * stride[c] + kGuardCols, stride[c], w[c], h[c]};
  }
};

// "Smooth plus steps": a slow wave over the picture, and per 8x8 block (of the plane) a step
// against its neighbours, a slope and noise, of sizes chosen so that every decision of the
// deblocking filter is taken somewhere; some blocks sit at 0 or the maximum, for the clips.
// The wave spans centre +- amplitude (fractions of the maximum).
Picture make_picture(int w, int h, int bdl, int bdc, std::mt19937_64& rng, double centre = 0.5,
                     double amplitude = 0.3) {
  Picture p;
  for (int c = 0; c < 3; ++c) {
    p.w[c] = c ? (w + 1) / 2 : w;
    p.h[c] = c ? (h + 1) / 2 : h;
    p.stride[c] = kGuardCols + p.w[c] + rand_int(rng, 4, 24);
    p.buf[c].assign(size_t(p.stride[c]) * size_t(p.h[c] + 2 * kGuardRows), kPoison);
    const int bd = c ? bdc : bdl, maxv = (1 << bd) - 1, scale = 1 << (bd - 8);
    const HevcPlane v = p.plane(c, p.buf[c].data());
    const double fx = 0.01 + 0.03 * double(rand_int(rng, 0, 100)) / 100, fy = 0.01 + 0.03 * double(rand_int(rng, 0, 100)) / 100;
    for (int by = 0; by < v.height; by += 8)
      for (int bx = 0; bx < v.width; bx += 8) {
        static const int kSteps[] = {0, 1, 2, 4, 8, 16, 40, 120};
        static const int kNoise[] = {0, 0, 0, 0, 1, 2, 6, 30};
        const int step_max = kSteps[rand_int(rng, 0, 7)] * scale;
        const int step = rand_int(rng, -step_max, step_max);
        const int noise = kNoise[rand_int(rng, 0, 7)] * scale;
        const int sx = percent(rng, 70) ? 0 : rand_int(rng, -2, 2) * scale;
        const int sy = percent(rng, 70) ? 0 : rand_int(rng, -2, 2) * scale;
        const int saturate = percent(rng, 4) ? (rng() & 1 ? 1 : -1) : 0;
        for (int y = by; y < std::min(by + 8, v.height); ++y)
          for (int x = bx; x < std::min(bx + 8, v.width); ++x) {
            const double wave = centre + amplitude * std::sin(fx * x) * std::cos(fy * y);
            int s = int(wave * maxv) + step + sx * (x - bx) + sy * (y - by);
            if (noise) s += rand_int(rng, -noise, noise);
            if (saturate) s = saturate > 0 ? maxv - rand_int(rng, 0, 2) : rand_int(rng, 0, 2);
            v.at(x, y) = uint16_t(std::clamp(s, 0, maxv));
          }
      }
  }
  return p;
}

// Device copies of a picture's buffers (guards included) and their plane views.
struct DevicePicture {
  DeviceBuffer buf[3];
  HevcPlane planes[3];
};

void upload(const Picture& pic, DevicePicture& d) {
  for (int c = 0; c < 3; ++c) {
    const size_t bytes = pic.buf[c].size() * sizeof(uint16_t);
    CHECK_OK(d.buf[c].reserve(bytes));
    CHECK_CUDA(cudaMemcpy(d.buf[c].get(), pic.buf[c].data(), bytes, cudaMemcpyHostToDevice));
    d.planes[c] = pic.plane(c, d.buf[c].get<uint16_t>());
  }
}

void download(const DevicePicture& d, const Picture& pic, std::vector<uint16_t> out[3]) {
  for (int c = 0; c < 3; ++c) {
    out[c].resize(pic.buf[c].size());
    CHECK_CUDA(cudaMemcpy(out[c].data(), d.buf[c].get(), out[c].size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  }
}

// Every sample of the buffers, guards included; the first mismatch of each plane is reported
// with its coordinates in the plane (negative or past the size: a guard) and `where` of it.
template <typename Where>
void compare(const Picture& pic, const std::vector<uint16_t> cpu[3], const std::vector<uint16_t> gpu[3],
             const std::string& what, Where&& where) {
  for (int c = 0; c < 3; ++c) {
    size_t bad = 0;
    for (size_t i = 0; i < cpu[c].size(); ++i) {
      if (cpu[c][i] == gpu[c][i]) continue;
      if (bad++ == 0) {
        const int y = int(i / size_t(pic.stride[c])) - kGuardRows, x = int(i % size_t(pic.stride[c])) - kGuardCols;
        const bool guard = x < 0 || y < 0 || x >= pic.w[c] || y >= pic.h[c];
        ADD_FAILURE() << what << ": plane " << c << ", first mismatch at (" << x << "," << y << ")"
                      << (guard ? " in the guard" : "") << ": cpu " << cpu[c][i] << ", cuda " << gpu[c][i]
                      << ", input " << pic.buf[c][i] << (guard ? std::string() : where(c, x, y));
      }
    }
    EXPECT_EQ(bad, 0u) << what << ": plane " << c << " differs in " << bad << " samples";
  }
}

// ---------------------------------------------------------------------------------------------
// Deblocking

// The per-unit arrays of HevcDeblockFrame, with garbage where the CPU does not look (bS off
// the 8x8 grid, units past the width in the stride).
struct DeblockUnits {
  int width = 0, height = 0, stride = 0;
  std::vector<uint8_t> bs_v, bs_h, no_filter;
  std::vector<int8_t> qp_y, beta, tc;
  int bdl = 8, bdc = 8, cb_qp_offset = 0, cr_qp_offset = 0;

  std::vector<uint8_t> no_edges;  // bS 0 everywhere: bs_h of a vertical-edges-only frame

  HevcDeblockFrame frame(bool horizontal = true) const {
    HevcDeblockFrame f;
    f.width = width;
    f.height = height;
    f.stride = stride;
    f.bs_v = bs_v.data();
    f.bs_h = horizontal ? bs_h.data() : no_edges.data();
    f.qp_y = qp_y.data();
    f.beta_offset_div2 = beta.data();
    f.tc_offset_div2 = tc.data();
    f.no_filter = no_filter.data();
    f.bit_depth_y = bdl;
    f.bit_depth_c = bdc;
    f.cb_qp_offset = cb_qp_offset;
    f.cr_qp_offset = cr_qp_offset;
    return f;
  }
};

struct DeblockGen {
  int bs2_percent = 34, bs1_percent = 33;  // the rest 0
  int qp_lo = 15, qp_hi = 51;              // the usual range (extremes are added)
  int no_filter_percent = 5;
};

DeblockUnits make_units(int w, int h, int bdl, int bdc, const DeblockGen& g, std::mt19937_64& rng) {
  DeblockUnits d;
  d.width = w;
  d.height = h;
  d.bdl = bdl;
  d.bdc = bdc;
  const int w4 = w / 4, h4 = h / 4;
  d.stride = w4 + rand_int(rng, 0, 5);
  const size_t n = size_t(d.stride) * size_t(h4);
  d.bs_v.resize(n);
  d.bs_h.resize(n);
  d.no_filter.resize(n);
  d.qp_y.resize(n);
  d.beta.resize(n);
  d.tc.resize(n);
  d.no_edges.assign(n, 0);
  for (auto& v : d.bs_v) v = uint8_t(rng() % 4);  // garbage off the grid
  for (auto& v : d.bs_h) v = uint8_t(rng() % 4);
  const int qp_min = -6 * (bdl - 8);
  auto bs = [&] {
    const int r = rand_int(rng, 0, 99);
    return uint8_t(r < g.bs2_percent ? 2 : (r < g.bs2_percent + g.bs1_percent ? 1 : 0));
  };
  // QpY and no_filter per 8x8 "coding unit", offsets per 16x16 "slice" (the CPU reads them per unit).
  for (int y4 = 0; y4 < h4; y4 += 2)
    for (int x4 = 0; x4 < d.stride; x4 += 2) {
      const int r = rand_int(rng, 0, 99);
      const int qp = r < 5 ? qp_min : (r < 10 ? 51 : (r < 15 ? rand_int(rng, qp_min, 51) : rand_int(rng, g.qp_lo, g.qp_hi)));
      const bool nf = percent(rng, g.no_filter_percent);
      for (int dy = 0; dy < 2 && y4 + dy < h4; ++dy)
        for (int dx = 0; dx < 2 && x4 + dx < d.stride; ++dx) {
          const size_t u = size_t(y4 + dy) * size_t(d.stride) + size_t(x4 + dx);
          d.qp_y[u] = int8_t(qp);
          d.no_filter[u] = nf ? uint8_t(rand_int(rng, 1, 255)) : 0;  // any nonzero value means true
        }
    }
  for (int y4 = 0; y4 < h4; y4 += 4)
    for (int x4 = 0; x4 < d.stride; x4 += 4) {
      const int8_t b = int8_t(rand_int(rng, -6, 6)), t = int8_t(rand_int(rng, -6, 6));
      for (int dy = 0; dy < 4 && y4 + dy < h4; ++dy)
        for (int dx = 0; dx < 4 && x4 + dx < d.stride; ++dx) {
          const size_t u = size_t(y4 + dy) * size_t(d.stride) + size_t(x4 + dx);
          d.beta[u] = b;
          d.tc[u] = t;
        }
    }
  for (int y4 = 0; y4 < h4; ++y4)
    for (int x4 = 0; x4 < w4; ++x4) {
      const size_t u = size_t(y4) * size_t(d.stride) + size_t(x4);
      if (!(x4 & 1)) d.bs_v[u] = x4 ? bs() : 0;  // the picture boundary is never an edge
      if (!(y4 & 1)) d.bs_h[u] = y4 ? bs() : 0;
    }
  d.cb_qp_offset = rand_int(rng, -12, 12);
  d.cr_qp_offset = rand_int(rng, -12, 12);
  return d;
}

// How often each decision of 8.7.2.5.3-8.7.2.5.7 was taken by the CPU reference, recounted
// here from the same inputs so that the comparison cannot pass without exercising them.
struct DeblockCounts {
  long luma_segments = 0, luma_off = 0, strong = 0, weak = 0, weak_lines = 0, weak_lines_skipped = 0,
       weak_p1 = 0, weak_q1 = 0, side_kept = 0, chroma = 0, chroma_tc0 = 0;
};

// The decisions of one pass on `planes` (its input).
void count_decisions(const HevcDeblockFrame& f, const HevcPlane planes[3], bool vertical, DeblockCounts& n) {
  const uint8_t* bs_arr = vertical ? f.bs_v : f.bs_h;
  const HevcPlane& pl = planes[0];
  for (int y = 0; y < f.height; y += 4)
    for (int x = 0; x < f.width; x += 4) {
      if (vertical ? (x & 7) : (y & 7)) continue;
      const int u = (y >> 2) * f.stride + (x >> 2);
      const int bs = bs_arr[u];
      if (!bs) continue;
      const int up = vertical ? u - 1 : u - f.stride;
      const bool no_p = f.no_filter[up], no_q = f.no_filter[u];
      const int qpl = (f.qp_y[u] + f.qp_y[up] + 1) >> 1;
      const int beta = gvc::kHevcBeta[std::clamp(qpl + 2 * f.beta_offset_div2[u], 0, 51)] << (f.bit_depth_y - 8);
      const int tc = gvc::kHevcTc[std::clamp(qpl + 2 * (bs - 1) + 2 * f.tc_offset_div2[u], 0, 53)] << (f.bit_depth_y - 8);
      // sample i across the edge on line k: p_i = s(k, -1 - i), q_i = s(k, i)
      auto s = [&](int k, int i) { return int(vertical ? pl.at(x + i, y + k) : pl.at(x + k, y + i)); };
      auto P = [&](int k, int i) { return s(k, -1 - i); };
      auto Q = [&](int k, int i) { return s(k, i); };
      ++n.luma_segments;
      const int dp0 = std::abs(P(0, 2) - 2 * P(0, 1) + P(0, 0)), dp3 = std::abs(P(3, 2) - 2 * P(3, 1) + P(3, 0));
      const int dq0 = std::abs(Q(0, 2) - 2 * Q(0, 1) + Q(0, 0)), dq3 = std::abs(Q(3, 2) - 2 * Q(3, 1) + Q(3, 0));
      if ((!tc && !beta) || dp0 + dq0 + dp3 + dq3 >= beta) {
        ++n.luma_off;
      } else {
        auto dsam = [&](int k, int dpq) {
          return 2 * dpq < (beta >> 2) && std::abs(P(k, 3) - P(k, 0)) + std::abs(Q(k, 0) - Q(k, 3)) < (beta >> 3) &&
                 std::abs(P(k, 0) - Q(k, 0)) < ((5 * tc + 1) >> 1);
        };
        n.side_kept += no_p || no_q;
        if (dsam(0, dp0 + dq0) && dsam(3, dp3 + dq3)) {
          ++n.strong;
        } else {
          ++n.weak;
          const int side = (beta + (beta >> 1)) >> 3;
          for (int k = 0; k < 4; ++k) {
            const int delta = (9 * (Q(k, 0) - P(k, 0)) - 3 * (Q(k, 1) - P(k, 1)) + 8) >> 4;
            if (std::abs(delta) >= tc * 10) {
              ++n.weak_lines_skipped;
              continue;
            }
            ++n.weak_lines;
            n.weak_p1 += !no_p && dp0 + dp3 < side;  // dEp: p1 filtered too
            n.weak_q1 += !no_q && dq0 + dq3 < side;
          }
        }
      }
      if (bs == 2 && (vertical ? (x & 15) : (y & 15)) == 0) {
        for (int c = 1; c < 3; ++c) {
          const int qpc = gvc::hevc_chroma_qp(((f.qp_y[u] + f.qp_y[up] + 1) >> 1) + (c == 1 ? f.cb_qp_offset : f.cr_qp_offset));
          const int ctc = gvc::kHevcTc[std::clamp(qpc + 2 + 2 * f.tc_offset_div2[u], 0, 53)];
          ctc ? ++n.chroma : ++n.chroma_tc0;
        }
      }
    }
}

std::string unit_info(const DeblockUnits& d, int c, int x, int y) {
  const int xl = c ? 2 * x : x, yl = c ? 2 * y : y;
  const size_t u = size_t(yl >> 2) * size_t(d.stride) + size_t(xl >> 2);
  std::ostringstream s;
  auto bs = [](bool on_grid, uint8_t v) { return on_grid ? std::to_string(v) : std::string("-"); };
  s << " (luma unit (" << (xl >> 2) * 4 << "," << (yl >> 2) * 4 << "): bS left " << bs(!((xl >> 2) & 1), d.bs_v[u])
    << " top " << bs(!((yl >> 2) & 1), d.bs_h[u]) << ", QpY " << int(d.qp_y[u]) << ", beta/tc offset " << int(d.beta[u]) << "/" << int(d.tc[u])
    << (d.no_filter[u] ? ", no_filter" : "") << ")";
  return s.str();
}

// HevcDeblock::run and the CUDA core on copies of `pic` with frame `f`; `cpu` gets the CPU result.
void check_deblock(HevcDeblockCore& core, cudaStream_t stream, const Picture& pic, const DeblockUnits& d,
                   const HevcDeblockFrame& f, const std::string& what, std::vector<uint16_t> cpu[3]) {
  HevcPlane views[3];
  for (int c = 0; c < 3; ++c) {
    cpu[c] = pic.buf[c];
    views[c] = pic.plane(c, cpu[c].data());
  }
  gvc::HevcDeblock::run(f, views);
  DevicePicture dev;
  upload(pic, dev);
  if (testing::Test::HasFatalFailure()) return;
  CHECK_OK(core.run(f, dev.planes, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<uint16_t> gpu[3];
  download(dev, pic, gpu);
  if (testing::Test::HasFatalFailure()) return;
  compare(pic, cpu, gpu, what, [&](int c, int x, int y) { return unit_info(d, c, x, y); });
}

struct DeblockCase {
  const char* name;
  int w, h, bdl, bdc;
};

class HevcDeblockCheck : public testing::TestWithParam<DeblockCase> {};

// Random pictures of smooth areas and steps, random bS on the 8x8 grid, QpY over the whole
// range with its extremes, random offsets and no_filter units; each round is checked after the
// vertical edges alone and after both passes. Every decision path must have been taken.
TEST_P(HevcDeblockCheck, MatchesCpu) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  const DeblockCase& c = GetParam();
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  HevcDeblockCore core;  // one core for every round: its buffers are reused
  auto rng = rng_for(std::string("hevc deblock ") + c.name);
  DeblockCounts n;
  for (int round = 0; round < 4; ++round) {
    DeblockGen g;
    if (round == 1) g.bs2_percent = 80;                      // mostly intra: chroma everywhere
    if (round == 2) g.qp_lo = 30, g.no_filter_percent = 20;  // strong filters, many kept sides
    if (round == 3) g.qp_lo = 0, g.qp_hi = 30;               // tC 0 and small tC
    const Picture pic = make_picture(c.w, c.h, c.bdl, c.bdc, rng);
    const DeblockUnits d = make_units(c.w, c.h, c.bdl, c.bdc, g, rng);
    const std::string what = std::string(c.name) + " round " + std::to_string(round);
    std::vector<uint16_t> cpu_v[3], cpu[3];
    check_deblock(core, stream.get(), pic, d, d.frame(false), what + ", vertical edges only", cpu_v);
    if (HasFailure()) return;
    check_deblock(core, stream.get(), pic, d, d.frame(), what, cpu);
    if (HasFailure()) return;
    HevcPlane in[3], mid[3];
    std::vector<uint16_t> src[3] = {pic.buf[0], pic.buf[1], pic.buf[2]};
    for (int k = 0; k < 3; ++k) {
      in[k] = pic.plane(k, src[k].data());
      mid[k] = pic.plane(k, cpu_v[k].data());
    }
    count_decisions(d.frame(), in, true, n);
    count_decisions(d.frame(), mid, false, n);
    size_t changed = 0;
    for (int k = 0; k < 3; ++k)
      for (size_t i = 0; i < cpu[k].size(); ++i) changed += cpu[k][i] != pic.buf[k][i];
    EXPECT_GT(changed, 0u) << what << ": deblocking changed nothing";
  }
  std::printf("  segments %ld: off %ld, strong %ld, weak %ld (lines %ld, skipped %ld, p1 %ld, q1 %ld), "
              "a side kept %ld; chroma %ld, chroma tC 0 %ld\n",
              n.luma_segments, n.luma_off, n.strong, n.weak, n.weak_lines, n.weak_lines_skipped, n.weak_p1,
              n.weak_q1, n.side_kept, n.chroma, n.chroma_tc0);
  EXPECT_GT(n.luma_off, 0) << "no segment left unfiltered (d >= beta)";
  EXPECT_GT(n.strong, 0) << "no strong filter";
  EXPECT_GT(n.weak_lines, 0) << "no weak filter";
  EXPECT_GT(n.weak_lines_skipped, 0) << "no weak line skipped (|delta| >= 10 tC)";
  EXPECT_GT(n.weak_p1, 0) << "no weak filter of p1 (dEp)";
  EXPECT_GT(n.weak_q1, 0) << "no weak filter of q1 (dEq)";
  EXPECT_GT(n.side_kept, 0) << "no filtered edge with a no_filter side";
  EXPECT_GT(n.chroma, 0) << "no chroma filter";
  EXPECT_GT(n.chroma_tc0, 0) << "no chroma edge with tC 0";
}

std::vector<DeblockCase> deblock_cases() {
  return {
      {"416x240_8bit", 416, 240, 8, 8},
      {"416x240_10bit", 416, 240, 10, 10},
      // 1366x768 as coded: pic_width_in_luma_samples is a multiple of MinCbSizeY.
      {"1368x768_8bit", 1368, 768, 8, 8},
      // Not multiples of 8 (the interface takes multiples of 4): edges up to the last unit.
      {"420x236_10bit", 420, 236, 10, 10},
      {"200x136_8bit_luma_10bit_chroma", 200, 136, 8, 10},
      {"64x64_8bit", 64, 64, 8, 8},
  };
}

INSTANTIATE_TEST_SUITE_P(Hevc, HevcDeblockCheck, testing::ValuesIn(deblock_cases()),
                         [](const testing::TestParamInfo<DeblockCase>& i) { return std::string(i.param.name); });

// ---------------------------------------------------------------------------------------------
// SAO

struct SaoSetup {
  std::vector<HevcSaoCtb> ctbs;
  std::vector<uint8_t> enabled, no_filter, cross_ok;
  HevcSaoFrame frame;
};

struct SaoGen {
  int enabled_percent = 85, cross_percent = 70, no_filter_percent = 5;
};

// Random SAO of every type, class and band position (28..31 wrap around), offsets within the
// ranges of 7.4.9.3.2 with their extremes often. `wrap`: the first CTB's luma has band offset
// at band 30 or 31 with the largest offsets (for a dark picture, a wrap that surely shows).
SaoSetup make_sao(int w, int h, int log2_ctb, const int bd[3], const SaoGen& g, std::mt19937_64& rng,
                  bool wrap = false) {
  SaoSetup s;
  HevcSaoFrame& f = s.frame;
  f.log2_ctb_size = log2_ctb;
  const int ctb = 1 << log2_ctb;
  f.width_ctbs = (w + ctb - 1) / ctb;
  f.height_ctbs = (h + ctb - 1) / ctb;
  const int n = f.width_ctbs * f.height_ctbs;
  s.ctbs.resize(size_t(n));
  s.enabled.resize(size_t(n) * 3);
  s.cross_ok.resize(size_t(n) * 9);
  for (int i = 0; i < n; ++i) {
    HevcSaoCtb& t = s.ctbs[size_t(i)];
    for (int c = 0; c < 3; ++c) {
      s.enabled[size_t(i) * 3 + size_t(c)] = percent(rng, g.enabled_percent);
      t.type_idx[c] = uint8_t(rand_int(rng, 0, 6) < 1 ? 0 : (rng() % 5 < 2 ? 1 : 2));
      t.band_position[c] = uint8_t(percent(rng, 20) ? rand_int(rng, 28, 31) : rand_int(rng, 0, 31));
      t.eo_class[c] = uint8_t(rng() % 4);
      const int lim = (1 << (std::min(bd[c], 10) - 5)) - 1;
      auto mag = [&] { return percent(rng, 30) ? lim : rand_int(rng, 0, lim); };
      t.offset_val[c][0] = 0;
      for (int k = 1; k <= 4; ++k) {
        if (t.type_idx[c] == 1)
          t.offset_val[c][k] = int16_t(rng() & 1 ? mag() : -mag());
        else
          t.offset_val[c][k] = int16_t(k <= 2 ? mag() : -mag());  // 7.4.9.3.2: positive for edgeIdx 1, 2
      }
    }
    for (int k = 0; k < 9; ++k) s.cross_ok[size_t(i) * 9 + size_t(k)] = percent(rng, g.cross_percent);
  }
  if (wrap) {
    const int lim = (1 << (std::min(bd[0], 10) - 5)) - 1;
    s.enabled[0] = 1;
    s.ctbs[0].type_idx[0] = 1;
    s.ctbs[0].band_position[0] = uint8_t(rand_int(rng, 30, 31));
    for (int k = 1; k <= 4; ++k) s.ctbs[0].offset_val[0][k] = int16_t(k & 1 ? lim : -lim);
  }
  f.no_filter_stride = (w + 3) / 4 + rand_int(rng, 0, 3);
  const int rows = (h + 3) / 4;
  s.no_filter.resize(size_t(f.no_filter_stride) * size_t(rows));
  for (int y4 = 0; y4 < rows; y4 += 2)
    for (int x4 = 0; x4 < f.no_filter_stride; x4 += 2) {
      const uint8_t v = percent(rng, g.no_filter_percent) ? 1 : 0;
      for (int dy = 0; dy < 2 && y4 + dy < rows; ++dy)
        for (int dx = 0; dx < 2 && x4 + dx < f.no_filter_stride; ++dx)
          s.no_filter[size_t(y4 + dy) * size_t(f.no_filter_stride) + size_t(x4 + dx)] = v;
    }
  f.ctbs = s.ctbs.data();
  f.enabled = s.enabled.data();
  f.no_filter = s.no_filter.data();
  f.cross_ok = s.cross_ok.data();
  for (int c = 0; c < 3; ++c) f.bit_depth[c] = bd[c];
  return s;
}

std::string ctb_info(const HevcSaoFrame& f, int c, int x, int y) {
  const int log2 = f.log2_ctb_size - (c ? 1 : 0);
  const int rx = x >> log2, ry = y >> log2, i = ry * f.width_ctbs + rx;
  if (rx >= f.width_ctbs || ry >= f.height_ctbs) return " (no CTB)";
  const HevcSaoCtb& t = f.ctbs[i];
  std::ostringstream s;
  s << " (CTB (" << rx << "," << ry << ") " << (f.enabled[i * 3 + c] ? "" : "disabled ") << "type " << int(t.type_idx[c])
    << (t.type_idx[c] == 1 ? " band " + std::to_string(t.band_position[c]) : " class " + std::to_string(t.eo_class[c]))
    << ", offsets " << t.offset_val[c][1] << " " << t.offset_val[c][2] << " " << t.offset_val[c][3] << " "
    << t.offset_val[c][4] << ")";
  return s.str();
}

// Samples SAO changed in the CPU result, by SaoTypeIdx 1 and by SaoEoClass.
struct SaoCounts {
  long band = 0, band_wrap = 0, eo[4] = {}, clipped = 0;
};

void count_sao(const HevcSaoFrame& f, const Picture& pic, const std::vector<uint16_t> cpu[3], SaoCounts& n) {
  for (int c = 0; c < 3; ++c) {
    const HevcPlane in = pic.plane(c, const_cast<uint16_t*>(pic.buf[c].data()));
    const HevcPlane out = pic.plane(c, const_cast<uint16_t*>(cpu[c].data()));
    const int log2 = f.log2_ctb_size - (c ? 1 : 0), maxv = (1 << f.bit_depth[c]) - 1;
    for (int y = 0; y < in.height; ++y)
      for (int x = 0; x < in.width; ++x) {
        if (in.at(x, y) == out.at(x, y)) continue;
        const HevcSaoCtb& t = f.ctbs[(y >> log2) * f.width_ctbs + (x >> log2)];
        if (t.type_idx[c] == 1) {
          ++n.band;
          n.band_wrap += t.band_position[c] >= 29 && (in.at(x, y) >> (f.bit_depth[c] - 5)) < 3;
        } else {
          ++n.eo[t.eo_class[c]];
        }
        n.clipped += out.at(x, y) == 0 || out.at(x, y) == maxv;
      }
  }
}

struct SaoCase {
  const char* name;
  int w, h, bdl, bdc;
};

class HevcSaoCheck : public testing::TestWithParam<SaoCase> {};

// Random per-CTB SAO over pictures of smooth areas, steps and noise, CTB sizes 16, 32 and 64,
// random enabled flags, no_filter units and cross_ok neighbours.
TEST_P(HevcSaoCheck, MatchesCpu) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  const SaoCase& c = GetParam();
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  HevcSaoCore core;
  auto rng = rng_for(std::string("hevc sao ") + c.name);
  const int bd[3] = {c.bdl, c.bdc, c.bdc};
  SaoCounts n;
  for (int log2_ctb = 4; log2_ctb <= 6; ++log2_ctb)
    for (int round = 0; round < 2; ++round) {
      SaoGen g;
      if (round == 1) g.enabled_percent = 100, g.cross_percent = 30, g.no_filter_percent = 20;
      // round 1: a dark picture, where band offsets wrap past band 31
      const Picture pic = round == 1 ? make_picture(c.w, c.h, c.bdl, c.bdc, rng, 0.05, 0.04)
                                     : make_picture(c.w, c.h, c.bdl, c.bdc, rng);
      const SaoSetup s = make_sao(c.w, c.h, log2_ctb, bd, g, rng, round == 1);
      const std::string what = std::string(c.name) + " CTB " + std::to_string(1 << log2_ctb) + " round " +
                               std::to_string(round);
      std::vector<uint16_t> cpu[3], gpu[3];
      HevcPlane src[3], dst[3];
      for (int k = 0; k < 3; ++k) {
        cpu[k] = pic.buf[k];
        src[k] = pic.plane(k, const_cast<uint16_t*>(pic.buf[k].data()));
        dst[k] = pic.plane(k, cpu[k].data());
      }
      gvc::HevcSao::run(s.frame, src, dst);
      DevicePicture dev;
      upload(pic, dev);
      if (HasFatalFailure()) return;
      CHECK_OK(core.run(s.frame, dev.planes, stream.get()));
      CHECK_CUDA(cudaStreamSynchronize(stream.get()));
      download(dev, pic, gpu);
      if (HasFatalFailure()) return;
      compare(pic, cpu, gpu, what, [&](int k, int x, int y) { return ctb_info(s.frame, k, x, y); });
      if (HasFailure()) return;
      count_sao(s.frame, pic, cpu, n);
    }
  std::printf("  changed samples: band %ld (wrapping %ld), edge classes %ld %ld %ld %ld, at 0 or the maximum %ld\n",
              n.band, n.band_wrap, n.eo[0], n.eo[1], n.eo[2], n.eo[3], n.clipped);
  EXPECT_GT(n.band, 0) << "band offset changed nothing";
  EXPECT_GT(n.band_wrap, 0) << "no band offset wrapping past band 31";
  for (int k = 0; k < 4; ++k) EXPECT_GT(n.eo[k], 0) << "edge offset class " << k << " changed nothing";
  EXPECT_GT(n.clipped, 0) << "no result at 0 or the maximum";
}

std::vector<SaoCase> sao_cases() {
  return {
      {"416x240_8bit", 416, 240, 8, 8},
      {"416x240_10bit", 416, 240, 10, 10},
      {"1366x768_8bit", 1366, 768, 8, 8},
      // Odd sizes: partial CTBs, chroma planes of (w + 1) / 2.
      {"203x139_10bit_luma_8bit_chroma", 203, 139, 10, 8},
      {"64x64_10bit", 64, 64, 10, 10},
  };
}

INSTANTIATE_TEST_SUITE_P(Hevc, HevcSaoCheck, testing::ValuesIn(sao_cases()),
                         [](const testing::TestParamInfo<SaoCase>& i) { return std::string(i.param.name); });

// What the CPU has no answer for is refused before anything is queued; a frame with nothing
// to do is accepted and changes nothing.
TEST(HevcLoopFilter, RejectsBadArgumentsAndAcceptsEmptyWork) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  auto rng = rng_for("hevc loop filter rejects");
  const Picture pic = make_picture(64, 64, 8, 8, rng);
  DevicePicture dev;
  upload(pic, dev);
  if (HasFatalFailure()) return;

  HevcDeblockCore deblock;
  DeblockUnits d = make_units(64, 64, 8, 8, DeblockGen{}, rng);
  auto with = [&](auto change) {
    HevcDeblockFrame f = d.frame();
    change(f);
    return deblock.run(f, dev.planes, stream.get()).ok();
  };
  EXPECT_FALSE(with([](HevcDeblockFrame& f) { f.width = 62; })) << "width not a multiple of 4";
  EXPECT_FALSE(with([](HevcDeblockFrame& f) { f.height = 66; })) << "height not a multiple of 4";
  EXPECT_FALSE(with([](HevcDeblockFrame& f) { f.width = 128; })) << "picture larger than the planes";
  EXPECT_FALSE(with([](HevcDeblockFrame& f) { f.stride = 15; })) << "unit stride below width / 4";
  EXPECT_FALSE(with([](HevcDeblockFrame& f) { f.qp_y = nullptr; })) << "missing array";
  EXPECT_FALSE(with([](HevcDeblockFrame& f) { f.bit_depth_y = 7; })) << "bit depth 7";
  DeblockUnits none = d;
  for (int y4 = 0; y4 < 16; ++y4)
    for (int x4 = 0; x4 < 16; x4 += 2) {
      none.bs_v[size_t(y4) * size_t(none.stride) + size_t(x4)] = 0;
      if (!(y4 & 1))
        for (int k = 0; k < 16; ++k) none.bs_h[size_t(y4) * size_t(none.stride) + size_t(k)] = 0;
    }
  EXPECT_TRUE(deblock.run(none.frame(), dev.planes, stream.get()).ok()) << "no edges (garbage off the grid)";

  HevcSaoCore sao;
  const int bd[3] = {8, 8, 8};
  SaoSetup s = make_sao(64, 64, 4, bd, SaoGen{}, rng);
  auto sao_with = [&](auto change) {
    SaoSetup t = s;
    t.frame.ctbs = t.ctbs.data();
    t.frame.enabled = t.enabled.data();
    t.frame.no_filter = t.no_filter.data();
    t.frame.cross_ok = t.cross_ok.data();
    change(t);
    return sao.run(t.frame, dev.planes, stream.get()).ok();
  };
  EXPECT_FALSE(sao_with([](SaoSetup& t) { t.frame.log2_ctb_size = 3; })) << "log2 CTB size 3";
  EXPECT_FALSE(sao_with([](SaoSetup& t) {
    for (auto& e : t.enabled) e = 1;
    t.ctbs[3].type_idx[0] = 2;
    t.ctbs[3].eo_class[0] = 4;
  })) << "SaoEoClass 4";
  EXPECT_FALSE(sao_with([](SaoSetup& t) {
    for (auto& e : t.enabled) e = 1;
    t.ctbs[5].type_idx[1] = 3;
  })) << "SaoTypeIdx 3";
  EXPECT_FALSE(sao_with([](SaoSetup& t) { t.frame.no_filter_stride = 15; })) << "no_filter stride below width / 4";
  EXPECT_FALSE(sao_with([](SaoSetup& t) { t.frame.bit_depth[2] = 17; })) << "bit depth 17";
  EXPECT_TRUE(sao_with([](SaoSetup& t) {
    for (auto& e : t.enabled) e = 0;
    t.ctbs[3].eo_class[0] = 9;  // not read: SAO is off
  })) << "SAO off everywhere";
  CHECK_CUDA(cudaStreamSynchronize(stream.get()));
  std::vector<uint16_t> after[3];
  download(dev, pic, after);
  for (int c = 0; c < 3; ++c) EXPECT_TRUE(after[c] == pic.buf[c]) << "plane " << c << " changed";
}

// --bench: HevcDeblock::run and HevcSao::run against the CUDA cores on a 1920x1080 4:2:0 8-bit
// picture: bS as an inter picture has it (8x8 grid, a third each of 0, 1, 2), QpY 22..37, SAO
// on every 64x64 CTB of every type. CUDA times are cudaEvent intervals around run(), so they
// include packing and uploading the per-unit and per-CTB arrays (and SAO's device copy).
TEST(HevcLoopFilterBench, Picture1080p) {
  if (!bench_mode()) GTEST_SKIP() << "only with --bench";
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  auto rng = rng_for("hevc loop filter bench");
  const int w = 1920, h = 1080;
  const Picture pic = make_picture(w, h, 8, 8, rng);
  DeblockGen g;
  g.qp_lo = 22;
  g.qp_hi = 37;
  g.no_filter_percent = 0;
  const DeblockUnits d = make_units(w, h, 8, 8, g, rng);
  const int bd[3] = {8, 8, 8};
  SaoGen sg;
  sg.enabled_percent = 100;
  sg.no_filter_percent = 0;
  const SaoSetup s = make_sao(w, h, 6, bd, sg, rng);

  std::vector<uint16_t> host[3];
  HevcPlane hv[3], hsrc[3];
  std::vector<uint16_t> src_copy[3];
  for (int c = 0; c < 3; ++c) {
    host[c] = pic.buf[c];
    src_copy[c] = pic.buf[c];
    hv[c] = pic.plane(c, host[c].data());
    hsrc[c] = pic.plane(c, src_copy[c].data());
  }
  DevicePicture dev;
  upload(pic, dev);
  if (HasFatalFailure()) return;
  HevcDeblockCore deblock;
  HevcSaoCore sao;
  const HevcDeblockFrame df = d.frame();

  auto median = [](std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  auto cpu_ms = [&](auto&& fn) {
    std::vector<double> t;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      fn();
      t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return median(t);
  };
  const double cpu_deblock = cpu_ms([&] { gvc::HevcDeblock::run(df, hv); });
  // SAO as the decoder runs it: the copy of the deblocked picture, then SAO into the picture.
  const double cpu_sao = cpu_ms([&] {
    for (int c = 0; c < 3; ++c) src_copy[c] = host[c];
    gvc::HevcSao::run(s.frame, hsrc, hv);
  });

  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  // `out`: cudaEvent interval around run(); `host`: how long run() itself took on the CPU.
  auto gpu_ms = [&](auto&& fn, double& out, double& host) {
    std::vector<double> t, th;
    for (int i = 0; i < 25; ++i) {
      CHECK_CUDA(cudaEventRecord(e0, stream.get()));
      const auto t0 = std::chrono::steady_clock::now();
      CHECK_OK(fn());
      const auto t1 = std::chrono::steady_clock::now();
      CHECK_CUDA(cudaEventRecord(e1, stream.get()));
      CHECK_CUDA(cudaEventSynchronize(e1));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
      if (i < 3) continue;  // the first runs allocate and warm up
      t.push_back(ms);
      th.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    out = median(t);
    host = median(th);
  };
  double gpu_deblock = 0, gpu_sao = 0, host_deblock = 0, host_sao = 0;
  gpu_ms([&] { return deblock.run(df, dev.planes, stream.get()); }, gpu_deblock, host_deblock);
  if (HasFatalFailure()) return;
  gpu_ms([&] { return sao.run(s.frame, dev.planes, stream.get()); }, gpu_sao, host_sao);
  if (HasFatalFailure()) return;
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::printf("\ncheckgpu --bench: HEVC in-loop filters, 1920x1080 4:2:0 8-bit, ms per picture (median)\n");
  std::printf("%-34s %10s %10s %9s %14s\n", "", "cpu ms", "cuda ms", "speed-up", "run() host ms");
  std::printf("%-34s %10.2f %10.3f %8.1fx %14.3f\n", "deblocking (arrays uploaded)", cpu_deblock, gpu_deblock,
              cpu_deblock / gpu_deblock, host_deblock);
  std::printf("%-34s %10.2f %10.3f %8.1fx %14.3f\n", "SAO, CTB 64 (copy included)", cpu_sao, gpu_sao,
              cpu_sao / gpu_sao, host_sao);
}

}  // namespace
}  // namespace checkgpu
