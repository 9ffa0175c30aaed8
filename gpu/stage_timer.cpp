// stage_timer.cpp (gpu): StageTimer's ring of timing events
#include "gpu/stage_timer.h"

namespace gvc {
namespace cuda {

StageTimer::~StageTimer() {
  for (Round& r : ring_)
    for (cudaEvent_t e : r.events) cudaEventDestroy(e);
  if (first_) cudaEventDestroy(first_);
}

Status StageTimer::create(Round& r) {
  r.events.assign(size_t(stages_) + 1, nullptr);
  for (cudaEvent_t& e : r.events) GVC_CUDA_TRY(cudaEventCreate(&e));
  return {};
}

Status StageTimer::read(Round& r) {
  GVC_CUDA_TRY(cudaEventSynchronize(r.events.back()));
  for (int i = 0; i < stages_; ++i) {
    float ms = 0;
    GVC_CUDA_TRY(cudaEventElapsedTime(&ms, r.events[size_t(i)], r.events[size_t(i) + 1]));
    ms_[size_t(i)] += ms;
  }
  float span = 0;
  GVC_CUDA_TRY(cudaEventElapsedTime(&span, first_, r.events.back()));
  // the span grows with each round: keep the latest as the total (rounds read in order)
  span_ms_ = double(span);
  r.pending = false;
  ++rounds_;
  return {};
}

Status StageTimer::begin(cudaStream_t s) {
  Round& r = ring_[next_];
  if (r.events.empty()) GVC_TRY(create(r));
  if (r.pending) GVC_TRY(read(r));
  if (!first_recorded_) {
    GVC_CUDA_TRY(cudaEventCreate(&first_));
    GVC_CUDA_TRY(cudaEventRecord(first_, s));
    first_recorded_ = true;
  }
  return check(cudaEventRecord(r.events[0], s), "StageTimer begin");
}

Status StageTimer::mark(int stage, cudaStream_t s) {
  Round& r = ring_[next_];
  GVC_CUDA_TRY(cudaEventRecord(r.events[size_t(stage) + 1], s));
  if (stage == stages_ - 1) {
    r.pending = true;
    next_ = (next_ + 1) % kRounds;
  }
  return {};
}

Status StageTimer::collect() {
  // oldest first, so that the span ends at the last round
  for (int k = 0; k < kRounds; ++k) {
    Round& r = ring_[(next_ + k) % kRounds];
    if (r.pending) GVC_TRY(read(r));
  }
  return {};
}

double StageTimer::busy_ms() const {
  double sum = 0;
  for (double v : ms_) sum += v;
  return rounds_ ? sum / rounds_ : 0.0;
}

}  // namespace cuda
}  // namespace gvc
