// futex.h: sleep while an atomic int still holds a value, and wake its sleepers (a Linux futex)
#pragma once

#include <atomic>

namespace gvc {

static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free,
              "a futex waits on an atomic int's storage as a plain int");

// Sleeps while `word` holds `seen` (the kernel checks it atomically with going to sleep); may
// return early, so callers wait in a loop on their own condition.
void futex_wait(const std::atomic<int>& word, int seen);
// Wakes up to `count` threads sleeping in futex_wait on `word`.
void futex_wake(const std::atomic<int>& word, int count);

// A pause in a spin loop.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace gvc
