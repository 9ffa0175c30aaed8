// decoder.h: the HEVC decoder engine: Annex B byte stream in, cropped pictures in output order out
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gvc::hevc {

class Reconstructor;

// An output picture that stays on a reconstructor's device, in a form that reconstructor
// defines (gpu/hevc_recon.h: HevcDeviceFrame).
struct DeviceFrame {
  virtual ~DeviceFrame() = default;
};

// One output picture, cropped to the conformance window (samples in 16 bits, any bit depth).
struct DecodedFrame {
  int width = 0, height = 0;  // luma
  int bit_depth = 8;
  int poc = 0;
  std::vector<uint16_t> planes[3];  // tightly packed: Y width x height, Cb/Cr (w+1)/2 x (h+1)/2
  // Set, and `planes` empty, when the picture was left on the reconstructor's device
  // (Reconstructor::keeps_pictures). Let go by the next take_frame() into the same object
  // (the reconstructor then reuses its memory); `planes` are kept for reuse. Letting one go
  // may free device memory: do it where the reconstructor's device context is current.
  std::shared_ptr<DeviceFrame> device;
  // Its slice data could not all be parsed (frame threads: the failure is found on the
  // picture's lane, possibly after later access units were given); it is output as far as it
  // was decoded.
  bool damaged = false;
  int plane_width(int c) const { return c ? (width + 1) / 2 : width; }
  int plane_height(int c) const { return c ? (height + 1) / 2 : height; }
};

class Decoder {
 public:
  Decoder();
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Decodes whole NAL units in Annex B format (start codes). Returns false on an error; the
  // message is in error(), and decoding resumes at the next IRAP picture.
  bool decode(const uint8_t* data, size_t size);
  // The access unit given so far is complete (7.4.2.4.4: the next NAL unit would start a new
  // one): finishes the current picture (loop filters, C.5.2.3 marking and bumping) without
  // waiting for the next picture's first slice, so a stream without reordering
  // (sps_max_num_reorder_pics 0) has its picture ready to take at once. Output order is the
  // same as without the call; the next decode() must start a new access unit.
  void end_access_unit();
  // End of stream: finishes the current picture and outputs everything left in the DPB.
  void flush();
  // Takes the next picture in output order; false when none is ready (see set_frame_threads
  // for when it waits for one; with `wait`, it waits for every picture the DPB has output,
  // as without frame threads). The buffers `out` held are reused for a later picture, so a
  // caller that passes the same object each time saves their allocation.
  bool take_frame(DecodedFrame& out, bool wait = false);
  const std::string& error() const { return error_; }

  // Runs the sample reconstruction and the loop filters of every following picture on `r`
  // (not owned; null: the CPU). A failure of `r` is reported by the next decode() call, and
  // that picture and all later ones are reconstructed on the CPU instead, so no picture is
  // lost, unless `r` keeps its pictures on its device (Reconstructor::keeps_pictures): their
  // samples are then gone with the device, and pictures that need them are dropped.
  void set_reconstructor(Reconstructor* r);
  // Threads that may decode the CTB rows of a WPP slice segment at once (default: the
  // machine's, at most 16; 1: one row after the other). Same pictures either way.
  void set_threads(int n);
  // Pictures that may be parsed at once (default 1, at most 32), each on a thread of its own
  // (its WPP rows on set_threads() / n threads, at least 2), a CTB row waiting only for that
  // row of its collocated picture's motion field. Used while the reconstructor keeps its
  // pictures (Reconstructor::keeps_pictures; otherwise one picture at a time). Same pictures
  // in the same order, but later: take_frame() then waits for a picture still being decoded
  // only when n pictures are in flight or n frames wait to be taken, or after flush(), so a
  // caller that takes frames after every access unit gets each one up to n - 1 access units
  // later. A picture whose slice data cannot be parsed is reported by a later decode() than
  // the one that gave it (and its frame comes out with DecodedFrame::damaged), and decoding
  // resumes at the next IRAP picture after it unless one has started meanwhile. A parameter
  // set after a picture's slices ends that picture (it starts the next access unit).
  void set_frame_threads(int n);
  // With frame threads: the POCs of the pictures whose failures decode() has reported since
  // the last call (those pictures come out as far as they were decoded); empty otherwise,
  // where the failed picture is the one of the data decode() was given.
  std::vector<int> take_damaged_pocs();
  // With frame threads: the time decode() and end_access_unit() waited for a free lane (the
  // pipeline full), in seconds since the decoder was made, for benchmarks.
  double lane_wait_seconds() const;
  // With frame threads, for benchmarks, in seconds since the decoder was made: the lanes'
  // parses (each picture's from its start on its lane to its end, its loop filters' plan and
  // Reconstructor::prepare included, summed), the part of their
  // row threads' time that waited for the collocated picture's rows and for the WPP row above
  // (summed over the row threads), and the reconstruction thread's waits for a parse to end
  // before it could run() that picture. Read while no picture is in flight.
  struct PipelineTimes {
    int parses = 0;
    double parse_s = 0, col_wait_s = 0, row_wait_s = 0, stage_wait_s = 0;
  };
  PipelineTimes pipeline_times() const;
  // Whether the decoder skips pictures until the next IRAP picture (after an error).
  bool waiting_for_irap() const;
  // Why the reconstructor failed (empty while it has not), for callers that must stop then.
  const std::string& reconstructor_error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string error_;
};

}  // namespace gvc::hevc
