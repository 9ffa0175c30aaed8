// job_thread.h: one kept thread running jobs in the order they were queued, each with a ticket to wait for (the HEVC decoder's reconstruction behind its parse, the H.264 encoder's entropy coding behind the next frame)
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace gvc {

// Jobs run one at a time, in the order they were queued, on a thread started with the first
// one. Each queued job has a ticket (1, 2, ...); a job is done when its ticket is at most
// done(). Whatever a job wrote is visible to the thread that saw it done (wait(), done()).
class JobThread {
 public:
  JobThread() = default;
  ~JobThread();  // runs what is queued, then stops the thread
  JobThread(const JobThread&) = delete;
  JobThread& operator=(const JobThread&) = delete;

  // Queues `job`; `enter` (may be empty) runs on the thread just before it, e.g. to make the
  // caller's device context current there. Returns the job's ticket. Jobs must not throw
  // (they report failures themselves).
  uint64_t push(std::function<void()> job, std::function<void()> enter = {});
  // The tickets up to this one are done (0: nothing queued yet).
  uint64_t done() const;
  // Returns once the job of `ticket` (and every earlier one) is done.
  void wait(uint64_t ticket);
  // Returns once every job queued so far is done.
  void wait_idle() { wait(queued_); }
  // The ticket of the last job queued (0: none).
  uint64_t queued() const { return queued_; }

 private:
  struct Job {
    std::function<void()> run, enter;
  };
  void loop();

  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::deque<Job> jobs_;
  uint64_t queued_ = 0;  // written by the queueing thread only
  uint64_t done_ = 0;
  bool quit_ = false;
};

}  // namespace gvc
