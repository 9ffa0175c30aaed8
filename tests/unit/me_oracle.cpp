// me_oracle.cpp: test-side oracles for motion search (naive brute force, 8.4.2.2.1 read directly)
#include "tests/unit/me_oracle.h"

#include <gtest/gtest.h>
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <sstream>

namespace gvc_test {

using gvc::MvCost;
using gvc::PlaneView;

std::vector<uint32_t> test_seeds(std::vector<uint32_t> defaults) {
  if (const char* s = std::getenv("GVC_TEST_SEED")) return {uint32_t(std::strtoul(s, nullptr, 0))};
  return defaults;
}

Plane random_plane(std::mt19937& rng, int w, int h, int levels) {
  Plane p(w, h);
  std::uniform_int_distribution<int> d(0, levels - 1);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      p.at(x, y) = uint8_t(levels >= 256 ? d(rng) : d(rng) * 255 / (levels - 1));
  return p;
}

Plane textured_plane(std::mt19937& rng, int w, int h) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  struct Wave { double fx, fy, ph, amp; };
  std::vector<Wave> waves;
  for (int i = 0; i < 6; i++)
    waves.push_back({0.05 + 0.6 * u(rng), 0.05 + 0.6 * u(rng), 6.283 * u(rng), 10 + 20 * u(rng)});
  std::uniform_int_distribution<int> noise(-6, 6);
  Plane p(w, h);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      double v = 128;
      for (const Wave& wv : waves) v += wv.amp * std::cos(wv.fx * x + wv.fy * y + wv.ph);
      p.at(x, y) = uint8_t(std::clamp(int(std::lround(v)) + noise(rng), 0, 255));
    }
  return p;
}

Plane shifted_plane(const Plane& src, int dx, int dy, std::mt19937& rng, int noise) {
  Plane p(src.width, src.height);
  std::uniform_int_distribution<int> n(-noise, noise);
  PlaneView v = src.view();
  for (int y = 0; y < p.height; y++)
    for (int x = 0; x < p.width; x++) {
      int s = gvc::sample_clamped(v, x - dx, y - dy) + (noise ? n(rng) : 0);
      p.at(x, y) = uint8_t(std::clamp(s, 0, 255));
    }
  return p;
}

namespace {

uint8_t clip1(int v) { return uint8_t(std::clamp(v, 0, 255)); }

}  // namespace

uint8_t spec_luma_sample(const PlaneView& ref, int x, int y, int fx, int fy) {
  // Integer samples around G = ref(x, y), edge-clamped (8-228/8-229).
  auto S = [&](int i, int j) { return int(gvc::sample_clamped(ref, x + i, y + j)); };
  // 6-tap intermediates (8-241..8-244): b1 of row r (between column 0 and 1), h1 of column c.
  auto b1 = [&](int r) {
    return S(-2, r) - 5 * S(-1, r) + 20 * S(0, r) + 20 * S(1, r) - 5 * S(2, r) + S(3, r);
  };
  auto h1 = [&](int c) {
    return S(c, -2) - 5 * S(c, -1) + 20 * S(c, 0) + 20 * S(c, 1) - 5 * S(c, 2) + S(c, 3);
  };
  const int G = S(0, 0), H = S(1, 0), M = S(0, 1);
  const int b = clip1((b1(0) + 16) >> 5);  // 8-245
  const int h = clip1((h1(0) + 16) >> 5);  // 8-246
  const int s = clip1((b1(1) + 16) >> 5);  // b of the row below
  const int m = clip1((h1(1) + 16) >> 5);  // h of the column to the right
  // 8-247/8-248: j from the vertical 6-tap over the unrounded b1 of rows -2..3.
  const int j1 = b1(-2) - 5 * b1(-1) + 20 * b1(0) + 20 * b1(1) - 5 * b1(2) + b1(3);
  const int j = clip1((j1 + 512) >> 10);
  // 8-250..8-261: quarter samples are rounded averages of the two nearest samples.
  const int a = (G + b + 1) >> 1, c = (H + b + 1) >> 1;
  const int d = (G + h + 1) >> 1, n = (M + h + 1) >> 1;
  const int f = (b + j + 1) >> 1, i = (h + j + 1) >> 1;
  const int k = (j + m + 1) >> 1, q = (j + s + 1) >> 1;
  const int e = (b + h + 1) >> 1, g = (b + m + 1) >> 1;
  const int p = (h + s + 1) >> 1, r = (m + s + 1) >> 1;
  // Table 8-12, indexed [xFracL][yFracL].
  const int table[4][4] = {{G, d, h, n}, {a, e, i, p}, {b, f, j, q}, {c, g, k, r}};
  return uint8_t(table[fx][fy]);
}

