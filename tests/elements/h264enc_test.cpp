// h264enc_test.cpp: GstHarness tests of cudah264enc: FFmpeg and avdec_h264 decode it to its recon
#include <gst/check/gstharness.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/bitstream/nal.h"
#include "tests/h264/oracle.h"

namespace {

class GstEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { gst_init(nullptr, nullptr); }
};
::testing::Environment* const gst_env = ::testing::AddGlobalTestEnvironment(new GstEnvironment);

constexpr int kFps = 30;

using Bytes = std::vector<uint8_t>;

std::string raw_caps(const char* format, int w, int h) {
  return std::string("video/x-raw,format=") + format + ",width=" + std::to_string(w) +
         ",height=" + std::to_string(h) + ",framerate=" + std::to_string(kFps) + "/1";
}

// The first `n` frames of the test clip (opencv-doc's vtest.avi, people walking) scaled to
// w x h in `format`, re-timed to kFps; cached. Empty if the clip cannot be read.
const std::vector<GstBuffer*>& clip(const char* format, int w, int h, int n) {
  static std::map<std::string, std::vector<GstBuffer*>> cache;
  std::string key = raw_caps(format, w, h) + "/" + std::to_string(n);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::vector<GstBuffer*>& frames = cache[key];
  std::string path = gvc::test::find_test_clip();
  if (path.empty()) return frames;
  // Any frame rate here (the clip's own): the buffers are re-timed below.
  std::string desc = "filesrc location=\"" + path +
                     "\" ! decodebin ! videoconvert ! videoscale ! video/x-raw,format=" + format +
                     ",width=" + std::to_string(w) + ",height=" + std::to_string(h) +
                     " ! appsink name=s sync=false";
  GstElement* p = gst_parse_launch(desc.c_str(), nullptr);
  if (!p) return frames;
  GstElement* s = gst_bin_get_by_name(GST_BIN(p), "s");
  gst_element_set_state(p, GST_STATE_PLAYING);
  while (int(frames.size()) < n) {
    GstSample* sample = gst_app_sink_pull_sample(GST_APP_SINK(s));
    if (!sample) break;
    GstBuffer* b = gst_buffer_copy_deep(gst_sample_get_buffer(sample));
    GST_BUFFER_PTS(b) = gst_util_uint64_scale(frames.size(), GST_SECOND, kFps);
    GST_BUFFER_DTS(b) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DURATION(b) = GST_SECOND / kFps;
    frames.push_back(b);
    gst_sample_unref(sample);
  }
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(s);
  gst_object_unref(p);
  return frames;
}

Bytes bytes_of(GstBuffer* buf) {
  GstMapInfo m;
  gst_buffer_map(buf, &m, GST_MAP_READ);
  Bytes v(m.data, m.data + m.size);
  gst_buffer_unmap(buf, &m);
  return v;
}

// The NAL unit types of an access unit in either stream format.
std::vector<int> nal_types(const Bytes& au, bool avc) {
  std::vector<int> types;
  if (!avc) {
    for (const auto& nal : gvc::split_annexb(au.data(), au.size())) types.push_back(nal[0] & 31);
    return types;
  }
  for (size_t i = 0; i + 4 < au.size();) {
    size_t n = size_t(au[i]) << 24 | size_t(au[i + 1]) << 16 | size_t(au[i + 2]) << 8 | au[i + 3];
    types.push_back(au[i + 4] & 31);
    i += 4 + n;
  }
  return types;
}

struct Encoded {
  std::vector<GstBuffer*> aus;
  GstCaps* caps = nullptr;  // the src caps at the end
  std::string error;        // the first error posted, if any
  ~Encoded() {
    for (GstBuffer* b : aus) gst_buffer_unref(b);
    if (caps) gst_caps_unref(caps);
  }
  bool avc() const {
    const gchar* f = gst_structure_get_string(gst_caps_get_structure(caps, 0), "stream-format");
    return g_strcmp0(f, "avc") == 0;
  }
};

