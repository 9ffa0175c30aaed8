// decode_test.cpp: x265 streams of real content decode bit-exactly as FFmpeg decodes them, and as libde265 does
#include <gtest/gtest.h>

#include <gst/codecparsers/gsth265parser.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include <unistd.h>

#include "common/hevcdec/decoder.h"
#include "tests/hevc/stream_oracle.h"

namespace {

using Frames = std::vector<std::vector<uint8_t>>;

// A rewrite of an x265 stream into syntax x265 does not produce (stream_oracle.h); `changed`
// receives how many NAL units or pictures it changed.
using Rewrite = std::vector<uint8_t> (*)(const std::vector<uint8_t>&, int* changed);

template <int kLevel>
std::vector<uint8_t> par_merge_level(const std::vector<uint8_t>& s, int* changed) {
  *changed = 1;
  return gvc::test::with_parallel_merge_level(s, kLevel);
}

struct StreamCase {
  const char* name;
  int width, height, frames;
  const char* pix_fmt;
  const char* x265_params;
  const char* extra_vf = "";  // appended to the scaling filter (e.g. a fade for weighted prediction)
  // What the stream must contain, comma separated: P, B (slices of that type), W (explicit
  // weights in use), RASL, NOTMVP (slice_temporal_mvp_enabled_flag 0), R<n> (n references),
  // R=<n> (exactly n), PML<n> (Log2ParMrgLevel n), HIDDEN (pictures with pic_output_flag 0),
  // CIP (constrained_intra_pred_flag), NOWPP (no entropy_coding_sync_enabled_flag), SL
  // (scaling lists sent in the SPS), TB<n> (MaxTbLog2SizeY n).
  const char* expect = "";
  Rewrite rewrite = nullptr;  // applied to x265's stream before decoding
  int min_changed = 0;        // the rewrite must change at least this many
  bool hides = false;         // the rewrite hides `changed` pictures (pic_output_flag 0)
};

void check_features(const std::vector<uint8_t>& stream, const std::string& expect) {
  const gvc::test::StreamFeatures f = gvc::test::stream_features(stream);
  std::string item;
  for (size_t i = 0; i <= expect.size(); ++i) {
    if (i < expect.size() && expect[i] != ',') {
      item += expect[i];
      continue;
    }
    if (item == "P") {
      EXPECT_GT(f.slices[GST_H265_P_SLICE], 0) << "no P slice";
    } else if (item == "B") {
      EXPECT_GT(f.slices[GST_H265_B_SLICE], 0) << "no B slice";
    } else if (item == "W") {
      EXPECT_GT(f.weighted, 0) << "no slice with explicit weights";
    } else if (item == "RASL") {
      EXPECT_GT(f.rasl, 0) << "no RASL picture";
    } else if (item == "NOTMVP") {
      EXPECT_GT(f.tmvp_off, 0) << "TMVP never off";
    } else if (item == "HIDDEN") {
      EXPECT_GT(f.hidden, 0) << "no picture with pic_output_flag 0";
    } else if (item == "CIP") {
      EXPECT_GT(f.cip, 0) << "constrained intra prediction never on";
    } else if (item == "NOWPP") {
      EXPECT_EQ(f.wpp, 0) << "WPP on";
    } else if (item == "SL") {
      EXPECT_GT(f.scaling_list_data, 0) << "no SPS with scaling_list_data()";
    } else if (item.rfind("PML", 0) == 0) {
      EXPECT_EQ(f.log2_par_mrg_level, std::atoi(item.c_str() + 3));
    } else if (item.rfind("TB", 0) == 0) {
      EXPECT_EQ(f.max_tb_log2, std::atoi(item.c_str() + 2));
    } else if (item.rfind("R=", 0) == 0) {
      EXPECT_EQ(f.max_refs, std::atoi(item.c_str() + 2));
    } else if (item.size() > 1 && item[0] == 'R') {
      EXPECT_GE(f.max_refs, std::atoi(item.c_str() + 1)) << "fewer references than " << item;
    }
    item.clear();
  }
}

void PrintTo(const StreamCase& c, std::ostream* os) { *os << c.name; }

size_t frame_bytes(int w, int h, int bytes) {
  return (size_t(w) * h + 2 * size_t((w + 1) / 2) * ((h + 1) / 2)) * bytes;
}

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
      snprintf(buf, sizeof(buf), "plane %d x %zu y %zu: ours %d theirs %d", plane,
               (o / bytes) % pw, (o / bytes) / pw, a[i], b[i]);
      return buf;
    }
  return a.size() == b.size() ? "equal" : "sizes differ";
}

