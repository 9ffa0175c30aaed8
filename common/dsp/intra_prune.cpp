// intra_prune.cpp: CPU reference of edge-direction intra-mode pruning (the oracle)
#include "common/dsp/intra_prune.h"

#include <algorithm>
#include <cstdlib>

#include "common/dsp/me.h"

namespace gvc {
namespace {

// Ring neighbours, p = 0..7: E, NE, N, NW, W, SW, S, SE (y down in memory).
constexpr int kRingDx[8] = {1, 1, 0, -1, -1, -1, 0, 1};
constexpr int kRingDy[8] = {0, -1, -1, -1, 0, 1, 1, 1};
enum { E = 0, NE = 1, N = 2, NW = 3, W = 4, SW = 5, S = 6, SE = 7 };

void kirsch(const int (&a)[8], int* mag, int* bin) {
  int sum = 0;
  for (int p = 0; p < 8; p++) sum += a[p];
  int k[8];
  for (int d = 0; d < 8; d++) k[d] = 8 * (a[(d + 7) & 7] + a[d] + a[(d + 1) & 7]) - 3 * sum;
  int m = 0;
  for (int d = 0; d < 8; d++) m = std::max(m, std::abs(k[d]));
  int best = -1;
  for (int d = 0; d < 8 && best < 0; d++)
    if (std::abs(k[d]) == m && std::abs(k[(d + 7) & 7]) == m && std::abs(k[(d + 1) & 7]) == m)
      best = d;
  for (int d = 0; d < 8 && best < 0; d++)
    if (std::abs(k[d]) == m) best = d;
  const int s = k[best] < 0 ? -1 : 1;
  const int left = s * k[(best + 7) & 7], right = s * k[(best + 1) & 7];
  int b = 2 * (best & 3);
  if (right > left && 6 * right > 5 * m) b = (b + 1) & 7;
  else if (left > right && 6 * left > 5 * m) b = (b + 7) & 7;
  *mag = m;
  *bin = b;
}

void sobel(const int (&a)[8], int* mag, int* bin) {
  int gx = (a[NE] + 2 * a[E] + a[SE]) - (a[NW] + 2 * a[W] + a[SW]);
  int gy = (a[NW] + 2 * a[N] + a[NE]) - (a[SW] + 2 * a[S] + a[SE]);
  *mag = std::abs(gx) + std::abs(gy);
  if (gx < 0 || (gx == 0 && gy < 0)) gx = -gx, gy = -gy;
  const int ay = std::abs(gy);
  static constexpr int kTan[4] = {51, 171, 383, 1287};
  int q = 0;
  for (int t : kTan) q += 256 * ay >= t * gx;
  *bin = *mag == 0 ? 0 : (gy >= 0 ? q : (8 - q) & 7);
}

// The dominant Intra4x4PredMode of a bin histogram (ties: least mode number), or -1 when empty.
int dominant_bin_4x4(const uint32_t (&h)[8]) {
  int best = -1;
  for (int b = 0; b < 8; b++) {
    if (h[b] == 0) continue;
    if (best < 0 || h[b] > h[best] ||
        (h[b] == h[best] && kIntraPruneBinMode[b] < kIntraPruneBinMode[best]))
      best = b;
  }
  return best;
}

uint16_t mask_4x4(const uint32_t (&h)[8]) {
  const int b = dominant_bin_4x4(h);
  uint16_t m = 1u << kI4Dc;
  if (b >= 0)
    m |= (1u << kIntraPruneBinMode[b]) | (1u << kIntraPruneBinMode[(b + 1) & 7]) |
         (1u << kIntraPruneBinMode[(b + 7) & 7]);
  return m;
}

// Vertical (bins 7, 0, 1), horizontal (3, 4, 5), plane (2, 6) cells: 0, 1, 2 = the dominant
// one (ties: that order), or -1 when all are zero.
int dominant_cell(const uint32_t (&h)[8]) {
  const uint32_t c[3] = {h[7] + h[0] + h[1], h[3] + h[4] + h[5], h[2] + h[6]};
  int best = -1;
  for (int i = 0; i < 3; i++)
    if (c[i] != 0 && (best < 0 || c[i] > c[best])) best = i;
  return best;
}

uint8_t mask_16x16(const uint32_t (&h)[8]) {
  static constexpr uint8_t kMode[3] = {kI16Vertical, kI16Horizontal, kI16Plane};
  const int c = dominant_cell(h);
  return uint8_t((1u << kI16Dc) | (c >= 0 ? 1u << kMode[c] : 0u));
}

uint8_t mask_chroma(const uint32_t (&h)[8]) {
  static constexpr uint8_t kMode[3] = {kChromaVertical, kChromaHorizontal, kChromaPlane};
  const int c = dominant_cell(h);
  return uint8_t((1u << kChromaDc) | (c >= 0 ? 1u << kMode[c] : 0u));
}

// Adds the samples of the w x h block at (x0, y0) of `p` to histogram `h`.
void accumulate(const PlaneView& p, int x0, int y0, int w, int h, IntraPruneMethod method,
                uint32_t (&hist)[8]) {
  for (int y = y0; y < y0 + h; y++)
    for (int x = x0; x < x0 + w; x++) {
      int mag, bin;
      intra_prune_sample(p, x, y, method, &mag, &bin);
      hist[bin] += uint32_t(mag);
    }
}

void prune_macroblock(const PlaneView& py, const PlaneView& pu, const PlaneView& pv,
                      IntraPruneMethod method, int mb_x, int mb_y, IntraMbCandidates* mb) {
  if (method == IntraPruneMethod::None) {
    for (auto& m : mb->i4x4) m = kAllI4Modes;
    mb->i16x16 = kAllI16Modes;
    mb->chroma = kAllChromaModes;
    return;
  }
  uint32_t h16[8] = {};
  for (int idx = 0; idx < 16; idx++) {
    uint32_t h4[8] = {};
    accumulate(py, 16 * mb_x + 4 * luma4x4_blk_x(idx), 16 * mb_y + 4 * luma4x4_blk_y(idx), 4, 4,
               method, h4);
    mb->i4x4[idx] = mask_4x4(h4);
    for (int b = 0; b < 8; b++) h16[b] += h4[b];
  }
  mb->i16x16 = mask_16x16(h16);
  uint32_t hc[8] = {};
  accumulate(pu, 8 * mb_x, 8 * mb_y, 8, 8, method, hc);
  accumulate(pv, 8 * mb_x, 8 * mb_y, 8, 8, method, hc);
  mb->chroma = mask_chroma(hc);
}

class CpuIntraPrune final : public IntraPrune {
 public:
  Status run(const PlaneView& y, const PlaneView& u, const PlaneView& v, IntraPruneMethod method,
             IntraCandidateField& out) override {
    Status st = intra_prune_check_args(y, u, v, out);
    if (!st.ok()) return st;
    if (y.loc != MemoryLocation::Host || u.loc != MemoryLocation::Host ||
        v.loc != MemoryLocation::Host || out.loc != MemoryLocation::Host)
      return Status::error("the CPU intra pruning needs planes and results in host memory");
    for (int mb_y = 0; mb_y < out.mb_rows; mb_y++)
      for (int mb_x = 0; mb_x < out.mb_cols; mb_x++)
        prune_macroblock(y, u, v, method, mb_x, mb_y, &out.data[size_t(mb_y) * out.mb_cols + mb_x]);
    return {};
  }
};

}  // namespace

void intra_prune_sample(const PlaneView& p, int x, int y, IntraPruneMethod method, int* mag,
                        int* bin) {
  *mag = 0;
  *bin = 0;
  if (method == IntraPruneMethod::None) return;
  int a[8];
  for (int i = 0; i < 8; i++) a[i] = sample_clamped(p, x + kRingDx[i], y + kRingDy[i]);
  if (method == IntraPruneMethod::Kirsch) kirsch(a, mag, bin);
  else sobel(a, mag, bin);
}

Status intra_prune_check_args(const PlaneView& y, const PlaneView& u, const PlaneView& v,
                              const IntraCandidateField& out) {
  if (y.width <= 0 || y.height <= 0 || !y.data || !u.data || !v.data)
    return Status::error("intra pruning needs a non-empty picture with three planes");
  const int cw = (y.width + 1) / 2, ch = (y.height + 1) / 2;
  if (u.width != cw || u.height != ch || v.width != cw || v.height != ch)
    return Status::error("intra pruning needs 4:2:0 chroma planes of half the luma size");
  if (y.stride < y.width || u.stride < cw || v.stride < cw)
    return Status::error("plane stride shorter than its width");
  if (out.mb_cols != mb_count(y.width) || out.mb_rows != mb_count(y.height) || !out.data)
    return Status::error("intra candidate field does not match the picture size");
  return {};
}

std::unique_ptr<IntraPrune> make_cpu_intra_prune() { return std::make_unique<CpuIntraPrune>(); }

}  // namespace gvc
