// stage_timer.h (gpu): the GPU time of a stream's work between marks, summed over many rounds (a ring of timing events read back rounds later)
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "gpu/device.h"

namespace gvc {
namespace cuda {

// A round (a picture, say) is begin(), then mark(0) .. mark(n - 1) as its n stages end, all on
// one stream. The events of the last kRounds rounds are kept and a round is read back only
// when its slot comes round again (by then long done: the host seldom waits) or in collect().
// A stage's time is the GPU's from the mark before to its own, so it includes any time the
// stream sat idle waiting for the host to queue the stage's work.
class StageTimer {
 public:
  explicit StageTimer(int stages) : stages_(stages), ms_(size_t(stages), 0.0) {}
  ~StageTimer();
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

  Status begin(cudaStream_t s);
  Status mark(int stage, cudaStream_t s);
  // Reads back every round recorded (waiting for them).
  Status collect();

  int rounds() const { return rounds_; }  // read back
  // Per round read back, milliseconds: stage i; all stages; from the first begin() to the last
  // round's end (read back rounds only), whose difference from busy is the stream idle between
  // rounds.
  double stage_ms(int i) const { return rounds_ ? ms_[size_t(i)] / rounds_ : 0.0; }
  double busy_ms() const;
  double span_ms() const { return rounds_ ? span_ms_ / rounds_ : 0.0; }

 private:
  static constexpr int kRounds = 8;
  struct Round {
    std::vector<cudaEvent_t> events;  // begin, then the end of each stage
    bool pending = false;             // recorded, not read back
  };
  Status read(Round& r);
  Status create(Round& r);

  int stages_;
  Round ring_[kRounds];
  int next_ = 0;  // slot of the next round
  int rounds_ = 0;
  std::vector<double> ms_;
  cudaEvent_t first_ = nullptr;  // the first round's begin
  bool first_recorded_ = false;
  double span_ms_ = 0;
};

}  // namespace cuda
}  // namespace gvc
