// cavlc.h: CAVLC residual blocks (9.2) and the macroblock layer of CAVLC slices (7.3.5)
#pragma once

#include <cstdint>

#include "common/bitstream/bitwriter.h"
#include "common/h264enc/macroblock.h"

namespace gvc::h264 {

// residual_block_cavlc() (7.3.5.3.2, 9.2) of `max_num_coeff` levels (4 for chroma DC, 15 for
// Intra_16x16 / chroma AC, 16 otherwise) in scan order. `nc` is the nC of 9.2.1 (-1 for
// chroma DC). Returns TotalCoeff.
int write_residual_block(BitWriter& bw, const int16_t* levels, int max_num_coeff, int nc);

// The macroblocks of a picture in raster order, for the nA/nB and prediction-mode neighbours.
// With slice >= 0, macroblocks of other slices count as not available (6.4.8); the loop
// filter, which crosses slice edges (disable_deblocking_filter_idc 0), uses slice = -1.
struct MbMap {
  const Macroblock* mbs = nullptr;
  int mb_width = 0;
  int mb_height = 0;
  int slice = -1;
  const Macroblock* at(int mx, int my) const {
    if (mx < 0 || my < 0 || mx >= mb_width || my >= mb_height) return nullptr;
    const Macroblock* m = &mbs[my * mb_width + mx];
    return (slice >= 0 && m->slice_id != slice) ? nullptr : m;
  }
};

// nC of luma block `blk` (chroma component c >= 0: chroma AC block) of the macroblock at
// (mx, my), from blocks of already coded macroblocks of the same slice (9.2.1).
int luma_nc(const MbMap& map, int mx, int my, int blk);
int chroma_nc(const MbMap& map, int mx, int my, int c, int blk);

// predIntra4x4PredMode of block `blk` (8.3.1.1).
int predict_i4_mode(const MbMap& map, int mx, int my, int blk);

// macroblock_layer() of the non-skipped macroblock at (mx, my) of an I (p_slice false) or
// P slice with num_ref_idx_l0_active_minus1 + 1 = `num_ref_idx_active`; map.mbs must hold it
// and its coded left and upper neighbours.
void write_macroblock(BitWriter& bw, const MbMap& map, int mx, int my, bool p_slice,
                      int num_ref_idx_active = 1);

// Partitions of P macroblocks (Tables 7-13 and 7-17), in 4x4-block units: mbPartIdx `part`
// of `type` inside the macroblock, subMbPartIdx `part` of sub_mb_type `sub` inside its 8x8.
void partition_rect(MbType type, int part, int* x, int* y, int* w, int* h);
void sub_partition_rect(int sub, int part, int* x, int* y, int* w, int* h);
int num_mb_part(MbType type);   // NumMbPart: 1 for P_L0_16x16 / P_Skip
int num_sub_mb_part(int sub);   // NumSubMbPart

// Bits of the I4x4 prediction mode syntax: 1 when it equals the predicted mode, else 4.
inline int i4_mode_bits(int mode, int pred) { return mode == pred ? 1 : 4; }

}  // namespace gvc::h264
