// analyse.h: macroblock mode decision (intra modes, P_L0_16x16 motion, P_Skip) and coding
#pragma once

#include <cstdint>

#include "common/h264enc/cavlc.h"
#include "common/h264enc/macroblock.h"
#include "common/h264enc/params.h"
#include "common/h264enc/picture.h"

namespace gvc::h264 {

// Everything the analysis of one macroblock reads. Mode decision minimises
// SATD + lambda * bits (SATD: halved 4x4 Hadamard sums of the prediction residual; bits: the
// exact length of the mode / vector syntax, a fixed estimate for the rest), with
// lambda = sqrt(0.85 * 2^((QP - 12) / 3)) (seed 003's lambda for SAD-type costs).
struct MbAnalysis {
  const EncoderParams* params;
  const Picture* src;  // source, edge-extended to whole macroblocks
  Picture* rec;        // reconstruction: neighbours are read, this macroblock is written
  const Picture* ref;  // reference picture (P slices), nullptr in I slices
  MbMap map;           // macroblocks coded so far; map.at(mx, my) is the one analysed
  int mx, my;
  int qp, qpc;
  int lambda;
  int max_mv_y;  // |vertical vector| limit in quarter-pel (MaxVmvR of the level, Table A-1)
};

int lambda_for_qp(int qp);

// Chooses, codes and reconstructs the macroblock at (a.mx, a.my), writing into `mb` (which
// map.at(mx, my) must point to).
void analyse_and_code_mb(const MbAnalysis& a, Macroblock& mb);

// mvpL0 of a 16x16 partition with refIdxL0 0 (8.4.1.3) and the P_Skip vector (8.4.1.1).
void predict_mv_16x16(const MbMap& map, int mx, int my, int16_t mvp[2]);
void predict_mv_skip(const MbMap& map, int mx, int my, int16_t mv[2]);

}  // namespace gvc::h264
