// sampler.cpp: an LD_PRELOAD sampling profiler (SIGPROF, call stacks) for hosts without perf
//
//   GVC_PROF_OUT=/tmp/p LD_PRELOAD=BUILD/tools/libgvc-sampler.so gst-launch-1.0 ...
//   python3 tools/prof/report.py /tmp/p.PID [--lib DIR ...]
//
// A timer on the process's CPU time (timer_create on CLOCK_PROCESS_CPUTIME_ID, GVC_PROF_US
// microseconds, default 1000; unlike ITIMER_PROF it does not outlive an exec, whose program
// would die of the signal) signals whichever thread is using the CPU; the handler stores that
// thread's name and call stack. backtrace() in a signal handler relies on the lock-free
// unwinder lookup of glibc >= 2.35 with libgcc >= 12 (Debian bookworm has both).
// At exit every sample is written to GVC_PROF_OUT.PID (each process its own file: the variable
// reaches every process started with it, a shell pipeline's too), one line per sample: thread name, then each frame as module+offset
// (resolved with dladdr), which report.py symbolizes with addr2line against the same files.
// Only CPU time is sampled: a thread blocked in the kernel is not counted, a spinning one is.
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <time.h>
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
pid_t owner = 0;  // a child forked without exec inherits the samples: only this process writes
timer_t timer{};

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

void write_frame(FILE* f, void* pc, bool return_address) {
  Dl_info info;
  // a return address: the call is the byte before it
  void* at = static_cast<char*>(pc) - (return_address ? 1 : 0);
  if (dladdr(at, &info) && info.dli_fname) {
    const char* name = std::strrchr(info.dli_fname, '/');
    std::fprintf(f, " %s+0x%lx", name ? name + 1 : info.dli_fname,
                 static_cast<unsigned long>(static_cast<char*>(at) - static_cast<char*>(info.dli_fbase)));
  } else {
    std::fprintf(f, " ?+%p", at);
  }
}

__attribute__((destructor)) void write_samples() {
  if (!samples || getpid() != owner) return;
  timer_delete(timer);
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
    std::fprintf(f, "%-15.15s;", s.thread);  // padded: a name may hold a ;
    // frames 0-1 are this handler and the signal trampoline; frame 2 is the interrupted
    // instruction itself, the others return addresses
    for (int d = 2; d < s.depth; ++d) write_frame(f, s.pc[d], d > 2);
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
  owner = getpid();
  const char* us = std::getenv("GVC_PROF_US");
  const long period = us ? std::max(100L, std::atol(us)) : 1000L;
  sigevent ev{};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGPROF;
  if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &timer) != 0) return;
  itimerspec t{};
  t.it_interval.tv_sec = period / 1000000;
  t.it_interval.tv_nsec = period % 1000000 * 1000;
  t.it_value = t.it_interval;
  timer_settime(timer, 0, &t, nullptr);
}

}  // namespace
