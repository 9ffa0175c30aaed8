// sampler.cpp: an LD_PRELOAD sampling profiler (SIGPROF, call stacks) for hosts without perf
//
//   GVC_PROF_OUT=/tmp/p LD_PRELOAD=BUILD/tools/libgvc-sampler.so gst-launch-1.0 ...
//   python3 tools/prof/report.py /tmp/p.PID [--lib DIR ...]
//
// The process's CPU-time timer (ITIMER_PROF, GVC_PROF_US microseconds, default 1000) signals
// whichever thread is using the CPU; the handler stores that thread's name and call stack.
// At exit every sample is written to GVC_PROF_OUT.PID (each process its own file: the variable
// reaches every process started with it, a shell pipeline's too), one line per sample: thread name, then each frame as module+offset
// (resolved with dladdr), which report.py symbolizes with addr2line against the same files.
// Only CPU time is sampled: a thread blocked in the kernel is not counted, a spinning one is.
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kDepth = 28;
constexpr size_t kCapacity = 400000;  // 16 threads x 1 kHz x 25 s

struct Sample {
  char thread[16];
  int depth;
  void* pc[kDepth];
};

Sample* samples = nullptr;
std::atomic<size_t> taken{0};
const char* out_path = nullptr;

void on_sigprof(int, siginfo_t*, void*) {
  const int saved_errno = errno;
  const size_t i = taken.fetch_add(1, std::memory_order_relaxed);
  if (i < kCapacity) {
    Sample& s = samples[i];
    prctl(PR_GET_NAME, s.thread, 0, 0, 0);
    s.depth = backtrace(s.pc, kDepth);
  }
  errno = saved_errno;
}

void write_frame(FILE* f, void* pc) {
  Dl_info info;
  // a return address: the call is the byte before it
  void* at = static_cast<char*>(pc) - 1;
  if (dladdr(at, &info) && info.dli_fname) {
    const char* name = std::strrchr(info.dli_fname, '/');
    std::fprintf(f, " %s+0x%lx", name ? name + 1 : info.dli_fname,
                 static_cast<unsigned long>(static_cast<char*>(at) - static_cast<char*>(info.dli_fbase)));
  } else {
    std::fprintf(f, " ?+%p", at);
  }
}

__attribute__((destructor)) void write_samples() {
  if (!samples) return;
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
  signal(SIGPROF, SIG_IGN);
  const size_t n = std::min(taken.load(), kCapacity);
  if (!n) return;
  char path[4096];
  std::snprintf(path, sizeof(path), "%s.%d", out_path, int(getpid()));
  FILE* f = std::fopen(path, "w");
  if (!f) return;
  std::fprintf(f, "# samples %zu of %zu, every %s us of CPU time\n", n, taken.load(),
               std::getenv("GVC_PROF_US") ? std::getenv("GVC_PROF_US") : "1000");
  for (size_t i = 0; i < n; ++i) {
    const Sample& s = samples[i];
    std::fprintf(f, "%.16s;", s.thread);
    // frames 0-1 are this handler and the signal trampoline
    for (int d = 2; d < s.depth; ++d) write_frame(f, s.pc[d]);
    std::fputc('\n', f);
  }
  std::fclose(f);
}

__attribute__((constructor)) void start_sampling() {
  out_path = std::getenv("GVC_PROF_OUT");
  if (!out_path || !*out_path) return;
  samples = static_cast<Sample*>(std::calloc(kCapacity, sizeof(Sample)));
  if (!samples) return;
  void* warm[2];
  backtrace(warm, 2);  // loads the unwinder now, not inside the handler
  struct sigaction sa {};
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPROF, &sa, nullptr);
  const char* us = std::getenv("GVC_PROF_US");
  const long period = us ? std::max(100L, std::atol(us)) : 1000L;
  itimerval t{};
  t.it_interval.tv_usec = period;
  t.it_value.tv_usec = period;
  setitimer(ITIMER_PROF, &t, nullptr);
}

}  // namespace
