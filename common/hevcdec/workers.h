// workers.h: threads a decoder keeps for its lifetime, each picture's WPP rows handed to them (no thread started per slice segment)
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gvc::hevc {

class Workers {
 public:
  // Up to `threads` threads run a job at once, the caller's included (threads - 1 are started
  // when the first job needs them).
  explicit Workers(int threads) : max_threads_(threads < 1 ? 1 : threads) {}
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  int max_threads() const { return max_threads_; }
  // Runs `job` on `n` threads at once (at most max_threads(); the calling thread is one of them)
  // and returns when every one has returned. Not re-entrant.
  void run(int n, const std::function<void()>& job);

 private:
  void loop(int index);

  const int max_threads_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  const std::function<void()>* job_ = nullptr;
  unsigned generation_ = 0;  // one per job
  int wanted_ = 0;           // workers (besides the caller) the current job uses
  int running_ = 0;          // of those, still running it
  bool quit_ = false;
};

}  // namespace gvc::hevc
