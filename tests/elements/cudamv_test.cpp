// cudamv_test.cpp: GstHarness tests of the cudamv element and the GvcMvMeta library
#include <gst/app/gstappsink.h>
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/mvmeta/gvcmvmeta.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#if GVC_TEST_CUDA
#include <gst/cuda/cuda-gst.h>
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#endif

#include "tests/elements/cuda_probe.h"

namespace {

constexpr int kW = 176, kH = 144;  // QCIF: 11 x 9 macroblocks
constexpr const char* kImage = "/usr/share/backgrounds/mate/abstract/Elephants_5640x3172.jpg";

class GstEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { gst_init(nullptr, nullptr); }
};
::testing::Environment* const gst_env =
    ::testing::AddGlobalTestEnvironment(new GstEnvironment);

struct Gray {
  std::vector<uint8_t> px;
  int w = 0, h = 0;
  uint8_t at(int x, int y) const { return px[size_t(y) * w + x]; }
};

// The painting, decoded once to GRAY8 (empty if it is not installed).
const Gray& painting() {
  static Gray g;
  static bool tried = false;
  if (tried) return g;
  tried = true;
  if (!g_file_test(kImage, G_FILE_TEST_EXISTS)) return g;
  std::string desc = std::string("filesrc location=") + kImage +
                     " ! jpegdec ! videoconvert ! video/x-raw,format=GRAY8 ! appsink name=s";
  GstElement* p = gst_parse_launch(desc.c_str(), nullptr);
  if (!p) return g;
  GstElement* s = gst_bin_get_by_name(GST_BIN(p), "s");
  gst_element_set_state(p, GST_STATE_PLAYING);
  GstSample* sample = gst_app_sink_pull_sample(GST_APP_SINK(s));
  if (sample) {
    GstVideoInfo info;
    gst_video_info_from_caps(&info, gst_sample_get_caps(sample));
    GstVideoFrame f;
    if (gst_video_frame_map(&f, &info, gst_sample_get_buffer(sample), GST_MAP_READ)) {
      g.w = GST_VIDEO_FRAME_WIDTH(&f);
      g.h = GST_VIDEO_FRAME_HEIGHT(&f);
      g.px.resize(size_t(g.w) * g.h);
      for (int y = 0; y < g.h; y++)
        memcpy(&g.px[size_t(y) * g.w],
               (uint8_t*)GST_VIDEO_FRAME_PLANE_DATA(&f, 0) + y * GST_VIDEO_FRAME_PLANE_STRIDE(&f, 0),
               g.w);
      gst_video_frame_unmap(&f);
    }
    gst_sample_unref(sample);
  }
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(s);
  gst_object_unref(p);
  return g;
}

std::string caps_str(const char* format, int w = kW, int h = kH, bool cuda = false) {
  return std::string("video/x-raw") + (cuda ? "(memory:CUDAMemory)" : "") +
         ",format=" + format + ",width=" + std::to_string(w) + ",height=" +
         std::to_string(h) + ",framerate=30/1";
}

// Texture where the painting is missing (GPU hosts): a hash of the position, so every
// block matches only at its true displacement.
uint8_t noise(int x, int y) {
  uint32_t h = uint32_t(x) * 73856093u ^ uint32_t(y) * 19349663u;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  return uint8_t(h >> 24);
}

// A frame whose luma is the painting's window at (ox, oy) (or noise if the painting is
// missing) and whose chroma is grey. Frame n+1 made at (ox + dx, oy + dy) shows the content
// moved by (-dx, -dy), so its true vector (current block -> reference) is (dx, dy).
GstBuffer* make_frame(const char* format, int ox, int oy, int n, int w = kW, int h = kH) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, gst_video_format_from_string(format), w, h);
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, info.size, nullptr);
  GstVideoFrame f;
  gst_video_frame_map(&f, &info, buf, GST_MAP_WRITE);
  const Gray& g = painting();
  auto* y0 = (uint8_t*)GST_VIDEO_FRAME_PLANE_DATA(&f, 0);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      y0[y * GST_VIDEO_FRAME_PLANE_STRIDE(&f, 0) + x] =
          g.w ? g.at(ox + x, oy + y) : noise(ox + x, oy + y);
  for (guint p = 1; p < GST_VIDEO_FRAME_N_PLANES(&f); p++) {
    auto* d = (uint8_t*)GST_VIDEO_FRAME_PLANE_DATA(&f, p);
    for (int y = 0; y < GST_VIDEO_FRAME_COMP_HEIGHT(&f, p); y++)
      memset(d + y * GST_VIDEO_FRAME_PLANE_STRIDE(&f, p), 128,
             GST_VIDEO_FRAME_COMP_WIDTH(&f, p) * GST_VIDEO_FRAME_COMP_PSTRIDE(&f, p));
  }
  gst_video_frame_unmap(&f);
  GST_BUFFER_PTS(buf) = gst_util_uint64_scale(n, GST_SECOND, 30);
  GST_BUFFER_DURATION(buf) = GST_SECOND / 30;
  return buf;
}

