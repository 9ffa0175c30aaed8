// hevcdec_test.cpp: cudahevcdec in pipelines: frame MD5s equal avdec_h265's and FFmpeg's; damaged input, autoplugging, cycles
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <glib/gstdio.h>
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/elements/cuda_probe.h"

namespace {

using Bytes = std::vector<uint8_t>;

const char* clip_path() {
  const char* e = g_getenv("GVC_TEST_CLIP");
  return e ? e : "/usr/share/doc/opencv-doc/examples/data/vtest.avi";
}

std::string temp_dir() {
  static std::string dir;
  if (dir.empty()) {
    gchar* d = g_dir_make_tmp("gvc_hevcdec_XXXXXX", nullptr);
    dir = d;
    g_free(d);
  }
  return dir;
}

// Runs argv; returns stdout, or fails the test with stderr.
bool run_cmd(const std::vector<std::string>& args, std::string* out = nullptr) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  gchar *so = nullptr, *se = nullptr;
  gint status = 0;
  GError* err = nullptr;
  const gboolean ok = g_spawn_sync(nullptr, argv.data(), nullptr, G_SPAWN_SEARCH_PATH, nullptr,
                                   nullptr, &so, &se, &status, &err);
  const bool good = ok && g_spawn_check_wait_status(status, nullptr);
  if (!good) ADD_FAILURE() << args[0] << " failed: " << (err ? err->message : "") << (se ? se : "");
  if (out && so) *out = so;
  g_free(so);
  g_free(se);
  if (err) g_error_free(err);
  return good;
}

// Encodes `frames` frames of the clip with libx265; `ext` picks the container (hevc or mp4),
// `tag` the MP4 sample entry (hvc1, or hev1: parameter sets may also come in-band).
std::string encode(const std::string& name, int w, int h, int frames, const char* pix_fmt,
                   const std::string& x265_params, const char* ext = "hevc", const char* tag = "hvc1") {
  const std::string path = temp_dir() + "/" + name + "." + ext;
  if (g_file_test(path.c_str(), G_FILE_TEST_EXISTS)) return path;
  std::vector<std::string> args = {"ffmpeg", "-nostdin", "-y", "-loglevel", "error", "-i", clip_path(),
                                   "-frames:v", std::to_string(frames), "-vf",
                                   "scale=" + std::to_string(w) + ":" + std::to_string(h) +
                                       ",format=" + pix_fmt,
                                   "-c:v", "libx265", "-x265-params", "log-level=error:" + x265_params};
  if (std::string(ext) == "mp4") {
    args.push_back("-tag:v");
    args.push_back(tag);
  }
  args.push_back(path);
  return run_cmd(args) ? path : "";
}

Bytes read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

std::string write_file(const std::string& name, const Bytes& b) {
  const std::string p = temp_dir() + "/" + name;
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  return p;
}

// FFmpeg's MD5 of each decoded frame as planar yuv420p / yuv420p10le.
std::vector<std::string> ffmpeg_md5s(const std::string& path, bool ten_bit) {
  std::string out;
  run_cmd({"ffmpeg", "-nostdin", "-loglevel", "error", "-i", path, "-vsync", "passthrough", "-f",
           "framemd5", "-pix_fmt", ten_bit ? "yuv420p10le" : "yuv420p", "-"},
          &out);
  std::vector<std::string> md5;
  std::istringstream ss(out);
  std::string line;
  while (std::getline(ss, line))
    if (!line.empty() && line[0] != '#') md5.push_back(line.substr(line.rfind(' ') + 1));
  return md5;
}

// A frame as planar 4:2:0 bytes (8-bit, or 16-bit little-endian 10-bit values): NV12 and
// P010 are de-interleaved (and P010 shifted down), so any decoder's output compares.
std::string planar_md5(GstSample* sample) {
  GstVideoInfo info;
  gst_video_info_from_caps(&info, gst_sample_get_caps(sample));
  GstVideoFrame vf;
  if (!gst_video_frame_map(&vf, &info, gst_sample_get_buffer(sample), GST_MAP_READ)) return "unmapped";
  const GstVideoFormat fmt = GST_VIDEO_INFO_FORMAT(&info);
  const int w = GST_VIDEO_INFO_WIDTH(&info), h = GST_VIDEO_INFO_HEIGHT(&info);
  const int cw = (w + 1) / 2, ch = (h + 1) / 2;
  const bool semi = fmt == GST_VIDEO_FORMAT_NV12 || fmt == GST_VIDEO_FORMAT_P010_10LE;
  const bool wide = fmt == GST_VIDEO_FORMAT_P010_10LE || fmt == GST_VIDEO_FORMAT_I420_10LE;
  const int shift = fmt == GST_VIDEO_FORMAT_P010_10LE ? 6 : 0;
  Bytes raw;
  auto put = [&](const uint8_t* row, int x, int step) {
    if (!wide) {
      raw.push_back(row[x * step]);
    } else {
      const uint16_t v = uint16_t((row[2 * x * step] | (row[2 * x * step + 1] << 8)) >> shift);
      raw.push_back(uint8_t(v & 0xff));
      raw.push_back(uint8_t(v >> 8));
    }
  };
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      put(static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&vf, 0)) + y * GST_VIDEO_FRAME_PLANE_STRIDE(&vf, 0), x, 1);
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < ch; ++y) {
      const int plane = semi ? 1 : 1 + c;
      const uint8_t* row = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&vf, plane)) +
                           y * GST_VIDEO_FRAME_PLANE_STRIDE(&vf, plane);
      if (semi)
        row += (wide ? 2 : 1) * c;
      for (int x = 0; x < cw; ++x) put(row, x, semi ? 2 : 1);
    }
  gst_video_frame_unmap(&vf);
  gchar* md5 = g_compute_checksum_for_data(G_CHECKSUM_MD5, raw.data(), raw.size());
  std::string s = md5;
  g_free(md5);
  return s;
}

struct RunResult {
  std::vector<std::string> md5;
  int cuda_buffers = 0;  // samples whose memory is GstCudaMemory
  std::vector<bool> in_cuda;  // per sample, in order
  // buffers into the sink pad of the element named "probe", and of them in CUDA memory
  int probed = 0, probed_cuda = 0;
  std::vector<GstClockTime> pts;
  std::string format;
  int width = 0, height = 0;
  std::vector<std::string> errors, warnings;
  bool eos = false, timed_out = false;
  std::vector<std::string> decoders;  // factories of the Codec/Decoder/Video elements in it
};

void note_decoders(GstElement* pipeline, RunResult& r) {
  GstIterator* it = gst_bin_iterate_recurse(GST_BIN(pipeline));
  GValue v = G_VALUE_INIT;
  while (gst_iterator_next(it, &v) == GST_ITERATOR_OK) {
    GstElement* e = GST_ELEMENT(g_value_get_object(&v));
    GstElementFactory* f = gst_element_get_factory(e);
    if (f && !GST_IS_BIN(e) && gst_element_factory_list_is_type(f, GST_ELEMENT_FACTORY_TYPE_DECODER)) {
      const std::string name = GST_OBJECT_NAME(f);
      if (std::find(r.decoders.begin(), r.decoders.end(), name) == r.decoders.end())
        r.decoders.push_back(name);
    }
    g_value_reset(&v);
  }
  g_value_unset(&v);
  gst_iterator_free(it);
}

