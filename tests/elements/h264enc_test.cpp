// h264enc_test.cpp: GstHarness tests of cudah264enc: FFmpeg and avdec_h264 decode it to its recon
#include <gst/check/gstharness.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/codecparsers/gsth264parser.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "common/bitstream/nal.h"
#include "tests/elements/cuda_probe.h"
#include "tests/h264/oracle.h"

#if GVC_TEST_CUDA
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#endif

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

// Appends the `n` packed w x h frames of `data` (I420, or NV12 when `nv12`) as buffers with
// GStreamer's default strides, timed at kFps.
void frames_from_raw(const Bytes& data, bool nv12, int w, int h, int n, std::vector<GstBuffer*>& frames) {
  const size_t fsize = size_t(w) * h * 3 / 2;
  GstVideoInfo info;
  gst_video_info_set_format(&info, nv12 ? GST_VIDEO_FORMAT_NV12 : GST_VIDEO_FORMAT_I420, guint(w), guint(h));
  for (int i = 0; i < n; i++) {
    GstBuffer* b = gst_buffer_new_allocate(nullptr, info.size, nullptr);
    GstVideoFrame f;
    gst_video_frame_map(&f, &info, b, GST_MAP_WRITE);
    const uint8_t* src = data.data() + fsize * size_t(i);
    for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&f); p++) {
      const int row = p == 0 || nv12 ? w : w / 2, rows = p == 0 ? h : h / 2;
      auto* dst = static_cast<uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&f, p));
      for (int y = 0; y < rows; y++, src += row)
        std::memcpy(dst + size_t(y) * GST_VIDEO_FRAME_PLANE_STRIDE(&f, p), src, size_t(row));
    }
    gst_video_frame_unmap(&f);
    GST_BUFFER_PTS(b) = gst_util_uint64_scale(guint64(i), GST_SECOND, kFps);
    GST_BUFFER_DURATION(b) = GST_SECOND / kFps;
    frames.push_back(b);
  }
}

// The first `n` frames of the test clip decoded and scaled by ffmpeg in another process
// (for runs under valgrind, which cannot run the CPU probes of libav's libraries that
// decodebin would load here).
void clip_by_ffmpeg(const std::string& path, const char* format, int w, int h, int n, std::vector<GstBuffer*>& frames) {
  std::string ffmpeg = gvc::test::find_ffmpeg();
  gvc::test::TempDir dir;
  if (ffmpeg.empty() || dir.path().empty()) return;
  const bool nv12 = std::string(format) == "NV12";
  const std::string raw = dir.path() + "/clip.yuv";
  auto r = gvc::test::run_command({ffmpeg, "-nostdin", "-v", "error", "-i", path, "-frames:v", std::to_string(n),
                                   "-vf", "scale=" + std::to_string(w) + ":" + std::to_string(h), "-pix_fmt",
                                   nv12 ? "nv12" : "yuv420p", "-f", "rawvideo", "-y", raw});
  Bytes data;
  if (r.exit_code != 0 || !gvc::test::read_file(raw, data) || data.size() != size_t(w) * h * 3 / 2 * n) return;
  frames_from_raw(data, nv12, w, h, n, frames);
}

