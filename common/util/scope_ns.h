// scope_ns.h: adds the time a scope takes to an atomic count of nanoseconds (waits and stages timed for benchmarks)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace gvc {

// Adds the steady-clock time from its making to its end to `*ns` (nothing for null).
class ScopeNs {
 public:
  explicit ScopeNs(std::atomic<int64_t>* ns)
      : ns_(ns), t0_(ns ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point()) {}
  ~ScopeNs() {
    if (ns_)
      ns_->fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count(),
                     std::memory_order_relaxed);
  }
  ScopeNs(const ScopeNs&) = delete;
  ScopeNs& operator=(const ScopeNs&) = delete;

 private:
  std::atomic<int64_t>* ns_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace gvc
