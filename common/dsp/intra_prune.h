// intra_prune.h: edge-direction intra-mode pruning, Kirsch (seed 003) and Sobel (Pan et al.)
//
// For every macroblock of a 4:2:0 picture this names the intra prediction modes worth trying:
// a set of Intra4x4PredMode per 4x4 luma block, of Intra16x16PredMode, and of
// intra_chroma_pred_mode. The encoder runs its full mode decision on these candidates only.
// Everything is integer arithmetic, so every implementation gives the same bits.
//
// 1. Per sample (luma, Cb and Cr alike): an edge magnitude `mag` and a gradient orientation
//    `bin` in 0..7 (bin * 22.5 degrees, modulo 180, counter-clockwise from +x with y up).
//    The eight neighbours are read clamped to the plane (the picture is edge-extended without
//    limit; samples of a macroblock that lie past the right or bottom edge are computed on
//    that extension). Ring order, p = 0..7: E, NE, N, NW, W, SW, S, SE, i.e. a[p] is the
//    neighbour at angle p * 45 degrees (NE = (x+1, y-1)).
//
//    Kirsch (seed 003): mask d has weight 5 on ring samples d-1, d, d+1 (mod 8) and -3 on the
//    five others, so with S = a[0] + ... + a[7]:
//        K[d] = 8 * (a[d-1] + a[d] + a[d+1]) - 3 * S                       (d = 0..7)
//    mag = max |K[d]| (the thesis' formula 3-1); d* = the least d reaching it whose two
//    neighbours d-1 and d+1 reach it too (the middle of three equal masks, as next to a single
//    bright sample), else the least d reaching it; s = sign of K[d*]. A response on mask d
//    (or, negated, on the opposite mask) means a gradient along d * 45 degrees, i.e.
//    bin 2 * (d* mod 4). The masks are 45 degrees apart but the intra
//    directions about 22.5 degrees, so a sample whose stronger side neighbour is nearly as
//    strong lies between the two masks: with L = s * K[d*-1], R = s * K[d*+1],
//        if R > L and 6 * R > 5 * mag: bin += 1          (a step edge exactly on a mask gives
//        if L > R and 6 * L > 5 * mag: bin -= 1 (mod 8)   neighbours of 2/3 mag; halfway, equal)
//    mag is at most 3825.
//
//    Sobel (Pan et al., the thesis' baseline): gx = (a[NE] + 2a[E] + a[SE]) - (a[NW] + 2a[W] +
//    a[SW]), gy = (a[NW] + 2a[N] + a[NE]) - (a[SW] + 2a[S] + a[SE]) (y up); mag = |gx| + |gy|
//    (at most 2040). The gradient's angle is folded into (-90, 90] (negate both when gx < 0,
//    or gx == 0 and gy < 0) and binned with the boundaries 11.25, 33.75, 56.25 and 78.75
//    degrees as fixed-point tangents: with ax = gx >= 0, ay = |gy|, q = the number of the
//    thresholds 51, 171, 383, 1287 (tan * 256, rounded) with 256 * ay >= T * ax; then
//    bin = q when gy >= 0, else (8 - q) mod 8. A sample with mag 0 counts nowhere.
//
// 2. Bin to mode. The edge runs perpendicular to the gradient, and a block is best predicted
//    along its edges (a vertical edge: vertical prediction), so
//        bin       0  1  2  3  4  5  6  7     (gradient angle / 22.5)
//        edge    90 112 135 157  0  22 45 67  (degrees)
//        Intra4x4PredMode
//                  0  5  4  6  1  8  3  7     V, VR, DDR, HD, H, HU, DDL, VL
//    Modes in neighbouring bins (cyclically) are neighbouring directions: V has VR and VL,
//    H has HD and HU. (The thesis' example maps its mask K4 to mode 0 after the mask, i.e. the
//    gradient; here the prediction follows the edge, as in Pan et al.)
//    For 16x16 luma and chroma, bins 7, 0, 1 count for vertical, 3, 4, 5 for horizontal and
//    2, 6 (the diagonals) for plane.
//
// 3. Per block, each sample adds `mag` to the histogram cell of its bin (sums of unsigned
//    integers, so the order of addition is free). The dominant cell is the one of greatest
//    sum; ties go to the least mode number (4x4: V, H, DDL, DDR, VR, HD, VL, HU; 16x16 and
//    chroma: vertical, horizontal, plane).
//    - Intra4x4, per 4x4 luma block: the dominant mode, the modes of the two neighbouring
//      bins, and DC (4 of 9).
//    - Intra16x16, over the 256 luma samples: the dominant mode and DC (2 of 4).
//    - Chroma, over the 64 Cb and the 64 Cr samples together (one intra_chroma_pred_mode
//      serves both): the dominant mode and DC (2 of 4).
//    A block whose histogram is all zero (flat: every sample's ring is constant) gets DC only.
//    Method None gives every mode. The sets say nothing of neighbour availability: the encoder
//    intersects them with the modes its neighbours allow; DC is always in them.
#pragma once