// Our frames: the whole stream in one decode(), or access unit by access unit with
// end_access_unit() after each (as cudahevcdec does); both must give the same frames.
Frames decode_ours(const std::vector<uint8_t>& stream, bool by_access_unit) {
  gvc::hevc::Decoder dec;
  if (by_access_unit) {
    for (const auto& au : gvc::test::split_access_units(stream)) {
      EXPECT_TRUE(dec.decode(au.data(), au.size())) << dec.error();
      dec.end_access_unit();
    }
  } else {
    EXPECT_TRUE(dec.decode(stream.data(), stream.size())) << dec.error();
  }
  dec.flush();
  Frames out;
  gvc::hevc::DecodedFrame f;
  while (dec.take_frame(f)) out.push_back(to_raw(f));
  return out;
}

void expect_same_frames(const Frames& ours, const Frames& theirs, int w, int h, int bytes,
                        const std::string& who) {
  ASSERT_EQ(ours.size(), theirs.size()) << who;
  for (size_t i = 0; i < theirs.size(); ++i)
    EXPECT_TRUE(ours[i] == theirs[i]) << who << ", frame " << i << ": "
                                      << first_diff(ours[i], theirs[i], w, h, bytes);
}

// `sub` is `all` with some frames left out, in the same order.
bool is_subsequence(const Frames& sub, const Frames& all) {
  size_t j = 0;
  for (size_t i = 0; i < all.size() && j < sub.size(); ++i) j += all[i] == sub[j];
  return j == sub.size();
}

// libde265's frames of `stream`, for the second opinion. libde265 1.0.11 (Debian 12's
// libde265-examples) loses the references of RASL pictures when the SPS is sent again before
// a CRA picture that does not start the stream: dec265 warns "non-existing reference picture
// accessed" and outputs other RASL pictures than FFmpeg and we do. x265's open-GOP streams
// repeat VPS, SPS and PPS before every CRA; with the byte-identical repeats removed (which
// changes nothing in the decoding process) dec265's frames equal FFmpeg's. So dec265 gets the
// stream without them; Libde265RepeatedSpsBeforeCra below keeps the explanation checked.
Frames dec265_frames(const std::vector<uint8_t>& stream, size_t frame_bytes, std::string& err) {
  int dropped = 0;
  return gvc::test::dec265_decode(gvc::test::without_repeated_parameter_sets(stream, &dropped), frame_bytes, err);
}

// In a case's x265_params, the path of a scaling-list file in HM's format that prepare()
// writes for the encode (x265 --scaling-list FILE): SPS scaling_list_data() with lists of every
// kind. x265 sends a list equal to an earlier one of its size as predicted
// (scaling_list_pred_matrix_id_delta > 0: matrixId 1 and 5 of 4x4, 2 and 5 of 8x8, 2 and 4 of
// 16x16 here) and one equal to the default as delta 0 (4x4 inter luma). Two x265 habits are
// kept away from: it predicts 16x16 and 32x32 lists without comparing DCs (so repeated 16x16
// lists repeat their DC), and it writes a 32x32 delta unscaled against its internal 32x32
// chroma copies (7.4.5 multiplies it by 3), so both 32x32 lists here match no other list. libde265 1.0.11 scales
// inter 32x32 luma blocks with its 32x32 Cb factors (made from the 8x8 intra Cb list) where
// Table 7-4 gives matrixId 3, as FFmpeg and we do; the inter 32x32 list equals the 8x8 intra Cb
// list (slope 3, DC 16 = its first coefficient) so dec265 stays a valid second opinion.
const char kHmScalingList[] = "HM_SCALING_LIST_FILE";

