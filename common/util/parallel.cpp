// parallel.cpp: the kept worker threads of parallel_for, their queue of loops, and how they are woken
#include "common/util/parallel.h"

#include <atomic>
#include <climits>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "common/util/futex.h"

namespace gvc {

namespace {

// The queue's lock: its holders only look at the front loop and count themselves in. A
// std::mutex here handed itself from one woken worker to the next, each woken in turn when the
// last let go: 15 wake-ups in series (tens of microseconds each on an idle virtual CPU), and
// the H.264 decision's wavefront saw its 16th thread start 190-354 µs after the first.
class SpinLock {
 public:
  void lock() {
    for (int spins = 0; flag_.exchange(true, std::memory_order_acquire);) {
      while (flag_.load(std::memory_order_relaxed)) {
        if (++spins < 1024)
          cpu_relax();
        else
          std::this_thread::yield();  // its holder lost its core
      }
    }
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

// One parallel_for call, on its caller's stack. Indices are claimed without the lock. `users`
// (the threads working on the loop, the caller included) grows under Pool::lock_ while the loop
// is queued; it shrinks without it.
struct Loop {
  const std::function<void(int)>* fn = nullptr;
  int n = 0;
  std::atomic<int> next{0};
  std::atomic<int> users{0};
};

// Workers sleep on `queued_`, a count of the loops ever queued, and all wake at once when it
// changes; callers whose workers are still busy sleep on `finished_`, a count of the loops whose
// last worker left. Both counts live as long as the pool, so a worker never touches a loop, or
// wakes through one, once its caller may have returned.
class Pool {
 public:
  Pool() {
    const unsigned cores = std::thread::hardware_concurrency();
    for (unsigned i = 1; i < (cores ? cores : 1); i++) workers_.emplace_back([this] { work(); });
  }

  ~Pool() {
    {
      std::lock_guard<SpinLock> g(lock_);
      stop_ = true;
    }
    queued_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(queued_, INT_MAX);
    for (std::thread& t : workers_) t.join();
  }

  int threads() const { return int(workers_.size()) + 1; }

  void run(int n, const std::function<void(int)>& fn) {
    Loop loop;
    loop.fn = &fn;
    loop.n = n;
    loop.users.store(1, std::memory_order_relaxed);
    {
      std::lock_guard<SpinLock> g(lock_);
      loops_.push_back(&loop);
    }
    // Seen after the count in the single total order: a worker that counted itself asleep
    // before this load is woken; one that counts itself later finds the count changed.
    queued_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake(queued_, n - 1);
    claim_all(loop);
    {
      std::lock_guard<SpinLock> g(lock_);
      unqueue(loop);  // no worker joins it from here on
    }
    // Every index is claimed; those of other threads are done once they leave the loop.
    if (loop.users.fetch_sub(1, std::memory_order_acq_rel) == 1) return;
    for (int spins = 0;;) {
      const int seen = finished_.load(std::memory_order_seq_cst);
      if (loop.users.load(std::memory_order_acquire) == 0) return;
      if (spins < kSpins) {  // the other indices usually end together with the caller's
        spins++;
        cpu_relax();
        continue;
      }
      waiting_.fetch_add(1, std::memory_order_seq_cst);
      if (finished_.load(std::memory_order_seq_cst) == seen) futex_wait(finished_, seen);
      waiting_.fetch_sub(1, std::memory_order_relaxed);
    }
  }

 private:
  static constexpr int kSpins = 512;  // about 10-30 us, as Progress's

  static void claim_all(Loop& loop) {
    for (int i; (i = loop.next.fetch_add(1, std::memory_order_relaxed)) < loop.n;) (*loop.fn)(i);
  }

  void unqueue(Loop& loop) {
    for (auto it = loops_.begin(); it != loops_.end(); ++it)
      if (*it == &loop) {
        loops_.erase(it);
        return;
      }
  }

  // The first queued loop with indices left, counted as used, or null; null and `stop` when
  // the pool ends.
  Loop* join(bool& stop) {
    std::lock_guard<SpinLock> g(lock_);
    stop = stop_;
    if (stop) return nullptr;
    // Loops with nothing left to claim leave the queue; their users finish them.
    while (!loops_.empty() && loops_.front()->next.load(std::memory_order_relaxed) >= loops_.front()->n)
      loops_.pop_front();
    if (loops_.empty()) return nullptr;
    Loop* loop = loops_.front();
    loop->users.fetch_add(1, std::memory_order_relaxed);
    return loop;
  }

  void work() {
    for (;;) {
      const int seen = queued_.load(std::memory_order_seq_cst);
      bool stop = false;
      Loop* loop = join(stop);
      if (stop) return;
      if (!loop) {
        // No spin before sleeping: a worker that spun (4,000 yields) between a frame's loops
        // doubled the encoder's CPU time (10 -> 5 core-s over 120 1080p frames on 16 cores)
        // and bought no speed, one encoder or sixteen. Neither did spinning only when woken
        // ahead of the decision's wavefront (during the SATD caches' download): it took cores
        // from the last frame's entropy coding, and the P frame lost 0.05-0.2 ms.
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        if (queued_.load(std::memory_order_seq_cst) == seen) futex_wait(queued_, seen);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        continue;
      }
      claim_all(*loop);
      // The loop may be gone as soon as the count reaches 0: only the pool's counts after it.
      if (loop->users.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        finished_.fetch_add(1, std::memory_order_seq_cst);
        if (waiting_.load(std::memory_order_seq_cst) > 0) futex_wake(finished_, INT_MAX);
      }
    }
  }

  SpinLock lock_;
  std::deque<Loop*> loops_;  // under lock_
  bool stop_ = false;        // under lock_
  std::atomic<int> queued_{0}, sleepers_{0};   // the workers' futex and how many sleep on it
  std::atomic<int> finished_{0}, waiting_{0};  // the callers' futex and how many sleep on it
  std::vector<std::thread> workers_;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void parallel_for(int n, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  if (n == 1) {
    fn(0);
    return;
  }
  pool().run(n, fn);
}

int parallel_threads() { return pool().threads(); }

}  // namespace gvc