// The first `n` frames of the test clip (opencv-doc's vtest.avi, people walking) scaled to
// w x h in `format`, re-timed to kFps; cached. Empty if the clip cannot be read.
const std::vector<GstBuffer*>& clip(const char* format, int w, int h, int n) {
  // Never destroyed: the frames stay reachable until exit (valgrind calls them still in use).
  static auto* cache = new std::map<std::string, std::vector<GstBuffer*>>;
  std::string key = raw_caps(format, w, h) + "/" + std::to_string(n);
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  std::vector<GstBuffer*>& frames = (*cache)[key];
  std::string path = gvc::test::find_test_clip();
  if (path.empty()) return frames;
  if (g_getenv("GVC_TEST_CLIP_BY_FFMPEG")) {
    clip_by_ffmpeg(path, format, w, h, n, frames);
    return frames;
  }
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

const char* const kElephants = "/usr/share/backgrounds/mate/abstract/Elephants_5640x3172.jpg";

// `n` frames of a pan over mate-backgrounds' 5640x3172 painting (13 and 5 samples per frame
// right and down, a w x h crop, no scaling), made by ffmpeg, in `format` with GStreamer's
// default strides, timed at kFps; cached. Empty if the image or ffmpeg is missing.
const std::vector<GstBuffer*>& pan(const char* format, int w, int h, int n) {
  // Never destroyed: the frames stay reachable until exit (valgrind calls them still in use).
  static auto* cache = new std::map<std::string, std::vector<GstBuffer*>>;
  std::string key = raw_caps(format, w, h) + "/" + std::to_string(n);
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  std::vector<GstBuffer*>& frames = (*cache)[key];
  std::string ffmpeg = gvc::test::find_ffmpeg();
  gvc::test::TempDir dir;
  if (ffmpeg.empty() || dir.path().empty()) return frames;
  const bool nv12 = std::string(format) == "NV12";
  const std::string raw = dir.path() + "/pan.yuv";
  // The image is decoded once and repeated by the loop filter, then cropped per frame.
  const std::string vf = "loop=loop=" + std::to_string(n - 1) + ":size=1:start=0,crop=" + std::to_string(w) +
                         ":" + std::to_string(h) + ":x=1000+13*n:y=800+5*n";
  auto r = gvc::test::run_command({ffmpeg, "-nostdin", "-v", "error", "-i", kElephants, "-frames:v",
                                   std::to_string(n), "-vf", vf, "-pix_fmt", nv12 ? "nv12" : "yuv420p", "-f",
                                   "rawvideo", "-y", raw});
  Bytes data;
  if (r.exit_code != 0 || !gvc::test::read_file(raw, data) || data.size() != size_t(w) * h * 3 / 2 * n) return frames;
  frames_from_raw(data, nv12, w, h, n, frames);
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

// The QP of each access unit's slices (26 + pic_init_qp_minus26 + slice_qp_delta), read by
// GStreamer's H.264 parser from the in-band SPS and PPS; -1 for an access unit whose slices
// disagree or do not parse.
std::vector<int> slice_qps(const Encoded& enc) {
  GstH264NalParser* parser = gst_h264_nal_parser_new();
  std::vector<int> qps;
  const bool avc = enc.avc();
  for (GstBuffer* b : enc.aus) {
    Bytes au = bytes_of(b);
    int qp = -2;
    for (guint off = 0; off < au.size();) {
      GstH264NalUnit nalu;
      GstH264ParserResult res =
          avc ? gst_h264_parser_identify_nalu_avc(parser, au.data(), off, au.size(), 4, &nalu)
              : gst_h264_parser_identify_nalu(parser, au.data(), off, au.size(), &nalu);
      if (res != GST_H264_PARSER_OK && res != GST_H264_PARSER_NO_NAL_END) {
        qp = -1;
        break;
      }
      if (nalu.type == GST_H264_NAL_SLICE || nalu.type == GST_H264_NAL_SLICE_IDR) {
        GstH264SliceHdr slice;
        if (gst_h264_parser_parse_slice_hdr(parser, &nalu, &slice, TRUE, TRUE) != GST_H264_PARSER_OK) {
          qp = -1;
          break;
        }
        int q = 26 + slice.pps->pic_init_qp_minus26 + slice.slice_qp_delta;
        qp = qp == -2 || qp == q ? q : -1;
      } else {
        gst_h264_parser_parse_nal(parser, &nalu);
      }
      off = nalu.offset + nalu.size;
    }
    qps.push_back(qp < 0 ? -1 : qp);
  }
  gst_h264_nal_parser_free(parser);
  return qps;
}

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

// Tears down a harness of new_harness(): its bus's messages hold references to the element,
// which holds the bus, so they are dropped first.
void teardown(GstHarness* h) {
  if (GstBus* bus = gst_element_get_bus(h->element)) {
    gst_bus_set_flushing(bus, TRUE);
    gst_object_unref(bus);
  }
  gst_harness_teardown(h);
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
  teardown(h);
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

// Encodes `frames` with `props` plus a recon file and checks both decoders bit for bit.
void check_bit_exact_frames(const std::string& props, const char* format, int w, int h,
                            const std::vector<GstBuffer*>& frames, const std::string& sink_caps = "",
                            Encoded* keep = nullptr) {
  const int n = int(frames.size());
  ASSERT_GT(n, 0) << "no source frames";
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

// The same on the first `n` frames of the clip.
void check_bit_exact(const std::string& props, const char* format, int w, int h, int n,
                     const std::string& sink_caps = "", Encoded* keep = nullptr) {
  const auto& frames = clip(format, w, h, n);
  ASSERT_EQ(int(frames.size()), n) << "test clip not readable";
  check_bit_exact_frames(props, format, w, h, frames, sink_caps, keep);
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

// Real sizes, a few frames each (the CPU engine is slow): vtest.avi scaled to 720x528 (whole
// macroblocks) and 1366x768 (cropped on the right; NV12 with a padded 1368-byte stride), and
// 1920x1080 (cropped at the bottom) as a pan over a painting made by ffmpeg.
struct SizeCase {
  const char* name;
  const char* format;
  int width, height, frames;
  const char* stream_format;
  int slices;
  bool pan;  // the painting instead of the clip
};

// gtest prints a parameter by name (not its bytes, which include uninitialised padding).
std::ostream& operator<<(std::ostream& os, const SizeCase& c) { return os << c.name; }

class H264EncSizes : public ::testing::TestWithParam<SizeCase> {};

TEST_P(H264EncSizes, DecodersEqualRecon) {
  const SizeCase& c = GetParam();
  const auto& frames = c.pan ? pan(c.format, c.width, c.height, c.frames)
                             : clip(c.format, c.width, c.height, c.frames);
  ASSERT_EQ(int(frames.size()), c.frames) << (c.pan ? kElephants : "the test clip") << " not readable";
  Encoded enc;
  check_bit_exact_frames("backend=cpu slices=" + std::to_string(c.slices), c.format, c.width, c.height, frames,
                         std::string("video/x-h264,stream-format=") + c.stream_format, &enc);
  if (HasFatalFailure()) return;
  GstStructure* s = gst_caps_get_structure(enc.caps, 0);
  EXPECT_STREQ(gst_structure_get_string(s, "stream-format"), c.stream_format);
  for (size_t i = 0; i < enc.aus.size(); i++) {
    std::vector<int> t = nal_types(bytes_of(enc.aus[i]), enc.avc());
    EXPECT_EQ(std::count_if(t.begin(), t.end(), [](int x) { return x == 1 || x == 5; }), c.slices) << "frame " << i;
    EXPECT_EQ(t.back(), i == 0 ? 5 : 1) << "frame " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, H264EncSizes,
                         ::testing::Values(SizeCase{"720x528_avc", "I420", 720, 528, 3, "avc", 2, false},
                                           SizeCase{"1366x768_nv12", "NV12", 1366, 768, 3, "byte-stream", 1, false},
                                           SizeCase{"1920x1080_pan", "I420", 1920, 1080, 3, "byte-stream", 4, true}),
                         [](const auto& info) { return std::string(info.param.name); });

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
  teardown(h);
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
  // zerolatency: every frame was out before the flush; the default (the frame-level
  // pipeline) holds frame 1 when the flush comes, which drops it.
  for (const bool zerolatency : {true, false}) {
    GstHarness* h = new_harness(zerolatency ? "backend=cpu tune=zerolatency" : "backend=cpu");
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
    ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
    pull_all(h, enc);
    teardown(h);
    // Flushing events reach the harness too; the encoded frames are what counts.
    const size_t after = zerolatency ? 2 : 1;  // the first frame after the flush
    ASSERT_EQ(enc.aus.size(), after + 2) << "zerolatency " << zerolatency;
    EXPECT_EQ(nal_types(bytes_of(enc.aus[after - 1]), false).back(), zerolatency ? 1 : 5) << zerolatency;
    EXPECT_EQ(nal_types(bytes_of(enc.aus[after]), false).back(), 5) << "first frame after a flush, " << zerolatency;
    EXPECT_EQ(nal_types(bytes_of(enc.aus[after + 1]), false).back(), 1) << zerolatency;
  }
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
  Encoded all, second;
  for (GstBuffer* f : a) ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(f)), GST_FLOW_OK);
  gst_harness_set_src_caps_str(h, raw_caps("I420", 128, 96).c_str());
  for (GstBuffer* f : b) ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(f)), GST_FLOW_OK);
  gst_harness_push_event(h, gst_event_new_eos());
  pull_all(h, all);  // the frame the pipeline held at the change came out before the new caps
  second.caps = gst_pad_get_current_caps(h->sinkpad);
  teardown(h);
  ASSERT_EQ(all.aus.size(), 6u);
  for (size_t i = 3; i < 6; i++) second.aus.push_back(gst_buffer_ref(all.aus[i]));
  EXPECT_EQ(nal_types(bytes_of(all.aus[2]), false).back(), 1) << "the last frame of the first size";
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
  teardown(h);
}

TEST(H264Enc, UnsupportedProfileRefused) {
  GstHarness* h = new_harness("backend=cpu", "video/x-h264,profile=high");
  gst_harness_set_src_caps_str(h, raw_caps("I420", 176, 144).c_str());
  const auto& frames = clip("I420", 176, 144, 1);
  ASSERT_EQ(frames.size(), 1u);
  // The encoder's sink caps follow what downstream takes: none, so the caps are refused.
  EXPECT_NE(gst_harness_push(h, gst_buffer_ref(frames[0])), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_received(h), 0u);
  teardown(h);
}

// The sink caps offer NV12 and I420 only: other formats are refused at negotiation, and a
// pipeline that would feed one fails to link with a message naming the element.
TEST(H264Enc, SinkRefusesOtherFormats) {
  GstElement* e = gst_element_factory_make("cudah264enc", nullptr);
  ASSERT_NE(e, nullptr);
  GstPad* sink = gst_element_get_static_pad(e, "sink");
  GstCaps* caps = gst_pad_query_caps(sink, nullptr);
  for (guint i = 0; i < gst_caps_get_size(caps); i++) {
    const GValue* formats = gst_structure_get_value(gst_caps_get_structure(caps, i), "format");
    ASSERT_NE(formats, nullptr);
    ASSERT_TRUE(GST_VALUE_HOLDS_LIST(formats));
    for (guint k = 0; k < gst_value_list_get_size(formats); k++) {
      std::string f = g_value_get_string(gst_value_list_get_value(formats, k));
      EXPECT_TRUE(f == "NV12" || f == "I420") << f;
    }
  }
  gst_caps_unref(caps);
  for (const char* format : {"RGB", "BGRx", "YUY2", "NV21", "Y444", "P010_10LE", "I420_10LE", "GRAY8"}) {
    GstCaps* c = gst_caps_from_string(raw_caps(format, 176, 144).c_str());
    EXPECT_FALSE(gst_pad_query_accept_caps(sink, c)) << format;
    gst_caps_unref(c);
  }
  GstCaps* i420 = gst_caps_from_string(raw_caps("I420", 176, 144).c_str());
  EXPECT_TRUE(gst_pad_query_accept_caps(sink, i420));
  gst_caps_unref(i420);
  gst_object_unref(sink);
  gst_object_unref(e);
  GError* err = nullptr;
  GstElement* p = gst_parse_launch("videotestsrc ! video/x-raw,format=RGB ! cudah264enc ! fakesink", &err);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err->message).find("cudah264enc"), std::string::npos) << err->message;
  g_error_free(err);
  if (p) gst_object_unref(p);
}