std::string write_hm_scaling_list() {
  const char* dir = getenv("TMPDIR");
  const std::string path =
      std::string(dir ? dir : "/tmp") + "/gvc_hevc_scaling_list_" + std::to_string(getpid()) + ".txt";
  std::ofstream f(path);
  // 16 + slope * (x + y), raster order; slope 0 is the flat default of the 4x4 lists
  auto matrix = [&f](const char* name, int n, int slope) {
    f << name << " =\n";
    for (int y = 0; y < n; ++y) {
      for (int x = 0; x < n; ++x) f << 16 + slope * (x + y) << ",";
      f << "\n";
    }
  };
  const char* kinds[] = {"INTRA", "INTER"};
  const char* comps[] = {"LUMA", "CHROMAU", "CHROMAV"};
  // slope per size (4x4, 8x8, 16x16, 32x32) and matrixId (0..5); repeats are predicted
  const int slope[4][6] = {{2, 2, 3, 0, 1, 1}, {4, 3, 3, 2, 1, 3}, {3, 2, 2, 1, 2, 5}, {2, 0, 0, 3, 0, 0}};
  const int dc16[6] = {12, 20, 20, 16, 20, 24}, dc32[2] = {14, 16};
  for (int size = 0; size < 4; ++size)
    for (int m = 0; m < 6; m += size == 3 ? 3 : 1) {
      const std::string n = std::to_string(4 << size);
      const std::string name = std::string(kinds[m / 3]) + n + "X" + n + "_" + comps[m % 3];
      matrix(name.c_str(), size ? 8 : 4, slope[size][m]);
      if (size >= 2) f << name << "_DC =\n" << (size == 2 ? dc16[m] : dc32[m / 3]) << "\n";
    }
  return path;
}

// The stream of a case, made once and shared by the FFmpeg and libde265 tests.
struct Prepared {
  std::vector<uint8_t> encoded;  // x265's stream
  std::vector<uint8_t> stream;   // what the decoders get (rewritten, if the case says so)
  int changed = 0;               // what the rewrite changed
  std::string err;
};

const Prepared& prepare(const StreamCase& c) {
  static std::map<std::string, Prepared> cache;
  auto it = cache.find(c.name);
  if (it != cache.end()) return it->second;
  Prepared p;
  std::string params = c.x265_params, list_file;
  const size_t at = params.find(kHmScalingList);
  if (at != std::string::npos) {
    list_file = write_hm_scaling_list();
    params.replace(at, sizeof(kHmScalingList) - 1, list_file);
  }
  p.encoded = gvc::test::x265_encode(gvc::test::hevc_find_clip(), c.width, c.height, c.frames, c.pix_fmt,
                                     params, p.err, c.extra_vf);
  if (!list_file.empty()) unlink(list_file.c_str());
  if (!p.encoded.empty()) {
    p.stream = c.rewrite ? c.rewrite(p.encoded, &p.changed) : p.encoded;
    if (p.stream.empty()) p.err = "stream could not be rewritten";
  }
  return cache.emplace(c.name, std::move(p)).first->second;
}

class HevcDecodeTest : public ::testing::TestWithParam<StreamCase> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(gvc::test::hevc_find_ffmpeg().empty()) << "ffmpeg is required (set $FFMPEG)";
    ASSERT_FALSE(gvc::test::hevc_find_clip().empty())
        << "test clip missing (opencv-doc's vtest.avi or $GVC_TEST_CLIP)";
  }
};

TEST_P(HevcDecodeTest, MatchesFfmpegFrameByFrame) {
  const StreamCase& c = GetParam();
  const Prepared& p = prepare(c);
  ASSERT_TRUE(p.err.empty()) << p.err;
  if (c.rewrite) {
    EXPECT_GE(p.changed, c.min_changed);
  }
  check_features(p.stream, c.expect);
  const int bytes = std::strcmp(c.pix_fmt, "yuv420p") == 0 ? 1 : 2;
  const size_t fb = frame_bytes(c.width, c.height, bytes);
  std::string err;
  const Frames ref = gvc::test::ffmpeg_decode(p.stream, c.pix_fmt, fb, err);
  ASSERT_TRUE(err.empty()) << err;
  ASSERT_EQ(ref.size(), size_t(c.frames - (c.hides ? p.changed : 0)));
  if (c.rewrite) {  // the rewrite must change the decoded pictures, or it tests nothing
    const Frames plain = gvc::test::ffmpeg_decode(p.encoded, c.pix_fmt, fb, err);
    EXPECT_NE(plain, ref);
    // hiding pictures leaves the others as they were
    if (c.hides) {
      EXPECT_TRUE(is_subsequence(ref, plain));
    }
  }
  expect_same_frames(decode_ours(p.stream, false), ref, c.width, c.height, bytes, "ffmpeg");
  expect_same_frames(decode_ours(p.stream, true), ref, c.width, c.height, bytes,
                     "ffmpeg, access unit by access unit");
}

