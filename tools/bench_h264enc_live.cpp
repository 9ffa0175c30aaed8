// bench_h264enc_live.cpp: cudah264enc fed like live 1080p cameras: per-frame latency and real-time throughput of N instances; unpaced, its steady rate beside x264enc's
//
// Usage: bench-h264enc-live [--frames N] [--instances N] [--pace-fps F] [--flood]
//                           [--tune zerolatency|none] [--preset PRESET] [--x264 PRESET]
//                           [--dump FILE]   (instance 0's stream, to check what was coded)
// Needs the gvc plugin on GST_PLUGIN_PATH (tools/bench-h264enc.sh sets it) and a CUDA device;
// without one it says so and exits with 77 (skipped). Defaults: 300 frames, 16 instances,
// 30 fps, tune=none (the element's default, which holds one frame).
//
// A ring of 8 NV12 1920x1080 frames (a pan over the painting in $GVC_ELEPHANTS, made by
// `tools/gpu-host-test.sh --make-content`; hashed noise without it, and the output says so)
// is uploaded once into GstCudaMemory and shared by N pipelines in this process, each
// `appsrc ! cudah264enc backend=cuda ! appsink sync=false`, on one GstCudaContext. Each
// instance is fed from its own thread: frame k (PTS k/30 s) is pushed at t0 + k/F on the
// steady clock, the instances' phases spread over one frame interval as unsynchronised
// cameras would be (the appsrc queue is unbounded, so a slow encoder shows as a growing
// latency, not as a late push). With --pace-fps 0 frame k is pushed as soon as the access
// unit of the frame before it has arrived (with tune=none, of the frame before the one the
// encoder holds, or nothing would ever come out).
// --flood pushes every frame at once: the encoder then always has its next frame waiting, and
// "out fps" is its steady rate, timed at the sink, free of what a gst-launch-1.0 run pays once
// (process start, plugin loading, the CUDA context) and of reading and uploading a file. The
// frames are then all different, those of bench-h264enc and tools/bench-h264enc.sh's file
// (tools/pan_frame.h, the painting needed), as NV12, all uploaded before the run. Its
// statistics skip the first kFloodSkip frames and the last kFloodTail (an encoder holding
// frames, as x264enc's frame threads do, lets those out at EOS); its latencies count the
// queue and mean nothing. --x264 PRESET times `x264enc speed-preset=PRESET threads=0`
// (Constrained Baseline) the same way, from the same ring in system memory, instead of
// cudah264enc: the peer of the speed target, in the same harness. --preset PRESET sets
// cudah264enc's speed-preset.
// Latency of a frame: from just before gst_app_src_push_buffer() until its access unit (matched
// by PTS) reaches the appsink's callback. Statistics skip the first 10 frames (CUDA start-up,
// the IDR) and, with tune=none, the last one (drained by EOS, not by a next frame).
// "Kept up": output fps over those frames >= 0.97 x F, and the median latency of the last 30
// of them is at most half a frame interval above that of the first 30 (no growing backlog).
// "In all" counts every instance's access units while all of them are in their steady part.
// The whole run has a watchdog: no result within 120 s (plus the frames' time) is a failure.
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/cuda/cuda-gst.h>
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tools/nv12_pan.h"
#include "tools/pan_frame.h"

