// parallel_test.cpp: parallel_for runs every index once, in loops nested and called from several threads at once, lets an index wait for a lower one, and returns after the last
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/util/parallel.h"

namespace gvc {
namespace {

TEST(Parallel, EveryIndexOnce) {
  for (const int n : {0, 1, 2, 7, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    for (auto& h : hits) h = 0;
    parallel_for(n, [&](int i) { hits[size_t(i)]++; });
    for (int i = 0; i < n; i++) EXPECT_EQ(hits[size_t(i)].load(), 1) << "n " << n << " index " << i;
  }
  EXPECT_GE(parallel_threads(), 1);
}

// A wavefront: index i waits until index i - 1 has passed its first half. It finishes only if
// indices start in order and a started one is always running.
TEST(Parallel, AnIndexMayWaitForALowerOne) {
  const int n = 64;
  std::vector<std::atomic<int>> stage(static_cast<size_t>(n));
  for (auto& s : stage) s = 0;
  parallel_for(n, [&](int i) {
    if (i > 0)
      while (stage[size_t(i - 1)].load() < 1) std::this_thread::yield();
    stage[size_t(i)] = 1;
    if (i > 0)
      while (stage[size_t(i - 1)].load() < 2) std::this_thread::yield();
    stage[size_t(i)] = 2;
  });
  for (int i = 0; i < n; i++) EXPECT_EQ(stage[size_t(i)].load(), 2);
}

// The caller runs out of indices long before a worker's index ends: it sleeps until the last
// worker leaves, then sees everything the workers wrote (plain ints, no atomics).
TEST(Parallel, TheCallerWaitsForItsWorkersAndSeesTheirWrites) {
  for (int rep = 0; rep < 5; rep++) {
    const int n = 2 * parallel_threads();
    std::vector<int> written(static_cast<size_t>(n), 0);
    parallel_for(n, [&](int i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(i == n - 1 ? 30 : 2));
      written[size_t(i)] = i + 1;
    });
    for (int i = 0; i < n; i++) ASSERT_EQ(written[size_t(i)], i + 1) << "rep " << rep << " index " << i;
  }
}

// Loops inside loops, and loops from eight threads at once (16 encoders in one process share
// the workers): every index of every loop runs once.
TEST(Parallel, NestedAndConcurrentLoops) {
  std::atomic<long> sum{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 8; c++) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 20; rep++)
        parallel_for(10, [&](int i) { parallel_for(10, [&](int j) { sum += i * 10 + j; }); });
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(sum.load(), 8L * 20 * (99 * 100 / 2));
}

}  // namespace
}  // namespace gvc