// The second opinion: libde265 (an independent decoder) decodes the same stream to the same
// frames as ours (and so as FFmpeg's, checked above).
TEST_P(HevcDecodeTest, MatchesLibde265FrameByFrame) {
  const StreamCase& c = GetParam();
  if (gvc::test::hevc_find_dec265().empty())
    GTEST_SKIP() << "libde265's dec265 not found (Debian package libde265-examples, or set $DEC265): "
                    "no second opinion on "
                 << c.name;
  const Prepared& p = prepare(c);
  ASSERT_TRUE(p.err.empty()) << p.err;
  const int bytes = std::strcmp(c.pix_fmt, "yuv420p") == 0 ? 1 : 2;
  std::string err;
  const Frames second = dec265_frames(p.stream, frame_bytes(c.width, c.height, bytes), err);
  ASSERT_TRUE(err.empty()) << err;
  ASSERT_EQ(second.size(), size_t(c.frames - (c.hides ? p.changed : 0)));
  expect_same_frames(decode_ours(p.stream, false), second, c.width, c.height, bytes, "libde265");
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
    {"b_lossless", 176, 144, 5, "yuv420p", "keyint=30:bframes=2:ctu=16:lossless=1", "", "B"},
    // constrained intra prediction in P/B pictures: inter neighbours are substituted (8.4.4.2.2)
    {"b_cip", 176, 144, 8, "yuv420p", "keyint=30:bframes=3:ctu=32:qp=30:constrained-intra=1", "", "B,CIP"},
    {"b_no_wpp", 416, 240, 5, "yuv420p", "keyint=30:bframes=2:ctu=32:qp=30:wpp=0", "", "B,NOWPP"},
    {"b_ref1", 176, 144, 8, "yuv420p", "keyint=30:bframes=2:ctu=32:qp=30:ref=1", "", "B,R=1"},
    // transform blocks capped below the coding block: implied split_transform_flag (7.4.9.8)
    {"b_max_tu8_ctu32", 176, 144, 6, "yuv420p",
     "keyint=30:bframes=2:ctu=32:qp=28:max-tu-size=8:tu-intra-depth=2:tu-inter-depth=2", "", "B,TB3"},
    {"b_max_tu16_ctu64", 416, 240, 5, "yuv420p",
     "keyint=30:bframes=2:ctu=64:qp=28:max-tu-size=16:tu-intra-depth=3:tu-inter-depth=3", "", "B,TB4"},
    // SPS scaling lists from a file (kHmScalingList): explicit, predicted and default lists
    {"b_scaling_list_file", 416, 240, 5, "yuv420p",
     "keyint=30:bframes=2:ctu=64:qp=26:scaling-list=HM_SCALING_LIST_FILE", "", "B,SL"},
    {"b_main10_scaling_list_file", 176, 144, 5, "yuv420p10le",
     "keyint=30:bframes=2:ctu=32:qp=26:scaling-list=HM_SCALING_LIST_FILE", "", "B,SL"},
    // 1366x768: coded as 1368x768 and cropped, a partial CTB column; few frames (CI time)
    {"b_1366x768", 1366, 768, 4, "yuv420p", "keyint=30:bframes=2:qp=30", "", "P,B"},
    {"b_main10_1366x768", 1366, 768, 4, "yuv420p10le", "keyint=30:bframes=2:qp=30", "", "P,B"},
};
INSTANTIATE_TEST_SUITE_P(Inter, HevcDecodeTest, ::testing::ValuesIn(kInterCases),
                         [](const auto& info) { return std::string(info.param.name); });