std::string message_text(GstMessage* m) {
  GError* err = nullptr;
  gchar* dbg = nullptr;
  if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR)
    gst_message_parse_error(m, &err, &dbg);
  else
    gst_message_parse_warning(m, &err, &dbg);
  std::string s = std::string(GST_OBJECT_NAME(GST_MESSAGE_SRC(m))) + ": " + err->message;
  g_error_free(err);
  g_free(dbg);
  return s;
}

bool in_cuda_memory(GstBuffer* b) {
  return gst_buffer_n_memory(b) > 0 && gst_memory_is_type(gst_buffer_peek_memory(b, 0), "gst.cuda.memory");
}

// A sample's MD5 as planar 4:2:0 (coded samples: of their bytes) and its memory type.
void note_sample(RunResult& r, GstSample* s) {
  GstBuffer* b = gst_sample_get_buffer(s);
  const GstStructure* st = gst_caps_get_structure(gst_sample_get_caps(s), 0);
  if (gst_structure_has_name(st, "video/x-raw")) {
    r.md5.push_back(planar_md5(s));
  } else {
    GstMapInfo map;
    gst_buffer_map(b, &map, GST_MAP_READ);
    gchar* md5 = g_compute_checksum_for_data(G_CHECKSUM_MD5, map.data, map.size);
    r.md5.push_back(md5);
    g_free(md5);
    gst_buffer_unmap(b, &map);
  }
  r.pts.push_back(GST_BUFFER_PTS(b));
  r.cuda_buffers += in_cuda_memory(b);
  r.in_cuda.push_back(in_cuda_memory(b));
}

GstPadProbeReturn count_probed(GstPad*, GstPadProbeInfo* info, gpointer data) {
  RunResult* r = static_cast<RunResult*>(data);
  GstBuffer* b = GST_PAD_PROBE_INFO_BUFFER(info);
  r->probed++;
  r->probed_cuda += in_cuda_memory(b);
  return GST_PAD_PROBE_OK;
}

// Runs `desc` (ending in "appsink name=sink") until EOS, an error or `timeout_s`.
// `aus`, if given, are pushed into "appsrc name=src" (byte-stream access units, 25 fps).
// `after_sample`, if given, is called with the pipeline and what was taken so far after each
// sample pulled before EOS.
RunResult run_pipeline(const std::string& desc, const std::vector<Bytes>* aus = nullptr,
                       int timeout_s = 60,
                       const std::function<void(GstElement*, const RunResult&)>& after_sample = nullptr) {
  RunResult r;
  GError* err = nullptr;
  GstElement* pipeline = gst_parse_launch(desc.c_str(), &err);
  if (!pipeline) {
    ADD_FAILURE() << "cannot build " << desc << ": " << (err ? err->message : "");
    if (err) g_error_free(err);
    return r;
  }
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  g_object_set(sink, "sync", FALSE, nullptr);
  if (GstElement* probe = gst_bin_get_by_name(GST_BIN(pipeline), "probe")) {
    GstPad* pad = gst_element_get_static_pad(probe, "sink");
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, count_probed, &r, nullptr);
    gst_object_unref(pad);
    gst_object_unref(probe);
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  if (src) {
    GstCaps* caps = gst_caps_from_string(
        "video/x-h265,stream-format=byte-stream,alignment=au,profile=main,framerate=25/1");
    g_object_set(src, "caps", caps, "format", GST_FORMAT_TIME, nullptr);
    gst_caps_unref(caps);
  }
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  if (src) {
    for (size_t i = 0; aus && i < aus->size(); ++i) {
      const Bytes& au = (*aus)[i];
      GstBuffer* b = gst_buffer_new_memdup(au.data(), au.size());
      GST_BUFFER_PTS(b) = GST_BUFFER_DTS(b) = i * GST_SECOND / 25;
      GST_BUFFER_DURATION(b) = GST_SECOND / 25;
      gst_app_src_push_buffer(GST_APP_SRC(src), b);
    }
    gst_app_src_end_of_stream(GST_APP_SRC(src));
  }
  GstBus* bus = gst_element_get_bus(pipeline);
  const gint64 deadline = g_get_monotonic_time() + gint64(timeout_s) * G_USEC_PER_SEC;
  bool done = false;
  while (!done) {
    if (g_get_monotonic_time() > deadline) {
      r.timed_out = true;
      break;
    }
    GstSample* s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_MSECOND);
    if (s) {
      GstVideoInfo info;
      if (gst_video_info_from_caps(&info, gst_sample_get_caps(s))) {
        r.format = gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&info));
        r.width = GST_VIDEO_INFO_WIDTH(&info);
        r.height = GST_VIDEO_INFO_HEIGHT(&info);
      }
      note_sample(r, s);
      gst_sample_unref(s);
      if (after_sample) after_sample(pipeline, r);
      continue;
    }
    while (GstMessage* m = gst_bus_pop_filtered(
               bus, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING))) {
      if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) {
        r.errors.push_back(message_text(m));
        done = true;
      } else if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_WARNING) {
        r.warnings.push_back(message_text(m));
      } else if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS) {
        // the samples queued before EOS are still to be pulled
        while (GstSample* s2 = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 0)) {
          note_sample(r, s2);
          gst_sample_unref(s2);
        }
        r.eos = true;
        done = true;
      }
      gst_message_unref(m);
    }
  }
  note_decoders(pipeline, r);
  gst_element_set_state(pipeline, GST_STATE_NULL);  // the probe's pad goes with it
  gst_object_unref(bus);
  if (src) gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return r;
}

// Annex B access units: a new one starts at a VPS/SPS/PPS/AUD/prefix SEI after a slice, or at
// a slice with first_slice_segment_in_pic_flag.
std::vector<Bytes> split_aus(const Bytes& s, std::vector<std::vector<int>>* types = nullptr) {
  std::vector<size_t> starts;
  for (size_t i = 0; i + 3 < s.size(); ++i)
    if (s[i] == 0 && s[i + 1] == 0 && s[i + 2] == 1) starts.push_back(i + 3);
  std::vector<Bytes> aus;
  std::vector<std::vector<int>> t;
  bool after_slice = true;
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t b = starts[k];
    size_t e = k + 1 < starts.size() ? starts[k + 1] - 3 : s.size();
    while (e > b && s[e - 1] == 0) --e;  // leading zero of a 4-byte start code
    const int type = (s[b] >> 1) & 0x3f;
    const bool slice = type < 32;
    const bool begins = slice ? (s[b + 2] & 0x80) && after_slice
                              : (after_slice && (type == 32 || type == 33 || type == 34 ||
                                                 type == 35 || type == 39));
    if (begins || aus.empty()) {
      aus.emplace_back();
      t.emplace_back();
    }
    if (slice) after_slice = true;
    else if (begins) after_slice = false;
    const uint8_t sc[4] = {0, 0, 0, 1};
    aus.back().insert(aus.back().end(), sc, sc + 4);
    aus.back().insert(aus.back().end(), s.begin() + long(b), s.begin() + long(e));
    t.back().push_back(type);
  }
  if (types) *types = t;
  return aus;
}

// The NAL units of one access unit whose types satisfy `keep`.
Bytes filter_nals(const Bytes& au, bool (*keep)(int)) {
  Bytes out;
  std::vector<size_t> starts;
  for (size_t i = 0; i + 3 < au.size(); ++i)
    if (au[i] == 0 && au[i + 1] == 0 && au[i + 2] == 1) starts.push_back(i + 3);
  for (size_t k = 0; k < starts.size(); ++k) {
    size_t e = k + 1 < starts.size() ? starts[k + 1] - 3 : au.size();
    while (e > starts[k] && au[e - 1] == 0) --e;
    if (!keep((au[starts[k]] >> 1) & 0x3f)) continue;
    const uint8_t sc[4] = {0, 0, 0, 1};
    out.insert(out.end(), sc, sc + 4);
    out.insert(out.end(), au.begin() + long(starts[k]), au.begin() + long(e));
  }
  return out;
}

