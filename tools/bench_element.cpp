// bench_element.cpp: cudamv in a CUDA-memory pipeline (frames resident on the GPU) vs its CPU backend
//
// Usage: bench-element [--frames N] [--repeats N]
// Needs the gvc plugin on GST_PLUGIN_PATH (tools/bench-element.sh sets it). The frames are a
// pan over a real painting (GVC_ELEPHANTS: a 4096x2304 GRAY8 file, made by
// `tools/gpu-host-test.sh --make-content`; without it, hashed noise, and the output says so).
// A ring of 8 NV12 frames is uploaded once into GstCudaMemory; the pipeline
// `appsrc ! cudamv ! fakesink` then runs N frames from it, so the element is timed without
// any host transfer. fps is counted between the 30th and the last buffer reaching the sink
// (wall clock), median of the repeats. GPU memory per instance is the drop in free device
// memory while the pipeline runs.
#include <gst/app/gstappsrc.h>
#include <gst/cuda/cuda-gst.h>
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tools/nv12_pan.h"

namespace {

using gvc::bench::Painting;
using gvc::bench::fill_nv12;
using gvc::bench::load_painting;

using Clock = std::chrono::steady_clock;
constexpr int kRing = 8;
constexpr int kWarmup = 30;

struct Config {
  const char* label;
  int width, height, range;
  const char* subpel;
  const char* backend;
  int frames;  // 0: the --frames value
};

struct RunResult {
  double fps = 0;
  double gpu_mb = 0;
  bool ok = false;
};

struct SinkCount {
  std::atomic<int> n{0};
  Clock::time_point t_warm, t_last;
};

void on_handoff(GstElement*, GstBuffer*, GstPad*, gpointer data) {
  auto* c = static_cast<SinkCount*>(data);
  int n = ++c->n;
  auto now = Clock::now();
  if (n == kWarmup) c->t_warm = now;
  c->t_last = now;
}

size_t free_device_bytes(GstCudaContext* ctx) {
  size_t free_b = 0, total = 0;
  if (gst_cuda_context_push(ctx)) {
    if (cudaMemGetInfo(&free_b, &total) != cudaSuccess) free_b = 0;
    gst_cuda_context_pop(nullptr);
  }
  return free_b;
}

RunResult run_once(const Config& c, int frames, GstCudaContext* ctx, const Painting& p) {
  RunResult res;
  const bool cuda = strcmp(c.backend, "cuda") == 0;
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_NV12, c.width, c.height);
  GST_VIDEO_INFO_FPS_N(&info) = 30;
  GST_VIDEO_INFO_FPS_D(&info) = 1;
  GstCaps* caps = gst_video_info_to_caps(&info);
  if (cuda)
    gst_caps_set_features(caps, 0, gst_caps_features_new(GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY,
                                                         nullptr));

  // The ring of input frames, resident where the element reads them.
  std::vector<GstBuffer*> ring;
  GstBufferPool* pool = nullptr;
  if (cuda) {
    pool = gst_cuda_buffer_pool_new(ctx);
    GstStructure* cfg = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(cfg, caps, GST_VIDEO_INFO_SIZE(&info), kRing, kRing);
    if (!gst_buffer_pool_set_config(pool, cfg) || !gst_buffer_pool_set_active(pool, TRUE)) {
      fprintf(stderr, "bench-element: cannot set up a CUDA buffer pool\n");
      return res;
    }
  }
  for (int k = 0; k < kRing; k++) {
    GstBuffer* buf = nullptr;
    if (pool)
      gst_buffer_pool_acquire_buffer(pool, &buf, nullptr);
    else
      buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
    GstVideoFrame vf;
    if (!buf || !gst_video_frame_map(&vf, &info, buf, GST_MAP_WRITE)) {
      fprintf(stderr, "bench-element: cannot map an input frame\n");
      return res;
    }
    fill_nv12(&vf, p, k);
    gst_video_frame_unmap(&vf);
    if (cuda) {  // upload now, not in the timed loop
      if (!gst_video_frame_map(&vf, &info, buf, GstMapFlags(GST_MAP_READ | GST_MAP_CUDA))) {
        fprintf(stderr, "bench-element: cannot upload an input frame\n");
        return res;
      }
      gst_video_frame_unmap(&vf);
    }
    ring.push_back(buf);
  }