// Streams rewritten to use syntax x265 does not produce (stream_oracle.h rewriters). Each
// rewrite is checked to change FFmpeg's output, so it tests something.
const StreamCase kRewrittenCases[] = {
    // Log2ParMrgLevel 3 and 4 (PPS rewritten): shared merge lists of 8x8 coding units
    // (singleMCLFlag) and candidates dropped inside a merge estimation region
    {"b_par_merge_level3", 176, 144, 6, "yuv420p", "keyint=30:bframes=2:ctu=16:qp=30:rect=1:amp=1", "",
     "B,PML3", par_merge_level<3>, 1},
    {"b_par_merge_level4", 176, 144, 6, "yuv420p", "keyint=30:bframes=2:ctu=32:qp=30:rect=1", "", "B,PML4",
     par_merge_level<4>, 1},
    // Long-term reference pictures: each P picture's older reference becomes long-term. That
    // changes the prediction (no scaling towards a long-term picture in AMVP and TMVP, merge
    // and AMVP candidates of the other kind dropped).
    {"p_long_term", 176, 144, 8, "yuv420p", "keyint=30:bframes=0:ref=2:ctu=32:qp=30", "", "P",
     gvc::test::with_long_term_refs, 5},
    {"p_long_term_ctu16_amp", 176, 144, 8, "yuv420p", "keyint=30:bframes=0:ref=2:ctu=16:qp=26:rect=1:amp=1:no-sao=1",
     "", "P", gvc::test::with_long_term_refs, 5},
    // Reference picture list modification (8.3.4): list entries rotated in P and B slices.
    {"p_list_modification", 176, 144, 8, "yuv420p", "keyint=30:bframes=0:ref=3:ctu=32:qp=30", "", "P",
     gvc::test::with_list_modification, 4},
    {"b_list_modification_weightb", 176, 144, 8, "yuv420p",
     "keyint=30:bframes=3:b-pyramid=1:ref=3:ctu=32:qp=30:weightb=1", "", "B", gvc::test::with_list_modification, 4},
    // pic_output_flag 0 on every third picture in decode order (PPS output_flag_present_flag):
    // those pictures are decoded and used as references but never output, so the frame count
    // drops by that many and the other frames are unchanged.
    {"p_pic_output_flag", 176, 144, 9, "yuv420p", "keyint=30:bframes=0:ctu=32:qp=30", "", "P,HIDDEN",
     gvc::test::with_pic_output_flag, 3, true},
    {"b_pyramid_pic_output_flag", 176, 144, 12, "yuv420p", "keyint=30:bframes=3:b-pyramid=1:ref=3:ctu=32:qp=30", "",
     "B,HIDDEN", gvc::test::with_pic_output_flag, 4, true},
    {"b_slices_pic_output_flag_main10", 176, 144, 9, "yuv420p10le", "keyint=30:bframes=2:ctu=16:qp=30:slices=2",
     "", "B,HIDDEN", gvc::test::with_pic_output_flag, 3, true},
};
INSTANTIATE_TEST_SUITE_P(Rewritten, HevcDecodeTest, ::testing::ValuesIn(kRewrittenCases),
                         [](const auto& info) { return std::string(info.param.name); });

// An open-GOP stream cut at its second CRA: the stream starts with a CRA whose RASL pictures
// reference pictures that are not there. They are not output (NoRaslOutputFlag 1, 8.1.3), and
// everything else matches FFmpeg and libde265, frame by frame and in count.
const std::vector<uint8_t>& open_gop_cut_at_cra(std::string& err) {
  static std::vector<uint8_t> stream;
  static std::string made_err;
  if (stream.empty() && made_err.empty()) {
    const auto full = gvc::test::x265_encode(gvc::test::hevc_find_clip(), 176, 144, 12, "yuv420p",
                                             "keyint=4:min-keyint=4:bframes=2:open-gop=1:ctu=32:qp=30", made_err);
    // parameter sets are repeated before every IRAP picture: cut at the second VPS
    const size_t cut = gvc::test::nth_nal_offset(full, 32, 1);
    if (cut < full.size())
      stream.assign(full.begin() + long(cut), full.end());
    else if (made_err.empty())
      made_err = "no second VPS to cut at";
  }
  err = made_err;
  return stream;
}