bool is_param_set(int t) { return t >= 32 && t <= 34; }
bool is_not_param_set(int t) { return !is_param_set(t); }

const char* kDec = "cudahevcdec name=dec ! appsink name=sink";

std::string file_pipeline(const std::string& path, const std::string& decoder) {
  return "filesrc location=" + path + " ! h265parse ! " + decoder + " ! appsink name=sink";
}

void expect_same(const RunResult& ours, const std::vector<std::string>& ref, size_t n,
                 const char* what) {
  ASSERT_EQ(ours.md5.size(), n) << what;
  ASSERT_EQ(ref.size(), n) << what;
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(ours.md5[i], ref[i]) << what << ", frame " << i;
}

// Removes the streams made for the tests.
class TempDirCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    GDir* d = g_dir_open(temp_dir().c_str(), 0, nullptr);
    if (!d) return;
    while (const gchar* n = g_dir_read_name(d)) g_unlink((temp_dir() + "/" + n).c_str());
    g_dir_close(d);
    g_rmdir(temp_dir().c_str());
  }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new TempDirCleanup);

class HevcDec : public ::testing::Test {
 protected:
  void SetUp() override {
    gst_init(nullptr, nullptr);
    ASSERT_TRUE(g_file_test(clip_path(), G_FILE_TEST_EXISTS)) << "test clip missing";
    ASSERT_NE(gst_element_factory_find("cudahevcdec"), nullptr);
  }
};

// The tests of the GPU path, which also run on a GPU host without the test clip or FFmpeg.
class HevcDecGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    gst_init(nullptr, nullptr);
    ASSERT_NE(gst_element_factory_find("cudahevcdec"), nullptr);
  }
};

// Every decoded frame equals avdec_h265's and FFmpeg's.
void check_bit_exact(const std::string& path, bool ten_bit, int frames, int w, int h) {
  RunResult ours = run_pipeline(file_pipeline(path, "cudahevcdec"));
  RunResult av = run_pipeline(file_pipeline(path, "avdec_h265"));
  EXPECT_TRUE(ours.eos && !ours.timed_out) << (ours.errors.empty() ? "" : ours.errors[0]);
  EXPECT_TRUE(ours.errors.empty() && ours.warnings.empty())
      << (ours.errors.empty() ? ours.warnings[0] : ours.errors[0]);
  EXPECT_EQ(ours.format, ten_bit ? "P010_10LE" : "NV12");
  EXPECT_EQ(ours.width, w);
  EXPECT_EQ(ours.height, h);
  expect_same(ours, av.md5, size_t(frames), "avdec_h265");
  expect_same(ours, ffmpeg_md5s(path, ten_bit), size_t(frames), "ffmpeg");
}

TEST_F(HevcDec, Intra8BitByteStreamMatchesAvdecAndFfmpeg) {
  check_bit_exact(encode("intra8", 176, 144, 6, "yuv420p", "keyint=1"), false, 6, 176, 144);
}

TEST_F(HevcDec, Intra10BitMatchesAvdecAndFfmpeg) {
  check_bit_exact(encode("intra10", 176, 144, 4, "yuv420p10le", "keyint=1"), true, 4, 176, 144);
}

TEST_F(HevcDec, OddSizeIsCroppedToTheConformanceWindow) {
  check_bit_exact(encode("intra_crop", 170, 130, 4, "yuv420p", "keyint=1"), false, 4, 170, 130);
  check_bit_exact(encode("intra_crop10", 170, 130, 3, "yuv420p10le", "keyint=1"), true, 3, 170, 130);
}

TEST_F(HevcDec, Mp4Hvc1ThroughQtdemuxKeepsTimestamps) {
  const std::string mp4 = encode("intra8mp4", 176, 144, 6, "yuv420p", "keyint=1", "mp4");
  RunResult ours = run_pipeline("filesrc location=" + mp4 + " ! qtdemux ! cudahevcdec ! appsink name=sink");
  RunResult av = run_pipeline("filesrc location=" + mp4 + " ! qtdemux ! avdec_h265 ! appsink name=sink");
  EXPECT_TRUE(ours.eos);
  expect_same(ours, av.md5, 6, "avdec_h265 (hvc1)");
  EXPECT_EQ(ours.pts, av.pts);
  for (size_t i = 1; i < ours.pts.size(); ++i) EXPECT_GT(ours.pts[i], ours.pts[i - 1]);
}

// What qtdemux gives for an MP4: the caps' stream-format and the NAL unit types of the first
// sample (NAL length size from the hvcC).
struct Demuxed {
  std::string stream_format;
  std::vector<int> first_sample_nal_types;
};

Demuxed demux_first_sample(const std::string& mp4) {
  Demuxed d;
  GstElement* p = gst_parse_launch(("filesrc location=" + mp4 + " ! qtdemux ! appsink name=sink sync=false").c_str(),
                                   nullptr);
  if (!p) return d;
  GstElement* sink = gst_bin_get_by_name(GST_BIN(p), "sink");
  gst_element_set_state(p, GST_STATE_PLAYING);
  if (GstSample* s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND)) {
    const GstStructure* st = gst_caps_get_structure(gst_sample_get_caps(s), 0);
    if (const gchar* f = gst_structure_get_string(st, "stream-format")) d.stream_format = f;
    GstBuffer* hvcc = nullptr;
    gst_structure_get(st, "codec_data", GST_TYPE_BUFFER, &hvcc, nullptr);
    GstMapInfo m;
    size_t length_size = 4;
    if (hvcc && gst_buffer_map(hvcc, &m, GST_MAP_READ)) {
      if (m.size > 21) length_size = (m.data[21] & 3) + 1;  // lengthSizeMinusOne
      gst_buffer_unmap(hvcc, &m);
    }
    if (hvcc) gst_buffer_unref(hvcc);
    if (gst_buffer_map(gst_sample_get_buffer(s), &m, GST_MAP_READ)) {
      for (size_t o = 0; o + length_size < m.size;) {
        size_t len = 0;
        for (size_t i = 0; i < length_size; ++i) len = (len << 8) | m.data[o + i];
        d.first_sample_nal_types.push_back((m.data[o + length_size] >> 1) & 0x3f);
        o += length_size + len;
      }
      gst_buffer_unmap(gst_sample_get_buffer(s), &m);
    }
    gst_sample_unref(s);
  }
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(p);
  return d;
}

// MP4/hev1 with the parameter sets in the hvcC and again in-band before each IRAP picture (x265
// repeat-headers), P and B pictures, straight from qtdemux: bit-exact, PTS equal avdec_h265's.
TEST_F(HevcDec, Mp4Hev1WithInBandParameterSetsThroughQtdemux) {
  const std::string mp4 = encode("pb8hev1", 176, 144, 10, "yuv420p",
                                 "keyint=4:min-keyint=4:bframes=2:scenecut=0:repeat-headers=1", "mp4", "hev1");
  const Demuxed d = demux_first_sample(mp4);
  EXPECT_EQ(d.stream_format, "hev1");
  for (int type : {32, 33, 34})  // VPS, SPS, PPS in the first sample
    EXPECT_NE(std::find(d.first_sample_nal_types.begin(), d.first_sample_nal_types.end(), type),
              d.first_sample_nal_types.end())
        << "no in-band NAL unit of type " << type;
  RunResult ours = run_pipeline("filesrc location=" + mp4 + " ! qtdemux ! cudahevcdec ! appsink name=sink");
  RunResult av = run_pipeline("filesrc location=" + mp4 + " ! qtdemux ! avdec_h265 ! appsink name=sink");
  ASSERT_TRUE(ours.eos && !ours.timed_out) << (ours.errors.empty() ? "" : ours.errors[0]);
  EXPECT_TRUE(ours.warnings.empty()) << ours.warnings[0];
  expect_same(ours, av.md5, 10, "avdec_h265 (hev1)");
  expect_same(ours, ffmpeg_md5s(mp4, false), 10, "ffmpeg (hev1)");
  EXPECT_EQ(ours.pts, av.pts);
}

