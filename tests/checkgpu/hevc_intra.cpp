// hevc_intra.cpp (checkgpu): HEVC intra prediction + residual on the GPU against the CPU reference, and whole streams through the CUDA reconstruction against the CPU decoder
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "checkgpu.h"
#include "common/dsp/hevc_intra.h"
#include "common/dsp/hevc_itx.h"
#include "common/dsp/hevc_output.h"
#include "common/hevcdec/decoder.h"
#include "gpu/device.h"
#include "gpu/hevc_intra.h"
#include "gpu/hevc_itx.h"
#include "gpu/hevc_recon.h"
#include "tests/hevc/stream_oracle.h"

namespace checkgpu {
namespace {

using gvc::HevcIntraBlock;
using gvc::HevcPlane;
using gvc::HevcTu;
using gvc::cuda::DeviceBuffer;


constexpr int kTail = 7;               // poisoned samples right of each plane row
constexpr uint16_t kPoison = 0xA5A5;

int rand_int(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

struct IntraPicture {
  int w[3] = {}, h[3] = {}, stride[3] = {};
  std::vector<uint16_t> buf[3];
  std::vector<HevcIntraBlock> blocks;  // decoding order
  std::vector<HevcTu> tus;
  std::vector<int16_t> levels;
  int bd[3] = {8, 8, 8};
  bool strong = false;
  int log2_ctb = 5;  // the CTB size the core orders its work by
  HevcPlane plane(int c, uint16_t* base) const { return {base, stride[c], w[c], h[c]}; }
};

struct Shape {
  int width, height, bd_y, bd_c;
  int inter_percent;  // coding units left as they are (inter or PCM samples, ready beforehand)
  int cbf_percent;    // blocks with a residual
  int avail_percent;  // usable reference units that are made available
  bool strong;
  int order_log2_ctb = 5;  // told to the core; not 5 (the pictures' CTB 32): the order it
                           // derives may break dependencies and must be given up safely
};

// A picture of CTB 32 quadtrees in raster order: intra coding units as the decoder records them
// (luma block, then Cb and Cr; 8x8 units split into four 4x4 luma blocks and one 4x4 Cb and
// Cr), other coding units left with the random samples they start with. Each block's
// availability marks a random part of the units that are in the picture and either not intra
// or written by an earlier block, which is what 6.4.1 can allow.
IntraPicture make_intra_picture(const Shape& sh, std::mt19937_64& rng) {
  IntraPicture p;
  p.strong = sh.strong;
  p.log2_ctb = sh.order_log2_ctb;
  p.bd[0] = sh.bd_y;
  p.bd[1] = p.bd[2] = sh.bd_c;
  for (int c = 0; c < 3; ++c) {
    p.w[c] = c ? sh.width / 2 : sh.width;
    p.h[c] = c ? sh.height / 2 : sh.height;
    p.stride[c] = p.w[c] + kTail;
    p.buf[c].assign(size_t(p.stride[c]) * p.h[c], kPoison);
    const int maxv = (1 << p.bd[c]) - 1;
    for (int y = 0; y < p.h[c]; ++y)
      for (int x = 0; x < p.w[c]; ++x) p.buf[c][size_t(y) * p.stride[c] + x] = uint16_t(rand_int(rng, 0, maxv));
  }
  auto add = [&](int c, int x, int y, int log2) {
    HevcIntraBlock b;
    b.x = uint16_t(x);
    b.y = uint16_t(y);
    b.c_idx = uint8_t(c);
    b.log2_size = uint8_t(log2);
    b.mode = uint8_t(rand_int(rng, 0, 34));
    p.blocks.push_back(b);
  };
  // quadtrees: leaves of 8..32 luma samples
  struct Node { int x, y, log2; };
  for (int cy = 0; cy < sh.height; cy += 32)
    for (int cx = 0; cx < sh.width; cx += 32) {
      std::vector<Node> stack{{cx, cy, 5}};
      std::vector<Node> leaves;
      while (!stack.empty()) {  // depth first in z-order
        const Node n = stack.back();
        stack.pop_back();
        if (n.x >= sh.width || n.y >= sh.height) continue;
        const int s = 1 << n.log2;
        const bool must = n.x + s > sh.width || n.y + s > sh.height;
        if (n.log2 > 3 && (must || rand_int(rng, 0, 99) < 55)) {
          const int hs = s / 2;
          stack.push_back({n.x + hs, n.y + hs, n.log2 - 1});
          stack.push_back({n.x, n.y + hs, n.log2 - 1});
          stack.push_back({n.x + hs, n.y, n.log2 - 1});
          stack.push_back({n.x, n.y, n.log2 - 1});
          continue;
        }
        leaves.push_back(n);
      }
      for (const Node& n : leaves) {
        if (rand_int(rng, 0, 99) < sh.inter_percent) continue;
        if (n.log2 == 3 && rng() % 2) {
          for (int i = 0; i < 4; ++i) add(0, n.x + (i & 1) * 4, n.y + (i >> 1) * 4, 2);
          add(1, n.x / 2, n.y / 2, 2);
          add(2, n.x / 2, n.y / 2, 2);
        } else {
          add(0, n.x, n.y, n.log2);
          add(1, n.x / 2, n.y / 2, n.log2 - 1);
          add(2, n.x / 2, n.y / 2, n.log2 - 1);
        }
      }
    }
  // final owner of every unit (block index, -1 for samples that are ready from the start)
  std::vector<int> owner[3];
  int uw[3], uh[3];
  for (int c = 0; c < 3; ++c) {
    const int u = c ? 2 : 4;
    uw[c] = p.w[c] / u;
    uh[c] = p.h[c] / u;
    owner[c].assign(size_t(uw[c]) * uh[c], -1);
  }
  for (size_t i = 0; i < p.blocks.size(); ++i) {
    const HevcIntraBlock& b = p.blocks[i];
    const int u = b.c_idx ? 2 : 4, n = 1 << b.log2_size;
    for (int y = b.y / u; y < std::min((b.y + n) / u, uh[b.c_idx]); ++y)
      for (int x = b.x / u; x < std::min((b.x + n) / u, uw[b.c_idx]); ++x) owner[b.c_idx][size_t(y) * uw[b.c_idx] + x] = int(i);
  }
  for (size_t i = 0; i < p.blocks.size(); ++i) {
    HevcIntraBlock& b = p.blocks[i];
    const int c = b.c_idx, u = c ? 2 : 4, n = 1 << b.log2_size, units = 2 * n / u;
    for (int k = 0; k <= 2 * units; ++k) {
      int x, y;  // a sample of unit k
      if (k < units) {
        x = b.x - 1;
        y = b.y + 2 * n - 1 - k * u;
      } else if (k == units) {
        x = b.x - 1;
        y = b.y - 1;
      } else {
        x = b.x + (k - units - 1) * u;
        y = b.y - 1;
      }
      if (x < 0 || y < 0 || x >= p.w[c] || y >= p.h[c]) continue;
      const int o = owner[c][size_t(y / u) * uw[c] + x / u];
      if (o >= int(i)) continue;  // written by this or a later block
      if (rand_int(rng, 0, 99) < sh.avail_percent) b.avail |= uint64_t(1) << k;
    }
    if (rand_int(rng, 0, 99) >= sh.cbf_percent) continue;
    HevcTu tu;
    tu.x = b.x;
    tu.y = b.y;
    tu.c_idx = b.c_idx;
    tu.log2_size = b.log2_size;
    tu.qp = uint8_t(rand_int(rng, 0, 51 + 6 * (p.bd[c] - 8)));
    tu.transquant_bypass = rand_int(rng, 0, 99) < 5;
    tu.transform_skip = !tu.transquant_bypass && b.log2_size == 2 && rng() % 4 == 0;
    tu.dst = c == 0 && b.log2_size == 2;
    tu.coeff_offset = uint32_t(p.levels.size());
    const int nn = n * n;
    const bool dense = rng() % 8 == 0;
    for (int j = 0; j < nn; ++j) {
      int v = 0;
      if (dense)
        v = rand_int(rng, -3000, 3000);
      else if (rand_int(rng, 0, 99) < 15)
        v = rand_int(rng, -40, 40);
      p.levels.push_back(int16_t(v));
    }
    b.tu = int32_t(p.tus.size());
    p.tus.push_back(tu);
  }
  return p;
}

void run_cpu(IntraPicture& p) {
  gvc::HevcIntraRefs refs;
  for (const HevcIntraBlock& b : p.blocks) {
    const HevcPlane pl = p.plane(b.c_idx, p.buf[b.c_idx].data());
    gvc::hevc_gather_intra_refs(b, pl, refs);
    gvc::HevcIntraParams prm;
    prm.log2_size = b.log2_size;
    prm.c_idx = b.c_idx;
    prm.mode = b.mode;
    prm.bit_depth = p.bd[b.c_idx];
    prm.strong_intra_smoothing = p.strong;
    gvc::hevc_intra_predict(refs, prm, pl, b.x, b.y);
    if (b.tu >= 0) gvc::HevcResidual::run_one(p.tus[size_t(b.tu)], p.levels.data(), pl, prm.bit_depth);
  }
}

struct GpuIntra {
  DeviceBuffer planes[3], levels, residuals;
  gvc::cuda::HevcResidualCore itx;
  gvc::cuda::HevcIntraCore intra;
  gvc::cuda::Stream stream;
};

// Uploads p, runs residuals then intra on the GPU, downloads into p. Returns the status.
// `in_place`: the residuals over the levels, as the reconstructor stores them.
gvc::Status run_gpu(GpuIntra& g, IntraPicture& p, bool copy, bool in_place = false) {
  if (!g.stream.get()) GVC_TRY(g.stream.create());
  const cudaStream_t s = g.stream.get();
  HevcPlane dev[3];
  for (int c = 0; c < 3; ++c) {
    const size_t bytes = p.buf[c].size() * sizeof(uint16_t);
    GVC_TRY(g.planes[c].reserve(bytes));
    if (copy) GVC_CUDA_TRY(cudaMemcpyAsync(g.planes[c].get(), p.buf[c].data(), bytes, cudaMemcpyHostToDevice, s));
    dev[c] = p.plane(c, g.planes[c].get<uint16_t>());
  }
  const size_t lbytes = std::max<size_t>(p.levels.size(), 1) * sizeof(int16_t);
  GVC_TRY(g.levels.reserve(lbytes));
  GVC_TRY(g.residuals.reserve(lbytes));
  if (copy && !p.levels.empty())
    GVC_CUDA_TRY(cudaMemcpyAsync(g.levels.get(), p.levels.data(), p.levels.size() * sizeof(int16_t),
                                 cudaMemcpyHostToDevice, s));
  int16_t* residuals = in_place ? g.levels.get<int16_t>() : g.residuals.get<int16_t>();
  GVC_TRY(g.itx.run_to_residuals(p.tus, g.levels.get<int16_t>(), p.levels.size(), {}, dev, p.bd[0], p.bd[1],
                                 residuals, s));
  GVC_TRY(g.intra.run(p.blocks, p.tus, residuals, dev, p.bd[0], p.bd[1], p.strong, p.log2_ctb, s));
  if (copy)
    for (int c = 0; c < 3; ++c)
      GVC_CUDA_TRY(cudaMemcpyAsync(p.buf[c].data(), g.planes[c].get(), p.buf[c].size() * sizeof(uint16_t),
                                   cudaMemcpyDeviceToHost, s));
  return g.stream.synchronize("intra check");
}

void expect_same(const IntraPicture& cpu, const IntraPicture& gpu) {
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < cpu.h[c]; ++y)
      for (int x = 0; x < cpu.stride[c]; ++x) {
        const size_t i = size_t(y) * cpu.stride[c] + x;
        if (cpu.buf[c][i] == gpu.buf[c][i]) continue;
        // name the block that covers the sample
        std::string where = x >= cpu.w[c] ? "the poisoned tail" : "no block";
        for (size_t b = 0; b < cpu.blocks.size(); ++b) {
          const HevcIntraBlock& k = cpu.blocks[b];
          const int n = 1 << k.log2_size;
          if (k.c_idx == c && x >= k.x && x < k.x + n && y >= k.y && y < k.y + n)
            where = "block " + std::to_string(b) + " (" + std::to_string(n) + "x" + std::to_string(n) + " mode " +
                    std::to_string(k.mode) + " avail " + std::to_string(k.avail) + " tu " + std::to_string(k.tu) + ")";
        }
        FAIL() << "plane " << c << " sample (" << x << "," << y << "): cpu " << cpu.buf[c][i] << " gpu "
               << gpu.buf[c][i] << " in " << where;
      }
}

struct IntraCase {
  const char* name;
  Shape shape;
};
void PrintTo(const IntraCase& c, std::ostream* os) { *os << c.name; }

class HevcIntraCheck : public ::testing::TestWithParam<IntraCase> {};

TEST_P(HevcIntraCheck, MatchesCpu) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::mt19937_64 rng = rng_for(std::string("HevcIntraCheck.") + GetParam().name);
  GpuIntra g;
  for (int round = 0; round < 3; ++round) {
    IntraPicture cpu = make_intra_picture(GetParam().shape, rng);
    IntraPicture gpu = cpu, in_place = cpu;
    run_cpu(cpu);
    CHECK_OK(run_gpu(g, gpu, true));
    expect_same(cpu, gpu);
    // the residuals written over the levels (each TU's own, read before it is written)
    CHECK_OK(run_gpu(g, in_place, true, true));
    expect_same(cpu, in_place);
    if (HasFailure()) break;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Pictures, HevcIntraCheck,
    ::testing::Values(IntraCase{"all_intra_8bit", {424, 240, 8, 8, 0, 60, 95, false}},
                      IntraCase{"all_intra_strong_8bit", {424, 240, 8, 8, 0, 60, 100, true}},
                      IntraCase{"mixed_10bit", {416, 248, 10, 10, 30, 60, 90, true}},
                      IntraCase{"few_refs_12bit", {200, 136, 12, 10, 20, 80, 40, false}},
                      IntraCase{"no_residual_1080p", {1920, 1080, 8, 8, 10, 0, 100, true}},
                      IntraCase{"residual_1080p_10bit", {1920, 1080, 10, 10, 40, 90, 97, true}},
                      IntraCase{"ordered_by_ctb16", {424, 240, 8, 8, 0, 60, 100, false, 4}},
                      IntraCase{"ordered_by_ctb64", {424, 240, 8, 8, 0, 60, 100, false, 6}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(HevcIntra, RejectsBadBlocks) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::mt19937_64 rng = rng_for("HevcIntra.RejectsBadBlocks");
  IntraPicture p = make_intra_picture({64, 64, 8, 8, 0, 50, 100, false}, rng);
  GpuIntra g;
  auto expect_refused = [&](IntraPicture q, const char* what) {
    const gvc::Status st = run_gpu(g, q, true);
    EXPECT_FALSE(st.ok()) << what;
  };
  IntraPicture q = p;
  q.blocks[0].mode = 35;
  expect_refused(q, "mode 35");
  q = p;
  q.blocks[0].log2_size = 6;
  expect_refused(q, "64x64 block");
  q = p;
  q.blocks[0].x = 64;
  expect_refused(q, "outside the plane");
  q = p;
  q.blocks[0].avail = ~uint64_t(0);
  expect_refused(q, "availability beyond the reference samples");
  q = p;
  q.bd[0] = 13;
  expect_refused(q, "13-bit");
  // the unchanged picture still goes through
  IntraPicture cpu = p;
  run_cpu(cpu);
  CHECK_OK(run_gpu(g, p, true));
  expect_same(cpu, p);
}

TEST(HevcIntraBench, Picture1080p) {
  if (!bench_mode()) GTEST_SKIP() << "benchmark: run with --bench";
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::mt19937_64 rng = rng_for("HevcIntraBench");
  for (int inter : {0, 80}) {
    IntraPicture p = make_intra_picture({1920, 1088, 8, 8, inter, 50, 95, true}, rng);
    GpuIntra g;
    IntraPicture work = p;
    CHECK_OK(run_gpu(g, work, true));
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int i = 0; i < 15; ++i) {
      CHECK_CUDA(cudaEventRecord(a, g.stream.get()));
      CHECK_OK(run_gpu(g, work, false));
      CHECK_CUDA(cudaEventRecord(b, g.stream.get()));
      CHECK_CUDA(cudaEventSynchronize(b));
      float t = 0;
      CHECK_CUDA(cudaEventElapsedTime(&t, a, b));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    IntraPicture cpu = p;
    const auto t0 = std::chrono::steady_clock::now();
    run_cpu(cpu);
    const double cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("HEVC intra 1920x1088, %d%% inter CUs, %zu blocks, %zu residuals: GPU %.3f ms (median of %zu, "
                "residuals + intra incl. host preparation), CPU %.2f ms, %.1fx\n",
                inter, p.blocks.size(), p.tus.size(), ms[ms.size() / 2], ms.size(), cpu_ms, cpu_ms / ms[ms.size() / 2]);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
}

// The .265 files of $GVC_HEVC_STREAMS, sorted; empty with `why` set when there are none.
std::vector<std::string> stream_files(std::string& why) {
  const char* dir = std::getenv("GVC_HEVC_STREAMS");
  if (!dir || !*dir) {
    why = "GVC_HEVC_STREAMS (a folder of .265 files) not set";
    return {};
  }
  std::vector<std::string> files;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 4 && n.substr(n.size() - 4) == ".265") files.push_back(std::string(dir) + "/" + n);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) why = std::string("no .265 files in ") + dir;
  return files;
}

std::vector<uint8_t> read_file(const std::string& f) {
  std::ifstream in(f, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// `data` decoded whole with `r` (null: the CPU), every frame taken; the time it took is added
// to `secs` when given.
std::vector<gvc::hevc::DecodedFrame> decode_whole(const std::vector<uint8_t>& data, gvc::hevc::Reconstructor* r,
                                                  const std::string& f, double* secs = nullptr) {
  std::vector<gvc::hevc::DecodedFrame> out;
  gvc::hevc::Decoder dec;
  dec.set_reconstructor(r);
  const auto t0 = std::chrono::steady_clock::now();
  const bool ok = dec.decode(data.data(), data.size());
  dec.flush();
  gvc::hevc::DecodedFrame fr;
  while (dec.take_frame(fr)) out.push_back(std::move(fr));
  if (secs) *secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(ok) << f << ": " << dec.error();
  EXPECT_EQ(dec.reconstructor_error(), "") << f;
  return out;
}

// Frame by frame, plane by plane, the same samples.
::testing::AssertionResult same_frames(const std::vector<gvc::hevc::DecodedFrame>& a,
                                       const std::vector<gvc::hevc::DecodedFrame>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << a.size() << " frames against " << b.size();
  for (size_t i = 0; i < a.size(); ++i)
    for (int c = 0; c < 3; ++c)
      if (a[i].planes[c] != b[i].planes[c])
        return ::testing::AssertionFailure() << "frame " << i << " plane " << c << " differs";
  return ::testing::AssertionSuccess();
}

// Whole streams: every .265 file of $GVC_HEVC_STREAMS decoded with the CPU reconstruction and
// with the CUDA one (gvc::cuda::HevcCudaReconstructor), frame by frame identical.
TEST(HevcReconStreams, CudaMatchesCpuFrameByFrame) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::string why;
  const std::vector<std::string> files = stream_files(why);
  if (files.empty()) GTEST_SKIP() << why;
  gvc::cuda::HevcCudaReconstructor recon(0);
  double cpu_s = 0, gpu_s = 0;
  int n_frames = 0;
  for (const std::string& f : files) {
    const std::vector<uint8_t> data = read_file(f);
    const auto cpu = decode_whole(data, nullptr, f, &cpu_s);
    const auto gpu = decode_whole(data, &recon, f, &gpu_s);
    EXPECT_FALSE(cpu.empty()) << f;
    ASSERT_TRUE(same_frames(cpu, gpu)) << f;
    n_frames += int(cpu.size());
  }
  std::printf("HEVC streams through the CUDA reconstruction: %zu streams, %d frames identical to the CPU "
              "(CPU decoder %.2f s, with CUDA reconstruction %.2f s incl. uploads)\n",
              files.size(), n_frames, cpu_s, gpu_s);
}

// A frame as NV12 or P010 bytes on the host: the device frame copied back, or the host
// planes written by the CPU reference.
std::vector<uint8_t> semi_planar_bytes(const gvc::hevc::DecodedFrame& f, std::string& err) {
  const size_t bps = f.bit_depth > 8 ? 2 : 1;
  const size_t y_row = size_t(f.width) * bps, uv_row = size_t((f.width + 1) / 2) * 2 * bps;
  std::vector<uint8_t> out(y_row * f.height + uv_row * ((f.height + 1) / 2));
  gvc::SemiPlanarView v{out.data(), ptrdiff_t(y_row), out.data() + y_row * f.height, ptrdiff_t(uv_row)};
  if (f.device) {
    const gvc::Status st = static_cast<const gvc::cuda::HevcDeviceFrame&>(*f.device).copy_to(v);
    if (!st.ok()) err = st.message();
    return out;
  }
  HevcPlane planes[3];
  for (int c = 0; c < 3; ++c)
    planes[c] = {const_cast<uint16_t*>(f.planes[c].data()), f.plane_width(c), f.plane_width(c), f.plane_height(c)};
  gvc::hevc_write_semi_planar(planes, 0, 0, f.width, f.height, f.bit_depth, v);
  return out;
}

// Where a NAL unit starts at or after `from` (its start code), or the end.
size_t next_nal_start(const std::vector<uint8_t>& d, size_t from) {
  for (size_t i = from; i + 3 <= d.size(); ++i)
    if (d[i] == 0 && d[i + 1] == 0 && d[i + 2] == 1) return i > from && d[i - 1] == 0 ? i - 1 : i;
  return d.size();
}

// Expects the GPU's frames of stream `f` to be the CPU's, one by one; returns how many there are.
int expect_same_frames(const std::vector<std::vector<uint8_t>>& cpu, const std::vector<std::vector<uint8_t>>& gpu,
                       const std::string& f) {
  EXPECT_EQ(cpu.size(), gpu.size()) << f;
  for (size_t i = 0; i < std::min(cpu.size(), gpu.size()); ++i)
    if (cpu[i] != gpu[i]) {
      ADD_FAILURE() << f << ": frame " << i << " differs";
      break;
    }
  return int(cpu.size());
}

// The same streams with the pictures kept on the device (HevcCudaReconstructor::
// set_keep_pictures) for the middle third of each stream: the frames come out as NV12 or P010
// in device memory (HevcDeviceFrame), also those decoded before the switch and those output
// after the switch back, and equal the CPU decoder's frames written by hevc_write_semi_planar.
TEST(HevcReconStreams, KeptPicturesMatchCpuFrameByFrame) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::string why;
  const std::vector<std::string> files = stream_files(why);
  if (files.empty()) GTEST_SKIP() << why;
  gvc::cuda::HevcCudaReconstructor recon(0);
  int n_frames = 0, n_device = 0;
  for (const std::string& f : files) {
    const std::vector<uint8_t> data = read_file(f);
    const size_t cut1 = next_nal_start(data, data.size() / 3), cut2 = next_nal_start(data, 2 * data.size() / 3);
    auto decode = [&](gvc::hevc::Reconstructor* r) {
      std::vector<std::vector<uint8_t>> out;
      gvc::hevc::Decoder dec;
      dec.set_reconstructor(r);
      gvc::hevc::DecodedFrame fr;
      auto take = [&] {
        while (dec.take_frame(fr)) {
          std::string err;
          n_device += r && fr.device;
          out.push_back(semi_planar_bytes(fr, err));
          EXPECT_EQ(err, "") << f;
        }
      };
      bool ok = dec.decode(data.data(), cut1);
      take();
      recon.set_keep_pictures(true);
      ok &= dec.decode(data.data() + cut1, cut2 - cut1);
      take();
      recon.set_keep_pictures(false);
      ok &= dec.decode(data.data() + cut2, data.size() - cut2);
      dec.flush();
      take();
      EXPECT_TRUE(ok) << f << ": " << dec.error();
      EXPECT_EQ(dec.reconstructor_error(), "") << f;
      return out;
    };
    const auto cpu = decode(nullptr);
    n_frames += expect_same_frames(cpu, decode(&recon), f);
  }
  EXPECT_GT(n_device, 0);
  std::printf("HEVC streams with pictures kept on the device for their middle third: %zu streams, %d frames "
              "(%d handed out in device memory) identical to the CPU's as NV12/P010\n",
              files.size(), n_frames, n_device);
}

// The same streams with every picture kept on the device and parsed on 4 frame lanes, so that
// each lane prepares its picture's records for the GPU (HevcCudaReconstructor::prepare: the
// packed PBs, intra blocks, levels and deblocking arrays uploaded in one copy): frames
// identical to the CPU's.
TEST(HevcReconStreams, FrameLanesPreparedMatchCpuFrameByFrame) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::string why;
  const std::vector<std::string> files = stream_files(why);
  if (files.empty()) GTEST_SKIP() << why;
  gvc::cuda::HevcCudaReconstructor recon(0);
  recon.set_keep_pictures(true);
  int n_frames = 0;
  for (const std::string& f : files) {
    const std::vector<uint8_t> data = read_file(f);
    auto decode = [&](gvc::hevc::Reconstructor* r) {
      std::vector<std::vector<uint8_t>> out;
      gvc::hevc::Decoder dec;
      dec.set_frame_threads(4);
      dec.set_reconstructor(r);
      gvc::hevc::DecodedFrame fr;
      const bool ok = dec.decode(data.data(), data.size());
      dec.flush();
      while (dec.take_frame(fr, true)) {
        std::string err;
        out.push_back(semi_planar_bytes(fr, err));
        EXPECT_EQ(err, "") << f;
      }
      EXPECT_TRUE(ok) << f << ": " << dec.error();
      EXPECT_EQ(dec.reconstructor_error(), "") << f;
      return out;
    };
    const auto cpu = decode(nullptr);
    n_frames += expect_same_frames(cpu, decode(&recon), f);
  }
  // the lanes' records did serve (run() falls back to packing them itself)
  EXPECT_GT(recon.host_times().prepared, 0);
  std::printf("HEVC streams on 4 frame lanes, records prepared on the lanes: %zu streams, %d frames identical to "
              "the CPU's (%d of %d pictures prepared)\n", files.size(), n_frames, recon.host_times().prepared,
              recon.host_times().pictures);
}

// Device memory follows the DPB: every stream decoded access unit by access unit on 4 frame
// lanes, its frames taken after each one as cudahevcdec takes them. The reconstructor holds
// no more pictures than the stream's DPB (sps_max_dec_pic_buffering, which counts the current
// picture), since the decoder releases each picture that leaves it (Reconstructor::release)
// and output frames give up the pictures they read when those are needed again, however many
// pictures are parsed at once; its output buffers are those copies, one for each frame that
// was ready but not yet taken, and the scratch of the copies into host memory; its frames are
// still the CPU's.
TEST(HevcReconStreams, DeviceMemoryFollowsTheDpb) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::string why;
  const std::vector<std::string> files = stream_files(why);
  if (files.empty()) GTEST_SKIP() << why;
  constexpr int kLanes = 4;
  int n_frames = 0;
  size_t most_buffers = 0;
  int dpb_full = 0;  // streams whose reconstructor held as many pictures as their DPB
  for (const std::string& f : files) {
    const std::vector<uint8_t> data = read_file(f);
    const int dpb_size = gvc::test::stream_features(data).max_dec_pic_buffering;
    ASSERT_GT(dpb_size, 0) << f;
    std::vector<std::vector<uint8_t>> cpu, gpu;
    std::string err;
    for (const gvc::hevc::DecodedFrame& fr : decode_whole(data, nullptr, f)) cpu.push_back(semi_planar_bytes(fr, err));
    gvc::cuda::HevcCudaReconstructor recon(0);
    recon.set_keep_pictures(true);
    {
      gvc::hevc::Decoder dec;
      dec.set_frame_threads(kLanes);
      dec.set_reconstructor(&recon);
      gvc::hevc::DecodedFrame fr;
      for (const std::vector<uint8_t>& au : gvc::test::split_access_units(data)) {
        EXPECT_TRUE(dec.decode(au.data(), au.size())) << f << ": " << dec.error();
        dec.end_access_unit();
        while (dec.take_frame(fr)) gpu.push_back(semi_planar_bytes(fr, err));
      }
      dec.flush();
      while (dec.take_frame(fr, true)) gpu.push_back(semi_planar_bytes(fr, err));
      EXPECT_EQ(dec.reconstructor_error(), "") << f;
    }
    EXPECT_EQ(err, "") << f;
    n_frames += expect_same_frames(cpu, gpu, f);
    EXPECT_LE(recon.picture_slots(), size_t(dpb_size)) << f;
    EXPECT_LE(recon.frame_buffers(), size_t(kLanes + 1)) << f;
    dpb_full += recon.picture_slots() == size_t(dpb_size);
    most_buffers = std::max(most_buffers, recon.frame_buffers());
  }
  std::printf("HEVC streams AU by AU on %d frame lanes: %zu streams, %d frames identical to the CPU; pictures on the "
              "device at most the DPB's (as many in %d streams), at most %zu output buffers\n",
              kLanes, files.size(), n_frames, dpb_full, most_buffers);
}

// A caller slower than the decoder, as cudahevcdec behind a real-time sink: before each access
// unit it takes at most one frame, then spends 3 ms on it. The reconstruction then needs the
// slots of frames not taken yet; past HevcCudaReconstructor::kFreeCopies buffers in use it
// waits for the caller to take those frames (wait_taken) rather than making them copies of
// their own, unless the caller waits for it. Without the wait, 16 lanes made up to 11 copies
// (130 MiB) of 2160p frames that a real-time sink took later. The matrix's three longest
// streams, each 8 times over, so that the lanes get ahead; frames still the CPU's.
TEST(HevcReconStreams, SlowCallerGetsFramesWithoutCopies) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::string why;
  std::vector<std::string> files = stream_files(why);
  if (files.empty()) GTEST_SKIP() << why;
  std::vector<std::pair<size_t, std::string>> by_length;  // access units, file
  for (const std::string& f : files) by_length.emplace_back(gvc::test::split_access_units(read_file(f)).size(), f);
  std::sort(by_length.rbegin(), by_length.rend());
  constexpr int kLanes = 16;
  int n_frames = 0;
  size_t most_buffers = 0;
  for (size_t i = 0; i < by_length.size() && i < 3; ++i) {
    const std::string& f = by_length[i].second;
    const std::vector<uint8_t> once = read_file(f);
    std::vector<uint8_t> data;
    for (int k = 0; k < 8; ++k) data.insert(data.end(), once.begin(), once.end());
    std::vector<std::vector<uint8_t>> cpu, gpu;
    std::string err;
    for (const gvc::hevc::DecodedFrame& fr : decode_whole(data, nullptr, f)) cpu.push_back(semi_planar_bytes(fr, err));
    gvc::cuda::HevcCudaReconstructor recon(0);
    recon.set_keep_pictures(true);
    {
      gvc::hevc::Decoder dec;
      dec.set_frame_threads(kLanes);
      dec.set_reconstructor(&recon);
      gvc::hevc::DecodedFrame fr;
      for (const std::vector<uint8_t>& au : gvc::test::split_access_units(data)) {
        if (dec.take_frame(fr)) {
          gpu.push_back(semi_planar_bytes(fr, err));
          std::this_thread::sleep_for(std::chrono::milliseconds(3));
        }
        EXPECT_TRUE(dec.decode(au.data(), au.size())) << f << ": " << dec.error();
        dec.end_access_unit();
      }
      dec.flush();
      while (dec.take_frame(fr, true)) gpu.push_back(semi_planar_bytes(fr, err));
      EXPECT_EQ(dec.reconstructor_error(), "") << f;
    }
    EXPECT_EQ(err, "") << f;
    n_frames += expect_same_frames(cpu, gpu, f);
    // the copies, and the scratch of a copy into host memory; a wait that runs out (kTakeWait,
    // a loaded host) may add a copy or two
    EXPECT_LE(recon.frame_buffers(), gvc::cuda::HevcCudaReconstructor::kFreeCopies + 3) << f;
    most_buffers = std::max(most_buffers, recon.frame_buffers());
  }
  std::printf("HEVC streams (the 3 longest, 8 times over) on %d frame lanes taken by a slow caller: %d frames "
              "identical to the CPU; at most %zu output buffers\n", kLanes, n_frames, most_buffers);
}