std::string pop_error(GstHarness* h) {
  std::string text;
  GstBus* bus = gst_element_get_bus(h->element);
  if (!bus) return text;
  if (GstMessage* msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
    GError* err = nullptr;
    gst_message_parse_error(msg, &err, nullptr);
    text = err->message;
    g_error_free(err);
    gst_message_unref(msg);
  }
  gst_object_unref(bus);
  return text;
}

GstHarness* new_harness(const std::string& props, const std::string& sink_caps = "") {
  GstHarness* h = gst_harness_new_parse(("cudah264enc " + props).c_str());
  // The harness element has no bus of its own: give it one to read errors from.
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  gst_object_unref(bus);
  if (!sink_caps.empty()) gst_harness_set_sink_caps_str(h, sink_caps.c_str());
  return h;
}

void pull_all(GstHarness* h, Encoded& out) {
  while (GstBuffer* b = gst_harness_try_pull(h)) out.aus.push_back(b);
}

// Encodes `frames` (caps `caps`) with cudah264enc `props`; pushes EOS at the end.
void encode(const std::string& props, const std::string& caps, const std::vector<GstBuffer*>& frames,
            Encoded& out, const std::string& sink_caps = "") {
  GstHarness* h = new_harness(props, sink_caps);
  gst_harness_set_src_caps_str(h, caps.c_str());
  for (GstBuffer* f : frames) {
    GstFlowReturn ret = gst_harness_push(h, gst_buffer_ref(f));
    if (ret != GST_FLOW_OK) break;
    pull_all(h, out);
  }
  gst_harness_push_event(h, gst_event_new_eos());
  pull_all(h, out);
  out.caps = gst_pad_get_current_caps(h->sinkpad);
  out.error = pop_error(h);
  gst_harness_teardown(h);
}

// Writes the access units as a file ffmpeg reads: Annex-B as is, avc muxed into MP4 by
// mp4mux (so the avcC in codec_data is what ffmpeg sees).
bool write_stream(const Encoded& enc, const std::string& path) {
  if (!enc.avc()) {
    Bytes all;
    for (GstBuffer* b : enc.aus) {
      Bytes v = bytes_of(b);
      all.insert(all.end(), v.begin(), v.end());
    }
    return gvc::test::write_file(path, all);
  }
  GstElement* p = gst_parse_launch(
      ("appsrc name=s format=time ! m.video_0 mp4mux name=m ! filesink location=\"" + path + "\"").c_str(),
      nullptr);
  GstElement* s = gst_bin_get_by_name(GST_BIN(p), "s");
  g_object_set(s, "caps", enc.caps, nullptr);
  gst_element_set_state(p, GST_STATE_PLAYING);
  for (GstBuffer* b : enc.aus) gst_app_src_push_buffer(GST_APP_SRC(s), gst_buffer_ref(b));
  gst_app_src_end_of_stream(GST_APP_SRC(s));
  GstBus* bus = gst_element_get_bus(p);
  GstMessage* m = gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND,
                                             GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  bool ok = m && GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS;
  if (m && !ok) {
    GError* err = nullptr;
    gchar* dbg = nullptr;
    gst_message_parse_error(m, &err, &dbg);
    gchar* caps = gst_caps_to_string(enc.caps);
    ADD_FAILURE() << "mp4mux: " << err->message << " (" << (dbg ? dbg : "") << ") with " << caps;
    g_free(caps);
    g_error_free(err);
    g_free(dbg);
  }
  if (m) gst_message_unref(m);
  gst_object_unref(bus);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(s);
  gst_object_unref(p);
  return ok;
}

