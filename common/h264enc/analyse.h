// analyse.h: macroblock mode decision (intra modes against the inter choice), before reconstruction, for the CPU and CUDA
//
// Mode decision minimises J = D + lambda * R with D the SATD of the luma prediction residual
// (sum over its 4x4 blocks of the halved absolute 4x4 Hadamard coefficients; intra chroma adds
// its own SATD) and R the length of the prediction syntax (mb_type, sub_mb_type, ref_idx
// te(v), mvd se(v), intra modes) plus a fixed estimate for intra mb_type codes in P slices;
// the residual's bits are not counted. lambda = sqrt(0.85 * 2^((QP - 12) / 3)) (seed 003's
// lambda for SAD-type costs), in integer form.
//
// The decision is GVC_HD code (common/util/hd.h): written once for the CPU and CUDA, so a
// device implementation gives the CPU's bits.
#pragma once

#include <cstdint>

#include "common/dsp/intra_prune.h"
#include "common/h264enc/mc.h"
#include "common/h264enc/macroblock.h"
#include "common/mv/mv_field.h"
#include "common/util/hd.h"

namespace gvc::h264 {

// The analysis switches of EncoderParams::analyse that the decision reads.
struct DecideFlags {
  bool intra4x4 = true;
  bool part16x8 = true;
  bool part8x8 = true;
  bool sub8x8 = true;
  bool refine = true;
  bool preselect = true;
};

// The source picture's three planes (edge-extended to whole macroblocks), host or device.
struct SourcePlanes {
  const uint8_t* plane[3] = {};
  int stride[3] = {};
  int width[3] = {};
  int height[3] = {};
  GVC_HD const uint8_t* at(int p, int x, int y) const { return plane[p] + y * stride[p] + x; }
};

// Everything the analysis of one macroblock reads; pointers are host memory on the CPU and
// device memory on the GPU.
struct MbAnalysis {
  DecideFlags flags;
  SourcePlanes src;
  // P slices: RefPicList0 (refIdxL0 order, most recent first) as luma planes with their
  // half-pel planes and, per reference, the ME core's per-partition vectors of the current
  // frame against it (me[r][mb_addr], raster). num_refs is 0 in I slices.
  int num_refs = 0;
  LumaRefView refs[4];
  const MbPartitions* me[4] = {};
  MbMap map;  // macroblocks decided so far (slice-aware); map.at(mx, my) is the one analysed
  int mx = 0, my = 0;
  int qp = 26, qpc = 26;
  int lambda = 1;
  // The intra modes worth trying for this macroblock (common/dsp/intra_prune.h); null: all.
  const IntraMbCandidates* intra_cand = nullptr;
  int max_mv_y = 2048;  // |vertical vector| limit in quarter-pel (MaxVmvR of the level, Table A-1)
};

int lambda_for_qp(int qp);

// SATD of a w x h block (multiples of 4) of src against pred (stride pred_stride).
GVC_HD int satd_block(const uint8_t* src, int ss, const uint8_t* pred, int ps, int w, int h) {
  int sum = 0;
  for (int by = 0; by < h; by += 4) {
    for (int bx = 0; bx < w; bx += 4) {
      int16_t d[16];
      for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) d[4 * y + x] = int16_t(src[(by + y) * ss + bx + x] - pred[(by + y) * ps + bx + x]);
      sum += satd4x4(d);
    }
  }
  return sum;
}

// Whether the macroblock at (a.mx + dx, a.my + dy) is available for prediction (6.4.8: inside
// the picture, already coded, in the same slice).
GVC_HD bool mb_available(const MbAnalysis& a, int dx, int dy) { return a.map.at(a.mx + dx, a.my + dy) != nullptr; }

}  // namespace gvc::h264
