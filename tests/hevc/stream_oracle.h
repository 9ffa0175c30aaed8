// stream_oracle.h: test helpers: make HEVC streams with ffmpeg/libx265 and decode them with ffmpeg
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gvc::test {

// $FFMPEG or "ffmpeg" found on $PATH; empty if none.
std::string hevc_find_ffmpeg();
// $GVC_TEST_CLIP or opencv-doc's vtest.avi; empty if missing.
std::string hevc_find_clip();

// Encodes `frames` frames of `clip` scaled to w x h with libx265 and `x265_params`
// ("key=value:..."), pixel format `pix_fmt`, into an Annex B file. `extra_vf` (e.g. a fade)
// is appended to the scaling filter chain. Returns the stream bytes (empty on failure, with
// the reason in `err`).
std::vector<uint8_t> x265_encode(const std::string& clip, int w, int h, int frames,
                                 const std::string& pix_fmt, const std::string& x265_params,
                                 std::string& err, const std::string& extra_vf = "");

// Decodes `stream` with ffmpeg to raw frames in `pix_fmt` (yuv420p or yuv420p10le); one byte
// vector per frame of `frame_bytes` bytes.
std::vector<std::vector<uint8_t>> ffmpeg_decode(const std::vector<uint8_t>& stream,
                                                const std::string& pix_fmt, size_t frame_bytes,
                                                std::string& err);

// $DEC265 or libde265's "libde265-dec265" (Debian's libde265-examples) or "dec265" found on
// $PATH; empty if none.
std::string hevc_find_dec265();

// Decodes `stream` with libde265's dec265 (single-threaded) to raw frames: 8-bit samples, or
// 16-bit little endian above 8 bits, cropped, in output order, the same layout as
// ffmpeg_decode. Any warning dec265 prints is an error in `err`.
std::vector<std::vector<uint8_t>> dec265_decode(const std::vector<uint8_t>& stream, size_t frame_bytes,
                                                std::string& err);

// The access units of an Annex B stream (7.4.2.4.4: one begins at an AUD, VPS, SPS, PPS or
// prefix SEI that follows a slice, or at a slice with first_slice_segment_in_pic_flag that
// follows a slice), each with its start codes.
std::vector<std::vector<uint8_t>> split_access_units(const std::vector<uint8_t>& stream);

// What a stream's slice headers contain (GstH265Parser), so a test can check that the stream
// really exercises the feature it is named after.
struct StreamFeatures {
  int slices[3] = {0, 0, 0};  // by slice_type: B, P, I
  int rasl = 0, cra = 0;      // RASL and CRA pictures (first slice segments)
  int weighted = 0;           // P/B slices with a luma or chroma weight flag set
  int tmvp_off = 0;           // P/B slices with slice_temporal_mvp_enabled_flag 0
  int max_refs = 0;           // largest num_ref_idx_l0_active_minus1 + 1
  int log2_par_mrg_level = 0; // largest Log2ParMrgLevel of the PPSs that slices use
  int hidden = 0;             // pictures with pic_output_flag 0
  int max_num_reorder = 0;    // largest sps_max_num_reorder_pics[HighestTid] of the SPSs
  int cip = 0;                // slices whose PPS has constrained_intra_pred_flag
  int wpp = 0;                // slices whose PPS has entropy_coding_sync_enabled_flag
  int scaling_list_data = 0;  // SPSs with sps_scaling_list_data_present_flag
  int max_tb_log2 = 0;        // largest MaxTbLog2SizeY of the SPSs
};
StreamFeatures stream_features(const std::vector<uint8_t>& stream);

// Rewrites log2_parallel_merge_level_minus2 in every PPS of the stream so that Log2ParMrgLevel
// becomes `log2_level`. The result is still a conforming stream (the syntax of the slices does
// not depend on the level), but its merge candidates differ from the encoder's: a test of the
// decoding process against FFmpeg, not of the encoder. Returns an empty vector if a PPS has
// fields this rewriter does not parse (pps_scaling_list_data).
std::vector<uint8_t> with_parallel_merge_level(const std::vector<uint8_t>& stream, int log2_level);

// Turns every P picture that references the two previous pictures into one that references
// the older of them as a long-term picture (SPS long_term_ref_pics_present_flag 1; slice RPS
// {-1} plus one long-term entry). Like the PPS rewrite it changes the decoding (no MV scaling
// to a long-term picture, LongTermRefPic rules of merge/AMVP/TMVP), not the syntax of the
// slice data. `n_lt` receives the number of slices rewritten. Empty when the stream has
// something the rewriter does not handle (x265 P-only streams are handled).
std::vector<uint8_t> with_long_term_refs(const std::vector<uint8_t>& stream, int* n_lt);

// Sets lists_modification_present_flag in the PPSs and gives every P and B slice with more
// than one reference picture a ref_pic_lists_modification() that rotates RefPicListTemp0 by
// one entry and RefPicListTemp1 by two (8.3.4). `n_mod` receives the number of slices changed.
// Empty when the stream has something the rewriter does not handle.
std::vector<uint8_t> with_list_modification(const std::vector<uint8_t>& stream, int* n_mod);

// Sets output_flag_present_flag in the PPSs and gives every third picture in decode order
// (the 3rd, 6th, ...) pic_output_flag = 0 in all its slice segment headers, the others 1: those
// pictures are decoded, kept as references, and never output (C.5.2.3). `n_hidden` receives
// the number of pictures hidden. Empty when the stream has something the rewriter does not
// handle (num_extra_slice_header_bits, separate colour planes).
std::vector<uint8_t> with_pic_output_flag(const std::vector<uint8_t>& stream, int* n_hidden);

// Drops every VPS, SPS and PPS NAL unit that repeats, byte for byte, the latest one of its
// type (x265 repeats them before each IRAP picture). The decoding process is unchanged (a
// repeated parameter set with the same content changes nothing); `n_dropped` receives how
// many were dropped.
std::vector<uint8_t> without_repeated_parameter_sets(const std::vector<uint8_t>& stream, int* n_dropped);

// Byte offset of the `n`th (0-based) NAL unit of type `nal_type` in an Annex B stream, at its
// start code; stream.size() if there is none.
size_t nth_nal_offset(const std::vector<uint8_t>& stream, int nal_type, int n);

}  // namespace gvc::test