#include <cstdint>
#include <memory>

#include "common/dsp/plane.h"
#include "common/util/status.h"

namespace gvc {

enum class IntraPruneMethod {
  None,    // every mode: the full search
  Kirsch,  // seed 003
  Sobel,   // Pan et al., the thesis' baseline
};

// Intra4x4PredMode (8.3.1.2).
enum : int {
  kI4Vertical = 0,
  kI4Horizontal = 1,
  kI4Dc = 2,
  kI4DiagonalDownLeft = 3,
  kI4DiagonalDownRight = 4,
  kI4VerticalRight = 5,
  kI4HorizontalDown = 6,
  kI4VerticalLeft = 7,
  kI4HorizontalUp = 8,
};
// Intra16x16PredMode (8.3.3).
enum : int { kI16Vertical = 0, kI16Horizontal = 1, kI16Dc = 2, kI16Plane = 3 };
// intra_chroma_pred_mode (8.3.4).
enum : int { kChromaDc = 0, kChromaHorizontal = 1, kChromaVertical = 2, kChromaPlane = 3 };

constexpr uint16_t kAllI4Modes = 0x1ff;
constexpr uint8_t kAllI16Modes = 0xf;
constexpr uint8_t kAllChromaModes = 0xf;

// Candidates of one macroblock: bit m set means mode m is a candidate.
struct IntraMbCandidates {
  uint16_t i4x4[16];  // Intra4x4PredMode, by luma4x4BlkIdx (6.4.3)
  uint8_t i16x16;     // Intra16x16PredMode
  uint8_t chroma;     // intra_chroma_pred_mode
};
static_assert(sizeof(IntraMbCandidates) == 34, "IntraMbCandidates is a fixed 34-byte record");

// Per-macroblock candidates for a whole picture, raster order.
struct IntraCandidateField {
  IntraMbCandidates* data = nullptr;
  int mb_cols = 0;
  int mb_rows = 0;
  MemoryLocation loc = MemoryLocation::Host;
};

// Position of the 4x4 block luma4x4BlkIdx in its macroblock, in 4-sample units (6.4.3).
constexpr int luma4x4_blk_x(int idx) { return ((idx >> 2) & 1) * 2 + (idx & 1); }
constexpr int luma4x4_blk_y(int idx) { return ((idx >> 3) & 1) * 2 + ((idx >> 1) & 1); }

// Bin -> Intra4x4PredMode (step 2 above).
constexpr uint8_t kIntraPruneBinMode[8] = {0, 5, 4, 6, 1, 8, 3, 7};

class IntraPrune {
 public:
  virtual ~IntraPrune() = default;

  // `y` of any size, `u` and `v` its 4:2:0 chroma planes ((width + 1) / 2 x (height + 1) / 2).
  // `out` must be mb_count(width) x mb_count(height) of y. Host views always work; a backend
  // may also accept device views.
  virtual Status run(const PlaneView& y, const PlaneView& u, const PlaneView& v,
                     IntraPruneMethod method, IntraCandidateField& out) = 0;
};

// The CPU reference (common/dsp/intra_prune.cpp): the oracle for every other implementation.
std::unique_ptr<IntraPrune> make_cpu_intra_prune();

// Step 1 for one sample of `p` (clamped reads): its magnitude and bin. For None, both are 0.
void intra_prune_sample(const PlaneView& p, int x, int y, IntraPruneMethod method, int* mag,
                        int* bin);

// Checks the shapes `run` requires (sizes, chroma planes, output field, data pointers).
Status intra_prune_check_args(const PlaneView& y, const PlaneView& u, const PlaneView& v,
                              const IntraCandidateField& out);

}  // namespace gvc
