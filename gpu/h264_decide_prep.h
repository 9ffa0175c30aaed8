// h264_decide_prep.h (gpu): what the H.264 encoder's decision computes before its wavefront, on the GPU: the intra search (intra_prep.h), the SATD caches (satd_cache.h) and the pre-selections (inter_preselect.h)
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/dsp/intra_prune.h"
#include "common/h264enc/intra_prep.h"
#include "common/h264enc/satd_cache.h"
#include "common/util/status.h"

namespace gvc {
namespace cuda {

// prepare_intra (common/h264enc/intra_prep.h) of every macroblock into out[mb_addr],
// asynchronously on stream s, one thread each. `a` holds the frame's analysis with device
// source planes (its map, mx, my and intra_cand are set per macroblock); `stand_in` is
// a.map.mb_width x mb_height macroblocks of scratch that become the stand-in map (make_stand_in
// with slice_of_mb; in an I slice, a.num_refs 0, then make_stand_in_from each pass's results
// for the next); `cand` is per macroblock, or null. Every pointer is device memory.
Status launch_intra_prep(const h264::MbAnalysis& a, const uint16_t* slice_of_mb, h264::Macroblock* stand_in,
                         const IntraMbCandidates* cand, h264::MbIntraPrep* out, cudaStream_t s);

// Every macroblock's SatdSlots (satd_slots: its pre-selection) into slots[mb_addr] and, where
// `presel` is not null and a.flags.preselect, the pre-selection itself into presel[mb_addr]
// (device memory), asynchronously on stream s, from a's ME results (a.me) and flags; it reads
// no reference, so it may run before them.
Status launch_satd_slots(const h264::MbAnalysis& a, h264::SatdSlots* slots, h264::Preselection* presel,
                         cudaStream_t s);

// The SATD caches of every macroblock of rows [first_row, end_row) (end_row -1: the last row
// too) and each of a.num_refs references into out[mb_addr * num_refs + r], asynchronously on
// stream s, after launch_satd_slots' `slots`. `a` holds the frame's analysis with device source
// planes, references (a.refs) and ME results (a.me); its map gives the size.
Status launch_satd_cache(const h264::MbAnalysis& a, const h264::SatdSlots* slots, h264::MbSatdRef* out,
                         cudaStream_t s, int first_row = 0, int end_row = -1);

}  // namespace cuda
}  // namespace gvc