// Every numeric property's GParamSpec refuses values outside its documented range and keeps
// the range's ends; every enumeration refuses unknown nicks and values.
TEST(H264Enc, PropertyRangesRejectInvalidValues) {
  GstElement* e = gst_element_factory_make("cudah264enc", nullptr);
  ASSERT_NE(e, nullptr);
  GObjectClass* klass = G_OBJECT_GET_CLASS(e);
  auto validate = [&](const char* name, auto value) -> bool {  // true: the value is refused
    GParamSpec* ps = g_object_class_find_property(klass, name);
    EXPECT_NE(ps, nullptr) << name;
    if (!ps) return false;
    GValue v = G_VALUE_INIT;
    g_value_init(&v, G_PARAM_SPEC_VALUE_TYPE(ps));
    if constexpr (std::is_same_v<decltype(value), double>)
      g_value_set_double(&v, value);
    else if (G_PARAM_SPEC_VALUE_TYPE(ps) == G_TYPE_UINT)
      g_value_set_uint(&v, guint(value));
    else if (G_TYPE_IS_ENUM(G_PARAM_SPEC_VALUE_TYPE(ps)))
      g_value_set_enum(&v, int(value));
    else
      g_value_set_int(&v, int(value));
    bool refused = g_param_value_validate(ps, &v);
    g_value_unset(&v);
    return refused;
  };
  struct {
    const char* name;
    long long bad, good;  // a value just outside the range, and the end next to it
  } ints[] = {{"qp", 52, 51},
              {"qp", -1, 0},
              {"ref-frames", 5, 4},
              {"ref-frames", 0, 1},
              {"slices", 0, 1},
              {"slices", 257, 256},
              {"bitrate", 0, 1},
              {"bitrate", 2048001, 2048000},
              {"max-bitrate", 2048001, 2048000},
              {"vbv-buffer-size", 9, 10},
              {"vbv-buffer-size", 10001, 10000},
              {"key-int-max", 0, 1},
              {"cuda-device-id", -2, -1}};
  for (const auto& c : ints) {
    EXPECT_TRUE(validate(c.name, c.bad)) << c.name << "=" << c.bad << " accepted";
    EXPECT_FALSE(validate(c.name, c.good)) << c.name << "=" << c.good << " refused";
  }
  EXPECT_TRUE(validate("ip-factor", 0.49)) << "ip-factor=0.49 accepted";
  EXPECT_TRUE(validate("ip-factor", 4.01)) << "ip-factor=4.01 accepted";
  EXPECT_FALSE(validate("ip-factor", 0.5));
  EXPECT_FALSE(validate("ip-factor", 4.0));
  for (const char* name : {"rate-control", "speed-preset", "intra-pruning", "tune", "backend"}) {
    EXPECT_TRUE(validate(name, 99)) << name << "=99 accepted";
    EXPECT_TRUE(validate(name, -1)) << name << "=-1 accepted";
  }
  // Enumerations refuse unknown nicks when parsed.
  for (const char* bad : {"rate-control=abr", "speed-preset=ultrafast", "intra-pruning=canny", "tune=film",
                          "backend=opencl"}) {
    GError* err = nullptr;
    GstElement* p = gst_parse_launch((std::string("fakesrc ! cudah264enc ") + bad + " ! fakesink").c_str(), &err);
    EXPECT_NE(err, nullptr) << bad << " parsed";
    if (err) g_error_free(err);
    if (p) gst_object_unref(p);
  }
  // active-backend is read-only; ip-factor defaults to x264's 1.4.
  GParamSpec* active_spec = g_object_class_find_property(klass, "active-backend");
  ASSERT_NE(active_spec, nullptr);
  EXPECT_FALSE(active_spec->flags & G_PARAM_WRITABLE);
  gdouble ipf = 0;
  g_object_get(e, "ip-factor", &ipf, nullptr);
  EXPECT_DOUBLE_EQ(ipf, 1.4);
  gchar* active = nullptr;
  g_object_get(e, "active-backend", &active, nullptr);
  EXPECT_STREQ(active, "none");
  g_free(active);
  gst_object_unref(e);
}