std::vector<uint8_t> bytes_of(GstBuffer* buf) {
  GstMapInfo m;
  gst_buffer_map(buf, &m, GST_MAP_READ);
  std::vector<uint8_t> v(m.data, m.data + m.size);
  gst_buffer_unmap(buf, &m);
  return v;
}

std::vector<GvcMvCost> vectors_of(GvcMvMeta* meta) {
  std::vector<GvcMvCost> v;
  GvcMvMap map;
  if (!gvc_mv_meta_map(meta, &map)) return v;
  for (guint r = 0; r < map.rows; r++)
    for (guint c = 0; c < map.cols; c++) v.push_back(*gvc_mv_map_at(&map, c, r));
  gvc_mv_meta_unmap(&map);
  return v;
}

// The painting's window origin for the tests: a textured area near its centre.
constexpr int kOx = 2600, kOy = 1400;

GstHarness* new_harness(const char* props, const char* format = "I420") {
  std::string desc = std::string("cudamv ") + props;
  GstHarness* h = gst_harness_new_parse(desc.c_str());
  gst_harness_set_src_caps_str(h, caps_str(format).c_str());
  return h;
}

GstElement* cudamv_of(GstHarness* h) {
  return gst_harness_find_element(h, "cudamv");
}

// Pushes frame 0 at the origin and frame 1 shifted by (dx, dy); returns frame 1 out.
GstBuffer* push_pair(GstHarness* h, int dx, int dy, const char* format = "I420") {
  GstBuffer* out0 = gst_harness_push_and_pull(h, make_frame(format, kOx, kOy, 0));
  EXPECT_NE(out0, nullptr);
  if (out0) {
    EXPECT_EQ(gvc_mv_meta_get(out0), nullptr) << "frame 0 has no reference";
    gst_buffer_unref(out0);
  }
  return gst_harness_push_and_pull(h, make_frame(format, kOx + dx, kOy + dy, 1));
}

// The first error message posted on `bus`, or "".
std::string pop_error(GstBus* bus) {
  std::string text;
  if (GstMessage* msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
    GError* err = nullptr;
    gst_message_parse_error(msg, &err, nullptr);
    text = err->message;
    g_error_free(err);
    gst_message_unref(msg);
  }
  return text;
}

}  // namespace

TEST(CudaMv, NegotiatesSystemMemoryCaps) {
  for (const char* format : {"I420", "NV12"}) {
    GstHarness* h = new_harness("backend=cpu", format);
    GstBuffer* out = push_pair(h, 2, 1, format);
    ASSERT_NE(out, nullptr);
    EXPECT_NE(gvc_mv_meta_get(out), nullptr);
    EXPECT_FALSE(gvc_mv_meta_is_on_gpu(gvc_mv_meta_get(out)));
    GstCaps* caps = gst_pad_get_current_caps(h->sinkpad);
    ASSERT_NE(caps, nullptr);
    GstCaps* want = gst_caps_from_string(caps_str(format).c_str());
    EXPECT_TRUE(gst_caps_is_equal(caps, want)) << gst_caps_to_string(caps);
    gst_caps_unref(want);
    gst_caps_unref(caps);
    gchar* active = nullptr;
    g_object_get(cudamv_of(h), "active-backend", &active, nullptr);
    EXPECT_STREQ(active, "cpu");
    g_free(active);
    gst_object_unref(cudamv_of(h));  // find_element took a ref
    gst_buffer_unref(out);
    gst_harness_teardown(h);
  }
}

