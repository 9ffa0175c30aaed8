// mvdump_test.cpp: runs examples/mv-dump on a small clip made at test time and on bad input
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct DumpRun {
  int status = -1;
  std::string out, err;
};

DumpRun run_mv_dump(std::vector<std::string> args) {
  const char* exe = g_getenv("MV_DUMP");
  DumpRun r;
  if (!exe) return r;
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe));
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  gchar *out = nullptr, *err = nullptr;
  gint wait_status = 0;
  GError* error = nullptr;
  if (g_spawn_sync(nullptr, argv.data(), nullptr, G_SPAWN_DEFAULT, nullptr, nullptr, &out, &err,
                   &wait_status, &error)) {
    r.status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128;
    r.out = out ? out : "";
    r.err = err ? err : "";
  } else {
    r.err = error->message;
    g_error_free(error);
  }
  g_free(out);
  g_free(err);
  return r;
}

// A 5-frame 176x144 clip of a moving ball (MJPEG in AVI, or raw video in Matroska where
// jpegenc is missing, as on the GPU hosts' bundle), in a fresh temporary directory.
std::string make_clip(std::string* dir) {
  gchar* d = g_dir_make_tmp("mvdump-XXXXXX", nullptr);
  *dir = d;
  g_free(d);
  bool jpeg = gst_registry_check_feature_version(gst_registry_get(), "jpegenc", 1, 0, 0) &&
              gst_registry_check_feature_version(gst_registry_get(), "jpegdec", 1, 0, 0);
  std::string path = *dir + (jpeg ? "/ball.avi" : "/ball.mkv");
  std::string desc = std::string("videotestsrc num-buffers=5 pattern=ball ! "
                                 "video/x-raw,format=I420,width=176,height=144,framerate=30/1 ! ") +
                     (jpeg ? "jpegenc ! avimux" : "matroskamux") + " ! filesink location=" + path;
  GstElement* p = gst_parse_launch(desc.c_str(), nullptr);
  if (!p) return "";
  gst_element_set_state(p, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(p);
  GstMessage* msg = gst_bus_timed_pop_filtered(
      bus, 30 * GST_SECOND, (GstMessageType)(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  bool ok = msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS;
  if (msg) gst_message_unref(msg);
  gst_object_unref(bus);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
  return ok ? path : "";
}

}  // namespace

TEST(MvDump, PrintsOneRowPerBlockFromFrameOne) {
  gst_init(nullptr, nullptr);
  ASSERT_NE(g_getenv("MV_DUMP"), nullptr) << "meson sets MV_DUMP to the example's path";
  std::string dir, clip = make_clip(&dir);
  if (clip.empty()) {
    g_remove((dir + "/ball.avi").c_str());
    g_remove((dir + "/ball.mkv").c_str());
    g_rmdir(dir.c_str());
    GTEST_SKIP() << "no muxer here to make a test clip (jpegenc+avimux or matroskamux)";
  }

  for (const char* block : {"16", "8"}) {
    DumpRun r = run_mv_dump({"--backend", "cpu", "--block", block, "--range", "8", "--subpel",
                         "half", clip});
    ASSERT_EQ(r.status, 0) << r.err;
    std::istringstream lines(r.out);
    std::string line;
    ASSERT_TRUE(std::getline(lines, line));
    EXPECT_EQ(line, "frame,x,y,w,h,mvx_qpel,mvy_qpel,cost");
    int b = std::atoi(block);
    std::vector<int> rows_per_frame(5, 0);
    while (std::getline(lines, line)) {
      int frame, x, y, w, h, mvx, mvy;
      unsigned cost;
      ASSERT_EQ(sscanf(line.c_str(), "%d,%d,%d,%d,%d,%d,%d,%u", &frame, &x, &y, &w, &h, &mvx,
                       &mvy, &cost),
                8)
          << line;
      ASSERT_GE(frame, 1) << "frame 0 has no reference and prints no rows";
      ASSERT_LT(frame, 5);
      EXPECT_EQ(w, b);
      EXPECT_EQ(h, b);
      EXPECT_EQ(x % b, 0);
      EXPECT_EQ(y % b, 0);
      // Range 8: integer -8..7, then at most half a pel of refinement.
      EXPECT_LE(std::abs(mvx), 4 * 8 + 2);
      EXPECT_LE(std::abs(mvy), 4 * 8 + 2);
      rows_per_frame[frame]++;
    }
    EXPECT_EQ(rows_per_frame[0], 0);
    for (int f = 1; f < 5; f++) EXPECT_EQ(rows_per_frame[f], (176 / b) * (144 / b)) << f;
  }
  g_remove(clip.c_str());
  g_rmdir(dir.c_str());
}

TEST(MvDump, MissingFileFails) {
  DumpRun r = run_mv_dump({"--backend", "cpu", "/nonexistent/clip.mkv"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("/nonexistent/clip.mkv"), std::string::npos) << r.err;
}

TEST(MvDump, UndecodableFileFails) {
  gchar* path = nullptr;
  gint fd = g_file_open_tmp("mvdump-XXXXXX.bin", &path, nullptr);
  ASSERT_GE(fd, 0);
  std::string junk(4096, '\0');
  for (size_t i = 0; i < junk.size(); i++) junk[i] = char((i * 2654435761u) >> 13);
  ASSERT_EQ(write(fd, junk.data(), junk.size()), ssize_t(junk.size()));
  close(fd);
  DumpRun r = run_mv_dump({"--backend", "cpu", path});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("mv-dump:"), std::string::npos) << r.err;
  g_remove(path);
  g_free(path);
}

TEST(MvDump, BadOptionsFail) {
  EXPECT_NE(run_mv_dump({"--block", "7", "x.avi"}).status, 0);
  EXPECT_NE(run_mv_dump({"--range", "100", "x.avi"}).status, 0);
  EXPECT_NE(run_mv_dump({}).status, 0);
}
