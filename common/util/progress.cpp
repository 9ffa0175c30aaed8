// progress.cpp: Progress's wait: spin, yield, then sleep on a futex of the count
#include "common/util/progress.h"

#include <chrono>
#include <climits>
#include <thread>

#include "common/util/futex.h"

namespace gvc {

namespace {

// About 10-30 us of polling (a pause is 40-140 cycles), then up to kYieldUs of yielding,
// then sleep. Most waits of a wavefront end within a macroblock's time; sleeping at once
// made the H.264 decision 1.7 -> 2.4-3.8 ms on the H100 host (a sleeping thread there takes
// tens of microseconds to wake, more on an idle virtual CPU), while only yielding stalled it
// for milliseconds when the thread waited for was preempted.
constexpr int kSpins = 512;

}  // namespace

void Progress::set(int v) {
  value_.store(v, std::memory_order_seq_cst);
  // Seen after the store in the single total order: a waiter that counted itself before
  // this load is woken; one that counts itself later finds v before it sleeps.
  if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake(value_, INT_MAX);
}

void Progress::advance(int v) {
  int seen = value_.load(std::memory_order_relaxed);
  while (seen < v && !value_.compare_exchange_weak(seen, v, std::memory_order_seq_cst)) {
  }
  if (seen >= v) return;
  if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake(value_, INT_MAX);
}

void Progress::wait_for(int v, int yield_us) const {
  for (int i = 0; i < kSpins; i++) {
    if (value_.load(std::memory_order_acquire) >= v) return;
    cpu_relax();
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(yield_us);
  while (std::chrono::steady_clock::now() < until) {
    if (value_.load(std::memory_order_acquire) >= v) return;
    std::this_thread::yield();
  }
  for (;;) {
    const int seen = value_.load(std::memory_order_acquire);
    if (seen >= v) return;
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    // Sleeps only while the count is still `seen` (the kernel checks it atomically).
    if (value_.load(std::memory_order_seq_cst) == seen) futex_wait(value_, seen);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
}

}  // namespace gvc