TEST(CudaMv, AutoFallsBackToTheCpuWithoutADevice) {
  if (cuda_device_present()) GTEST_SKIP() << "a CUDA device is present: auto picks it";
  GstHarness* h = new_harness("backend=auto");
  GstElement* mv = cudamv_of(h);
  GstBuffer* out = push_pair(h, 2, 1);
  ASSERT_NE(out, nullptr);
  EXPECT_NE(gvc_mv_meta_get(out), nullptr);
  EXPECT_FALSE(gvc_mv_meta_is_on_gpu(gvc_mv_meta_get(out)));
  gchar* active = nullptr;
  g_object_get(mv, "active-backend", &active, nullptr);
  EXPECT_STREQ(active, "cpu");
  g_free(active);
  gst_object_unref(mv);  // find_element took a ref
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(CudaMv, NegotiatesCudaMemoryCaps) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device or driver on this machine";
#if GVC_TEST_CUDA
  GstCudaContext* ctx = gst_cuda_context_new(0);
  ASSERT_NE(ctx, nullptr);
  for (const char* format : {"NV12", "I420"}) {
    SCOPED_TRACE(format);
    GstElement* mv = gst_element_factory_make("cudamv", nullptr);
    g_object_set(mv, "backend", 1 /* cuda */, nullptr);
    GstContext* context = gst_context_new_cuda_context(ctx);
    gst_element_set_context(mv, context);
    gst_context_unref(context);
    GstHarness* h = gst_harness_new_with_element(mv, "sink", "src");
    gst_object_unref(mv);
    std::string caps = caps_str(format, kW, kH, true);
    gst_harness_set_src_caps_str(h, caps.c_str());

    GstCaps* c = gst_caps_from_string(caps.c_str());
    GstVideoInfo info;
    gst_video_info_from_caps(&info, c);
    GstBufferPool* pool = gst_cuda_buffer_pool_new(ctx);
    GstStructure* config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(config, c, info.size, 0, 0);
    ASSERT_TRUE(gst_buffer_pool_set_config(pool, config));
    ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
    gst_caps_unref(c);

    std::vector<GvcMvCost> fields[2];
    for (int n = 0; n < 2; n++) {
      GstBuffer* sys = make_frame(format, kOx + 3 * n, kOy - 2 * n, n);
      GstBuffer* buf = nullptr;
      ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buf, nullptr), GST_FLOW_OK);
      GstVideoFrame src, dst;
      gst_video_frame_map(&src, &info, sys, GST_MAP_READ);
      gst_video_frame_map(&dst, &info, buf, GST_MAP_WRITE);
      gst_video_frame_copy(&dst, &src);
      gst_video_frame_unmap(&dst);
      gst_video_frame_unmap(&src);
      GST_BUFFER_PTS(buf) = GST_BUFFER_PTS(sys);
      gst_buffer_unref(sys);
      ASSERT_TRUE(gst_is_cuda_memory(gst_buffer_peek_memory(buf, 0)));
      GstMemory* in_mem = gst_memory_ref(gst_buffer_peek_memory(buf, 0));

      GstBuffer* out = gst_harness_push_and_pull(h, buf);
      ASSERT_NE(out, nullptr);
      EXPECT_TRUE(gst_is_cuda_memory(gst_buffer_peek_memory(out, 0)));
      EXPECT_EQ(gst_buffer_n_memory(out), 1u);
      EXPECT_EQ(gst_buffer_peek_memory(out, 0), in_mem) << "the frame is passed on, not copied";
      gst_memory_unref(in_mem);
      GvcMvMeta* meta = gvc_mv_meta_get(out);
      if (n == 0) {
        EXPECT_EQ(meta, nullptr);
      } else {
        ASSERT_NE(meta, nullptr);
        EXPECT_TRUE(gvc_mv_meta_is_on_gpu(meta)) << "vectors computed on the GPU stay there";
        fields[n] = vectors_of(meta);
        ASSERT_EQ(fields[n].size(), size_t(11 * 9));
        EXPECT_EQ(fields[n][5 * 11 + 5].mvx, 12);
        EXPECT_EQ(fields[n][5 * 11 + 5].mvy, -8);
      }
      gst_buffer_unref(out);
    }
    GstCaps* current = gst_pad_get_current_caps(h->sinkpad);
    ASSERT_NE(current, nullptr);
    GstCaps* want = gst_caps_from_string(caps.c_str());
    EXPECT_TRUE(gst_caps_is_equal(current, want)) << gst_caps_to_string(current);
    gst_caps_unref(want);
    gst_caps_unref(current);
    gchar* active = nullptr;
    g_object_get(h->element, "active-backend", &active, nullptr);
    EXPECT_STREQ(active, "cuda");
    g_free(active);
    gst_harness_teardown(h);
    gst_buffer_pool_set_active(pool, FALSE);
    gst_object_unref(pool);
  }
  gst_object_unref(ctx);
