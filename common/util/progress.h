// progress.h: a count one thread advances and others wait on: spin, yield, then sleep in the kernel (a wavefront's rows)
#pragma once

#include <atomic>

namespace gvc {

// Waiters of wait_for() spin for a few microseconds, yield for up to half a millisecond (or
// the time they give), then sleep until set() passes them (a futex on Linux). A wavefront
// whose threads only yielded stalled for milliseconds whenever the thread it waited for was
// preempted: the H.264 decision of a 1080p frame took 15-26 ms instead of 1.5 now and then,
// every core spinning.
class Progress {
 public:
  int get() const { return value_.load(std::memory_order_acquire); }
  // Makes the count v (it only grows) and wakes the sleepers; what the caller wrote before is
  // visible to a thread that saw v.
  void set(int v);
  // Makes the count at least v, for several threads that each know a lower bound of it (rows
  // of a wavefront completing nearly in order); wakes the sleepers when it grew.
  void advance(int v);
  // Returns once the count is at least v, yielding for up to `yield_us` before sleeping.
  // Threads that outnumber the cores (the HEVC decoder's frame lanes) yield less: whatever
  // they spend yielding the threads with work lack.
  void wait_for(int v, int yield_us = kYieldUs) const;
  static constexpr int kYieldUs = 500;

 private:
  std::atomic<int> value_{0};
  mutable std::atomic<int> sleepers_{0};  // waiting is not a change of the count
};

}  // namespace gvc
