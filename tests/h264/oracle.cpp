// oracle.cpp: test helpers that run the ffmpeg executable (decoder oracle, test-clip extraction)
#include "tests/h264/oracle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace gvc::test {

std::string find_ffmpeg() {
  if (const char* env = std::getenv("FFMPEG"); env && *env) return access(env, X_OK) == 0 ? env : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/ffmpeg";
    if (end > start && access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

std::string find_test_clip() {
  if (const char* env = std::getenv("GVC_TEST_CLIP"); env && *env && access(env, R_OK) == 0) return env;
  const char* fallback = "/usr/share/doc/opencv-doc/examples/data/vtest.avi";
  return access(fallback, R_OK) == 0 ? fallback : "";
}

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/gvc-h264-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data())) path_ = buf.data();
}

TempDir::~TempDir() {
  if (!path_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
}

RunResult run_command(const std::vector<std::string>& argv, const std::string& stdout_path) {
  RunResult result;
  int err_pipe[2];
  if (pipe(err_pipe) != 0) return result;
  pid_t pid = fork();
  if (pid < 0) return result;
  if (pid == 0) {
    int in = open("/dev/null", O_RDONLY);
    int out = stdout_path.empty() ? open("/dev/null", O_WRONLY)
                                  : open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err_pipe[1], 2);
    close(err_pipe[0]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(err_pipe[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(err_pipe[0], buf, sizeof(buf))) > 0) result.stderr_text.append(buf, size_t(n));
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

bool read_file(const std::string& path, std::vector<uint8_t>& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

bool write_file(const std::string& path, const std::vector<uint8_t>& data) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
  return bool(f);
}

}  // namespace gvc::test