// The same streams with the DPB in memory from a PictureAllocator laid out as cudahevcdec's
// GstCudaBufferPool gives it: one buffer a picture, pitched rows (40 samples longer than
// needed), the luma rows, then the chroma rows with Cb and Cr side by side, so that a write
// past Cb's width would land in Cr. Every picture of the reconstructor from the allocator,
// frames identical to the CPU's.
TEST(HevcReconStreams, PicturesFromAnAllocatorMatchCpu) {
  if (!cuda_backend()) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  std::string why;
  const std::vector<std::string> files = stream_files(why);
  if (files.empty()) GTEST_SKIP() << why;
  gvc::cuda::HevcCudaReconstructor recon(0);
  uint64_t calls = 0;
  recon.set_picture_allocator([&](int w, int h, gvc::cuda::PictureMemory& m) -> gvc::Status {
    ++calls;
    auto buf = std::make_shared<DeviceBuffer>();
    const int cw = (w + 1) / 2, ch = (h + 1) / 2, stride = 2 * cw + 40;
    const size_t bytes = size_t(stride) * size_t(h + ch) * sizeof(uint16_t);
    GVC_TRY(buf->reserve(bytes));
    uint16_t* base = buf->get<uint16_t>();
    uint16_t* cb = base + size_t(stride) * h;
    m.plane[0] = {base, stride, w, h};
    m.plane[1] = {cb, stride, cw, ch};
    m.plane[2] = {cb + cw, stride, cw, ch};
    m.bytes = bytes;
    m.owner = buf;
    return {};
  });
  int n_frames = 0;
  for (const std::string& f : files) {
    const std::vector<uint8_t> data = read_file(f);
    const auto cpu = decode_whole(data, nullptr, f);
    const auto gpu = decode_whole(data, &recon, f);
    ASSERT_TRUE(same_frames(cpu, gpu)) << f;
    n_frames += int(cpu.size());
  }
  EXPECT_GT(calls, 0u);
  EXPECT_EQ(calls, recon.allocations());
  std::printf("HEVC streams with the DPB from an allocator (cudahevcdec's layout): %zu streams, %d frames identical to "
              "the CPU, %llu pictures allocated\n",
              files.size(), n_frames, static_cast<unsigned long long>(calls));
}

}  // namespace
}  // namespace checkgpu