// Sizes the encoder cannot code are refused when the caps arrive, with a message that says why.
TEST(H264Enc, UnsupportedSizesRefusedWithClearMessage) {
  struct {
    int w, h;
    const char* says;
  } cases[] = {{176, 143, "even width and height"},
               {8, 16, "between 16x16 and 4096x4096"},
               {16, 14, "between 16x16 and 4096x4096"},
               {4098, 16, "between 16x16 and 4096x4096"},
               {16, 4352, "between 16x16 and 4096x4096"}};
  for (const auto& c : cases) {
    GstHarness* h = new_harness("backend=cpu");
    gst_harness_set_src_caps_str(h, raw_caps("I420", c.w, c.h).c_str());
    GstBuffer* buf = gst_buffer_new_allocate(nullptr, size_t(c.w + 1) * (c.h + 1) * 2, nullptr);
    EXPECT_EQ(gst_harness_push(h, buf), GST_FLOW_NOT_NEGOTIATED) << c.w << "x" << c.h;
    std::string err = pop_error(h);
    EXPECT_NE(err.find(c.says), std::string::npos) << c.w << "x" << c.h << ": " << err;
    EXPECT_NE(err.find(std::to_string(c.w) + "x" + std::to_string(c.h)), std::string::npos) << err;
    EXPECT_EQ(gst_harness_buffers_received(h), 0u);
    teardown(h);
  }
}

// Interlaced input is refused (the encoder codes progressive frames only).
TEST(H264Enc, InterlacedRefusedWithClearMessage) {
  GstHarness* h = new_harness("backend=cpu");
  gst_harness_set_src_caps_str(h, (raw_caps("I420", 176, 144) + ",interlace-mode=interleaved").c_str());
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, 176 * 144 * 3 / 2, nullptr);
  EXPECT_EQ(gst_harness_push(h, buf), GST_FLOW_NOT_NEGOTIATED);
  std::string err = pop_error(h);
  EXPECT_NE(err.find("progressive"), std::string::npos) << err;
  EXPECT_EQ(gst_harness_buffers_received(h), 0u);
  teardown(h);
}

// Downstream that takes no H.264 this encoder makes (a profile, an alignment): nothing is
// coded, and a pipeline says at link time which element cannot take what.
TEST(H264Enc, UnsupportedOutputCapsRefused) {
  for (const char* want : {"video/x-h264,alignment=nal", "video/x-h264,stream-format=avc3",
                           "video/x-h264,profile=main"}) {
    GstHarness* h = new_harness("backend=cpu", want);
    gst_harness_set_src_caps_str(h, raw_caps("I420", 176, 144).c_str());
    GstBuffer* buf = gst_buffer_new_allocate(nullptr, 176 * 144 * 3 / 2, nullptr);
    EXPECT_NE(gst_harness_push(h, buf), GST_FLOW_OK) << want;
    EXPECT_EQ(gst_harness_buffers_received(h), 0u) << want;
    teardown(h);
  }
  GError* err = nullptr;
  GstElement* p = gst_parse_launch("videotestsrc ! cudah264enc ! video/x-h264,profile=high ! fakesink", &err);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err->message).find("cudah264enc"), std::string::npos) << err->message;
  g_error_free(err);
  if (p) gst_object_unref(p);
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

#if GVC_TEST_CUDA
// `frames` (system memory NV12) copied into GstCudaMemory of `ctx` from a GstCudaBufferPool
// (pitched planes); each buffer keeps the pool's GstVideoMeta when `meta`, or has the memory
// alone (its layout then only in the GstCudaMemory's own info).
std::vector<GstBuffer*> to_cuda_memory(GstCudaContext* ctx, const std::vector<GstBuffer*>& frames, int w, int h,
                                       bool meta) {
  std::vector<GstBuffer*> out;
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_NV12, guint(w), guint(h));
  GstCaps* caps = gst_video_info_to_caps(&info);
  gst_caps_set_features(caps, 0, gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY, nullptr));
  GstBufferPool* pool = gst_cuda_buffer_pool_new(ctx);
  GstStructure* cfg = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(cfg, caps, guint(info.size), 0, 0);
  gst_buffer_pool_config_add_option(cfg, GST_BUFFER_POOL_OPTION_VIDEO_META);
  gst_caps_unref(caps);
  if (!gst_buffer_pool_set_config(pool, cfg) || !gst_buffer_pool_set_active(pool, TRUE)) {
    gst_object_unref(pool);
    return out;
  }
  for (GstBuffer* f : frames) {
    GstBuffer* b = nullptr;
    if (gst_buffer_pool_acquire_buffer(pool, &b, nullptr) != GST_FLOW_OK) break;
    GstVideoFrame src, dst;
    gst_video_frame_map(&src, &info, f, GST_MAP_READ);
    gst_video_frame_map(&dst, &info, b, GST_MAP_WRITE);  // the pool's meta: the pitched layout
    gst_video_frame_copy(&dst, &src);
    gst_video_frame_unmap(&dst);
    gst_video_frame_unmap(&src);
    if (gst_video_frame_map(&dst, &info, b, GstMapFlags(GST_MAP_READ | GST_MAP_CUDA)))  // uploads
      gst_video_frame_unmap(&dst);
    GstBuffer* pushed = b;
    if (!meta) {  // the memory alone
      pushed = gst_buffer_new();
      gst_buffer_append_memory(pushed, gst_memory_ref(gst_buffer_peek_memory(b, 0)));
      gst_buffer_unref(b);
    }
    GST_BUFFER_PTS(pushed) = GST_BUFFER_PTS(f);
    GST_BUFFER_DURATION(pushed) = GST_BUFFER_DURATION(f);
    out.push_back(pushed);
  }
  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
  return out;
}
#endif

// NV12 in CUDA memory of the element's context, pitched (a 176-wide frame in rows of hundreds
// of bytes), with the pool's GstVideoMeta and without one (GstCudaMemory carries its layout;
// the caps' default strides once read such buffers sheared: every P frame coded like noise),
// on the CUDA backend (read where it is) and the CPU one (mapped on the host): every stream
// equals the one from the same frames in system memory.
// n NV12 frames of a texture moving 2 right and 1 down per frame (made here: GPU hosts lack
// the clip).
std::vector<GstBuffer*> moving_texture(int w, int h, int n) {
  Bytes raw(size_t(w) * h * 3 / 2 * size_t(n));
  for (int i = 0, k = 0; i < n; i++) {
    auto tex = [&](int x, int y) { return uint8_t((x * x / 7 + y * 13 + ((x * 31) ^ (y * 17)) % 23) & 0xff); };
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) raw[size_t(k++)] = tex(x - 2 * i, y - i);
    for (int y = 0; y < h / 2; y++)
      for (int x = 0; x < w; x++) raw[size_t(k++)] = uint8_t(128 + (tex(x - i, y + x % 2 * 40) >> 3));
  }
  std::vector<GstBuffer*> frames;
  frames_from_raw(raw, true, w, h, n, frames);
  return frames;
}