namespace {

using gvc::bench::Painting;
using gvc::bench::fill_nv12;
using gvc::bench::load_painting;

using Clock = std::chrono::steady_clock;
constexpr int kWidth = 1920, kHeight = 1080;
constexpr int kRing = 8;
constexpr int kWarmup = 10;       // frames left out of every statistic
constexpr int kWindow = 30;       // frames compared at the start and end of the steady part
constexpr int kTimestampFps = 30; // PTS k/30 s and the caps' frame rate, whatever the pace
constexpr double kTargetMs = 10;  // the zerolatency target: per frame, end to end
constexpr int kFloodSkip = 30;    // --flood: frames left out at the start (start-up, the IDR)
constexpr int kFloodTail = 40;    // --flood: and at the end (an encoder's held frames, at EOS)

struct Options {
  int frames = 300;
  int instances = 16;
  double pace_fps = 30;
  bool flood = false;
  bool zerolatency = false;
  const char* x264 = nullptr;  // x264enc's speed-preset, timed instead of cudah264enc
  const char* preset = nullptr;  // cudah264enc's speed-preset (null: its default)
  const char* dump = nullptr;  // instance 0's access units go to this file (Annex B)
  // Frames cudah264enc holds before their access unit comes out (docs/elements/cudah264enc.md,
  // "Latency"): the frame-level pipeline of the default tune holds one.
  int held() const { return zerolatency ? 0 : 1; }
  // The frames the statistics count: [first(), last()).
  int first() const { return flood ? kFloodSkip : kWarmup; }
  int last() const { return flood ? frames - kFloodTail : frames - held(); }
};

int usage() {
  fprintf(stderr, "usage: bench-h264enc-live [--frames N] [--instances N] [--pace-fps F] [--flood] "
                  "[--tune zerolatency|none] [--preset PRESET] [--x264 PRESET] [--dump FILE]\n");
  return 2;
}

// Ring slot of frame k: the pan goes forth and back (0..7..1), so the ring's wrap is not a cut.
int ring_slot(int k) {
  const int t = k % (2 * kRing - 2);
  return t < kRing ? t : 2 * kRing - 2 - t;
}

// Frame k of bench-h264enc's pan (pan_frame, I420) into an NV12 frame.
void fill_nv12_pan(GstVideoFrame* frame, const Painting& p, int k) {
  const int w = GST_VIDEO_FRAME_WIDTH(frame), h = GST_VIDEO_FRAME_HEIGHT(frame);
  const auto px = [&](int x, int y) { return p.pixels[size_t(y) * size_t(p.width) + size_t(x)]; };
  const std::vector<uint8_t> fr = gvc::bench::pan_frame(px, w, h, k);
  auto* y = static_cast<uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(frame, 0));
  const int ys = GST_VIDEO_FRAME_PLANE_STRIDE(frame, 0);
  for (int r = 0; r < h; r++) memcpy(y + size_t(r) * ys, &fr[size_t(r) * size_t(w)], size_t(w));
  const uint8_t* u = fr.data() + size_t(w) * size_t(h);
  const uint8_t* v = u + size_t(w / 2) * size_t(h / 2);
  auto* uv = static_cast<uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(frame, 1));
  const int uvs = GST_VIDEO_FRAME_PLANE_STRIDE(frame, 1);
  for (int r = 0; r < h / 2; r++)
    for (int x = 0; x < w / 2; x++) {
      uv[size_t(r) * uvs + 2 * size_t(x)] = u[size_t(r) * size_t(w / 2) + size_t(x)];
      uv[size_t(r) * uvs + 2 * size_t(x) + 1] = v[size_t(r) * size_t(w / 2) + size_t(x)];
    }
}

// The input frames, uploaded to the device once (or, for x264enc, kept in system memory);
// every pushed buffer shares their memory. Live: 8 frames, pushed forth and back
// (ring_slot); flooded: every frame its own, of the pan.
struct Ring {
  GstBufferPool* pool = nullptr;
  std::vector<GstBuffer*> frames;
  bool all_distinct = false;

  bool make(GstCudaContext* ctx, GstCaps* caps, const GstVideoInfo& info, const Painting& p, int distinct) {
    all_distinct = distinct > 0;
    const int n = all_distinct ? distinct : kRing;
    pool = ctx ? gst_cuda_buffer_pool_new(ctx) : gst_video_buffer_pool_new();
    GstStructure* cfg = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(cfg, caps, GST_VIDEO_INFO_SIZE(&info), guint(n), guint(n));
    gst_buffer_pool_config_add_option(cfg, GST_BUFFER_POOL_OPTION_VIDEO_META);
    if (!gst_buffer_pool_set_config(pool, cfg) || !gst_buffer_pool_set_active(pool, TRUE)) {
      fprintf(stderr, "bench-h264enc-live: cannot set up the frames' buffer pool\n");
      return false;
    }
    for (int k = 0; k < n; k++) {
      GstBuffer* buf = nullptr;
      gst_buffer_pool_acquire_buffer(pool, &buf, nullptr);
      GstVideoFrame vf;
      if (!buf || !gst_video_frame_map(&vf, &info, buf, GST_MAP_WRITE)) {
        fprintf(stderr, "bench-h264enc-live: cannot map an input frame\n");
        if (buf) gst_buffer_unref(buf);
        return false;
      }
      if (all_distinct)
        fill_nv12_pan(&vf, p, k);
      else
        fill_nv12(&vf, p, k);
      gst_video_frame_unmap(&vf);
      // A CUDA map moves the pixels to the device now, not in the timed loop.
      if (ctx && !gst_video_frame_map(&vf, &info, buf, GstMapFlags(GST_MAP_READ | GST_MAP_CUDA))) {
        fprintf(stderr, "bench-h264enc-live: cannot upload an input frame\n");
        gst_buffer_unref(buf);
        return false;
      }
      if (ctx) gst_video_frame_unmap(&vf);
      frames.push_back(buf);
    }
    return true;
  }

