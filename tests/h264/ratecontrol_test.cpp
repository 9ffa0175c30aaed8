// ratecontrol_test.cpp: the frame-level rate control on a model encoder: I/P QP offset (ip-factor), CBR/VBR rate, VBV
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/h264enc/ratecontrol.h"

namespace gvc::h264 {
namespace {

TEST(RateControl, IpQpOffsetIsX264Ipratio) {
  // round(6 log2(f)): x264's default 1.4 is 2.91 steps.
  EXPECT_EQ(ip_qp_offset(1.4), 3);
  EXPECT_EQ(ip_qp_offset(1.0), 0);
  EXPECT_EQ(ip_qp_offset(2.0), 6);
  EXPECT_EQ(ip_qp_offset(4.0), 12);
  EXPECT_EQ(ip_qp_offset(0.5), -6);
  EXPECT_EQ(ip_qp_offset(1.2), 2);  // 1.58
  EXPECT_EQ(ip_qp_offset(1.1), 1);  // 0.83
}

TEST(RateControl, CqpIdrFinerByTheOffsetClipped) {
  struct {
    int qp;
    double ip_factor;
    int idr_qp;
  } cases[] = {{26, 1.4, 23}, {26, 1.0, 26}, {30, 2.0, 24}, {2, 1.4, 0}, {0, 4.0, 0}, {49, 0.5, 51}, {51, 1.4, 48}};
  for (const auto& c : cases) {
    RateControl rc;
    RateControlParams p;
    p.mode = RcMode::Cqp;
    p.qp = c.qp;
    p.ip_factor = c.ip_factor;
    rc.init(p);
    EXPECT_EQ(rc.frame_qp(true), c.idr_qp) << "qp " << c.qp << " ip-factor " << c.ip_factor;
    EXPECT_EQ(rc.frame_qp(false), c.qp);
    rc.update(false, c.qp, 1000);  // nothing to learn in cqp
    EXPECT_EQ(rc.frame_qp(false), c.qp);
  }
  // A QP change while playing moves both frame types.
  RateControl rc;
  RateControlParams p;
  rc.init(p);
  rc.set_qp(40);
  EXPECT_EQ(rc.frame_qp(false), 40);
  EXPECT_EQ(rc.frame_qp(true), 37);
}

// A model encoder: a frame at QP q costs c * 2^(-q/6) bits, I frames 6 times the P frames'
// complexity, with a slow drift and some noise so the controller has something to follow.
struct ModelSource {
  double p_complexity = 2.0e6;
  int frame = 0;
  double bits(bool idr, int qp) {
    double c = p_complexity * (1 + 0.3 * std::sin(frame * 0.05)) * (1 + 0.1 * std::sin(frame * 1.7));
    return (idr ? 6 : 1) * c * std::exp2(-qp / 6.0);
  }
};

// In cbr and vbr, an IDR takes exactly the QP a P frame would have got at that point minus
// the offset (when the VBV leaves room for it), the first frame is qp minus the offset, and
// the stream holds its rate without a VBV underflow.
TEST(RateControl, RateModesIdrFollowsPFrameQp) {
  for (RcMode mode : {RcMode::Cbr, RcMode::Vbr}) {
    for (double ipf : {1.4, 1.0, 2.0}) {
      RateControlParams p;
      p.mode = mode;
      p.qp = 30;
      p.ip_factor = ipf;
      p.bitrate_kbps = 500;
      p.fps = 25;
      p.vbv_buffer_ms = 2000;
      RateControl rc;
      rc.init(p);
      ModelSource src;
      const int n = 500, keyint = 50;
      double total = 0;
      int idrs_checked = 0;
      for (int f = 0; f < n; f++, src.frame++) {
        const bool idr = f % keyint == 0;
        RateControl probe = rc;  // what a P frame would get now
        const int p_qp = probe.frame_qp(false);
        const int qp = rc.frame_qp(idr);
        if (f == 0) {
          EXPECT_EQ(qp, 30 - ip_qp_offset(ipf));
        } else if (idr) {
          // The VBV margin may only raise it.
          EXPECT_GE(qp, p_qp - ip_qp_offset(ipf)) << "frame " << f;
          if (qp == p_qp - ip_qp_offset(ipf)) idrs_checked++;
        } else {
          EXPECT_EQ(qp, p_qp);
        }
        const double bits = src.bits(idr, qp);
        rc.update(idr, qp, int64_t(bits));
        if (f >= 2 * keyint) total += bits;
      }
      EXPECT_GE(idrs_checked, 6) << "the VBV raised most IDRs: the test checks nothing";
      EXPECT_EQ(rc.underflows(), 0);
      const double kbps = total / 1000 / ((n - 2 * keyint) / p.fps);
      EXPECT_NEAR(kbps, 500, 500 * 0.05) << (mode == RcMode::Cbr ? "cbr" : "vbr") << " ip-factor " << ipf;
    }
  }
}

// Pipelined (the encoder's frame-level pipeline): each frame's QP is chosen while the frame
// before is still being coded, counted at its predicted size (planned()), its real size
// given one frame late. The rate stays within 5 % and the VBV never underflows; and once a
// frame's size is in, the VBV is exactly that of a rate control given every size in time.
TEST(RateControl, PipelinedFeedbackKeepsTheRateAndTheVbv) {
  for (RcMode mode : {RcMode::Cbr, RcMode::Vbr}) {
    RateControlParams p;
    p.mode = mode;
    p.qp = 30;
    p.bitrate_kbps = 500;
    p.fps = 25;
    p.vbv_buffer_ms = 2000;
    RateControl rc, in_time;
    rc.init(p);
    in_time.init(p);
    ModelSource src;
    const int n = 500, keyint = 50;
    double total = 0;
    bool held_idr = false;
    int held_qp = 0;
    double held_bits = 0;
    for (int f = 0; f <= n; f++, src.frame++) {
      const bool idr = f % keyint == 0;
      if (f == 200) {  // a bitrate change while a frame is planned (before its size is in)
        rc.set_bitrate(400, 0);
        in_time.set_bitrate(400, 0);
      }
      const int qp = f < n ? rc.frame_qp(idr) : 0;
      if (f > 0) {  // the frame before is coded now
        rc.update(held_idr, held_qp, int64_t(held_bits));
        in_time.update(held_idr, held_qp, int64_t(held_bits));
        EXPECT_NEAR(rc.vbv_fullness(), in_time.vbv_fullness(), 1e-6) << "frame " << f - 1;
      }
      if (f == n) break;
      rc.planned(idr, qp);
      held_idr = idr;
      held_qp = qp;
      held_bits = src.bits(idr, qp);
      if (f >= 300) total += held_bits;
    }
    EXPECT_EQ(rc.underflows(), 0) << (mode == RcMode::Cbr ? "cbr" : "vbr");
    const double kbps = total / 1000 / ((n - 300) / p.fps);
    EXPECT_NEAR(kbps, 400, 400 * 0.05) << (mode == RcMode::Cbr ? "cbr" : "vbr");
  }
}

// A larger ip-factor spends more of the same rate on IDRs: their QP falls against the P frames'.
TEST(RateControl, IpFactorMovesBitsToIdrs) {
  auto idr_minus_p = [](double ipf) {
    RateControlParams p;
    p.mode = RcMode::Cbr;
    p.bitrate_kbps = 800;
    p.ip_factor = ipf;
    RateControl rc;
    rc.init(p);
    ModelSource src;
    double idr_qp = 0, p_qp = 0;
    int idrs = 0, ps = 0;
    for (int f = 0; f < 600; f++, src.frame++) {
      const bool idr = f % 30 == 0;
      const int qp = rc.frame_qp(idr);
      rc.update(idr, qp, int64_t(src.bits(idr, qp)));
      if (f < 60) continue;
      (idr ? idr_qp : p_qp) += qp;
      (idr ? idrs : ps)++;
    }
    return idr_qp / idrs - p_qp / ps;
  };
  const double d10 = idr_minus_p(1.0), d14 = idr_minus_p(1.4), d20 = idr_minus_p(2.0);
  EXPECT_LT(d14, d10 - 1.5);
  EXPECT_LT(d20, d14 - 1.5);
}

}  // namespace
}  // namespace gvc::h264
