// encode_test.cpp: encoder streams decoded by FFmpeg must equal the encoder's reconstruction bit for bit
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/bitstream/nal.h"
#include "common/h264enc/encoder.h"
#include "tests/h264/oracle.h"

namespace gvc::h264 {
namespace {

struct Case {
  const char* name;
  int width, height;
  int qp;
  int frames;
  bool intra4x4;
  bool inter;
  bool deblock;
  // Macroblock types and features this configuration must produce on the clip, so that a
  // pass means they were checked (the kUse* bits below).
  unsigned must_use;
  int chroma_qp_index_offset = 0;
  int keyint_max = 250;
  // ffmpeg filter applied to the clip before scaling to width x height (e.g. a moving crop).
  const char* pre_filter = nullptr;
  int alpha_c0_offset_div2 = 0;
  int beta_offset_div2 = 0;
  int slices = 1;
  int ref_frames = 1;
  bool partitions = true;  // 16x8, 8x16 and P_8x8 with sub-partitions; false: P_L0_16x16 only
  // Source instead of the clip: a still image, looped (the pre_filter then pans over it).
  const char* image = nullptr;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

// kUseP: any inter macroblock with syntax (not P_Skip); kUseQpel, kUseLongMv: among their
// vectors, fractional x and y, |x| >= 4 samples; kUseRefN: refIdxL0 > 0 somewhere.
constexpr unsigned kUseI4 = 1, kUseI16 = 2, kUseP = 4, kUseSkip = 8, kUseQpel = 16,
                   kUseLongMv = 32, kUsePcm = 64, kUse16x16 = 128, kUse16x8 = 256, kUse8x16 = 512,
                   kUse8x8 = 1024, kUseSub8x4 = 2048, kUseSub4x8 = 4096, kUseSub4x4 = 8192,
                   kUseRefN = 16384;
constexpr unsigned kUseAllParts = kUse16x16 | kUse16x8 | kUse8x16 | kUse8x8 | kUseSub8x4 |
                                  kUseSub4x8 | kUseSub4x4;

class EncodeVsFfmpeg : public ::testing::TestWithParam<Case> {};

double psnr(const uint8_t* a, const uint8_t* b, size_t n) {
  double sse = 0;
  for (size_t i = 0; i < n; i++) sse += double(a[i] - b[i]) * (a[i] - b[i]);
  return sse == 0 ? 99.0 : 10 * std::log10(255.0 * 255.0 * double(n) / sse);
}

// The source of a case as raw I420 frames: the first frames of the clip (or the looped image),
// through the case's filter, scaled to its size.
void make_source(const Case& c, const std::string& ffmpeg, const std::string& clip,
                 const std::string& dir, std::vector<uint8_t>& src) {
  const size_t frame_size = size_t(c.width) * c.height * 3 / 2;
  const std::string src_path = dir + "/src.yuv";
  std::string filter = "scale=" + std::to_string(c.width) + ":" + std::to_string(c.height);
  if (c.pre_filter) filter = std::string(c.pre_filter) + "," + filter;
  // The image is decoded once and repeated by the loop filter (re-reading a 5640x3172 JPEG
  // per frame would cost more than the encoding).
  if (c.image) filter = "loop=loop=" + std::to_string(c.frames - 1) + ":size=1:start=0," + filter;
  auto r = test::run_command({ffmpeg, "-nostdin", "-v", "error", "-i", c.image ? c.image : clip,
                              "-frames:v", std::to_string(c.frames), "-vf", filter, "-pix_fmt",
                              "yuv420p", "-f", "rawvideo", "-y", src_path});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  ASSERT_TRUE(test::read_file(src_path, src));
  ASSERT_EQ(src.size(), frame_size * c.frames);
}

TEST_P(EncodeVsFfmpeg, DecodedFramesEqualReconstruction) {
  const Case& c = GetParam();
  const std::string ffmpeg = test::find_ffmpeg();
  ASSERT_FALSE(ffmpeg.empty()) << "ffmpeg is not installed (scripts/test.sh installs it); "
                                  "it is the decoder oracle of this test";
  const std::string clip = test::find_test_clip();
  ASSERT_FALSE(clip.empty()) << "test clip missing: install opencv-doc (vtest.avi) or set GVC_TEST_CLIP";
  ASSERT_TRUE(!c.image || access(c.image, R_OK) == 0)
      << c.image << " is missing: install mate-backgrounds";
  test::TempDir dir;
  ASSERT_FALSE(dir.path().empty());

  const size_t frame_size = size_t(c.width) * c.height * 3 / 2;
  std::vector<uint8_t> src;
  make_source(c, ffmpeg, clip, dir.path(), src);
  if (HasFatalFailure()) return;

  EncoderParams p;
  p.width = c.width;
  p.height = c.height;
  p.rc.qp = c.qp;
  p.analyse.intra4x4 = c.intra4x4;
  p.analyse.inter = c.inter;
  p.deblock.enabled = c.deblock;
  p.rc.chroma_qp_index_offset = c.chroma_qp_index_offset;
  p.keyint_max = c.keyint_max;
  p.deblock.alpha_c0_offset_div2 = c.alpha_c0_offset_div2;
  p.deblock.beta_offset_div2 = c.beta_offset_div2;
  p.slices = c.slices;
  p.ref_frames = c.ref_frames;
  p.analyse.part16x8 = p.analyse.part8x8 = p.analyse.sub8x8 = c.partitions;
  // QP 0 cases and the pans search every partition shape exhaustively (no seed-002
  // pre-selection), so that path is decoded too and the pans, which pre-selection codes
  // with fewer sub-partition shapes, still cover every one; the others use the default.
  p.analyse.preselect = c.qp > 0 && !c.image;
  Encoder enc;
  Status st = enc.init(p);
  ASSERT_TRUE(st.ok()) << st.message();

  std::vector<uint8_t> stream, recon, frame_recon;
  unsigned used = 0;
  bool frac_x = false, frac_y = false;
  for (int f = 0; f < c.frames; f++) {
    const uint8_t* y = src.data() + f * frame_size;
    FrameIn in;
    in.plane[0] = y;
    in.plane[1] = y + c.width * c.height;
    in.plane[2] = in.plane[1] + c.width * c.height / 4;
    in.stride[0] = c.width;
    in.stride[1] = in.stride[2] = c.width / 2;
    EncodedFrame out;
    st = enc.encode(in, false, out);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(out.idr, f % c.keyint_max == 0 || !c.inter);
    stream.insert(stream.end(), out.annexb.begin(), out.annexb.end());
    int slice_nals = 0, sps_nals = 0;
    for (const auto& nal : split_annexb(out.annexb.data(), out.annexb.size())) {
      int type = nal[0] & 31;
      slice_nals += type == 1 || type == 5;
      sps_nals += type == 7;
      if (type == 1 || type == 5) {
        EXPECT_EQ(type == 5, out.idr) << "frame " << f;
      }
    }
    EXPECT_EQ(slice_nals, c.slices) << "frame " << f;
    EXPECT_EQ(sps_nals, out.idr ? 1 : 0) << "frame " << f;
    enc.recon_i420(frame_recon);
    ASSERT_EQ(frame_recon.size(), frame_size);
    recon.insert(recon.end(), frame_recon.begin(), frame_recon.end());
    const FrameStats& st = out.stats;
    if (st.count(MbType::I4x4)) used |= kUseI4;
    if (st.count(MbType::I16x16)) used |= kUseI16;
    if (st.count(MbType::PSkip)) used |= kUseSkip;
    if (st.count(MbType::IPcm)) used |= kUsePcm;
    if (st.count(MbType::PL0_16x16)) used |= kUse16x16;
    if (st.count(MbType::PL0_16x8)) used |= kUse16x8;
    if (st.count(MbType::PL0_8x16)) used |= kUse8x16;
    if (st.count(MbType::P8x8)) used |= kUse8x8;
    if (st.sub_mb_type[kSubP8x4]) used |= kUseSub8x4;
    if (st.sub_mb_type[kSubP4x8]) used |= kUseSub4x8;
    if (st.sub_mb_type[kSubP4x4]) used |= kUseSub4x4;
    if (st.ref_idx[1] + st.ref_idx[2] + st.ref_idx[3]) used |= kUseRefN;
    EXPECT_EQ(st.num_ref_idx_active, out.idr ? 0 : std::min(c.ref_frames, f % c.keyint_max));
    for (int r = st.num_ref_idx_active; r < 4; r++) EXPECT_EQ(st.ref_idx[r], 0) << "frame " << f;
    if (!c.partitions) {
      EXPECT_EQ(st.count(MbType::PL0_16x8) + st.count(MbType::PL0_8x16) + st.count(MbType::P8x8), 0);
    }
    for (const Macroblock& mb : enc.macroblocks()) {
      if (is_intra(mb.type) || mb.type == MbType::PSkip) continue;
      used |= kUseP;
      for (const auto& mv : mb.mv) {
        frac_x |= (mv[0] & 3) != 0;
        frac_y |= (mv[1] & 3) != 0;
        if (mv[0] >= 16 || mv[0] <= -16) used |= kUseLongMv;
      }
    }
  }
  if (frac_x && frac_y) used |= kUseQpel;
  EXPECT_EQ(used & c.must_use, c.must_use) << "macroblock types used: 0x" << std::hex << used;

  const std::string h264_path = dir.path() + "/out.264", dec_path = dir.path() + "/dec.yuv";
  ASSERT_TRUE(test::write_file(h264_path, stream));
  auto r = test::run_command({ffmpeg, "-nostdin", "-v", "error", "-err_detect", "crccheck+bitstream+buffer+explode",
                         "-f", "h264", "-i", h264_path, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"},
                        dec_path);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stderr_text, "") << "ffmpeg reported problems decoding the stream";
  std::vector<uint8_t> dec;
  ASSERT_TRUE(test::read_file(dec_path, dec));
  ASSERT_EQ(dec.size(), recon.size()) << "ffmpeg decoded " << dec.size() / frame_size << " of "
                                      << c.frames << " frames";
  for (int f = 0; f < c.frames; f++) {
    for (size_t i = 0; i < frame_size; i++) {
      size_t k = f * frame_size + i;
      if (dec[k] != recon[k]) {
        size_t luma = size_t(c.width) * c.height;
        int plane = i < luma ? 0 : (i < luma * 5 / 4 ? 1 : 2);
        size_t off = plane == 0 ? i : (plane == 1 ? i - luma : i - luma * 5 / 4);
        int w = plane ? c.width / 2 : c.width;
        FAIL() << "frame " << f << " plane " << plane << " first mismatch at x=" << off % w
               << " y=" << off / w << " (macroblock " << (off % w) / (plane ? 8 : 16) << ","
               << (off / w) / (plane ? 8 : 16) << "): decoded " << int(dec[k]) << ", recon "
               << int(recon[k]);
      }
    }
  }
  // The reconstruction must also resemble the source (a broken encoder can agree with itself).
  double q = psnr(src.data(), recon.data(), src.size());
  double floor_db = c.qp <= 10 ? 45 : c.qp <= 26 ? 32 : c.qp <= 40 ? 24 : 18;
  EXPECT_GT(q, floor_db) << "PSNR of the reconstruction against the source";
  std::printf("%s: %zu bytes for %d frames, PSNR %.2f dB\n", c.name, stream.size(), c.frames, q);
}

const char* const kElephants = "/usr/share/backgrounds/mate/abstract/Elephants_5640x3172.jpg";
const char* const kElephantsPan = "crop=704:576:x=2000+13*n:y=1200+5*n";

const Case kCases[] = {
    // Intra only (IDR every frame), Intra_16x16 alone, no loop filter: QP sweep.
    {"i16_qp0", 176, 144, 0, 2, false, false, false, kUseI16},
    {"i16_qp10", 176, 144, 10, 2, false, false, false, kUseI16},
    {"i16_qp26", 176, 144, 26, 2, false, false, false, kUseI16},
    {"i16_qp40", 176, 144, 40, 2, false, false, false, kUseI16},
    {"i16_qp51", 176, 144, 51, 2, false, false, false, kUseI16},
    // Intra_4x4 and Intra_16x16 with mode decision.
    {"intra_qp0", 176, 144, 0, 2, true, false, false, kUseI4},
    {"intra_qp10", 176, 144, 10, 2, true, false, false, kUseI4},
    {"intra_qp26", 176, 144, 26, 2, true, false, false, kUseI4 | kUseI16},
    {"intra_qp40", 176, 144, 40, 2, true, false, false, kUseI4 | kUseI16},
    {"intra_qp51", 176, 144, 51, 2, true, false, false, kUseI16},
    // Sizes that are not multiples of 16 (SPS frame cropping).
    {"intra_crop_174x110", 174, 110, 26, 2, true, false, false, kUseI4 | kUseI16},
    {"intra_crop_18x30", 18, 30, 20, 2, true, false, false, 0},
    // Intra with the loop filter (bS 3 and 4 edges).
    // QP 0 on a noisy clip: some macroblocks cost more than I_PCM's 3072+ bits.
    {"intra_deblock_noise_qp0", 176, 144, 0, 2, true, false, true, kUseI4 | kUsePcm, 0, 250,
     "scale=176:144,noise=alls=12:allf=t"},
    {"p_deblock_noise_qp0", 176, 144, 0, 4, true, true, true, kUseI4 | kUseP | kUsePcm, 0, 250,
     "scale=176:144,noise=alls=12:allf=t"},
    {"intra_deblock_qp26", 176, 144, 26, 2, true, false, true, kUseI4 | kUseI16},
    {"intra_deblock_qp40", 176, 144, 40, 2, true, false, true, kUseI4 | kUseI16},
    // IDR + P frames: P_L0_16x16 and P_Skip with quarter-pel vectors, without and with the
    // loop filter (bS 0..4).
    {"p_qp26", 176, 144, 26, 6, true, true, false, kUseI4 | kUseP | kUseSkip | kUseQpel},
    {"p_qp40", 176, 144, 40, 6, true, true, false, kUseP | kUseSkip},
    {"p_deblock_qp10", 176, 144, 10, 6, true, true, true, kUseI4 | kUseP},
    {"p_deblock_qp26", 176, 144, 26, 6, true, true, true, kUseI4 | kUseP | kUseSkip | kUseQpel},
    {"p_deblock_qp36", 176, 144, 36, 6, true, true, true, kUseP | kUseSkip},
    {"p_deblock_qp51", 176, 144, 51, 6, true, true, true, kUseP | kUseSkip},
    {"p_deblock_crop_174x110", 174, 110, 30, 6, true, true, true, kUseP | kUseSkip},
    {"p_deblock_chroma_offset", 176, 144, 30, 6, true, true, true, kUseP | kUseSkip, -5},
    // A pan of (4.58, 2.75) samples per frame: fractional vectors, new content at the edges.
    {"p_pan_qp28", 176, 144, 28, 6, true, true, true, kUseP | kUseQpel | kUseLongMv, 0, 250,
     "crop=384:288:x=10*n:y=6*n"},
    {"p_deblock_offsets_qp32", 176, 144, 32, 6, true, true, true, kUseP | kUseSkip, 0, 250, nullptr, 6, -3},
    {"p_deblock_offsets_qp20", 176, 144, 20, 6, true, true, true, kUseP, 0, 250, nullptr, -4, 5},
    // Several slices: 99 macroblocks in 4 or 7 slices start mid-row, so neighbours A, B, C, D
    // and the above-right samples of Intra_4x4 cross slice edges (unavailable) and the loop
    // filter crosses them.
    {"intra_slices7_qp26", 176, 144, 26, 2, true, false, true, kUseI4 | kUseI16, 0, 250, nullptr, 0, 0, 7},
    {"p_slices4_qp28", 176, 144, 28, 6, true, true, true, kUseI4 | kUseP | kUseSkip | kUseQpel | kUseLongMv,
     0, 250, "crop=384:288:x=10*n:y=6*n", 0, 0, 4},
    {"p_deblock_keyint3", 176, 144, 24, 7, true, true, true, kUseP | kUseSkip, 4, 3},
    // All P partitionings (16x16, 16x8, 8x16, P_8x8 with 8x8, 8x4, 4x8, 4x4 sub-macroblocks)
    // with 1 and 4 reference frames, on the clip and on a pan over a painting (3.25, 1.25
    // samples per frame after scaling: fractional motion, new content at the edges).
    {"parts_ref1_qp0", 176, 144, 0, 4, true, true, true, kUseAllParts, 0, 250, nullptr, 0, 0, 1, 1},
    {"parts_ref1_qp26", 176, 144, 26, 10, true, true, true, kUseAllParts | kUseSkip | kUseQpel, 0, 250,
     nullptr, 0, 0, 1, 1},
    {"parts_ref1_qp51", 176, 144, 51, 8, true, true, true, kUse16x16 | kUseSkip, 0, 250, nullptr, 0, 0, 1, 1},
    {"parts_ref4_qp0", 176, 144, 0, 5, true, true, true, kUseAllParts | kUseRefN, 0, 250, nullptr, 0, 0, 1, 4},
    {"parts_ref4_qp26", 176, 144, 26, 8, true, true, true, kUseAllParts | kUseSkip | kUseRefN, 0, 250,
     nullptr, 0, 0, 1, 4},
    {"parts_ref4_qp51", 176, 144, 51, 8, true, true, true, kUse16x16 | kUseSkip, 0, 250, nullptr, 0, 0, 1, 4},
    {"pan_ref1_qp26", 176, 144, 26, 8, true, true, true, kUseAllParts | kUseQpel | kUseLongMv, 0, 250,
     kElephantsPan, 0, 0, 1, 1, true, kElephants},
    {"pan_ref4_qp0", 176, 144, 0, 5, true, true, true, kUseAllParts | kUseRefN, 0, 250, kElephantsPan, 0, 0,
     1, 4, true, kElephants},
    {"pan_ref4_qp26", 176, 144, 26, 8, true, true, true, kUseAllParts | kUseRefN, 0, 250, kElephantsPan, 0,
     0, 1, 4, true, kElephants},
    {"pan_ref4_qp51", 176, 144, 51, 8, true, true, true, kUse16x16, 0, 250, kElephantsPan, 0, 0, 1, 4, true,
     kElephants},
    // 4 references, 4 slices, keyint 4 (the list grows again after each IDR).
    {"parts_ref4_slices4_keyint4", 176, 144, 30, 9, true, true, true, kUse16x8 | kUse8x16 | kUse8x8 | kUseRefN,
     0, 4, nullptr, 0, 0, 4, 4},
    // Real sizes, 3 frames each (the CPU engine is slow): the clip scaled to 720x528 (whole
    // macroblocks) and 1366x768 (cropped on the right, 85.375 macroblocks), and a 1920x1080 pan
    // over the painting (13 and 5 samples per frame, no scaling; cropped at the bottom).
    {"size_720x528", 720, 528, 28, 3, true, true, true, kUseI4 | kUseI16 | kUseP | kUseSkip},
    {"size_1366x768", 1366, 768, 28, 3, true, true, true, kUseI4 | kUseI16 | kUseP | kUseSkip},
    {"size_1920x1080_pan", 1920, 1080, 28, 3, true, true, true, kUseI4 | kUseP | kUseLongMv, 0, 250,
     "crop=1920:1080:x=1000+13*n:y=800+5*n", 0, 0, 1, 1, true, kElephants},
    // P_L0_16x16 only, for the comparison with the cases above.
    {"p16_ref1_qp26", 176, 144, 26, 8, true, true, true, kUse16x16 | kUseSkip, 0, 250, nullptr, 0, 0, 1, 1,
     false},
    {"p16_pan_ref1_qp26", 176, 144, 26, 8, true, true, true, kUse16x16, 0, 250, kElephantsPan, 0, 0, 1, 1,
     false, kElephants},
};

// Compression of the partitioned encoder against P_L0_16x16 only, at equal QP on the clip:
// fewer bits at no lower PSNR (bits and PSNR are printed for the record).
TEST(EncodePartitions, SaveBitsAgainst16x16Only) {
  const std::string ffmpeg = test::find_ffmpeg(), clip = test::find_test_clip();
  ASSERT_FALSE(ffmpeg.empty());
  ASSERT_FALSE(clip.empty());
  test::TempDir dir;
  Case c{"cmp", 176, 144, 26, 10, true, true, true, 0};
  std::vector<uint8_t> src;
  make_source(c, ffmpeg, clip, dir.path(), src);
  if (HasFatalFailure()) return;
  const size_t frame_size = size_t(c.width) * c.height * 3 / 2;
  auto encode = [&](bool partitions, int ref_frames, size_t* bytes, double* db) {
    EncoderParams p;
    p.width = c.width;
    p.height = c.height;
    p.rc.qp = c.qp;
    p.ref_frames = ref_frames;
    p.analyse.part16x8 = p.analyse.part8x8 = p.analyse.sub8x8 = partitions;
    Encoder enc;
    ASSERT_TRUE(enc.init(p).ok());
    std::vector<uint8_t> recon, frame;
    *bytes = 0;
    for (int f = 0; f < c.frames; f++) {
      const uint8_t* y = src.data() + f * frame_size;
      FrameIn in{{y, y + c.width * c.height, y + c.width * c.height * 5 / 4}, {c.width, c.width / 2, c.width / 2}};
      EncodedFrame out;
      ASSERT_TRUE(enc.encode(in, false, out).ok());
      *bytes += out.annexb.size();
      enc.recon_i420(frame);
      recon.insert(recon.end(), frame.begin(), frame.end());
    }
    *db = psnr(src.data(), recon.data(), src.size());
  };
  size_t b16 = 0, bparts = 0;
  double q16 = 0, qparts = 0;
  encode(false, 1, &b16, &q16);
  encode(true, 1, &bparts, &qparts);
  std::printf("QP %d, %d frames: 16x16 only %zu bytes %.2f dB; all partitions %zu bytes %.2f dB (%+.1f%% bits)\n",
              c.qp, c.frames, b16, q16, bparts, qparts, 100.0 * (double(bparts) / double(b16) - 1));
  EXPECT_LT(bparts, b16 * 95 / 100);
  EXPECT_GT(qparts, q16 - 0.05);
}

// The frame-level pipeline (Encoder::set_pipelined): every access unit comes one encode()
// later (the first call gives none, drain() the last) and is the one the encoder gives
// without the pipeline, byte for byte, through IDRs (key-int and forced), a QP change, two
// slices and two references; an encoder holding a frame refuses to leave the pipeline.
TEST(EncodePipeline, SameAccessUnitsOneCallLater) {
  const std::string ffmpeg = test::find_ffmpeg(), clip = test::find_test_clip();
  ASSERT_FALSE(ffmpeg.empty());
  ASSERT_FALSE(clip.empty());
  test::TempDir dir;
  Case c{"pipe", 176, 144, 30, 12, true, true, true, 0};
  std::vector<uint8_t> src;
  make_source(c, ffmpeg, clip, dir.path(), src);
  if (HasFatalFailure()) return;
  const size_t frame_size = size_t(c.width) * c.height * 3 / 2;
  EncoderParams p;
  p.width = c.width;
  p.height = c.height;
  p.rc.qp = c.qp;
  p.ref_frames = 2;
  p.slices = 2;
  p.keyint_max = 5;
  auto encode = [&](Encoder& enc, int f, EncodedFrame& out) {
    const uint8_t* y = src.data() + f * frame_size;
    FrameIn in{{y, y + c.width * c.height, y + c.width * c.height * 5 / 4}, {c.width, c.width / 2, c.width / 2}};
    if (f == 9) {
      ASSERT_TRUE(enc.set_qp(34).ok());
    }
    ASSERT_TRUE(enc.encode(in, f == 7, out).ok());
  };
  Encoder plain, piped;
  ASSERT_TRUE(plain.init(p).ok());
  ASSERT_TRUE(piped.init(p).ok());
  ASSERT_TRUE(piped.set_pipelined(true).ok());
  std::vector<EncodedFrame> want(size_t(c.frames)), got;
  for (int f = 0; f < c.frames; f++) {
    encode(plain, f, want[size_t(f)]);
    EXPECT_TRUE(want[size_t(f)].present);
    EncodedFrame out;
    encode(piped, f, out);
    EXPECT_EQ(out.present, f > 0) << "frame " << f;
    if (out.present) got.push_back(std::move(out));
  }
  EXPECT_FALSE(piped.set_pipelined(false).ok()) << "left the pipeline with a frame held";
  EncodedFrame last;
  ASSERT_TRUE(piped.drain(last).ok());
  ASSERT_TRUE(last.present);
  got.push_back(std::move(last));
  ASSERT_TRUE(piped.drain(last).ok());
  EXPECT_FALSE(last.present) << "drained twice";
  EXPECT_TRUE(piped.set_pipelined(false).ok());
  ASSERT_EQ(got.size(), want.size());
  for (size_t f = 0; f < want.size(); f++) {
    EXPECT_EQ(got[f].idr, want[f].idr) << "frame " << f;
    EXPECT_EQ(got[f].frame_num, want[f].frame_num) << "frame " << f;
    EXPECT_EQ(got[f].qp, want[f].qp) << "frame " << f;
    EXPECT_EQ(got[f].stats.count(MbType::PSkip), want[f].stats.count(MbType::PSkip)) << "frame " << f;
    EXPECT_TRUE(got[f].annexb == want[f].annexb) << "frame " << f << ": " << got[f].annexb.size() << " vs "
                                                 << want[f].annexb.size() << " bytes";
  }
  EXPECT_TRUE(want[5].idr && want[7].idr && want[0].idr && !want[6].idr);
}

INSTANTIATE_TEST_SUITE_P(H264, EncodeVsFfmpeg, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace gvc::h264