#endif
}

TEST(CudaMv, LeavesPixelsUntouchedUnlessDrawing) {
  for (bool draw : {false, true}) {
    GstHarness* h = new_harness(draw ? "backend=cpu draw=true" : "backend=cpu");
    GstBuffer* in0 = make_frame("I420", kOx, kOy, 0);
    GstBuffer* in1 = make_frame("I420", kOx + 5, kOy + 3, 1);
    std::vector<uint8_t> want0 = bytes_of(in0), want1 = bytes_of(in1);
    GstBuffer* out0 = gst_harness_push_and_pull(h, in0);
    GstBuffer* out1 = gst_harness_push_and_pull(h, in1);
    ASSERT_NE(out0, nullptr);
    ASSERT_NE(out1, nullptr);
    EXPECT_EQ(bytes_of(out0), want0) << "frame 0 has no vectors, so nothing is drawn";
    std::vector<uint8_t> got1 = bytes_of(out1);
    if (draw) {
      size_t changed = 0;
      for (size_t i = 0; i < got1.size(); i++) changed += got1[i] != want1[i];
      EXPECT_GT(changed, 0u) << "draw=true draws arrows";
      // Only luma is drawn on.
      EXPECT_TRUE(std::equal(got1.begin() + kW * kH, got1.end(), want1.begin() + kW * kH));
    } else {
      EXPECT_EQ(got1, want1);
    }
    gst_buffer_unref(out0);
    gst_buffer_unref(out1);
    gst_harness_teardown(h);
  }
}

struct BlockCase {
  const char* nick;
  guint bw, bh, cols, rows;
};

class CudaMvBlocks : public ::testing::TestWithParam<BlockCase> {};

TEST_P(CudaMvBlocks, MetaHasTheRightDimensions) {
  const BlockCase& c = GetParam();
  std::string props = std::string("backend=cpu block-size=") + c.nick;
  GstHarness* h = new_harness(props.c_str());
  GstBuffer* out = push_pair(h, -3, 2);
  ASSERT_NE(out, nullptr);
  GvcMvMeta* meta = gvc_mv_meta_get(out);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->block_width, c.bw);
  EXPECT_EQ(meta->block_height, c.bh);
  EXPECT_EQ(meta->cols, c.cols);
  EXPECT_EQ(meta->rows, c.rows);
  EXPECT_EQ(meta->ref_pts, GstClockTime(0)) << "the reference is frame 0";
  EXPECT_EQ(meta->direction, GVC_MV_DIRECTION_PAST);
  EXPECT_EQ(vectors_of(meta).size(), size_t(c.cols) * c.rows);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

INSTANTIATE_TEST_SUITE_P(AllSizes, CudaMvBlocks,
                         ::testing::Values(BlockCase{"16x16", 16, 16, 11, 9},
                                           BlockCase{"8x8", 8, 8, 22, 18},
                                           BlockCase{"4x4", 4, 4, 44, 36},
                                           BlockCase{"auto", 4, 4, 44, 36}),
                         [](const auto& info) {
                           std::string n = info.param.nick;
                           return n == "auto" ? n : "b" + n;
                         });

TEST(CudaMv, FindsTheKnownShiftOfARealImage) {
  if (painting().w == 0) GTEST_SKIP() << kImage << " is not installed (mate-backgrounds)";
  struct Shift { int dx, dy; const char* subpel; } shifts[] = {
      {3, -2, "quarter"}, {-7, 5, "none"}, {12, 9, "half"}};
  for (const Shift& s : shifts) {
    std::string props = std::string("backend=cpu search-range=16 subpel=") + s.subpel;
    GstHarness* h = new_harness(props.c_str());
    GstBuffer* out = push_pair(h, s.dx, s.dy);
    ASSERT_NE(out, nullptr);
    GvcMvMeta* meta = gvc_mv_meta_get(out);
    ASSERT_NE(meta, nullptr);
    std::vector<GvcMvCost> v = vectors_of(meta);
    // Interior macroblocks: their true match lies inside the reference.
    int right = 0, total = 0;
    for (guint r = 1; r + 1 < meta->rows; r++) {
      for (guint c = 1; c + 1 < meta->cols; c++) {
        const GvcMvCost& mv = v[r * meta->cols + c];
        total++;
        right += mv.mvx == 4 * s.dx && mv.mvy == 4 * s.dy;
      }
    }
    EXPECT_GE(right * 100, total * 99) << right << " of " << total << " interior blocks found ("
                                       << s.dx << "," << s.dy << ")";
    gst_buffer_unref(out);
    gst_harness_teardown(h);
  }
}