TEST(HevcDecodeOpenGop, StreamStartingAtCraSkipsItsRaslPictures) {
  ASSERT_FALSE(gvc::test::hevc_find_ffmpeg().empty()) << "ffmpeg is required (set $FFMPEG)";
  ASSERT_FALSE(gvc::test::hevc_find_clip().empty()) << "test clip missing";
  std::string err;
  const std::vector<uint8_t>& stream = open_gop_cut_at_cra(err);
  ASSERT_TRUE(err.empty()) << err;
  const gvc::test::StreamFeatures f = gvc::test::stream_features(stream);
  ASSERT_GT(f.cra, 0);
  ASSERT_GT(f.rasl, 0);
  const Frames ref = gvc::test::ffmpeg_decode(stream, "yuv420p", frame_bytes(176, 144, 1), err);
  ASSERT_FALSE(ref.empty()) << err;
  expect_same_frames(decode_ours(stream, false), ref, 176, 144, 1, "ffmpeg");
  expect_same_frames(decode_ours(stream, true), ref, 176, 144, 1, "ffmpeg, access unit by access unit");
}

TEST(HevcDecodeOpenGop, StreamStartingAtCraMatchesLibde265) {
  if (gvc::test::hevc_find_dec265().empty())
    GTEST_SKIP() << "libde265's dec265 not found (Debian package libde265-examples, or set $DEC265)";
  ASSERT_FALSE(gvc::test::hevc_find_ffmpeg().empty()) << "ffmpeg is required (set $FFMPEG)";
  ASSERT_FALSE(gvc::test::hevc_find_clip().empty()) << "test clip missing";
  std::string err;
  const std::vector<uint8_t>& stream = open_gop_cut_at_cra(err);
  ASSERT_TRUE(err.empty()) << err;
  const Frames second = dec265_frames(stream, frame_bytes(176, 144, 1), err);
  ASSERT_TRUE(err.empty()) << err;
  expect_same_frames(decode_ours(stream, false), second, 176, 144, 1, "libde265");
}

// Why dec265 gets streams without repeated parameter sets (dec265_frames): on an open-GOP
// stream as x265 writes it, dec265 differs from us (and FFmpeg) only on RASL pictures and only
// with its "non-existing reference picture accessed" warning; without the repeats it is equal.
// If a fixed libde265 agrees on the stream as written, the test passes as well.
TEST(HevcDecodeOpenGop, Libde265RepeatedSpsBeforeCra) {
  if (gvc::test::hevc_find_dec265().empty())
    GTEST_SKIP() << "libde265's dec265 not found (Debian package libde265-examples, or set $DEC265)";
  ASSERT_FALSE(gvc::test::hevc_find_ffmpeg().empty()) << "ffmpeg is required (set $FFMPEG)";
  ASSERT_FALSE(gvc::test::hevc_find_clip().empty()) << "test clip missing";
  std::string err;
  const auto stream = gvc::test::x265_encode(gvc::test::hevc_find_clip(), 176, 144, 10, "yuv420p",
                                             "keyint=4:min-keyint=4:bframes=2:open-gop=1:ctu=32:qp=30", err);
  ASSERT_FALSE(stream.empty()) << err;
  const gvc::test::StreamFeatures f = gvc::test::stream_features(stream);
  ASSERT_GE(f.cra, 2);
  ASSERT_GT(f.rasl, 0);
  int dropped = 0;
  gvc::test::without_repeated_parameter_sets(stream, &dropped);
  EXPECT_EQ(dropped, 3 * f.cra);  // VPS, SPS and PPS before each CRA
  const Frames ours = decode_ours(stream, false);
  ASSERT_EQ(ours.size(), 10u);

  const Frames as_written = gvc::test::dec265_decode(stream, frame_bytes(176, 144, 1), err);
  ASSERT_EQ(as_written.size(), ours.size());
  size_t differing = 0;
  for (size_t i = 0; i < ours.size(); ++i) differing += as_written[i] != ours[i];
  if (differing) {
    EXPECT_NE(err.find("non-existing reference picture accessed"), std::string::npos) << err;
    EXPECT_LE(differing, size_t(f.rasl)) << "more pictures differ than there are RASL pictures";
  }
  err.clear();
  expect_same_frames(ours, dec265_frames(stream, frame_bytes(176, 144, 1), err), 176, 144, 1,
                     "libde265 without repeated parameter sets");
  EXPECT_TRUE(err.empty()) << err;
}