int ref_sample_qpel(const PlaneView& ref, int x, int y, int vx, int vy) {
  // Arithmetic shifts floor negative vectors, so the fraction is always 0..3.
  int ix = x + (vx >> 2), iy = y + (vy >> 2), fx = vx & 3, fy = vy & 3;
  if (fx == 0 && fy == 0) return gvc::sample_clamped(ref, ix, iy);
  return gvc::luma_qpel_sample(ref, ix, iy, fx, fy);
}

uint32_t partition_sad(const PlaneView& cur, const PlaneView& ref, int mbx, int mby, int part,
                       int vx, int vy) {
  gvc::PartitionGeometry g = gvc::partition_geometry(part);
  uint32_t sad = 0;
  for (int yy = 0; yy < g.h; yy++)
    for (int xx = 0; xx < g.w; xx++) {
      int x = 16 * mbx + g.x + xx, y = 16 * mby + g.y + yy;
      int c = gvc::sample_clamped(cur, x, y);
      int r = ref_sample_qpel(ref, x, y, vx, vy);
      sad += uint32_t(std::abs(c - r));
    }
  return sad;
}

uint32_t partition_cost(const PlaneView& cur, const PlaneView& ref, int mbx, int mby, int part,
                        int vx, int vy, uint32_t lambda, int px, int py) {
  return partition_sad(cur, ref, mbx, mby, part, vx, vy) +
         lambda * gvc::mv_cost_bits(vx, vy, px, py);
}

bool better(const MvCost& a, const MvCost& b) {
  if (a.cost != b.cost) return a.cost < b.cost;
  int la = a.mvx * a.mvx + a.mvy * a.mvy, lb = b.mvx * b.mvx + b.mvy * b.mvy;
  if (la != lb) return la < lb;
  if (a.mvy != b.mvy) return a.mvy < b.mvy;
  return a.mvx < b.mvx;
}

MvCost naive_partition_search(const PlaneView& cur, const PlaneView& ref, int mbx, int mby,
                              int part, const gvc::MeParams& params) {
  const int mb_cols = gvc::mb_count(cur.width);
  int px = 0, py = 0;
  if (params.predictors) {
    px = params.predictors[mby * mb_cols + mbx].mvx;
    py = params.predictors[mby * mb_cols + mbx].mvy;
  }
  const gvc::PartitionGeometry g = gvc::partition_geometry(part);
  const int R = params.range;
  MvCost best{0, 0, UINT32_MAX};
  bool have = false;
  for (int dy = -R; dy <= R - 1; dy++)
    for (int dx = -R; dx <= R - 1; dx++) {
      uint32_t sad = 0;
      for (int yy = 0; yy < g.h; yy++)
        for (int xx = 0; xx < g.w; xx++) {
          int x = 16 * mbx + g.x + xx, y = 16 * mby + g.y + yy;
          sad += uint32_t(std::abs(int(gvc::sample_clamped(cur, x, y)) -
                                   int(gvc::sample_clamped(ref, x + dx, y + dy))));
        }
      MvCost c{int16_t(4 * dx), int16_t(4 * dy),
               sad + params.lambda * gvc::mv_cost_bits(4 * dx, 4 * dy, px, py)};
      if (!have || better(c, best)) best = c;
      have = true;
    }
  // Refinement: the centre and its 8 neighbours at distance `step` (2 = half, 1 = quarter).
  auto refine = [&](int step) {
    MvCost centre = best;
    for (int sy = -1; sy <= 1; sy++)
      for (int sx = -1; sx <= 1; sx++) {
        if (!sx && !sy) continue;
        int vx = centre.mvx + step * sx, vy = centre.mvy + step * sy;
        MvCost c{int16_t(vx), int16_t(vy),
                 partition_cost(cur, ref, mbx, mby, part, vx, vy, params.lambda, px, py)};
        if (better(c, best)) best = c;
      }
  };
  if (params.subpel != gvc::Subpel::None) refine(2);
  if (params.subpel == gvc::Subpel::Quarter) refine(1);
  return best;
}