// Decodes with the ffmpeg executable into tightly packed I420; no stderr output allowed.
void ffmpeg_decode(const Encoded& enc, Bytes& yuv) {
  std::string ffmpeg = gvc::test::find_ffmpeg();
  ASSERT_FALSE(ffmpeg.empty()) << "ffmpeg not found";
  gvc::test::TempDir dir;
  std::string in = dir.path() + (enc.avc() ? "/in.mp4" : "/in.h264"), out = dir.path() + "/out.yuv";
  ASSERT_TRUE(write_stream(enc, in));
  auto r = gvc::test::run_command(
      {ffmpeg, "-nostdin", "-v", "error", "-i", in, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-y", out});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stderr_text, "") << "ffmpeg complained";
  ASSERT_TRUE(gvc::test::read_file(out, yuv));
}

// Decodes with avdec_h264 (given the encoder's caps, codec_data included) into packed I420.
void avdec_decode(const Encoded& enc, Bytes& yuv, int* width = nullptr, int* height = nullptr) {
  GstHarness* h = gst_harness_new("avdec_h264");
  ASSERT_NE(h, nullptr);
  gst_harness_set_src_caps(h, gst_caps_ref(enc.caps));
  gst_harness_set_sink_caps_str(h, "video/x-raw,format=I420");
  for (GstBuffer* b : enc.aus) EXPECT_EQ(gst_harness_push(h, gst_buffer_ref(b)), GST_FLOW_OK);
  gst_harness_push_event(h, gst_event_new_eos());
  GstCaps* caps = gst_pad_get_current_caps(h->sinkpad);
  ASSERT_NE(caps, nullptr);
  GstVideoInfo info;
  gst_video_info_from_caps(&info, caps);
  gst_caps_unref(caps);
  if (width) *width = GST_VIDEO_INFO_WIDTH(&info);
  if (height) *height = GST_VIDEO_INFO_HEIGHT(&info);
  while (GstBuffer* b = gst_harness_try_pull(h)) {
    GstVideoFrame f;
    ASSERT_TRUE(gst_video_frame_map(&f, &info, b, GST_MAP_READ));
    for (int p = 0; p < 3; p++) {
      const auto* d = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&f, p));
      for (int y = 0; y < GST_VIDEO_FRAME_COMP_HEIGHT(&f, p); y++) {
        const uint8_t* row = d + size_t(y) * GST_VIDEO_FRAME_PLANE_STRIDE(&f, p);
        yuv.insert(yuv.end(), row, row + GST_VIDEO_FRAME_COMP_WIDTH(&f, p));
      }
    }
    gst_video_frame_unmap(&f);
    gst_buffer_unref(b);
  }
  gst_harness_teardown(h);
}

// Compares decoded frames with the reconstruction frame by frame.
void expect_same_frames(const Bytes& decoded, const Bytes& recon, int w, int h, size_t frames,
                        const char* who) {
  const size_t fsize = size_t(w) * h * 3 / 2;
  ASSERT_EQ(recon.size(), frames * fsize) << "recon-location holds a wrong number of frames";
  ASSERT_EQ(decoded.size(), recon.size()) << who << " output size";
  for (size_t i = 0; i < frames; i++)
    ASSERT_EQ(0, memcmp(decoded.data() + i * fsize, recon.data() + i * fsize, fsize))
        << who << ": frame " << i << " differs from the reconstruction";
}

// Encodes the clip with `props` plus a recon file and checks both decoders bit for bit.
void check_bit_exact(const std::string& props, const char* format, int w, int h, int n,
                     const std::string& sink_caps = "", Encoded* keep = nullptr) {
  const auto& frames = clip(format, w, h, n);
  ASSERT_EQ(int(frames.size()), n) << "test clip not readable";
  gvc::test::TempDir dir;
  std::string recon_path = dir.path() + "/recon.yuv";
  Encoded local;
  Encoded& enc = keep ? *keep : local;
  encode(props + " recon-location=" + recon_path, raw_caps(format, w, h), frames, enc, sink_caps);
  ASSERT_EQ(enc.error, "");
  ASSERT_EQ(int(enc.aus.size()), n);
  Bytes recon, ff, av;
  ASSERT_TRUE(gvc::test::read_file(recon_path, recon));
  ffmpeg_decode(enc, ff);
  expect_same_frames(ff, recon, w, h, size_t(n), "ffmpeg");
  int dw = 0, dh = 0;
  avdec_decode(enc, av, &dw, &dh);
  EXPECT_EQ(dw, w);
  EXPECT_EQ(dh, h);
  expect_same_frames(av, recon, w, h, size_t(n), "avdec_h264");
}

}  // namespace