// On the GPU, with tune=zerolatency (an IDR's macroblocks handed to the entropy coding by rows
// as the intra wavefront gives them) and in the frame pipeline (each frame's entropy coding
// on the encoder's thread while the next frame is analysed, decided and reconstructed), with
// the test hook of gst/backendsel.h failing the backend after a few frames or not at all: the
// access units before the failure are the CPU backend's, byte for byte, then the element's
// error.
TEST(H264EncGpu, FramesBeforeAFailureAreTheCpus) {
#if GVC_TEST_CUDA
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device or driver on this machine";
  const int w = 176, h = 144, n = 9;
  std::vector<GstBuffer*> frames = moving_texture(w, h, n);
  const std::string caps = raw_caps("NV12", w, h);
  Encoded want;
  encode("backend=cpu tune=zerolatency key-int-max=3 qp=12 rate-control=cqp", caps, frames, want);
  ASSERT_TRUE(want.error.empty()) << want.error;
  ASSERT_EQ(want.aus.size(), size_t(n));
  for (const char* tune : {"tune=zerolatency", ""}) {
    for (const char* fail_after : {"", "12", "17"}) {  // 2 backend calls an IDR, 3 a P frame
      if (*fail_after) g_setenv("GVC_TEST_BACKEND_FAIL_AFTER", fail_after, TRUE);
      Encoded got;
      encode(std::string("backend=cuda key-int-max=3 qp=12 rate-control=cqp ") + tune, caps, frames, got);
      g_unsetenv("GVC_TEST_BACKEND_FAIL_AFTER");
      if (*fail_after) {
        EXPECT_NE(got.error.find("injected backend failure"), std::string::npos) << tune << fail_after << ": " << got.error;
        EXPECT_GT(got.aus.size(), size_t(0)) << tune << fail_after;
        EXPECT_LT(got.aus.size(), size_t(n)) << tune << fail_after;
      } else {
        EXPECT_TRUE(got.error.empty()) << tune << got.error;
        EXPECT_EQ(got.aus.size(), size_t(n)) << tune;
      }
      for (size_t i = 0; i < got.aus.size() && i < want.aus.size(); i++)
        EXPECT_EQ(bytes_of(got.aus[i]), bytes_of(want.aus[i]))
            << tune << " failing after " << fail_after << ": frame " << i;
    }
  }
  for (GstBuffer* f : frames) gst_buffer_unref(f);
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

// Every speed-preset (its own partitions, search range and refinement, then the decimation
// of inter residuals) codes on the CUDA backend the CPU backend's stream, byte for byte.
TEST(H264EncGpu, EveryPresetCodesTheCpusStream) {
#if GVC_TEST_CUDA
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device or driver on this machine";
  const int w = 176, h = 144, n = 6;
  std::vector<GstBuffer*> frames = moving_texture(w, h, n);
  for (const char* preset : {"fast", "medium", "slow"}) {
    for (const char* qp : {"20", "32"}) {
      Encoded got[2];
      const char* backends[2] = {"cpu", "cuda"};
      for (int b = 0; b < 2; b++) {
        encode(std::string("backend=") + backends[b] + " key-int-max=4 rate-control=cqp qp=" + qp + " speed-preset=" + preset,
               raw_caps("NV12", w, h), frames, got[b]);
        ASSERT_EQ(got[b].error, "") << backends[b] << " " << preset;
        ASSERT_EQ(got[b].aus.size(), size_t(n)) << backends[b] << " " << preset;
      }
      for (int i = 0; i < n; i++)
        EXPECT_EQ(bytes_of(got[1].aus[size_t(i)]), bytes_of(got[0].aus[size_t(i)]))
            << preset << " qp " << qp << ": frame " << i;
    }
  }
  for (GstBuffer* f : frames) gst_buffer_unref(f);
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

// recon-location with the CUDA backend: the reconstruction, still on the GPU when the element
// writes it (its context pushed), equals the CPU backend's, frame for frame, pipelined or not.
TEST(H264EncGpu, ReconstructionFileIsTheCpus) {
#if GVC_TEST_CUDA
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device or driver on this machine";
  const int w = 176, h = 144, n = 6;
  std::vector<GstBuffer*> frames = moving_texture(w, h, n);
  gvc::test::TempDir dir;
  for (const char* tune : {"", " tune=zerolatency"}) {
    Bytes recon[2];
    const char* backends[2] = {"cpu", "cuda"};
    for (int b = 0; b < 2; b++) {
      const std::string path = dir.path() + "/recon-" + backends[b] + ".yuv";
      Encoded enc;
      encode(std::string("backend=") + backends[b] + " key-int-max=4 qp=20 rate-control=cqp recon-location=" + path +
                 tune,
             raw_caps("NV12", w, h), frames, enc);
      ASSERT_EQ(enc.error, "") << backends[b] << tune;
      ASSERT_EQ(enc.aus.size(), size_t(n)) << backends[b] << tune;
      ASSERT_TRUE(gvc::test::read_file(path, recon[b]));
    }
    ASSERT_EQ(recon[1].size(), size_t(w) * h * 3 / 2 * n) << "cuda" << tune << ": recon-location holds a wrong number of frames";
    EXPECT_TRUE(recon[0] == recon[1]) << "cuda" << tune << ": the reconstruction is not the CPU's";
  }
  for (GstBuffer* f : frames) gst_buffer_unref(f);
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

TEST(H264EncGpu, CudaMemoryReadAtItsOwnPitchWithOrWithoutVideoMeta) {
#if GVC_TEST_CUDA
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device or driver on this machine";
  const int w = 176, h = 144, n = 6;
  std::vector<GstBuffer*> frames = moving_texture(w, h, n);
  const std::string sys_caps = raw_caps("NV12", w, h);
  const std::string cuda_caps = "video/x-raw(memory:CUDAMemory)," + sys_caps.substr(std::string("video/x-raw,").size());
  GstCudaContext* ctx = gst_cuda_context_new(0);
  ASSERT_NE(ctx, nullptr);
  for (const char* backend : {"backend=cuda", "backend=cpu"}) {
    Encoded want;
    encode(backend, sys_caps, frames, want);
    ASSERT_TRUE(want.error.empty()) << want.error;
    ASSERT_EQ(want.aus.size(), size_t(n));
    for (bool meta : {true, false}) {
      // The frames' context given to the element before it starts, as a pipeline's would be.
      GstElement* enc = gst_element_factory_make("cudah264enc", nullptr);
      ASSERT_NE(enc, nullptr);
      gst_util_set_object_arg(G_OBJECT(enc), "backend", backend + std::strlen("backend="));
      GstContext* context = gst_context_new_cuda_context(ctx);
      gst_element_set_context(enc, context);
      gst_context_unref(context);
      GstHarness* hn = gst_harness_new_with_element(enc, "sink", "src");
      gst_object_unref(enc);
      GstBus* bus = gst_bus_new();  // for pop_error
      gst_element_set_bus(hn->element, bus);
      gst_object_unref(bus);
      gst_harness_set_src_caps_str(hn, cuda_caps.c_str());
      std::vector<GstBuffer*> in = to_cuda_memory(ctx, frames, w, h, meta);
      ASSERT_EQ(in.size(), size_t(n));
      Encoded got;
      for (GstBuffer* b : in) {
        EXPECT_EQ(gst_harness_push(hn, b), GST_FLOW_OK);
        pull_all(hn, got);
      }
      gst_harness_push_event(hn, gst_event_new_eos());
      pull_all(hn, got);
      got.error = pop_error(hn);
      teardown(hn);
      EXPECT_TRUE(got.error.empty()) << got.error;
      ASSERT_EQ(got.aus.size(), want.aus.size()) << backend << (meta ? " with" : " without") << " a video meta";
      for (size_t i = 0; i < got.aus.size(); i++)
        EXPECT_EQ(bytes_of(got.aus[i]), bytes_of(want.aus[i]))
            << backend << (meta ? " with" : " without") << " a video meta, frame " << i;
    }
  }
  gst_object_unref(ctx);
  for (GstBuffer* f : frames) gst_buffer_unref(f);
#else
  GTEST_SKIP() << "built without CUDA";
#endif
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
  gst_harness_push_event(h, gst_event_new_eos());
  pull_all(h, enc);
  gst_object_unref(e);
  teardown(h);
  ASSERT_EQ(int(enc.aus.size()), n);
  std::vector<double> w = window_kbps(enc, 0, size_t(n));
  EXPECT_NEAR(w[1], 400, 40) << "before the change";
  // The buffer drains its excess within the first half second after the change.
  std::vector<double> after = window_kbps(enc, size_t(3 * kFps), size_t(n));
  for (double k : after) EXPECT_NEAR(k, 150, 15) << "after the change";
}

// IDR frames are coded round(6 log2(ip-factor)) QP finer than P frames, clipped to 0..51,
// as x264's --ipratio; the QPs are read from the slice headers by GStreamer's parser.
TEST(H264Enc, IpFactorSetsIdrQp) {
  struct {
    const char* props;
    int idr_qp, p_qp;
  } cases[] = {{"qp=30", 27, 30},                  // the default, 1.4
               {"qp=30 ip-factor=1.0", 30, 30},    // x264's ip-factor=1.0: one QP
               {"qp=30 ip-factor=2.0", 24, 30},    // twice the step: 6 QP
               {"qp=30 ip-factor=4.0", 18, 30},    // the maximum
               {"qp=30 ip-factor=0.5", 36, 30},    // coarser IDRs
               {"qp=1", 0, 1},                     // clipped at 0
               {"qp=49 ip-factor=0.5", 51, 49}};   // clipped at 51
  const auto& frames = clip("I420", 176, 144, 4);
  ASSERT_EQ(frames.size(), 4u);
  for (const auto& c : cases) {
    Encoded enc;
    encode(std::string("backend=cpu speed-preset=fast key-int-max=2 ") + c.props, raw_caps("I420", 176, 144), frames,
           enc);
    ASSERT_EQ(enc.error, "");
    std::vector<int> qps = slice_qps(enc);
    ASSERT_EQ(qps.size(), 4u);
    EXPECT_EQ(qps, (std::vector<int>{c.idr_qp, c.p_qp, c.idr_qp, c.p_qp})) << c.props;
  }
  // The offset changes the slice QP only: the stream still decodes to the reconstruction.
  check_bit_exact("backend=cpu key-int-max=2 qp=30 ip-factor=2.0", "I420", 176, 144, 4);
}

// In cbr the IDR follows the P frames' QP as in cqp: an IDR at frame 20 of a steady stream is
// about 3 QP finer than the P frames before it (exactly 3 below the QP the rate control would
// have given a P frame there; the unit tests check that), and with ip-factor=1.0 it is not.
TEST(H264Enc, CbrIdrFinerThanPFrames) {
  const int n = 24;
  const auto& frames = clip("I420", 176, 144, n);
  ASSERT_EQ(int(frames.size()), n);
  for (double ipf : {1.4, 1.0}) {
    Encoded enc;
    encode("backend=cpu speed-preset=fast rate-control=cbr bitrate=300 key-int-max=20 ip-factor=" +
               std::to_string(ipf),
           raw_caps("I420", 176, 144), frames, enc);
    ASSERT_EQ(enc.error, "");
    std::vector<int> qps = slice_qps(enc);
    ASSERT_EQ(int(qps.size()), n);
    for (int q : qps) ASSERT_GE(q, 0);
    const double p_mean = std::accumulate(qps.begin() + 15, qps.begin() + 20, 0.0) / 5;
    std::printf("ip-factor %.1f: IDR qp %d, P frames 15..19 mean qp %.1f\n", ipf, qps[20], p_mean);
    if (ipf > 1.2) {
      EXPECT_LE(qps[20], p_mean - 1.5) << "IDR not finer than the P frames";
    } else {
      EXPECT_NEAR(qps[20], p_mean, 2.5);
    }
  }
}

// --- latency and lifecycle -------------------------------------------------------------------

// The latency query as the harness's sink sees it: live and minimum latency; false if unanswered.
bool query_latency(GstHarness* h, gboolean& live, GstClockTime& min) {
  GstQuery* q = gst_query_new_latency();
  const bool ok = gst_pad_peer_query(h->sinkpad, q);
  GstClockTime max = 0;
  if (ok) gst_query_parse_latency(q, &live, &min, &max);
  gst_query_unref(q);
  return ok;
}

// tune=zerolatency: the output of frame N is pushed before frame N+1 is accepted, and a
// latency query adds nothing to upstream's latency.
TEST(H264Enc, ZeroLatencyPushesEachFrameAtOnce) {
  const auto& frames = clip("I420", 176, 144, 5);
  ASSERT_EQ(frames.size(), 5u);
  for (const char* props : {"backend=cpu tune=zerolatency",
                            "backend=cpu tune=zerolatency rate-control=cbr bitrate=300 ref-frames=4 slices=3 "
                            "key-int-max=3"}) {
    GstHarness* h = new_harness(props);
    gst_harness_set_src_caps_str(h, raw_caps("I420", 176, 144).c_str());
    // Upstream is live with 20 ms of latency; the encoder adds its own to what it forwards.
    gst_harness_set_upstream_latency(h, 20 * GST_MSECOND);
    for (size_t i = 0; i < frames.size(); i++) {
      ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(frames[i])), GST_FLOW_OK);
      GstBuffer* out = gst_harness_try_pull(h);
      ASSERT_NE(out, nullptr) << props << ": output of frame " << i << " not pushed before frame " << i + 1;
      EXPECT_EQ(GST_BUFFER_PTS(out), GST_BUFFER_PTS(frames[i])) << props << ": frame " << i;
      gst_buffer_unref(out);
    }
    gboolean live = FALSE;
    GstClockTime min = 0;
    ASSERT_TRUE(query_latency(h, live, min)) << props;
    EXPECT_TRUE(live);
    // At most one frame duration of its own; this encoder reports none.
    EXPECT_LE(min, 20 * GST_MSECOND + GST_SECOND / kFps) << props;
    EXPECT_EQ(min, 20 * GST_MSECOND) << props;
    teardown(h);
  }
}

// Without tune=zerolatency the frame-level pipeline holds one frame (its slices are coded while
// the next frame is analysed): frame i comes out when frame i + 1 is pushed, the last one at
// EOS, and the latency query says so (one frame on top of upstream's). Same stream as
// zerolatency's, byte for byte.
TEST(H264Enc, PipelineHoldsOneFrameAndReportsIt) {
  const auto& frames = clip("I420", 176, 144, 5);
  ASSERT_EQ(frames.size(), 5u);
  for (const char* props : {"backend=cpu", "backend=cpu rate-control=cbr bitrate=300 ref-frames=2 slices=2"}) {
    GstHarness* h = new_harness(props);
    gst_harness_set_src_caps_str(h, raw_caps("I420", 176, 144).c_str());
    gst_harness_set_upstream_latency(h, 20 * GST_MSECOND);
    for (size_t i = 0; i < frames.size(); i++) {
      ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(frames[i])), GST_FLOW_OK);
      GstBuffer* out = gst_harness_try_pull(h);
      if (i == 0) {
        EXPECT_EQ(out, nullptr) << props << ": the first frame was not held";
      } else {
        ASSERT_NE(out, nullptr) << props << ": frame " << i - 1 << " not out when frame " << i << " came";
        EXPECT_EQ(GST_BUFFER_PTS(out), GST_BUFFER_PTS(frames[i - 1])) << props << ": frame " << i - 1;
      }
      if (out) gst_buffer_unref(out);
    }
    EXPECT_EQ(gst_harness_try_pull(h), nullptr) << props << ": more than one frame a push";
    gboolean live = FALSE;
    GstClockTime min = 0;
    ASSERT_TRUE(query_latency(h, live, min)) << props;
    EXPECT_EQ(min, 20 * GST_MSECOND + GST_SECOND / kFps) << props;
    ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
    GstBuffer* last = gst_harness_try_pull(h);
    ASSERT_NE(last, nullptr) << props << ": the held frame not pushed at EOS";
    EXPECT_EQ(GST_BUFFER_PTS(last), GST_BUFFER_PTS(frames.back())) << props;
    gst_buffer_unref(last);
    teardown(h);
  }
  // (constant QP: pipelined, the rate control learns each frame's size one frame later)
  Encoded piped, zero;
  encode("backend=cpu slices=2", raw_caps("I420", 176, 144), frames, piped);
  encode("backend=cpu slices=2 tune=zerolatency", raw_caps("I420", 176, 144), frames, zero);
  ASSERT_EQ(piped.aus.size(), 5u);
  ASSERT_EQ(zero.aus.size(), 5u);
  for (size_t i = 0; i < 5; i++) EXPECT_TRUE(bytes_of(piped.aus[i]) == bytes_of(zero.aus[i])) << "frame " << i;
}

