// decode_test.cpp: x265 streams of real content decode bit-exactly as FFmpeg decodes them
#include <gtest/gtest.h>

#include <gst/codecparsers/gsth265parser.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <cstring>

#include "common/hevcdec/decoder.h"
#include "tests/hevc/stream_oracle.h"

namespace {

struct StreamCase {
  const char* name;
  int width, height, frames;
  const char* pix_fmt;
  const char* x265_params;
  const char* extra_vf = "";  // appended to the scaling filter (e.g. a fade for weighted prediction)
  // What the stream must contain, comma separated: P, B (slices of that type), W (explicit
  // weights in use), RASL, NOTMVP (slice_temporal_mvp_enabled_flag 0), R<n> (n references).
  const char* expect = "";
  // > 2: the PPS is rewritten to this Log2ParMrgLevel (with_parallel_merge_level)
  int log2_par_mrg_level = 0;
};

void check_features(const std::vector<uint8_t>& stream, const std::string& expect) {
  const gvc::test::StreamFeatures f = gvc::test::stream_features(stream);
  std::string item;
  for (size_t i = 0; i <= expect.size(); ++i) {
    if (i < expect.size() && expect[i] != ',') {
      item += expect[i];
      continue;
    }
    if (item == "P") EXPECT_GT(f.slices[GST_H265_P_SLICE], 0) << "no P slice";
    if (item == "B") EXPECT_GT(f.slices[GST_H265_B_SLICE], 0) << "no B slice";
    if (item == "W") EXPECT_GT(f.weighted, 0) << "no slice with explicit weights";
    if (item == "RASL") EXPECT_GT(f.rasl, 0) << "no RASL picture";
    if (item == "NOTMVP") EXPECT_GT(f.tmvp_off, 0) << "TMVP never off";
    if (item.size() > 1 && item[0] == 'R' && item != "RASL")
      EXPECT_GE(f.max_refs, std::atoi(item.c_str() + 1)) << "fewer references than " << item;
    item.clear();
  }
}

void PrintTo(const StreamCase& c, std::ostream* os) { *os << c.name; }

// The decoder's frame as ffmpeg's rawvideo bytes (8 bit, or 16-bit little endian).
std::vector<uint8_t> to_raw(const gvc::hevc::DecodedFrame& f) {
  std::vector<uint8_t> out;
  for (int c = 0; c < 3; ++c)
    for (uint16_t v : f.planes[c]) {
      if (f.bit_depth == 8) {
        out.push_back(static_cast<uint8_t>(v));
      } else {
        out.push_back(static_cast<uint8_t>(v & 0xff));
        out.push_back(static_cast<uint8_t>(v >> 8));
      }
    }
  return out;
}

// First differing sample as text, for a readable failure.
std::string first_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int w, int h,
                       int bytes) {
  const size_t ysz = size_t(w) * h * bytes;
  const size_t csz = size_t((w + 1) / 2) * ((h + 1) / 2) * bytes;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (a[i] != b[i]) {
      int plane = i < ysz ? 0 : (i < ysz + csz ? 1 : 2);
      size_t o = plane == 0 ? i : (plane == 1 ? i - ysz : i - ysz - csz);
      const int pw = plane ? (w + 1) / 2 : w;
      char buf[128];
      snprintf(buf, sizeof(buf), "plane %d x %zu y %zu: ours %d ffmpeg %d", plane,
               (o / bytes) % pw, (o / bytes) / pw, a[i], b[i]);
      return buf;
    }
  return a.size() == b.size() ? "equal" : "sizes differ";
}

class HevcDecodeTest : public ::testing::TestWithParam<StreamCase> {};