// --- bit-exact decoding: stream formats, slices, references --------------------------------

struct MatrixCase {
  const char* stream_format;
  int slices;
  int refs;
};

class H264EncMatrix : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(H264EncMatrix, DecodersEqualRecon) {
  const MatrixCase& c = GetParam();
  Encoded enc;
  std::string props = "backend=cpu key-int-max=6 slices=" + std::to_string(c.slices) +
                      " ref-frames=" + std::to_string(c.refs);
  check_bit_exact(props, "I420", 176, 144, 8,
                  std::string("video/x-h264,stream-format=") + c.stream_format, &enc);
  GstStructure* s = gst_caps_get_structure(enc.caps, 0);
  EXPECT_STREQ(gst_structure_get_string(s, "stream-format"), c.stream_format);
  EXPECT_STREQ(gst_structure_get_string(s, "alignment"), "au");
  EXPECT_STREQ(gst_structure_get_string(s, "profile"), "constrained-baseline");
  EXPECT_STREQ(gst_structure_get_string(s, "level"), "1.1");  // 99 MBs at 30 fps: 2970 MB/s
  EXPECT_EQ(gst_structure_has_field(s, "codec_data"), c.stream_format == std::string("avc"));
  // IDRs at 0 and 6 carry SPS and PPS; the others are P frames.
  for (size_t i = 0; i < enc.aus.size(); i++) {
    std::vector<int> t = nal_types(bytes_of(enc.aus[i]), enc.avc());
    bool idr = i % 6 == 0;
    ASSERT_GE(t.size(), size_t(c.slices));
    EXPECT_EQ(t.size(), size_t(c.slices + (idr ? 2 : 0))) << "frame " << i;
    if (idr) {
      EXPECT_EQ(t[0], 7);
      EXPECT_EQ(t[1], 8);
    }
    EXPECT_EQ(t.back(), idr ? 5 : 1) << "frame " << i;
    EXPECT_EQ(GST_BUFFER_FLAG_IS_SET(enc.aus[i], GST_BUFFER_FLAG_DELTA_UNIT), !idr);
  }
}

INSTANTIATE_TEST_SUITE_P(Streams, H264EncMatrix,
                         ::testing::Values(MatrixCase{"byte-stream", 1, 1}, MatrixCase{"byte-stream", 4, 4},
                                           MatrixCase{"avc", 1, 4}, MatrixCase{"avc", 4, 1}),
                         [](const auto& info) {
                           return std::string(info.param.stream_format[0] == 'a' ? "avc" : "bytestream") +
                                  "_slices" + std::to_string(info.param.slices) + "_refs" +
                                  std::to_string(info.param.refs);
                         });

// NV12 input at a size of no whole macroblocks (SPS cropping), with AUDs, Kirsch pruning and
// the slow preset; the profile comes from downstream (baseline only).
TEST(H264Enc, CroppedNv12AudBaseline) {
  Encoded enc;
  check_bit_exact("backend=cpu aud=true intra-pruning=kirsch speed-preset=slow qp=30", "NV12", 174, 110,
                  6, "video/x-h264,profile=baseline", &enc);
  EXPECT_STREQ(gst_structure_get_string(gst_caps_get_structure(enc.caps, 0), "profile"), "baseline");
  for (GstBuffer* b : enc.aus) {
    std::vector<int> t = nal_types(bytes_of(b), enc.avc());
    ASSERT_FALSE(t.empty());
    EXPECT_EQ(t[0], 9) << "access unit delimiter first";
    EXPECT_EQ(std::count(t.begin(), t.end(), 9), 1);
  }
}

