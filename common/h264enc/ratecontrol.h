// ratecontrol.h: frame-level QP control (constant QP, CBR, VBR) with a VBV buffer model
#pragma once

#include <cstdint>

namespace gvc::h264 {

enum class RcMode { Cqp, Cbr, Vbr };

struct RateControlParams {
  RcMode mode = RcMode::Cqp;
  int qp = 26;                 // Cqp: the QP of every frame; Cbr/Vbr: the first frame's guess
  int bitrate_kbps = 2048;     // Cbr: the rate; Vbr: the long-term average
  int max_bitrate_kbps = 0;    // Vbr: the VBV fill rate (0: 1.5 x bitrate); Cbr: ignored
  int vbv_buffer_ms = 1000;    // VBV size, in ms at the fill rate
  double vbv_init = 0.9;       // initial VBV fullness, fraction of its size
  double fps = 30.0;
  int min_qp = 10, max_qp = 51;
};

// Chooses each frame's QP before it is coded and learns from its size afterwards.
//
// The model: a frame of one type (I or P) coded at QP q costs about c * 2^(-q / 6) bits
// (the quantiser step doubles every 6 QP, and the coded size roughly follows the inverse step),
// with c, the frame type's complexity, re-estimated from every coded frame (exponential
// average). The VBV is the hypothetical decoder's buffer of Annex C: it fills at the fill
// rate, one frame period per frame, up to its size, and each coded frame leaves it whole at
// once; it underflows when a frame is larger than what the buffer holds. Each frame's target
// is the bits one frame period brings (bitrate / fps; an I frame several of them) corrected
// towards a buffer at its initial fullness within half a second; the QP is the one whose
// predicted size meets the target, moved by at most a few steps per frame, and raised until
// the predicted size leaves a margin in the buffer.
class RateControl {
 public:
  void init(const RateControlParams& p);
  // Takes a new average (and, for Cbr, fill) rate from the next frame on.
  void set_bitrate(int bitrate_kbps, int max_bitrate_kbps);
  // The QP for the next frame.
  int frame_qp(bool idr);
  // Accounts for a coded frame of `bits` bits at `qp`.
  void update(bool idr, int qp, int64_t bits);

  // The VBV before the next frame, in bits, and its size.
  double vbv_fullness() const { return fullness_; }
  double vbv_size() const { return size_; }
  // Frames that did not fit in the VBV so far (0 unless the model was badly wrong).
  int underflows() const { return underflows_; }

 private:
  double fill_rate_bps() const;
  double predict(bool idr, int qp) const;

  RateControlParams p_;
  double size_ = 0, fullness_ = 0;
  double complexity_[2] = {0, 0};  // by frame type: 0 = P, 1 = I; 0 until one is coded
  int last_qp_[2] = {-1, -1};
  double avg_error_ = 0;           // Vbr: the running excess of coded bits over the average
  int underflows_ = 0;
};

}  // namespace gvc::h264
