// progress_test.cpp: Progress's waiters return once the count passes them, see what was written before it, and wake from sleep
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/util/progress.h"

namespace gvc {
namespace {

// A producer fills a table and counts up; consumers wait for every entry in turn and read it:
// what was written before set() is seen by whoever saw the count.
TEST(Progress, WaitersSeeWhatWasWrittenBeforeTheCount) {
  const int n = 20000;
  std::vector<int> table(static_cast<size_t>(n), -1);
  Progress done;
  std::vector<std::thread> consumers;
  std::vector<int> wrong(4, 0);
  for (int c = 0; c < 4; c++)
    consumers.emplace_back([&, c] {
      for (int i = 0; i < n; i++) {
        done.wait_for(i + 1);
        wrong[size_t(c)] += table[size_t(i)] != 3 * i;
      }
    });
  for (int i = 0; i < n; i++) {
    table[size_t(i)] = 3 * i;
    done.set(i + 1);
  }
  for (std::thread& t : consumers) t.join();
  for (int c = 0; c < 4; c++) EXPECT_EQ(wrong[size_t(c)], 0) << "consumer " << c;
  EXPECT_EQ(done.get(), n);
}

// Waiters long past their spin (asleep in the kernel) are woken by a later set(), and one
// that waits for a count already reached returns at once.
TEST(Progress, SleepingWaitersAreWoken) {
  Progress p;
  std::vector<std::thread> waiters;
  std::atomic<int> woke[3] = {{0}, {0}, {0}};
  for (int w = 0; w < 3; w++)
    waiters.emplace_back([&, w] {
      p.wait_for(w + 1);
      woke[w] = 1;
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int w = 0; w < 3; w++) EXPECT_EQ(woke[w].load(), 0) << "waiter " << w << " returned early";
  p.set(1);
  p.set(3);
  for (std::thread& t : waiters) t.join();
  for (int w = 0; w < 3; w++) EXPECT_EQ(woke[w].load(), 1);
  p.wait_for(2);  // already passed
}

}  // namespace
}  // namespace gvc