TEST(H264Enc, SobelPruningFastPresetLowQp) {
  check_bit_exact("backend=cpu intra-pruning=sobel speed-preset=fast qp=4", "I420", 176, 144, 5);
}

TEST(H264Enc, VbrDecodesBitExact) {
  check_bit_exact("backend=cpu rate-control=vbr bitrate=300 max-bitrate=600", "I420", 176, 144, 10);
}

// --- frame types -----------------------------------------------------------------------------

TEST(H264Enc, ForceKeyUnitGivesIdr) {
  const auto& frames = clip("I420", 176, 144, 8);
  ASSERT_EQ(frames.size(), 8u);
  GstHarness* h = new_harness("backend=cpu");
  gst_harness_set_src_caps_str(h, raw_caps("I420", 176, 144).c_str());
  Encoded enc;
  for (int i = 0; i < 8; i++) {
    if (i == 5) {
      ASSERT_TRUE(gst_harness_push_upstream_event(
          h, gst_video_event_new_upstream_force_key_unit(GST_CLOCK_TIME_NONE, TRUE, 1)));
    }
    ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(frames[size_t(i)])), GST_FLOW_OK);
    pull_all(h, enc);
  }
  gst_harness_push_event(h, gst_event_new_eos());
  pull_all(h, enc);
  enc.caps = gst_pad_get_current_caps(h->sinkpad);
  gst_harness_teardown(h);
  ASSERT_EQ(enc.aus.size(), 8u);
  for (int i = 0; i < 8; i++) {
    std::vector<int> t = nal_types(bytes_of(enc.aus[size_t(i)]), false);
    bool idr = i == 0 || i == 5;
    EXPECT_EQ(t.back(), idr ? 5 : 1) << "frame " << i;
    EXPECT_EQ(t.front(), idr ? 7 : 1) << "SPS first in an IDR, frame " << i;
  }
  Bytes ff;
  ffmpeg_decode(enc, ff);
  EXPECT_EQ(ff.size(), size_t(8) * 176 * 144 * 3 / 2);
}

TEST(H264Enc, FlushStartsWithIdr) {
  const auto& frames = clip("I420", 176, 144, 4);
  ASSERT_EQ(frames.size(), 4u);
  GstHarness* h = new_harness("backend=cpu");
  gst_harness_set_src_caps_str(h, raw_caps("I420", 176, 144).c_str());
  Encoded enc;
  for (int i = 0; i < 2; i++) ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(frames[size_t(i)])), GST_FLOW_OK);
  pull_all(h, enc);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_start()));
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_stop(TRUE)));
  GstSegment seg;
  gst_segment_init(&seg, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_segment(&seg)));
  for (int i = 2; i < 4; i++) ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(frames[size_t(i)])), GST_FLOW_OK);
  pull_all(h, enc);
  gst_harness_teardown(h);
  // Flushing events reach the harness too; the encoded frames are what counts.
  ASSERT_EQ(enc.aus.size(), 4u);
  EXPECT_EQ(nal_types(bytes_of(enc.aus[1]), false).back(), 1);
  EXPECT_EQ(nal_types(bytes_of(enc.aus[2]), false).back(), 5) << "first frame after a flush";
}

