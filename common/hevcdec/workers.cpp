// workers.cpp: the decoder's kept threads: one job at a time, run on the first n of them
#include "common/hevcdec/workers.h"

#include <system_error>

namespace gvc::hevc {

Workers::~Workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void Workers::loop(int index) {
  unsigned seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return quit_ || generation_ != seen; });
    if (quit_) return;
    seen = generation_;
    if (index >= wanted_) continue;  // this job needs fewer threads
    const std::function<void()>* job = job_;
    lock.unlock();
    (*job)();
    lock.lock();
    if (--running_ == 0) finished_.notify_one();
  }
}

void Workers::run(int n, const std::function<void()>& job) {
  if (n > max_threads_) n = max_threads_;
  std::unique_lock<std::mutex> lock(mutex_);
  while (int(threads_.size()) < n - 1) {
    try {
      threads_.emplace_back(&Workers::loop, this, int(threads_.size()));
    } catch (const std::system_error&) {
      break;  // no more threads to be had: those running take the work
    }
  }
  wanted_ = n - 1 < int(threads_.size()) ? n - 1 : int(threads_.size());
  running_ = wanted_;
  job_ = &job;
  ++generation_;
  lock.unlock();
  wake_.notify_all();
  job();
  lock.lock();
  finished_.wait(lock, [&] { return running_ == 0; });
  job_ = nullptr;
}

}  // namespace gvc::hevc
