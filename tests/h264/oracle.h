// oracle.h: test helpers that run the ffmpeg executable (decoder oracle, test-clip extraction)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gvc::test {

// Path of the ffmpeg executable: $FFMPEG, else the first "ffmpeg" on $PATH; empty if none.
std::string find_ffmpeg();

// The test clip: $GVC_TEST_CLIP, else opencv-doc's vtest.avi; empty if neither exists.
std::string find_test_clip();

// A fresh directory under $TMPDIR (or /tmp), removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct RunResult {
  int exit_code = -1;
  std::string stderr_text;
};

// Runs argv (no shell) with stdin from /dev/null and stdout to `stdout_path` (or /dev/null).
RunResult run_command(const std::vector<std::string>& argv, const std::string& stdout_path = "");

bool read_file(const std::string& path, std::vector<uint8_t>& out);
bool write_file(const std::string& path, const std::vector<uint8_t>& data);

}  // namespace gvc::test