// A new size mid-stream: a new IDR with a new SPS, and the new part decodes to its recon.
TEST(H264Enc, RenegotiationToNewSize) {
  const auto& a = clip("I420", 176, 144, 3);
  const auto& b = clip("I420", 128, 96, 3);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  gvc::test::TempDir dir;
  std::string recon_path = dir.path() + "/recon.yuv";
  GstHarness* h = new_harness("backend=cpu recon-location=" + recon_path);
  gst_harness_set_src_caps_str(h, raw_caps("I420", 176, 144).c_str());
  Encoded first, second;
  for (GstBuffer* f : a) ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(f)), GST_FLOW_OK);
  pull_all(h, first);
  gst_harness_set_src_caps_str(h, raw_caps("I420", 128, 96).c_str());
  for (GstBuffer* f : b) ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(f)), GST_FLOW_OK);
  gst_harness_push_event(h, gst_event_new_eos());
  pull_all(h, second);
  second.caps = gst_pad_get_current_caps(h->sinkpad);
  gst_harness_teardown(h);
  ASSERT_EQ(first.aus.size(), 3u);
  ASSERT_EQ(second.aus.size(), 3u);
  std::vector<int> t = nal_types(bytes_of(second.aus[0]), false);
  EXPECT_EQ(t.front(), 7);
  EXPECT_EQ(t.back(), 5);
  GstStructure* s = gst_caps_get_structure(second.caps, 0);
  int w = 0, hh = 0;
  gst_structure_get_int(s, "width", &w);
  gst_structure_get_int(s, "height", &hh);
  EXPECT_EQ(w, 128);
  EXPECT_EQ(hh, 96);
  Bytes recon, ff;
  ASSERT_TRUE(gvc::test::read_file(recon_path, recon));
  const size_t first_bytes = size_t(3) * 176 * 144 * 3 / 2;
  ASSERT_EQ(recon.size(), first_bytes + size_t(3) * 128 * 96 * 3 / 2);
  ffmpeg_decode(second, ff);
  expect_same_frames(ff, Bytes(recon.begin() + long(first_bytes), recon.end()), 128, 96, 3, "ffmpeg");
}

// --- caps and properties ------------------------------------------------------------------

TEST(H264Enc, OddSizeRefusedWithClearMessage) {
  GstHarness* h = new_harness("backend=cpu");
  gst_harness_set_src_caps_str(h, raw_caps("I420", 175, 144).c_str());
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, 175 * 144 * 2, nullptr);
  EXPECT_NE(gst_harness_push(h, buf), GST_FLOW_OK);
  std::string err = pop_error(h);
  EXPECT_NE(err.find("even width and height"), std::string::npos) << err;
  EXPECT_EQ(gst_harness_buffers_received(h), 0u);
  gst_harness_teardown(h);
}

TEST(H264Enc, UnsupportedProfileRefused) {
  GstHarness* h = new_harness("backend=cpu", "video/x-h264,profile=high");
  gst_harness_set_src_caps_str(h, raw_caps("I420", 176, 144).c_str());
  const auto& frames = clip("I420", 176, 144, 1);
  ASSERT_EQ(frames.size(), 1u);
  // The encoder's sink caps follow what downstream takes: none, so the caps are refused.
  EXPECT_NE(gst_harness_push(h, gst_buffer_ref(frames[0])), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_received(h), 0u);
  gst_harness_teardown(h);
}

TEST(H264Enc, SinkRefusesOtherFormats) {
  GstElement* e = gst_element_factory_make("cudah264enc", nullptr);
  ASSERT_NE(e, nullptr);
  GstPad* sink = gst_element_get_static_pad(e, "sink");
  GstCaps* rgb = gst_caps_from_string("video/x-raw,format=RGB,width=176,height=144");
  EXPECT_FALSE(gst_pad_query_accept_caps(sink, rgb));
  gst_caps_unref(rgb);
  gst_object_unref(sink);
  gst_object_unref(e);
}