TEST(CudaMv, CpuAndCudaBackendsGiveTheSameMeta) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device or driver on this machine";
  for (const char* size : {"16x16", "8x8", "4x4", "auto"}) {
    std::vector<GvcMvCost> got[2];
    const char* backends[2] = {"cpu", "cuda"};
    for (int b = 0; b < 2; b++) {
      std::string props = std::string("backend=") + backends[b] + " block-size=" + size +
                          " lambda=4 subpel=quarter";
      GstHarness* h = new_harness(props.c_str());
      GstBuffer* out = push_pair(h, 6, -3);
      ASSERT_NE(out, nullptr);
      GvcMvMeta* meta = gvc_mv_meta_get(out);
      ASSERT_NE(meta, nullptr);
      EXPECT_EQ(gvc_mv_meta_is_on_gpu(meta), b == 1);
      got[b] = vectors_of(meta);
      gst_buffer_unref(out);
      gst_harness_teardown(h);
    }
    ASSERT_EQ(got[0].size(), got[1].size());
    EXPECT_EQ(0, memcmp(got[0].data(), got[1].data(), got[0].size() * sizeof(GvcMvCost)))
        << "block-size=" << size;
  }
}

TEST(CudaMv, RefusesBadCapsWithAClearMessage) {
  struct Bad { std::string caps; const char* words; } cases[] = {
      {caps_str("I420", 175, 144), "even"},
      {caps_str("I420", 176, 143), "even"},
      {caps_str("RGBA"), "NV12 or I420"},
  };
  for (const Bad& b : cases) {
    GstHarness* h = gst_harness_new("cudamv");
    GstBus* bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    gst_harness_play(h);
    // Sticky events count as handled once stored, so the refusal shows in the data flow.
    gst_harness_push_event(h, gst_event_new_stream_start("bad"));
    gst_harness_push_event(h, gst_event_new_caps(gst_caps_from_string(b.caps.c_str())));
    EXPECT_NE(gst_harness_push(h, make_frame("I420", 0, 0, 0)), GST_FLOW_OK);
    std::string err = pop_error(bus);
    EXPECT_NE(err.find(b.words), std::string::npos) << "error was: \"" << err << "\"";
    gst_element_set_bus(h->element, nullptr);
    gst_object_unref(bus);
    gst_harness_teardown(h);
  }
}

