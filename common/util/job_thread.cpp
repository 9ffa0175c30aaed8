// job_thread.cpp: the kept thread: jobs in the order queued, tickets counted as they finish
#include "common/util/job_thread.h"

namespace gvc {

JobThread::~JobThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

uint64_t JobThread::push(std::function<void()> job, std::function<void()> enter) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(Job{std::move(job), std::move(enter)});
    ++queued_;
    if (!thread_.joinable()) thread_ = std::thread(&JobThread::loop, this);
  }
  wake_.notify_one();
  return queued_;
}

uint64_t JobThread::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

void JobThread::wait(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return done_ >= ticket; });
}

void JobThread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return quit_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // quit_, and everything queued has run
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    if (job.enter) job.enter();
    job.run();
    lock.lock();
    ++done_;
    finished_.notify_all();
  }
}

}  // namespace gvc