TEST(H264Enc, EosDrainsEveryFrame) {
  const auto& frames = clip("I420", 176, 144, 4);
  Encoded enc;
  encode("backend=cpu", raw_caps("I420", 176, 144), frames, enc);
  EXPECT_EQ(enc.aus.size(), 4u);
  EXPECT_EQ(enc.error, "");
}

// --- lifecycle, concurrency and failures (also run under valgrind: H264EncLifecycle.*) --------

// Small frames, so that the valgrind run stays short.
constexpr int kSmallW = 64, kSmallH = 48;

// appsrc ! cudah264enc ! appsink, for running several at once and restarting one (appsink
// posts EOS without waiting for its samples to be taken).
struct EncodePipeline {
  GstElement* pipeline = nullptr;
  GstElement* src = nullptr;
  GstElement* sink = nullptr;

  explicit EncodePipeline(const std::string& props) {
    pipeline = gst_parse_launch(("appsrc name=src format=time caps=" + raw_caps("I420", kSmallW, kSmallH) +
                                 " ! cudah264enc " + props + " ! appsink name=sink sync=false wait-on-eos=false")
                                    .c_str(),
                                nullptr);
    if (!pipeline) return;
    src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  }
  ~EncodePipeline() {
    if (!pipeline) return;
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(src);
    gst_object_unref(sink);
    gst_object_unref(pipeline);
  }
  // Queues the frames and EOS (appsrc drops what it gets before it starts).
  void feed(const std::vector<GstBuffer*>& frames) {
    for (GstBuffer* f : frames) gst_app_src_push_buffer(GST_APP_SRC(src), gst_buffer_ref(f));
    gst_app_src_end_of_stream(GST_APP_SRC(src));
  }
  // Waits for EOS (or an error, returned) and takes the access units.
  std::string finish(std::vector<Bytes>& aus) {
    std::string error;
    GstBus* bus = gst_element_get_bus(pipeline);
    GstMessage* m = gst_bus_timed_pop_filtered(bus, 300 * GST_SECOND,
                                               GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    if (!m) {
      error = "timeout";
    } else if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) {
      GError* err = nullptr;
      gst_message_parse_error(m, &err, nullptr);
      error = err->message;
      g_error_free(err);
    }
    if (m) gst_message_unref(m);
    gst_object_unref(bus);
    while (GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 0)) {
      aus.push_back(bytes_of(gst_sample_get_buffer(sample)));
      gst_sample_unref(sample);
    }
    return error;
  }
};

