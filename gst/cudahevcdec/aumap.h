// aumap.h: HEVC access units for cudahevcdec: hvcC and length-prefixed NAL units to Annex B, and the POC of each access unit so pictures in output order find their frames
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

namespace gvc::hevcdec {

// hvcC (ISO/IEC 14496-15, 8.3.3.1): the NAL length size (1, 2 or 4) and the parameter-set
// arrays, appended to `annexb` with start codes. False if the record is malformed.
bool parse_hvcc(const uint8_t* data, size_t size, int& nal_length_size,
                std::vector<uint8_t>& annexb);

// Length-prefixed NAL units to Annex B (appended to `out`); false if a length runs past the
// end of the buffer (what fits is still converted).
bool length_prefixed_to_annexb(const uint8_t* data, size_t size, int nal_length_size,
                               std::vector<uint8_t>& out);

// What one access unit will become, as far as its first slice segment header says.
struct AuInfo {
  bool has_picture = false;  // a slice segment with first_slice_segment_in_pic_flag
  bool poc_known = false;    // its header parsed and the picture will be decoded
  bool skipped = false;      // no IRAP yet, or a RASL picture with NoRaslOutputFlag = 1
  bool new_cvs = false;      // an IRAP picture with NoRaslOutputFlag = 1
  int poc = 0;               // PicOrderCntVal (8.3.1)
  uint64_t cvs = 0;          // counts coded video sequences
  int max_num_reorder = -1;  // sps_max_num_reorder_pics[HighestTid], -1 if unknown
};

// Follows the engine's picture-level decisions (8.1.3: NoRaslOutputFlag, RASL skipping,
// waiting for an IRAP after an error; 8.3.1: POC) with a GstH265Parser of its own, and keeps
// the latest parameter sets so a new engine can be primed after a flush.
class AuTracker {
 public:
  AuTracker();
  ~AuTracker();
  AuTracker(const AuTracker&) = delete;
  AuTracker& operator=(const AuTracker&) = delete;

  AuInfo inspect(const uint8_t* annexb, size_t size);
  // The engine reported an error: like it, skip pictures until the next IRAP.
  void error() { seen_irap_ = false; }
  // A fresh engine: the next picture starts a coded video sequence.
  void restart();
  // Every stored VPS, SPS and PPS (the latest of each id), in that order, as Annex B.
  std::vector<uint8_t> parameter_sets() const;

 private:
  struct Parser;
  Parser* parser_;
  std::map<int, std::vector<uint8_t>> param_sets_;  // key: nal_unit_type * 256 + id
  bool first_picture_ = true;
  bool seen_irap_ = false;
  bool no_rasl_output_ = true;
  int prev_tid0_poc_ = 0;
  uint64_t cvs_ = 0;
};

// Frames waiting for their picture, in decode order.
struct PendingFrame {
  uint32_t frame_number = 0;  // GstVideoCodecFrame.system_frame_number
  uint64_t cvs = 0;
  int poc = 0;
  bool corrupt = false;  // decoding reported an error for this access unit
};

class FrameQueue {
 public:
  void push(const PendingFrame& f) { q_.push_back(f); }
  void mark_corrupt(uint32_t frame_number);
  // The frame of an output picture with `poc`: the oldest pending one with that POC. Frames
  // that can no longer be output (an older CVS, or a smaller POC of the same CVS: output order
  // is POC order within a CVS) are moved to `stale`. False if no frame has that POC.
  bool match(int poc, PendingFrame& out, std::vector<uint32_t>& stale);
  // Every frame of a CVS before `cvs` to `stale` (that CVS has been output or discarded).
  void drop_before(uint64_t cvs, std::vector<uint32_t>& stale);
  void take_all(std::vector<uint32_t>& stale);
  void clear() { q_.clear(); }
  size_t size() const { return q_.size(); }

 private:
  std::deque<PendingFrame> q_;
};

}  // namespace gvc::hevcdec
