// h264_recon.cpp (checkgpu): the H.264 encoder on the CUDA backend (GPU reconstruction and loop filter) against the CPU one, bit for bit
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "checkgpu.h"
#include "common/h264enc/encoder.h"
#include "common/h264enc/frame_recon.h"

namespace checkgpu {
namespace {

using gvc::h264::Encoder;
using gvc::h264::EncodedFrame;
using gvc::h264::EncoderParams;
using gvc::h264::FrameIn;
using gvc::h264::Macroblock;

enum class Content { Real, Noise };

struct Case {
  int w, h, frames, qp, refs, slices;
  bool deblock;
  Content content;
  gvc::IntraPruneMethod prune = gvc::IntraPruneMethod::None;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::ostringstream s;
  s << c.w << "x" << c.h << "_qp" << c.qp << "_ref" << c.refs << "_sl" << c.slices
    << (c.deblock ? "" : "_nodeblock") << (c.content == Content::Noise ? "_noise" : "_real")
    << (c.prune == gvc::IntraPruneMethod::Kirsch ? "_kirsch" : "");
  return s.str();
}

// I420 frame `i` of the case: a window of the painting panning 3 px right and 2 px down per
// frame (chroma from the painting at other offsets), or noise.
std::vector<uint8_t> make_frame(const Case& c, int i, std::mt19937_64& rng) {
  std::vector<uint8_t> f(size_t(c.w) * c.h * 3 / 2);
  const Plane& e = elephants();
  if (c.content == Content::Noise) {
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& v : f) v = uint8_t(byte(rng));
    return f;
  }
  auto px = [&](int x, int y) {
    return e.pix[size_t(std::min(y, e.height - 1)) * e.stride + std::min(x, e.width - 1)];
  };
  const int ox = 40 + 3 * i, oy = 30 + 2 * i;
  for (int y = 0; y < c.h; y++)
    for (int x = 0; x < c.w; x++) f[size_t(y) * c.w + x] = px(ox + x, oy + y);
  uint8_t* u = f.data() + size_t(c.w) * c.h;
  uint8_t* v = u + size_t(c.w / 2) * (c.h / 2);
  for (int y = 0; y < c.h / 2; y++)
    for (int x = 0; x < c.w / 2; x++) {
      u[size_t(y) * (c.w / 2) + x] = uint8_t(64 + px(2 * (ox + x) + 700, 2 * (oy + y) + 300) / 2);
      v[size_t(y) * (c.w / 2) + x] = uint8_t(192 - px(2 * (ox + x) + 1500, 2 * (oy + y) + 900) / 2);
    }
  return f;
}

// The encoder's parameters of the case, an IDR inside the run too.
EncoderParams params_of(const Case& c) {
  EncoderParams p;
  p.width = c.w;
  p.height = c.h;
  p.rc.qp = c.qp;
  p.ref_frames = c.refs;
  p.slices = c.slices;
  p.deblock.enabled = c.deblock;
  p.analyse.intra_prune = c.prune;
  p.keyint_max = 3;
  return p;
}

// The encoder's view of make_frame's I420 frame `f`.
FrameIn frame_in(const Case& c, const std::vector<uint8_t>& f) {
  FrameIn in;
  in.plane[0] = f.data();
  in.plane[1] = f.data() + size_t(c.w) * c.h;
  in.plane[2] = in.plane[1] + size_t(c.w / 2) * (c.h / 2);
  in.stride[0] = c.w;
  in.stride[1] = in.stride[2] = c.w / 2;
  return in;
}

class H264ReconCheck : public testing::TestWithParam<Case> {};

TEST_P(H264ReconCheck, SameBitstreamAndReconstruction) {
  gvc::Backend* be = cuda_backend();
  if (!be) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  const Case& c = GetParam();
  if (c.content == Content::Real && elephants().pix.empty())
    GTEST_SKIP() << "no real test content (GVC_ELEPHANTS names the raw 4096x2304 luma file)";
  const EncoderParams p = params_of(c);
  Encoder cpu, gpu;
  ASSERT_TRUE(cpu.init(p).ok());
  gvc::Status st = gpu.init(p, be);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_STREQ(gpu.reconstructor_name(), "cuda");
  ASSERT_STREQ(cpu.reconstructor_name(), "cpu");
  std::mt19937_64 rng = rng_for(case_name({c, 0}));
  int intra = 0, inter = 0, pcm = 0;
  for (int i = 0; i < c.frames; i++) {
    std::vector<uint8_t> f = make_frame(c, i, rng);
    const FrameIn in = frame_in(c, f);
    EncodedFrame a, b;
    ASSERT_TRUE(cpu.encode(in, false, a).ok());
    st = gpu.encode(in, false, b);
    ASSERT_TRUE(st.ok()) << st.message();
    const auto& ma = cpu.macroblocks();
    const auto& mb = gpu.macroblocks();
    for (size_t m = 0; m < ma.size(); m++) {
      const Macroblock& x = ma[m];
      const Macroblock& y = mb[m];
      std::string diff;
      auto cmp = [&](const char* name, const auto& a, const auto& b) {
        const auto* pa = reinterpret_cast<const int16_t*>(&a);
        const auto* pb = reinterpret_cast<const int16_t*>(&b);
        int n = 0;
        for (size_t k = 0; k < sizeof(a) / 2; k++) {
          if (pa[k] == pb[k]) continue;
          if (!n++)
            diff += std::string(" ") + name + "[" + std::to_string(k) + "] cpu " + std::to_string(pa[k]) +
                    " gpu " + std::to_string(pb[k]);
        }
        if (n) diff += " (" + std::to_string(n) + " values)";
      };
      if (x.type != y.type || x.cbp != y.cbp) diff = "type or cbp";
      cmp("luma_dc", x.luma_dc, y.luma_dc);
      cmp("luma", x.luma, y.luma);
      cmp("chroma_dc", x.chroma_dc, y.chroma_dc);
      cmp("chroma_ac", x.chroma_ac, y.chroma_ac);
      cmp("mvd", x.mvd, y.mvd);
      if (x.i16_mode != y.i16_mode || x.chroma_mode != y.chroma_mode) diff += " (modes differ)";
      ASSERT_TRUE(diff.empty()) << "frame " << i << ": macroblock " << m % ((c.w + 15) / 16) << ","
                                << m / ((c.w + 15) / 16) << " differs: " << diff << " (type " << int(x.type)
                                << ", cbp " << int(x.cbp) << "/" << int(y.cbp) << ", i16 mode " << int(x.i16_mode)
                                << ", chroma mode " << int(x.chroma_mode) << ")";
      intra += gvc::h264::is_intra(x.type);
      inter += !gvc::h264::is_intra(x.type);
      pcm += x.type == gvc::h264::MbType::IPcm;
    }
    ASSERT_EQ(a.annexb, b.annexb) << "frame " << i << ": bitstreams differ";
    std::vector<uint8_t> ra, rb;
    cpu.recon_i420(ra);
    gpu.recon_i420(rb);
    ASSERT_EQ(ra, rb) << "frame " << i << ": reconstructions differ";
  }
  RecordProperty("intra_mbs", intra);
  RecordProperty("inter_mbs", inter);
  if (c.qp == 0 && c.content == Content::Noise) {
    EXPECT_GT(pcm, 0) << "noise at QP 0 must use I_PCM";
  }
}

std::vector<Case> cases() {
  return {
      {176, 144, 5, 26, 1, 1, true, Content::Real},
      {176, 144, 5, 0, 1, 1, true, Content::Noise},
      {176, 144, 4, 51, 2, 1, true, Content::Real},
      {352, 288, 5, 12, 4, 4, true, Content::Real},
      {352, 288, 4, 34, 4, 1, false, Content::Real},
      {352, 288, 4, 30, 1, 3, true, Content::Real, gvc::IntraPruneMethod::Kirsch},
      {720, 528, 3, 22, 2, 1, true, Content::Real},
      {1366, 768, 3, 28, 1, 4, true, Content::Real},
      {1920, 1080, 3, 24, 1, 1, true, Content::Real},
  };
}

INSTANTIATE_TEST_SUITE_P(H264, H264ReconCheck, testing::ValuesIn(cases()), case_name);

// Pipelined, the CUDA backend hands the entropy coding each macroblock's bits made on the GPU
// (mb_layer_bits.h) instead of its levels: the access units equal the CPU backend's, those
// bits used wherever the picture has no I_PCM macroblock and none longer than their room
// (noise at QP 0 has both: the levels come down then, and the bits go unread).
TEST(H264MbBits, PipelinedStreamEqualsTheCpus) {
  gvc::Backend* be = cuda_backend();
  if (!be) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  if (elephants().pix.empty()) GTEST_SKIP() << "no real test content (GVC_ELEPHANTS)";
  const Case cases[] = {
      {352, 288, 6, 26, 2, 3, true, Content::Real},  {1920, 1080, 4, 22, 1, 1, true, Content::Real},
      {176, 144, 5, 51, 1, 1, true, Content::Real},  {176, 144, 4, 0, 1, 1, true, Content::Noise},
      {720, 528, 4, 10, 4, 2, false, Content::Real},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(case_name({c, 0}));
    const EncoderParams p = params_of(c);
    Encoder cpu, gpu;
    ASSERT_TRUE(cpu.init(p).ok());
    gvc::Status st = gpu.init(p, be);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_TRUE(cpu.set_pipelined(true).ok());
    ASSERT_TRUE(gpu.set_pipelined(true).ok());
    std::mt19937_64 rng = rng_for(case_name({c, 0}));
    int units = 0;
    for (int i = 0; i <= c.frames; i++) {
      EncodedFrame a, b;
      if (i < c.frames) {
        std::vector<uint8_t> f = make_frame(c, i, rng);
        const FrameIn in = frame_in(c, f);
        ASSERT_TRUE(cpu.encode(in, false, a).ok());
        st = gpu.encode(in, false, b);
        ASSERT_TRUE(st.ok()) << st.message();
      } else {
        ASSERT_TRUE(cpu.drain(a).ok());
        st = gpu.drain(b);
        ASSERT_TRUE(st.ok()) << st.message();
      }
      ASSERT_EQ(a.present, b.present) << "frame " << i;
      if (!a.present) continue;
      units++;
      ASSERT_EQ(a.annexb, b.annexb) << "access unit " << units - 1 << ": bitstreams differ";
    }
    EXPECT_EQ(units, c.frames);
    EXPECT_EQ(cpu.bits_frames(), 0);
    RecordProperty("bits_frames_" + case_name({c, 0}), gpu.bits_frames());
    if (c.content == Content::Noise)
      EXPECT_LT(gpu.bits_frames(), c.frames) << "I_PCM macroblocks must take the levels";
    else if (c.qp >= 22)
      EXPECT_EQ(gpu.bits_frames(), c.frames) << "every frame's slices from the GPU's bits";
    else
      EXPECT_GT(gpu.bits_frames(), 0);
  }
}

// Frames in device memory (as a GstCudaMemory gives them: pitched, I420 or NV12) give the
// bitstream and reconstruction the same frames give from host memory, sizes that are not
// whole macroblocks included (the edge is repeated on the device as on the host).
TEST(H264DeviceFrames, SameStreamAsFromHostMemory) {
  gvc::Backend* be = cuda_backend();
  if (!be) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  if (elephants().pix.empty()) GTEST_SKIP() << "no real test content (GVC_ELEPHANTS)";
  for (const bool nv12 : {false, true}) {
    for (const auto& [w, h] : {std::pair<int, int>{176, 144}, {170, 130}}) {
      const Case c{w, h, 4, 26, 2, 2, true, Content::Real};
      EncoderParams p;
      p.width = w;
      p.height = h;
      p.rc.qp = c.qp;
      p.ref_frames = c.refs;
      p.slices = c.slices;
      Encoder host, dev;
      ASSERT_TRUE(host.init(p, be).ok());
      ASSERT_TRUE(dev.init(p, be).ok());
      // a pitched device frame, its rows wider than the picture
      const size_t pitch = size_t(w + 64);
      void* mem = nullptr;
      ASSERT_EQ(cudaMalloc(&mem, pitch * size_t(h) * 2), cudaSuccess);
      uint8_t* d = static_cast<uint8_t*>(mem);
      std::mt19937_64 rng = rng_for("device-frames");
      for (int i = 0; i < c.frames; i++) {
        std::vector<uint8_t> f = make_frame(c, i, rng);
        const uint8_t* u = f.data() + size_t(w) * h;
        const uint8_t* v = u + size_t(w / 2) * (h / 2);
        std::vector<uint8_t> staged(pitch * size_t(h) * 2, 0x5a);
        for (int y = 0; y < h; y++) std::memcpy(&staged[size_t(y) * pitch], &f[size_t(y) * w], size_t(w));
        uint8_t* chroma = staged.data() + pitch * size_t(h);
        for (int y = 0; y < h / 2; y++)
          for (int x = 0; x < w / 2; x++) {
            if (nv12) {
              chroma[size_t(y) * pitch + 2 * x] = u[size_t(y) * (w / 2) + x];
              chroma[size_t(y) * pitch + 2 * x + 1] = v[size_t(y) * (w / 2) + x];
            } else {  // Cb then Cr, each h/2 rows of the same pitch
              chroma[size_t(y) * pitch + x] = u[size_t(y) * (w / 2) + x];
              chroma[size_t(y + h / 2) * pitch + x] = v[size_t(y) * (w / 2) + x];
            }
          }
        ASSERT_EQ(cudaMemcpy(d, staged.data(), staged.size(), cudaMemcpyHostToDevice), cudaSuccess);
        FrameIn in;
        in.plane[0] = f.data();
        in.plane[1] = u;
        in.plane[2] = v;
        in.stride[0] = w;
        in.stride[1] = in.stride[2] = w / 2;
        FrameIn din;
        din.loc = gvc::MemoryLocation::Device;
        din.nv12 = nv12;
        din.plane[0] = d;
        din.plane[1] = d + pitch * size_t(h);
        din.plane[2] = nv12 ? nullptr : din.plane[1] + pitch * size_t(h / 2);
        din.stride[0] = din.stride[1] = din.stride[2] = int(pitch);
        EncodedFrame a, b;
        ASSERT_TRUE(host.encode(in, false, a).ok());
        const gvc::Status st = dev.encode(din, false, b);
        ASSERT_TRUE(st.ok()) << st.message();
        ASSERT_EQ(a.annexb, b.annexb) << (nv12 ? "NV12 " : "I420 ") << w << "x" << h << " frame " << i;
        std::vector<uint8_t> ra, rb;
        host.recon_i420(ra);
        dev.recon_i420(rb);
        ASSERT_EQ(ra, rb) << (nv12 ? "NV12 " : "I420 ") << w << "x" << h << " frame " << i;
      }
      cudaFree(mem);
    }
  }
  // the CPU backend takes no device frames, and says so
  Encoder cpu;
  EncoderParams p;
  p.width = 64;
  p.height = 48;
  ASSERT_TRUE(cpu.init(p).ok());
  FrameIn din;
  din.loc = gvc::MemoryLocation::Device;
  uint8_t dummy[1] = {0};
  din.plane[0] = din.plane[1] = din.plane[2] = dummy;
  din.stride[0] = din.stride[1] = din.stride[2] = 64;
  EncodedFrame out;
  const gvc::Status st = cpu.encode(din, false, out);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("takes no frames in device memory"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace checkgpu

namespace checkgpu {
namespace {

using gvc::h264::MbType;
using gvc::h264::Picture;
using gvc::h264::RefPicture;

// The reconstruction stage alone: random decisions (every intra mode, inter macroblocks with random vectors and references, P_Skip candidates) on real
// content, through the CPU and CUDA reconstructors, must give the same macroblocks and picture.
TEST(H264ReconCore, RandomDecisionsMatchTheCpu) {
  gvc::Backend* be = cuda_backend();
  if (!be) GTEST_SKIP() << "no CUDA device: " << no_cuda_reason();
  if (elephants().pix.empty()) GTEST_SKIP() << "no real test content";
  std::unique_ptr<gvc::h264::FrameReconstructor> gpu = be->h264_reconstructor();
  ASSERT_TRUE(gpu);
  std::unique_ptr<gvc::h264::FrameReconstructor> cpu = gvc::h264::make_cpu_reconstructor();
  std::mt19937_64 rng = rng_for("H264ReconCore");
  const Plane& e = elephants();
  for (int round = 0; round < 6; round++) {
    // odd rounds: the macroblocks by rows (ReconJob::mbs_by_rows), rows of intra macroblocks
    // between rows whose only intra macroblock is the first, which the wavefront finishes
    // before the row above; rounds 2 and 4: taken later (ReconJob::mbs_later, as the pipelined
    // encoder does), enough rows for several bands of H264ReconCore::kLaterBandRows
    const bool by_rows = round % 2 == 1, later = round == 2 || round == 4;
    const int mbw = by_rows ? 12 : 3 + int(rng() % 10);
    const int mbh = by_rows ? 9 : later ? 33 + int(rng() % 8) : 2 + int(rng() % 8);
    const int refs = round == 0 ? 0 : 1 + int(rng() % 4);
    auto fill = [&](Picture& p, int ox, int oy) {
      p.alloc(mbw, mbh);
      for (int c = 0; c < 3; c++)
        for (int y = 0; y < p.height(c); y++)
          for (int x = 0; x < p.width(c); x++)
            *p.at(c, x, y) = e.pix[size_t(oy + y + 400 * c) * e.stride + size_t(ox + x + 300 * c)];
    };
    Picture src;
    fill(src, 100 + 7 * round, 50);
    std::vector<RefPicture> dpb(static_cast<size_t>(refs));
    std::vector<const RefPicture*> ref_ptrs;
    std::vector<uint64_t> ids;
    for (int r = 0; r < refs; r++) {
      fill(dpb[size_t(r)].pic, 100 + 7 * round + 3 * r + 2, 52 + r);
      dpb[size_t(r)].luma.build(dpb[size_t(r)].pic.view(0));
      ref_ptrs.push_back(&dpb[size_t(r)]);
      ids.push_back(1000 * uint64_t(round) + uint64_t(r) + 1);
    }
    std::vector<gvc::h264::Macroblock> mbs(static_cast<size_t>(mbw * mbh));
    const int slices = 1 + int(rng() % 3);
    for (int i = 0; i < mbw * mbh; i++) {
      gvc::h264::Macroblock& m = mbs[size_t(i)];
      m.slice_id = uint16_t(int64_t(i) * slices / (mbw * mbh));
      int kind = int(rng() % (refs ? 4 : 2));
      if (by_rows) kind = (i / mbw) % 2 == 0 ? kind % 2 : i % mbw == 0 ? 0 : 2 + kind % 2;
      // any intra mode: where a neighbour is missing, both sides predict from the same
      // stand-in samples (128), so the modes' arithmetic is compared everywhere
      if (kind == 0) {
        m.type = MbType::I16x16;
        m.i16_mode = uint8_t(rng() % 4);
      } else if (kind == 1) {
        m.type = MbType::I4x4;
        for (auto& md : m.i4_mode) md = uint8_t(rng() % 9);
      } else {
        m.type = kind == 2 ? MbType::PL0_16x16 : MbType::PSkip;
        for (int q = 0; q < 4; q++) m.ref_idx[q] = int8_t(rng() % unsigned(refs));
        for (int b = 0; b < 16; b++) {
          m.mv[b][0] = int16_t(int(rng() % 160) - 80);
          m.mv[b][1] = int16_t(int(rng() % 96) - 48);
        }
        m.mvd[0][0] = 3;
        m.mvd[0][1] = -1;
      }
      m.chroma_mode = uint8_t(rng() % 4);
    }
    const int qp = by_rows ? int(rng() % 24) : int(rng() % 52);  // by rows: levels in every row
    std::vector<gvc::h264::Macroblock> mbs_gpu = mbs;
    Picture rec_cpu, rec_gpu;
    rec_cpu.alloc(mbw, mbh);
    rec_gpu.alloc(mbw, mbh);
    gvc::h264::ReconJob job;
    job.src = &src;
    job.refs = ref_ptrs.data();
    job.ref_ids = ids.data();
    job.num_refs = refs;
    job.rec_id = 1000 * uint64_t(round) + 999;
    job.mb_width = mbw;
    job.mb_height = mbh;
    job.qp = qp;
    job.qpc = gvc::h264::chroma_qp(qp, 0);
    job.p_slice = refs > 0;
    job.deblock = round % 3 != 2;
    job.deblock_params.qp = qp;
    gvc::h264::LumaRefPlanes luma_cpu, luma_gpu;
    std::vector<uint8_t> search_cpu, search_gpu;  // the luma before the loop filter
    job.rec = &rec_cpu;
    job.mbs = mbs.data();
    job.rec_luma = &luma_cpu;
    job.rec_search = &search_cpu;
    ASSERT_TRUE(cpu->run(job).ok());
    job.rec = &rec_gpu;
    job.mbs = mbs_gpu.data();
    job.rec_luma = &luma_gpu;
    job.rec_search = &search_gpu;
    job.mbs_by_rows = by_rows;  // (the Encoder's frames above always are)
    job.mbs_later = later;
    gvc::Status st = gpu->run(job);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(gpu->rows_later(), by_rows || later) << "round " << round;
    for (int r = 1; (by_rows || later) && r <= mbh; r++) {  // rows [0, r) complete after wait_rows(r)
      st = gpu->wait_rows(r);
      ASSERT_TRUE(st.ok()) << st.message();
      for (int i = (r - 1) * mbw; i < r * mbw; i++) {
        ASSERT_EQ(mbs[size_t(i)].cbp, mbs_gpu[size_t(i)].cbp) << "round " << round << " row " << r - 1;
        ASSERT_EQ(0, std::memcmp(mbs[size_t(i)].luma, mbs_gpu[size_t(i)].luma, sizeof(mbs[0].luma)))
            << "round " << round << ": row " << r - 1 << " not complete after wait_rows(" << r << ")";
      }
    }
    st = gpu->finish();  // the loop filter and the reconstruction's downloads
    ASSERT_TRUE(st.ok()) << st.message();
    {
      // The reconstruction's half-pel planes, built on the GPU, equal the CPU's.
      const gvc::h264::LumaRefView a = luma_cpu.view(), b = luma_gpu.view();
      ASSERT_EQ(a.w, b.w);
      ASSERT_EQ(a.h, b.h);
      for (int p = 0; p < 4; p++)
        ASSERT_EQ(0, std::memcmp(a.plane[p], b.plane[p], size_t(a.w) * size_t(a.h)))
            << "round " << round << ": half-pel plane " << p << " differs";
    }
    for (size_t i = 0; i < mbs.size(); i++) {
      const auto& x = mbs[i];
      const auto& y = mbs_gpu[i];
      EXPECT_EQ(int(x.type), int(y.type)) << "round " << round << " mb " << i;
      EXPECT_EQ(x.cbp, y.cbp) << "round " << round << " mb " << i;
      EXPECT_EQ(0, std::memcmp(x.luma_dc, y.luma_dc, sizeof(x.luma_dc))) << "round " << round << " mb " << i
          << " type " << int(x.type) << " luma_dc[0] " << x.luma_dc[0] << "/" << y.luma_dc[0];
      EXPECT_EQ(0, std::memcmp(x.luma, y.luma, sizeof(x.luma))) << "round " << round << " mb " << i;
      EXPECT_EQ(0, std::memcmp(x.chroma_dc, y.chroma_dc, sizeof(x.chroma_dc))) << "round " << round << " mb " << i;
      EXPECT_EQ(0, std::memcmp(x.chroma_ac, y.chroma_ac, sizeof(x.chroma_ac))) << "round " << round << " mb " << i;
      if (testing::Test::HasFailure()) return;
    }
    for (int c = 0; c < 3; c++) ASSERT_EQ(rec_cpu.plane[c], rec_gpu.plane[c]) << "round " << round << " plane " << c;
    ASSERT_EQ(search_cpu, search_gpu) << "round " << round << ": the luma before the loop filter";

    // The reconstruction as the reference of a next frame of inter macroblocks: the GPU reads
    // the copy it kept under rec_id (nothing is uploaded), the CPU the host planes.
    RefPicture next_ref;
    next_ref.pic = rec_cpu;
    next_ref.luma = luma_cpu;
    const RefPicture* next_refs[1] = {&next_ref};
    const uint64_t next_ids[1] = {job.rec_id};
    std::vector<gvc::h264::Macroblock> next(static_cast<size_t>(mbw * mbh));
    for (gvc::h264::Macroblock& m : next) {
      m.type = MbType::PL0_16x16;
      for (int q = 0; q < 4; q++) m.ref_idx[q] = 0;
      const int16_t mx = int16_t(int(rng() % 160) - 80), my = int16_t(int(rng() % 96) - 48);
      for (int b = 0; b < 16; b++) m.mv[b][0] = mx, m.mv[b][1] = my;
    }
    std::vector<gvc::h264::Macroblock> next_gpu = next;
    Picture next_cpu_rec, next_gpu_rec;
    next_cpu_rec.alloc(mbw, mbh);
    next_gpu_rec.alloc(mbw, mbh);
    gvc::h264::ReconJob nj = job;
    nj.refs = next_refs;
    nj.ref_ids = next_ids;
    nj.num_refs = 1;
    nj.rec_id = job.rec_id + 1;
    nj.p_slice = true;
    nj.rec_luma = nullptr;
    nj.rec_search = nullptr;
    nj.mbs_by_rows = nj.mbs_later = false;
    nj.rec = &next_cpu_rec;
    nj.mbs = next.data();
    ASSERT_TRUE(cpu->run(nj).ok());
    nj.rec = &next_gpu_rec;
    nj.mbs = next_gpu.data();
    st = gpu->run(nj);
    ASSERT_TRUE(st.ok()) << st.message();
    st = gpu->finish();
    ASSERT_TRUE(st.ok()) << st.message();
    for (int c = 0; c < 3; c++)
      ASSERT_EQ(next_cpu_rec.plane[c], next_gpu_rec.plane[c]) << "round " << round << ": from the kept reference, plane " << c;
  }
}

}  // namespace
}  // namespace checkgpu
