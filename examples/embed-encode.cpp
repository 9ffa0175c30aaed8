// embed-encode.cpp: an application that embeds appsrc → cudah264enc → mp4mux → filesink and pushes its own frames
//
//   embed-encode [--frames N] [--size WxH] [--fps F] [--qp Q] [--backend auto|cuda|cpu] OUT.mp4
//
// The frames are made here (a textured pattern that moves and a bright disc that circles), as an
// application would hand over frames from its own source. Each buffer carries its timestamp and
// duration; appsrc blocks when the encoder falls behind, so memory stays bounded. At the end the
// program sends EOS, waits until mp4mux has finished the file, and prints frames, bytes and fps.
#include <glib/gstdio.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Options {
  int frames = 60, width = 320, height = 240, fps = 30, qp = 26;
  std::string backend = "auto", out;
};

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--frames N] [--size WxH] [--fps F] [--qp Q] [--backend auto|cuda|cpu] "
               "OUT.mp4\n",
               argv0);
  return 2;
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    bool has_value = i + 1 < argc;
    if (a == "--frames" && has_value) {
      o->frames = std::atoi(argv[++i]);
    } else if (a == "--size" && has_value) {
      if (std::sscanf(argv[++i], "%dx%d", &o->width, &o->height) != 2) return false;
    } else if (a == "--fps" && has_value) {
      o->fps = std::atoi(argv[++i]);
    } else if (a == "--qp" && has_value) {
      o->qp = std::atoi(argv[++i]);
    } else if (a == "--backend" && has_value) {
      o->backend = argv[++i];
    } else if (!a.empty() && a[0] != '-' && o->out.empty()) {
      o->out = a;
    } else {
      return false;
    }
  }
  return !o->out.empty() && o->frames > 0 && o->fps > 0 && o->width >= 16 && o->height >= 16 &&
         o->width % 2 == 0 && o->height % 2 == 0 && o->qp >= 0 && o->qp <= 51;
}

// Frame n of the synthetic source, I420: a diagonal texture scrolling right and down, a disc
// circling, chroma that changes slowly. Enough structure for motion search and intra modes.
void draw_frame(const Options& o, int n, uint8_t* data) {
  const int w = o.width, h = o.height, cw = w / 2, ch = h / 2;
  uint8_t* y = data;
  uint8_t* u = y + w * h;
  uint8_t* v = u + cw * ch;
  const int dx = 2 * n, dy = n;
  const int cx = w / 2 + static_cast<int>(w / 4 * std::cos(n * 0.15));
  const int cy = h / 2 + static_cast<int>(h / 4 * std::sin(n * 0.15));
  const int r = h / 6;
  for (int j = 0; j < h; j++) {
    for (int i = 0; i < w; i++) {
      int sx = i - dx, sy = j - dy;
      int t = (((sx >> 3) ^ (sy >> 3)) & 1) ? 170 : 70;
      t += ((sx + 2 * sy) & 31) - 16;
      int ddx = i - cx, ddy = j - cy;
      if (ddx * ddx + ddy * ddy < r * r) t = 235 - (ddx * ddx + ddy * ddy) * 40 / (r * r);
      y[j * w + i] = static_cast<uint8_t>(t);
    }
  }
  for (int j = 0; j < ch; j++) {
    for (int i = 0; i < cw; i++) {
      u[j * cw + i] = static_cast<uint8_t>(128 + ((i + n) % 64) - 32);
      v[j * cw + i] = static_cast<uint8_t>(128 + ((j * 2 + n) % 48) - 24);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  Options o;
  if (!parse(argc, argv, &o)) return usage(argv[0]);

  gchar* desc = g_strdup_printf(
      "appsrc name=src format=time is-live=false block=true max-bytes=%d ! "
      "cudah264enc name=enc qp=%d backend=%s ! h264parse ! mp4mux ! filesink name=sink",
      o.width * o.height * 3 / 2 * 4, o.qp, o.backend.c_str());
  GError* err = nullptr;
  GstElement* pipeline = gst_parse_launch(desc, &err);
  g_free(desc);
  if (!pipeline || err) {
    std::fprintf(stderr, "embed-encode: cannot build the pipeline: %s\n",
                 err ? err->message : "unknown error");
    if (err) g_error_free(err);
    return 1;
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  g_object_set(sink, "location", o.out.c_str(), nullptr);
  GstCaps* caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "I420", "width",
                                      G_TYPE_INT, o.width, "height", G_TYPE_INT, o.height,
                                      "framerate", GST_TYPE_FRACTION, o.fps, 1, nullptr);
  gst_app_src_set_caps(GST_APP_SRC(src), caps);
  gst_caps_unref(caps);

  auto start = std::chrono::steady_clock::now();
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  const gsize frame_size = static_cast<gsize>(o.width) * o.height * 3 / 2;
  for (int n = 0; n < o.frames; n++) {
    GstBuffer* buf = gst_buffer_new_allocate(nullptr, frame_size, nullptr);
    GstMapInfo map;
    gst_buffer_map(buf, &map, GST_MAP_WRITE);
    draw_frame(o, n, map.data);
    gst_buffer_unmap(buf, &map);
    GST_BUFFER_PTS(buf) = gst_util_uint64_scale(n, GST_SECOND, o.fps);
    GST_BUFFER_DURATION(buf) = gst_util_uint64_scale(1, GST_SECOND, o.fps);
    // Takes ownership; returns FLUSHING or EOS when the pipeline stopped on an error.
    if (gst_app_src_push_buffer(GST_APP_SRC(src), buf) != GST_FLOW_OK) break;
  }
  gst_app_src_end_of_stream(GST_APP_SRC(src));

  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* msg = gst_bus_timed_pop_filtered(
      bus, GST_CLOCK_TIME_NONE, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  int status = 0;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    gchar* dbg = nullptr;
    gst_message_parse_error(msg, &err, &dbg);
    std::fprintf(stderr, "embed-encode: %s\n", err->message);
    if (dbg) std::fprintf(stderr, "embed-encode: (%s)\n", dbg);
    g_error_free(err);
    g_free(dbg);
    status = 1;
  }
  gst_message_unref(msg);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  gchar* active = nullptr;
  GstElement* enc = gst_bin_get_by_name(GST_BIN(pipeline), "enc");
  g_object_get(enc, "active-backend", &active, nullptr);
  gst_element_set_state(pipeline, GST_STATE_NULL);

  if (status == 0) {
    GStatBuf st;
    long long bytes = g_stat(o.out.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : -1;
    std::printf("embed-encode: %d frames %dx%d on the %s backend in %.2f s (%.1f fps), %lld bytes "
                "written to %s\n",
                o.frames, o.width, o.height, active ? active : "?", seconds, o.frames / seconds,
                bytes, o.out.c_str());
  }
  g_free(active);
  gst_object_unref(enc);
  gst_object_unref(bus);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return status;
}