  // Frame k as a new buffer on its slot's memory (a reference, never a pixel copy,
  // which gst_buffer_copy() would make of memory flagged NO_SHARE).
  GstBuffer* frame(int k) const {
    GstBuffer* slot = frames[size_t(all_distinct ? k : ring_slot(k))];
    GstBuffer* b = gst_buffer_new();
    for (guint i = 0; i < gst_buffer_n_memory(slot); i++)
      gst_buffer_append_memory(b, gst_memory_ref(gst_buffer_peek_memory(slot, i)));
    // The layout goes with it as a GstVideoMeta of its own (copy_into's META flag leaves out
    // metas tagged "memory", the video meta among them, when the memory is not copied too).
    if (const GstVideoMeta* m = gst_buffer_get_video_meta(slot))
      gst_buffer_add_video_meta_full(b, m->flags, m->format, m->width, m->height, m->n_planes,
                                     const_cast<gsize*>(m->offset), const_cast<gint*>(m->stride));
    GST_BUFFER_PTS(b) = gst_util_uint64_scale(guint64(k), GST_SECOND, kTimestampFps);
    GST_BUFFER_DURATION(b) = gst_util_uint64_scale(1, GST_SECOND, kTimestampFps);
    return b;
  }

  ~Ring() {
    for (GstBuffer* b : frames) gst_buffer_unref(b);
    if (pool) {
      gst_buffer_pool_set_active(pool, FALSE);
      gst_object_unref(pool);
    }
  }
};

// One pipeline and what its feeding thread and its streaming threads record.
struct Instance {
  int id = 0;
  GstElement* pipe = nullptr;
  GstElement* src = nullptr;
  GstElement* sink = nullptr;
  std::thread feeder;
  FILE* dump = nullptr;  // the access units, when --dump names a file (instance 0)

  std::mutex m;  // guards what follows, written by the streaming threads
  std::condition_variable cv;
  std::vector<Clock::time_point> pushed, arrived;  // per frame; arrived is epoch when missing
  int outputs = 0;
  bool eos = false;
  std::string error;
  double max_late_ms = 0;  // the feeder's worst lateness against its schedule

  bool failed() {
    std::lock_guard<std::mutex> lock(m);
    return !error.empty();
  }
};

GstFlowReturn on_new_sample(GstAppSink* appsink, gpointer data) {
  const Clock::time_point now = Clock::now();
  auto* in = static_cast<Instance*>(data);
  GstSample* sample = gst_app_sink_pull_sample(appsink);
  if (!sample) return GST_FLOW_FLUSHING;
  GstBuffer* buf = gst_sample_get_buffer(sample);
  if (buf && in->dump) {
    GstMapInfo map;
    if (gst_buffer_map(buf, &map, GST_MAP_READ)) {
      fwrite(map.data, 1, map.size, in->dump);
      gst_buffer_unmap(buf, &map);
    }
  }
  // The frame by its running time: x264enc shifts its PTS (and its segment) by 1000 hours
  // (gst_video_encoder_set_min_pts), so that its DTS stay positive.
  const GstSegment* seg = gst_sample_get_segment(sample);
  const guint64 rt = buf && GST_BUFFER_PTS_IS_VALID(buf) && seg
                         ? gst_segment_to_running_time(seg, GST_FORMAT_TIME, GST_BUFFER_PTS(buf))
                         : GST_CLOCK_TIME_NONE;
  if (GST_CLOCK_TIME_IS_VALID(rt)) {
    const guint64 k = gst_util_uint64_scale_round(rt, kTimestampFps, GST_SECOND);
    std::lock_guard<std::mutex> lock(in->m);
    if (k < in->arrived.size() && in->arrived[k] == Clock::time_point()) in->arrived[k] = now;
    in->outputs++;
    in->cv.notify_all();
  }
  gst_sample_unref(sample);
  return GST_FLOW_OK;
}

