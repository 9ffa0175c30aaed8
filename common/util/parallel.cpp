// parallel.cpp: the kept worker threads of parallel_for and their queue of loops
#include "common/util/parallel.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace gvc {

namespace {

// One parallel_for call; every field is read and written under Pool::mutex_.
struct Loop {
  const std::function<void(int)>* fn = nullptr;
  int n = 0;
  int next = 0;  // the next index to start
  int done = 0;  // indices returned
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
    std::unique_lock<std::mutex> lock(mutex_);
    loops_.push_back(&loop);
    wake_.notify_all();
    // The caller takes indices of its own loop only, so that it returns as soon as it is done.
    while (loop.next < loop.n) run_one(loop, lock);
    finished_.wait(lock, [&] { return loop.done == loop.n; });
  }

 private:
  // Starts the loop's next index and runs it with the lock released; the loop leaves the queue
  // when its last index starts, so no thread refers to it once every index has returned.
  void run_one(Loop& loop, std::unique_lock<std::mutex>& lock) {
    const int i = loop.next++;
    if (loop.next == loop.n) {
      for (auto it = loops_.begin(); it != loops_.end(); ++it)
        if (*it == &loop) {
          loops_.erase(it);
          break;
        }
    }
    lock.unlock();
    (*loop.fn)(i);
    lock.lock();
    if (++loop.done == loop.n) finished_.notify_all();
  }

  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !loops_.empty(); });
      if (stop_) return;
      run_one(*loops_.front(), lock);
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