TEST(H264Enc, PropertyRangesRejectInvalidValues) {
  GstElement* e = gst_element_factory_make("cudah264enc", nullptr);
  ASSERT_NE(e, nullptr);
  struct {
    const char* name;
    int bad;
  } cases[] = {{"qp", 52}, {"qp", -1}, {"ref-frames", 5}, {"ref-frames", 0}, {"slices", 0}};
  for (const auto& c : cases) {
    GParamSpec* ps = g_object_class_find_property(G_OBJECT_GET_CLASS(e), c.name);
    ASSERT_NE(ps, nullptr) << c.name;
    GValue v = G_VALUE_INIT;
    g_value_init(&v, G_TYPE_INT);
    g_value_set_int(&v, c.bad);
    EXPECT_TRUE(g_param_value_validate(ps, &v)) << c.name << "=" << c.bad << " accepted";
    g_value_unset(&v);
  }
  GParamSpec* br = g_object_class_find_property(G_OBJECT_GET_CLASS(e), "bitrate");
  GValue v = G_VALUE_INIT;
  g_value_init(&v, G_TYPE_UINT);
  g_value_set_uint(&v, 0);
  EXPECT_TRUE(g_param_value_validate(br, &v)) << "bitrate=0 accepted";
  g_value_unset(&v);
  // Enumerations refuse unknown nicks when parsed.
  GError* err = nullptr;
  GstElement* p = gst_parse_launch("fakesrc ! cudah264enc rate-control=abr ! fakesink", &err);
  EXPECT_NE(err, nullptr);
  if (err) g_error_free(err);
  if (p) gst_object_unref(p);
  gchar* active = nullptr;
  g_object_get(e, "active-backend", &active, nullptr);
  EXPECT_STREQ(active, "none");
  g_free(active);
  gst_object_unref(e);
}

TEST(H264Enc, CudaBackendWithoutDeviceFailsClearly) {
  // Not a harness: a failing start would abort it. Without a device the start fails with a
  // message; on a GPU host the frame is encoded on the GPU.
  GstElement* p = gst_parse_launch(
      "videotestsrc num-buffers=2 ! video/x-raw,width=176,height=144 ! cudah264enc name=e backend=cuda ! "
      "fakesink",
      nullptr);
  ASSERT_NE(p, nullptr);
  gst_element_set_state(p, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(p);
  GstMessage* m = gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND,
                                             GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  ASSERT_NE(m, nullptr);
  GstElement* e = gst_bin_get_by_name(GST_BIN(p), "e");
  gchar* active = nullptr;
  g_object_get(e, "active-backend", &active, nullptr);
  if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) {
    GError* err = nullptr;
    gst_message_parse_error(m, &err, nullptr);
    EXPECT_NE(std::string(err->message).find("cannot use CUDA"), std::string::npos) << err->message;
    g_error_free(err);
  } else {
    EXPECT_STREQ(active, "cuda");
  }
  g_free(active);
  gst_message_unref(m);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(e);
  gst_object_unref(bus);
  gst_object_unref(p);
}

// --- rate control ---------------------------------------------------------------------------

// Bits per 1-s window of access units at kFps.
std::vector<double> window_kbps(const Encoded& enc, size_t first, size_t last) {
  std::vector<double> w;
  for (size_t s = first; s + kFps <= last; s += kFps) {
    double bits = 0;
    for (size_t i = s; i < s + kFps; i++) bits += 8.0 * gst_buffer_get_size(enc.aus[i]);
    w.push_back(bits / 1000);
  }
  return w;
}

// The hypothetical decoder buffer of docs/elements/cudah264enc.md: vbv-buffer-size ms at the
// rate, 90% full at the start, each frame removed whole, refilled by rate / fps per frame.
void expect_no_vbv_underflow(const Encoded& enc, size_t first, size_t last, double kbps, double ms) {
  const double size = kbps * ms, period = kbps * 1000 / kFps;
  double fullness = 0.9 * size;
  for (size_t i = first; i < last; i++) {
    double bits = 8.0 * gst_buffer_get_size(enc.aus[i]);
    ASSERT_LE(bits, fullness) << "VBV underflow at frame " << i;
    fullness = std::min(size, fullness - bits + period);
  }
}

