// mv-dump.cpp: decodes a video file, runs cudamv on it and prints every motion vector as CSV
//
//   mv-dump [--backend cpu|cuda|auto] [--block 16|8|4] [--range N]
//           [--subpel none|half|quarter] FILE
//
// Output: the header "frame,x,y,w,h,mvx_qpel,mvy_qpel,cost", then one row per block per frame
// (x, y: the block's top-left corner in luma samples). Frames count from 0; frame 0 has no
// reference and prints no rows. Reads the vectors through GvcMvMeta (gvcmv-1.0).
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gst/mvmeta/gvcmvmeta.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--backend cpu|cuda|auto] [--block 16|8|4] [--range N]\n"
               "          [--subpel none|half|quarter] FILE\n",
               argv0);
  return 2;
}

// Prints the first error (or warning turned fatal) on the bus, if any; true if there was one.
bool report_bus_error(GstElement* pipeline) {
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  gst_object_unref(bus);
  if (!msg) return false;
  GError* err = nullptr;
  gchar* dbg = nullptr;
  gst_message_parse_error(msg, &err, &dbg);
  std::fprintf(stderr, "mv-dump: %s\n", err->message);
  if (dbg) std::fprintf(stderr, "mv-dump: (%s)\n", dbg);
  g_error_free(err);
  g_free(dbg);
  gst_message_unref(msg);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);

  std::string backend = "auto", block = "16", subpel = "quarter", file;
  int range = 16;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--backend") {
      if (!value(&backend)) return usage(argv[0]);
    } else if (a == "--block") {
      if (!value(&block)) return usage(argv[0]);
    } else if (a == "--range") {
      if (!value(&v)) return usage(argv[0]);
      range = std::atoi(v.c_str());
    } else if (a == "--subpel") {
      if (!value(&subpel)) return usage(argv[0]);
    } else if (a == "-h" || a == "--help") {
      usage(argv[0]);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "mv-dump: unknown option %s\n", a.c_str());
      return usage(argv[0]);
    } else if (file.empty()) {
      file = a;
    } else {
      return usage(argv[0]);
    }
  }
  if (file.empty()) return usage(argv[0]);
  if (backend != "cpu" && backend != "cuda" && backend != "auto") return usage(argv[0]);
  if (block != "16" && block != "8" && block != "4") return usage(argv[0]);
  if (subpel != "none" && subpel != "half" && subpel != "quarter") return usage(argv[0]);
  if (range < 8 || range > 64) {
    std::fprintf(stderr, "mv-dump: --range must be 8..64\n");
    return 2;
  }
  if (!g_file_test(file.c_str(), G_FILE_TEST_IS_REGULAR)) {
    std::fprintf(stderr, "mv-dump: cannot open %s: no such file\n", file.c_str());
    return 1;
  }

  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(
      "filesrc name=src ! decodebin ! videoconvert ! video/x-raw,format={I420,NV12} ! "
      "cudamv name=mv ! appsink name=sink sync=false",
      &error);
  if (!pipeline) {
    std::fprintf(stderr, "mv-dump: cannot build the pipeline: %s\n",
                 error ? error->message : "unknown error");
    g_clear_error(&error);
    return 1;
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement* mv = gst_bin_get_by_name(GST_BIN(pipeline), "mv");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  g_object_set(src, "location", file.c_str(), nullptr);
  gst_util_set_object_arg(G_OBJECT(mv), "backend", backend.c_str());
  gst_util_set_object_arg(G_OBJECT(mv), "block-size", (block + "x" + block).c_str());
  gst_util_set_object_arg(G_OBJECT(mv), "subpel", subpel.c_str());
  g_object_set(mv, "search-range", range, nullptr);

  int status = 0;
  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    if (!report_bus_error(pipeline))
      std::fprintf(stderr, "mv-dump: cannot play %s\n", file.c_str());
    status = 1;
  } else {
    std::printf("frame,x,y,w,h,mvx_qpel,mvy_qpel,cost\n");
    guint64 frame = 0;
    GstBus* bus = gst_element_get_bus(pipeline);
    for (;;) {
      // An error does not reach the sink, so wait on both: a sample or a bus message.
      GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 50 * GST_MSECOND);
      if (!sample) {
        if (gst_app_sink_is_eos(GST_APP_SINK(sink))) break;
        GstMessage* msg = gst_bus_peek(bus);
        bool failed = msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR;
        if (msg) gst_message_unref(msg);
        if (failed) break;
        if (msg) gst_message_unref(gst_bus_pop(bus));  // not an error: drop it
        continue;
      }
      GstBuffer* buf = gst_sample_get_buffer(sample);
      GvcMvMeta* meta = buf ? gvc_mv_meta_get(buf) : nullptr;
      GvcMvMap map;
      if (meta && gvc_mv_meta_map(meta, &map)) {
        for (guint r = 0; r < map.rows; r++) {
          for (guint c = 0; c < map.cols; c++) {
            const GvcMvCost* v = gvc_mv_map_at(&map, c, r);
            std::printf("%" G_GUINT64_FORMAT ",%u,%u,%u,%u,%d,%d,%u\n", frame,
                        c * meta->block_width, r * meta->block_height, meta->block_width,
                        meta->block_height, v->mvx, v->mvy, v->cost);
          }
        }
        gvc_mv_meta_unmap(&map);
      } else if (meta) {
        std::fprintf(stderr, "mv-dump: cannot map the vectors of frame %" G_GUINT64_FORMAT "\n",
                     frame);
        status = 1;
      }
      gst_sample_unref(sample);
      frame++;
    }
    gst_object_unref(bus);
    // The sink returns no sample at EOS or on error: tell which.
    if (report_bus_error(pipeline)) status = 1;
    else if (frame == 0) {
      std::fprintf(stderr, "mv-dump: %s has no video frames\n", file.c_str());
      status = 1;
    }
  }
  std::fflush(stdout);

  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(mv);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return status;
}
