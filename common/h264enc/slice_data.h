// slice_data.h: slice_data() of CAVLC slices (7.3.4), written in pieces of at most a macroblock row on all cores and joined
#pragma once

#include <cstdint>

#include "common/bitstream/bitwriter.h"
#include "common/h264enc/macroblock.h"
#include "common/h264enc/mb_layer_bits.h"
#include "common/util/progress.h"

namespace gvc::h264 {

// The macroblocks of a picture counted by type (what EncodedFrame::stats reports).
struct MbCounts {
  int mb_type[8] = {};      // macroblocks by MbType value
  int sub_mb_type[4] = {};  // P_8x8 sub-macroblocks by sub_mb_type
  int ref_idx[4] = {};      // inter macroblocks' 8x8 quadrants by refIdxL0 (P_Skip included)

  MbCounts& operator+=(const MbCounts& o) {
    for (int t = 0; t < 8; t++) mb_type[t] += o.mb_type[t];
    for (int t = 0; t < 4; t++) sub_mb_type[t] += o.sub_mb_type[t];
    for (int r = 0; r < 4; r++) ref_idx[r] += o.ref_idx[r];
    return *this;
  }
};

// One slice of a picture: macroblocks [first_mb, end_mb) in raster order; `bw` holds the
// slice header and receives slice_data() (no trailing bits).
struct SliceOut {
  int first_mb = 0, end_mb = 0;
  BitWriter* bw = nullptr;
};

// Writes slice_data() of every slice. CAVLC carries no state from one macroblock to the next
// besides mb_skip_run and the neighbours' TotalCoeff (which the macroblocks hold), so each
// piece of a row is written on its own and the pieces are joined, the join writing the
// mb_skip_run before a piece's first coded macroblock; a piece with an I_PCM macroblock whose
// pcm_alignment_zero_bits depend on where it lands is written again there.
// The bits are those of writing the macroblocks one after the other. `mbs` holds the
// picture's macroblocks with their slice_id set; `threads` 0 means one per core.
// `rows_ready`, if set, counts the rows of `mbs` complete so far (they come in order, e.g.
// from the GPU's intra wavefront): each piece waits for its row, so the first rows are
// written while the last are still being reconstructed. `counts`, if set, receives the slices'
// macroblocks counted as the pieces go through them (no pass of its own over the picture).
// `bits`, if set and holding words once a piece's row is ready (so it may be filled before the
// first row shows), gives each coded macroblock's macroblock_layer(): `mbs` then need only the
// decisions (type, ref_idx, sub_mb_type, slice_id), and none is I_PCM; a macroblock without
// bits is P_Skip (a P_Skip candidate with bits, P_L0_16x16: finish_skip_candidate).
void write_slices_data(const Macroblock* mbs, int mb_width, int mb_height, const SliceOut* slices,
                       int num_slices, bool p_slice, int num_ref_idx_active, int threads = 0,
                       const Progress* rows_ready = nullptr, MbCounts* counts = nullptr,
                       const MbBitsView* bits = nullptr);

}  // namespace gvc::h264
