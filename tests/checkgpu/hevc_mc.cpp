// hevc_mc.cpp (checkgpu): HEVC inter sample prediction on the GPU against HevcMc::run, bit for bit
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "checkgpu.h"
#include "common/dsp/hevc_mc.h"
#include "gpu/device.h"
#include "gpu/hevc_mc.h"

namespace checkgpu {
namespace {

using gvc::HevcMcBatch;
using gvc::HevcMcPb;
using gvc::HevcPlane;
using gvc::cuda::DeviceBuffer;
using gvc::cuda::HevcMcCore;


constexpr int kGuardRows = 3, kGuardCols = 5;  // poisoned samples above, below and left of a plane
constexpr uint16_t kPoison = 0xA5A5;           // no 8..12-bit sample has this value

int rand_int(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
bool percent(std::mt19937_64& rng, int p) { return rand_int(rng, 0, 99) < p; }

// Three 4:2:0 planes of 16-bit samples, each in a poisoned frame: guard rows above and below,
// guard columns on the left, a stride tail on the right.
struct Picture {
  std::vector<uint16_t> buf[3];
  int w[3] = {}, h[3] = {}, stride[3] = {};
  HevcPlane plane(int c, uint16_t* base) const {
    return {base + kGuardRows * stride[c] + kGuardCols, stride[c], w[c], h[c]};
  }
  HevcPlane plane(int c) { return plane(c, buf[c].data()); }
};

// Uniform: any sample value. Extremes: mostly 0 and the maximum, so that the filters reach the
// ends of their ranges. Smooth: slopes and waves with a little noise. Real: the Elephants
// painting (its luma; the chroma planes from its 2x2 means, offset differently).
enum class Content { Uniform, Extremes, Smooth, Real };

Picture make_frame(int w, int h, std::mt19937_64& rng) {
  Picture p;
  for (int c = 0; c < 3; ++c) {
    p.w[c] = c ? (w + 1) / 2 : w;
    p.h[c] = c ? (h + 1) / 2 : h;
    p.stride[c] = kGuardCols + p.w[c] + rand_int(rng, 0, 24);
    p.buf[c].assign(size_t(p.stride[c]) * size_t(p.h[c] + 2 * kGuardRows), kPoison);
  }
  return p;
}

// A reference picture; (ex, ey) picks the part of the painting for Content::Real.
Picture make_ref(int w, int h, int bdl, int bdc, Content content, std::mt19937_64& rng) {
  Picture p = make_frame(w, h, rng);
  const Plane& e = elephants();
  const int ex = rand_int(rng, 0, std::max(0, e.width - 2 * w - 2)), ey = rand_int(rng, 0, std::max(0, e.height - 2 * h - 2));
  for (int c = 0; c < 3; ++c) {
    const int bd = c ? bdc : bdl, maxv = (1 << bd) - 1;
    const HevcPlane v = p.plane(c);
    const int phase = rand_int(rng, 0, 99);
    for (int y = 0; y < v.height; ++y)
      for (int x = 0; x < v.width; ++x) {
        int s = 0;
        switch (content) {
          case Content::Uniform: s = rand_int(rng, 0, maxv); break;
          case Content::Extremes: s = rng() % 8 ? (rng() & 1 ? maxv : 0) : rand_int(rng, 0, maxv); break;
          case Content::Smooth:
            s = ((x * (3 + c) + y * 5 + phase) * 7 % 512 + ((x / 16 + y / 16) % 2) * 200 + rand_int(rng, 0, 15)) *
                (maxv + 1) / 1024;
            break;
          case Content::Real: {
            int v8;
            if (c == 0) {
              v8 = e.pix[size_t(ey + y) * e.stride + ex + x];
            } else {
              const size_t at = size_t(ey + 2 * y + c - 1) * e.stride + ex + 2 * x;
              v8 = (e.pix[at] + e.pix[at + 1] + e.pix[at + e.stride] + e.pix[at + e.stride + 1] + 2) / 4;
            }
            s = (v8 << (bd - 8)) | rand_int(rng, 0, (1 << (bd - 8)) - 1);
            break;
          }
        }
        v.at(x, y) = uint16_t(std::min(s, maxv));
      }
  }
  return p;
}

// A destination: random samples (those no PB covers must stay) inside the poisoned frame.
Picture make_dst(int w, int h, int bdl, int bdc, std::mt19937_64& rng) {
  Picture p = make_frame(w, h, rng);
  for (int c = 0; c < 3; ++c) {
    const int maxv = (1 << (c ? bdc : bdl)) - 1;
    const HevcPlane v = p.plane(c);
    for (int y = 0; y < v.height; ++y)
      for (int x = 0; x < v.width; ++x) v.at(x, y) = uint16_t(rand_int(rng, 0, maxv));
  }
  return p;
}

struct GenParams {
  int n_refs = 4;
  int min_log2 = 3;          // CU sizes 8..64
  int split_percent = 50;
  bool all_partitions = true;  // 2NxN, Nx2N, 8x4 / 4x8 and AMP besides 2Nx2N
  int bi_percent = 40;
  int weighted_percent = 0;
  int intra_percent = 5;   // PBs without a prediction list (the CPU skips them)
  int far_percent = 25;    // motion far outside the picture, up to +-2^15 quarter samples
  int mv_range = 64;       // otherwise +-mv_range quarter samples
};

// One MV component: small, anywhere over the picture, far outside it, or near +-2^15; then often
// full-sample in luma (and in chroma), so that each of the four filter cases shows.
int16_t rand_mv(int extent, const GenParams& g, std::mt19937_64& rng) {
  int v;
  const int r = rand_int(rng, 0, 99);
  if (r >= g.far_percent) {
    v = rand_int(rng, -g.mv_range, g.mv_range);
  } else if (r < g.far_percent / 3) {
    v = rng() & 1 ? rand_int(rng, -32768, -32000) : rand_int(rng, 32000, 32767);
  } else {
    const int out = 4 * extent + rand_int(rng, 0, 4096);
    v = rng() & 1 ? -out : out;
  }
  switch (rng() % 4) {
    case 0: v &= ~7; break;  // full-sample in luma and chroma
    case 1: v &= ~3; break;  // full-sample in luma, half-sample in chroma
    default: break;
  }
  return int16_t(std::clamp(v, -32768, 32767));
}

void add_pb(std::vector<HevcMcPb>& out, int x, int y, int w, int h, int pic_w, int pic_h, const GenParams& g,
            std::mt19937_64& rng) {
  HevcMcPb pb;
  pb.x = x;
  pb.y = y;
  pb.w = w;
  pb.h = h;
  if (!percent(rng, g.intra_percent)) {
    if (percent(rng, g.bi_percent))
      pb.pred_flag[0] = pb.pred_flag[1] = 1;
    else
      pb.pred_flag[rng() & 1] = 1;
  }
  for (int l = 0; l < 2; ++l) {
    pb.ref[l] = uint8_t(rand_int(rng, 0, g.n_refs - 1));
    pb.mv[l][0] = rand_mv(pic_w, g, rng);
    pb.mv[l][1] = rand_mv(pic_h, g, rng);
  }
  pb.weighted = percent(rng, g.weighted_percent);
  if (pb.weighted) {
    // 7.4.7.3: denominators 0..7, weights 2^denominator + (-128..127), offsets -128..127 (a
    // different chroma denominator per component, which the decoder never sends, catches a
    // component mix-up)
    for (int c = 0; c < 3; ++c) pb.log2_wd_base[c] = uint8_t(rand_int(rng, 0, 7));
    for (int l = 0; l < 2; ++l)
      for (int c = 0; c < 3; ++c) {
        const int one = 1 << pb.log2_wd_base[c];
        pb.weight[l][c] = int16_t(rng() % 4 ? one + rand_int(rng, -16, 16) : one + rand_int(rng, -128, 127));
        pb.offset[l][c] = int16_t(rng() % 4 ? rand_int(rng, -20, 20) : rand_int(rng, -128, 127));
      }
  }
  out.push_back(pb);
}

// Random coding quadtrees over the 64x64 CTBs of the picture, each CU cut into PBs by a random
// PartMode (8.4: 2NxN / Nx2N down to 8x4 / 4x8, AMP from 16x16). CUs crossing the right or
// bottom edge are split down to 8x8 (7.3.8.4), and an 8x8 CU still crossing is kept: its
// samples outside the picture must not be written.
struct Tiler {
  std::vector<HevcMcPb>& out;
  int w, h;
  const GenParams& g;
  std::mt19937_64& rng;

  void pbs(int x, int y, int n) {
    int mode = g.all_partitions ? rand_int(rng, 0, n >= 16 ? 7 : 2) : 0;
    auto pb = [&](int px, int py, int pw, int ph) { add_pb(out, x + px, y + py, pw, ph, w, h, g, rng); };
    const int q = n / 4;
    switch (mode) {
      case 0: pb(0, 0, n, n); break;                                    // PART_2Nx2N
      case 1: pb(0, 0, n, n / 2), pb(0, n / 2, n, n / 2); break;        // PART_2NxN
      case 2: pb(0, 0, n / 2, n), pb(n / 2, 0, n / 2, n); break;        // PART_Nx2N
      case 3: pb(0, 0, n, q), pb(0, q, n, n - q); break;                // PART_2NxnU
      case 4: pb(0, 0, n, n - q), pb(0, n - q, n, q); break;            // PART_2NxnD
      case 5: pb(0, 0, q, n), pb(q, 0, n - q, n); break;                // PART_nLx2N
      case 6: pb(0, 0, n - q, n), pb(n - q, 0, q, n); break;            // PART_nRx2N
      default:                                                          // PART_NxN
        for (int i = 0; i < 4; ++i) pb((i & 1) * n / 2, (i >> 1) * n / 2, n / 2, n / 2);
        break;
    }
  }
  void cu(int x, int y, int log2_size) {
    if (x >= w || y >= h) return;
    const int n = 1 << log2_size;
    const bool crosses = x + n > w || y + n > h;
    if (log2_size > g.min_log2 && (crosses || percent(rng, g.split_percent))) {
      for (int i = 0; i < 4; ++i) cu(x + (i & 1) * n / 2, y + (i >> 1) * n / 2, log2_size - 1);
      return;
    }
    pbs(x, y, n);
  }
  void picture() {
    for (int y = 0; y < h; y += 64)
      for (int x = 0; x < w; x += 64) cu(x, y, 6);
  }
};

std::vector<HevcMcPb> make_pbs(int w, int h, const GenParams& g, std::mt19937_64& rng) {
  std::vector<HevcMcPb> pbs;
  Tiler{pbs, w, h, g, rng}.picture();
  std::shuffle(pbs.begin(), pbs.end(), rng);  // the order must not matter
  return pbs;
}

std::string describe(const HevcMcPb& pb, int index) {
  std::ostringstream s;
  s << pb.w << "x" << pb.h << " PB #" << index << " at (" << pb.x << "," << pb.y << ")";
  for (int l = 0; l < 2; ++l)
    if (pb.pred_flag[l]) s << " L" << l << " ref " << int(pb.ref[l]) << " mv (" << pb.mv[l][0] << "," << pb.mv[l][1] << ")";
  if (pb.weighted) {
    s << " weighted, denominators " << int(pb.log2_wd_base[0]) << "/" << int(pb.log2_wd_base[1]) << "/"
      << int(pb.log2_wd_base[2]);
    for (int l = 0; l < 2; ++l)
      if (pb.pred_flag[l])
        s << ", L" << l << " weights " << pb.weight[l][0] << "/" << pb.weight[l][1] << "/" << pb.weight[l][2]
          << " offsets " << pb.offset[l][0] << "/" << pb.offset[l][1] << "/" << pb.offset[l][2];
  }
  return s.str();
}

// Where buffer sample i of plane c lies: a guard, or a sample of a PB.
std::string where(const Picture& pic, int c, size_t i, const std::vector<HevcMcPb>& pbs) {
  const int row = int(i / size_t(pic.stride[c])) - kGuardRows, col = int(i % size_t(pic.stride[c])) - kGuardCols;
  std::ostringstream s;
  s << "(" << col << "," << row << ")";
  if (col < 0 || row < 0 || col >= pic.w[c] || row >= pic.h[c]) return s.str() + " in the guard";
  const int sh = c ? 1 : 0;
  for (size_t n = 0; n < pbs.size(); ++n) {
    const HevcMcPb& pb = pbs[n];
    if (col >= pb.x >> sh && col < (pb.x >> sh) + (pb.w >> sh) && row >= pb.y >> sh && row < (pb.y >> sh) + (pb.h >> sh))
      return s.str() + " of the " + describe(pb, int(n));
  }
  return s.str() + " of no PB";
}

// A picture's planes copied to the device (guards included).
struct DevPicture {
  DeviceBuffer buf[3];
  HevcPlane view[3];
};

void upload(const Picture& p, DevPicture& d) {
  for (int c = 0; c < 3; ++c) {
    const size_t bytes = p.buf[c].size() * sizeof(uint16_t);
    CHECK_OK(d.buf[c].reserve(bytes));
    CHECK_CUDA(cudaMemcpy(d.buf[c].get(), p.buf[c].data(), bytes, cudaMemcpyHostToDevice));
    d.view[c] = p.plane(c, d.buf[c].get<uint16_t>());
  }
}

void download(const DevPicture& d, const Picture& like, std::vector<uint16_t> out[3]) {
  for (int c = 0; c < 3; ++c) {
    out[c].resize(like.buf[c].size());
    CHECK_CUDA(cudaMemcpy(out[c].data(), d.buf[c].get(), out[c].size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  }
}

// The references on the host and on the device, as HevcMcBatch::refs wants them.
struct Refs {
  std::vector<Picture> pics;
  std::vector<DevPicture> dev;
  std::unique_ptr<HevcPlane[][3]> host_view, dev_view;

  void make(int n, int w, int h, int bdl, int bdc, Content content, std::mt19937_64& rng) {
    pics.clear();
    for (int i = 0; i < n; ++i) pics.push_back(make_ref(w, h, bdl, bdc, content, rng));
    dev = std::vector<DevPicture>(size_t(n));
    host_view.reset(new HevcPlane[n][3]);
    dev_view.reset(new HevcPlane[n][3]);
    for (int i = 0; i < n; ++i) {
      upload(pics[size_t(i)], dev[size_t(i)]);
      if (testing::Test::HasFatalFailure()) return;
      for (int c = 0; c < 3; ++c) {
        host_view[i][c] = pics[size_t(i)].plane(c);
        dev_view[i][c] = dev[size_t(i)].view[c];
      }
    }
  }
};

HevcMcBatch make_batch(const HevcPlane (*refs)[3], int n_refs, const std::vector<HevcMcPb>& pbs, int bdl, int bdc) {
  HevcMcBatch b;
  b.refs = refs;
  b.n_refs = n_refs;
  b.pbs = pbs.data();
  b.n_pbs = int(pbs.size());
  b.bit_depth_y = bdl;
  b.bit_depth_c = bdc;
  return b;
}

// HevcMc::run and the CUDA core into copies of `dst`: every sample of the buffers must agree,
// guards included.
void check_batch(HevcMcCore& core, cudaStream_t stream, Refs& refs, const Picture& dst,
                 const std::vector<HevcMcPb>& pbs, int bdl, int bdc, const std::string& what) {
  std::vector<uint16_t> cpu[3], gpu[3];
  HevcPlane views[3];
  for (int c = 0; c < 3; ++c) {
    cpu[c] = dst.buf[c];
    views[c] = dst.plane(c, cpu[c].data());
  }
  const int n_refs = int(refs.pics.size());
  gvc::HevcMc::run(make_batch(refs.host_view.get(), n_refs, pbs, bdl, bdc), views);
  DevPicture d;
  upload(dst, d);
  if (testing::Test::HasFatalFailure()) return;
  CHECK_OK(core.run(make_batch(refs.dev_view.get(), n_refs, pbs, bdl, bdc), d.view, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  download(d, dst, gpu);
  if (testing::Test::HasFatalFailure()) return;
  size_t changed = 0;
  for (int c = 0; c < 3; ++c) {
    int bad = 0;
    for (size_t i = 0; i < cpu[c].size(); ++i) {
      changed += cpu[c][i] != dst.buf[c][i];
      if (cpu[c][i] == gpu[c][i]) continue;
      if (bad++ < 6)
        ADD_FAILURE() << what << ": plane " << c << " sample " << where(dst, c, i, pbs) << ": cpu " << cpu[c][i]
                      << ", cuda " << gpu[c][i] << " (before " << dst.buf[c][i] << ")";
    }
    EXPECT_EQ(bad, 0) << what << ": plane " << c << " differs";
  }
  if (pbs.size() >= 20) {
    EXPECT_GT(changed, 0u) << what << ": the batch changed nothing (a vacuous test)";
  }
}

struct Case {
  const char* name;
  int w, h, bdl, bdc;
  Content content;
  int weighted_percent;
};

class HevcMcCheck : public testing::TestWithParam<Case> {};

// Random PB tilings of whole pictures, four rounds on one core: many small PBs (8x4 and 4x8
// included), large PBs, uni-prediction only with wide motion, bi-prediction only.
TEST_P(HevcMcCheck, MatchesCpu) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  const Case& c = GetParam();
  if (c.content == Content::Real && elephants().pix.empty()) GTEST_SKIP() << "no real test content";
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  HevcMcCore core;
  auto rng = rng_for(std::string("hevc mc ") + c.name);
  GenParams g;
  g.weighted_percent = c.weighted_percent;
  Refs refs;
  refs.make(g.n_refs, c.w, c.h, c.bdl, c.bdc, c.content, rng);
  if (HasFatalFailure()) return;
  for (int round = 0; round < 4; ++round) {
    g.split_percent = round == 0 ? 80 : (round == 1 ? 20 : 50);
    g.bi_percent = round == 2 ? 0 : (round == 3 ? 100 : 40);
    g.mv_range = round == 2 ? 4 * std::max(c.w, c.h) : 64;
    const Picture dst = make_dst(c.w, c.h, c.bdl, c.bdc, rng);
    const std::vector<HevcMcPb> pbs = make_pbs(c.w, c.h, g, rng);
    check_batch(core, stream.get(), refs, dst, pbs, c.bdl, c.bdc,
                "round " + std::to_string(round) + " (" + std::to_string(pbs.size()) + " PBs)");
    if (HasFailure()) return;
  }
}

std::vector<Case> mc_cases() {
  return {
      {"416x240_8bit", 416, 240, 8, 8, Content::Uniform, 0},
      {"416x240_8bit_weighted", 416, 240, 8, 8, Content::Uniform, 100},
      {"416x240_10bit", 416, 240, 10, 10, Content::Uniform, 0},
      {"416x240_10bit_weighted", 416, 240, 10, 10, Content::Uniform, 100},
      // Chroma 683x384: not a multiple of 8, and the luma's last CUs cross the right edge.
      {"1366x768_8bit_half_weighted", 1366, 768, 8, 8, Content::Smooth, 50},
      {"1366x768_10bit_half_weighted", 1366, 768, 10, 10, Content::Uniform, 50},
      {"203x139_8bit_luma_10bit_chroma", 203, 139, 8, 10, Content::Uniform, 50},
      {"200x136_12bit", 200, 136, 12, 12, Content::Uniform, 50},
      {"12x6_8bit", 12, 6, 8, 8, Content::Uniform, 50},
      // 0 and the maximum: the filters' extreme sums and the clipping after weighting.
      {"416x240_8bit_extremes", 416, 240, 8, 8, Content::Extremes, 50},
      {"416x240_10bit_extremes", 416, 240, 10, 10, Content::Extremes, 50},
      {"200x136_12bit_extremes", 200, 136, 12, 12, Content::Extremes, 50},
      // Elephants (checkgpu::elephants()) as every reference, four different crops.
      {"1920x1080_8bit_real", 1920, 1080, 8, 8, Content::Real, 30},
      {"1366x768_10bit_real", 1366, 768, 10, 10, Content::Real, 30},
  };
}

INSTANTIATE_TEST_SUITE_P(HevcMc, HevcMcCheck, testing::ValuesIn(mc_cases()),
                         [](const testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// Every fraction pair, luma (x, y in 0..3) and chroma (0..7), for every PB shape of HEVC, one
// PB each, on an 8-bit and a 10-bit picture: a wrong filter row or tile edge points at itself.
TEST(HevcMc, EveryFractionEveryShape) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  HevcMcCore core;
  auto rng = rng_for("hevc mc fractions");
  static const int kShapes[][2] = {{8, 4},   {4, 8},   {8, 8},   {16, 4},  {16, 12}, {4, 16},  {12, 16},
                                   {16, 8},  {8, 16},  {16, 16}, {32, 8},  {32, 24}, {8, 32},  {24, 32},
                                   {32, 16}, {16, 32}, {32, 32}, {64, 16}, {64, 48}, {16, 64}, {48, 64},
                                   {64, 32}, {32, 64}, {64, 64}};
  for (int bd : {8, 10}) {
    const int w = 64 * 8, h = 64 * 8;
    Refs refs;
    refs.make(2, w, h, bd, bd, Content::Uniform, rng);
    if (HasFatalFailure()) return;
    // One 64x64 cell per (x, y) fraction of the 8x8 eighth-sample grid; the shapes cycle.
    std::vector<HevcMcPb> pbs;
    int shape = 0;
    for (int fy = 0; fy < 8; ++fy)
      for (int fx = 0; fx < 8; ++fx, ++shape) {
        HevcMcPb pb;
        pb.x = fx * 64;
        pb.y = fy * 64;
        pb.w = kShapes[shape % 24][0];
        pb.h = kShapes[shape % 24][1];
        pb.pred_flag[0] = 1;
        pb.pred_flag[1] = uint8_t(fx & 1);
        pb.ref[1] = 1;
        for (int l = 0; l < 2; ++l) {
          pb.mv[l][0] = int16_t(8 * rand_int(rng, -40, 40) + fx);
          pb.mv[l][1] = int16_t(8 * rand_int(rng, -40, 40) + fy);
        }
        pbs.push_back(pb);
      }
    const Picture dst = make_dst(w, h, bd, bd, rng);
    check_batch(core, stream.get(), refs, dst, pbs, bd, bd, std::to_string(bd) + "-bit");
    if (HasFailure()) return;
  }
}

// Arguments the CPU reference has no answer for are refused before anything is queued; what
// the CPU ignores (PBs outside the picture or without a list, the fields of an unused list,
// an empty batch) is accepted.
TEST(HevcMc, RejectsBadPbsAndIgnoresWhatTheCpuIgnores) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  HevcMcCore core;
  auto rng = rng_for("hevc mc rejects");
  Refs refs;
  refs.make(2, 64, 64, 8, 8, Content::Uniform, rng);
  if (HasFatalFailure()) return;
  const Picture dst = make_dst(64, 64, 8, 8, rng);
  DevPicture d;
  upload(dst, d);
  if (HasFatalFailure()) return;
  auto run = [&](const HevcMcPb& pb, int bdl = 8, int bdc = 8, const HevcPlane* v = nullptr, int n_refs = 2) {
    return core.run(make_batch(refs.dev_view.get(), n_refs, {pb}, bdl, bdc), v ? v : d.view, stream.get());
  };
  HevcMcPb good;
  good.x = 8;
  good.y = 8;
  good.w = good.h = 16;
  good.pred_flag[0] = 1;
  good.mv[0][0] = 5;
  good.mv[0][1] = -3;
  struct Bad {
    const char* why;
    HevcMcPb pb;
    int bdl, bdc;
  };
  std::vector<Bad> bad;
  auto with = [&](const char* why, auto change, int bdl = 8, int bdc = 8) {
    HevcMcPb pb = good;
    change(pb);
    bad.push_back({why, pb, bdl, bdc});
  };
  auto weighted = [](HevcMcPb& p) {
    p.weighted = true;
    for (int c = 0; c < 3; ++c) p.weight[0][c] = 1;
  };
  with("width 128", [](HevcMcPb& p) { p.w = 128; });
  with("height 72", [](HevcMcPb& p) { p.h = 72; });
  with("negative width", [](HevcMcPb& p) { p.w = -8; });
  with("negative x", [](HevcMcPb& p) { p.x = -8; });
  with("negative y", [](HevcMcPb& p) { p.y = -4; });
  with("reference 2 of 2", [](HevcMcPb& p) { p.ref[0] = 2; });
  with("list 1 reference 7 of 2", [](HevcMcPb& p) {
    p.pred_flag[1] = 1;
    p.ref[1] = 7;
  });
  with("denominator 8", [&](HevcMcPb& p) {
    weighted(p);
    p.log2_wd_base[2] = 8;
  });
  with("weight 256", [&](HevcMcPb& p) {
    weighted(p);
    p.weight[0][1] = 256;
  });
  with("weight -129", [&](HevcMcPb& p) {
    weighted(p);
    p.weight[0][0] = -129;
  });
  with("offset 128", [&](HevcMcPb& p) {
    weighted(p);
    p.offset[0][2] = 128;
  });
  with("bit depth 7", [](HevcMcPb&) {}, 7, 8);
  with("bit depth 13", [](HevcMcPb&) {}, 8, 13);
  for (const Bad& b : bad) EXPECT_FALSE(run(b.pb, b.bdl, b.bdc).ok()) << b.why;
  const HevcPlane no_chroma[3] = {d.view[0], HevcPlane{}, d.view[2]};
  EXPECT_FALSE(run(good, 8, 8, no_chroma).ok()) << "missing destination plane";
  EXPECT_FALSE(run(good, 8, 8, nullptr, 0).ok()) << "no references";
  std::unique_ptr<HevcPlane[][3]> broken(new HevcPlane[2][3]);
  for (int i = 0; i < 2; ++i)
    for (int c = 0; c < 3; ++c) broken[i][c] = refs.dev_view[i][c];
  broken[0][1].data = nullptr;
  EXPECT_FALSE(core.run(make_batch(broken.get(), 2, {good}, 8, 8), d.view, stream.get()).ok())
      << "reference plane missing";
  CHECK_CUDA(cudaStreamSynchronize(stream.get()));
  std::vector<uint16_t> after[3];
  download(d, dst, after);
  if (HasFatalFailure()) return;
  for (int c = 0; c < 3; ++c) EXPECT_TRUE(after[c] == dst.buf[c]) << "refused calls changed plane " << c;

  // What the CPU ignores: garbage in an unused list and in the weights of an unweighted PB, a
  // PB without lists, PBs outside the picture, a missing plane of an unused reference.
  std::vector<HevcMcPb> pbs;
  HevcMcPb p = good;
  p.ref[1] = 200;
  p.weight[0][0] = 9999;
  p.log2_wd_base[0] = 99;
  pbs.push_back(p);
  p = good;
  p.x = 32;
  p.pred_flag[0] = 0;
  p.ref[0] = 99;
  pbs.push_back(p);
  p = good;
  p.x = 64;
  pbs.push_back(p);
  p = good;
  p.y = 200000;
  pbs.push_back(p);
  p = good;
  p.x = 40;
  p.y = 40;
  p.pred_flag[1] = 1;
  p.ref[1] = 1;
  pbs.push_back(p);
  check_batch(core, stream.get(), refs, dst, pbs, 8, 8, "ignored fields");
  EXPECT_TRUE(core.run(make_batch(refs.dev_view.get(), 2, {}, 8, 8), d.view, stream.get()).ok())
      << "empty batch";
}

// --bench: HevcMc::run against the CUDA core on a 1920x1080 4:2:0 8-bit picture of 8x8..64x64
// PBs (2Nx2N), 40% bi-predicted, motion within +-16 samples, four references (the Elephants
// painting where present). CUDA: run() timed with events (packing, upload of the PB list and
// the kernel), references and picture already on the device.
TEST(HevcMcBench, Picture1080p) {
  if (!bench_mode()) GTEST_SKIP() << "only with --bench";
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  CHECK_OK(gvc::cuda::enter_device(0));
  gvc::cuda::Stream stream;
  CHECK_OK(stream.create());
  HevcMcCore core;
  auto rng = rng_for("hevc mc bench");
  const int w = 1920, h = 1080;
  const bool real = !elephants().pix.empty();
  GenParams g;
  g.all_partitions = false;
  g.split_percent = 50;
  g.intra_percent = 0;
  g.far_percent = 0;
  g.bi_percent = 40;
  Refs refs;
  refs.make(g.n_refs, w, h, 8, 8, real ? Content::Real : Content::Smooth, rng);
  if (HasFatalFailure()) return;
  const Picture dst = make_dst(w, h, 8, 8, rng);
  const std::vector<HevcMcPb> pbs = make_pbs(w, h, g, rng);
  check_batch(core, stream.get(), refs, dst, pbs, 8, 8, "1080p bench picture");
  if (HasFailure()) return;

  std::vector<uint16_t> host[3];
  HevcPlane hv[3];
  for (int c = 0; c < 3; ++c) {
    host[c] = dst.buf[c];
    hv[c] = dst.plane(c, host[c].data());
  }
  DevPicture d;
  upload(dst, d);
  if (HasFatalFailure()) return;
  const HevcMcBatch cpu_batch = make_batch(refs.host_view.get(), g.n_refs, pbs, 8, 8);
  const HevcMcBatch gpu_batch = make_batch(refs.dev_view.get(), g.n_refs, pbs, 8, 8);
  auto median = [](std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  std::vector<double> tc;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    gvc::HevcMc::run(cpu_batch, hv);
    tc.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<double> tg, tw;
  for (int i = 0; i < 24; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_CUDA(cudaEventRecord(start, stream.get()));
    CHECK_OK(core.run(gpu_batch, d.view, stream.get()));
    CHECK_CUDA(cudaEventRecord(stop, stream.get()));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (i < 3) continue;  // warm-up
    tg.push_back(ms);
    tw.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  size_t bi = 0;
  for (const HevcMcPb& pb : pbs) bi += pb.pred_flag[0] && pb.pred_flag[1];
  const double cpu_ms = median(tc), gpu_ms = median(tg), wall_ms = median(tw);
  std::printf("\ncheckgpu --bench: HEVC inter prediction, 1920x1080 4:2:0 8-bit, %zu PBs 8x8..64x64 (%zu bi), %s\n",
              pbs.size(), bi, real ? "Elephants references" : "synthetic references");
  std::printf("%-40s %10s %10s %9s\n", "", "cpu ms", "cuda ms", "ratio");
  std::printf("%-40s %10.2f %10.3f %8.1fx\n", "run(), cudaEvents (pack + upload + kernel)", cpu_ms, gpu_ms,
              cpu_ms / gpu_ms);
  std::printf("%-40s %10.2f %10.3f %8.1fx\n", "run() + synchronize, host clock", cpu_ms, wall_ms, cpu_ms / wall_ms);
}

}  // namespace
}  // namespace checkgpu
