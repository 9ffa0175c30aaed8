// slice_decoder.h: slice_segment_data() of one slice segment: CABAC parse and reconstruction (7.3.8)
#pragma once

#include <gst/codecparsers/gsth265parser.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/hevcdec/params.h"
#include "common/hevcdec/picture.h"
#include "common/hevcdec/syntax.h"
#include "common/hevcdec/workers.h"

namespace gvc::hevc {

// CABAC state carried from one slice segment of a picture to the next (9.3.1, 9.3.2.4).
struct SegmentCarry {
  CabacContexts wpp;       // TableStateIdxWpp: after the 2nd CTB of a CTB row
  CabacContexts ds;        // TableStateIdxDs: at the end of a slice segment
  int qp_y_prev = 0;       // QpY of the last coding unit, for dependent slice segments
};

struct PictureRecon;

// Time parses spent waiting, summed over their row threads (frame threads: the decoder's one
// instance sums every lane's pictures, for benchmarks: Decoder::pipeline_times).
struct ParseWaits {
  std::atomic<int64_t> col_ns{0};  // for the collocated picture's rows (wait_for_col_rows)
  std::atomic<int64_t> row_ns{0};  // WPP rows for the row above
};

struct SliceDecodeInput {
  const PicParams* pp = nullptr;
  const GstH265SliceHdr* sh = nullptr;  // dependent segments: fields of the independent header
  int slice_idx = 0;                    // index of this segment in FrameState::slices
  int slice_addr_rs = 0;                // SliceAddrRs
  Picture* pic = nullptr;
  FrameState* fs = nullptr;
  SegmentCarry* carry = nullptr;
  const RefPicLists* refs = nullptr;  // P and B slices: RefPicList0/1 (8.3.4)
  const Picture* col_pic = nullptr;   // ColPic when slice_temporal_mvp_enabled_flag is 1
  PictureRecon* recon = nullptr;      // receives the picture's sample reconstruction work
  // Where each substream of the segment starts in `rbsp` (entry points, the first one being the
  // slice data), or null; and how many threads may decode them (WPP rows in parallel).
  const std::vector<size_t>* substreams = nullptr;
  int threads = 1;
  // For rows in parallel: the decoder's kept threads and one PictureRecon per row, kept from
  // one picture to the next so that their buffers are reused (null: made for this segment).
  Workers* workers = nullptr;
  std::vector<PictureRecon>* row_recons = nullptr;
  ParseWaits* waits = nullptr;  // where the waits that block are timed (null: not timed)
  // Rows in parallel: each row parsed whole on its own thread plans its loop filters into
  // recon->loop_filters (plan_deblocking_rows, LoopFilterPlan::row_planned) as it ends, while
  // its syntax arrays are in that thread's caches; the caller began the plan
  // (begin_loop_filter_plan) and plans the rows left.
  bool plan_rows = false;
};

// Parses slice_segment_data() from `rbsp` (emulation prevention removed), starting at byte
// `data_offset`: the syntax arrays of `fs` and the motion of `pic` are filled at once, the
// sample reconstruction is appended to `recon` (reconstruct_picture runs it). Returns false on a syntax error or on data the decoder does not support.
bool decode_slice_segment(const SliceDecodeInput& in, const uint8_t* rbsp, size_t size,
                          size_t data_offset);

}  // namespace gvc::hevc