// parsebin puts qtdemux and h265parse (MP4/hev1) or h265parse alone (byte-stream) in front of
// the element: every frame equals FFmpeg's.
TEST_F(HevcDec, ParsebinAutoplugsTheParserInFront) {
  const std::string mp4 = encode("pb8hev1", 176, 144, 10, "yuv420p",
                                 "keyint=4:min-keyint=4:bframes=2:scenecut=0:repeat-headers=1", "mp4", "hev1");
  const std::string es = encode("pb8es", 176, 144, 14, "yuv420p",
                                "keyint=8:bframes=3:b-pyramid=1:ref=3:scenecut=0:repeat-headers=1");
  for (const auto& [path, frames] : {std::make_pair(mp4, 10), std::make_pair(es, 14)}) {
    RunResult r = run_pipeline("filesrc location=" + path + " ! parsebin ! cudahevcdec ! appsink name=sink");
    ASSERT_TRUE(r.eos && !r.timed_out) << path << ": " << (r.errors.empty() ? "" : r.errors[0]);
    EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
    expect_same(r, ffmpeg_md5s(path, false), size_t(frames), path.c_str());
  }
}

TEST_F(HevcDec, RankIsBelowAvdecAndDecodebinPicksItWhenRaised) {
  GstElementFactory* ours = gst_element_factory_find("cudahevcdec");
  GstElementFactory* av = gst_element_factory_find("avdec_h265");
  ASSERT_NE(av, nullptr);
  EXPECT_LT(gst_plugin_feature_get_rank(GST_PLUGIN_FEATURE(ours)),
            gst_plugin_feature_get_rank(GST_PLUGIN_FEATURE(av)));
  const std::string mp4 = encode("intra8mp4", 176, 144, 6, "yuv420p", "keyint=1", "mp4");
  const std::string desc = "filesrc location=" + mp4 + " ! decodebin ! appsink name=sink";
  RunResult by_default = run_pipeline(desc);
  EXPECT_EQ(by_default.decoders, std::vector<std::string>{"avdec_h265"});

  const guint rank = gst_plugin_feature_get_rank(GST_PLUGIN_FEATURE(ours));
  gst_plugin_feature_set_rank(GST_PLUGIN_FEATURE(ours), GST_RANK_PRIMARY + 100);
  RunResult raised = run_pipeline(desc);
  gst_plugin_feature_set_rank(GST_PLUGIN_FEATURE(ours), rank);
  EXPECT_EQ(raised.decoders, std::vector<std::string>{"cudahevcdec"});
  EXPECT_TRUE(raised.eos);
  expect_same(raised, by_default.md5, 6, "decodebin");
  gst_object_unref(ours);
  gst_object_unref(av);
}

// P and B pictures (B pyramid, 3 references): output order differs from decode order, and
// every frame and its timestamp equal avdec_h265's (and the frames FFmpeg's).
TEST_F(HevcDec, PyramidBFramesMatchInOutputOrderWithTimestamps) {
  for (const char* pix_fmt : {"yuv420p", "yuv420p10le"}) {
    const bool ten = std::string(pix_fmt) == "yuv420p10le";
    const std::string mp4 = encode(ten ? "pb10" : "pb8", 176, 144, 14, pix_fmt,
                                   "keyint=8:bframes=3:b-pyramid=1:ref=3:scenecut=0", "mp4");
    RunResult ours = run_pipeline("filesrc location=" + mp4 + " ! qtdemux ! cudahevcdec ! appsink name=sink");
    RunResult av = run_pipeline("filesrc location=" + mp4 + " ! qtdemux ! avdec_h265 ! appsink name=sink");
    ASSERT_TRUE(ours.eos && !ours.timed_out) << pix_fmt;
    EXPECT_TRUE(ours.warnings.empty()) << ours.warnings[0];
    expect_same(ours, av.md5, 14, ten ? "avdec_h265 (P/B, 10 bit)" : "avdec_h265 (P/B)");
    expect_same(ours, ffmpeg_md5s(mp4, ten), 14, "ffmpeg (P/B)");
    EXPECT_EQ(ours.pts, av.pts) << pix_fmt;
    for (size_t i = 1; i < ours.pts.size(); ++i) EXPECT_GT(ours.pts[i], ours.pts[i - 1]);
  }
}

// Pushes `aus` into a harness one by one (25 fps); `out_after[i]` is the number of frames
// that were out after access unit i was pushed; the PTS of every frame out is appended to
// `pts`. Returns the latency the element reports once it has seen the stream's SPS (after the
// first access unit), or with `last` after the last one (once the output memory, and so
// whether the GPU keeps the pictures, is settled). `element` is a gst-launch description.
GstClockTime push_counting(const std::vector<Bytes>& aus, std::vector<guint>& out_after,
                           std::vector<GstClockTime>& pts, const char* element = "cudahevcdec",
                           bool last = false) {
  GstHarness* h = gst_harness_new_parse(element);
  gst_harness_set_src_caps_str(h, "video/x-h265,stream-format=byte-stream,alignment=au,profile=main,framerate=25/1");
  GstClockTime latency = GST_CLOCK_TIME_NONE;
  for (size_t i = 0; i < aus.size(); ++i) {
    GstBuffer* b = gst_buffer_new_memdup(aus[i].data(), aus[i].size());
    GST_BUFFER_PTS(b) = GST_BUFFER_DTS(b) = i * GST_SECOND / 25;
    GST_BUFFER_DURATION(b) = GST_SECOND / 25;
    EXPECT_EQ(gst_harness_push(h, b), GST_FLOW_OK);
    out_after.push_back(gst_harness_buffers_received(h));
    if (i == (last ? aus.size() - 1 : 0)) latency = gst_harness_query_latency(h);
  }
  gst_harness_push_event(h, gst_event_new_eos());
  while (GstBuffer* b = gst_harness_try_pull(h)) {
    pts.push_back(GST_BUFFER_PTS(b));
    gst_buffer_unref(b);
  }
  gst_harness_teardown(h);
  return latency;
}

// Latency: a low-delay P stream (sps_max_num_reorder_pics = 0) gives each picture out as soon
// as its access unit is decoded: frame n is out before access unit n + 1 is pushed, and the
// element reports no latency.
TEST_F(HevcDec, LowDelayStreamOutputsEachPictureWithItsAccessUnit) {
  const std::string path = encode("p8", 176, 144, 8, "yuv420p",
                                  "keyint=4:min-keyint=4:bframes=0:scenecut=0:repeat-headers=1");
  std::vector<Bytes> aus = split_aus(read_file(path));
  ASSERT_EQ(aus.size(), 8u);
  std::vector<guint> out_after;
  std::vector<GstClockTime> pts;
  EXPECT_EQ(push_counting(aus, out_after, pts), 0u);
  for (size_t i = 0; i < aus.size(); ++i) EXPECT_EQ(out_after[i], i + 1) << "after access unit " << i;
  ASSERT_EQ(pts.size(), 8u);
  for (size_t i = 0; i < pts.size(); ++i) EXPECT_EQ(pts[i], i * GST_SECOND / 25);
}