TEST(H264Enc, CbrHoldsBitrateEverySecond) {
  const int n = 5 * kFps;
  const auto& frames = clip("I420", 176, 144, n);
  ASSERT_EQ(int(frames.size()), n);
  for (int kbps : {150, 400}) {
    Encoded enc;
    encode("backend=cpu speed-preset=fast rate-control=cbr vbv-buffer-size=1000 bitrate=" +
               std::to_string(kbps),
           raw_caps("I420", 176, 144), frames, enc);
    ASSERT_EQ(int(enc.aus.size()), n);
    std::vector<double> w = window_kbps(enc, kFps, size_t(n));
    ASSERT_EQ(w.size(), 4u);
    for (size_t i = 0; i < w.size(); i++)
      EXPECT_NEAR(w[i], kbps, 0.1 * kbps) << "second " << i + 1 << " at " << kbps << " kbit/s";
    expect_no_vbv_underflow(enc, 0, size_t(n), kbps, 1000);
    Bytes ff;
    ffmpeg_decode(enc, ff);
    EXPECT_EQ(ff.size(), size_t(n) * 176 * 144 * 3 / 2);
  }
}

TEST(H264Enc, BitrateChangeWhilePlaying) {
  const int n = 5 * kFps;
  const auto& frames = clip("I420", 176, 144, n);
  ASSERT_EQ(int(frames.size()), n);
  GstHarness* h = new_harness("backend=cpu speed-preset=fast rate-control=cbr bitrate=400");
  gst_harness_set_src_caps_str(h, raw_caps("I420", 176, 144).c_str());
  GstElement* e = gst_harness_find_element(h, "cudah264enc");
  Encoded enc;
  for (int i = 0; i < n; i++) {
    if (i == 2 * kFps) g_object_set(e, "bitrate", 150u, nullptr);
    ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(frames[size_t(i)])), GST_FLOW_OK);
    pull_all(h, enc);
  }
  gst_object_unref(e);
  gst_harness_teardown(h);
  ASSERT_EQ(int(enc.aus.size()), n);
  std::vector<double> w = window_kbps(enc, 0, size_t(n));
  EXPECT_NEAR(w[1], 400, 40) << "before the change";
  // The buffer drains its excess within the first half second after the change.
  std::vector<double> after = window_kbps(enc, size_t(3 * kFps), size_t(n));
  for (double k : after) EXPECT_NEAR(k, 150, 15) << "after the change";
}

// --- latency and lifecycle -------------------------------------------------------------------

TEST(H264Enc, ZeroLatencyPushesEachFrameAtOnce) {
  const auto& frames = clip("I420", 176, 144, 5);
  ASSERT_EQ(frames.size(), 5u);
  GstHarness* h = new_harness("backend=cpu tune=zerolatency");
  gst_harness_set_src_caps_str(h, raw_caps("I420", 176, 144).c_str());
  for (guint i = 0; i < 5; i++) {
    ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(frames[i])), GST_FLOW_OK);
    EXPECT_EQ(gst_harness_buffers_received(h), i + 1) << "output of frame " << i << " not yet pushed";
  }
  EXPECT_EQ(gst_harness_query_latency(h), 0u);
  gst_harness_teardown(h);
}

TEST(H264Enc, EosDrainsEveryFrame) {
  const auto& frames = clip("I420", 176, 144, 4);
  Encoded enc;
  encode("backend=cpu", raw_caps("I420", 176, 144), frames, enc);
  EXPECT_EQ(enc.aus.size(), 4u);
  EXPECT_EQ(enc.error, "");
}

TEST(H264Enc, HundredStartStopCycles) {
  const auto& frames = clip("I420", 176, 144, 1);
  ASSERT_EQ(frames.size(), 1u);
  for (int i = 0; i < 100; i++) {
    GstHarness* h = new_harness("backend=cpu");
    gst_harness_set_src_caps_str(h, raw_caps("I420", 176, 144).c_str());
    ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(frames[0])), GST_FLOW_OK);
    GstBuffer* out = gst_harness_pull(h);
    ASSERT_NE(out, nullptr);
    gst_buffer_unref(out);
    gst_harness_teardown(h);
  }
}