TEST_P(HevcDecodeTest, MatchesFfmpegFrameByFrame) {
  const StreamCase& c = GetParam();
  ASSERT_FALSE(gvc::test::hevc_find_ffmpeg().empty()) << "ffmpeg is required (set $FFMPEG)";
  const std::string clip = gvc::test::hevc_find_clip();
  ASSERT_FALSE(clip.empty()) << "test clip missing (opencv-doc's vtest.avi or $GVC_TEST_CLIP)";
  std::string err;
  const std::vector<uint8_t> encoded =
      gvc::test::x265_encode(clip, c.width, c.height, c.frames, c.pix_fmt, c.x265_params, err,
                             c.extra_vf);
  ASSERT_FALSE(encoded.empty()) << err;
  const std::vector<uint8_t> stream =
      c.log2_par_mrg_level > 2 ? gvc::test::with_parallel_merge_level(encoded, c.log2_par_mrg_level) : encoded;
  ASSERT_FALSE(stream.empty()) << "PPS could not be rewritten";
  if (c.log2_par_mrg_level > 2)
    EXPECT_EQ(gvc::test::stream_features(stream).log2_par_mrg_level, c.log2_par_mrg_level);
  check_features(stream, c.expect);
  const int bytes = std::strcmp(c.pix_fmt, "yuv420p") == 0 ? 1 : 2;
  const size_t frame_bytes =
      (size_t(c.width) * c.height + 2 * size_t((c.width + 1) / 2) * ((c.height + 1) / 2)) * bytes;
  const auto ref = gvc::test::ffmpeg_decode(stream, c.pix_fmt, frame_bytes, err);
  ASSERT_TRUE(err.empty()) << err;
  ASSERT_EQ(ref.size(), size_t(c.frames));
  if (stream != encoded)  // the rewrite must change the decoded pictures, or it tests nothing
    EXPECT_NE(gvc::test::ffmpeg_decode(encoded, c.pix_fmt, frame_bytes, err), ref);

  gvc::hevc::Decoder dec;
  EXPECT_TRUE(dec.decode(stream.data(), stream.size())) << dec.error();
  dec.flush();
  std::vector<std::vector<uint8_t>> ours;
  gvc::hevc::DecodedFrame f;
  while (dec.take_frame(f)) {
    EXPECT_EQ(f.width, c.width);
    EXPECT_EQ(f.height, c.height);
    ours.push_back(to_raw(f));
  }
  ASSERT_EQ(ours.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_TRUE(ours[i] == ref[i]) << "frame " << i << ": "
                                   << first_diff(ours[i], ref[i], c.width, c.height, bytes);
}

// Intra-only streams; every case is a few small frames so the suite stays fast.
const StreamCase kIntraCases[] = {
    {"intra_nofilter_ctu16", 176, 144, 3, "yuv420p",
     "keyint=1:ctu=16:no-deblock=1:no-sao=1:qp=30"},
    {"intra_nofilter_ctu32_qp22", 176, 144, 3, "yuv420p",
     "keyint=1:ctu=32:no-deblock=1:no-sao=1:qp=22"},
    {"intra_nofilter_ctu64_aq", 416, 240, 2, "yuv420p",
     "keyint=1:ctu=64:no-deblock=1:no-sao=1:crf=28:aq-mode=2"},
    {"intra_deblock_sao_ctu32", 176, 144, 3, "yuv420p", "keyint=1:ctu=32:qp=32"},
    {"intra_deblock_offsets_sao_ctu16", 176, 144, 2, "yuv420p",
     "keyint=1:ctu=16:crf=35:deblock=-2,3"},
    {"intra_deblock_only_ctu64_lowqp", 416, 240, 2, "yuv420p", "keyint=1:ctu=64:qp=18:no-sao=1"},
    {"intra_sao_only_noWPP", 416, 240, 2, "yuv420p", "keyint=1:ctu=32:qp=34:no-deblock=1:wpp=0"},
    {"intra_3slices_wpp", 416, 240, 2, "yuv420p", "keyint=1:ctu=16:qp=30:slices=3"},
    {"intra_tskip_tudepth_cip", 176, 144, 2, "yuv420p",
     "keyint=1:ctu=32:qp=27:tskip=1:tu-intra-depth=3:constrained-intra=1:rdoq-level=2"},
    {"intra_scaling_lists_default", 176, 144, 2, "yuv420p", "keyint=1:ctu=32:qp=30:scaling-list=default"},
    {"intra_no_signhide_chroma_offsets", 176, 144, 2, "yuv420p",
     "keyint=1:ctu=16:qp=30:signhide=0:cbqpoffs=3:crqpoffs=-4"},
    {"intra_lossless", 176, 144, 2, "yuv420p", "keyint=1:ctu=16:lossless=1"},
    {"intra_odd_size_crop", 170, 100, 2, "yuv420p", "keyint=1:ctu=32:qp=30"},
    {"intra_main10", 176, 144, 2, "yuv420p10le", "keyint=1:ctu=32:qp=30"},
    {"intra_main10_odd_nofilter", 170, 100, 2, "yuv420p10le", "keyint=1:ctu=16:qp=24:no-sao=1:no-deblock=1"},
};
INSTANTIATE_TEST_SUITE_P(Intra, HevcDecodeTest, ::testing::ValuesIn(kIntraCases),
                         [](const auto& info) { return std::string(info.param.name); });

// P and B streams: merge/AMVP, TMVP, weighted prediction, AMP, reference lists.
const StreamCase kInterCases[] = {
    {"p_only_ctu32", 176, 144, 8, "yuv420p", "keyint=30:bframes=0:ctu=32:qp=30", "", "P"},
    {"p_only_nofilter_ctu16", 176, 144, 6, "yuv420p",
     "keyint=30:bframes=0:ctu=16:qp=27:no-deblock=1:no-sao=1", "", "P"},
    {"p_4refs", 176, 144, 8, "yuv420p", "keyint=30:bframes=0:ctu=32:qp=28:ref=4", "", "P,R4"},
    {"b_pyramid", 176, 144, 9, "yuv420p", "keyint=30:bframes=3:b-pyramid=1:ctu=32:qp=30:ref=3", "", "B,R3"},
    {"b_nopyramid_ctu16_2refs", 176, 144, 8, "yuv420p",
     "keyint=30:bframes=2:b-pyramid=0:ctu=16:qp=26:ref=2", "", "B,R2"},
    {"b_amp_rect", 416, 240, 5, "yuv420p", "keyint=30:bframes=2:ctu=64:qp=24:amp=1:rect=1:ref=2:rskip=0:early-skip=0:limit-modes=0", "", "B"},
    {"b_no_tmvp", 176, 144, 8, "yuv420p", "keyint=30:bframes=3:ctu=32:qp=30:temporal-mvp=0", "", "B,NOTMVP"},
    {"b_max_merge1", 176, 144, 6, "yuv420p", "keyint=30:bframes=2:ctu=32:qp=30:max-merge=1", "", "B"},
    {"b_max_merge3_ctu64", 176, 144, 6, "yuv420p", "keyint=30:bframes=2:ctu=64:qp=30:max-merge=3", "", "B"},
    {"b_max_merge5_rect", 176, 144, 6, "yuv420p",
     "keyint=30:bframes=2:ctu=16:qp=32:max-merge=5:rect=1", "", "B"},
    {"weightp_fade", 176, 144, 8, "yuv420p", "keyint=30:bframes=0:ctu=32:qp=28:weightp=1",
     "fade=in:0:8", "P,W"},
    {"weightb_fade", 176, 144, 9, "yuv420p",
     "keyint=30:bframes=3:ctu=32:qp=28:weightp=1:weightb=1:ref=2", "fade=out:0:9", "B,W"},
    {"b_main10", 176, 144, 7, "yuv420p10le", "keyint=30:bframes=2:ctu=32:qp=30", "", "B"},
    {"b_main10_weightp", 176, 144, 7, "yuv420p10le", "keyint=30:bframes=2:ctu=32:qp=28:weightp=1:weightb=1",
     "fade=in:0:7", "B,W"},
    {"b_odd_size", 170, 100, 8, "yuv420p", "keyint=30:bframes=3:ctu=32:qp=28:ref=2", "", "B,R2"},
    {"b_wpp_slices_tskip", 176, 144, 6, "yuv420p", "keyint=30:bframes=2:ctu=16:qp=30:slices=2:tskip=1", "", "B"},
    {"open_gop_cra_rasl", 176, 144, 10, "yuv420p", "keyint=4:min-keyint=4:bframes=2:open-gop=1:ctu=32:qp=30", "", "B,RASL"},
    // Log2ParMrgLevel 3 and 4 (PPS rewritten): shared merge lists of 8x8 coding units
    // (singleMCLFlag) and candidates dropped inside a merge estimation region
    {"b_par_merge_level3", 176, 144, 6, "yuv420p", "keyint=30:bframes=2:ctu=16:qp=30:rect=1:amp=1",
     "", "B", 3},
    {"b_par_merge_level4", 176, 144, 6, "yuv420p", "keyint=30:bframes=2:ctu=32:qp=30:rect=1", "", "B", 4},
    {"b_lossless", 176, 144, 5, "yuv420p", "keyint=30:bframes=2:ctu=16:lossless=1", "", "B"},
};
INSTANTIATE_TEST_SUITE_P(Inter, HevcDecodeTest, ::testing::ValuesIn(kInterCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace

namespace {

// An open-GOP stream cut at its second CRA: the stream starts with a CRA whose RASL pictures
// reference pictures that are not there. They are not output (NoRaslOutputFlag 1, 8.1.3), and
// everything else matches FFmpeg, frame by frame and in count.
TEST(HevcDecodeOpenGop, StreamStartingAtCraSkipsItsRaslPictures) {
  ASSERT_FALSE(gvc::test::hevc_find_ffmpeg().empty()) << "ffmpeg is required (set $FFMPEG)";
  const std::string clip = gvc::test::hevc_find_clip();
  ASSERT_FALSE(clip.empty()) << "test clip missing";
  std::string err;
  const auto full = gvc::test::x265_encode(clip, 176, 144, 12, "yuv420p",
                                           "keyint=4:min-keyint=4:bframes=2:open-gop=1:ctu=32:qp=30", err);
  ASSERT_FALSE(full.empty()) << err;
  // parameter sets are repeated before every IRAP picture: cut at the second VPS
  const size_t cut = gvc::test::nth_nal_offset(full, 32, 1);
  ASSERT_LT(cut, full.size());
  const std::vector<uint8_t> stream(full.begin() + long(cut), full.end());
  const gvc::test::StreamFeatures f = gvc::test::stream_features(stream);
  ASSERT_GT(f.cra, 0);
  ASSERT_GT(f.rasl, 0);
  const size_t frame_bytes = 176 * 144 * 3 / 2;
  const auto ref = gvc::test::ffmpeg_decode(stream, "yuv420p", frame_bytes, err);
  ASSERT_FALSE(ref.empty()) << err;

  gvc::hevc::Decoder dec;
  EXPECT_TRUE(dec.decode(stream.data(), stream.size())) << dec.error();
  dec.flush();
  std::vector<std::vector<uint8_t>> ours;
  gvc::hevc::DecodedFrame fr;
  while (dec.take_frame(fr)) ours.push_back(to_raw(fr));
  ASSERT_EQ(ours.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_TRUE(ours[i] == ref[i]) << "frame " << i << ": " << first_diff(ours[i], ref[i], 176, 144, 1);
}

// Streams rewritten to use syntax x265 does not produce (stream_oracle.h rewriters).
using Rewrite = std::vector<uint8_t> (*)(const std::vector<uint8_t>&, int*);

// Encodes with each of `params`, rewrites the stream, and checks that the rewrite touched at
// least `min_changed` slices, changed FFmpeg's output, and that ours equals FFmpeg's.
void rewritten_matches_ffmpeg(std::initializer_list<const char*> all_params, int frames, Rewrite rewrite,
                              int min_changed) {
  ASSERT_FALSE(gvc::test::hevc_find_ffmpeg().empty()) << "ffmpeg is required (set $FFMPEG)";
  const std::string clip = gvc::test::hevc_find_clip();
  ASSERT_FALSE(clip.empty()) << "test clip missing";
  for (const char* params : all_params) {
    std::string err;
    const auto encoded = gvc::test::x265_encode(clip, 176, 144, frames, "yuv420p", params, err);
    ASSERT_FALSE(encoded.empty()) << err;
    int changed = 0;
    const auto stream = rewrite(encoded, &changed);
    ASSERT_FALSE(stream.empty()) << "stream could not be rewritten";
    EXPECT_GE(changed, min_changed);
    const size_t frame_bytes = 176 * 144 * 3 / 2;
    const auto ref = gvc::test::ffmpeg_decode(stream, "yuv420p", frame_bytes, err);
    ASSERT_TRUE(err.empty()) << err;
    ASSERT_EQ(ref.size(), size_t(frames));
    EXPECT_NE(gvc::test::ffmpeg_decode(encoded, "yuv420p", frame_bytes, err), ref);

    gvc::hevc::Decoder dec;
    EXPECT_TRUE(dec.decode(stream.data(), stream.size())) << dec.error();
    dec.flush();
    std::vector<std::vector<uint8_t>> ours;
    gvc::hevc::DecodedFrame fr;
    while (dec.take_frame(fr)) ours.push_back(to_raw(fr));
    ASSERT_EQ(ours.size(), ref.size()) << params;
    for (size_t i = 0; i < ref.size(); ++i)
      EXPECT_TRUE(ours[i] == ref[i]) << params << " frame " << i << ": "
                                     << first_diff(ours[i], ref[i], 176, 144, 1);
  }
}

// Long-term reference pictures, which x265 does not make: a P stream with two references is
// rewritten so that each picture's older reference is long-term (with_long_term_refs). That
// changes the prediction (no scaling towards a long-term picture in AMVP and TMVP, merge and
// AMVP candidates of the other kind dropped), so the rewrite must change FFmpeg's output, and
// ours must equal it.
TEST(HevcDecodeLongTerm, OlderReferenceAsLongTermPicture) {
  rewritten_matches_ffmpeg({"keyint=30:bframes=0:ref=2:ctu=32:qp=30",
                            "keyint=30:bframes=0:ref=2:ctu=16:qp=26:rect=1:amp=1:no-sao=1"},
                           8, gvc::test::with_long_term_refs, 5);
}

// Reference picture list modification (8.3.4), which x265 does not use either: list entries
// rotated in P and B slices.
TEST(HevcDecodeListModification, RotatedReferenceLists) {
  rewritten_matches_ffmpeg({"keyint=30:bframes=0:ref=3:ctu=32:qp=30",
                            "keyint=30:bframes=3:b-pyramid=1:ref=3:ctu=32:qp=30:weightb=1"},
                           8, gvc::test::with_list_modification, 4);
}

// Damaged inputs (seeded truncations and bit flips of a real stream) must neither crash nor
// hang; an intact stream decoded afterwards by the same decoder must still be exact, because
// decoding resumes at the next IRAP picture.
void damaged_then_clean(const char* x265_params, int frames, int rounds) {
  ASSERT_FALSE(gvc::test::hevc_find_ffmpeg().empty()) << "ffmpeg is required (set $FFMPEG)";
  const std::string clip = gvc::test::hevc_find_clip();
  ASSERT_FALSE(clip.empty()) << "test clip missing";
  std::string err;
  const auto stream = gvc::test::x265_encode(clip, 176, 144, frames, "yuv420p", x265_params, err);
  ASSERT_FALSE(stream.empty()) << err;
  const size_t frame_bytes = 176 * 144 * 3 / 2;
  const auto ref = gvc::test::ffmpeg_decode(stream, "yuv420p", frame_bytes, err);
  ASSERT_EQ(ref.size(), size_t(frames)) << err;

  uint32_t seed = 12345;
  auto rnd = [&seed]() {
    seed = seed * 1664525u + 1013904223u;
    return seed >> 8;
  };
  for (int round = 0; round < rounds; ++round) {
    std::vector<uint8_t> bad = stream;
    if (round % 3 == 0) {
      bad.resize(rnd() % bad.size());
    } else {
      const int flips = 1 + int(rnd() % 8);
      for (int i = 0; i < flips; ++i) bad[rnd() % bad.size()] ^= uint8_t(1u << (rnd() % 8));
    }
    gvc::hevc::Decoder dec;
    dec.decode(bad.data(), bad.size());
    dec.flush();
    gvc::hevc::DecodedFrame f;
    int n = 0;
    while (dec.take_frame(f)) ++n;
    EXPECT_LE(n, 2 * frames) << "round " << round;
    // the same decoder recovers on the intact stream
    dec.decode(stream.data(), stream.size());
    dec.flush();
    std::vector<std::vector<uint8_t>> ours;
    while (dec.take_frame(f)) ours.push_back(to_raw(f));
    ASSERT_EQ(ours.size(), ref.size()) << "round " << round;
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_TRUE(ours[i] == ref[i]) << "round " << round << " frame " << i;
  }
}

TEST(HevcDecodeRobustness, DamagedStreamsThenCleanStream) { damaged_then_clean("keyint=1:ctu=16:qp=28", 2, 24); }

// The same with P and B pictures: damaged motion data (reference indices, huge vectors,
// merge indices) must stay inside the pictures.
TEST(HevcDecodeRobustness, DamagedInterStreamsThenCleanStream) {
  damaged_then_clean("keyint=30:bframes=2:ctu=16:qp=30:weightp=1:weightb=1", 5, 24);
}

}  // namespace
