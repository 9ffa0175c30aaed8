// parallel.cpp: the kept worker threads of parallel_for and their queue of loops
#include "common/util/parallel.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace gvc {

namespace {

// One parallel_for call. Indices are claimed without the lock; `users` (the threads working
// on the loop, the caller included) is read and written under Pool::mutex_.
struct Loop {
  const std::function<void(int)>* fn = nullptr;
  int n = 0;
  std::atomic<int> next{0};
  int users = 0;
};

class Pool {
 public:
  Pool() {
    const unsigned cores = std::thread::hardware_concurrency();
    for (unsigned i = 1; i < (cores ? cores : 1); i++) workers_.emplace_back([this] { work(); });
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  int threads() const { return int(workers_.size()) + 1; }

  void run(int n, const std::function<void(int)>& fn) {
    Loop loop;
    loop.fn = &fn;
    loop.n = n;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      loops_.push_back(&loop);
      loop.users = 1;
    }
    wake_.notify_all();
    claim_all(loop);
    std::unique_lock<std::mutex> lock(mutex_);
    unqueue(loop);
    // Every index is claimed; those of other threads are done once they leave the loop.
    loop.users--;
    finished_.wait(lock, [&] { return loop.users == 0; });
  }

 private:
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

  void work() {
    for (;;) {
      // No spin before sleeping: a worker that spun (4,000 yields) between a frame's loops
      // doubled the encoder's CPU time (10 -> 5 core-s over 120 1080p frames on 16 cores) and
      // bought no speed, one encoder or sixteen.
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !loops_.empty(); });
      if (stop_) return;
      Loop& loop = *loops_.front();
      if (loop.next.load(std::memory_order_relaxed) >= loop.n) {
        unqueue(loop);  // nothing left to claim; its users finish it
        continue;
      }
      loop.users++;
      lock.unlock();
      claim_all(loop);
      lock.lock();
      if (--loop.users == 0) finished_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::deque<Loop*> loops_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
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