  std::string desc = std::string("appsrc name=src format=time block=true max-bytes=0 ") +
                     "max-buffers=4 ! cudamv backend=" + c.backend + " block-size=auto " +
                     "search-range=" + std::to_string(c.range) + " subpel=" + c.subpel +
                     " ! fakesink name=sink sync=false signal-handoffs=true";
  GError* err = nullptr;
  GstElement* pipe = gst_parse_launch(desc.c_str(), &err);
  if (!pipe) {
    fprintf(stderr, "bench-element: %s\n", err ? err->message : "cannot build the pipeline");
    g_clear_error(&err);
    return res;
  }
  if (cuda) {
    GstContext* gctx = gst_context_new_cuda_context(ctx);
    gst_element_set_context(pipe, gctx);
    gst_context_unref(gctx);
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipe), "src");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipe), "sink");
  g_object_set(src, "caps", caps, nullptr);
  SinkCount count;
  g_signal_connect(sink, "handoff", G_CALLBACK(on_handoff), &count);

  const size_t free_before = cuda ? free_device_bytes(ctx) : 0;
  size_t free_during = free_before;
  gst_element_set_state(pipe, GST_STATE_PLAYING);
  for (int i = 0; i < frames; i++) {
    GstBuffer* b = gst_buffer_copy(ring[i % kRing]);  // shares the memory: no pixel copy
    GST_BUFFER_PTS(b) = gst_util_uint64_scale(i, GST_SECOND, 30);
    GST_BUFFER_DURATION(b) = gst_util_uint64_scale(1, GST_SECOND, 30);
    if (gst_app_src_push_buffer(GST_APP_SRC(src), b) != GST_FLOW_OK) break;
    if (cuda && i == kWarmup) free_during = free_device_bytes(ctx);
  }
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  GstBus* bus = gst_element_get_bus(pipe);
  GstMessage* msg = gst_bus_timed_pop_filtered(bus, 600 * GST_SECOND,
                                               GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  if (msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError* e = nullptr;
    gst_message_parse_error(msg, &e, nullptr);
    fprintf(stderr, "bench-element: %s: %s\n", c.label, e ? e->message : "error");
    g_clear_error(&e);
  } else if (msg && count.n > kWarmup) {
    double s = std::chrono::duration<double>(count.t_last - count.t_warm).count();
    res.fps = (count.n - kWarmup) / s;
    res.gpu_mb = free_before > free_during ? double(free_before - free_during) / (1 << 20) : 0;
    res.ok = true;
  }
  if (msg) gst_message_unref(msg);
  gst_object_unref(bus);
  gst_element_set_state(pipe, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(pipe);
  for (GstBuffer* b : ring) gst_buffer_unref(b);
  if (pool) {
    gst_buffer_pool_set_active(pool, FALSE);
    gst_object_unref(pool);
  }
  gst_caps_unref(caps);
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  int frames = 2000, repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--frames")) frames = std::max(kWarmup + 10, atoi(argv[i + 1]));
    if (!strcmp(argv[i], "--repeats")) repeats = std::max(1, atoi(argv[i + 1]));
  }
  if (!gst_cuda_load_library()) {
    fprintf(stderr, "bench-element: no CUDA driver: nothing to measure\n");
    return 1;
  }
  gst_cuda_memory_init_once();
  GstCudaContext* ctx = gst_cuda_context_new(0);
  if (!ctx) {
    fprintf(stderr, "bench-element: no CUDA device 0\n");
    return 1;
  }
  Painting p = load_painting();
  printf("content: %s\n", p.real ? "pan over the Elephants painting" : "hashed noise (no GVC_ELEPHANTS)");

  const Config configs[] = {
      {"1080p r16 integer  cuda", 1920, 1080, 16, "none", "cuda", 0},
      {"1080p r16 quarter  cuda", 1920, 1080, 16, "quarter", "cuda", 0},
      {"1080p r32 integer  cuda", 1920, 1080, 32, "none", "cuda", 0},
      {"2160p r16 integer  cuda", 3840, 2160, 16, "none", "cuda", 0},
      {"2160p r32 integer  cuda", 3840, 2160, 32, "none", "cuda", 0},
      {"1080p r16 integer  cpu ", 1920, 1080, 16, "none", "cpu", kWarmup + 20},
      {"1080p r16 quarter  cpu ", 1920, 1080, 16, "quarter", "cpu", kWarmup + 20},
  };
  printf("%-26s %10s %10s %8s\n", "cudamv element", "fps", "min..max", "GPU MB");
  int failures = 0;
  double gpu_fps[2] = {0, 0}, cpu_fps[2] = {0, 0};
  for (const Config& c : configs) {
    const bool cpu = strcmp(c.backend, "cpu") == 0;
    const int n = c.frames ? c.frames : frames;
    std::vector<double> fps;
    double mb = 0;
    for (int r = 0; r < (cpu ? 1 : repeats); r++) {
      RunResult res = run_once(c, n, ctx, p);
      if (!res.ok) break;
      fps.push_back(res.fps);
      mb = std::max(mb, res.gpu_mb);
    }
    if (fps.empty()) {
      printf("%-26s %10s\n", c.label, "FAILED");
      failures++;
      continue;
    }
    std::sort(fps.begin(), fps.end());
    const double med = fps[fps.size() / 2];
    printf("%-26s %10.1f %4.0f..%-5.0f %8.1f\n", c.label, med, fps.front(), fps.back(), mb);
    if (c.width == 1920 && c.range == 16) {
      const int k = strcmp(c.subpel, "none") == 0 ? 0 : 1;
      (cpu ? cpu_fps : gpu_fps)[k] = med;
    }
  }
  for (int k = 0; k < 2; k++)
    if (gpu_fps[k] > 0 && cpu_fps[k] > 0)
      printf("1080p r16 %s: CUDA / CPU backend = %.0fx\n", k ? "quarter" : "integer",
             gpu_fps[k] / cpu_fps[k]);
  gst_object_unref(ctx);
  return failures ? 1 : 0;
}