TEST(CudaMv, BackendCudaWithoutDeviceFailsWithAClearError) {
  // Device 99 exists nowhere, so this also fails (as it must) on a GPU host.
  GstElement* mv = gst_element_factory_make("cudamv", nullptr);
  ASSERT_NE(mv, nullptr);
  gst_util_set_object_arg(G_OBJECT(mv), "backend", "cuda");
  g_object_set(mv, "cuda-device-id", 99, nullptr);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(mv, bus);
  EXPECT_EQ(gst_element_set_state(mv, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  std::string err = pop_error(bus);
  EXPECT_NE(err.find("backend=cuda"), std::string::npos) << "error was: \"" << err << "\"";
  EXPECT_NE(err.find("CUDA"), std::string::npos);
  gst_element_set_state(mv, GST_STATE_NULL);
  gst_element_set_bus(mv, nullptr);
  gst_object_unref(bus);
  gst_object_unref(mv);
}

TEST(CudaMv, PostsMotionStatistics) {
  GstHarness* h = new_harness("backend=cpu post-messages=true subpel=none");
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  GstBuffer* out = push_pair(h, 4, 0);  // 4 pixels to the left for every block
  ASSERT_NE(out, nullptr);
  GstMessage* msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT);
  ASSERT_NE(msg, nullptr);
  EXPECT_EQ(gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT), nullptr) << "one message: frame 1";
  const GstStructure* s = gst_message_get_structure(msg);
  EXPECT_TRUE(gst_structure_has_name(s, "cudamv"));
  double mean = -1, max = -1, moving = -1;
  guint blocks = 0;
  guint64 ts = 0;
  ASSERT_TRUE(gst_structure_get_double(s, "mean-length", &mean));
  ASSERT_TRUE(gst_structure_get_double(s, "max-length", &max));
  ASSERT_TRUE(gst_structure_get_double(s, "moving-fraction", &moving));
  ASSERT_TRUE(gst_structure_get_uint(s, "blocks", &blocks));
  ASSERT_TRUE(gst_structure_get_uint64(s, "timestamp", &ts));
  EXPECT_EQ(blocks, 99u);
  EXPECT_EQ(ts, GST_BUFFER_PTS(out));
  if (painting().w) {
    EXPECT_NEAR(mean, 4.0, 0.5);
    EXPECT_GE(max, 4.0);
    EXPECT_GE(moving, 0.9);
  }
  // Consistency with the meta itself.
  std::vector<GvcMvCost> v = vectors_of(gvc_mv_meta_get(out));
  double sum = 0, mx = 0;
  int mov = 0;
  for (const auto& m : v) {
    double len = std::hypot(m.mvx, m.mvy) / 4.0;
    sum += len;
    mx = std::max(mx, len);
    mov += len >= 1.0;
  }
  EXPECT_DOUBLE_EQ(mean, sum / v.size());
  EXPECT_DOUBLE_EQ(max, mx);
  EXPECT_DOUBLE_EQ(moving, double(mov) / v.size());
  gst_message_unref(msg);
  gst_buffer_unref(out);
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
}

TEST(MvMeta, ExportsAVMotionVectors) {
  // A hand-made 3x2 field of 8x8 blocks.
  const GvcMvCost field[6] = {{0, 0, 1}, {5, -3, 2}, {-9, 4, 3},
                              {16, 0, 4}, {-1, -1, 5}, {7, 13, 6}};
  const gsize stride = 64;  // rows padded, as a GstCudaMemory's pitch may be
  GstMemory* mem = gst_allocator_alloc(nullptr, stride * 2, nullptr);
  GstMapInfo m;
  gst_memory_map(mem, &m, GST_MAP_WRITE);
  memset(m.data, 0xab, m.size);
  memcpy(m.data, field, 3 * sizeof(GvcMvCost));
  memcpy(m.data + stride, field + 3, 3 * sizeof(GvcMvCost));
  gst_memory_unmap(mem, &m);

  GstBuffer* buf = gst_buffer_new();
  GvcMvMeta* meta = gvc_mv_meta_add(buf, 8, 8, 3, 2, stride, 42, GVC_MV_DIRECTION_PAST, mem);
  ASSERT_NE(meta, nullptr);
  ASSERT_EQ(gvc_mv_meta_get(buf), meta);

  gsize n = 0;
  GvcAVMotionVector* av = gvc_mv_meta_export_av(meta, &n);
  ASSERT_NE(av, nullptr);
  ASSERT_EQ(n, 6u);
  for (int i = 0; i < 6; i++) {
    int c = i % 3, r = i / 3;
    SCOPED_TRACE(i);
    EXPECT_EQ(av[i].source, -1);
    EXPECT_EQ(av[i].w, 8);
    EXPECT_EQ(av[i].h, 8);
    EXPECT_EQ(av[i].dst_x, c * 8 + 4);
    EXPECT_EQ(av[i].dst_y, r * 8 + 4);
    EXPECT_EQ(av[i].motion_x, field[i].mvx);
    EXPECT_EQ(av[i].motion_y, field[i].mvy);
    EXPECT_EQ(av[i].motion_scale, 4);
    EXPECT_EQ(av[i].src_x, av[i].dst_x + field[i].mvx / 4);
    EXPECT_EQ(av[i].src_y, av[i].dst_y + field[i].mvy / 4);
    EXPECT_EQ(av[i].flags, 0u);
  }
  EXPECT_EQ(av[1].src_x, 12 + 1);  // 5 qpel -> 1 pel: C division, as FFmpeg's dst + mv / scale
  EXPECT_EQ(av[2].src_x, 20 - 2);  // -9 qpel -> -2 pel (towards zero)
  g_free(av);

  // A copy of the buffer carries the same field (memory shared, not copied).
  GstBuffer* copy = gst_buffer_copy(buf);
  GvcMvMeta* meta2 = gvc_mv_meta_get(copy);
  ASSERT_NE(meta2, nullptr);
  EXPECT_EQ(meta2->memory, meta->memory);
  EXPECT_EQ(meta2->ref_pts, 42u);
  gst_buffer_unref(copy);
  gst_buffer_unref(buf);
}

