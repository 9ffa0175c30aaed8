// futex.cpp: futex_wait and futex_wake on an atomic int (FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE; Linux only)
#include "common/util/futex.h"

#if !defined(__linux__)
// A yield in their place would leave parallel_for's idle workers spinning (they sleep in
// futex_wait); the project builds for Linux only (Debian bookworm).
#error "common/util/futex.cpp needs Linux futexes"
#endif

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gvc {

void futex_wait(const std::atomic<int>& word, int seen) {
  syscall(SYS_futex, reinterpret_cast<const int*>(&word), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
}

void futex_wake(const std::atomic<int>& word, int count) {
  syscall(SYS_futex, reinterpret_cast<const int*>(&word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

}  // namespace gvc