// end_access_unit(): with no reordering (x265 bframes=0: sps_max_num_reorder_pics 0) each
// picture can be taken right after its own access unit, before the next one is given. Without
// the call it comes out one access unit late, when the next picture's first slice arrives.
TEST(HevcDecodeLatency, LowDelayPictureIsReadyRightAfterItsAccessUnit) {
  ASSERT_FALSE(gvc::test::hevc_find_ffmpeg().empty()) << "ffmpeg is required (set $FFMPEG)";
  ASSERT_FALSE(gvc::test::hevc_find_clip().empty()) << "test clip missing";
  std::string err;
  const auto stream = gvc::test::x265_encode(gvc::test::hevc_find_clip(), 176, 144, 8, "yuv420p",
                                             "keyint=4:min-keyint=4:bframes=0:ctu=32:qp=30", err);
  ASSERT_FALSE(stream.empty()) << err;
  EXPECT_EQ(gvc::test::stream_features(stream).max_num_reorder, 0);
  const auto aus = gvc::test::split_access_units(stream);
  ASSERT_EQ(aus.size(), 8u);
  const Frames ref = gvc::test::ffmpeg_decode(stream, "yuv420p", frame_bytes(176, 144, 1), err);
  ASSERT_EQ(ref.size(), 8u) << err;

  gvc::hevc::Decoder dec, late;
  gvc::hevc::DecodedFrame f;
  int late_out = 0;
  for (size_t i = 0; i < aus.size(); ++i) {
    EXPECT_TRUE(dec.decode(aus[i].data(), aus[i].size())) << dec.error();
    EXPECT_FALSE(dec.take_frame(f)) << "access unit " << i << ": a picture before end_access_unit()";
    dec.end_access_unit();
    ASSERT_TRUE(dec.take_frame(f)) << "access unit " << i << ": no picture after end_access_unit()";
    EXPECT_TRUE(to_raw(f) == ref[i]) << "frame " << i << ": " << first_diff(to_raw(f), ref[i], 176, 144, 1);
    EXPECT_FALSE(dec.take_frame(f)) << "access unit " << i << ": more than one picture";

    late.decode(aus[i].data(), aus[i].size());
    while (late.take_frame(f)) ++late_out;
    EXPECT_EQ(late_out, int(i)) << "without end_access_unit(), after access unit " << i;
  }
  dec.flush();
  EXPECT_FALSE(dec.take_frame(f)) << "a picture left for the end of the stream";
}

// With reordering (B pyramid), end_access_unit() outputs no picture earlier than C.5.2.3
// bumping allows: after access unit n, between n + 1 - sps_max_num_reorder_pics and n + 1
// pictures are out, and all frames equal FFmpeg's in order.
TEST(HevcDecodeLatency, ReorderingStreamStaysWithinSpsMaxNumReorderPics) {
  ASSERT_FALSE(gvc::test::hevc_find_ffmpeg().empty()) << "ffmpeg is required (set $FFMPEG)";
  ASSERT_FALSE(gvc::test::hevc_find_clip().empty()) << "test clip missing";
  std::string err;
  const auto stream = gvc::test::x265_encode(gvc::test::hevc_find_clip(), 176, 144, 12, "yuv420p",
                                             "keyint=30:bframes=3:b-pyramid=1:ref=3:ctu=32:qp=30", err);
  ASSERT_FALSE(stream.empty()) << err;
  const int reorder = gvc::test::stream_features(stream).max_num_reorder;
  ASSERT_GT(reorder, 0);
  const auto aus = gvc::test::split_access_units(stream);
  ASSERT_EQ(aus.size(), 12u);
  const Frames ref = gvc::test::ffmpeg_decode(stream, "yuv420p", frame_bytes(176, 144, 1), err);
  ASSERT_EQ(ref.size(), 12u) << err;

  gvc::hevc::Decoder dec;
  gvc::hevc::DecodedFrame f;
  Frames ours;
  for (size_t i = 0; i < aus.size(); ++i) {
    EXPECT_TRUE(dec.decode(aus[i].data(), aus[i].size())) << dec.error();
    dec.end_access_unit();
    while (dec.take_frame(f)) ours.push_back(to_raw(f));
    EXPECT_GE(int(ours.size()) + reorder, int(i) + 1) << "after access unit " << i;
    EXPECT_LE(ours.size(), i + 1) << "after access unit " << i;
  }
  dec.flush();
  while (dec.take_frame(f)) ours.push_back(to_raw(f));
  expect_same_frames(ours, ref, 176, 144, 1, "ffmpeg");
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