// Called on the posting thread: errors and EOS wake the feeder; warnings are printed.
GstBusSyncReply on_bus(GstBus*, GstMessage* msg, gpointer data) {
  auto* in = static_cast<Instance*>(data);
  switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_ERROR:
    case GST_MESSAGE_WARNING: {
      GError* e = nullptr;
      gchar* debug = nullptr;
      const bool is_error = GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR;
      if (is_error)
        gst_message_parse_error(msg, &e, &debug);
      else
        gst_message_parse_warning(msg, &e, &debug);
      std::string text = std::string(GST_MESSAGE_SRC_NAME(msg)) + ": " +
                         (e ? e->message : "unknown") + (debug ? std::string(" (") + debug + ")" : "");
      g_clear_error(&e);
      g_free(debug);
      if (!is_error) {
        fprintf(stderr, "bench-h264enc-live: instance %d: warning from %s\n", in->id, text.c_str());
        break;
      }
      std::lock_guard<std::mutex> lock(in->m);
      if (in->error.empty()) in->error = text;
      in->cv.notify_all();
      break;
    }
    case GST_MESSAGE_EOS: {
      std::lock_guard<std::mutex> lock(in->m);
      in->eos = true;
      in->cv.notify_all();
      break;
    }
    default:
      break;
  }
  return GST_BUS_DROP;  // nobody pops this bus
}

// The encoder and its options, as in the pipeline.
std::string encoder_desc(const Options& o) {
  if (o.x264)
    return std::string("x264enc speed-preset=") + o.x264 + " threads=0" + (o.zerolatency ? " tune=zerolatency" : "") +
           " ! video/x-h264,profile=constrained-baseline";
  return std::string("cudah264enc backend=cuda tune=") + (o.zerolatency ? "zerolatency" : "none") +
         (o.preset ? std::string(" speed-preset=") + o.preset : "");
}

bool build(Instance& in, const Options& o, GstCaps* caps, GstCudaContext* ctx) {
  // An unbounded appsrc queue (max-bytes=0; max-buffers and max-time are 0 by default): the
  // feeder never blocks, so a backlog is seen in the latencies.
  const std::string desc = "appsrc name=src format=time is-live=true max-bytes=0 ! " + encoder_desc(o) +
                           " ! appsink name=sink sync=false enable-last-sample=false";
  GError* err = nullptr;
  in.pipe = gst_parse_launch(desc.c_str(), &err);
  if (!in.pipe || err) {
    fprintf(stderr, "bench-h264enc-live: %s\n", err ? err->message : "cannot build the pipeline");
    g_clear_error(&err);
    return false;
  }
  GstContext* gctx = gst_context_new_cuda_context(ctx);  // the ring's memory is of this context
  gst_element_set_context(in.pipe, gctx);
  gst_context_unref(gctx);
  in.src = gst_bin_get_by_name(GST_BIN(in.pipe), "src");
  in.sink = gst_bin_get_by_name(GST_BIN(in.pipe), "sink");
  g_object_set(in.src, "caps", caps, nullptr);
  GstAppSinkCallbacks cb = {};
  cb.new_sample = on_new_sample;
  gst_app_sink_set_callbacks(GST_APP_SINK(in.sink), &cb, &in, nullptr);
  GstBus* bus = gst_element_get_bus(in.pipe);
  gst_bus_set_sync_handler(bus, on_bus, &in, nullptr);
  gst_object_unref(bus);
  in.pushed.assign(size_t(o.frames), Clock::time_point());
  in.arrived.assign(size_t(o.frames), Clock::time_point());
  return true;
}

void teardown(Instance& in) {
  if (!in.pipe) return;
  gst_element_set_state(in.pipe, GST_STATE_NULL);
  if (in.src) gst_object_unref(in.src);
  if (in.sink) gst_object_unref(in.sink);
  gst_object_unref(in.pipe);
  in.pipe = in.src = in.sink = nullptr;
}

