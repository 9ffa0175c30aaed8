// cavlc.h: CAVLC residual blocks (9.2) and the macroblock layer of CAVLC slices (7.3.5)
#pragma once

#include <cstdint>

#include "common/bitstream/bitwriter.h"
#include "common/h264enc/cavlc_bits.h"
#include "common/h264enc/macroblock.h"

namespace gvc::h264 {

// residual_block_cavlc() (7.3.5.3.2, 9.2) of `max_num_coeff` levels (4 for chroma DC, 15 for
// Intra_16x16 / chroma AC, 16 otherwise) in scan order. `nc` is the nC of 9.2.1 (-1 for
// chroma DC). Returns TotalCoeff.
int write_residual_block(BitWriter& bw, const int16_t* levels, int max_num_coeff, int nc);

// macroblock_layer() of the non-skipped macroblock at (mx, my) of an I (p_slice false) or
// P slice with num_ref_idx_l0_active_minus1 + 1 = `num_ref_idx_active`; map.mbs must hold it
// and its coded left and upper neighbours.
void write_macroblock(BitWriter& bw, const MbMap& map, int mx, int my, bool p_slice,
                      int num_ref_idx_active = 1);

}  // namespace gvc::h264
