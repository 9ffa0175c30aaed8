// analyse.h: macroblock mode decision (intra modes against the inter choice), before reconstruction
#pragma once

#include <cstdint>

#include "common/dsp/me.h"
#include "common/h264enc/cavlc.h"
#include "common/h264enc/mc.h"
#include "common/h264enc/macroblock.h"
#include "common/h264enc/params.h"
#include "common/h264enc/picture.h"

namespace gvc::h264 {

// Everything the analysis of one macroblock reads. Mode decision minimises
// J = D + lambda * R with D the SATD of the luma prediction residual (sum over its 4x4 blocks
// of the halved absolute 4x4 Hadamard coefficients; intra chroma adds its own SATD) and R the
// exact length of the prediction syntax (mb_type, sub_mb_type, ref_idx te(v), mvd se(v),
// intra modes) plus a fixed estimate for intra mb_type codes in P slices; the residual's bits
// are not counted. lambda = sqrt(0.85 * 2^((QP - 12) / 3)) (seed 003's lambda for SAD-type
// costs), in integer form.
struct MbAnalysis {
  const EncoderParams* params;
  const Picture* src;  // source, edge-extended to whole macroblocks
  // P slices: RefPicList0 (refIdxL0 order, most recent first) and, per reference, the ME
  // core's per-partition vectors of the current frame against it. num_refs is 0 in I slices.
  int num_refs = 0;
  const RefPicture* const* refs = nullptr;
  const MbPartitionField* me = nullptr;
  MbMap map;           // macroblocks coded so far; map.at(mx, my) is the one analysed
  int mx, my;
  int qp, qpc;
  int lambda;
  // The intra modes worth trying for this macroblock (common/dsp/intra_prune.h); null: all.
  const IntraMbCandidates* intra_cand = nullptr;
  int max_mv_y;  // |vertical vector| limit in quarter-pel (MaxVmvR of the level, Table A-1)
};

int lambda_for_qp(int qp);

// Chooses the coding of the macroblock at (a.mx, a.my) (mb_type, intra modes, partitions,
// references, vectors and mvd), writing into `mb` (which map.at(mx, my) must point to); no
// residual yet: recon_mb.h codes and reconstructs it. Intra modes are chosen on the source
// picture (its samples stand in for the reconstructed neighbours the decoder predicts from),
// so that every decision of a frame is made before any macroblock is reconstructed; the
// exact mvpL0 of inter partitions comes from the macroblocks decided before, in decoding order.
void decide_mb(const MbAnalysis& a, Macroblock& mb);

// SATD of a w x h block (multiples of 4) of src against pred (stride pred_stride).
int satd_block(const uint8_t* src, int src_stride, const uint8_t* pred, int pred_stride, int w, int h);

}  // namespace gvc::h264
