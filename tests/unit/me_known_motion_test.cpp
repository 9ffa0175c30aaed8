// me_known_motion_test.cpp: the CPU search on frames made by panning a real painting by known
// integer, half-pel and quarter-pel offsets must return the true vector on 99% of interior MBs
//
// Integer pans are crops of a 4:1 box-downscaled painting. Sub-pel pans move that picture with
// H.264's own interpolation (8.4.2.2.1, itself checked in me_naive_test), so the true vector has
// SAD 0. Box-downscaling with the source moved by 1 or 2 full-size samples (a physical quarter-
// or half-pel pan) was tried first: H.264's 6-tap and bilinear filters model that shift too
// loosely on this painting's fine canvas texture for 16x16 blocks; 65-98% of interior MBs got
// the exact vector, most misses one quarter-pel off across the pan.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/unit/me_oracle.h"

namespace {

using gvc::MeParams;
using gvc::MvCost;
using gvc::Subpel;
using gvc_test::Plane;

// A w x h frame whose sample (x, y) is the rounded mean of the 4x4 block of the full-size
// painting at (ox + 4x, oy + 4y).
Plane box_downscaled(const Plane& img, int ox, int oy, int w, int h) {
  Plane p(w, h);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int sum = 0;
      for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) sum += img.at(ox + 4 * x + i, oy + 4 * y + j);
      p.at(x, y) = uint8_t((sum + 8) / 16);
    }
  return p;
}

struct Pan {
  int vx, vy;  // true motion, quarter-pel
  Subpel subpel;
  int range;
};

// Runs the search with the current frame panned by `pan` from the reference and returns the
// fraction of interior macroblocks (not on the frame's outer ring) whose 16x16 vector is true.
double fraction_true(const Plane& img, int ox, int oy, int w, int h, const Pan& pan,
                     std::string* misses) {
  // cur(X) = ref(X + v): the current frame's samples sit v further into the painting.
  Plane ref = box_downscaled(img, ox, oy, w, h);
  Plane cur;
  if (pan.vx % 4 == 0 && pan.vy % 4 == 0) {
    cur = box_downscaled(img, ox + pan.vx, oy + pan.vy, w, h);  // 4 full-size samples = 1 pel
  } else {
    cur = Plane(w, h);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        cur.at(x, y) = uint8_t(gvc_test::ref_sample_qpel(ref.view(), x, y, pan.vx, pan.vy));
  }
  MeParams params;
  params.range = pan.range;
  params.lambda = 0;
  params.subpel = pan.subpel;
  auto got = gvc_test::cpu_search(cur.view(), ref.view(), params);
  const int cols = gvc::mb_count(w), rows = gvc::mb_count(h);
  if (got.size() != size_t(cols) * rows) return 0.0;
  int total = 0, hits = 0;
  std::ostringstream os;
  for (int mby = 1; mby < rows - 1; mby++)
    for (int mbx = 1; mbx < cols - 1; mbx++) {
      const MvCost m = got[size_t(mby) * cols + mbx].part[gvc::kPart16x16];
      total++;
      if (m.mvx == pan.vx && m.mvy == pan.vy)
        hits++;
      else
        os << " MB(" << mbx << "," << mby << ")=" << gvc_test::describe(m);
    }
  *misses = os.str();
  return total ? double(hits) / total : 0.0;
}

class KnownMotion : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    img_ = &gvc_test::elephants_gray(&why);
    if (img_->width == 0) GTEST_SKIP() << "no test picture: " << why;
    ASSERT_EQ(img_->width, 5640);
    ASSERT_EQ(img_->height, 3172);
  }

  void check(int ox, int oy, int w, int h, const Pan& pan) {
    std::string misses;
    double f = fraction_true(*img_, ox, oy, w, h, pan, &misses);
    EXPECT_GE(f, 0.99) << w << "x" << h << " at (" << ox << "," << oy << ") pan (" << pan.vx
                       << "," << pan.vy << ") quarter-pel, subpel " << int(pan.subpel)
                       << ", range " << pan.range << ": wrong 16x16 vectors:" << misses;
  }

  const Plane* img_ = nullptr;
};

// Origins in the full-size painting: the elephants (middle) and the mirrored thicket (right).
constexpr int kOx = 1900, kOy = 700;
constexpr int kOx2 = 4100, kOy2 = 1500;

TEST_F(KnownMotion, IntegerPans) {
  for (Pan pan : {Pan{12, -8, Subpel::None, 16}, Pan{-28, 20, Subpel::None, 8},
                  Pan{-64, -60, Subpel::None, 16}, Pan{4, 0, Subpel::Quarter, 12}}) {
    check(kOx, kOy, 352, 288, pan);
    check(kOx2, kOy2, 176, 144, pan);
  }
}

TEST_F(KnownMotion, HalfPelPans) {
  for (Pan pan : {Pan{2, -6, Subpel::Half, 8}, Pan{-10, 14, Subpel::Half, 12},
                  Pan{6, 2, Subpel::Quarter, 8}}) {
    check(kOx, kOy, 352, 288, pan);
    check(kOx2, kOy2, 176, 144, pan);
  }
}

TEST_F(KnownMotion, QuarterPelPans) {
  for (Pan pan : {Pan{5, -3, Subpel::Quarter, 8}, Pan{-7, 1, Subpel::Quarter, 8},
                  Pan{13, -21, Subpel::Quarter, 12}}) {
    check(kOx, kOy, 352, 288, pan);
    check(kOx2, kOy2, 176, 144, pan);
  }
}

}  // namespace