// The feeding thread: pushes every frame on its schedule (or when the window allows), then
// EOS, and waits for the EOS to reach the bus or an error.
void feed(Instance& in, const Ring& ring, const Options& o, Clock::time_point t0) {
  for (int k = 0; k < o.frames; k++) {
    if (o.pace_fps > 0) {
      const auto due = t0 + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(k / o.pace_fps));
      std::this_thread::sleep_until(due);
      const double late = std::chrono::duration<double, std::milli>(Clock::now() - due).count();
      std::lock_guard<std::mutex> lock(in.m);
      in.max_late_ms = std::max(in.max_late_ms, late);
      if (!in.error.empty()) break;
    } else if (!o.flood) {
      std::unique_lock<std::mutex> lock(in.m);
      in.cv.wait(lock, [&] { return !in.error.empty() || in.outputs >= k - o.held(); });
      if (!in.error.empty()) break;
    }
    GstBuffer* b = ring.frame(k);
    {
      std::lock_guard<std::mutex> lock(in.m);
      in.pushed[size_t(k)] = Clock::now();
    }
    const GstFlowReturn ret = gst_app_src_push_buffer(GST_APP_SRC(in.src), b);
    if (ret != GST_FLOW_OK) {  // after EOS or while flushing: no EOS would come either
      std::lock_guard<std::mutex> lock(in.m);
      if (in.error.empty())
        in.error = std::string("appsrc: frame ") + std::to_string(k) + " refused (" +
                   gst_flow_get_name(ret) + ")";
      return;
    }
  }
  gst_app_src_end_of_stream(GST_APP_SRC(in.src));
  std::unique_lock<std::mutex> lock(in.m);
  in.cv.wait(lock, [&] { return in.eos || !in.error.empty(); });
}