// With reordering (B pyramid), the reported latency is a whole number of frames, and it is
// honest: after access unit n is pushed, at least n + 1 - latency/frame_duration frames are out.
TEST_F(HevcDec, ReorderingStreamStaysWithinTheReportedLatency) {
  const std::string path = encode("pb8es", 176, 144, 14, "yuv420p",
                                  "keyint=8:bframes=3:b-pyramid=1:ref=3:scenecut=0:repeat-headers=1");
  std::vector<Bytes> aus = split_aus(read_file(path));
  ASSERT_EQ(aus.size(), 14u);
  std::vector<guint> out_after;
  std::vector<GstClockTime> pts;
  const GstClockTime latency = push_counting(aus, out_after, pts);
  const GstClockTime frame = GST_SECOND / 25;
  ASSERT_GT(latency, 0u);
  ASSERT_EQ(latency % frame, 0u);
  const guint reorder = guint(latency / frame);
  EXPECT_LE(reorder, 3u);
  for (size_t i = 0; i < aus.size(); ++i)
    EXPECT_GE(out_after[i] + reorder, i + 1) << "after access unit " << i << " (" << reorder << " reordered)";
  EXPECT_EQ(pts.size(), 14u);  // (PTS pushed in decode order: only the count is checked)
}

// A stream that starts at a P picture: nothing comes out before the next IRAP picture, which
// is the first picture out; the P pictures after it follow.
TEST_F(HevcDec, StreamStartingAtNonIrapWaitsForTheNextIrap) {
  const std::string path =
      encode("p8", 176, 144, 8, "yuv420p", "keyint=4:min-keyint=4:bframes=0:scenecut=0:repeat-headers=1");
  std::vector<std::vector<int>> types;
  std::vector<Bytes> aus = split_aus(read_file(path), &types);
  ASSERT_EQ(aus.size(), 8u);
  const std::vector<std::string> full = ffmpeg_md5s(path, false);
  ASSERT_EQ(full.size(), 8u);
  // parameter sets of the first access unit, then the access units from the second (a P)
  std::vector<Bytes> cut = {filter_nals(aus[0], is_param_set)};
  cut[0].insert(cut[0].end(), aus[1].begin(), aus[1].end());
  cut.insert(cut.end(), aus.begin() + 2, aus.end());
  RunResult r = run_pipeline("appsrc name=src ! " + std::string(kDec), &cut);
  ASSERT_TRUE(r.eos && !r.timed_out) << (r.errors.empty() ? "" : r.errors[0]);
  ASSERT_EQ(r.md5.size(), 4u);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
  EXPECT_EQ(r.pts[0], 3 * GST_SECOND / 25);  // the IDR is the fourth buffer pushed
  for (size_t i = 0; i < r.md5.size(); ++i) EXPECT_EQ(r.md5[i], full[4 + i]) << i;
}

// Missing parameter sets: errors go through max-errors (warnings by default, an error at
// max-errors=0); once the parameter sets arrive, decoding resumes at that IRAP.
TEST_F(HevcDec, MissingParameterSetsAreReportedAndDecodingResumes) {
  const std::string path = encode("intra8rep", 176, 144, 4, "yuv420p", "keyint=1:repeat-headers=1");
  std::vector<Bytes> aus = split_aus(read_file(path));
  ASSERT_EQ(aus.size(), 4u);
  const std::vector<std::string> full = ffmpeg_md5s(path, false);
  std::vector<Bytes> damaged = aus;
  damaged[0] = filter_nals(aus[0], is_not_param_set);
  RunResult r = run_pipeline("appsrc name=src ! " + std::string(kDec), &damaged);
  ASSERT_TRUE(r.eos && !r.timed_out) << (r.errors.empty() ? "" : r.errors[0]);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("Could not decode the HEVC stream"), std::string::npos) << r.warnings[0];
  ASSERT_EQ(r.md5.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(r.md5[i], full[i + 1]);
  EXPECT_EQ(r.pts[0], GST_SECOND / 25);

  RunResult strict = run_pipeline("appsrc name=src ! cudahevcdec max-errors=0 ! appsink name=sink", &damaged);
  ASSERT_FALSE(strict.timed_out);
  ASSERT_GE(strict.errors.size(), 1u);
  EXPECT_NE(strict.errors[0].find("Could not decode the HEVC stream"), std::string::npos);
  EXPECT_TRUE(strict.md5.empty());

  // no parameter sets at all: no picture, a warning per access unit, and at EOS
  // GstVideoDecoder's "No valid frames decoded before end of stream" error
  std::vector<Bytes> none;
  for (const Bytes& au : aus) none.push_back(filter_nals(au, is_not_param_set));
  RunResult empty = run_pipeline("appsrc name=src ! " + std::string(kDec), &none);
  ASSERT_FALSE(empty.timed_out);
  EXPECT_TRUE(empty.md5.empty());
  EXPECT_EQ(empty.warnings.size(), 4u);
  ASSERT_EQ(empty.errors.size(), 1u);
  EXPECT_NE(empty.errors[0].find("No valid frames"), std::string::npos) << empty.errors[0];
}

// Seeded truncations and bit flips, through h265parse and straight into the element: every
// run ends (EOS or error) within the time limit, and never crashes.
TEST_F(HevcDec, TruncatedAndBitFlippedStreamsEndCleanly) {
  const Bytes good = read_file(encode("intra8", 176, 144, 6, "yuv420p", "keyint=1"));
  const Bytes good10 = read_file(encode("intra10", 176, 144, 4, "yuv420p10le", "keyint=1"));
  ASSERT_FALSE(good.empty());
  std::mt19937 rng(20261122);
  int pictures = 0, reported = 0;
  for (int iter = 0; iter < 16; ++iter) {
    Bytes s = (iter & 1) ? good10 : good;
    if (iter % 4 < 2) {
      s.resize(std::uniform_int_distribution<size_t>(1, s.size() - 1)(rng));
    } else {
      const int flips = std::uniform_int_distribution<int>(1, 12)(rng);
      for (int f = 0; f < flips; ++f) {
        const size_t pos = std::uniform_int_distribution<size_t>(0, s.size() - 1)(rng);
        s[pos] ^= uint8_t(1u << std::uniform_int_distribution<int>(0, 7)(rng));
      }
    }
    const std::string path = write_file("damaged" + std::to_string(iter) + ".hevc", s);
    RunResult parsed = run_pipeline(file_pipeline(path, "cudahevcdec"), nullptr, 30);
    std::vector<Bytes> aus = split_aus(s);
    RunResult direct = run_pipeline("appsrc name=src ! " + std::string(kDec), &aus, 30);
    for (const RunResult* r : {&parsed, &direct}) {
      EXPECT_FALSE(r->timed_out) << "iteration " << iter;
      EXPECT_TRUE(r->eos || !r->errors.empty()) << "iteration " << iter;
      EXPECT_LE(r->md5.size(), size_t((iter & 1) ? 4 : 6)) << "iteration " << iter;
      for (size_t i = 1; i < r->pts.size(); ++i) EXPECT_GT(r->pts[i], r->pts[i - 1]);
      pictures += int(r->md5.size());
      reported += int(r->warnings.size() + r->errors.size());
    }
  }
  // the damage must have been seen, and the intact parts still decoded
  EXPECT_GT(reported, 0);
  EXPECT_GT(pictures, 0);
}

