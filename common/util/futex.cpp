// futex.cpp: futex_wait and futex_wake on an atomic int (FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE)
#include "common/util/futex.h"

#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
// The yield below would leave parallel_for's idle workers spinning (they sleep in futex_wait);
// the project builds for Linux only (Debian bookworm).
#error "common/util/futex.cpp needs Linux futexes"
#endif

namespace gvc {

void futex_wait(const std::atomic<int>& word, int seen) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<const int*>(&word), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
#else
  (void)word;
  (void)seen;
  std::this_thread::yield();
#endif
}

void futex_wake(const std::atomic<int>& word, int count) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<const int*>(&word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
#else
  (void)word;
  (void)count;
#endif
}

}  // namespace gvc
