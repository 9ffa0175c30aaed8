// ratecontrol.h: frame-level QP control (constant QP, CBR, VBR) with a VBV buffer model
#pragma once

#include <cstdint>

namespace gvc::h264 {

enum class RcMode { Cqp, Cbr, Vbr };

// How many QP steps finer an I frame is coded than the P frames around it for x264's
// --ipratio `ip_factor` (I-frame quantiser step = P step / ip_factor; the step doubles every
// 6 QP): round(6 * log2(ip_factor)), 3 for x264's default 1.4.
int ip_qp_offset(double ip_factor);

struct RateControlParams {
  RcMode mode = RcMode::Cqp;
  int qp = 26;                 // Cqp: the QP of P frames; Cbr/Vbr: the first P-frame QP guess
  double ip_factor = 1.4;      // I frames ip_qp_offset(ip_factor) QP below P frames (x264 --ipratio)
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
// once; it underflows when a frame is larger than what the buffer holds. A P frame's target
// is the bits one frame period brings (bitrate / fps) corrected towards a buffer at its
// initial fullness within half a second (Cbr) or towards the average bitrate within two
// seconds (Vbr); its QP is the one whose predicted size meets the target, moved by at most a
// few steps per frame. I frames follow the P frames as x264's --ipratio makes them: an IDR
// takes the QP a P frame would get at that point minus ip_qp_offset(ip_factor) (the first
// frame: qp minus the offset), so the I/P quality ratio is the same in every mode. Every QP is
// then raised until the predicted size leaves a margin in the buffer.
class RateControl {
 public:
  void init(const RateControlParams& p);
  // Cqp: the P-frame QP from the next frame on (I frames follow it).
  void set_qp(int qp) { p_.qp = qp; }
  // Takes a new average (and, for Cbr, fill) rate from the next frame on.
  void set_bitrate(int bitrate_kbps, int max_bitrate_kbps);
  // The QP for the next frame.
  int frame_qp(bool idr);
  // Accounts for a coded frame of `bits` bits at `qp`.
  void update(bool idr, int qp, int64_t bits);
  // A pipelined encoder (Encoder::set_pipelined) knows a frame's size only after the next
  // frame's QP is chosen: planned() accounts for the frame just given to the encoder at its
  // predicted size, and its update() later replaces that with what it took. At most one frame
  // is planned at a time.
  void planned(bool idr, int qp);
  // The planned frame will never be sent (a flush dropped it): the VBV as before it.
  void cancel_planned();

  // The VBV before the next frame, in bits, and its size.
  double vbv_fullness() const { return fullness_; }
  double vbv_size() const { return size_; }
  // Frames that did not fit in the VBV so far (0 unless the model was badly wrong).
  int underflows() const { return underflows_; }

 private:
  double fill_rate_bps() const;
  double predict(bool idr, int qp) const;
  int p_frame_qp();  // Cbr/Vbr: the QP a P frame would get now, before the VBV margin

  RateControlParams p_;
  double size_ = 0, fullness_ = 0;
  double complexity_[2] = {0, 0};  // by frame type: 0 = P, 1 = I; 0 until one is coded
  int last_p_qp_ = -1;             // the last P frame's QP; -1 until one is coded
  double avg_error_ = 0;           // Vbr: the running excess of coded bits over the average
  int underflows_ = 0;
  bool planned_ = false;         // a frame is counted at its predicted size...
  double fullness_unplanned_ = 0;  // ...and this was the VBV before it
};

}  // namespace gvc::h264