TEST(H264EncLifecycle, HundredStartStopCycles) {
  const auto& frames = clip("I420", kSmallW, kSmallH, 1);
  ASSERT_EQ(frames.size(), 1u);
  for (int i = 0; i < 100; i++) {
    GstHarness* h = new_harness("backend=cpu");
    gst_harness_set_src_caps_str(h, raw_caps("I420", kSmallW, kSmallH).c_str());
    ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(frames[0])), GST_FLOW_OK);
    ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));  // the pipeline holds the frame till then
    GstBuffer* out = gst_harness_pull(h);
    ASSERT_NE(out, nullptr);
    gst_buffer_unref(out);
    teardown(h);
  }
}

// One element taken from NULL to PLAYING and back 100 times, coding an IDR and a P frame
// each time: the same stream every time, and nothing left over from the last run.
TEST(H264EncLifecycle, HundredRestartsOfOneElement) {
  const auto& frames = clip("I420", kSmallW, kSmallH, 2);
  ASSERT_EQ(frames.size(), 2u);
  EncodePipeline p("backend=cpu");
  ASSERT_NE(p.pipeline, nullptr);
  std::vector<Bytes> first;
  for (int i = 0; i < 100; i++) {
    ASSERT_NE(gst_element_set_state(p.pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    p.feed(frames);
    std::vector<Bytes> aus;
    ASSERT_EQ(p.finish(aus), "") << "cycle " << i;
    ASSERT_EQ(aus.size(), 2u) << "cycle " << i;
    if (i == 0)
      first = aus;
    else
      ASSERT_EQ(aus, first) << "cycle " << i << " coded a different stream";
    ASSERT_EQ(gst_element_set_state(p.pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  }
}

// 16 pipelines encoding at once (each its own streaming thread and engine): every one codes
// the same stream, and that stream decodes.
TEST(H264EncLifecycle, SixteenInstancesAtOnce) {
  constexpr int kInstances = 16, kFrames = 3;
  const auto& frames = clip("I420", kSmallW, kSmallH, kFrames);
  ASSERT_EQ(int(frames.size()), kFrames);
  std::vector<std::unique_ptr<EncodePipeline>> pipes;
  for (int i = 0; i < kInstances; i++) {
    pipes.push_back(std::make_unique<EncodePipeline>("backend=cpu key-int-max=2"));
    ASSERT_NE(pipes.back()->pipeline, nullptr);
  }
  for (auto& p : pipes) ASSERT_NE(gst_element_set_state(p->pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  for (auto& p : pipes) p->feed(frames);
  std::vector<std::vector<Bytes>> out(kInstances);
  for (int i = 0; i < kInstances; i++) EXPECT_EQ(pipes[size_t(i)]->finish(out[size_t(i)]), "") << "instance " << i;
  pipes.clear();
  ASSERT_EQ(int(out[0].size()), kFrames);
  for (int i = 1; i < kInstances; i++) EXPECT_EQ(out[size_t(i)], out[0]) << "instance " << i << " differs";
  Bytes stream;
  for (const Bytes& au : out[0]) stream.insert(stream.end(), au.begin(), au.end());
  gvc::test::TempDir dir;
  ASSERT_TRUE(gvc::test::write_file(dir.path() + "/s.h264", stream));
  auto r = gvc::test::run_command({gvc::test::find_ffmpeg(), "-nostdin", "-v", "error", "-i", dir.path() + "/s.h264",
                                   "-f", "null", "-"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stderr_text, "");
}

// A backend failure mid-stream (the test hook of gst/backendsel.h fails every backend call
// after the first N, as a GPU that fails would): an ERROR message from the element that says
// what failed, GST_FLOW_ERROR for that frame and every later one, no crash, and a clean stop.
TEST(H264EncLifecycle, BackendFailureEndsInElementError) {
  const int n = 5;
  const auto& frames = clip("I420", kSmallW, kSmallH, n);
  ASSERT_EQ(int(frames.size()), n);
  struct {
    const char* props;
    const char* fail_after;
    int frames_out;  // coded before the failure; -1: any number below n
  } cases[] = {
      {"backend=cpu intra-pruning=kirsch", "0", 0},  // the IDR's intra pruning fails
      {"backend=cpu", "0", 1},                       // the IDR calls no kernel; frame 1's search fails
      {"backend=cpu ref-frames=2 intra-pruning=sobel", "3", -1},
  };
  for (const auto& c : cases) {
    g_setenv("GVC_TEST_BACKEND_FAIL_AFTER", c.fail_after, TRUE);
    GstHarness* h = new_harness(c.props);
    g_unsetenv("GVC_TEST_BACKEND_FAIL_AFTER");
    gst_harness_set_src_caps_str(h, raw_caps("I420", kSmallW, kSmallH).c_str());
    int ok = 0;
    GstFlowReturn ret = GST_FLOW_OK;
    for (; ok < n; ok++) {
      ret = gst_harness_push(h, gst_buffer_ref(frames[size_t(ok)]));
      if (ret != GST_FLOW_OK) break;
    }
    EXPECT_EQ(ret, GST_FLOW_ERROR) << c.props;
    if (c.frames_out >= 0) {
      EXPECT_EQ(ok, c.frames_out) << c.props;
    } else {
      EXPECT_LT(ok, n) << c.props;
    }
    EXPECT_EQ(gst_harness_buffers_received(h), guint(ok)) << c.props;
    std::string err = pop_error(h);
    EXPECT_NE(err.find("Encoding a frame failed"), std::string::npos) << c.props << ": " << err;
    EXPECT_NE(err.find("injected backend failure"), std::string::npos) << c.props << ": " << err;
    // The engine is not touched again: later frames fail at once, without a second error.
    if (ok + 1 < n) {
      EXPECT_EQ(gst_harness_push(h, gst_buffer_ref(frames[size_t(ok + 1)])), GST_FLOW_ERROR);
    }
    EXPECT_EQ(pop_error(h), "");
    teardown(h);
  }
  // In a pipeline: the bus gets the element's error and the pipeline stops.
  EncodePipeline p("backend=cpu");
  ASSERT_NE(p.pipeline, nullptr);
  g_setenv("GVC_TEST_BACKEND_FAIL_AFTER", "1", TRUE);  // read when the element starts
  gst_element_set_state(p.pipeline, GST_STATE_PLAYING);
  g_unsetenv("GVC_TEST_BACKEND_FAIL_AFTER");
  p.feed(frames);
  std::vector<Bytes> aus;
  std::string err = p.finish(aus);
  EXPECT_NE(err.find("injected backend failure"), std::string::npos) << err;
  EXPECT_LT(aus.size(), size_t(n));
}