TEST(MvMeta, ExportFromTheElementMatchesTheMeta) {
  GstHarness* h = new_harness("backend=cpu block-size=8x8");
  GstBuffer* out = push_pair(h, 2, -1);
  ASSERT_NE(out, nullptr);
  GvcMvMeta* meta = gvc_mv_meta_get(out);
  ASSERT_NE(meta, nullptr);
  std::vector<GvcMvCost> v = vectors_of(meta);
  gsize n = 0;
  GvcAVMotionVector* av = gvc_mv_meta_export_av(meta, &n);
  ASSERT_EQ(n, v.size());
  for (gsize i = 0; i < n; i++) {
    ASSERT_EQ(av[i].motion_x, v[i].mvx);
    ASSERT_EQ(av[i].motion_y, v[i].mvy);
  }
  g_free(av);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(CudaMv, ReusesFieldMemoryOnlyOnceNoMetaHoldsIt) {
  GstHarness* h = new_harness("backend=cpu");
  GstBuffer* out0 = gst_harness_push_and_pull(h, make_frame("I420", kOx, kOy, 0));
  GstBuffer* out1 = gst_harness_push_and_pull(h, make_frame("I420", kOx + 2, kOy, 1));
  ASSERT_NE(out1, nullptr);
  std::vector<GvcMvCost> v1 = vectors_of(gvc_mv_meta_get(out1));
  GstMemory* mem1 = gvc_mv_meta_get(out1)->memory;
  GstBuffer* out2 = gst_harness_push_and_pull(h, make_frame("I420", kOx + 2, kOy + 5, 2));
  ASSERT_NE(out2, nullptr);
  EXPECT_NE(gvc_mv_meta_get(out2)->memory, mem1) << "frame 1's field is still held";
  std::vector<GvcMvCost> again = vectors_of(gvc_mv_meta_get(out1));
  ASSERT_EQ(again.size(), v1.size());
  EXPECT_EQ(memcmp(again.data(), v1.data(), v1.size() * 8), 0) << "frame 1's field was overwritten";
  std::vector<GvcMvCost> v2 = vectors_of(gvc_mv_meta_get(out2));
  EXPECT_FALSE(v2.size() == v1.size() && memcmp(v2.data(), v1.data(), v1.size() * 8) == 0);
  gst_buffer_unref(out1);  // frame 1's field is free again
  GstBuffer* out3 = gst_harness_push_and_pull(h, make_frame("I420", kOx, kOy, 3));
  ASSERT_NE(out3, nullptr);
  EXPECT_EQ(gvc_mv_meta_get(out3)->memory, mem1) << "a free field is reused";
  gst_buffer_unref(out0);
  gst_buffer_unref(out2);
  gst_buffer_unref(out3);
  gst_harness_teardown(h);
}

class CudaMvCycles : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaMvCycles, HundredNullPlayingNullCycles) {
  std::string desc = std::string("videotestsrc num-buffers=3 pattern=ball ! "
                                 "video/x-raw,format=I420,width=64,height=48 ! cudamv backend=") +
                     GetParam() + " post-messages=true ! fakesink";
  GstElement* pipeline = gst_parse_launch(desc.c_str(), nullptr);
  ASSERT_NE(pipeline, nullptr);
  GstBus* bus = gst_element_get_bus(pipeline);
  for (int i = 0; i < 100; i++) {
    ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    GstMessage* msg = gst_bus_timed_pop_filtered(
        bus, 10 * GST_SECOND, (GstMessageType)(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    ASSERT_NE(msg, nullptr) << "cycle " << i << ": no EOS";
    EXPECT_EQ(GST_MESSAGE_TYPE(msg), GST_MESSAGE_EOS) << "cycle " << i;
    gst_message_unref(msg);
    ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    gst_bus_set_flushing(bus, TRUE);
    gst_bus_set_flushing(bus, FALSE);
  }
  gst_object_unref(bus);
  gst_object_unref(pipeline);
}

INSTANTIATE_TEST_SUITE_P(Backends, CudaMvCycles, ::testing::Values("cpu", "auto"),
                         [](const auto& info) { return std::string(info.param); });
