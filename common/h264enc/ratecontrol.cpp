// ratecontrol.cpp: frame-level QP control (constant QP, CBR, VBR) with a VBV buffer model
#include "common/h264enc/ratecontrol.h"

#include <algorithm>
#include <cmath>

namespace gvc::h264 {

namespace {
// How far the P-frame QP may move from the last P frame's QP in one frame.
constexpr int kMaxStep = 4;
// Weight of the newest frame in the complexity average.
constexpr double kLearn = 0.5;
// The part of the VBV a frame may take at most (the rest absorbs prediction errors).
constexpr double kVbvMargin = 0.6;

double qstep_bits(int qp) { return std::exp2(-qp / 6.0); }
}  // namespace

int ip_qp_offset(double ip_factor) {
  return ip_factor > 0 ? int(std::lround(6.0 * std::log2(ip_factor))) : 0;
}

void RateControl::init(const RateControlParams& p) {
  p_ = p;
  complexity_[0] = complexity_[1] = 0;
  last_p_qp_ = -1;
  avg_error_ = 0;
  underflows_ = 0;
  size_ = fill_rate_bps() * p_.vbv_buffer_ms / 1000.0;
  fullness_ = size_ * p_.vbv_init;
  planned_ = false;
  fullness_unplanned_ = fullness_;
}

double RateControl::fill_rate_bps() const {
  if (p_.mode == RcMode::Vbr)
    return 1000.0 * (p_.max_bitrate_kbps > 0 ? std::max(p_.max_bitrate_kbps, p_.bitrate_kbps)
                                            : p_.bitrate_kbps * 3 / 2);
  return 1000.0 * p_.bitrate_kbps;
}

void RateControl::set_bitrate(int bitrate_kbps, int max_bitrate_kbps) {
  if (bitrate_kbps == p_.bitrate_kbps && max_bitrate_kbps == p_.max_bitrate_kbps) return;
  const double old_size = size_;
  auto level = [&](double f) { return old_size > 0 ? f / old_size : p_.vbv_init; };
  const double fullness_level = level(fullness_), unplanned_level = level(fullness_unplanned_);
  p_.bitrate_kbps = bitrate_kbps;
  p_.max_bitrate_kbps = max_bitrate_kbps;
  // The buffer keeps its duration and its relative fullness; the average restarts.
  size_ = fill_rate_bps() * p_.vbv_buffer_ms / 1000.0;
  fullness_ = size_ * fullness_level;
  fullness_unplanned_ = size_ * unplanned_level;
  avg_error_ = 0;
}

double RateControl::predict(bool idr, int qp) const {
  return complexity_[idr] * qstep_bits(qp);
}

int RateControl::p_frame_qp() {
  const double period_bits = 1000.0 * p_.bitrate_kbps / p_.fps;
  // Steer the buffer back to its initial fullness within half a second (Cbr), or the running
  // average back to the bitrate within two seconds (Vbr).
  double correction;
  if (p_.mode == RcMode::Cbr)
    correction = (fullness_ - size_ * p_.vbv_init) / std::max(1.0, p_.fps / 2);
  else
    correction = -avg_error_ / std::max(1.0, 2 * p_.fps);
  double target = period_bits + correction;
  target = std::max(target, period_bits / 8);
  target = std::min(target, fullness_ * kVbvMargin);

  // Nothing learnt of P frames yet: guess them a third of an I frame at the same QP.
  if (complexity_[0] <= 0 && complexity_[1] > 0) complexity_[0] = complexity_[1] / 3;
  if (complexity_[0] <= 0) return p_.qp;  // the very first frame
  // c * 2^(-qp/6) = target
  int qp = int(std::lround(6.0 * std::log2(complexity_[0] / std::max(target, 1.0))));
  if (last_p_qp_ >= 0) qp = std::clamp(qp, last_p_qp_ - kMaxStep, last_p_qp_ + kMaxStep);
  return qp;
}

int RateControl::frame_qp(bool idr) {
  const int offset = idr ? ip_qp_offset(p_.ip_factor) : 0;
  if (p_.mode == RcMode::Cqp) return std::clamp(p_.qp - offset, 0, 51);
  int qp = std::clamp(p_frame_qp() - offset, p_.min_qp, p_.max_qp);
  // Never plan a frame the buffer cannot hold with a margin.
  while (qp < p_.max_qp && complexity_[idr] > 0 && predict(idr, qp) > fullness_ * kVbvMargin) qp++;
  return qp;
}

void RateControl::planned(bool idr, int qp) {
  if (p_.mode == RcMode::Cqp) return;
  const double bits = complexity_[idr] > 0 ? predict(idr, qp) : 1000.0 * p_.bitrate_kbps / p_.fps;
  planned_ = true;
  fullness_unplanned_ = fullness_;
  fullness_ = std::clamp(fullness_ - bits + fill_rate_bps() / p_.fps, 0.0, size_);
}

void RateControl::cancel_planned() {
  if (planned_) fullness_ = fullness_unplanned_;
  planned_ = false;
}

void RateControl::update(bool idr, int qp, int64_t bits) {
  if (p_.mode == RcMode::Cqp) return;
  if (planned_) fullness_ = fullness_unplanned_;  // the prediction gives way to the size
  planned_ = false;
  double c = double(bits) / qstep_bits(qp);
  complexity_[idr] = complexity_[idr] > 0 ? (1 - kLearn) * complexity_[idr] + kLearn * c : c;
  if (!idr) last_p_qp_ = qp;
  if (double(bits) > fullness_) underflows_++;
  fullness_ = std::min(size_, fullness_ - double(bits) + fill_rate_bps() / p_.fps);
  if (fullness_ < 0) fullness_ = 0;
  avg_error_ += double(bits) - 1000.0 * p_.bitrate_kbps / p_.fps;
}

}  // namespace gvc::h264