// Ends the process when the run has not finished in time: a hung pipeline or device must not
// hang whoever runs the benchmark.
class Watchdog {
 public:
  explicit Watchdog(int seconds) : thread_([this, seconds] {
      std::unique_lock<std::mutex> lock(m_);
      if (!cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) {
        fprintf(stderr, "bench-h264enc-live: no result after %d s: giving up (watchdog)\n", seconds);
        fflush(stdout);
        std::_Exit(1);
      }
    }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Nearest-rank percentile of a sorted, non-empty vector.
double percentile(const std::vector<double>& sorted, double q) {
  const size_t rank = size_t(std::ceil(q * double(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : percentile(v, 0.5);
}

struct Result {
  int frames = 0, missing = 0, over_target = 0;
  std::string over_list;  // "frame (ms)" of the first frames over the target
  double fps = 0, med = 0, p95 = 0, max = 0, first = 0, last = 0;
  bool kept_up = false;
};

// Statistics over frames [o.first(), o.last()): see the header comment.
Result measure(const Instance& in, const Options& o) {
  Result r;
  std::vector<double> lat;
  Clock::time_point t_first, t_last;
  for (int k = o.first(); k < o.last(); k++) {
    const Clock::time_point a = in.arrived[size_t(k)];
    if (a == Clock::time_point() || in.pushed[size_t(k)] == Clock::time_point()) {
      r.missing++;
      continue;
    }
    if (lat.empty()) t_first = a;
    t_last = a;
    lat.push_back(ms(a - in.pushed[size_t(k)]));
    if (lat.back() > kTargetMs && std::count(r.over_list.begin(), r.over_list.end(), ',') < 8) {
      char item[48];
      snprintf(item, sizeof item, "%s%d (%.1f)", r.over_list.empty() ? "" : ", ", k, lat.back());
      r.over_list += item;
    }
  }
  r.frames = int(lat.size());
  if (lat.size() < 2) return r;
  const size_t w = std::min<size_t>(kWindow, lat.size() / 2);
  r.first = median(std::vector<double>(lat.begin(), lat.begin() + std::ptrdiff_t(w)));
  r.last = median(std::vector<double>(lat.end() - std::ptrdiff_t(w), lat.end()));
  r.over_target = int(std::count_if(lat.begin(), lat.end(), [](double v) { return v > kTargetMs; }));
  r.fps = (r.frames - 1) / std::chrono::duration<double>(t_last - t_first).count();
  std::sort(lat.begin(), lat.end());
  r.med = percentile(lat, 0.5);
  r.p95 = percentile(lat, 0.95);
  r.max = lat.back();
  r.kept_up = o.pace_fps > 0 && r.missing == 0 && r.fps >= 0.97 * o.pace_fps &&
              r.last - r.first <= 500 / o.pace_fps;
  return r;
}

// Access units per second of all instances together, over the time all of them are past
// their warm-up and not yet at their last steady frame.
double total_fps(const std::vector<std::unique_ptr<Instance>>& all, const Options& o) {
  Clock::time_point start, end = Clock::time_point::max();
  for (const auto& in : all) {
    start = std::max(start, in->arrived[size_t(o.first())]);
    end = std::min(end, in->arrived[size_t(o.last() - 1)]);
  }
  if (end <= start) return 0;
  int n = 0;
  for (const auto& in : all)
    for (const Clock::time_point a : in->arrived) n += a >= start && a <= end;
  return (n - 1) / std::chrono::duration<double>(end - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (i + 1 >= argc && a != "--flood") return usage();
    const char* v = argv[i + 1];
    if (a == "--frames") o.frames = atoi(v);
    else if (a == "--instances") o.instances = atoi(v);
    else if (a == "--pace-fps") o.pace_fps = atof(v);
    else if (a == "--flood") {
      o.flood = true;
      o.pace_fps = 0;
      i--;  // no value
    }
    else if (a == "--x264") o.x264 = v;
    else if (a == "--preset") o.preset = v;
    else if (a == "--tune" && !strcmp(v, "zerolatency")) o.zerolatency = true;
    else if (a == "--tune" && !strcmp(v, "none")) o.zerolatency = false;
    else if (a == "--dump") o.dump = v;
    else return usage();
  }
  if (o.last() - o.first() < 2 || o.instances < 1 || o.pace_fps < 0) {
    fprintf(stderr, "bench-h264enc-live: need at least %d frames, 1 instance and a pace >= 0\n",
            (o.frames - o.last()) + o.first() + 2);
    return 2;
  }
  if (o.flood && (kWidth + 2 * o.frames > 4096 || kHeight + o.frames > 2304)) {
    fprintf(stderr, "bench-h264enc-live: --flood pans over the painting: at most 1088 frames\n");
    return 2;
  }
  // Unpaced, an instance is assumed to manage at least 10 fps; starting one takes well under 2 s.
  Watchdog watchdog(120 + int(o.frames / (o.pace_fps > 0 ? o.pace_fps : 10)) + 2 * o.instances);

  if (!gst_cuda_load_library()) {
    fprintf(stderr, "bench-h264enc-live: no CUDA driver (libcuda): nothing to measure\n");
    return 77;
  }
  int ndev = 0;
  CUdevice dev;
  char name[256] = "";
  if (CuInit(0) != CUDA_SUCCESS || CuDeviceGetCount(&ndev) != CUDA_SUCCESS || ndev == 0 ||
      CuDeviceGet(&dev, 0) != CUDA_SUCCESS || CuDeviceGetName(name, sizeof name, dev) != CUDA_SUCCESS) {
    fprintf(stderr, "bench-h264enc-live: no CUDA device: nothing to measure\n");
    return 77;
  }
  GstElementFactory* factory = gst_element_factory_find(o.x264 ? "x264enc" : "cudah264enc");
  if (!factory) {
    fprintf(stderr, "bench-h264enc-live: %s\n",
            o.x264 ? "no x264enc element (gstreamer1.0-plugins-ugly)"
                   : "no cudah264enc element: GST_PLUGIN_PATH must name BUILDDIR/gst");
    return 1;
  }
  gst_object_unref(factory);
  gst_cuda_memory_init_once();
  GstCudaContext* ctx = gst_cuda_context_new(0);
  if (!ctx) {
    fprintf(stderr, "bench-h264enc-live: cannot open CUDA device 0: nothing to measure\n");
    return 77;
  }

  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_NV12, kWidth, kHeight);
  GST_VIDEO_INFO_FPS_N(&info) = kTimestampFps;
  GST_VIDEO_INFO_FPS_D(&info) = 1;
  GstCaps* caps = gst_video_info_to_caps(&info);
  if (!o.x264) gst_caps_set_features(caps, 0, gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY, nullptr));
  const Painting painting = load_painting();
  int status = 0;
  {
    Ring ring;
    std::vector<std::unique_ptr<Instance>> all;
    bool ok = ring.make(o.x264 ? nullptr : ctx, caps, info, painting, o.flood ? o.frames : 0);
    for (int i = 0; ok && i < o.instances; i++) {
      all.push_back(std::make_unique<Instance>());
      all.back()->id = i;
      ok = build(*all.back(), o, caps, ctx);
    }
    if (ok && o.dump && !(all[0]->dump = fopen(o.dump, "wb"))) {
      fprintf(stderr, "bench-h264enc-live: cannot write %s\n", o.dump);
      ok = false;
    }
    // Started one after the other: each opens its engine (GPU buffers, threads) here.
    for (size_t i = 0; ok && i < all.size(); i++) {
      ok = gst_element_set_state(all[i]->pipe, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE &&
           !all[i]->failed();
      if (!ok && !all[i]->failed())
        fprintf(stderr, "bench-h264enc-live: instance %zu does not start\n", i);
    }
    if (ok) {
      printf("device: %s\n", name);
      printf("content: %s\n",
             !painting.real ? "hashed noise (no GVC_ELEPHANTS)"
             : o.flood      ? "bench-h264enc's pan over the Elephants painting, every frame its own"
                            : "pan over the Elephants painting, 8 frames forth and back");
      printf("%d x appsrc ! %s ! appsink, %dx%d NV12 in %s memory, %d frames each, ", o.instances,
             encoder_desc(o).c_str(), kWidth, kHeight, o.x264 ? "system" : "CUDA", o.frames);
      if (o.pace_fps > 0) printf("pushed at %g fps\n", o.pace_fps);
      else if (o.flood) printf("all pushed at once (out fps: the steady rate; latencies include the queue)\n");
      else
        printf("unpaced (next frame when the %s output arrives)\n", o.zerolatency ? "last" : "last but one");
      fflush(stdout);
      const Clock::time_point t0 = Clock::now() + std::chrono::milliseconds(50);
      for (size_t i = 0; i < all.size(); i++) {
        const double phase = o.pace_fps > 0 ? double(i) / (double(all.size()) * o.pace_fps) : 0;
        const Clock::time_point ti =
            t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(phase));
        Instance* in = all[i].get();
        in->feeder = std::thread([in, &ring, &o, ti] { feed(*in, ring, o, ti); });
      }
      for (auto& in : all) in->feeder.join();
    }
    for (auto& in : all) {
      teardown(*in);
      if (in->dump) fclose(in->dump);
      if (!in->error.empty()) {
        fprintf(stderr, "bench-h264enc-live: instance %d: error from %s\n", in->id, in->error.c_str());
        ok = false;
      }
    }
    if (!ok) {
      status = 1;
    } else {
      printf("frames %d..%d of each; latency in ms from the push into appsrc to the access unit at appsink\n",
             o.first(), o.last() - 1);
      printf("%4s %7s %8s %7s %7s %7s %8s %8s %9s%s\n", "inst", "frames", "out fps", "median", "p95",
             "max", "first30", "last30", "push late", o.pace_fps > 0 ? "  kept up" : "");
      int kept_up = 0, over = 0, counted = 0, missing = 0;
      double worst = 0;
      for (const auto& in : all) {
        const Result r = measure(*in, o);
        char late[32] = "-";  // a schedule exists only when paced
        if (o.pace_fps > 0) snprintf(late, sizeof late, "%.2f", in->max_late_ms);
        printf("%4d %7d %8.1f %7.2f %7.2f %7.2f %8.2f %8.2f %9s%s\n", in->id, r.frames, r.fps, r.med,
               r.p95, r.max, r.first, r.last, late, o.pace_fps > 0 ? (r.kept_up ? "  yes" : "  NO") : "");
        if (o.zerolatency && r.over_target)
          printf("     over %g ms: frames %s%s\n", kTargetMs, r.over_list.c_str(), r.over_target > 9 ? ", ..." : "");
        kept_up += r.kept_up;
        over += r.over_target;
        counted += r.frames;
        missing += r.missing;
        worst = std::max(worst, r.max);
      }
      if (missing) printf("access units missing: %d (counted as not kept up)\n", missing);
      printf("in all: %.1f fps steady (all %d instances running)\n", total_fps(all, o), o.instances);
      if (o.pace_fps > 0)
        printf("real time at %g fps: %d of %d instances kept up: %s\n", o.pace_fps, kept_up, o.instances,
               kept_up == o.instances ? "yes" : "NO");
      if (o.zerolatency)
        printf("latency <= %g ms per frame: %d of %d frames over it, max %.2f ms: %s\n", kTargetMs, over,
               counted, worst, over == 0 && missing == 0 ? "met" : "NOT met");
    }
  }
  gst_caps_unref(caps);
  gst_object_unref(ctx);
  return status;
}