TEST_F(HevcDecGpu, CudaBackendWithoutAGpuRefusesToStartWithAClearMessage) {
  if (cuda_device_present()) GTEST_SKIP() << "a CUDA device is present";
  const std::string path = encode("intra8", 176, 144, 6, "yuv420p", "keyint=1");
  RunResult r = run_pipeline(file_pipeline(path, "cudahevcdec backend=cuda"));
  ASSERT_GE(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("cudahevcdec cannot use CUDA (backend=cuda)"), std::string::npos) << r.errors[0];
  EXPECT_TRUE(r.md5.empty());
}

// active-backend while PAUSED for each backend choice: auto takes the GPU when there is one.
TEST_F(HevcDecGpu, ActiveBackendFollowsTheChoiceAndTheDevice) {
  const bool gpu = cuda_device_present();
  for (const char* choice : {"cpu", "auto", "cuda"}) {
    if (!gpu && std::string(choice) == "cuda") continue;  // refuses to start: the test above
    GstElement* dec = gst_element_factory_make("cudahevcdec", nullptr);
    gst_util_set_object_arg(G_OBJECT(dec), "backend", choice);
    gchar* active = nullptr;
    g_object_get(dec, "active-backend", &active, nullptr);
    EXPECT_STREQ(active, "none");
    g_free(active);
    ASSERT_EQ(gst_element_set_state(dec, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
    ASSERT_EQ(gst_element_set_state(dec, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
    g_object_get(dec, "active-backend", &active, nullptr);
    EXPECT_STREQ(active, std::string(choice) == "cpu" || !gpu ? "cpu" : "cuda") << choice;
    g_free(active);
    gst_element_set_state(dec, GST_STATE_NULL);
    g_object_get(dec, "active-backend", &active, nullptr);
    EXPECT_STREQ(active, "none");
    g_free(active);
    gst_object_unref(dec);
  }
}

// The .265 files of $GVC_HEVC_STREAMS (the conformance matrix, made on a GPU host by
// tools/gpu-host-test.sh --make-content), sorted; empty when the variable is not set.
std::vector<std::string> matrix_streams() {
  const char* dir = std::getenv("GVC_HEVC_STREAMS");
  std::vector<std::string> files;
  if (!dir || !*dir) return files;
  if (GDir* d = g_dir_open(dir, 0, nullptr)) {
    while (const gchar* n = g_dir_read_name(d))
      if (g_str_has_suffix(n, ".265")) files.push_back(std::string(dir) + "/" + n);
    g_dir_close(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Those of matrix_streams() with one of `names` (file names such as "b_pyramid.265").
std::vector<std::string> matrix_streams_named(std::initializer_list<const char*> names) {
  std::vector<std::string> files;
  for (const std::string& f : matrix_streams())
    for (const char* name : names)
      if (g_str_has_suffix(f.c_str(), (std::string("/") + name).c_str())) files.push_back(f);
  return files;
}

// On a GPU host (which has no x265): every stream of $GVC_HEVC_STREAMS decodes through the
// element with backend=cuda to the same frames as with backend=cpu (whose frames CI checks
// against FFmpeg), once into CUDA memory (every buffer GstCudaMemory, read back through
// GstCudaMemory's own download) and once into system memory.
TEST_F(HevcDecGpu, CudaBackendMatchesTheCpuOnTheMatrixStreams) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device or driver on this machine";
  const std::vector<std::string> files = matrix_streams();
  if (files.empty()) GTEST_SKIP() << "GVC_HEVC_STREAMS (a folder of .265 files) not set or empty";
  int frames = 0;
  for (const std::string& f : files) {
    const std::vector<Bytes> aus = split_aus(read_file(f));
    RunResult cpu = run_pipeline("appsrc name=src ! cudahevcdec backend=cpu ! appsink name=sink", &aus);
    RunResult gpu = run_pipeline(
        "appsrc name=src ! cudahevcdec backend=cuda ! video/x-raw(memory:CUDAMemory) ! appsink name=sink", &aus);
    RunResult sys = run_pipeline("appsrc name=src ! cudahevcdec backend=cuda ! video/x-raw ! appsink name=sink", &aus);
    for (const RunResult* r : {&gpu, &sys}) {
      EXPECT_TRUE(r->errors.empty()) << f << ": " << (r->errors.empty() ? "" : r->errors[0]);
      EXPECT_TRUE(r->eos) << f;
      EXPECT_EQ(r->md5, cpu.md5) << f << (r == &gpu ? " (CUDA memory)" : " (system memory)");
    }
    EXPECT_FALSE(cpu.md5.empty()) << f;
    EXPECT_EQ(gpu.cuda_buffers, int(gpu.md5.size())) << f;
    EXPECT_EQ(sys.cuda_buffers, 0) << f;
    EXPECT_EQ(cpu.cuda_buffers, 0) << f;
    frames += int(gpu.md5.size());
  }
  std::printf("cudahevcdec backend=cuda: %zu streams, %d frames equal to backend=cpu in CUDA memory and in "
              "system memory\n", files.size(), frames);
}

// Frame threads (frame-threads=4 here) while the GPU keeps the pictures (backend=cuda):
// the latency reported grows by frame-threads - 1 frames, and it is honest: after access unit
// n, at least n + 1 - latency/frame_duration frames are out; every frame comes out.
TEST_F(HevcDecGpu, FrameThreadsStayWithinTheReportedLatency) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device or driver on this machine";
  const std::vector<std::string> files = matrix_streams_named({"b_pyramid.265"});  // 9 pictures, 3 B
  if (files.empty()) GTEST_SKIP() << "GVC_HEVC_STREAMS (with b_pyramid.265) not set";
  std::vector<Bytes> aus = split_aus(read_file(files[0]));
  ASSERT_EQ(aus.size(), 9u);
  guint frames[2] = {0, 0};
  const char* elements[2] = {"cudahevcdec backend=cuda frame-threads=1", "cudahevcdec backend=cuda frame-threads=4"};
  for (int k = 0; k < 2; ++k) {
    std::vector<guint> out_after;
    std::vector<GstClockTime> pts;
    const GstClockTime latency = push_counting(aus, out_after, pts, elements[k], true);
    const GstClockTime frame = GST_SECOND / 25;
    ASSERT_EQ(latency % frame, 0u) << elements[k];
    frames[k] = guint(latency / frame);
    for (size_t i = 0; i < aus.size(); ++i)
      EXPECT_GE(out_after[i] + frames[k], i + 1) << elements[k] << ", after access unit " << i;
    EXPECT_EQ(pts.size(), aus.size()) << elements[k];
  }
  EXPECT_EQ(frames[1], frames[0] + 3) << "the 3 more pictures in flight";
}

// CUDA memory into nvcodec's cudadownload and into our cudamv and cudah264enc in the
// context the pipeline shares: the frames through cudadownload equal backend=cpu's, and every
// buffer reaching cudamv and cudah264enc (element "probe") is GstCudaMemory, which
// cudah264enc codes where it is, into the stream it codes from the same pictures in system
// memory (through cudadownload). Also with nvh265dec (NVDEC) in front of cudah264enc, where
// there is one (not below 144 lines).
TEST_F(HevcDecGpu, CudaMemoryFeedsCudadownloadCudamvAndCudah264enc) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device or driver on this machine";
  const std::vector<std::string> files =
      matrix_streams_named({"b_pyramid.265", "p_4refs.265", "intra_odd_size_crop.265", "b_1366x768.265"});
  if (files.empty()) GTEST_SKIP() << "GVC_HEVC_STREAMS (the conformance matrix) not set";
  const bool nvcodec = gst_element_factory_find("cudadownload") != nullptr;
  const bool nvdec = gst_element_factory_find("nvh265dec") != nullptr;
  for (const std::string& f : files) {
    const std::vector<Bytes> aus = split_aus(read_file(f));
    RunResult cpu = run_pipeline("appsrc name=src ! cudahevcdec backend=cpu ! appsink name=sink", &aus);
    ASSERT_FALSE(cpu.md5.empty()) << f;
    const size_t n = cpu.md5.size();
    if (nvcodec) {
      RunResult r = run_pipeline(
          "appsrc name=src ! cudahevcdec backend=cuda ! cudadownload name=probe ! video/x-raw ! appsink name=sink", &aus);
      EXPECT_TRUE(r.errors.empty()) << f << ": " << (r.errors.empty() ? "" : r.errors[0]);
      EXPECT_EQ(r.md5, cpu.md5) << f << " through cudadownload";
      EXPECT_EQ(r.probed_cuda, int(n)) << f;
      EXPECT_EQ(r.cuda_buffers, 0) << f;
    }
    RunResult mv = run_pipeline(
        "appsrc name=src ! cudahevcdec backend=cuda ! cudamv name=probe backend=cuda ! appsink name=sink", &aus);
    EXPECT_TRUE(mv.errors.empty()) << f << ": " << (mv.errors.empty() ? "" : mv.errors[0]);
    EXPECT_EQ(mv.md5, cpu.md5) << f << " through cudamv";
    EXPECT_EQ(mv.probed_cuda, int(n)) << f;
    RunResult enc = run_pipeline(
        "appsrc name=src ! cudahevcdec backend=cuda ! cudah264enc name=probe backend=cuda ! "
        "video/x-h264,stream-format=byte-stream ! appsink name=sink", &aus);
    EXPECT_TRUE(enc.errors.empty()) << f << ": " << (enc.errors.empty() ? "" : enc.errors[0]);
    EXPECT_TRUE(enc.eos) << f;
    EXPECT_EQ(enc.md5.size(), n) << f << ": one access unit per picture";
    EXPECT_EQ(enc.probed_cuda, int(n)) << f;
    if (nvcodec) {  // the encoder takes CUDA memory as it is: the stream it codes from host memory
      RunResult host = run_pipeline(
          "appsrc name=src ! cudahevcdec backend=cuda ! cudadownload ! video/x-raw ! cudah264enc backend=cuda ! "
          "video/x-h264,stream-format=byte-stream ! appsink name=sink", &aus);
      EXPECT_EQ(enc.md5, host.md5) << f << ": cudah264enc from CUDA memory and from system memory";
    }
    if (nvdec && cpu.height >= 144) {  // NVDEC's smallest HEVC picture is 144x144
      RunResult nv = run_pipeline(
          "appsrc name=src ! h265parse ! nvh265dec ! cudah264enc name=probe backend=cuda ! "
          "video/x-h264,stream-format=byte-stream ! appsink name=sink", &aus);
      EXPECT_TRUE(nv.errors.empty()) << f << ": " << (nv.errors.empty() ? "" : nv.errors[0]);
      EXPECT_EQ(nv.md5.size(), n) << f << ": nvh265dec ! cudah264enc";
      EXPECT_EQ(nv.probed_cuda, int(n)) << f;
    }
  }
}

// Whether the device's primary CUDA context is active in this process (the driver's own
// count, through libcuda loaded by GStreamer); -1 when that cannot be asked.
int primary_context_active() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return -1;
  using DeviceGet = int (*)(int*, int);
  using GetState = int (*)(int, unsigned*, int*);
  auto device_get = reinterpret_cast<DeviceGet>(dlsym(lib, "cuDeviceGet"));
  auto get_state = reinterpret_cast<GetState>(dlsym(lib, "cuDevicePrimaryCtxGetState"));
  int dev = 0, active = -1;
  unsigned flags = 0;
  if (!device_get || !get_state || device_get(&dev, 0) != 0 || get_state(dev, &flags, &active) != 0) active = -1;
  dlclose(lib);
  return active;
}

// Our elements work in the CUDA context the pipeline shares and make no CUDA runtime call
// outside it: such a call makes the runtime create the device's primary context, a second
// context in the process (on the H100 host it took the process from 586 MiB, nvh265dec's
// figure, to 1114 MiB).
TEST_F(HevcDecGpu, ElementsCreateNoSecondCudaContext) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device or driver on this machine";
  const std::vector<std::string> files = matrix_streams_named({"b_pyramid.265"});
  if (files.empty()) GTEST_SKIP() << "GVC_HEVC_STREAMS (the conformance matrix) not set";
  const std::string& path = files[0];
  const int before = primary_context_active();
  if (before < 0) GTEST_SKIP() << "cannot ask libcuda for the primary context's state";
  // (the tests before this one run the same elements: one of them made a runtime call
  // outside the shared context)
  ASSERT_EQ(before, 0) << "the primary context was active before this test: an earlier test made it";
  const std::vector<Bytes> aus = split_aus(read_file(path));
  for (const char* tail : {"cudahevcdec backend=cuda ! video/x-raw(memory:CUDAMemory)",
                           "cudahevcdec backend=cuda ! video/x-raw",
                           "cudahevcdec backend=cuda ! cudamv backend=cuda",
                           "cudahevcdec backend=cuda ! cudah264enc backend=cuda ! video/x-h264,stream-format=byte-stream"}) {
    RunResult r = run_pipeline(std::string("appsrc name=src ! ") + tail + " ! appsink name=sink", &aus);
    EXPECT_TRUE(r.eos && r.errors.empty()) << tail << ": " << (r.errors.empty() ? "" : r.errors[0]);
    EXPECT_FALSE(r.md5.empty()) << tail;
    EXPECT_EQ(primary_context_active(), 0) << "after " << tail;
  }
}

// cudahevcdec's log lines at INFO and above, while a test listens.
std::mutex g_log_mutex;
std::vector<std::string> g_log;
void collect_log(GstDebugCategory* cat, GstDebugLevel, const gchar*, const gchar*, gint, GObject*,
                 GstDebugMessage* msg, gpointer) {
  if (std::string(gst_debug_category_get_name(cat)) != "cudahevcdec") return;
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_log.push_back(gst_debug_message_get(msg));
}

// The DPB on the GPU lives in a GstCudaBufferPool of the shared context (the element's log
// says so, and no fallback to cudaMalloc is logged), with frames still equal to the CPU's.
TEST_F(HevcDecGpu, DpbPicturesComeFromAGstCudaBufferPool) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device or driver on this machine";
  const std::vector<std::string> files = matrix_streams_named({"b_pyramid.265", "b_main10_1366x768.265"});
  if (files.empty()) GTEST_SKIP() << "GVC_HEVC_STREAMS (the conformance matrix) not set";
  gst_debug_set_threshold_for_name("cudahevcdec", GST_LEVEL_INFO);
  gst_debug_add_log_function(collect_log, nullptr, nullptr);
  for (const std::string& f : files) {
    const std::vector<Bytes> aus = split_aus(read_file(f));
    {
      std::lock_guard<std::mutex> lock(g_log_mutex);
      g_log.clear();
    }
    RunResult cpu = run_pipeline("appsrc name=src ! cudahevcdec backend=cpu ! appsink name=sink", &aus);
    RunResult gpu = run_pipeline(
        "appsrc name=src ! cudahevcdec backend=cuda ! video/x-raw(memory:CUDAMemory) ! appsink name=sink", &aus);
    EXPECT_TRUE(gpu.errors.empty()) << f << ": " << (gpu.errors.empty() ? "" : gpu.errors[0]);
    EXPECT_EQ(gpu.md5, cpu.md5) << f;
    std::lock_guard<std::mutex> lock(g_log_mutex);
    bool pool = false, fallback = false;
    for (const std::string& line : g_log) {
      pool |= line.find("DPB pictures from a GstCudaBufferPool") != std::string::npos;
      fallback |= line.find("DPB pictures from cudaMalloc instead") != std::string::npos;
    }
    EXPECT_TRUE(pool) << f;
    EXPECT_FALSE(fallback) << f;
  }
  gst_debug_remove_log_function(collect_log);
  gst_debug_set_threshold_for_name("cudahevcdec", GST_LEVEL_NONE);
}

// Downstream switches from CUDA memory to system memory and back mid-stream (a capsfilter's
// caps changed while playing, after the second frame, and back once a frame came in system
// memory; appsink holds one buffer, so the decoder is at most a few pictures ahead): the
// decoder renegotiates each time, pictures decoded in one mode are output in the other, and
// every frame still equals backend=cpu's. (Switching back after a fixed count of frames made
// this flaky: the decoder could be far enough ahead to meet both switches at once.)
TEST_F(HevcDecGpu, CudaAndSystemMemoryRenegotiatedMidStream) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device or driver on this machine";
  const std::vector<std::string> files = matrix_streams_named({"b_pyramid.265"});
  if (files.empty()) GTEST_SKIP() << "GVC_HEVC_STREAMS (the conformance matrix) not set";
  const std::vector<Bytes> aus = split_aus(read_file(files[0]));
  RunResult cpu = run_pipeline("appsrc name=src ! cudahevcdec backend=cpu ! appsink name=sink", &aus);
  ASSERT_GE(cpu.md5.size(), 8u);
  auto set_caps = [](GstElement* pipeline, const char* caps) {
    GstElement* cf = gst_bin_get_by_name(GST_BIN(pipeline), "cf");
    GstCaps* c = gst_caps_from_string(caps);
    g_object_set(cf, "caps", c, nullptr);
    gst_caps_unref(c);
    gst_object_unref(cf);
  };
  RunResult gpu = run_pipeline(
      "appsrc name=src ! cudahevcdec backend=cuda ! capsfilter name=cf caps=video/x-raw(memory:CUDAMemory) ! "
      "appsink name=sink max-buffers=1",
      &aus, 60, [&, back = false](GstElement* pipeline, const RunResult& r) mutable {
        if (r.md5.size() == 2) set_caps(pipeline, "video/x-raw");
        if (!back && int(r.md5.size()) > r.cuda_buffers) {
          set_caps(pipeline, "video/x-raw(memory:CUDAMemory)");
          back = true;
        }
      });
  EXPECT_TRUE(gpu.eos && gpu.errors.empty()) << (gpu.errors.empty() ? "" : gpu.errors[0]);
  EXPECT_EQ(gpu.md5, cpu.md5);
  EXPECT_GT(gpu.cuda_buffers, 0);
  EXPECT_LT(gpu.cuda_buffers, int(gpu.md5.size())) << "no picture left in system memory";
  // back in CUDA memory within the few pictures the decoder can be ahead, if that many remain
  size_t first_sys = 0;
  while (first_sys < gpu.in_cuda.size() && gpu.in_cuda[first_sys]) first_sys++;
  if (first_sys + 4 < gpu.in_cuda.size()) {
    bool back = false;
    for (size_t i = first_sys + 1; i < gpu.in_cuda.size(); i++) back |= gpu.in_cuda[i];
    EXPECT_TRUE(back) << "no CUDA memory after the switch back (first system-memory picture " << first_sys << " of "
                      << gpu.in_cuda.size() << ")";
  }
}