std::vector<gvc::MbPartitions> cpu_search(const PlaneView& cur, const PlaneView& ref,
                                          const gvc::MeParams& params) {
  gvc::MbPartitionField f;
  f.mb_cols = gvc::mb_count(cur.width);
  f.mb_rows = gvc::mb_count(cur.height);
  std::vector<gvc::MbPartitions> out(size_t(f.mb_cols) * f.mb_rows);
  // Poison, so that an unwritten partition shows.
  std::memset(out.data(), 0x5A, out.size() * sizeof(out[0]));
  f.data = out.data();
  gvc::Status st = gvc::make_cpu_motion_search()->run(cur, ref, params, f);
  if (!st.ok()) {
    ADD_FAILURE() << "MotionSearch::run failed: " << st.message();
    out.clear();
  }
  return out;
}

std::string describe(const MvCost& m) {
  std::ostringstream os;
  os << "(" << m.mvx << "," << m.mvy << " cost " << m.cost << ")";
  return os.str();
}

const Plane& elephants_gray(std::string* why) {
  static std::once_flag once;
  static Plane plane;
  static std::string error;
  std::call_once(once, [] {
    const char* path = "/usr/share/backgrounds/mate/abstract/Elephants_5640x3172.jpg";
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
      error = std::string(path) + " is missing (Debian package mate-backgrounds)";
      return;
    }
    gst_init(nullptr, nullptr);
    GError* err = nullptr;
    std::string desc = std::string("filesrc location=") + path +
                       " ! jpegdec ! videoconvert ! video/x-raw,format=GRAY8 ! appsink name=sink";
    GstElement* pipe = gst_parse_launch(desc.c_str(), &err);
    if (!pipe) {
      error = std::string("cannot build the decode pipeline: ") + (err ? err->message : "?");
      g_clear_error(&err);
      return;
    }
    GstElement* sink = gst_bin_get_by_name(GST_BIN(pipe), "sink");
    gst_element_set_state(pipe, GST_STATE_PLAYING);
    GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 60 * GST_SECOND);
    if (!sample) {
      error = "the decode pipeline gave no frame";
    } else {
      GstVideoInfo info;
      GstBuffer* buf = gst_sample_get_buffer(sample);
      GstMapInfo map;
      if (gst_video_info_from_caps(&info, gst_sample_get_caps(sample)) &&
          gst_buffer_map(buf, &map, GST_MAP_READ)) {
        Plane p(GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info), 0);
        const int src_stride = GST_VIDEO_INFO_PLANE_STRIDE(&info, 0);
        const size_t off = GST_VIDEO_INFO_PLANE_OFFSET(&info, 0);
        for (int y = 0; y < p.height; y++)
          std::memcpy(&p.at(0, y), map.data + off + size_t(y) * src_stride, p.width);
        gst_buffer_unmap(buf, &map);
        plane = std::move(p);
      } else {
        error = "cannot read the decoded frame";
      }
      gst_sample_unref(sample);
    }
    gst_element_set_state(pipe, GST_STATE_NULL);
    gst_object_unref(sink);
    gst_object_unref(pipe);
  });
  if (why) *why = error;
  return plane;
}

}  // namespace gvc_test