// Downstream that takes only CUDA memory while the pictures are decoded on the CPU: a
// negotiation error (naming the reason where the plugin is built with CUDA), no frame, no hang.
TEST_F(HevcDec, CudaMemoryOnlyDownstreamOnTheCpuBackendFailsToNegotiate) {
  const std::string path = encode("intra8", 176, 144, 6, "yuv420p", "keyint=1");
  RunResult r = run_pipeline(file_pipeline(path, "cudahevcdec backend=cpu ! video/x-raw(memory:CUDAMemory)"));
  EXPECT_FALSE(r.timed_out);
  ASSERT_GE(r.errors.size(), 1u);
  EXPECT_TRUE(r.md5.empty());
#if GVC_TEST_CUDA
  bool named = false;
  for (const std::string& e : r.errors) named |= e.find("Downstream takes only CUDA memory") != std::string::npos;
  EXPECT_TRUE(named) << r.errors[0];
#endif
}

// Flushing seeks: after each seek to the start, every frame comes out again, bit-exact.
TEST_F(HevcDec, FlushingSeekRestartsCleanly) {
  const std::string mp4 = encode("intra8mp4", 176, 144, 6, "yuv420p", "keyint=1", "mp4");
  const std::vector<std::string> ref = ffmpeg_md5s(mp4, false);
  GstElement* p = gst_parse_launch(("filesrc location=" + mp4 +
                                    " ! qtdemux ! h265parse ! cudahevcdec ! appsink name=sink sync=false")
                                       .c_str(),
                                   nullptr);
  GstElement* sink = gst_bin_get_by_name(GST_BIN(p), "sink");
  gst_element_set_state(p, GST_STATE_PAUSED);
  ASSERT_EQ(gst_element_get_state(p, nullptr, nullptr, 10 * GST_SECOND), GST_STATE_CHANGE_SUCCESS);
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(gst_element_seek_simple(p, GST_FORMAT_TIME,
                                        GstSeekFlags(GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_KEY_UNIT), 0));
    gst_element_set_state(p, GST_STATE_PLAYING);
    std::vector<std::string> got;
    while (GstSample* s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND)) {
      got.push_back(planar_md5(s));
      gst_sample_unref(s);
      if (gst_app_sink_is_eos(GST_APP_SINK(sink))) break;
    }
    EXPECT_EQ(got, ref) << "round " << round;
    gst_element_set_state(p, GST_STATE_PAUSED);
    gst_element_get_state(p, nullptr, nullptr, 10 * GST_SECOND);
  }
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(p);
}

TEST_F(HevcDec, HundredNullPlayingNullCycles) {
  const std::string path = encode("intra8", 176, 144, 6, "yuv420p", "keyint=1");
  for (int i = 0; i < 100; ++i) {
    GstElement* p = gst_parse_launch(
        ("filesrc location=" + path + " ! h265parse ! cudahevcdec ! fakesink").c_str(), nullptr);
    ASSERT_NE(p, nullptr);
    ASSERT_NE(gst_element_set_state(p, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    if (i % 10 == 0) {  // some cycles run to the end, the others stop wherever they are
      GstBus* bus = gst_element_get_bus(p);
      GstMessage* m = gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND,
                                                 GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
      ASSERT_NE(m, nullptr) << "cycle " << i;
      EXPECT_EQ(GST_MESSAGE_TYPE(m), GST_MESSAGE_EOS);
      gst_message_unref(m);
      gst_object_unref(bus);
    }
    ASSERT_EQ(gst_element_set_state(p, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    gst_object_unref(p);
  }
}

}  // namespace
